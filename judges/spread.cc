// A history baseline's own stage-to-stage spread (docs/DESIGN.md §3.5): the
// seeds measure +-15 % between sessions on one machine (S4:183), so a
// comparison with stored rows of another session allows at least as much
// drift as the baseline showed between its own stored stages.
#include <algorithm>
#include <map>

#include "judges/internal.h"
#include "judges/stats.h"

namespace soak::judge_detail {

StageSpread stage_spread(const PerfMetric& m, const std::vector<const ProbeResult*>& base, int min_samples) {
  std::map<int64_t, std::vector<const ProbeResult*>> by_stage;
  for (const ProbeResult* r : base)
    if (r->stage_id) by_stage[*r->stage_id].push_back(r);
  std::vector<const std::vector<const ProbeResult*>*> sets;
  for (const auto& [id, rows] : by_stage) sets.push_back(&rows);
  StageSpread out;
  if (sets.size() < 2) {
    out.stages = static_cast<int>(sets.size());
    return out;
  }
  // One source (server or client figures) for every stage, as for the comparison.
  const Extracted ex = extract(m, sets);
  std::vector<double> medians;
  for (const auto& v : ex.values)
    if (static_cast<int>(v.size()) >= min_samples) medians.push_back(stats::median(v));
  out.stages = static_cast<int>(medians.size());
  if (medians.size() < 2) return out;
  const auto [lo, hi] = std::minmax_element(medians.begin(), medians.end());
  out.low = *lo;
  out.high = *hi;
  out.fraction = *lo > 0 ? (*hi - *lo) / *lo : 0;
  return out;
}

}  // namespace soak::judge_detail
