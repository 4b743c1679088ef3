// What the judge looked at, for readers that draw it (reports/): the samples a
// canary comparison takes per locator and figure, and the soak's footprint
// trend as the judge fits it. Computed by the judge's own code from the same
// JudgeInput, so a chart shows the numbers that decided, not a second
// estimate of them (docs/DESIGN.md §3.5, §3.6). Pure; thread-agnostic.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "judges/judge.h"
#include "judges/stats.h"

namespace soak {

// One figure of one locator: the candidate's and the baseline's values (sorted),
// as judge_compare takes them. `metric` is the name of the verdict's row for
// it ("ttft_ms/<workload>{...}"); `figure` the metric family ("ttft_ms",
// "prompt_tps", "decode_tps", "wall_ms"); `source` "client" or "server".
struct ComparedSamples {
  std::string metric;
  std::string figure;
  std::string workload;
  ProbeKind kind = ProbeKind::Health;
  std::vector<double> candidate;
  std::vector<double> baseline;
  std::string source;
};
// Every locator of the candidate's rows and every figure it produces, with the
// baseline's rows of the same locator (empty when there are none).
std::vector<ComparedSamples> compared_samples(const JudgeInput& in);

// The soak footprint trend: the series the judge reads (MB per sample time,
// the candidate's processes summed), the block medians it fits (x in hours
// since `t0_ms`) and the fit, at the judge's confidence (1 - alpha).
struct FootprintTrend {
  std::string source;  // "footprint" | "resident"
  int64_t t0_ms = 0;
  std::vector<int64_t> t_ms;
  std::vector<double> mb;
  std::vector<double> block_x_h, block_y_mb;
  stats::TheilSen fit;
  double confidence = 0;
};
// Empty series (no process samples of the candidate): no blocks, a zero fit.
FootprintTrend footprint_trend(const JudgeInput& in);

}  // namespace soak
