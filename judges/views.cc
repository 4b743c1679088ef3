// The judge's views for readers (judges/views.h), built from the same
// parts the judges use (judge_internal.h).
#include "judges/views.h"

#include <algorithm>

#include "judges/internal.h"

namespace soak {

using namespace judge_detail;

std::vector<ComparedSamples> compared_samples(const JudgeInput& in) {
  const Context c(in);
  // What judge_compare compares: no warm-up rows, no rows measured hot (judges/thermal.cc).
  const CoolRows cool = cool_rows(c);
  const Pools cand = pool_rows(cool.cand.rows);
  const Pools base = pool_rows(cool.base.rows);
  const std::vector<const ProbeResult*> none;
  std::vector<ComparedSamples> out;
  for (const auto& [loc, rows] : cand) {
    if (!perf_judged(loc.kind)) continue;
    auto it = base.find(loc);
    const auto& base_rows = it == base.end() ? none : it->second;
    for (const PerfMetric* pm : kPerfMetrics) {
      if (pm->fresh_only && loc.cache_state != CacheState::Fresh) continue;
      Extracted ex = extract(*pm, {&rows, &base_rows});
      if (ex.values[0].empty()) continue;  // as judge_compare: the workload does not produce the figure
      ComparedSamples s;
      s.metric = std::string(pm->name) + "/" + locator_label(loc);
      s.figure = std::string(pm->name);
      s.workload = std::string(loc.workload_id);
      s.kind = loc.kind;
      s.candidate = std::move(ex.values[0]);
      s.baseline = std::move(ex.values[1]);
      std::sort(s.candidate.begin(), s.candidate.end());
      std::sort(s.baseline.begin(), s.baseline.end());
      s.source = std::string(ex.source);
      out.push_back(std::move(s));
    }
  }
  return out;
}

FootprintTrend footprint_trend(const JudgeInput& in) {
  FootprintTrend t;
  std::string_view source;
  const auto series = footprint_series(in, source);
  t.source = std::string(source);
  t.confidence = 1 - in.recipe.judge.alpha;
  if (series.empty()) return t;
  t.t0_ms = series.front().t;
  for (const auto& p : series) {
    t.t_ms.push_back(p.t);
    t.mb.push_back(p.v);
  }
  block_medians(series, t.block_x_h, t.block_y_mb);
  t.fit = stats::theil_sen(t.block_x_h, t.block_y_mb, t.confidence);
  return t;
}

}  // namespace soak
