// The soakd binary as a user runs it: start, reload on SIGHUP (good and bad
// config), a second instance refused, soakctl reading while soakd writes,
// graceful stop on SIGTERM and SIGINT — each leaving its event in the store.
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/clock.h"
#include "soakctl/soakctl.h"
#include "storage/sqlite_store.h"
#include "tests/catch.h"
#include "tests/support/child_process.h"
#include "tests/support/temp_dir.h"

using namespace soak;

namespace {

const std::string kSoakd = std::string(SOAKD_BINARY_DIR) + "/daemon/soakd";
constexpr int kWaitMs = 10'000;

std::string write_config(const TempDir& tmp, const std::string& name, const std::string& extra = "") {
  std::string path = tmp.path() + "/" + name;
  std::ofstream(path) << R"({
    "store": ")" << tmp.path()
                      << R"(/store/soakd.db",
    "log": ")" << tmp.path()
                      << R"(/soakd.log",
    "sampler": { "keep_awake": false },
    "candidates": [ { "name": "a", "model": "m", "runtime": "llama.cpp",
                      "base_url": "http://127.0.0.1:9", "build": { "fixed": "b1" } } ]
    )" << extra << "}";
  return path;
}

std::vector<Event> events_of(const std::string& store) {
  auto st = SqliteStore::open(store, OpenMode::ReadOnly);
  REQUIRE(st.ok());
  auto ev = (*st)->events({});
  REQUIRE(ev.ok());
  return *ev;
}

int count_kind(const std::vector<Event>& ev, EventKind kind, const std::string& detail_part = "") {
  int n = 0;
  for (const auto& e : ev)
    if (e.kind == kind && e.detail_json.find(detail_part) != std::string::npos) ++n;
  return n;
}

}  // namespace

TEST_CASE("soakd starts, reloads, refuses a second instance, serves soakctl, stops on SIGTERM") {
  TempDir tmp;
  std::string cfg = write_config(tmp, "soakd.json");
  std::string store = tmp.path() + "/store/soakd.db";

  auto d = ChildProcess::spawn({kSoakd, "run", "--config", cfg, "--log-stderr"});
  REQUIRE(d);
  REQUIRE(d->wait_for_line("started", kWaitMs));

  // Reload with a good config.
  REQUIRE(d->signal(SIGHUP));
  REQUIRE(d->wait_for_line("config reloaded", kWaitMs));

  // Reload with a bad config: the old one is kept, the reason logged and recorded.
  std::ofstream(cfg) << R"({"candidates": [{"name": "a", "model": "m", "runtime": "nope", "base_url": "x"}]})";
  REQUIRE(d->signal(SIGHUP));
  auto rejected = d->wait_for_line("config reload rejected", kWaitMs);
  REQUIRE(rejected);

  // A second soakd on the same store is refused, naming the holder's pid.
  write_config(tmp, "soakd.json");
  auto second = run_program({kSoakd, "run", "--config", cfg, "--log-stderr"}, kWaitMs);
  CHECK(second.exit_code == 1);
  CHECK(second.err.find("another soakd (pid " + std::to_string(d->pid()) + ")") != std::string::npos);

  // soakctl reads the store while soakd holds it open for writing.
  SystemClock clock;
  std::ostringstream out, err;
  CHECK(soakctl_main({"--db", store, "status", "--json"}, out, err, clock) == kCtlExitOk);
  CHECK(err.str().empty());

  // A control request: soakctl tells the running soakd (SIGUSR1 to the pid in
  // the lock file); soakd handles the signal (its default would end it) and
  // answers the request.
  std::ostringstream ctl;
  CHECK(soakctl_main({"--db", store, "abort", "a", "--why", "test"}, ctl, err, clock) == kCtlExitOk);
  INFO(ctl.str());
  CHECK(ctl.str().find("soakd (pid " + std::to_string(d->pid()) + ") was told") != std::string::npos);
  CHECK(d->wait_for_line("control abort a", kWaitMs));

  REQUIRE(d->signal(SIGTERM));
  auto st = d->wait_exit(kWaitMs);
  REQUIRE(st);
  REQUIRE(WIFEXITED(*st));
  CHECK(WEXITSTATUS(*st) == 0);

  auto ev = events_of(store);
  CHECK(count_kind(ev, EventKind::DaemonStart) == 1);
  CHECK(count_kind(ev, EventKind::ConfigReload, "\"ok\":true") == 1);
  CHECK(count_kind(ev, EventKind::ConfigReload, "\"ok\":false") == 1);
  CHECK(count_kind(ev, EventKind::DaemonStop, "SIGTERM") == 1);
  CHECK(ev.back().kind == EventKind::DaemonStop);
}

TEST_CASE("soakd stops gracefully on SIGINT too") {
  TempDir tmp;
  std::string cfg = write_config(tmp, "soakd.json");
  auto d = ChildProcess::spawn({kSoakd, "run", "--config", cfg, "--log-stderr"});
  REQUIRE(d);
  REQUIRE(d->wait_for_line("started", kWaitMs));
  REQUIRE(d->signal(SIGINT));
  auto st = d->wait_exit(kWaitMs);
  REQUIRE(st);
  CHECK(WIFEXITED(*st));
  CHECK(count_kind(events_of(tmp.path() + "/store/soakd.db"), EventKind::DaemonStop, "SIGINT") == 1);
}

TEST_CASE("soakd check-config: exit 0 on a valid file, 1 with the message on a bad one") {
  TempDir tmp;
  auto ok = run_program({kSoakd, "check-config", write_config(tmp, "good.json")}, kWaitMs);
  CHECK(ok.exit_code == 0);
  CHECK(ok.out.find("ok — 1 candidate(s)") != std::string::npos);

  std::string bad = tmp.path() + "/bad.json";
  std::ofstream(bad) << R"({"candidates": [{"name": "a", "model": "m", "runtime": "llama.cpp",
                             "base_url": "http://127.0.0.1:1", "stages": {"canary": "-2h"}}]})";
  auto r = run_program({kSoakd, "check-config", bad}, kWaitMs);
  CHECK(r.exit_code == 1);
  CHECK(r.err.find(bad + ": candidates[0].stages.canary") != std::string::npos);
  CHECK_FALSE(std::ifstream(tmp.path() + "/store/soakd.db").good());  // nothing ran

  auto usage = run_program({kSoakd, "check-config"}, kWaitMs);
  CHECK(usage.exit_code == 2);
  auto unknown = run_program({kSoakd, "frobnicate"}, kWaitMs);
  CHECK(unknown.exit_code == 2);
  CHECK(unknown.err.find("unknown command \"frobnicate\"") != std::string::npos);
}

TEST_CASE("a store path that is a directory is refused before anything runs, naming it") {
  TempDir tmp;
  std::filesystem::create_directories(tmp.path() + "/store/soakd.db");  // a folder where the file should be
  const std::string cfg = write_config(tmp, "soakd.json");
  auto check = run_program({kSoakd, "check-config", cfg}, kWaitMs);
  CHECK(check.exit_code == 1);
  CHECK(check.err.find("store " + tmp.path() + "/store/soakd.db is a directory") != std::string::npos);
  auto run = run_program({kSoakd, "run", "--config", cfg, "--log-stderr"}, kWaitMs);
  CHECK(run.exit_code == 1);
  CHECK(run.err.find("is a directory; \"store\" names a file") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(tmp.path() + "/store/soakd.db.lock"));  // nothing made beside it
}

TEST_CASE("another process holds the store's write lock past the busy timeout: soakd pauses, drops nothing, says so") {
  TempDir tmp;
  const std::string cfg = tmp.path() + "/soakd.json";
  std::ofstream(cfg) << R"({
    "store": ")" << tmp.path()
                     << R"(/store/soakd.db",
    "sampler": { "keep_awake": false, "interval": "200ms" },
    "candidates": [ { "name": "a", "model": "m", "runtime": "llama.cpp",
                      "base_url": "http://127.0.0.1:9", "build": { "fixed": "b1" } } ] })";
  const std::string store = tmp.path() + "/store/soakd.db";
  auto d = ChildProcess::spawn({kSoakd, "run", "--config", cfg, "--log-stderr"});
  REQUIRE(d);
  REQUIRE(d->wait_for_line("started", kWaitMs));

  // A careless sqlite3 session: an exclusive transaction held open.
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(store.c_str(), &db) == SQLITE_OK);
  sqlite3_busy_timeout(db, kWaitMs);  // the daemon may be mid-write at this instant: wait for it, as sqlite3 does
  REQUIRE(sqlite3_exec(db, "BEGIN EXCLUSIVE", nullptr, nullptr, nullptr) == SQLITE_OK);
  // The daemon's next write waits out the busy timeout, then pauses the store.
  CHECK(d->wait_for_line("store not writable since", kBusyTimeoutMs + kWaitMs));
  // Readers still read (WAL); soakctl status tells what the store cannot: the daemon is paused.
  SystemClock clock;
  std::ostringstream out, err;
  CHECK(soakctl_main({"--db", store, "status"}, out, err, clock) == kCtlExitOk);
  CHECK(out.str().find("soakd: store not writable since") != std::string::npos);
  CHECK(out.str().find("database is locked") != std::string::npos);
  REQUIRE(sqlite3_exec(db, "COMMIT", nullptr, nullptr, nullptr) == SQLITE_OK);
  sqlite3_close(db);

  auto resumed = d->wait_for_line("store writable again", kWaitMs + 30'000);
  CHECK(resumed);
  REQUIRE(d->signal(SIGTERM));
  REQUIRE(d->wait_exit(kWaitMs));
  CHECK(d->err().find("cannot store") == std::string::npos);
  CHECK(d->err().find("dropping") == std::string::npos);

  auto ev = events_of(store);
  int outages = 0;
  for (const auto& e : ev) {
    if (e.kind != EventKind::Gap || e.detail_json.find("store_unwritable") == std::string::npos) continue;
    ++outages;
    CHECK(e.detail_json.find("\"rows_dropped\":0") != std::string::npos);
    CHECK(e.detail_json.find("database is locked") != std::string::npos);
  }
  CHECK(outages == 1);
}
