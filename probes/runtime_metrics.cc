#include "probes/runtime_metrics.h"

#include <cmath>
#include <string_view>

namespace soak::probes {

namespace {
// Every sample of the series summed (vLLM writes one per engine / model name).
std::optional<int64_t> summed(const PromText& prom, std::string_view name) {
  std::optional<double> total;
  for (const auto& s : prom.samples)
    if (s.name == name && std::isfinite(s.value)) total = total.value_or(0) + s.value;
  if (!total) return std::nullopt;
  return static_cast<int64_t>(std::llround(*total));
}
}  // namespace

QueueDepth queue_depth_from_metrics(RuntimeKind kind, const PromText& prom) {
  switch (kind) {
    case RuntimeKind::LlamaCpp:
      return {summed(prom, "llamacpp:requests_processing"), summed(prom, "llamacpp:requests_deferred")};
    case RuntimeKind::Vllm:
      return {summed(prom, "vllm:num_requests_running"), summed(prom, "vllm:num_requests_waiting")};
    case RuntimeKind::RapidMlx:
      return {summed(prom, "rapid_mlx_requests_running"), summed(prom, "rapid_mlx_requests_waiting")};
    default: return {};
  }
}

SpecCounters spec_counters_from_metrics(RuntimeKind kind, const PromText& prom) {
  switch (kind) {
    case RuntimeKind::Vllm:
      return {summed(prom, "vllm:spec_decode_num_draft_tokens_total"),
              summed(prom, "vllm:spec_decode_num_accepted_tokens_total"),
              summed(prom, "vllm:spec_decode_num_drafts_total")};
    case RuntimeKind::RapidMlx: {
      auto attempts = summed(prom, "rapid_mlx_spec_decode_attempts_total");
      return {attempts, summed(prom, "rapid_mlx_spec_decode_accepts_total"), attempts};
    }
    default: return {};
  }
}

}  // namespace soak::probes
