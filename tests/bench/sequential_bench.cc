// The sequential failure test in virtual time (judges/sequential.h): prints
// figures, asserts nothing.
//
//   sequential_bench [--stages N] [--horizon ROWS] [--seed S] [--part all|budget|paired|slo]
//
// Each simulated stage is a canary whose functional completions fail
// independently at a rate p, one row a second of virtual time, judged by the
// same sequential_evidence() the daemon calls, up to `horizon` rows. Failures
// are HTTP 500s, so the pooled, 5xx and functional measures all see them.
// At p = the budget it prints how often a stage is rejected anyway (the
// false-reject rate, which judge.alpha bounds) with its 95 % Wilson interval;
// above it, the median and 90th percentile of the attempts seen when the
// stage was rejected, and the share rejected within the horizon.
//
// Then the two measures against a baseline:
//   - paired: a canary whose functional runs (six completions) are each
//     repeated by an interleaved baseline; both sides fail at the same rate
//     (the false-reject rate of the paired measure alone), then the candidate
//     at four times the baseline's (the candidate's attempts to reject);
//   - latency_slo: a history baseline of m rows per pool with log-normal TTFT
//     (median 200 ms, sigma 0.3), drawn afresh for every stage, so the p95's
//     own estimation error is part of the figure; the candidate at the same
//     distribution (false rejects), then 1.5x, 2x and 3x slower.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numbers>
#include <string>
#include <vector>

#include "core/clock.h"
#include "judges/judge.h"
#include "judges/sequential.h"
#include "judges/stats.h"

using namespace soak;

namespace {

constexpr int kDefaultStages = 10'000;
constexpr int64_t kDefaultHorizon = 2'000;
constexpr uint64_t kDefaultSeed = 24;
constexpr int64_t kRowEveryMs = 1'000;
constexpr double kBudgets[] = {0.01, 0.02};
constexpr double kFailingRates[] = {0.06, 0.10, 0.125};

// splitmix64: the bench's own randomness (the judges have none).
struct Random {
  uint64_t s;
  double uniform() {
    uint64_t z = (s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return static_cast<double>(z >> 11) * 0x1.0p-53;
  }
};

struct Stage {
  JudgeInput in;
  explicit Stage(double budget, int64_t horizon) {
    in.recipe.stage = StageKind::Canary;
    in.recipe.candidate_id = 1;
    in.recipe.judge.max_failure_ratio = budget;
    VirtualClock clock;
    for (int64_t i = 0; i < horizon; ++i) {
      ProbeResult r;
      r.id = i + 1;
      r.candidate_id = 1;
      r.kind = ProbeKind::Marker;
      r.task = "functional";
      r.workload_id = "functional/marker";
      r.started_wall_ms = clock.wall_ms();
      clock.advance_ms(kRowEveryMs);
      in.candidate_rows.push_back(std::move(r));
    }
  }
  // Attempts seen when the first measure stopped; nullopt: never rejected.
  std::optional<int64_t> run(double p, Random& rng) {
    for (auto& r : in.candidate_rows) {
      const bool fail = rng.uniform() < p;
      r.outcome = fail ? Outcome::Http5xx : Outcome::Clean;
      r.http_status = fail ? 500 : 200;
    }
    std::optional<int64_t> first;
    for (const auto& m : sequential_evidence(in))
      if (m.stop && (!first || m.stop->n < *first)) first = m.stop->n;
    return first;
  }
};

// A canary with an interleaved baseline: `runs` functional runs of six
// completions, each repeated by the baseline 20 s later (the same group id).
struct PairedStage {
  JudgeInput in;
  PairedStage(int64_t runs) {
    in.recipe.stage = StageKind::Canary;
    in.recipe.candidate_id = 1;
    in.recipe.baseline_id = 2;
    in.recipe.baseline_mode = BaselineMode::Interleaved;
    int64_t id = 1;
    for (int64_t run = 0; run < runs; ++run)
      for (int side = 0; side < 2; ++side)
        for (int i = 0; i < 6; ++i) {
          ProbeResult r;
          r.id = id++;
          r.candidate_id = side == 0 ? 1 : 2;
          r.kind = ProbeKind::Marker;
          r.task = "functional";
          r.workload_id = "functional/marker";
          r.group_id = run;
          r.started_wall_ms = run * 60'000 + side * 20'000 + i * kRowEveryMs;
          (side == 0 ? in.candidate_rows : in.baseline_rows).push_back(std::move(r));
        }
  }
  // Candidate attempts when the paired measure stopped; nullopt: never.
  std::optional<int64_t> run(double p_cand, double p_base, Random& rng) {
    for (auto* rows : {&in.candidate_rows, &in.baseline_rows})
      for (auto& r : *rows) {
        const bool fail = rng.uniform() < (rows == &in.candidate_rows ? p_cand : p_base);
        r.outcome = fail ? Outcome::Http5xx : Outcome::Clean;
      }
    for (const auto& m : sequential_evidence(in))
      if (m.name == "paired" && m.stop) {
        // The rows of the candidate up to the stopping pair's last one.
        int64_t n = 0;
        for (const auto& r : in.candidate_rows) n += r.id <= m.stop->row_id;
        return n;
      }
    return std::nullopt;
  }
};

// A canary against a history baseline of `m` functional rows; `horizon` candidate rows.
struct SloStage {
  JudgeInput in;
  SloStage(int64_t m, int64_t horizon) {
    in.recipe.stage = StageKind::Canary;
    in.recipe.candidate_id = 1;
    in.recipe.baseline_id = 2;
    in.recipe.baseline_mode = BaselineMode::History;
    auto row = [](int64_t id, int64_t cand, int64_t t) {
      ProbeResult r;
      r.id = id;
      r.candidate_id = cand;
      r.kind = ProbeKind::Stream;
      r.task = "functional";
      r.workload_id = "stream/1k";
      r.started_wall_ms = t;
      r.outcome = Outcome::Clean;
      return r;
    };
    for (int64_t i = 0; i < m; ++i) in.baseline_rows.push_back(row(i + 1, 2, i * kRowEveryMs));
    for (int64_t i = 0; i < horizon; ++i)
      in.candidate_rows.push_back(row(m + i + 1, 1, 1'000'000'000 + i * kRowEveryMs));
  }
  static int64_t ttft_us(double scale, Random& rng) {
    // Box-Muller: a log-normal TTFT around 200 ms.
    const double u = std::max(rng.uniform(), 1e-300), v = rng.uniform();
    const double z = std::sqrt(-2 * std::log(u)) * std::cos(2 * std::numbers::pi * v);
    return static_cast<int64_t>(200'000 * scale * std::exp(0.3 * z));
  }
  std::optional<int64_t> run(double scale, Random& rng, double& budget) {
    for (auto& r : in.baseline_rows) r.t_first_token_us = ttft_us(1, rng);
    for (auto& r : in.candidate_rows) r.t_first_token_us = ttft_us(scale, rng);
    for (const auto& m : sequential_evidence(in))
      if (m.name == "latency_slo") {
        budget = m.budget;
        if (m.stop) return m.stop->n;
      }
    return std::nullopt;
  }
};

double quantile(std::vector<int64_t> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return static_cast<double>(v[static_cast<size_t>(q * static_cast<double>(v.size() - 1))]);
}

}  // namespace

int main(int argc, char** argv) {
  int stages = kDefaultStages;
  int64_t horizon = kDefaultHorizon;
  uint64_t seed = kDefaultSeed;
  std::string part = "all";
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--stages")) stages = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--horizon")) horizon = std::atoll(argv[i + 1]);
    if (!std::strcmp(argv[i], "--seed")) seed = std::strtoull(argv[i + 1], nullptr, 10);
    if (!std::strcmp(argv[i], "--part")) part = argv[i + 1];
  }
  auto runs = [&](const char* name) { return part == "all" || part == name; };
  const JudgeRules rules;
  std::printf("sequential test: %d stages of up to %lld functional completions each, alpha %.3g, prior Beta(%g, %g)\n",
              stages, static_cast<long long>(horizon), rules.alpha, kSequentialPriorFailures,
              kSequentialPriorSuccesses);
  Random rng{seed};
  for (double budget : kBudgets) {
    if (!runs("budget")) break;
    Stage st(budget, horizon);
    const auto t0 = std::chrono::steady_clock::now();
    int64_t rejected = 0;
    for (int s = 0; s < stages; ++s) rejected += st.run(budget, rng).has_value();
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    const auto ci = stats::wilson_interval(rejected, stages, 0.95);
    std::printf(
        "budget %.1f%%: at the budget %lld of %d stages rejected (%.3f%%, 95%% interval %.3f%%..%.3f%%), "
        "alpha %.1f%%; %.3f ms a stage\n",
        budget * 100, static_cast<long long>(rejected), stages, 100.0 * static_cast<double>(rejected) / stages,
        ci.lo * 100, ci.hi * 100, rules.alpha * 100, ms / stages);
    for (double p : kFailingRates) {
      std::vector<int64_t> at;
      for (int s = 0; s < stages; ++s)
        if (auto n = st.run(p, rng)) at.push_back(*n);
      std::printf(
          "  failing %5.1f%% (1 in %4.1f): rejected %6.2f%% within %lld; attempts to reject: median %.0f, "
          "p90 %.0f\n",
          p * 100, 1 / p, 100.0 * static_cast<double>(at.size()) / stages, static_cast<long long>(horizon),
          quantile(at, 0.5), quantile(at, 0.9));
    }
  }

  // The paired measure.
  constexpr int64_t kPairedRuns = 300;
  constexpr double kBaselineRates[] = {0.01, 0.02, 0.05};
  if (runs("paired"))
    std::printf(
        "paired: %d stages of up to %lld interleaved runs (6 completions a side), rho %.2f, prior Beta(%g, %g)\n",
        stages, static_cast<long long>(kPairedRuns), kPairedShare, kPairedPriorFailures, kPairedPriorSuccesses);
  PairedStage ps(runs("paired") ? kPairedRuns : 0);
  double paired_alpha = 0;
  for (const auto& m : sequential_evidence(ps.in))
    if (m.name == "paired") paired_alpha = m.alpha;
  for (double p : kBaselineRates) {
    if (!runs("paired")) break;
    int64_t rejected = 0;
    for (int s = 0; s < stages; ++s) rejected += ps.run(p, p, rng).has_value();
    const auto ci = stats::wilson_interval(rejected, stages, 0.95);
    std::vector<int64_t> at;
    for (int s = 0; s < stages; ++s)
      if (auto n = ps.run(4 * p, p, rng)) at.push_back(*n);
    std::printf(
        "  both failing %4.1f%%: %lld of %d rejected (%.3f%%, 95%% interval %.3f%%..%.3f%%), alpha share %.3f%%; "
        "candidate at 4x (%4.1f%%): rejected %6.2f%%, candidate attempts to reject: median %.0f, p90 %.0f\n",
        p * 100, static_cast<long long>(rejected), stages, 100.0 * static_cast<double>(rejected) / stages, ci.lo * 100,
        ci.hi * 100, paired_alpha * 100, 4 * p * 100, 100.0 * static_cast<double>(at.size()) / stages,
        quantile(at, 0.5), quantile(at, 0.9));
  }

  // The latency SLO measure.
  constexpr int64_t kSloHorizon = 500;
  constexpr double kScales[] = {1.5, 2.0, 3.0};
  for (int64_t m : {40, 200}) {
    if (!runs("slo")) break;
    SloStage ss(m, kSloHorizon);
    double budget = 0;
    int64_t rejected = 0;
    for (int s = 0; s < stages; ++s) rejected += ss.run(1.0, rng, budget).has_value();
    const auto ci = stats::wilson_interval(rejected, stages, 0.95);
    std::printf(
        "latency_slo, history baseline of %lld rows (budget %.1f%%): same speed %lld of %d rejected (%.3f%%, 95%% "
        "interval %.3f%%..%.3f%%)\n",
        static_cast<long long>(m), budget * 100, static_cast<long long>(rejected), stages,
        100.0 * static_cast<double>(rejected) / stages, ci.lo * 100, ci.hi * 100);
    for (double scale : kScales) {
      std::vector<int64_t> at;
      for (int s = 0; s < stages; ++s)
        if (auto n = ss.run(scale, rng, budget)) at.push_back(*n);
      std::printf("  %.1fx slower: rejected %6.2f%% within %lld; rows to reject: median %.0f, p90 %.0f\n", scale,
                  100.0 * static_cast<double>(at.size()) / stages, static_cast<long long>(kSloHorizon),
                  quantile(at, 0.5), quantile(at, 0.9));
    }
  }
  return 0;
}
