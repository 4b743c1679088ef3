// Figures a runtime's own Prometheus text gives beside each answer's: its
// queue (running / waiting requests) and its speculative decoding counters.
// Pure functions over a parsed /metrics answer (probes/prometheus.h); the
// scrape probe (probes/probe_basic.cc) stores them on its row.
#pragma once

#include <cstdint>
#include <optional>

#include "core/types.h"
#include "probes/prometheus.h"

namespace soak::probes {

// The runtime's queue from its Prometheus text: llama.cpp
// llamacpp:requests_processing / requests_deferred, vLLM
// vllm:num_requests_running / waiting (summed over its engines' samples),
// Rapid-MLX rapid_mlx_requests_running / waiting. Unknown: not exposed.
struct QueueDepth {
  std::optional<int64_t> running, waiting;
};
QueueDepth queue_depth_from_metrics(RuntimeKind kind, const PromText& prom);

// Speculative decoding counters (cumulative since the runtime started) from
// its Prometheus text, read beside llama.cpp's per-answer draft_n /
// draft_n_accepted: vLLM vllm:spec_decode_num_draft_tokens_total /
// num_accepted_tokens_total / num_drafts_total; Rapid-MLX
// rapid_mlx_spec_decode_attempts_total / accepts_total (chain MTP: one
// drafted token per attempt). Unknown: not exposed (no speculative decoding).
struct SpecCounters {
  std::optional<int64_t> drafted, accepted, drafts;
};
SpecCounters spec_counters_from_metrics(RuntimeKind kind, const PromText& prom);

}  // namespace soak::probes
