// Figures a runtime's own Prometheus text gives beside each answer's: its
// queue (running / waiting requests) and its speculative decoding counters.
// Pure functions over a parsed /metrics answer (probes/prometheus.h); which
// series a runtime writes is its entry's (probes/runtimes/), and the scrape
// probe (probes/probe_basic.cc) stores the figures on its row.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "probes/prometheus.h"

namespace soak::probes {

// The names of the series a runtime writes for what soakd reads from its
// /metrics (docs/DESIGN.md §7.2). Empty: the runtime does not expose it.
struct PromSeries {
  std::string_view running{};  // requests being served now (a gauge)
  std::string_view waiting{};  // requests queued for a slot (a gauge)
  // Speculative decoding counters, cumulative since the runtime started:
  // tokens drafted, drafted tokens accepted, and verify steps (drafts). A
  // chain drafter that drafts one token per attempt names its attempts for
  // both `drafted` and `drafts`.
  std::string_view drafted{};
  std::string_view accepted{};
  std::string_view drafts{};
  // Requests the runtime aborted because their client went away: the cancel
  // probe's proof that a cut request freed its slot (probes/probe_cancel.cc).
  std::string_view client_cancels{};
};

// The runtime's queue from its Prometheus text, each series summed over its
// samples (vLLM writes one per engine). Unknown: not exposed.
struct QueueDepth {
  std::optional<int64_t> running, waiting;
};
QueueDepth queue_depth_from_metrics(const PromSeries& series, const PromText& prom);

// Speculative decoding counters from its Prometheus text, read beside
// llama.cpp's per-answer draft_n / draft_n_accepted. Unknown: not exposed
// (no speculative decoding).
struct SpecCounters {
  std::optional<int64_t> drafted, accepted, drafts;
};
SpecCounters spec_counters_from_metrics(const PromSeries& series, const PromText& prom);

}  // namespace soak::probes
