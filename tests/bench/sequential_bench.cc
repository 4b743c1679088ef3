// The sequential failure test in virtual time (judges/sequential.h): prints
// figures, asserts nothing.
//
//   sequential_bench [--stages N] [--horizon ROWS] [--seed S]
//
// Each simulated stage is a canary whose functional completions fail
// independently at a rate p, one row a second of virtual time, judged by the
// same sequential_evidence() the daemon calls, up to `horizon` rows. Failures
// are HTTP 500s, so the pooled, 5xx and functional measures all see them.
// At p = the budget it prints how often a stage is rejected anyway (the
// false-reject rate, which judge.alpha bounds) with its 95 % Wilson interval;
// above it, the median and 90th percentile of the attempts seen when the
// stage was rejected, and the share rejected within the horizon.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
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
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--stages")) stages = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--horizon")) horizon = std::atoll(argv[i + 1]);
    if (!std::strcmp(argv[i], "--seed")) seed = std::strtoull(argv[i + 1], nullptr, 10);
  }
  const JudgeRules rules;
  std::printf("sequential test: %d stages of up to %lld functional completions each, alpha %.3g, prior Beta(%g, %g)\n",
              stages, static_cast<long long>(horizon), rules.alpha, kSequentialPriorFailures,
              kSequentialPriorSuccesses);
  Random rng{seed};
  for (double budget : kBudgets) {
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
  return 0;
}
