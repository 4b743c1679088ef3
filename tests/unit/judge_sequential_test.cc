// The sequential failure test (judges/sequential.h): its arithmetic in log
// space against brute-force integrals, the alpha split, early rejection, send
// order, and the evidence recomputed from stored rows after a restart.
#include <algorithm>
#include <cmath>
#include <random>

#include "judges/judge.h"
#include "judges/sequential.h"
#include "tests/catch.h"
#include "tests/unit/judge_rows.h"

using namespace soak;
using namespace soak::testing;

namespace {

// log ∫_{x0}^1 p^(a-1) (1-p)^(b-1) dp by Simpson's rule over [lo, hi] in log
// space (log-sum-exp), the window chosen by the caller to hold the mass.
double brute_log_upper_beta(double a, double b, double lo, double hi, int steps = 200'000) {
  std::vector<double> logs;
  const double h = (hi - lo) / steps;
  double top = -INFINITY;
  for (int i = 0; i <= steps; ++i) {
    const double p = std::clamp(lo + h * i, 1e-300, 1 - 1e-16);
    const double w = (i == 0 || i == steps) ? 1 : (i % 2 ? 4 : 2);
    const double l = (a - 1) * std::log(p) + (b - 1) * std::log1p(-p) + std::log(w * h / 3);
    logs.push_back(l);
    top = std::max(top, l);
  }
  double sum = 0;
  for (double l : logs) sum += std::exp(l - top);
  return top + std::log(sum);
}

double brute_log_e(int64_t n, int64_t k, double p0) {
  const double a = kSequentialPriorFailures, b = kSequentialPriorSuccesses;
  const double num = brute_log_upper_beta(a + k, b + n - k, p0, 1);
  const double den = brute_log_upper_beta(a, b, p0, 1);
  return num - den - k * std::log(p0) - (n - k) * std::log1p(-p0);
}

// A canary's functional completions, one every 10 s; every `fail_every`-th an HTTP 500.
JudgeInput canary_with(int n, int fail_every) {
  JudgeInput in = input_for(StageKind::Canary);
  Rows rows{kCandidate, 1};
  for (int i = 1; i <= n; ++i) {
    const bool fail = fail_every > 0 && i % fail_every == 0;
    auto& r = fail ? rows.add(ProbeKind::Marker, "functional/marker", Outcome::Http5xx)
                   : rows.perf(ProbeKind::Marker, "functional/marker", Perf{});
    r.task = "functional";
  }
  in.candidate_rows = rows.rows;
  return in;
}

const SequentialMeasure* measure(const std::vector<SequentialMeasure>& ms, const std::string& name) {
  for (const auto& m : ms)
    if (m.name == name) return &m;
  return nullptr;
}

}  // namespace

TEST_CASE("the upper Beta integral matches a brute-force integral, both branches of the fraction") {
  struct Case {
    double a, b, x0;
  };
  for (const Case& c : {Case{1, 20, 0.01}, Case{4, 30, 0.01}, Case{13, 108, 0.02}, Case{2, 3, 0.5}, Case{30, 5, 0.2},
                        Case{1, 1, 0.0}, Case{50, 2000, 0.01}}) {
    INFO(c.a << " " << c.b << " " << c.x0);
    CHECK(sequential::log_upper_beta(c.a, c.b, c.x0) ==
          Approx(brute_log_upper_beta(c.a, c.b, c.x0, 1)).epsilon(1e-7).margin(1e-7));
  }
}

TEST_CASE("e-values: one before any row, falling on clean rows, rising on failures") {
  CHECK(sequential::log_e_value(0, 0, 0.01) == Approx(0).margin(1e-12));
  for (auto [n, k] : {std::pair<int64_t, int64_t>{2, 2}, {3, 3}, {40, 5}, {100, 1}, {500, 5}, {300, 40}})
    CHECK(sequential::log_e_value(n, k, 0.01) == Approx(brute_log_e(n, k, 0.01)).epsilon(1e-6).margin(1e-6));
  for (int64_t n = 1; n < 200; ++n) {
    CHECK(sequential::log_e_value(n + 1, 3, 0.01) <= sequential::log_e_value(n, 3, 0.01));
    CHECK(sequential::log_e_value(n + 1, 4, 0.01) > sequential::log_e_value(n, 3, 0.01));
  }
}

TEST_CASE("log space holds at a million attempts: no overflow, no underflow, the brute-force value") {
  constexpr int64_t kN = 1'000'000;
  // At the budget itself: a modest e-value (the truncated prior's cost).
  const double at_budget = sequential::log_e_value(kN, kN / 100, 0.01);
  CHECK(std::isfinite(at_budget));
  CHECK(at_budget < 1);
  // Twice the budget: e^(thousands), which no double holds, in log space.
  const double twice = sequential::log_e_value(kN, kN / 50, 0.01);
  CHECK(std::isfinite(twice));
  CHECK(twice > 3000);
  const double sd = std::sqrt(0.02 * 0.98 / kN);
  const double brute_twice =
      brute_log_upper_beta(1 + kN / 50, kSequentialPriorSuccesses + kN - kN / 50, 0.02 - 40 * sd, 0.02 + 40 * sd) -
      brute_log_upper_beta(1, kSequentialPriorSuccesses, 0.01, 1) - (kN / 50) * std::log(0.01) -
      (kN - kN / 50) * std::log1p(-0.01);
  CHECK(twice == Approx(brute_twice).epsilon(1e-9));
  // No failures at all: the prior's mass near the budget keeps it at b / (n + b).
  const double none = sequential::log_e_value(kN, 0, 0.01);
  CHECK(none == Approx(std::log(kSequentialPriorSuccesses / (kN + kSequentialPriorSuccesses))).epsilon(1e-9));
}

TEST_CASE("alpha is split evenly over a fixed list of measures per stage") {
  struct Case {
    StageKind stage;
    WorkloadKind workload;
    size_t measures;
  };
  for (const Case& c : {Case{StageKind::Canary, WorkloadKind::Chat, 7}, Case{StageKind::Gate, WorkloadKind::Chat, 4},
                        Case{StageKind::Soak, WorkloadKind::Chat, 6}, Case{StageKind::Smoke, WorkloadKind::Chat, 0},
                        Case{StageKind::Canary, WorkloadKind::Embedding, 4}}) {
    JudgeInput in = input_for(c.stage);
    in.recipe.workload = c.workload;
    const auto none = sequential_evidence(in);  // no rows yet: the split is known before the first
    in.candidate_rows = canary_with(50, 10).candidate_rows;
    const auto some = sequential_evidence(in);
    INFO(to_string(c.stage));
    REQUIRE(none.size() == c.measures);
    REQUIRE(some.size() == c.measures);
    double sum = 0;
    for (const auto& m : some) {
      CHECK(m.alpha == Approx(in.recipe.judge.alpha / static_cast<double>(c.measures)));
      sum += m.alpha;
    }
    if (c.measures) CHECK(sum == Approx(in.recipe.judge.alpha));
  }
  const auto canary = sequential_evidence(canary_with(10, 0));
  REQUIRE(canary.size() == 7);
  CHECK(canary[0].name == "pooled");
  CHECK(canary[1].name == "http_5xx");
  CHECK(canary[2].name == "task/functional");
}

TEST_CASE("one 5xx in eight rejects early, naming the measure, n, k, the budget and the e-value") {
  const JudgeInput in = canary_with(400, 8);
  const auto ms = sequential_evidence(in);
  const auto* pooled = measure(ms, "pooled");
  REQUIRE(pooled);
  REQUIRE(pooled->stop);
  CHECK(pooled->stop->n <= 100);
  CHECK(pooled->stop->log_e >= pooled->log_boundary());
  CHECK(pooled->fraction() == 1);
  // Only the rows before the stop are needed to reach it.
  JudgeInput early = in;
  early.candidate_rows.resize(static_cast<size_t>(pooled->stop->n));
  early.recipe.end = StageEnd::Stopped;
  const auto v = judge_hard_failures(early);
  REQUIRE(v);
  INFO(v->reason);
  CHECK(v->state == VerdictState::Rejected);
  CHECK(contains(v->reason, "sequential pooled"));
  CHECK(contains(v->reason, "budget 1.00%"));
  CHECK(contains(v->reason, describe(*pooled->stop)));
  const auto* m = find_metric(*v, "sequential/pooled");
  REQUIRE(m);
  CHECK(m->result == MetricResult::Fail);
  CHECK(m->n == pooled->stop->n);
  CHECK(m->p_value <= in.recipe.judge.alpha / 7);
  // One row fewer and nothing has crossed yet.
  early.candidate_rows.pop_back();
  CHECK(!judge_hard_failures(early));
}

TEST_CASE("a healthy stage never crosses: one failure in a hundred, and two 5xx at the start") {
  SECTION("one in a hundred over a long stage") {
    const auto v = judge_stage(canary_with(3000, 100));
    for (const char* name : {"sequential/pooled", "sequential/http_5xx", "sequential/task/functional"}) {
      const auto* m = find_metric(v, name);
      REQUIRE(m);
      CHECK(m->result == MetricResult::Pass);
    }
    CHECK(!contains(v.reason, "sequential"));
  }
  SECTION("two 5xx first do not reject, three do") {
    JudgeInput in = canary_with(30, 0);
    for (int i = 0; i < 2; ++i) in.candidate_rows[static_cast<size_t>(i)].outcome = Outcome::Http5xx;
    CHECK(!judge_hard_failures(in));
    in.candidate_rows[2].outcome = Outcome::Http5xx;
    const auto v = judge_hard_failures(in);
    REQUIRE(v);
    CHECK(contains(v->reason, "sequential"));
  }
}

TEST_CASE("runs are counted in the order requests were sent, not the order they finished") {
  // Bursts of eight sent at once, one member of each a 500 that comes back
  // first (the lowest id in its burst) or last: the same evidence.
  auto bursts = [](bool failure_first) {
    JudgeInput in = input_for(StageKind::Canary);
    int64_t id = 1;
    for (int b = 0; b < 6; ++b)
      for (int i = 0; i < 8; ++i) {
        ProbeResult r;
        r.id = id++;
        r.candidate_id = kCandidate;
        r.kind = ProbeKind::Burst;
        r.task = "burst";
        r.workload_id = "burst/8";
        r.started_wall_ms = kT0 + b * kMinuteMs;  // one send instant per burst
        r.outcome = (failure_first ? i == 0 : i == 7) ? Outcome::Http5xx : Outcome::Clean;
        in.candidate_rows.push_back(r);
      }
    return sequential_evidence(in);
  };
  const auto first = bursts(true), last = bursts(false);
  REQUIRE(first.size() == last.size());
  for (size_t i = 0; i < first.size(); ++i) {
    CHECK(first[i].peak.n == last[i].peak.n);
    CHECK(first[i].peak.k == last[i].peak.k);
    CHECK(first[i].peak.log_e == last[i].peak.log_e);
    CHECK(first[i].stop.has_value() == last[i].stop.has_value());
  }
  // Each look sees whole bursts.
  CHECK(measure(first, "task/burst")->peak.n % 8 == 0);
}

TEST_CASE("after a restart the evidence is recomputed from the stored rows, identically") {
  const JudgeInput whole = canary_with(200, 8);
  const auto before = sequential_evidence(whole);
  // The store gives rows back in any order; a resumed daemon judges what is
  // stored, which holds every row written before the restart.
  JudgeInput stored = whole;
  std::mt19937 shuffle(24);
  std::shuffle(stored.candidate_rows.begin(), stored.candidate_rows.end(), shuffle);
  const auto after = sequential_evidence(stored);
  REQUIRE(before.size() == after.size());
  for (size_t i = 0; i < before.size(); ++i) {
    CHECK(before[i].last.log_e == after[i].last.log_e);
    CHECK(before[i].peak.log_e == after[i].peak.log_e);
    REQUIRE(before[i].stop.has_value() == after[i].stop.has_value());
    if (before[i].stop) CHECK(before[i].stop->row_id == after[i].stop->row_id);
  }
  // A stop found before the restart stays where it was: rows after it move neither it nor its e-value.
  JudgeInput prefix = whole;
  const auto stop = measure(before, "pooled")->stop;
  REQUIRE(stop);
  prefix.candidate_rows.resize(static_cast<size_t>(stop->n));
  const auto* again = measure(sequential_evidence(prefix), "pooled");
  REQUIRE(again->stop);
  CHECK(again->stop->row_id == stop->row_id);
  CHECK(again->stop->log_e == stop->log_e);
  // And the stage's verdict (what explain recomputes) is byte-identical.
  CHECK(judge_stage(whole).reason == judge_stage(stored).reason);
}
