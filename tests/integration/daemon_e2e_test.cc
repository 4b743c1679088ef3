// The whole daemon, end to end, as the demo runs it but faster: the real soakd
// binary against a fake runtime child process on loopback, stages compressed
// to seconds, until every candidate has a verdict. Checks what an operator
// would check afterwards in the store: the stages, the verdicts, the host and
// process samples the sampler wrote, the events.
#include <signal.h>
#include <sys/wait.h>

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
constexpr int kStartMs = 10'000;
constexpr int kRunMs = 150'000;  // bound on the whole campaign (about 35 s unloaded)

// A port nothing listens on: bind an ephemeral one and let it go.
int closed_port() {
  auto fake = ChildProcess::spawn({SOAK_FAKE_RUNTIME_BIN, "--listen", "127.0.0.1:0"});
  REQUIRE(fake);
  auto p = fake->wait_for_port("listening on", kStartMs);
  REQUIRE(p);
  fake->signal(SIGTERM);
  REQUIRE(fake->wait_exit(kStartMs));
  return *p;
}

}  // namespace

TEST_CASE("soakd takes a healthy runtime from smoke to promoted, blocks an unreachable one, samples memory") {
  TempDir tmp;
  auto fake = ChildProcess::spawn({SOAK_FAKE_RUNTIME_BIN, "--listen", "127.0.0.1:0:healthy", "--build", "b9430-5bec353",
                                   "--token-interval-ms", "2"});
  REQUIRE(fake);
  auto listening = fake->wait_for_port("listening on", kStartMs);
  REQUIRE(listening);
  const int port = *listening;
  const int dead = closed_port();

  const std::string cfg = tmp.path() + "/soakd.json";
  std::ofstream(cfg) << R"({
    "store": "store/soakd.db",
    "log": "soakd.log",
    "defaults": {
      "stages": { "smoke": "10s", "canary": "8s", "gate": "8s", "soak": "10s" },
      "cadence": { "scrape": "1s", "functional": "2s", "long_context": "4s", "burst": "4s", "cancel": "4s",
                   "gate_pause": "100ms", "soak_traffic": "500ms", "soak_heavy": "4s", "build_poll": "2s" },
      "limits": { "wall_timeout": "20s", "stall_timeout": "5s", "connect_timeout": "1s" },
      "gate": { "min_completed": 10 },
      // A 10-second soak extrapolates allocator warm-up (and, under ASan, its
      // quarantine) to MB per hour; leak detection is proven in virtual time.
      "soak": { "max_footprint_slope_mb_per_h": 1000000, "max_footprint_growth": 10 },
      "long_context_sizes": [1024],
      "burst_sizes": [1, 2]
    },
    "sampler": { "interval": "250ms", "process_every": "250ms", "keep_awake": false },
    "schedule": { "nightly_window": "now", "max_concurrent_canaries": 2 },
    // The test shares the host with whatever else runs on it (a real
    // llama-server of another test, say): SOLO would make the run inconclusive.
    "candidates": [
      { "name": "healthy", "model": "qwen3.6-35b-a3b", "runtime": "llama.cpp",
        "base_url": "http://127.0.0.1:)"
                     << port << R"(", "allow_coexisting": true },
      { "name": "gone", "model": "qwen3.6-35b-a3b", "runtime": "llama.cpp",
        "base_url": "http://127.0.0.1:)"
                     << dead << R"(" }
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
  std::optional<CandidateRow> healthy, gone;
  for (const auto& c : *store.candidates()) (c.name == "healthy" ? healthy : gone) = c;
  REQUIRE(healthy);
  REQUIRE(gone);
  CHECK(healthy->build == "b9430-5bec353");  // read from /props build_info

  auto stages = *store.stages(healthy->id);
  REQUIRE(stages.size() == 4);
  for (size_t i = 0; i < stages.size(); ++i) {
    INFO("stage " << to_string(stages[i].kind) << ": " << stages[i].reason);
    CHECK(stages[i].kind == kAllStages[i]);
    CHECK(stages[i].state == StageState::Passed);
  }
  auto v = *store.latest_verdict(healthy->id);
  REQUIRE(v);
  INFO(v->reason);
  CHECK(v->state == VerdictState::Promoted);
  CHECK(v->stage == "soak");

  auto g = *store.latest_verdict(gone->id);
  REQUIRE(g);
  CHECK(g->state == VerdictState::Blocked);

  // Every probe row of the healthy runtime was classified; the canary ran heavy work.
  ProbeQuery pq;
  pq.candidate_id = healthy->id;
  auto rows = *store.probe_results(pq);
  CHECK(rows.size() > 30);
  int long_context = 0, bursts = 0, agents = 0;
  for (const auto& r : rows) {
    long_context += r.kind == ProbeKind::LongContext;
    bursts += r.kind == ProbeKind::Burst;
    agents += r.kind == ProbeKind::Agent;
  }
  CHECK(long_context > 0);
  CHECK(bursts > 0);
  CHECK(agents >= 10);

  // The sampler wrote host samples and the runtime's process samples, found by its port.
  SampleQuery hq;
  CHECK(store.host_samples(hq)->size() >= 20);
  SampleQuery proc;
  proc.candidate_id = healthy->id;
  auto procs = *store.process_samples(proc);
  REQUIRE(procs.size() >= 20);
  CHECK(procs.back().pid == fake->pid());
  CHECK(procs.back().footprint_bytes.value_or(0) > 0);

  EventQuery eq;
  auto ev = *store.events(eq);
  REQUIRE_FALSE(ev.empty());
  CHECK(ev.front().kind == EventKind::DaemonStart);
  CHECK(ev.back().kind == EventKind::DaemonStop);
  CHECK(ev.back().detail_json.find("settled") != std::string::npos);

  SystemClock clock;
  std::ostringstream out, err;
  CHECK(soakctl_main({"--config", cfg, "verdict", "--model", "qwen3.6-35b-a3b", "--runtime", "llama.cpp", "--build",
                      "b9430-5bec353"},
                     out, err, clock) == kCtlExitOk);
}
