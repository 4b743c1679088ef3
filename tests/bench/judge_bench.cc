// Judge speed on a week of one candidate: prints figures, asserts nothing.
//
//   judge_bench [--print]   (--print also dumps the verdicts' evidence)
//
// Soak: 30 locators x ~1,000 probe rows over 7 days (about 30k rows), process
// and host samples every 5 s (about 121k each). Canary: the same 30 locators
// with as many interleaved baseline rows.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>

#include "judges/judge.h"
#include "tests/unit/judge_rows.h"

using namespace soak;
using namespace soak::testing;

namespace {

constexpr int kLocators = 30;
constexpr int64_t kWeekMs = 7 * kDayMs;
constexpr int64_t kSampleEveryMs = 5'000;
constexpr int kRuns = 5;

Rows traffic(int64_t candidate, int64_t first_id, double ttft_ms, int64_t seed) {
  Rows rows{candidate, first_id, kT0, kWeekMs / (kLocators * 1000)};
  for (int i = 0; i < kLocators * 1000; ++i) {
    const int loc = i % kLocators;
    const auto cache = loc % 3 == 0 ? CacheState::Fresh : CacheState::Repeat;
    rows.perf(ProbeKind::LongContext, "long_context/" + std::to_string(1024 << (loc % 8)) + "/" + std::to_string(loc),
              jittered(Perf{.ttft_ms = ttft_ms * (1 + loc)}, seed + i), cache);
  }
  return rows;
}

double millis(std::chrono::steady_clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

void time_judge(const char* what, const JudgeInput& in, bool print) {
  VerdictRow v;
  double best = 1e300;
  for (int run = 0; run < kRuns; ++run) {
    auto t0 = std::chrono::steady_clock::now();
    v = judge_stage(in);
    best = std::min(best, millis(std::chrono::steady_clock::now() - t0));
  }
  std::printf(
      "%-7s %6zu candidate rows, %6zu baseline rows, %6zu process + %6zu host samples: best of %d %.1f ms, "
      "%zu metrics, %s\n",
      what, in.candidate_rows.size(), in.baseline_rows.size(), in.process_samples.size(), in.host_samples.size(), kRuns,
      best, v.metrics.size(), std::string(to_string(v.state)).c_str());
  if (!print) return;
  std::printf("  reason: %s\n", v.reason.c_str());
  for (const auto& m : v.metrics)
    std::printf("  %-12s %s: %s\n", std::string(to_string(m.result)).c_str(), m.metric.c_str(), m.reason.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  const bool print = argc > 1 && std::strcmp(argv[1], "--print") == 0;

  JudgeInput soak = input_for(StageKind::Soak);
  soak.candidate_rows = traffic(kCandidate, 1, 200, 1).rows;
  int64_t id = 1;
  for (int64_t t = 0; t < kWeekMs; t += kSampleEveryMs, ++id) {
    soak.process_samples.push_back(process_sample(id, kT0 + t, 20'000 * (1 + 0.01 * wobble(id))));
    soak.host_samples.push_back(host_sample(id, kT0 + t, 100));
  }
  time_judge("soak", soak, print);

  JudgeInput canary = input_for(StageKind::Canary);
  canary.candidate_rows = soak.candidate_rows;
  canary.baseline_rows = traffic(kBaseline, 1'000'000, 190, 77).rows;
  time_judge("canary", canary, print);
  return 0;
}
