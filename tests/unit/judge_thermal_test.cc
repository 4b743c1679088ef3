// Thermal pressure in the judge (judges/thermal.cc): timed rows measured above
// nominal are left out of the candidate/baseline comparison on both sides,
// and a stage hot for more than a quarter of its timed rows is inconclusive.
#include "judges/judge.h"
#include "tests/catch.h"
#include "tests/unit/judge_rows.h"

using namespace soak;
using namespace soak::testing;

namespace {

constexpr int kN = 40;
constexpr int64_t kSampleEveryMs = 5'000;  // Rows start every 10 s: two samples per row

// A canary whose first `hot` candidate rows ran with a doubled TTFT, and host
// samples every 5 s; `heat` marks the sample in effect at those rows' start
// (and the baseline rows beside them) as heavy thermal pressure.
struct HotCanary {
  Rows cand{kCandidate, 1};
  Rows base{kBaseline, 100'000};
  std::vector<HostSample> samples;

  explicit HotCanary(int hot, bool heat) {
    for (int i = 0; i < kN; ++i) {
      Perf p = jittered(Perf{}, 1 + i);
      if (i < hot) p.ttft_ms *= 2;  // what a throttled host does to a prefill
      cand.perf(ProbeKind::Stream, "stream/1k", p);
      base.perf(ProbeKind::Stream, "stream/1k", jittered(Perf{}, 5000 + i));
    }
    for (int k = 0; k < 2 * kN; ++k) {
      HostSample s = host_sample(k + 1, kT0 + k * kSampleEveryMs, 0);
      const bool hot_row_start = k % 2 == 0 && k / 2 < hot;
      s.thermal_level = static_cast<int>(heat && hot_row_start ? ThermalLevel::Heavy : ThermalLevel::Nominal);
      samples.push_back(s);
    }
  }

  VerdictRow judge() const {
    JudgeInput in = input_for(StageKind::Canary);
    in.candidate_rows = cand.rows;
    in.baseline_rows = base.rows;
    in.host_samples = samples;
    return judge_stage(in);
  }
};

}  // namespace

TEST_CASE("thermal: the same slow rows hold a cool canary and are left out of a hot one") {
  // Nine slow rows on a host that read nominal throughout: a tail regression a person decides on.
  const VerdictRow cool = HotCanary(9, false).judge();
  INFO(cool.reason);
  CHECK(cool.state == VerdictState::Hold);
  CHECK(contains(cool.reason, "ttft_ms.p95 stream/1k +97.6% worse than baseline"));
  const auto* cool_tail = find_metric(cool, "ttft_ms.p95/stream/1k{");
  REQUIRE(cool_tail);
  CHECK(cool_tail->result == MetricResult::Marginal);
  CHECK(cool_tail->n == kN);

  // The same nine measured under heavy thermal pressure: out of the comparison,
  // with the baseline rows measured beside them.
  const VerdictRow hot = HotCanary(9, true).judge();
  INFO(hot.reason);
  CHECK(hot.state == VerdictState::Promoted);
  const auto* ttft = find_metric(hot, "ttft_ms/stream/1k{");
  REQUIRE(ttft);
  CHECK(ttft->n == kN - 9);
  CHECK(ttft->n_baseline == kN - 9);
  CHECK(ttft->result == MetricResult::Pass);
  const auto* thermal = find_metric(hot, "thermal");
  REQUIRE(thermal);
  CHECK(thermal->result == MetricResult::Pass);
  CHECK(thermal->n == kN);
  CHECK(thermal->estimate == Approx(9.0 / kN));
  CHECK(contains(thermal->reason, "9 of 40 timed row(s) measured above nominal thermal pressure (1, 2, 3"));
  CHECK(contains(thermal->reason, "up to heavy"));
  CHECK(contains(thermal->reason, "9 baseline row(s)"));
}

TEST_CASE("thermal: hot for more than a quarter of its timed rows, a canary is inconclusive and says why") {
  const VerdictRow v = HotCanary(11, true).judge();
  INFO(v.reason);
  CHECK(v.state == VerdictState::Inconclusive);
  CHECK(contains(v.reason, "thermal pressure above nominal during 27.5% of the canary's timed rows (11 of 40"));
  const auto* thermal = find_metric(v, "thermal");
  REQUIRE(thermal);
  CHECK(thermal->result == MetricResult::Insufficient);
  // Exactly a quarter is still judged.
  CHECK(HotCanary(10, true).judge().state == VerdictState::Promoted);
}

TEST_CASE("thermal: samples without a level change nothing and add no metric") {
  HotCanary c(9, false);
  for (auto& s : c.samples) s.thermal_level.reset();  // Linux without zones, a store before schema 6
  const VerdictRow v = c.judge();
  CHECK(v.state == VerdictState::Hold);  // the slow rows are compared, as before the rule
  CHECK_FALSE(find_metric(v, "thermal"));
}

TEST_CASE("thermal: a sample taken while a row ran makes it hot; one on another host does not") {
  HotCanary c(0, false);
  // Row 5 starts at kT0 + 50 s and runs ~2 s; a heavy sample at +51 s falls inside it.
  HostSample inside = host_sample(1000, kT0 + 51'000, 0);
  inside.thermal_level = static_cast<int>(ThermalLevel::Moderate);
  c.samples.push_back(inside);
  HostSample elsewhere = host_sample(1001, kT0 + 101'000, 0);
  elsewhere.host_id = kHost + 1;
  elsewhere.thermal_level = static_cast<int>(ThermalLevel::Trapping);
  c.samples.push_back(elsewhere);
  const VerdictRow v = c.judge();
  const auto* thermal = find_metric(v, "thermal");
  REQUIRE(thermal);
  CHECK(contains(thermal->reason, "1 of 40 timed row(s)"));
  CHECK(contains(thermal->reason, "(6; up to moderate)"));
}

TEST_CASE("thermal: a history baseline's rows are judged by the samples of their own window") {
  // The baseline ran a day earlier; nine of its rows started under heavy
  // pressure then. The stage's own samples (all nominal, a day later) say
  // nothing of them: its window's samples leave them out.
  HotCanary h(0, false);
  constexpr int64_t kDayMs = 24 * 3'600'000LL;
  for (auto& r : h.base.rows) r.started_wall_ms -= kDayMs;
  std::vector<HostSample> then;
  for (int k = 0; k < 2 * kN; ++k) {
    HostSample s = host_sample(1000 + k, kT0 - kDayMs + k * kSampleEveryMs, 0);
    s.thermal_level = static_cast<int>(k % 2 == 0 && k / 2 < 9 ? ThermalLevel::Heavy : ThermalLevel::Nominal);
    then.push_back(s);
  }
  JudgeInput in = input_for(StageKind::Canary);
  in.recipe.baseline_mode = BaselineMode::History;
  in.candidate_rows = h.cand.rows;
  in.baseline_rows = h.base.rows;
  in.host_samples = h.samples;
  const VerdictRow first = judge_stage(in);
  const auto* kept = find_metric(first, "ttft_ms/stream/1k{");
  REQUIRE(kept);
  CHECK(kept->n_baseline == kN);

  in.baseline_host_samples = then;
  const VerdictRow v = judge_stage(in);
  INFO(v.reason);
  const auto* ttft = find_metric(v, "ttft_ms/stream/1k{");
  REQUIRE(ttft);
  CHECK(ttft->n == kN);
  CHECK(ttft->n_baseline == kN - 9);
  const auto* thermal = find_metric(v, "thermal");
  REQUIRE(thermal);
  CHECK(contains(thermal->reason, "0 of 40 timed row(s)"));
  CHECK(contains(thermal->reason, "9 baseline row(s)"));
}

TEST_CASE("thermal: a burst with a member measured hot is left out of the throughput comparison") {
  // A throttled Mac serves a burst at a fraction of its rate: that burst's
  // requests/s must not reject the build, as its members' TTFT does not.
  constexpr int kBursts = 8, kHotBursts = 2, kMembers = 4;
  Rows cand{kCandidate, 1};
  Rows base{kBaseline, 100'000};
  std::vector<HostSample> samples;
  for (int b = 0; b < kBursts; ++b) {
    const bool hot = b < kHotBursts;
    for (Rows* side : {&cand, &base}) {
      for (int m = 0; m < kMembers; ++m) {
        const ProbeResult& r = side->perf(ProbeKind::Burst, "burst/4", jittered(Perf{}, b * 10 + m));
        if (side == &cand) {
          HostSample s = host_sample(static_cast<int64_t>(samples.size()) + 1, r.started_wall_ms, 0);
          s.thermal_level = static_cast<int>(hot ? ThermalLevel::Heavy : ThermalLevel::Nominal);
          samples.push_back(s);
        }
      }
      ProbeResult& summary = side->add(ProbeKind::Burst, "burst/4/summary");
      const double rps = side == &cand && hot ? 0.5 : 2.0 + 0.01 * b;
      summary.extra_json = R"({"n":4,"clean":4,"rps":)" + std::to_string(rps) + "}";
    }
  }
  JudgeInput in = input_for(StageKind::Canary);
  in.candidate_rows = cand.rows;
  in.baseline_rows = base.rows;
  in.host_samples = samples;
  const VerdictRow v = judge_stage(in);
  INFO(v.reason);
  const auto* rps = find_metric(v, "rps/burst/4/summary");
  REQUIRE(rps);
  CHECK(rps->n == kBursts - kHotBursts);
  CHECK(rps->n_baseline == kBursts - kHotBursts);                  // its bursts beside them were measured hot too
  CHECK(rps->estimate == Approx(2.0 + 0.01 * 4.5).margin(0.006));  // the cool bursts' median
  CHECK(rps->result == MetricResult::Pass);
}

TEST_CASE("thermal: the last sample before the window is the level its first rows started at") {
  // A host already hot when the stage began: no sample was stored at a change,
  // and the window's first sample comes after its first row started.
  HotCanary c(0, false);
  std::erase_if(c.samples, [](const HostSample& s) { return s.wall_ms < kT0 + 10'000; });
  JudgeInput in = input_for(StageKind::Canary);
  in.candidate_rows = c.cand.rows;
  in.baseline_rows = c.base.rows;
  in.host_samples = c.samples;
  VerdictRow v = judge_stage(in);
  const auto* thermal = find_metric(v, "thermal");
  REQUIRE(thermal);
  CHECK(contains(thermal->reason, "0 of 40 timed row(s)"));  // nothing said the first rows were hot

  HostSample before = host_sample(999, kT0 - 30'000, 0);
  before.thermal_level = static_cast<int>(ThermalLevel::Heavy);
  in.host_sample_before = before;
  v = judge_stage(in);
  thermal = find_metric(v, "thermal");
  REQUIRE(thermal);
  INFO(thermal->reason);
  CHECK(contains(thermal->reason, "1 of 40 timed row(s) measured above nominal thermal pressure (1; up to heavy)"));
  CHECK(contains(thermal->reason, "1 baseline row(s)"));  // the baseline's row beside it
}
