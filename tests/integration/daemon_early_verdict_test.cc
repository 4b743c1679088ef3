// The sequential failure test through the real daemon (docs/DESIGN.md §3.12):
// soakd against two fake runtime children on loopback, stages compressed to
// seconds. One fails every 8th inference request with HTTP 500 and has a
// 7-day soak configured: its canary is rejected within its first quarter,
// long before anything a fixed-horizon rule would wait for. The other is
// healthy: every stage runs to its end and the soak promotes it.
#include <signal.h>
#include <sys/wait.h>

#include <fstream>

#include "storage/sqlite_store.h"
#include "tests/catch.h"
#include "tests/support/child_process.h"
#include "tests/support/temp_dir.h"

using namespace soak;

namespace {

const std::string kSoakd = std::string(SOAKD_BINARY_DIR) + "/daemon/soakd";
constexpr int kStartMs = 10'000;
constexpr int kRunMs = 150'000;        // bound on the whole run (about 40 s unloaded)
constexpr int64_t kCanaryMs = 80'000;  // the failing candidate's canary
constexpr int64_t kQuarterMs = kCanaryMs / 4;

// A fake runtime child's port.
int listening_port(std::optional<ChildProcess>& child) {
  REQUIRE(child);
  auto port = child->wait_for_port("listening on", kStartMs);
  REQUIRE(port);
  return *port;
}

}  // namespace

TEST_CASE("a 1-in-8 5xx runtime is rejected in its canary's first quarter; a healthy one runs every stage out") {
  TempDir tmp;
  auto flaky = ChildProcess::spawn({SOAK_FAKE_RUNTIME_BIN, "--listen", "127.0.0.1:0:burst-5xx", "--error-every", "8",
                                    "--error-run", "1", "--build", "b9431-aaaaaaa", "--token-interval-ms", "2"});
  const int flaky_port = listening_port(flaky);
  auto healthy = ChildProcess::spawn({SOAK_FAKE_RUNTIME_BIN, "--listen", "127.0.0.1:0:healthy", "--build",
                                      "b9430-5bec353", "--token-interval-ms", "2"});
  const int healthy_port = listening_port(healthy);

  const std::string cfg = tmp.path() + "/soakd.json";
  std::ofstream(cfg) << R"({
    "store": "store/soakd.db",
    "log": "soakd.log",
    "defaults": {
      "stages": { "smoke": "10s", "canary": "8s", "gate": "8s", "soak": "10s" },
      "cadence": { "scrape": "1s", "functional": "1s", "long_context": "4s", "burst": "4s", "cancel": "4s",
                   "gate_pause": "100ms", "soak_traffic": "500ms", "soak_heavy": "4s", "build_poll": "2s" },
      "limits": { "wall_timeout": "20s", "stall_timeout": "5s", "connect_timeout": "1s" },
      "gate": { "min_completed": 10 },
      "soak": { "max_footprint_slope_mb_per_h": 1000000, "max_footprint_growth": 10 },
      "long_context_sizes": [1024],
      "burst_sizes": [1, 2]
    },
    "sampler": { "interval": "250ms", "process_every": "750ms", "keep_awake": false },
    "schedule": { "nightly_window": "now", "max_concurrent_canaries": 1 },
    "candidates": [
      { "name": "flaky", "model": "qwen3.6-35b-a3b", "runtime": "llama.cpp", "allow_coexisting": true,
        "stages": { "canary": "80s", "gate": "24h", "soak": "7d" },
        "base_url": "http://127.0.0.1:)"
                     << flaky_port << R"(" },
      { "name": "healthy", "model": "qwen3.6-35b-a3b", "runtime": "llama.cpp", "allow_coexisting": true,
        "base_url": "http://127.0.0.1:)"
                     << healthy_port << R"(" }
    ]
  })";

  auto d = ChildProcess::spawn({kSoakd, "run", "--config", cfg, "--log-stderr", "--exit-when-settled"});
  REQUIRE(d);
  auto st = d->wait_exit(kRunMs);
  INFO(d->err());
  REQUIRE(st);
  REQUIRE(WIFEXITED(*st));
  CHECK(WEXITSTATUS(*st) == 0);

  auto opened = SqliteStore::open(tmp.path() + "/store/soakd.db", OpenMode::ReadOnly);
  REQUIRE(opened.ok());
  Store& store = **opened;
  std::optional<CandidateRow> bad, good;
  for (const auto& c : *store.candidates()) (c.name == "flaky" ? bad : good) = c;
  REQUIRE(bad);
  REQUIRE(good);

  {  // the failing runtime: rejected early by the sequential test, in its canary
    auto v = *store.latest_verdict(bad->id);
    REQUIRE(v);
    INFO(v->reason);
    CHECK(v->state == VerdictState::Rejected);
    CHECK(v->stage == "canary");
    CHECK(v->reason.find("sequential") != std::string::npos);
    CHECK(v->reason.find("budget 1.00%") != std::string::npos);
    auto stages = *store.stages(bad->id);
    REQUIRE(stages.size() == 2);
    const StageRow& canary = stages.back();
    CHECK(canary.kind == StageKind::Canary);
    CHECK(canary.state == StageState::Failed);
    CHECK(canary.length_ms == kCanaryMs);
    REQUIRE(canary.ended_ms);
    CHECK(*canary.ended_ms - canary.started_ms < kQuarterMs);
  }
  {  // the healthy runtime: every stage ran to its end and passed
    auto stages = *store.stages(good->id);
    REQUIRE(stages.size() == 4);
    for (size_t i = 0; i < stages.size(); ++i) {
      INFO("stage " << to_string(stages[i].kind) << ": " << stages[i].reason);
      CHECK(stages[i].kind == kAllStages[i]);
      CHECK(stages[i].state == StageState::Passed);
      REQUIRE(stages[i].ended_ms);
      // Smoke ends when its once-only probes are done; the others run their length.
      if (stages[i].kind != StageKind::Smoke) CHECK(*stages[i].ended_ms - stages[i].started_ms >= stages[i].length_ms);
    }
    auto v = *store.latest_verdict(good->id);
    REQUIRE(v);
    INFO(v->reason);
    CHECK(v->state == VerdictState::Promoted);
  }
}
