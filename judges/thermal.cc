// Speed comparisons on a host at one thermal state (docs/DESIGN.md §2.15):
// the host samples carry the thermal pressure level (platform/thermal.h); a
// timed row during which any sample of its host read above nominal — the one
// in effect when it started, or one taken while it ran — is left out of every
// candidate/baseline comparison (judges/compare.cc), on both sides. A stage
// where more than kMaxHotShare of the candidate's timed rows were hot is
// inconclusive: what is left would compare a cool minority.
//
// Rows of a host whose samples never read a level (Linux without zones, a
// store from before the level was sampled) are kept as they are, and nothing
// is said: those judgments are unchanged.
#include <algorithm>

#include "judges/internal.h"
#include "judges/overlap.h"

namespace soak::judge_detail {

namespace {

struct LevelAt {
  int64_t host_id;
  int64_t wall_ms;
  int level;
};

bool timed(const ProbeResult& r) { return perf_judged(r.kind) && r.t_done_us.has_value(); }

}  // namespace

ThermalSplit leave_out_hot(const std::vector<const ProbeResult*>& rows, const std::vector<HostSample>& samples,
                           const std::optional<HostSample>& before) {
  std::vector<LevelAt> levels;
  for (const auto& s : samples)
    if (s.thermal_level) levels.push_back({s.host_id, s.wall_ms, *s.thermal_level});
  if (before && before->thermal_level) levels.push_back({before->host_id, before->wall_ms, *before->thermal_level});
  ThermalSplit out;
  out.read = !levels.empty();
  if (!out.read) {
    out.rows = rows;
    return out;
  }
  std::sort(levels.begin(), levels.end(), [](const LevelAt& a, const LevelAt& b) {
    return std::tie(a.host_id, a.wall_ms) < std::tie(b.host_id, b.wall_ms);
  });
  const auto nominal = static_cast<int>(ThermalLevel::Nominal);
  for (const ProbeResult* r : rows) {
    if (!timed(*r)) {
      out.rows.push_back(r);
      continue;
    }
    ++out.timed;
    const auto [start, end] = wall_span(*r);
    // The sample in effect at the start (the last one at or before it), then those taken while it ran.
    auto it = std::upper_bound(levels.begin(), levels.end(), LevelAt{r->host_id, start, 0},
                               [](const LevelAt& a, const LevelAt& b) {
                                 return std::tie(a.host_id, a.wall_ms) < std::tie(b.host_id, b.wall_ms);
                               });
    if (it != levels.begin() && std::prev(it)->host_id == r->host_id) --it;
    int worst = nominal;
    for (; it != levels.end() && it->host_id == r->host_id && it->wall_ms <= end; ++it)
      worst = std::max(worst, it->level);
    if (worst > nominal) {
      out.hot_ids.push_back(r->id);
      out.worst = std::max(out.worst, worst);
    } else {
      out.rows.push_back(r);
    }
  }
  return out;
}

CoolRows cool_rows(const Context& c) {
  const bool history = c.in.recipe.baseline_mode == BaselineMode::History;
  const auto& base_samples = history ? c.in.baseline_host_samples : c.in.host_samples;
  const auto& base_before = history ? c.in.baseline_host_sample_before : c.in.host_sample_before;
  return CoolRows{leave_out_hot(measured_rows(c.cand), c.in.host_samples, c.in.host_sample_before),
                  leave_out_hot(measured_rows(c.base), base_samples, base_before)};
}

void judge_thermal(const Context& c, const ThermalSplit& cand, const ThermalSplit& base, Judgement& j) {
  if (!cand.read && !base.read) return;
  const auto n_hot = static_cast<int64_t>(cand.hot_ids.size());
  const double share = cand.timed ? static_cast<double>(n_hot) / static_cast<double>(cand.timed) : 0;
  const std::string worst(
      to_string(thermal_level_of(std::max(cand.worst, base.worst)).value_or(ThermalLevel::Nominal)));
  std::string reason = format("%lld of %lld timed row(s) measured above nominal thermal pressure",
                              static_cast<long long>(n_hot), static_cast<long long>(cand.timed));
  if (n_hot) reason += " (" + id_list(cand.hot_ids) + "; up to " + worst + ")";
  reason +=
      format(", %lld baseline row(s); left out of every speed comparison", static_cast<long long>(base.hot_ids.size()));
  const bool too_hot = share > kMaxHotShare;
  auto m = metric("thermal", too_hot ? MetricResult::Insufficient : MetricResult::Pass, reason);
  m.n = cand.timed;
  m.n_baseline = base.timed;
  set_numbers(m, share, 0, 0, 0, kMaxHotShare, 1);
  j.add(std::move(m));
  if (too_hot)
    j.find(
        Severity::Inconclusive,
        format("thermal pressure above nominal during %s of the %s's timed rows (%lld of %lld, more than %s): "
               "its speed cannot be compared; run it again on a cool host",
               pct(share).substr(1).c_str(), std::string(to_string(c.in.recipe.stage)).c_str(),
               static_cast<long long>(n_hot), static_cast<long long>(cand.timed), pct(kMaxHotShare).substr(1).c_str()));
}

}  // namespace soak::judge_detail
