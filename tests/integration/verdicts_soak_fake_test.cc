// The soak's own rules through soakd and the fake runtime
// (docs/DESIGN.md §3.6, §3.9):
//   - 131K failing only in the soak: rejected by the soak's rounds though the
//     pooled ratio stays under its limit;
//   - a footprint that fills the prompt cache (--cache-ram) and holds is
//     promoted; one that keeps growing is rejected;
//   - a runtime whose first token takes 1000x longer from a third of the way
//     into its soak is rejected in the soak (a first build: no baseline).
#include "tests/integration/verdicts_harness.h"

using namespace soak;
using namespace soak::verdicts_test;

TEST_CASE("131K failing only in the soak is rejected by the soak's rounds, the pooled ratio under its limit") {
  // Healthy through smoke, canary and gate; from the soak's start every prompt
  // over 100,000 tokens gets HTTP 500 (large-prompt-5xx keeps --fail-above-tokens).
  Fake f = start_fake("healthy", {"--build", "b9432-0a1b2c3", "--token-interval-ms", "2", "--prefill-ms-per-1k", "1",
                                  "--fail-above-tokens", "100000"});
  Run run;
  // gate.max_failure_ratio 10 %: the compressed soak has ~100 completions
  // where a week has ~10,000, so its four 131K rounds weigh a hundred times
  // what they would; at 10 % the pooled ratio lets them by as 1 % lets the
  // week's 28 (S1:197), and only the rounds can reject.
  Compressed stages;
  stages.soak = "14s";
  stages.long_context = "2s";
  stages.gate_more = R"(, "max_failure_ratio": 0.1)";
  stages.long_context_sizes = "1024, 131072";
  run.write(stages.text(), {candidate("m", f.port)});
  auto d = run.start();
  on_stage_start(d, "m", "b9432-0a1b2c3", "soak", f.port, R"({"scenario": "large-prompt-5xx"})");
  wait_settled(d);

  const VerdictRow v = run.verdict("m");
  INFO(v.reason << "\n" << metric_lines(v));
  CHECK(v.state == VerdictState::Rejected);
  CHECK(v.stage == "soak");
  CHECK(has(v.reason, "long context 131K"));
  const MetricEvidence* rounds = find_metric(v, "long_context/131072");
  REQUIRE(rounds);
  CHECK(rounds->result == MetricResult::Fail);
  CHECK(has(rounds->reason, "S1:197"));
  const MetricEvidence* small = find_metric(v, "long_context/1024");
  REQUIRE(small);
  CHECK(small->result == MetricResult::Pass);
  // Neither the pooled ratio nor the sequential test decided it.
  const MetricEvidence* ratio = find_metric(v, "failure_ratio");
  REQUIRE(ratio);
  CHECK(ratio->result == MetricResult::Pass);
  CHECK_FALSE(has(v.reason, "sequential"));
  // The canary and the gate ran 131K clean.
  const auto st = run.stages("m");
  REQUIRE(st.size() == 4);
  for (size_t i = 0; i < 3; ++i) CHECK(st[i].state == StageState::Passed);
}

TEST_CASE("a footprint that fills the prompt cache and holds is promoted; one that keeps growing is rejected") {
  // Two managed llama.cpp-like runtimes launched with --cache-ram 40 (the
  // launch fingerprint's cap). From the soak's start one keeps 2 MiB more of
  // its prompt cache per request until the cap, then holds; the other leaks
  // 3 MiB per request without end.
  const int fill_port = free_port(), leak_port = free_port();
  // A sanitized fake keeps what it frees in AddressSanitizer's quarantine (up
  // to 256 MB), a footprint that grows with traffic whatever the cache does:
  // none for these runtimes (ignored by an unsanitized build).
  auto managed = [](const std::string& name, int port, const std::vector<std::string>& more) {
    std::string launch = fake_launch(kFake, port, "healthy", more);
    launch.insert(launch.size() - 1, R"(, "env": { "ASAN_OPTIONS": "quarantine_size_mb=0:detect_leaks=0" })");
    return candidate(name, port, R"(, "build": { "from": "http" }, "launch": )" + launch);
  };
  Run run;
  run.write(R"(
        "stages": { "smoke": "20s", "canary": ")" +
                seconds(8) + R"(", "gate": "5s", "soak": "24s", "grace": 1 },
        "cadence": { "scrape": "1s", "functional": "1s", "long_context": "3s", "burst": "3s", "cancel": "3s",
                     "gate_pause": "100ms", "gate_long_context": "3s", "soak_traffic": "300ms", "soak_heavy": "1h",
                     "build_poll": "2s" },
        "gate": { "min_completed": 5 },
        "soak": { "max_decode_drift": 1 },
        "agent": { "context_ceiling": 8000, "band_tokens": 20000 },
        "long_context_sizes": [1024],
        "burst_sizes": [1],
        "capacity": [])",
            {managed("fill", fill_port, {"--build", "b9450-0a1b2c3", "--cache-ram", "40"}),
             managed("leak", leak_port, {"--build", "b9451-0a1b2c3", "--cache-ram", "40", "--leak-mb", "3"})});
  auto d = run.start();
  on_stage_start(d, "fill", "b9450-0a1b2c3", "soak", fill_port, R"({"cache_fill_mib": 2})");
  on_stage_start(d, "leak", "b9451-0a1b2c3", "soak", leak_port, R"({"scenario": "memory-leak"})");
  wait_settled(d);

  CHECK(has(run.row("fill").fingerprint, "\"cache_ram_mib\":40"));
  {
    const VerdictRow v = run.verdict("fill");
    INFO(v.reason << "\n" << metric_lines(v));
    CHECK(v.state == VerdictState::Promoted);
    const MetricEvidence* g = find_metric(v, "footprint_growth");
    REQUIRE(g);
    CHECK(g->result == MetricResult::Pass);
    CHECK(has(g->reason, "plateau, not a leak"));
    CHECK(has(g->reason, "prompt-cache cap 40 MiB"));
    CHECK(g->estimate > g->threshold);  // it grew past the plain growth limit: the plateau decided
  }
  {
    const VerdictRow v = run.verdict("leak");
    INFO(v.reason << "\n" << metric_lines(v));
    CHECK(v.state == VerdictState::Rejected);
    CHECK(v.stage == "soak");
    const MetricEvidence* g = find_metric(v, "footprint_growth");
    REQUIRE(g);
    CHECK(g->result == MetricResult::Fail);
    CHECK(has(g->reason, "past the runtime's prompt-cache cap 40 MiB"));
  }
}

TEST_CASE("a first build whose first token takes 1000x longer from a third into its soak is rejected there") {
  // Healthy through smoke, canary and gate, its answers' first token a
  // millisecond away; some 40 agent turns into the soak every request a slot
  // starts waits a second before its prompt is read.
  Fake f = start_fake("healthy", {"--build", "b9433-1c2d3e4", "--token-interval-ms", "1", "--prefill-ms-per-1k", "0"});
  Run run;
  Compressed stages;
  stages.canary = seconds(6);
  stages.soak = seconds(16);
  stages.soak_heavy = "8s";
  run.write(stages.text(), {candidate("m", f.port)});
  auto d = run.start();
  on_stage_start(d, "m", "b9433-1c2d3e4", "soak", f.port,
                 R"({"first_token_delay_ms": 1000, "first_token_delay_after": 40})");
  wait_settled(d);

  const VerdictRow v = run.verdict("m");
  INFO(v.reason << "\n" << metric_lines(v));
  CHECK(v.state == VerdictState::Rejected);
  CHECK(v.stage == "soak");
  const MetricEvidence* pooled = find_metric(v, "ttft_drift/pooled");
  REQUIRE(pooled);
  CHECK(pooled->result == MetricResult::Fail);
  CHECK(has(pooled->reason, "the rows split best from"));
  const MetricEvidence* evidence = find_metric(v, "evidence/ttft_drift");
  REQUIRE(evidence);
  CHECK(evidence->result == MetricResult::Pass);
  const auto st = run.stages("m");
  REQUIRE(st.size() == 4);
  for (size_t i = 0; i < 3; ++i) CHECK(st[i].state == StageState::Passed);
}
