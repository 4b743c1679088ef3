// Comparisons in every stage, and growth that holds, over whole campaigns in
// virtual time (tests/support/sim_world.h): a prefill twice as slow rejected by
// the gate's long-context rounds, decode halving in the soak rejected there, a
// footprint that fills llama-server's prompt cache and holds promoted while a
// steady one is rejected (docs/DESIGN.md §3.5, §3.6).
#include <sstream>
#include <string>

#include "soakctl/soakctl.h"
#include "tests/catch.h"
#include "tests/support/sim_world.h"

using namespace soak;
using namespace soak::sim;

namespace {

const MetricEvidence* metric_named(const VerdictRow& v, const std::string& prefix) {
  for (const auto& m : v.metrics)
    if (m.metric.rfind(prefix, 0) == 0) return &m;
  return nullptr;
}

}  // namespace

TEST_CASE("campaign: a fresh 32K prefill twice as slow as the baseline's is rejected by the end of the gate") {
  World w(base_and_cand());
  w.runner->at("cand").build = "b9502";
  w.runner->at("cand").fresh_prefill_slowdown = 2;
  w.run(10 * kDay);
  auto v = w.verdict("cand");
  REQUIRE(v);
  INFO(v->reason);
  CHECK(v->state == VerdictState::Rejected);
  CHECK(v->stage == "gate");  // the canary's two rounds a side are too few for a 2x change
  const auto* ttft = metric_named(*v, "ttft_ms/long_context/32768/fresh{");
  REQUIRE(ttft);
  INFO(ttft->reason);
  CHECK(ttft->result == MetricResult::Fail);
  CHECK(ttft->n >= 5);
  CHECK(ttft->n_baseline >= 5);
  CHECK(v->reason.find("ttft_ms long_context/32768/fresh") != std::string::npos);
  // The canary saw the same sizes on two samples a side and said why it did not decide.
  const auto st = w.stages("cand");
  REQUIRE(st.size() == 3);
  CHECK(st[1].kind == StageKind::Canary);
  CHECK(st[1].state == StageState::Passed);
  auto all = *w.store->verdicts(w.row("cand")->id);
  bool canary_passed = false;
  for (const auto& x : all)
    if (x.stage == "canary" && !x.metrics.empty()) {
      INFO(x.reason);
      canary_passed = true;
      const auto* few = metric_named(x, "ttft_ms/long_context/32768/fresh{");
      REQUIRE(few);
      CHECK(few->result == MetricResult::Insufficient);
      CHECK(few->reason.find("few-sample rule") != std::string::npos);
    }
  CHECK(canary_passed);
  CHECK(w.verdict("base")->state == VerdictState::Promoted);
  // explain shows, for the comparison, the samples on each side, the threshold and where it came from.
  std::ostringstream out, err;
  REQUIRE(soakctl_main({"--db", w.tmp.path() + "/s.db", "explain", "cand"}, out, err, w.clock) == kCtlExitOk);
  INFO(out.str() << err.str());
  CHECK(out.str().find("verdict: rejected (gate)") != std::string::npos);
  CHECK(out.str().find("recomputed from the stored rows: identical") != std::string::npos);
  CHECK(out.str().find("N_BASE") != std::string::npos);
  CHECK(out.str().find("floor from judge.effect_floor") != std::string::npos);
}

TEST_CASE("campaign: a fresh prefill 10x slower is rejected in the canary") {
  World w(base_and_cand());
  w.runner->at("cand").fresh_prefill_slowdown = 10;
  w.run(10 * kDay);
  auto v = w.verdict("cand");
  REQUIRE(v);
  INFO(v->reason);
  CHECK(v->state == VerdictState::Rejected);
  CHECK(v->stage == "canary");
  CHECK(has_metric(*v, "ttft_ms/long_context/32768/fresh{", MetricResult::Fail));
}

TEST_CASE("campaign: a decode speed that halves during the soak is rejected in the soak") {
  World w(candidate("cand", 18432));
  w.runner->at("cand").late_soak_decode = 2;
  w.run(10 * kDay);
  auto v = w.verdict("cand");
  REQUIRE(v);
  INFO(v->reason);
  CHECK(v->state == VerdictState::Rejected);
  CHECK(v->stage == "soak");
  CHECK(has_metric(*v, "decode_drift/", MetricResult::Fail));
}

TEST_CASE("campaign: a footprint that fills the prompt cache and holds is promoted; a steady one is rejected") {
  // llama-server's launch fingerprint: the default 8192 MiB prompt cache.
  const std::string fingerprint = R"({"model":"m.gguf","kv_cache_type":"f16","cache_ram_mib":8192})";
  {
    World w(candidate("cand", 18432));
    w.runner->at("cand").fingerprint = fingerprint;
    w.runner->at("cand").soak_cache_fill_mb = 6'000;  // over the soak's first two days, then flat
    w.run(10 * kDay);
    auto v = w.verdict("cand");
    REQUIRE(v);
    INFO(v->reason);
    CHECK(v->state == VerdictState::Promoted);
    const auto* growth = metric_named(*v, "footprint_growth");
    REQUIRE(growth);
    INFO(growth->reason);
    CHECK(growth->result == MetricResult::Pass);
    CHECK(growth->estimate > 0.2);  // it grew
    CHECK(growth->reason.find("plateau, not a leak") != std::string::npos);
    CHECK(growth->reason.find("8192 MiB") != std::string::npos);
  }
  {
    World w(candidate("cand", 18432));
    w.runner->at("cand").fingerprint = fingerprint;
    w.runner->at("cand").soak_cache_fill_mb = 6'000;
    w.runner->at("cand").soak_cache_fill_ms = 7 * kDay;  // the same growth, steady over the week
    w.run(10 * kDay);
    auto v = w.verdict("cand");
    REQUIRE(v);
    INFO(v->reason);
    CHECK(v->state == VerdictState::Rejected);
    CHECK(v->stage == "soak");
    CHECK(has_metric(*v, "footprint_growth", MetricResult::Fail));
  }
}
