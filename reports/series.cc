#include "reports/series.h"

#include <algorithm>

#include "judges/stats.h"

namespace soak::report {

std::vector<Bucket> downsample(std::vector<TimedValue> points, int64_t from_ms, int64_t to_ms, int buckets) {
  std::vector<Bucket> out;
  if (buckets < 1 || to_ms < from_ms) return out;
  // Bucket b is [from + ceil(b * span / buckets), from + ceil((b + 1) * span / buckets)):
  // with floor((t - from) * buckets / span) as a point's bucket, every point
  // lies inside the bucket it is counted in. A point at to_ms goes in the last.
  const int64_t span = std::max<int64_t>(1, to_ms - from_ms);
  const auto edge = [&](int64_t b) { return from_ms + (b * span + buckets - 1) / buckets; };
  std::vector<std::vector<double>> by(static_cast<size_t>(buckets));
  for (const auto& p : points) {
    if (p.t_ms < from_ms || p.t_ms > to_ms) continue;
    const auto b = static_cast<size_t>((p.t_ms - from_ms) * buckets / span);
    by[std::min(b, by.size() - 1)].push_back(p.v);
  }
  for (size_t b = 0; b < by.size(); ++b) {
    auto& vals = by[b];
    if (vals.empty()) continue;
    std::sort(vals.begin(), vals.end());
    Bucket k;
    k.t0_ms = edge(static_cast<int64_t>(b));
    k.t1_ms = edge(static_cast<int64_t>(b + 1));
    k.min = vals.front();
    k.max = vals.back();
    k.median = stats::quantile_sorted(vals, 0.5);
    k.n = static_cast<int64_t>(vals.size());
    out.push_back(k);
  }
  return out;
}

Summary summarize(std::vector<double> values) {
  Summary s;
  if (values.empty()) return s;
  std::sort(values.begin(), values.end());
  s.n = static_cast<int64_t>(values.size());
  s.min = values.front();
  s.max = values.back();
  s.p5 = stats::quantile_sorted(values, 0.05);
  s.p25 = stats::quantile_sorted(values, 0.25);
  s.median = stats::quantile_sorted(values, 0.5);
  s.p75 = stats::quantile_sorted(values, 0.75);
  s.p95 = stats::quantile_sorted(values, 0.95);
  return s;
}

std::vector<double> thin(const std::vector<double>& sorted, size_t max_points) {
  if (sorted.size() <= max_points) return sorted;
  std::vector<double> out;
  if (max_points == 0) return out;
  if (max_points == 1) return {sorted[sorted.size() / 2]};
  out.reserve(max_points);
  for (size_t i = 0; i < max_points; ++i) out.push_back(sorted[i * (sorted.size() - 1) / (max_points - 1)]);
  return out;
}

}  // namespace soak::report
