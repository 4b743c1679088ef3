// A promotion names its evidence (docs/DESIGN.md §3.2): decisive rules short of
// their samples make a stage inconclusive, naming the rule; drift is read from
// each locator's own rows in send order and pooled over locators; the gate
// and soak compare with the candidate's own earlier stages; comparisons pool
// thin locators.
#include <cmath>

#include "judges/judge.h"
#include "tests/catch.h"
#include "tests/unit/judge_rows.h"

using namespace soak;
using namespace soak::testing;

namespace {

constexpr int64_t kTurnEveryMs = 10 * kMinuteMs;
constexpr double kFootprintMb = 20'000;

// The agent session's context bands: three locators whose turns interleave.
const char* const kBands[] = {"agent/10k", "agent/20k", "agent/30k"};

// Process and host samples over [t0, t1], a minute apart, flat.
void add_samples(JudgeInput& in, int64_t t0, int64_t t1) {
  int64_t id = 1;
  for (int64_t t = t0; t <= t1; t += kMinuteMs, ++id) {
    in.process_samples.push_back(process_sample(id, t, kFootprintMb * (1 + 0.01 * wobble(id))));
    in.host_samples.push_back(host_sample(id, t, 100 + wobble(id)));
  }
}

// A soak of `turns` agent turns (cycling through the bands), each turn's TTFT
// `slow` times its usual from turn `slow_from` on, then the golden set's end
// run: `golden` rows of 5 s each back to back, taking as long as the traffic
// before it when `golden` is large.
JudgeInput soak_with(int turns, int slow_from, double slow, int golden) {
  auto in = input_for(StageKind::Soak);
  in.recipe.baseline_id.reset();
  in.recipe.baseline_mode = BaselineMode::None;
  Rows rows{kCandidate, 1, kT0, kTurnEveryMs};
  for (int i = 0; i < turns; ++i) {
    Perf p = jittered(Perf{.ttft_ms = 5, .wall_ms = 800}, i);
    if (i >= slow_from) p.ttft_ms *= slow, p.wall_ms += p.ttft_ms;
    rows.perf(ProbeKind::Agent, kBands[i % 3], p);
  }
  const int64_t golden_step = golden ? static_cast<int64_t>(turns) * kTurnEveryMs / golden : 0;
  Rows tail{kCandidate, 10'000, rows.now_ms(), golden_step};
  for (int g = 0; g < golden; ++g)
    tail.perf(ProbeKind::Equivalence, "golden/" + std::to_string(g), Perf{.ttft_ms = 5000});
  in.candidate_rows = rows.rows;
  in.candidate_rows.insert(in.candidate_rows.end(), tail.rows.begin(), tail.rows.end());
  add_samples(in, kT0, tail.now_ms());
  return in;
}

// A first build's gate (no baseline) whose own canary (stage 5) ran a fresh
// 8K prefill eight times at 300 ms to its first token.
JudgeInput first_build_gate() {
  auto in = input_for(StageKind::Gate);
  in.recipe.baseline_id.reset();
  in.recipe.baseline_mode = BaselineMode::None;
  in.recipe.gate.min_completed = 1;
  in.recipe.own_stage_ids = {5};
  Rows canary{kCandidate, 1, kT0, kMinuteMs};
  add_perf(canary, 8, Perf{.ttft_ms = 300, .wall_ms = 900}, 1, "long_context/8192/fresh", CacheState::Fresh,
           ProbeKind::LongContext);
  for (auto& r : canary.rows) r.stage_id = 5;
  in.own_rows = canary.rows;
  return in;
}

const MetricEvidence* exact(const VerdictRow& v, const std::string& name) {
  for (const auto& m : v.metrics)
    if (m.metric == name) return &m;
  return nullptr;
}

}  // namespace

TEST_CASE("soak: TTFT 1000x from a third of the way in, golden set the last third, is rejected") {
  // 60 turns, slow from turn 20; the golden set's 32 rows take as long again.
  auto in = soak_with(60, 20, 1000, 32);
  const auto v = judge_stage(in);
  INFO(v.reason);
  CHECK(v.state == VerdictState::Rejected);
  const auto* pooled = exact(v, "ttft_drift/pooled");
  REQUIRE(pooled);
  CHECK(pooled->result == MetricResult::Fail);
  CHECK(pooled->estimate > 100);  // about 1000x worse
  // Where it changed: from about a third of the traffic to its end.
  CHECK(contains(pooled->reason, "the rows split best from"));
  INFO(pooled->reason);
  CHECK(contains(pooled->reason, "to its end"));
  // Each band's own last quarter is slow too.
  const auto* band = find_metric(v, "ttft_drift/agent/10k{");
  REQUIRE(band);
  CHECK(band->result == MetricResult::Fail);
  CHECK(contains(band->reason, "in send order"));
  // The golden set is no drift locator.
  CHECK_FALSE(find_metric(v, "ttft_drift/golden"));
}

TEST_CASE("soak: the same slowdown with a baseline is rejected against the baseline too") {
  auto in = soak_with(60, 20, 1000, 32);
  in.recipe.baseline_id = kBaseline;
  in.recipe.baseline_mode = BaselineMode::History;
  Rows base{kBaseline, 50'000, kT0 - 8 * kDayMs, kTurnEveryMs};
  for (int i = 0; i < 60; ++i) {
    ProbeResult& r = base.perf(ProbeKind::Agent, kBands[i % 3], jittered(Perf{.ttft_ms = 5, .wall_ms = 800}, 500 + i));
    r.stage_id = 3 + i / 20;  // three stored stages, so its own spread is measured
  }
  in.baseline_rows = base.rows;
  const auto v = judge_stage(in);
  INFO(v.reason);
  CHECK(v.state == VerdictState::Rejected);
  const auto* against = exact(v, "ttft_ms/pooled");
  REQUIRE(against);
  CHECK(against->result == MetricResult::Fail);
  CHECK(exact(v, "evidence/ttft_ms")->result == MetricResult::Pass);
}

TEST_CASE("soak: a healthy soak is promoted and names the rules it rests on") {
  auto in = soak_with(60, 60, 1, 32);
  const auto v = judge_stage(in);
  INFO(v.reason);
  CHECK(v.state == VerdictState::Promoted);
  CHECK(contains(v.reason, "decisive rules with their evidence"));
  for (const char* rule : {"evidence/ttft_drift", "evidence/wall_drift", "evidence/decode_drift",
                           "evidence/failure_ratio", "evidence/footprint", "evidence/completion_rate"}) {
    const auto* m = exact(v, rule);
    INFO(rule);
    REQUIRE(m);
    CHECK(m->result == MetricResult::Pass);
    CHECK(m->n >= m->threshold);
  }
  // What a pass can see: the pooled drift's smallest caught drift, never
  // below soak.max_decode_drift.
  const auto* sees = exact(v, "evidence/ttft_drift");
  CHECK(sees->estimate >= in.recipe.soak.max_decode_drift);
  CHECK(contains(sees->reason, "a pass sees a drift of"));
}

TEST_CASE("soak: every drift locator thin is inconclusive, naming the rule, what it had and needed") {
  // Six turns over three bands: each band's quarter is one row, two pooled a
  // side, under judge.min_samples.
  auto in = soak_with(6, 6, 1, 0);
  const auto v = judge_stage(in);
  INFO(v.reason);
  CHECK(v.state == VerdictState::Inconclusive);
  CHECK(contains(v.reason, "evidence short: ttft_drift had 3 rows in the pooled first and last quarters"));
  CHECK(contains(v.reason, "needs 5"));
  const auto* m = exact(v, "evidence/ttft_drift");
  REQUIRE(m);
  CHECK(m->result == MetricResult::Insufficient);
  // The stage may run on for more of the same work: the gaps say which.
  REQUIRE_FALSE(v.awaiting_evidence.empty());
  bool drift = false;
  for (const auto& g : v.awaiting_evidence)
    if (g.rule == "ttft_drift") {
      drift = true;
      CHECK(g.kinds == std::vector<ProbeKind>{ProbeKind::Agent});
    }
  CHECK(drift);
}

TEST_CASE("evidence short but a rule failing: rejected, not inconclusive") {
  auto in = soak_with(6, 6, 1, 0);
  in.candidate_rows[2].outcome = Outcome::NoBody;  // a hung stream
  const auto v = judge_stage(in);
  CHECK(v.state == VerdictState::Rejected);
  CHECK(v.awaiting_evidence.empty());
}

TEST_CASE("a stopped stage short of evidence waits for nothing") {
  auto in = soak_with(6, 6, 1, 0);
  in.recipe.end = StageEnd::Stopped;
  const auto v = judge_stage(in);
  CHECK(v.state == VerdictState::Inconclusive);
  CHECK(v.awaiting_evidence.empty());  // inconclusive for another reason too
}

TEST_CASE("gate: a first build far slower than its own canary is rejected against itself") {
  auto in = first_build_gate();
  Rows gate{kCandidate, 1000, kT0 + kHourMs * 3, kMinuteMs * 10};
  add_perf(gate, 8, Perf{.ttft_ms = 1500, .wall_ms = 2100}, 50, "long_context/8192/fresh", CacheState::Fresh,
           ProbeKind::LongContext);
  add_perf(gate, 20, Perf{}, 100, "agent/10k", CacheState::None, ProbeKind::Agent);
  in.candidate_rows = gate.rows;
  const auto v = judge_stage(in);
  INFO(v.reason);
  CHECK(v.state == VerdictState::Rejected);
  CHECK(contains(v.reason, "self/ttft_ms"));
  CHECK(contains(v.reason, "its own earlier stages"));
  // The same gate with its canary as fast: passes.
  for (auto& r : in.candidate_rows)
    if (r.kind == ProbeKind::LongContext) *r.t_first_token_us /= 5, *r.t_done_us = *r.t_first_token_us + 600'000;
  const auto ok = judge_stage(in);
  INFO(ok.reason);
  CHECK(ok.state == VerdictState::Promoted);
  CHECK(exact(ok, "self/ttft_ms/pooled"));
}

TEST_CASE("self comparison leaves out rows that overlapped the candidate's own other requests") {
  auto in = first_build_gate();
  // Every slow gate prefill shares its time with an agent turn started 1 ms
  // later: its slots were shared, the build is the same.
  Rows gate{kCandidate, 1000, kT0 + kHourMs * 3, 1};
  for (int i = 0; i < 8; ++i) {
    gate.perf(ProbeKind::LongContext, "long_context/8192/fresh", jittered(Perf{.ttft_ms = 1500, .wall_ms = 2100}, i),
              CacheState::Fresh);
    gate.perf(ProbeKind::Agent, "agent/10k", jittered(Perf{}, 100 + i));
    gate.skip(10 * kMinuteMs);
  }
  in.candidate_rows = gate.rows;
  const auto v = judge_stage(in);
  INFO(v.reason);
  CHECK(v.state == VerdictState::Promoted);
  CHECK_FALSE(exact(v, "self/ttft_ms/pooled"));
}

TEST_CASE("canary: locators too thin alone add up in the pooled comparison") {
  auto in = input_for(StageKind::Canary);
  Rows cand{kCandidate, 1, kT0, kMinuteMs}, base{kBaseline, 5000, kT0, kMinuteMs};
  // Ten workloads, three rows a side each (under judge.min_samples alone),
  // every candidate row 40 % slower to its first token.
  for (int w = 0; w < 10; ++w) {
    const std::string name = "stream/" + std::to_string(w);
    add_perf(base, 3, Perf{.ttft_ms = 200.0 + 30 * w}, 10 * w, name);
    add_perf(cand, 3, Perf{.ttft_ms = (200.0 + 30 * w) * 1.4}, 500 + 10 * w, name);
  }
  in.candidate_rows = cand.rows;
  in.baseline_rows = base.rows;
  const auto v = judge_stage(in);
  INFO(v.reason);
  CHECK(v.state == VerdictState::Rejected);
  const auto* one = find_metric(v, "ttft_ms/stream/0{");
  REQUIRE(one);
  CHECK(one->result == MetricResult::Insufficient);
  const auto* pooled = exact(v, "ttft_ms/pooled");
  REQUIRE(pooled);
  CHECK(pooled->result == MetricResult::Fail);
  CHECK(pooled->n == 30);
}

TEST_CASE("pooled: a few milliseconds slower is no regression whatever the ratio") {
  auto in = input_for(StageKind::Canary);
  Rows cand{kCandidate, 1, kT0, kMinuteMs}, base{kBaseline, 5000, kT0, kMinuteMs};
  for (int w = 0; w < 10; ++w) {
    const std::string name = "stream/" + std::to_string(w);
    add_perf(base, 3, Perf{.ttft_ms = 4}, 10 * w, name);
    add_perf(cand, 3, Perf{.ttft_ms = 7}, 500 + 10 * w, name);  // +75 %, 3 ms
  }
  in.candidate_rows = cand.rows;
  in.baseline_rows = base.rows;
  const auto v = judge_stage(in);
  const auto* pooled = exact(v, "ttft_ms/pooled");
  REQUIRE(pooled);
  CHECK(pooled->result == MetricResult::Pass);
  CHECK(contains(pooled->reason, "under the absolute floor"));
}

TEST_CASE("a golden-set comparison with most prompts missing on one side is not equivalent: it is short") {
  auto in = input_for(StageKind::Canary);
  in.recipe.equivalence = EquivalenceRecipe{};
  in.recipe.equivalence->reference_id = kBaseline;
  Rows cand{kCandidate, 1, kT0, kMinuteMs}, base{kBaseline, 5000, kT0, kMinuteMs};
  add_perf(cand, 20, Perf{}, 1);
  add_perf(base, 20, Perf{}, 100);
  in.candidate_rows = cand.rows;
  in.baseline_rows = base.rows;
  auto answer = [](int64_t id, int64_t candidate, std::optional<int64_t> stage, const std::string& run, int prompt) {
    GoldenAnswerRow a;
    a.id = id;
    a.candidate_id = candidate;
    a.stage_id = stage;
    a.wall_ms = kT0 + id;
    a.run = run;
    a.set_hash = "set1";
    a.prompt_id = "p" + std::to_string(prompt);
    a.text_hash = "same";
    return a;
  };
  int64_t id = 1;
  for (int p = 0; p < 32; ++p) in.golden.push_back(answer(id++, kCandidate, 7, "r1", p));
  for (int p = 0; p < 8; ++p) in.reference_golden.push_back(answer(id++, kBaseline, 2, "r0", p));
  const auto v = judge_stage(in);
  INFO(v.reason);
  CHECK(v.state == VerdictState::Inconclusive);
  CHECK(contains(v.reason, "evidence short: equivalence had 8 prompts answered on both sides of 32, needs 24"));
}

TEST_CASE("change span: a step a third of the way in is found with its length") {
  auto in = soak_with(90, 30, 50, 0);
  const auto v = judge_stage(in);
  const auto* pooled = exact(v, "ttft_drift/pooled");
  REQUIRE(pooled);
  // Rows 30..89 of 90, ten minutes apart: from 5h into the stage to its end, 9h50m.
  CHECK(contains(pooled->reason, "from 5h into the stage to its end (9h50m, 60 rows)"));
}

TEST_CASE("a running soak's progress names each countable decisive rule with what it has and needs") {
  auto thin = evidence_progress(soak_with(6, 6, 1, 0));
  auto rule = [](const std::vector<EvidenceProgress>& ps, const std::string& name) -> const EvidenceProgress* {
    for (const auto& p : ps)
      if (p.rule == name) return &p;
    return nullptr;
  };
  const auto* drift = rule(thin, "ttft_drift");
  REQUIRE(drift);
  CHECK(drift->had == 3);
  CHECK(drift->needed == 5);
  CHECK(drift->fraction() == Approx(0.6));
  REQUIRE(rule(thin, "failure_ratio"));
  CHECK(rule(thin, "failure_ratio")->had == 6);
  // The same rules as the stage's judgment states (evidence/<rule> rows).
  const auto v = judge_stage(soak_with(6, 6, 1, 0));
  for (const auto& p : thin) {
    INFO(p.rule);
    const auto* m = exact(v, "evidence/" + p.rule);
    REQUIRE(m);
    CHECK(m->n == p.had);
  }
  auto full = evidence_progress(soak_with(60, 60, 1, 0));
  for (const auto& p : full) CHECK(p.had >= p.needed);
}

TEST_CASE("an error rate a fraction of a point higher is no regression, however many rows show it") {
  auto in = input_for(StageKind::Canary);
  Rows cand{kCandidate, 1, kT0, 1000}, base{kBaseline, 100'000, kT0, 1000};
  // 20,000 rows a side: 1.6 % failing against 1.0 %, significant (p < 0.01) and 0.6 points higher.
  for (int i = 0; i < 20'000; ++i) {
    cand.perf(ProbeKind::Stream, "stream/1k", Perf{}).outcome = i % 1000 < 16 ? Outcome::Http5xx : Outcome::Clean;
    base.perf(ProbeKind::Stream, "stream/1k", Perf{}).outcome = i % 100 == 0 ? Outcome::Http5xx : Outcome::Clean;
  }
  in.candidate_rows = cand.rows;
  in.baseline_rows = base.rows;
  const auto v = judge_stage(in);
  const auto* rate = find_metric(v, "error_rate/stream/1k{");
  REQUIRE(rate);
  INFO(rate->reason);
  CHECK(rate->p_value < 0.01);
  CHECK(rate->result == MetricResult::Pass);
  CHECK(contains(rate->reason, "points higher"));
  // Three points higher is felt.
  for (size_t i = 0; i < in.candidate_rows.size(); ++i)
    in.candidate_rows[i].outcome = i % 100 < 4 ? Outcome::Http5xx : Outcome::Clean;
  const auto worse = judge_stage(in);
  CHECK(find_metric(worse, "error_rate/stream/1k{")->result == MetricResult::Fail);
}
