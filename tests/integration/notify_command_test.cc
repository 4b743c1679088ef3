// The notify command (daemon/notifier.h) run for real on a libuv loop: a
// shell script in a temporary directory records its stdin and its SOAKD_*
// environment; the test reads back what it was given and the `notify` event
// the outcome became. Three endings: a verdict told (exit 0), a non-zero exit
// (its output logged, the outcome "failed"), a hang past the time bound
// (killed, "timed_out"). The bound is a fraction of a second; nothing here
// waits on anything but the child it started.
#include <errno.h>
#include <signal.h>
#include <sys/stat.h>
#include <uv.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "core/config.h"
#include "daemon/notifier.h"
#include "storage/sqlite_store.h"
#include "tests/catch.h"
#include "tests/support/process_state.h"
#include "tests/support/temp_dir.h"

using namespace soak;
using json = nlohmann::json;

namespace {

constexpr const char* kOneCandidate =
    R"("candidates": [{"name": "a", "model": "m", "runtime": "llama.cpp", "base_url": "http://127.0.0.1:18080"}])";

constexpr int64_t kShortBoundMs = 400;  // the hanging command is killed after this
// Every other command's bound: room for sh, cat, env, grep and sort on a loaded machine.
constexpr int64_t kRoomyBoundMs = 10'000;
// Ends the loop however the child behaves: far above the bound, far below ctest's timeout.
constexpr uint64_t kWatchdogMs = 20'000;

// argv: script MODE DIR DIR (orphan: a script that starts sleep without exec
// and writes its pid, the way a wrapper starts curl). Every mode records stdin and the SOAKD_* variables first.
constexpr const char* kScript = R"(#!/bin/sh
cat > "$2/stdin.json"
env | grep '^SOAKD_' | sort > "$2/env"
case "$1" in
  ok) echo "told"; exit 0 ;;
  fail) echo "webhook said 503" >&2; exit 3 ;;
  hang) exec sleep 30 ;;
  orphan) sleep 30 & echo $! > "$3/child.pid"; wait ;;
esac
)";

std::string read_text(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

struct World {
  TempDir tmp;
  VirtualClock clock{1'767'225'600'000};
  std::unique_ptr<SqliteStore> store;
  std::unique_ptr<Outbox> outbox;
  uv_loop_t loop{};
  ConfigSnapshot cfg;
  int64_t host = 0;
  CandidateRow row;
  std::unique_ptr<NotifyService> service;
  int settled_calls = 0;

  explicit World(const std::string& mode, int64_t timeout_ms = kRoomyBoundMs) {
    ::signal(SIGPIPE, SIG_IGN);  // as soakd run does (probes/command.h)
    const std::string script = tmp.path() + "/record.sh";
    std::ofstream(script) << kScript;
    ::chmod(script.c_str(), 0755);
    const std::string text = R"({"store": ")" + tmp.path() + R"(/s.db", "log": ")" + tmp.path() +
                             R"(/logs/soakd.log", "notify": {"command": [")" + script + R"(", ")" + mode + R"(", ")" +
                             tmp.path() + R"(", ")" + tmp.path() + R"("], "timeout": ")" + std::to_string(timeout_ms) +
                             R"(ms"}, "candidates": [{"name": "llama-b2", "model": "qwen3", "runtime": "llama.cpp",
                               "base_url": "http://127.0.0.1:18080"}]})";
    auto c = parse_config(text, "test.json", tmp.path());
    INFO((c.ok() ? "" : c.message()));
    REQUIRE(c.ok());
    cfg = std::make_shared<const Config>(std::move(*c));
    uv_loop_init(&loop);
    store = *SqliteStore::open(cfg->store_path, OpenMode::ReadWrite, Durability::Fast);
    host = *store->upsert_host(HostInfo{"studio", "Mac15,14", 64LL << 30, "macOS 15.5"}, clock.wall_ms());
    row.host_id = host;
    row.name = "llama-b2";
    row.model = "qwen3";
    row.runtime = RuntimeKind::LlamaCpp;
    row.build = "b2";
    row.base_url = "http://127.0.0.1:18080";
    row.id = *store->upsert_candidate(row, clock.wall_ms());
    outbox = std::make_unique<Outbox>(*store, clock, make_null_logger(), host);
    service = std::make_unique<NotifyService>(cfg, Deps{*store, *outbox, clock, make_null_logger(), &loop, host},
                                              [this] { ++settled_calls; });
  }
  ~World() {
    service.reset();
    uv_run(&loop, UV_RUN_NOWAIT);  // let closed handles finish
    uv_loop_close(&loop);
  }

  VerdictNotice rejected() const {
    VerdictNotice n;
    n.candidate = row;
    n.verdict.candidate_id = row.id;
    n.verdict.wall_ms = clock.wall_ms();
    n.verdict.state = VerdictState::Rejected;
    n.verdict.stage = "canary";
    n.verdict.reason = "decode_tps marker -87.2% vs baseline";
    MetricEvidence m;
    m.metric = "decode_tps/marker";
    m.result = MetricResult::Fail;
    m.reason = "-87.2% vs baseline";
    n.verdict.metrics.push_back(m);
    return n;
  }

  // Runs the loop until the command ended and its run is gone.
  void run_until_settled() {
    uv_timer_t watchdog;
    uv_timer_init(&loop, &watchdog);
    uv_unref(reinterpret_cast<uv_handle_t*>(&watchdog));
    uv_timer_start(
        &watchdog, [](uv_timer_t* t) { uv_stop(t->loop); }, kWatchdogMs, 0);
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_close(reinterpret_cast<uv_handle_t*>(&watchdog), nullptr);
    uv_run(&loop, UV_RUN_NOWAIT);
  }

  std::vector<Event> notify_events() {
    EventQuery q;
    q.kind = EventKind::Notify;
    return *store->events(q);
  }
};

}  // namespace

TEST_CASE("notify: the command reads the verdict on stdin and the SOAKD_* variables; the outcome is an event") {
  World w("ok");
  w.service->notify(w.rejected());
  CHECK_FALSE(w.service->settled());  // running
  w.run_until_settled();
  CHECK(w.service->settled());
  CHECK(w.settled_calls == 1);

  const json in = json::parse(read_text(w.tmp.path() + "/stdin.json"), nullptr, false);
  REQUIRE(in.is_object());
  CHECK(in["candidate"] == "llama-b2");
  CHECK(in["verdict"] == "rejected");
  CHECK(in["stage"] == "canary");
  CHECK(in["build"] == "b2");
  CHECK(in["runtime"] == "llama.cpp");
  CHECK(in["failing_metrics"][0]["metric"] == "decode_tps/marker");
  const std::string report = w.tmp.path() + "/logs/verdicts/llama-b2.json";
  CHECK(in["report"] == report);
  // SOAKD_REPORT names a file holding the same verdict.
  CHECK(json::parse(read_text(report), nullptr, false) == in);

  const std::string env = read_text(w.tmp.path() + "/env");
  CHECK(env.find("SOAKD_CANDIDATE=llama-b2\n") != std::string::npos);
  CHECK(env.find("SOAKD_VERDICT=rejected\n") != std::string::npos);
  CHECK(env.find("SOAKD_STAGE=canary\n") != std::string::npos);
  CHECK(env.find("SOAKD_REASON=decode_tps marker -87.2% vs baseline\n") != std::string::npos);
  CHECK(env.find("SOAKD_REPORT=" + report + "\n") != std::string::npos);

  auto events = w.notify_events();
  REQUIRE(events.size() == 1);
  CHECK(events[0].candidate_id == w.row.id);
  const json d = json::parse(events[0].detail_json);
  CHECK(d["outcome"] == "ok");
  CHECK(d["verdict"] == "rejected");
  CHECK(d["detail"].get<std::string>().find("exited with status 0") != std::string::npos);
}

TEST_CASE("notify: a non-zero exit is recorded as failed, with its status") {
  World w("fail");
  w.service->notify(w.rejected());
  w.run_until_settled();
  CHECK(read_text(w.tmp.path() + "/stdin.json").find("\"verdict\":\"rejected\"") != std::string::npos);
  auto events = w.notify_events();
  REQUIRE(events.size() == 1);
  const json d = json::parse(events[0].detail_json);
  CHECK(d["outcome"] == "failed");
  CHECK(d["detail"].get<std::string>().find("exited with status 3") != std::string::npos);
}

TEST_CASE("notify: a command hanging past its bound is killed and recorded as timed out") {
  World w("hang", kShortBoundMs);
  w.service->notify(w.rejected());
  w.run_until_settled();
  CHECK(w.service->settled());
  // It read its stdin before it hung: the verdict reached it.
  CHECK(read_text(w.tmp.path() + "/stdin.json").find("\"candidate\":\"llama-b2\"") != std::string::npos);
  auto events = w.notify_events();
  REQUIRE(events.size() == 1);
  const json d = json::parse(events[0].detail_json);
  CHECK(d["outcome"] == "timed_out");
  CHECK(d["detail"].get<std::string>().find("did not finish within 400 ms") != std::string::npos);
}

// Whether `pid` has ended: gone, or a zombie its new parent has not reaped yet.
bool ended(pid_t pid) { return !test::process_running(pid); }

TEST_CASE("notify: at its bound, what the command started is killed with it") {
  World w("orphan", 3 * kShortBoundMs);  // room to start sleep and write its pid first
  w.service->notify(w.rejected());
  w.run_until_settled();
  REQUIRE(w.service->settled());
  const std::string pid_text = read_text(w.tmp.path() + "/child.pid");
  REQUIRE_FALSE(pid_text.empty());
  const pid_t child = static_cast<pid_t>(std::stol(pid_text));
  // SIGKILL was sent to the whole group before the run settled; the kernel
  // ends the process on its next schedule. Wait for that, bounded.
  bool gone = false;
  for (int i = 0; i < 500 && !(gone = ended(child)); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  if (!gone) ::kill(child, SIGKILL);  // leave nothing behind either way
  CHECK(gone);
  const json d = json::parse(w.notify_events().at(0).detail_json);
  CHECK(d["outcome"] == "timed_out");
}

TEST_CASE("notify: a program that cannot be run is recorded as not started") {
  World w("ok");
  const std::string text = R"({"notify": {"command": ["/nonexistent/notify-me"]}, )" + std::string(kOneCandidate) + "}";
  auto c = parse_config(text, "t.json", w.tmp.path());
  REQUIRE(c.ok());
  CHECK(c->notify.timeout_ms == kDefaultNotifyTimeoutMs);
  w.service->reload(std::make_shared<const Config>(std::move(*c)));
  w.service->notify(w.rejected());
  w.run_until_settled();
  auto events = w.notify_events();
  REQUIRE(events.size() == 1);
  CHECK(json::parse(events[0].detail_json)["outcome"] == "not_started");
}

TEST_CASE("notify: stopping waits for the command that runs; a verdict after that is not run") {
  World w("ok");
  w.service->notify(w.rejected());
  bool stopped = false;
  w.service->stop([&] { stopped = true; });
  CHECK_FALSE(stopped);
  w.service->notify(w.rejected());  // logged, not run
  w.run_until_settled();
  CHECK(stopped);
  CHECK(w.notify_events().size() == 1);
}

TEST_CASE("notify: the environment keeps soakd's and replaces stale SOAKD_* values") {
  World w("ok");
  const VerdictNotice n = w.rejected();
  auto env = notice_env({"PATH=/usr/bin", "SOAKD_VERDICT=promoted", "HOME=/Users/op"}, n, "/r.json");
  CHECK(std::count(env.begin(), env.end(), "PATH=/usr/bin") == 1);
  CHECK(std::count(env.begin(), env.end(), "HOME=/Users/op") == 1);
  CHECK(std::count(env.begin(), env.end(), "SOAKD_VERDICT=promoted") == 0);
  CHECK(std::count(env.begin(), env.end(), "SOAKD_VERDICT=rejected") == 1);
  CHECK(std::count(env.begin(), env.end(), "SOAKD_REPORT=/r.json") == 1);
  CHECK(notice_report_path("/var/log/soakd/soakd.log", "a") == "/var/log/soakd/verdicts/a.json");
}

TEST_CASE("notify: the config block's errors name the key and the fix") {
  auto bad = [](const std::string& notify) {
    auto c = parse_config(R"({"notify": )" + notify + ", " + kOneCandidate + "}", "soakd.json", "/tmp");
    REQUIRE_FALSE(c.ok());
    return c.message();
  };
  CHECK(bad(R"({"command": []})").find("soakd.json: notify.command: must be a non-empty array") != std::string::npos);
  CHECK(bad(R"({"command": "osascript -e x"})").find("run without a shell") != std::string::npos);
  CHECK(bad(R"({"command": ["curl", 3]})").find("notify.command[1]: must be a string") != std::string::npos);
  CHECK(bad(R"({"timeout": "5s"})").find("notify.command: is required") != std::string::npos);
  CHECK(bad(R"({"command": ["x"], "timeout": "1h"})").find("notify.timeout: is 1h, longer than 45s") !=
        std::string::npos);
  CHECK(bad(R"({"command": ["x"], "timout": "5s"})").find("notify.timout: unknown key \"timout\"; did you mean") !=
        std::string::npos);
  auto ok = parse_config(
      R"({"notify": {"command": ["./hooks/tell.sh"], "timeout": "5s"}, )" + std::string(kOneCandidate) + "}",
      "soakd.json", "/etc/soakd");
  INFO((ok.ok() ? "" : ok.message()));
  REQUIRE(ok.ok());
  CHECK(ok->notify.command[0] == "/etc/soakd/hooks/tell.sh");
  CHECK(ok->notify.timeout_ms == 5'000);
}
