// Comparisons with the baseline in every stage, through soakd and the fake
// runtime (docs/DESIGN.md §3.5):
//   - a fresh prefill at >= 32K twice as slow as the baseline's: the canary's
//     few-sample rule (3x) lets it by, the gate's rounds reject it;
//   - a history baseline whose own stages differ by more than the candidate
//     does: promoted, the threshold named as the baseline's own spread.
#include "tests/integration/verdicts_harness.h"

using namespace soak;
using namespace soak::verdicts_test;

TEST_CASE("a fresh prefill at 32K twice as slow as the baseline's passes the canary and is rejected by the gate") {
  // Both fakes prefill 10 ms per 1K tokens; the candidate twice as long from
  // 30,000 tokens on: its 32K fresh rows, not its 1K ones or its agent turns
  // (their context stays under 12,000).
  // A token every 10 ms: at 2 ms a loaded host's timer slack moved one fake's
  // decode rate 27 % from the other's, and the canary's marker rule saw it.
  Fake base =
      start_fake("healthy", {"--build", "b9430-0a1b2c3", "--token-interval-ms", "10", "--prefill-ms-per-1k", "5"});
  Fake cand = start_fake("healthy", {"--build", "b9431-0a1b2c3", "--token-interval-ms", "10", "--prefill-ms-per-1k",
                                     "5", "--slow-pct", "200", "--slow-from-tokens", "30000"});
  Run run;
  run.write(R"(
        "stages": { "smoke": "20s", "canary": "8s", "gate": "20s", "soak": "4s", "grace": 1 },
        "cadence": { "scrape": "500ms", "functional": "1s", "long_context": "1500ms", "burst": "4s", "cancel": "4s",
                     "gate_pause": "100ms", "gate_long_context": "1s", "soak_traffic": "300ms", "soak_heavy": "2s",
                     "build_poll": "2s" },
        "gate": { "min_completed": 5 },
        "soak": { "max_footprint_slope_mb_per_h": 1000000, "max_footprint_growth": 10 },
        "agent": { "context_ceiling": 12000, "band_tokens": 20000 },
        "long_context_sizes": [1024, 32768],
        "burst_sizes": [1, 2],
        "capacity": [])",
            {candidate("base", base.port), candidate("cand", cand.port, R"(, "baseline": "base")")});
  auto d = run.start();
  wait_settled(d);

  const VerdictRow v = run.verdict("cand");
  INFO(v.reason << "\n" << metric_lines(v));
  CHECK(v.state == VerdictState::Rejected);
  CHECK(v.stage == "gate");
  CHECK(v.baseline_mode == "interleaved");
  CHECK(has(v.reason, "long_context/32768/fresh"));
  CHECK_FALSE(has(v.reason, "long_context/1024"));
  // The gate decided on the rank test's rounds, with the samples on each side:
  // the fresh 32K prefill's time or rate (the server's own figure when the
  // host's load blurs the client's).
  const MetricEvidence* m = nullptr;
  for (const char* name : {"prompt_tps/long_context/32768/fresh", "ttft_ms/long_context/32768/fresh"})
    if (const MetricEvidence* x = find_metric(v, name); x && x->result == MetricResult::Fail) m = x;
  REQUIRE(m);
  INFO(m->reason);
  CHECK(m->n >= 5);
  CHECK(m->n_baseline >= 5);
  CHECK(has(m->reason, "judge.effect_floor"));

  // The canary saw the same build on two samples a side: under the few-sample
  // rule's 3x, so it passed and left the decision to the gate.
  const auto st = run.stages("cand");
  REQUIRE(st.size() == 3);
  CHECK(st[1].kind == StageKind::Canary);
  CHECK(st[1].state == StageState::Passed);
  bool few_sample_seen = false;
  std::string canary_metrics;
  for (const auto& cv : run.verdicts("cand")) {
    if (cv.stage != "canary") continue;
    canary_metrics += metric_lines(cv);
    if (const MetricEvidence* f = find_metric(cv, "ttft_ms/long_context/32768/fresh")) {
      INFO(f->reason);
      CHECK(f->result == MetricResult::Insufficient);
      // Two a side when the canaries' heavy turns allowed (a loaded host may leave one).
      if (f->n >= 2 && f->n_baseline >= 2) CHECK(has(f->reason, "few-sample rule"));
      few_sample_seen = true;
    }
  }
  INFO(canary_metrics);
  CHECK(few_sample_seen);
}

TEST_CASE("a history baseline whose own stages differ more than the candidate does lets it pass, naming the spread") {
  // The baseline's session: its gate at one pace, its soak with every delay
  // 2.2x as long (the host warmer, another load): its stored stages' agent
  // turns differ by ~100 %. The candidate, a later session, runs with every
  // delay 1.5x its baseline's gate: ~+30 % on its agent turns' wall time
  // (fixed costs do not scale), past judge.effect_floor + hold band (15 %),
  // within the spread. The canary
  // is interleaved (the promoted baseline repeats its runs); the gate and the
  // soak compare with the baseline's stored gate and soak.
  Fake base =
      start_fake("healthy", {"--build", "b9440-0a1b2c3", "--token-interval-ms", "10", "--prefill-ms-per-1k", "20"});
  Fake cand = start_fake("healthy", {"--build", "b9441-0a1b2c3", "--token-interval-ms", "10", "--prefill-ms-per-1k",
                                     "20", "--slow-pct", "150"});
  Run run;
  const std::string defaults = R"(
        "stages": { "smoke": "20s", "canary": "7s", "gate": "12s", "soak": "8s", "grace": 1 },
        "cadence": { "scrape": "500ms", "functional": "1s", "long_context": "2s", "burst": "4s", "cancel": "4s",
                     "gate_pause": "100ms", "gate_long_context": "1s", "soak_traffic": "1s", "soak_heavy": "1s",
                     "build_poll": "2s" },
        "gate": { "min_completed": 5 },
        "soak": { "max_footprint_slope_mb_per_h": 1000000, "max_footprint_growth": 10, "max_decode_drift": 1 },
        "agent": { "context_ceiling": 8000, "band_tokens": 20000, "thinking_share": 0 },
        "long_context_sizes": [1024],
        "burst_sizes": [1],
        "capacity": [])";
  {  // The baseline alone, promoted; its soak 2.2x as slow as its gate.
    run.write(defaults, {candidate("base", base.port)});
    auto d = run.start();
    on_stage_start(d, "base", "b9440-0a1b2c3", "soak", base.port, R"({"slow_pct": 220})");
    wait_settled(d);
    const VerdictRow v = run.verdict("base");
    INFO(v.reason);
    REQUIRE(v.state == VerdictState::Promoted);
  }
  // The candidate later, against the baseline's stored rows.
  run.write(defaults, {candidate("base", base.port), candidate("cand", cand.port, R"(, "baseline": "base")")});
  auto d = run.start();
  wait_settled(d);

  bool spread_named = false;
  for (const auto& v : run.verdicts("cand")) {
    if ((v.stage != "gate" && v.stage != "soak") || v.metrics.empty()) continue;  // not a stage's start
    INFO(v.stage << ": " << v.reason << "\n" << metric_lines(v));
    CHECK(v.baseline_mode == "history");
    CHECK(v.state != VerdictState::Rejected);
    // An agent-turn comparison worse than judge.effect_floor + hold band
    // (15 %) at the interval's end nearest to no change, passed under the
    // baseline's own spread.
    for (const auto& m : v.metrics) {
      if (m.metric.rfind("wall_ms/", 0) != 0 || !has(m.metric, "kind=agent") || m.result != MetricResult::Pass)
        continue;
      if (!has(m.reason, "the baseline's own stage-to-stage spread")) continue;
      CHECK(m.threshold > 0.15);
      if (m.lo > 0.15) spread_named = true;
    }
  }
  CHECK(spread_named);
  const VerdictRow v = run.verdict("cand");
  INFO(v.reason);
  CHECK(v.state == VerdictState::Promoted);
}
