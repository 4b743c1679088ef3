// Soak trends over a simulated week: footprint leak (Theil–Sen and sustained
// growth), spikes, swap growth, decode drift, completion rate.
#include <algorithm>
#include <cmath>
#include <functional>

#include "judges/judge.h"
#include "storage/sqlite_store.h"
#include "tests/catch.h"
#include "tests/unit/judge_rows.h"

using namespace soak;
using namespace soak::testing;

namespace {

constexpr int64_t kWeekMs = 7 * kDayMs;
constexpr int64_t kSampleEveryMs = kMinuteMs;        // 10,080 samples a week
constexpr int64_t kTrafficEveryMs = 10 * kMinuteMs;  // 1,008 requests a week
constexpr double kFootprintMb = 20'000;

using Footprint = std::function<double(int64_t elapsed_ms, int64_t i)>;
using Decode = std::function<double(int64_t elapsed_ms)>;

// Footprint flat around 20 GB with +-1% noise.
double flat(int64_t, int64_t i) { return kFootprintMb * (1 + 0.01 * wobble(i)); }
double steady_decode(int64_t) { return 50; }

JudgeInput week(const Footprint& footprint = flat, const Decode& decode = steady_decode) {
  auto in = input_for(StageKind::Soak);
  Rows rows{kCandidate, 1, kT0, kTrafficEveryMs};
  for (int64_t t = 0; t < kWeekMs; t += kTrafficEveryMs)
    rows.perf(ProbeKind::Agent, "agent/7k", jittered(Perf{.decode_tps = decode(t)}, t / kTrafficEveryMs));
  in.candidate_rows = rows.rows;
  int64_t id = 1;
  for (int64_t t = 0; t < kWeekMs; t += kSampleEveryMs, ++id) {
    in.process_samples.push_back(process_sample(id, kT0 + t, footprint(t, id)));
    in.host_samples.push_back(host_sample(id, kT0 + t, 100 + wobble(id)));
  }
  return in;
}

}  // namespace

TEST_CASE("soak: a quiet week is promoted with every trend listed") {
  auto v = judge_stage(week());
  INFO(v.reason);
  CHECK(v.state == VerdictState::Promoted);
  const auto* slope = find_metric(v, "footprint_slope_mb_per_h");
  REQUIRE(slope);
  CHECK(slope->result == MetricResult::Pass);
  CHECK(slope->n == 7 * 24 * 60);
  CHECK(std::abs(slope->estimate) < 1);
  CHECK(find_metric(v, "footprint_growth")->result == MetricResult::Pass);
  CHECK(find_metric(v, "swap_growth_mb")->result == MetricResult::Pass);
  CHECK(find_metric(v, "decode_drift/agent/7k{")->result == MetricResult::Pass);
  CHECK(find_metric(v, "completion_rate")->result == MetricResult::Pass);
}

TEST_CASE("soak: a slowly growing footprint is a leak by its Theil–Sen slope") {
  // 60 MB/h against a 50 MB/h bound, buried in +-1% (200 MB) noise.
  auto v = judge_stage(week([](int64_t t, int64_t i) { return flat(t, i) + 60.0 * static_cast<double>(t) / kHourMs; }));
  INFO(v.reason);
  CHECK(v.state == VerdictState::Rejected);
  const auto* slope = find_metric(v, "footprint_slope_mb_per_h");
  CHECK(slope->result == MetricResult::Fail);
  CHECK(slope->estimate == Approx(60).epsilon(0.05));
  CHECK(slope->lo > 50);
  CHECK(contains(v.reason, "footprint_slope_mb_per_h"));
}

TEST_CASE("soak: growth over the initial footprint sustained to the end fails even under the slope bound") {
  // 15 MB/h: under the slope bound, but +12.6% over the week against a 10% limit.
  auto v = judge_stage(week([](int64_t t, int64_t i) { return flat(t, i) + 15.0 * static_cast<double>(t) / kHourMs; }));
  INFO(v.reason);
  CHECK(v.state == VerdictState::Rejected);
  CHECK(find_metric(v, "footprint_slope_mb_per_h")->result == MetricResult::Pass);
  const auto* growth = find_metric(v, "footprint_growth");
  CHECK(growth->result == MetricResult::Fail);
  CHECK(growth->lo > 0.10);
}

TEST_CASE("soak: a single spike is not a leak") {
  SECTION("one sample mid-week at double the footprint") {
    auto v = judge_stage(week([](int64_t t, int64_t i) { return t == 3 * kDayMs ? 2 * kFootprintMb : flat(t, i); }));
    INFO(v.reason);
    CHECK(v.state == VerdictState::Promoted);
  }
  SECTION("a ten-minute spike in the very last samples") {
    auto v = judge_stage(
        week([](int64_t t, int64_t i) { return t > kWeekMs - 10 * kMinuteMs ? 2 * kFootprintMb : flat(t, i); }));
    INFO(v.reason);
    CHECK(v.state == VerdictState::Promoted);
    CHECK(find_metric(v, "footprint_growth")->result == MetricResult::Pass);
  }
}

TEST_CASE("soak: sustained swap growth rejects") {
  auto in = week();
  for (auto& h : in.host_samples)
    h.swap_used_bytes = static_cast<int64_t>(2e9 * static_cast<double>(h.wall_ms - kT0) / kWeekMs);
  auto v = judge_stage(in);
  CHECK(v.state == VerdictState::Rejected);
  const auto* swap = find_metric(v, "swap_growth_mb");
  CHECK(swap->result == MetricResult::Fail);
  CHECK(swap->estimate > 1500);
}

TEST_CASE("soak: decode rate drifting down over the week rejects") {
  auto v = judge_stage(week(flat, [](int64_t t) { return t < 3 * kDayMs ? 50.0 : 35.0; }));
  INFO(v.reason);
  CHECK(v.state == VerdictState::Rejected);
  const auto* drift = find_metric(v, "decode_drift/agent/7k{");
  CHECK(drift->result == MetricResult::Fail);
  CHECK(drift->estimate == Approx(35).epsilon(0.06));
  CHECK(drift->baseline == Approx(50).epsilon(0.06));
}

TEST_CASE("soak: completed-request rate falling late in the week rejects") {
  auto in = week();
  for (auto& r : in.candidate_rows)
    if (r.started_wall_ms > kT0 + 6 * kDayMs && r.id % 3 == 0) {
      r.outcome = Outcome::Timeout;
      r.t_first_token_us.reset();
    }
  auto v = judge_stage(in);
  const auto* rate = find_metric(v, "completion_rate");
  REQUIRE(rate);
  CHECK(rate->result == MetricResult::Fail);
  CHECK(rate->estimate < rate->baseline);
  CHECK(v.state == VerdictState::Rejected);
}

TEST_CASE("soak: no footprint samples is inconclusive") {
  auto in = week();
  in.process_samples.clear();
  auto v = judge_stage(in);
  CHECK(v.state == VerdictState::Inconclusive);
  CHECK(contains(v.reason, "evidence short: footprint had 0 blocks of process samples"));
  // Samples come with time: a stage that can run on waits for them.
  REQUIRE(v.awaiting_evidence.size() == 1);
  CHECK(v.awaiting_evidence[0].rule == "footprint");
  CHECK(v.awaiting_evidence[0].kinds.empty());
}

TEST_CASE("soak: a restart mid-week rejects") {
  auto in = week();
  for (auto& s : in.process_samples)
    if (s.wall_ms > kT0 + 4 * kDayMs) s.pid = 5151;
  auto v = judge_stage(in);
  CHECK(v.state == VerdictState::Rejected);
  CHECK(contains(v.reason, "crash/restart"));
}

TEST_CASE("soak: samples and events in any order give a byte-identical verdict") {
  auto in = week([](int64_t t, int64_t i) { return flat(t, i) + 30.0 * static_cast<double>(t) / kHourMs; });
  // A second process of the candidate, sampled at the same instants, is summed in.
  const size_t n = in.process_samples.size();
  for (size_t i = 0; i < n; i += 7) {
    auto s = in.process_samples[i];
    s.id += 1'000'000;
    s.pid = 777;
    s.name = "runner";
    s.footprint_bytes = 123'456'789 + static_cast<int64_t>(i);
    in.process_samples.push_back(s);
  }
  in.events.push_back(event(3, kT0 + kDayMs, EventKind::DuplicateEngine));
  in.events.push_back(event(4, kT0 + 2 * kDayMs, EventKind::Gap));
  const auto first = judge_stage(in);
  auto shuffled = in;
  std::reverse(shuffled.process_samples.begin(), shuffled.process_samples.end());
  std::rotate(shuffled.host_samples.begin(), shuffled.host_samples.begin() + 777, shuffled.host_samples.end());
  std::reverse(shuffled.candidate_rows.begin(), shuffled.candidate_rows.end());
  std::reverse(shuffled.events.begin(), shuffled.events.end());
  const auto second = judge_stage(shuffled);
  CHECK(second.state == first.state);
  CHECK(second.reason == first.reason);
  CHECK(metrics_to_json(second.metrics) == metrics_to_json(first.metrics));
  CHECK(find_metric(first, "duplicate_engine")->n == 1);
}
