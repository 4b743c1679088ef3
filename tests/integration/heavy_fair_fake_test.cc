// Fair heavy work through soakd and the fake runtime (docs/DESIGN.md §3.7):
// 20 candidates in canary at once, heavy work one at a time on the host,
// each gets its heavy rows. Served in name order instead, candidates c06 on
// got none (tried by hand).
#include "tests/integration/verdicts_harness.h"

using namespace soak;
using namespace soak::verdicts_test;

TEST_CASE("20 candidates in canary at once each get their heavy rows") {
  // One fake process, a listener per candidate; heavy work (a 1K prefill at
  // 50 ms per 1K, a burst of 2, the prefix-reuse turns) due every second for
  // each: together far more than one host serves one at a time in the canary.
  constexpr int kCanaries = 20;
  std::vector<int> ports;
  std::vector<std::string> argv{kFake, "--token-interval-ms", "1", "--prefill-ms-per-1k", "50"};
  for (int i = 0; i < kCanaries; ++i) {
    ports.push_back(free_port());
    argv.insert(argv.end(), {"--listen", "127.0.0.1:" + std::to_string(ports.back()) + ":healthy"});
  }
  auto fake = ChildProcess::spawn(argv);
  REQUIRE(fake);
  for (int i = 0; i < kCanaries; ++i) REQUIRE(fake->wait_for_line(":" + std::to_string(ports[i]), kStartMs));

  auto name_of = [](int i) { return "c" + std::string(i < 10 ? "0" : "") + std::to_string(i); };
  std::vector<std::string> cands;
  for (int i = 0; i < kCanaries; ++i) cands.push_back(candidate(name_of(i), ports[i]));
  Run run;
  run.write(R"(
        "stages": { "smoke": "20s", "canary": ")" +
                seconds(24) + R"(", "gate": "1h", "soak": "1h", "grace": 1 },
        "cadence": { "scrape": "4s", "functional": "1h", "long_context": "1s", "burst": "1s", "cancel": "1h",
                     "gate_pause": "1h", "gate_long_context": "1h", "soak_traffic": "1h", "soak_heavy": "1h",
                     "build_poll": "10s" },
        "long_context_sizes": [1024],
        "burst_sizes": [2],
        "capacity": [])",
            cands, kCanaries);
  auto d = run.start(false);
  // Every canary has ended (passed or not); the gates that follow are not this test's.
  auto all_ended = [&] {
    auto opened = SqliteStore::open(run.store, OpenMode::ReadOnly);
    if (!opened.ok()) return false;  // not created yet
    auto& st = *opened;
    auto rows = st->candidates();
    if (!rows.ok() || rows->size() < static_cast<size_t>(kCanaries)) return false;
    for (const auto& c : *rows) {
      auto stages = st->stages(c.id);
      if (!stages.ok() || stages->size() < 2 || !(*stages)[1].ended_ms) return false;
    }
    return true;
  };
  const bool ended = eventually(all_ended, kRunMs);
  d->signal(SIGTERM);
  d->wait_exit(kStepMs);
  INFO(d->err());
  REQUIRE(ended);

  int64_t least = INT64_MAX, most = 0;
  for (int i = 0; i < kCanaries; ++i) {
    const std::string n = name_of(i);
    const auto st = run.stages(n);
    REQUIRE(st.size() >= 2);
    REQUIRE(st[1].kind == StageKind::Canary);
    ProbeQuery q;
    q.stage_id = st[1].id;
    int64_t lc = 0, burst = 0, prefix = 0;
    for (const auto& r : *run.open_store()->probe_results(q)) {
      lc += r.kind == ProbeKind::LongContext;
      burst += r.kind == ProbeKind::Burst;
      prefix += r.kind == ProbeKind::SharedPrefix;
    }
    INFO(n << ": " << lc << " long-context, " << burst << " burst, " << prefix << " prefix-reuse rows; canary "
           << to_string(st[1].state) << ": " << st[1].reason);
    CHECK(lc > 0);
    CHECK(burst > 0);
    CHECK(prefix > 0);
    least = std::min(least, lc);
    most = std::max(most, lc);
    for (const auto& v : run.verdicts(n)) CHECK_FALSE(has(v.reason, "0 of 0"));
  }
  INFO("long-context rows per canary: " << least << " to " << most);
  CHECK(least > 0);
}
