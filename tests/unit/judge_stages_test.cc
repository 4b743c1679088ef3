// Comparisons in every stage (docs/DESIGN.md §3.5): long-context sizes on few
// samples in the canary and pooled rounds in the gate, a history baseline's own
// stage-to-stage spread, the soak's drift of decode, TTFT and wall time, and a
// footprint that fills a cache and holds (§3.6). Virtual time only: every row
// carries its own wall time.
#include <algorithm>
#include <string>

#include "judges/judge.h"
#include "tests/catch.h"
#include "tests/unit/judge_rows.h"

using namespace soak;
using namespace soak::testing;

namespace {

constexpr int64_t k32K = 32768;
constexpr const char* kFresh32K = "long_context/32768/fresh";
constexpr const char* kAgentBand = "agent/20000/shared_prefix/no_thinking";

// A fresh 32K prefill: ~40 s to the first token at the baseline's speed.
Perf prefill(double slower = 1) {
  return Perf{.ttft_ms = 40'000 * slower, .wall_ms = 60'000 * slower, .decode_tps = 40, .prompt_tps = 800 / slower};
}

void add_long_context(Rows& rows, int n, const Perf& p, int64_t seed, int64_t stage_id) {
  for (int i = 0; i < n; ++i) {
    ProbeResult& r = rows.perf(ProbeKind::LongContext, kFresh32K, jittered(p, seed + i), CacheState::Fresh);
    r.size_tokens = k32K;
    r.prompt_tokens = k32K;
    r.stage_id = stage_id;
  }
}

void add_agent(Rows& rows, int n, const Perf& p, int64_t seed, int64_t stage_id) {
  for (int i = 0; i < n; ++i) {
    ProbeResult& r = rows.perf(ProbeKind::Agent, kAgentBand, jittered(p, seed + i), CacheState::SharedPrefix);
    r.size_tokens = 20'000;
    r.stage_id = stage_id;
  }
}

// A gate whose agent traffic is healthy and whose six long-context rounds
// (every 4 h over 24 h) ran `slower` times the baseline's prefill; the baseline
// ran its own gate and soak earlier (history).
JudgeInput gate_with_prefill(double slower) {
  auto in = input_for(StageKind::Gate);
  in.recipe.baseline_mode = BaselineMode::History;
  in.recipe.gate.min_completed = 30;
  Rows base{kBaseline, 1, kT0, kHourMs};
  add_long_context(base, 6, prefill(), 100, 3);  // its gate
  add_long_context(base, 8, prefill(), 200, 4);  // its soak
  add_agent(base, 40, Perf{}, 300, 3);
  in.baseline_rows = base.rows;
  Rows cand{kCandidate, 1000, kT0 + 20 * kDayMs, 10 * kMinuteMs};
  add_agent(cand, 40, Perf{}, 400, 7);
  add_long_context(cand, 6, prefill(slower), 500, 7);
  in.candidate_rows = cand.rows;
  return in;
}

}  // namespace

TEST_CASE("gate: a fresh 32K prefill twice as slow as the baseline's is rejected by the gate") {
  auto v = judge_stage(gate_with_prefill(2));
  INFO(v.reason);
  CHECK(v.state == VerdictState::Rejected);
  const auto* ttft = find_metric(v, std::string("ttft_ms/") + kFresh32K + "{");
  REQUIRE(ttft);
  CHECK(ttft->result == MetricResult::Fail);
  CHECK(ttft->n == 6);
  CHECK(ttft->n_baseline == 14);
  CHECK(ttft->estimate == Approx(80'000).epsilon(0.06));
  CHECK(contains(ttft->reason, "floor from"));
  CHECK(contains(v.reason, "ttft_ms long_context/32768/fresh"));
  CHECK(find_metric(v, std::string("prompt_tps/") + kFresh32K + "{")->result == MetricResult::Fail);
  // The agent turns were compared per band and held.
  const auto* agent = find_metric(v, std::string("ttft_ms/") + kAgentBand + "{");
  REQUIRE(agent);
  CHECK(agent->result == MetricResult::Pass);
}

TEST_CASE("gate: the same prefill speed as the baseline passes its comparisons") {
  auto v = judge_stage(gate_with_prefill(1));
  INFO(v.reason);
  CHECK(v.state == VerdictState::Promoted);
  CHECK(find_metric(v, std::string("ttft_ms/") + kFresh32K + "{")->result == MetricResult::Pass);
  const auto* b = find_metric(v, "baseline");
  REQUIRE(b);
  CHECK(b->result == MetricResult::Pass);
}

TEST_CASE("gate: a baseline without rows is noted; the gate stands on its own rules") {
  auto in = gate_with_prefill(2);
  in.baseline_rows.clear();
  auto v = judge_stage(in);
  INFO(v.reason);
  CHECK(v.state == VerdictState::Promoted);
  CHECK(find_metric(v, "baseline")->result == MetricResult::Insufficient);
  CHECK_FALSE(find_metric(v, std::string("ttft_ms/") + kFresh32K + "{"));
}

namespace {

// A canary's two long-context rounds at 32K on each side (hourly over 2 h),
// beside enough stream rows for the canary to compare something.
JudgeInput canary_with_prefill(double slower) {
  auto in = input_for(StageKind::Canary);
  Rows base{kBaseline};
  add_perf(base, 10, Perf{}, 1);
  add_long_context(base, 2, prefill(), 100, 3);
  in.baseline_rows = base.rows;
  Rows cand{kCandidate, 1000};
  add_perf(cand, 10, Perf{}, 50);
  add_long_context(cand, 2, prefill(slower), 500, 7);
  in.candidate_rows = cand.rows;
  return in;
}

}  // namespace

TEST_CASE("canary: a fresh prefill 10x slower is rejected on two samples a side by the few-sample rule") {
  auto v = judge_stage(canary_with_prefill(10));
  INFO(v.reason);
  CHECK(v.state == VerdictState::Rejected);
  const auto* ttft = find_metric(v, std::string("ttft_ms/") + kFresh32K + "{");
  REQUIRE(ttft);
  CHECK(ttft->result == MetricResult::Fail);
  CHECK(ttft->n == 2);
  CHECK(ttft->n_baseline == 2);
  CHECK(ttft->threshold == 3);
  CHECK(ttft->lo > 8);  // the candidate's best over the baseline's worst
  CHECK(contains(ttft->reason, "judge.few_sample_factor"));
  CHECK(contains(v.reason, "on every sample"));
}

TEST_CASE("canary: a prefill twice as slow is left to the gate's rounds, not rejected on two samples") {
  auto v = judge_stage(canary_with_prefill(2));
  INFO(v.reason);
  CHECK(v.state == VerdictState::Promoted);
  const auto* ttft = find_metric(v, std::string("ttft_ms/") + kFresh32K + "{");
  REQUIRE(ttft);
  CHECK(ttft->result == MetricResult::Insufficient);
  CHECK(ttft->lo == Approx(2).epsilon(0.15));
  CHECK(contains(ttft->reason, "few-sample rule"));
}

TEST_CASE("canary: the few-sample rule needs every sample beyond the factor, not the median") {
  auto in = canary_with_prefill(10);
  // One candidate round as fast as the baseline: the rule does not fire.
  for (auto& r : in.candidate_rows)
    if (r.kind == ProbeKind::LongContext) {
      r.t_first_token_us = 40'000'000;
      r.server_prompt_tps = 800;
      r.t_done_us = 60'000'000;
      break;
    }
  auto v = judge_stage(in);
  INFO(v.reason);
  CHECK(find_metric(v, std::string("ttft_ms/") + kFresh32K + "{")->result == MetricResult::Insufficient);
  CHECK(v.state == VerdictState::Promoted);
}

namespace {

// A history baseline over three stored stages whose TTFT medians were 200,
// 224 and 250 ms: a 25 % spread between its own sessions.
JudgeInput history_with_candidate(double candidate_ttft_ms, BaselineMode mode = BaselineMode::History) {
  auto in = input_for(StageKind::Canary);
  in.recipe.baseline_mode = mode;
  Rows base{kBaseline};
  int64_t stage = 3;
  for (double ttft : {200.0, 224.0, 250.0}) {
    const size_t from = base.rows.size();
    add_perf(base, 20, Perf{.ttft_ms = ttft}, 40 * stage);
    for (size_t i = from; i < base.rows.size(); ++i) base.rows[i].stage_id = stage;
    ++stage;
  }
  in.baseline_rows = base.rows;
  Rows cand{kCandidate, 1000};
  add_perf(cand, 20, Perf{.ttft_ms = candidate_ttft_ms}, 900);
  for (auto& r : cand.rows) r.stage_id = 7;
  in.candidate_rows = cand.rows;
  return in;
}

}  // namespace

TEST_CASE("history: a change inside the baseline's own stage-to-stage spread passes") {
  // +20 % on the pooled baseline median (224 ms): past 10 % + 5 %, inside the 25 % spread.
  auto v = judge_stage(history_with_candidate(269));
  INFO(v.reason);
  const auto* ttft = find_metric(v, "ttft_ms/stream/1k{");
  REQUIRE(ttft);
  INFO(ttft->reason);
  CHECK(ttft->result == MetricResult::Pass);
  CHECK(ttft->threshold > 0.2);  // medians 200 and 250 ms, each with its own noise
  CHECK(ttft->threshold < 0.3);
  CHECK(contains(ttft->reason, "the baseline's own stage-to-stage spread"));
  CHECK(contains(ttft->reason, "3 stored stages"));
  CHECK(v.state == VerdictState::Promoted);
}

TEST_CASE("history: a change beyond the baseline's spread fails, naming the threshold used") {
  auto v = judge_stage(history_with_candidate(340));  // +52 %
  INFO(v.reason);
  CHECK(v.state == VerdictState::Rejected);
  const auto* ttft = find_metric(v, "ttft_ms/stream/1k{");
  CHECK(ttft->result == MetricResult::Fail);
  CHECK(contains(v.reason, "from the baseline's stage-to-stage spread"));
}

TEST_CASE("history: the spread applies to history only; an interleaved baseline keeps the effect floor") {
  auto v = judge_stage(history_with_candidate(269, BaselineMode::Interleaved));
  INFO(v.reason);
  const auto* ttft = find_metric(v, "ttft_ms/stream/1k{");
  CHECK(ttft->result == MetricResult::Fail);
  CHECK(ttft->threshold == Approx(0.10));
  CHECK(contains(ttft->reason, "floor from judge.effect_floor"));
}

TEST_CASE("history: a baseline with one stored stage keeps the effect floor and says why") {
  auto in = history_with_candidate(269);
  for (auto& r : in.baseline_rows) r.stage_id = 3;
  auto v = judge_stage(in);
  const auto* ttft = find_metric(v, "ttft_ms/stream/1k{");
  CHECK(ttft->threshold == Approx(0.10));
  CHECK(contains(ttft->reason, "too few to measure its own spread"));
}

namespace {

constexpr int64_t kWeekMs = 7 * kDayMs;
constexpr double kFootprintMb = 20'000;

// A soak week: a turn every 10 minutes with the figures `at` gives for its
// time, the footprint `mb` gives per minute.
template <class PerfAt, class MbAt>
JudgeInput soak_week(PerfAt at, MbAt mb) {
  auto in = input_for(StageKind::Soak);
  in.recipe.baseline_id.reset();  // a first build: trends only
  in.recipe.baseline_mode = BaselineMode::None;
  Rows rows{kCandidate, 1, kT0, 10 * kMinuteMs};
  for (int64_t t = 0; t < kWeekMs; t += 10 * kMinuteMs) at(rows, t);
  in.candidate_rows = rows.rows;
  int64_t id = 1;
  for (int64_t t = 0; t < kWeekMs; t += kMinuteMs, ++id) {
    in.process_samples.push_back(process_sample(id, kT0 + t, mb(t) * (1 + 0.01 * wobble(id))));
    in.host_samples.push_back(host_sample(id, kT0 + t, 100 + wobble(id)));
  }
  return in;
}

double flat_mb(int64_t) { return kFootprintMb; }

void steady_turn(Rows& rows, int64_t t) {
  rows.perf(ProbeKind::Agent, kAgentBand, jittered(Perf{}, t / (10 * kMinuteMs)), CacheState::SharedPrefix);
}

// Flat until `from_ms`, then fills `fill_mb` evenly until `to_ms`, then holds.
auto fills(double fill_mb, int64_t from_ms, int64_t to_ms) {
  return [=](int64_t t) {
    const int64_t into = std::clamp<int64_t>(t - from_ms, 0, to_ms - from_ms);
    return kFootprintMb + fill_mb * static_cast<double>(into) / static_cast<double>(to_ms - from_ms);
  };
}

}  // namespace

TEST_CASE("soak: decode speed halving during the soak is rejected in the soak") {
  auto v = judge_stage(soak_week(
      [](Rows& rows, int64_t t) {
        Perf p;
        if (t > 4 * kDayMs) p.decode_tps = 25;
        rows.perf(ProbeKind::Agent, kAgentBand, jittered(p, t / (10 * kMinuteMs)), CacheState::SharedPrefix);
      },
      flat_mb));
  INFO(v.reason);
  CHECK(v.state == VerdictState::Rejected);
  const auto* d = find_metric(v, std::string("decode_drift/") + kAgentBand + "{");
  REQUIRE(d);
  CHECK(d->result == MetricResult::Fail);
  CHECK(d->estimate == Approx(25).epsilon(0.06));
  CHECK(contains(v.reason, "decode rate drifted down"));
}

TEST_CASE("soak: answers arriving in one chunk still have their TTFT and wall time drift judged") {
  // Ollama sends a tool call whole: every row is a timing artifact for rates.
  auto turn = [](double slower) {
    return [slower](Rows& rows, int64_t t) {
      Perf p{.ttft_ms = 900, .wall_ms = 1000};
      if (t > 4 * kDayMs) p.ttft_ms *= slower, p.wall_ms *= slower;
      ProbeResult& r =
          rows.perf(ProbeKind::Agent, kAgentBand, jittered(p, t / (10 * kMinuteMs)), CacheState::SharedPrefix);
      r.timing_artifact = true;
    };
  };
  auto slow = judge_stage(soak_week(turn(1.6), flat_mb));
  INFO(slow.reason);
  CHECK(slow.state == VerdictState::Rejected);
  CHECK_FALSE(find_metric(slow, "decode_drift/"));  // no rate to judge
  CHECK(find_metric(slow, std::string("ttft_drift/") + kAgentBand + "{")->result == MetricResult::Fail);
  CHECK(find_metric(slow, std::string("wall_drift/") + kAgentBand + "{")->result == MetricResult::Fail);
  CHECK(contains(slow.reason, "time to first token drifted up"));

  auto steady = judge_stage(soak_week(turn(1), flat_mb));
  INFO(steady.reason);
  CHECK(steady.state == VerdictState::Promoted);
  CHECK(find_metric(steady, std::string("ttft_drift/") + kAgentBand + "{")->result == MetricResult::Pass);
}

TEST_CASE("soak: a footprint that fills the prompt cache and holds is promoted; a steady one is rejected") {
  // 6 GB from the first day to the third, then flat: under llama-server's 8192 MiB cap.
  auto fill = soak_week(steady_turn, fills(6'000, kDayMs, 3 * kDayMs));
  fill.recipe.cache_cap_mib = 8192;
  auto held = judge_stage(fill);
  INFO(held.reason);
  CHECK(held.state == VerdictState::Promoted);
  const auto* growth = find_metric(held, "footprint_growth");
  REQUIRE(growth);
  INFO(growth->reason);
  CHECK(growth->result == MetricResult::Pass);
  CHECK(growth->lo > 0.25);  // it did grow 30 %
  CHECK(contains(growth->reason, "plateau, not a leak"));
  CHECK(contains(growth->reason, "under the runtime's prompt-cache cap 8192 MiB"));

  // The same 6 GB spread over the whole week: still growing in its last third.
  auto steady_in = soak_week(steady_turn, fills(6'000, 0, kWeekMs));
  steady_in.recipe.cache_cap_mib = 8192;
  auto steady = judge_stage(steady_in);
  INFO(steady.reason);
  CHECK(steady.state == VerdictState::Rejected);
  CHECK(find_metric(steady, "footprint_growth")->result == MetricResult::Fail);
  CHECK(contains(steady.reason, "sustained growth"));
  CHECK(contains(steady.reason, "persists"));
}

TEST_CASE("soak: growth that held past the cache cap fails however flat it is now") {
  // 12 GB from the first day to the third, then flat: past 8192 MiB (8590 MB)
  // plus the 10 % allowance (2000 MB).
  auto in = soak_week(steady_turn, fills(12'000, kDayMs, 3 * kDayMs));
  in.recipe.cache_cap_mib = 8192;
  auto v = judge_stage(in);
  INFO(v.reason);
  CHECK(v.state == VerdictState::Rejected);
  const auto* growth = find_metric(v, "footprint_growth");
  CHECK(growth->result == MetricResult::Fail);
  CHECK(contains(growth->reason, "past the runtime's prompt-cache cap 8192 MiB"));

  // With no cap known the same plateau is not a leak.
  in.recipe.cache_cap_mib.reset();
  auto uncapped = judge_stage(in);
  INFO(uncapped.reason);
  CHECK(uncapped.state == VerdictState::Promoted);
  CHECK(contains(find_metric(uncapped, "footprint_growth")->reason, "no cache cap known"));
}

TEST_CASE("soak: a fast fill that rises above the slope bound and then holds is not a leak by its slope") {
  // 8 GB on the second day (333 MB/h), then flat, cap 8192 MiB.
  auto in = soak_week(steady_turn, fills(8'000, kDayMs, 2 * kDayMs));
  in.recipe.cache_cap_mib = 8192;
  auto v = judge_stage(in);
  INFO(v.reason);
  const auto* slope = find_metric(v, "footprint_slope_mb_per_h");
  REQUIRE(slope);
  INFO(slope->reason);
  CHECK(slope->result == MetricResult::Pass);
  CHECK(contains(slope->reason, "last third on its own"));
  CHECK(v.state == VerdictState::Promoted);
}

TEST_CASE("soak: a cache filled early in the soak and held through the rest is a plateau, not a leak") {
  // 6 GB in two hours early on the first day, then flat for six days: most
  // pairs of blocks lie in the flat part, so the whole stage's Theil-Sen
  // slope is 0 though the footprint grew 30 %. Seen through soakd against the
  // fake runtime: a cache that filled in the soak's first seconds and held
  // was rejected as "sustained growth", its persistence read off a 0 slope.
  const auto step = fills(6'000, 20 * kHourMs, 22 * kHourMs);
  auto in = soak_week(steady_turn, step);
  in.recipe.cache_cap_mib = 8192;
  // A resident size that holds to the byte once the cache is full, as the
  // fake's did: no wobble to tip the persistence test either way.
  for (auto& p : in.process_samples) p.footprint_bytes = static_cast<int64_t>(step(p.wall_ms - kT0) * 1e6);
  auto v = judge_stage(in);
  INFO(v.reason);
  const auto* slope = find_metric(v, "footprint_slope_mb_per_h");
  REQUIRE(slope);
  CHECK(slope->estimate == Approx(0).margin(1));
  const auto* growth = find_metric(v, "footprint_growth");
  REQUIRE(growth);
  INFO(growth->reason);
  CHECK(growth->result == MetricResult::Pass);
  CHECK(growth->lo > 0.25);
  CHECK(contains(growth->reason, "plateau, not a leak"));
  CHECK(v.state == VerdictState::Promoted);

  // The same step in the stage's last third is growth that persists.
  const auto late_step = fills(6'000, 140 * kHourMs, 142 * kHourMs);
  auto late = soak_week(steady_turn, late_step);
  late.recipe.cache_cap_mib = 8192;
  for (auto& p : late.process_samples) p.footprint_bytes = static_cast<int64_t>(late_step(p.wall_ms - kT0) * 1e6);
  auto lv = judge_stage(late);
  INFO(lv.reason);
  CHECK(lv.state == VerdictState::Rejected);
  CHECK(find_metric(lv, "footprint_growth")->result == MetricResult::Fail);
}
