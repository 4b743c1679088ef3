// Shared by the managed-runtime integration tests: the soakd binary with a
// config whose candidates launch the fake runtime (tests/fake_runtime) as a
// managed child on a free loopback port, stages compressed to seconds, and
// the store read back. Waits are for soakd's log lines (ChildProcess reads
// its stderr with a deadline) or bounded polls of /proc, never plain sleeps.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "core/files.h"
#include "storage/sqlite_store.h"
#include "tests/catch.h"
#include "tests/support/child_process.h"
#include "tests/support/process_state.h"
#include "tests/support/temp_dir.h"

namespace soak::managed_test {

inline const std::string kSoakd = std::string(SOAKD_BINARY_DIR) + "/daemon/soakd";
inline const std::string kFake = SOAK_FAKE_RUNTIME_BIN;
constexpr int kStepMs = 30'000;  // one step of a campaign (start, a stage, a stop)
constexpr int kRunMs = 150'000;  // a whole campaign

inline int free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

// A process that exists and has not ended (tests/support/process_state.h).
inline bool alive(int pid) { return test::process_running(pid); }

// Polls `done` every 50 ms until it holds or `timeout_ms` passes: the state
// watched is another process's (a child of soakd), which sends no signal.
inline bool eventually(const std::function<bool()>& done, int timeout_ms) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (std::chrono::steady_clock::now() < until) {
    if (done()) return true;
    timespec ts{0, 50'000'000};
    ::nanosleep(&ts, nullptr);
  }
  return done();
}

inline std::string json_quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

// The fake runtime's argv for a managed candidate on `port`.
inline std::string fake_argv(const std::string& program, int port, const std::string& scenario,
                             const std::vector<std::string>& more = {}) {
  std::string a = "[" + json_quote(program) + ", \"--listen\", \"127.0.0.1:" + std::to_string(port) + ":" + scenario +
                  "\", \"--token-interval-ms\", \"2\"";
  for (const auto& m : more) a += ", " + json_quote(m);
  return a + "]";
}

// A launch block running the fake runtime.
inline std::string fake_launch(const std::string& program, int port, const std::string& scenario,
                               const std::vector<std::string>& more = {}) {
  return "{\"argv\": " + fake_argv(program, port, scenario, more) +
         ", \"ready_timeout\": \"20s\", \"stop_timeout\": \"5s\"}";
}

// One managed candidate "m" (plus `extra_candidates`), stages a few seconds each.
struct Setup {
  TempDir tmp;
  std::string cfg, store, log_dir;
  int port = free_port();
  std::string runtime = "llama.cpp";  // the candidate's runtime kind

  std::string runtime_log() const { return log_dir + "/m.runtime.log"; }

  void write(const std::string& launch, const std::string& candidate_extra = "",
             const std::string& stages = R"({ "smoke": "4s", "canary": "4s", "gate": "6s", "soak": "6s" })") {
    cfg = tmp.path() + "/soakd.json";
    // allow_coexisting: the host may have another inference engine up (a
    // user's Mac usually runs Ollama or LM Studio), which would make every
    // stage inconclusive on SOLO; these tests are about the managed runtime,
    // and SOLO is tested with scripted samplers (judge_canary_test.cc,
    // campaign_sim_test.cc). Nor do they run the golden set: its 32 answers
    // at a canary's start take longer than these 4-second canaries, whose
    // heavy work would then not fit before the deadline (the golden set
    // through the daemon is equivalence_campaign_test.cc).
    store = tmp.path() + "/store/soakd.db";
    log_dir = tmp.path() + "/logs";
    std::ofstream(cfg) << R"({
      "store": "store/soakd.db",
      "log": "logs/soakd.log",
      "defaults": {
        "stages": )" << stages
                       << R"(,
        "cadence": { "scrape": "1s", "functional": "1s", "long_context": "3s", "burst": "3s", "cancel": "3s",
                     "gate_pause": "100ms", "soak_traffic": "100ms", "soak_heavy": "3s", "build_poll": "1s" },
        "limits": { "wall_timeout": "20s", "stall_timeout": "5s", "connect_timeout": "1s" },
        "gate": { "min_completed": 5 },
        "soak": { "max_footprint_slope_mb_per_h": 1000000, "max_footprint_growth": 10 },
        "long_context_sizes": [1024],
        "burst_sizes": [1, 2],
        "equivalence": { "enabled": false }
      },
      "sampler": { "interval": "250ms", "process_every": "250ms", "keep_awake": false },
      "schedule": { "nightly_window": "now", "max_concurrent_canaries": 2 },
      "candidates": [
        { "name": "m", "model": "qwen3.6-35b-a3b", "runtime": ")"
                       << runtime << R"(", "allow_coexisting": true,
          "base_url": "http://127.0.0.1:)"
                       << port << R"(", "build": { "from": "http" },
          "launch": )" << launch
                       << candidate_extra << R"( }
      ]
    })";
  }

  std::unique_ptr<SqliteStore> open_store() const {
    auto st = SqliteStore::open(store, OpenMode::ReadOnly);
    REQUIRE(st.ok());
    return std::move(*st);
  }
  std::vector<RuntimeLaunch> launches() const {
    auto st = open_store();
    LaunchQuery q;
    q.name = "m";
    auto rows = st->launches(q);
    REQUIRE(rows.ok());
    return *rows;
  }
  std::vector<CandidateRow> candidates() const {
    auto st = open_store();
    auto rows = st->candidates();
    REQUIRE(rows.ok());
    return *rows;
  }
  std::optional<VerdictRow> verdict(int64_t candidate_id) const {
    auto st = open_store();
    auto v = st->latest_verdict(candidate_id);
    REQUIRE(v.ok());
    return *v;
  }
  std::string read_runtime_log() const {
    std::ifstream in(runtime_log());
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  }
};

inline std::optional<ChildProcess> start_soakd(const Setup& s, bool exit_when_settled) {
  std::vector<std::string> argv{kSoakd, "run", "--config", s.cfg, "--log-stderr"};
  if (exit_when_settled) argv.push_back("--exit-when-settled");
  return ChildProcess::spawn(argv);
}

// The pid soakd reports for its runtime once ready ("m: runtime pid N ready after ...").
inline int ready_pid(ChildProcess& d) {
  auto line = d.wait_for_line("m: runtime pid", kStepMs);
  REQUIRE(line);
  INFO(*line);
  REQUIRE(line->find("ready after") != std::string::npos);
  const auto at = line->find("runtime pid ") + 12;
  return std::stoi(line->substr(at));
}

}  // namespace soak::managed_test
