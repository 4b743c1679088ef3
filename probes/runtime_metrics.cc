#include "probes/runtime_metrics.h"

#include <cmath>

namespace soak::probes {

namespace {
// Every sample of the series summed (vLLM writes one per engine / model name);
// a series the runtime does not name is unknown.
std::optional<int64_t> summed(const PromText& prom, std::string_view name) {
  if (name.empty()) return std::nullopt;
  std::optional<double> total;
  for (const auto& s : prom.samples)
    if (s.name == name && std::isfinite(s.value)) total = total.value_or(0) + s.value;
  if (!total) return std::nullopt;
  return static_cast<int64_t>(std::llround(*total));
}
}  // namespace

QueueDepth queue_depth_from_metrics(const PromSeries& series, const PromText& prom) {
  return {summed(prom, series.running), summed(prom, series.waiting)};
}

SpecCounters spec_counters_from_metrics(const PromSeries& series, const PromText& prom) {
  return {summed(prom, series.drafted), summed(prom, series.accepted), summed(prom, series.drafts)};
}

}  // namespace soak::probes
