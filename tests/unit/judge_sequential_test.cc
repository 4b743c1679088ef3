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

TEST_CASE("alpha is split over a fixed list of measures per stage") {
  // Shares: one per failure ratio, one for the tool-call bands together (five
  // bands of 10K up to the 50K ceiling), one for latency_slo (half its
  // boundary's, half its p95 estimates'), one for paired (canary).
  struct Case {
    StageKind stage;
    WorkloadKind workload;
    bool baseline;
    size_t measures;
    int shares;
  };
  for (const Case& c :
       {Case{StageKind::Canary, WorkloadKind::Chat, true, 9, 9},
        Case{StageKind::Canary, WorkloadKind::Chat, false, 7, 7},
        Case{StageKind::Gate, WorkloadKind::Chat, true, 10, 6}, Case{StageKind::Soak, WorkloadKind::Chat, true, 12, 8},
        Case{StageKind::Soak, WorkloadKind::Chat, false, 11, 7}, Case{StageKind::Smoke, WorkloadKind::Chat, true, 0, 0},
        Case{StageKind::Canary, WorkloadKind::Embedding, true, 6, 6}}) {
    JudgeInput in = input_for(c.stage);
    in.recipe.workload = c.workload;
    if (!c.baseline) in.recipe.baseline_id.reset();
    const auto none = sequential_evidence(in);  // no rows yet: the split is known before the first
    in.candidate_rows = canary_with(50, 10).candidate_rows;
    const auto some = sequential_evidence(in);
    INFO(to_string(c.stage) << " baseline " << c.baseline);
    REQUIRE(none.size() == c.measures);
    REQUIRE(some.size() == c.measures);
    const double share = c.shares ? in.recipe.judge.alpha / c.shares : 0;
    double sum = 0;
    for (size_t i = 0; i < some.size(); ++i) {
      const auto& m = some[i];
      INFO(m.name);
      CHECK(m.name == none[i].name);
      if (m.name.rfind("tool_calls/", 0) == 0)
        CHECK(m.alpha == Approx(share / 5));
      else if (m.name == "latency_slo")
        CHECK(m.alpha + m.estimate_alpha == Approx(share));
      else
        CHECK(m.alpha == Approx(share));
      sum += m.alpha + m.estimate_alpha;
    }
    if (c.measures) CHECK(sum == Approx(in.recipe.judge.alpha));
  }
  const auto canary = sequential_evidence(canary_with(10, 0));
  REQUIRE(canary.size() == 9);
  CHECK(canary[0].name == "pooled");
  CHECK(canary[1].name == "http_5xx");
  CHECK(canary[2].name == "task/functional");
  CHECK(canary[7].name == "latency_slo");
  CHECK(canary[8].name == "paired");
  const auto gate = sequential_evidence(input_for(StageKind::Gate));
  CHECK(gate[4].name == "tool_calls/0-10K");
  CHECK(gate[8].name == "tool_calls/40K-50K");
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
  CHECK(m->p_value <= in.recipe.judge.alpha / 9);
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

TEST_CASE("send order, not id order: failures that came back first count where they were sent") {
  // Thirty functional completions sent 10 s apart, every tenth a 500. The
  // clean ones are slow and the 500s come back at once, so the store gave the
  // three 500s the first ids: in id order they are three failures in the
  // first three attempts, which reject at a 1 % budget; in send order they
  // are one in ten.
  auto stage = [](bool sent_in_id_order) {
    JudgeInput in = input_for(StageKind::Canary);
    int64_t next_clean = 4, next_failure = 1;
    for (int i = 0; i < 30; ++i) {
      ProbeResult r;
      const bool fail = i % 10 == 9;
      r.id = fail ? next_failure++ : next_clean++;
      r.candidate_id = kCandidate;
      r.host_id = kHost;
      r.kind = ProbeKind::Marker;
      r.task = "functional";
      r.workload_id = "functional/marker";
      r.started_wall_ms = kT0 + (sent_in_id_order ? r.id : i) * 10'000;
      r.outcome = fail ? Outcome::Http5xx : Outcome::Clean;
      r.http_status = fail ? 500 : 200;
      in.candidate_rows.push_back(r);
    }
    return in;
  };
  const auto sent = sequential_evidence(stage(false));
  const auto* pooled = measure(sent, "pooled");
  REQUIRE(pooled);
  CHECK(!pooled->stop);
  REQUIRE(!pooled->path.empty());
  CHECK(pooled->path[0].n == 10);  // the first look with a failure saw the nine clean rows sent before it
  CHECK(!judge_hard_failures(stage(false)));
  // The same rows had they been sent in id order: the test would reject, so
  // an implementation taking rows by id cannot pass the checks above.
  const auto by_id = sequential_evidence(stage(true));
  REQUIRE(measure(by_id, "pooled")->stop);
  CHECK(measure(by_id, "pooled")->stop->n == 3);
}

TEST_CASE("a burst is one look even when its members' send times straddle a millisecond") {
  // Real clocks tick between the members of one loop pass; the group id keeps
  // them together. Each burst of eight holds one 500, its members sent at t
  // and t + 1 ms, interleaved with a functional row sent at t + 1 ms.
  JudgeInput in = input_for(StageKind::Canary);
  int64_t id = 1;
  for (int b = 0; b < 6; ++b) {
    const int64_t t = kT0 + b * kMinuteMs;
    for (int i = 0; i < 8; ++i) {
      ProbeResult r;
      r.id = id++;
      r.candidate_id = kCandidate;
      r.kind = ProbeKind::Burst;
      r.task = "burst";
      r.workload_id = "burst/8";
      r.group_id = b;
      r.started_wall_ms = t + (i < 4 ? 0 : 1);
      r.outcome = i == 2 ? Outcome::Http5xx : Outcome::Clean;
      in.candidate_rows.push_back(r);
    }
    ProbeResult f;
    f.id = id++;
    f.candidate_id = kCandidate;
    f.kind = ProbeKind::Marker;
    f.task = "functional";
    f.workload_id = "functional/marker";
    f.started_wall_ms = t + 1;
    f.outcome = Outcome::Clean;
    in.candidate_rows.push_back(f);
  }
  const auto burst_ms = sequential_evidence(in);
  const auto* burst = measure(burst_ms, "task/burst");
  REQUIRE(burst);
  REQUIRE(burst->path.size() >= 3);
  for (const auto& p : burst->path) CHECK(p.n % 8 == 0);
  // Without the group id the first four members of each burst were a look of
  // their own: the grouping is what the check above sees.
  for (auto& r : in.candidate_rows) r.group_id.reset();
  const auto split_ms = sequential_evidence(in);
  const auto* split = measure(split_ms, "task/burst");
  bool partial = false;
  for (const auto& p : split->path) partial = partial || p.n % 8 != 0;
  CHECK(partial);
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
  const auto again_all = sequential_evidence(prefix);
  const auto* again = measure(again_all, "pooled");
  REQUIRE(again->stop);
  CHECK(again->stop->row_id == stop->row_id);
  CHECK(again->stop->log_e == stop->log_e);
  // And the stage's verdict (what explain recomputes) is byte-identical.
  CHECK(judge_stage(whole).reason == judge_stage(stored).reason);
}

namespace {

// A gate's agent turn: every second one requires a tool call; `lo` the band.
ProbeResult& turn(Rows& rows, int64_t turn_no, int64_t lo, bool tool_required, Outcome o) {
  ProbeResult& r = rows.add(ProbeKind::Agent, "agent/" + std::to_string(lo), o);
  r.task = "agent";
  r.size_tokens = lo;
  r.extra_json =
      "{\"band\":\"x\",\"context_tokens\":" + std::to_string(lo + 500) +
      ",\"recovery\":false,\"session\":1,\"thinking\":false,\"tool_required\":" + (tool_required ? "true" : "false") +
      ",\"turn\":" + std::to_string(turn_no) + "}";
  return r;
}

}  // namespace

TEST_CASE("tool calls: the session's tool-call failures are a measure per context band") {
  JudgeInput in = input_for(StageKind::Gate);
  Rows rows{kCandidate, 1};
  // Clean below 30K; from 30K on a third of the tool turns send no call, and
  // turns that asked for none fail with invalid calls (the band rule's, not this test's).
  int64_t n = 0;
  for (int64_t lo : {0, 10'000, 20'000, 30'000})
    for (int i = 0; i < 60; ++i, ++n) {
      const bool tool = i % 2 == 0;
      const bool bad = lo >= 30'000 && (tool ? i % 6 == 0 : true);
      turn(rows, n, lo, tool, !bad ? Outcome::Clean : tool ? Outcome::MissingToolCall : Outcome::InvalidToolCall);
    }
  in.candidate_rows = rows.rows;
  const auto ms = sequential_evidence(in);
  const auto* low = measure(ms, "tool_calls/0-10K");
  const auto* high = measure(ms, "tool_calls/30K-40K");
  const auto* empty = measure(ms, "tool_calls/40K-50K");
  REQUIRE(low);
  REQUIRE(high);
  REQUIRE(empty);
  CHECK(low->last.n == 30);
  CHECK(low->last.k == 0);
  CHECK(!low->stop);
  CHECK(high->budget == in.recipe.judge.max_invalid_ratio);
  REQUIRE(high->stop);
  CHECK(high->stop->k * 3 <= high->stop->n + 3);  // only tool turns count: a third of them failed
  CHECK(empty->last.n == 0);
  // A turn past the ceiling is the last band's.
  JudgeInput deep = input_for(StageKind::Gate);
  Rows more{kCandidate, 1};
  turn(more, 1, 70'000, true, Outcome::MissingToolCall);
  deep.candidate_rows = more.rows;
  CHECK(measure(sequential_evidence(deep), "tool_calls/40K-50K")->last.k == 1);
  // The verdict names the band.
  in.recipe.end = StageEnd::Stopped;
  const auto v = judge_hard_failures(in);
  REQUIRE(v);
  CHECK(v->state == VerdictState::Rejected);
  const auto* row = find_metric(*v, "sequential/tool_calls/30K-40K");
  REQUIRE(row);
  CHECK(row->result == MetricResult::Fail);
  CHECK(contains(row->reason, "tool-call turns failed"));
  CHECK(find_metric(*v, "sequential/tool_calls/0-10K")->result == MetricResult::Pass);
}

namespace {

// A canary against a history baseline: 40 baseline stream rows around 200 ms
// TTFT, stored a day before; the candidate's rows around `ttft` ms.
JudgeInput slo_canary(double ttft, int n = 60) {
  JudgeInput in = input_for(StageKind::Canary);
  in.recipe.baseline_mode = BaselineMode::History;
  Rows base{kBaseline, 1, kT0 - kDayMs};
  add_perf(base, 40, Perf{}, 1);
  for (auto& r : base.rows) r.task = "functional";
  in.baseline_rows = base.rows;
  Rows cand{kCandidate, 1000};
  Perf p;
  p.ttft_ms = ttft;
  add_perf(cand, n, p, 100);
  for (auto& r : cand.rows) r.task = "functional";
  in.candidate_rows = cand.rows;
  return in;
}

}  // namespace

TEST_CASE("latency_slo: rows slower than a history baseline's p95, fixed at the stage's start") {
  SECTION("a candidate at the baseline's speed never crosses") {
    const auto m_all = sequential_evidence(slo_canary(200));
    const auto* m = measure(m_all, "latency_slo");
    REQUIRE(m);
    CHECK(m->last.n == 60);
    CHECK(!m->stop);
    CHECK(m->last.k <= 3);
    // 40 values, the 38th: the budget covers how much of the baseline's own
    // distribution such a p95 may leave above it, never under 10 %.
    const double expect = sequential::beta_upper_quantile(3, 38, m->estimate_alpha);
    CHECK(m->budget == Approx(std::max(kSloMinBudget, expect)));
    CHECK(m->budget > kSloMinBudget);
    CHECK(contains(m->basis, "1 pool(s) (fewest 40 baseline values)"));
  }
  SECTION("a candidate three times slower is rejected within a couple of dozen rows") {
    const auto in = slo_canary(600);
    const auto m_all = sequential_evidence(in);
    const auto* m = measure(m_all, "latency_slo");
    REQUIRE(m);
    REQUIRE(m->stop);
    CHECK(m->stop->k == m->stop->n);
    CHECK(m->stop->n <= 25);
    const auto v = judge_stage(in);
    CHECK(v.state == VerdictState::Rejected);
    CHECK(contains(v.reason, "sequential latency_slo"));
  }
  SECTION("slower, but within the comparisons' floor and hold band: not a miss") {
    // +12 % everywhere: beyond the effect floor alone, within floor + hold band of the p95.
    const auto m_all = sequential_evidence(slo_canary(224));
    const auto* m = measure(m_all, "latency_slo");
    CHECK(!m->stop);
  }
  SECTION("no history baseline, or too few values: present, at n = 0") {
    JudgeInput in = slo_canary(600);
    in.recipe.baseline_mode = BaselineMode::Interleaved;  // the baseline's rows are the stage's own period
    CHECK(measure(sequential_evidence(in), "latency_slo")->last.n == 0);
    in = slo_canary(600);
    in.baseline_rows.resize(kSloMinBaseline - 1);
    const auto few_all = sequential_evidence(in);
    const auto* few = measure(few_all, "latency_slo");
    CHECK(few->last.n == 0);
    CHECK(contains(few->basis, "no pool has 20 baseline values"));
    in.recipe.baseline_id.reset();
    CHECK(!measure(sequential_evidence(in), "latency_slo"));
  }
  SECTION("recomputed identically from the rows in any order") {
    JudgeInput in = slo_canary(600);
    const auto before = *measure(sequential_evidence(in), "latency_slo");
    std::mt19937 g(7);
    std::shuffle(in.candidate_rows.begin(), in.candidate_rows.end(), g);
    std::shuffle(in.baseline_rows.begin(), in.baseline_rows.end(), g);
    const auto after = *measure(sequential_evidence(in), "latency_slo");
    CHECK(after.budget == before.budget);
    REQUIRE(after.stop);
    CHECK(after.stop->row_id == before.stop->row_id);
    CHECK(after.stop->log_e == before.stop->log_e);
  }
}

namespace {

// A canary with an interleaved baseline: `runs` functional runs of six
// completions each (group id = slot), each repeated by the baseline right
// after it (its own group id). fail(side, run, i): whether that row is a 500.
template <class Fail>
JudgeInput paired_canary(int runs, Fail fail) {
  JudgeInput in = input_for(StageKind::Canary);
  in.recipe.baseline_mode = BaselineMode::Interleaved;
  int64_t id = 1;
  for (int run = 0; run < runs; ++run)
    for (int side = 0; side < 2; ++side)
      for (int i = 0; i < 6; ++i) {
        ProbeResult r;
        r.id = id++;
        r.candidate_id = side == 0 ? kCandidate : kBaseline;
        r.host_id = kHost;
        r.kind = ProbeKind::Marker;
        r.task = "functional";
        r.workload_id = "functional/marker";
        r.group_id = side == 0 ? run : 10'000 + run;
        r.started_wall_ms = kT0 + run * kMinuteMs + side * 20'000 + i * 1'000;
        const bool f = fail(side, run, i);
        r.outcome = f ? Outcome::Http5xx : Outcome::Clean;
        r.http_status = f ? 500 : 200;
        (side == 0 ? in.candidate_rows : in.baseline_rows).push_back(r);
      }
  return in;
}

}  // namespace

TEST_CASE("paired: the candidate's failures against its interleaved baseline's") {
  SECTION("failing four times as often as the baseline rejects") {
    // Candidate: rows 0-3 of every third run (4 in 18); baseline: row 0 of every third (1 in 18).
    const auto in =
        paired_canary(60, [](int side, int run, int i) { return run % 3 == 0 && (side == 0 ? i < 4 : i == 0); });
    const auto m_all = sequential_evidence(in);
    const auto* m = measure(m_all, "paired");
    REQUIRE(m);
    CHECK(m->budget == kPairedShare);
    REQUIRE(m->stop);
    CHECK(m->stop->k * 5 == m->stop->n * 4);
    CHECK(contains(m->basis, "paired run(s)"));
  }
  SECTION("the same failures on both sides never reject, whatever their rate") {
    const auto in = paired_canary(200, [](int, int run, int i) { return (run + i) % 4 == 0; });
    const auto m_all = sequential_evidence(in);
    const auto* m = measure(m_all, "paired");
    REQUIRE(m);
    CHECK(m->last.n > 200);
    CHECK(m->last.k * 2 == m->last.n);
    CHECK(!m->stop);
    CHECK(m->last.log_e < 0);
  }
  SECTION("a pair whose runs made different numbers of attempts is left out") {
    auto in = paired_canary(3, [](int side, int, int) { return side == 0; });
    in.baseline_rows.pop_back();  // the last baseline run lost a row
    const auto m_all = sequential_evidence(in);
    const auto* m = measure(m_all, "paired");
    CHECK(m->last.n == 12);
    CHECK(contains(m->basis, "2 paired run(s)"));
  }
  SECTION("without an interleaved baseline the measure stays at n = 0") {
    auto in = paired_canary(60, [](int side, int, int i) { return side == 0 && i < 2; });
    in.recipe.baseline_mode = BaselineMode::History;
    CHECK(measure(sequential_evidence(in), "paired")->last.n == 0);
  }
}
