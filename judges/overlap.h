// A canary's timed rows that overlapped another candidate's heavy work on the
// same host (docs/DESIGN.md §3.7). Canaries running at once keep their light
// probes (holding them made two canaries starve each other), so a functional
// or stream row of one may run while another's long-context prefill, burst or
// capacity check loads the host: its timing measured the other's work. Such
// rows are marked (ProbeResult::overlapped_heavy, never stored: recomputed from
// the stored rows on every judgment, so explain says the same) and left out
// of the comparisons with the baseline; their outcomes still count.
//
// Pure; thread-agnostic.
#pragma once

#include <array>
#include <cstdint>
#include <utility>
#include <vector>

#include "core/types.h"

namespace soak {

// The kinds of heavy work (long context, burst, capacity, prefix reuse): what
// loads the host for long enough to skew another's timing.
inline constexpr std::array<ProbeKind, 4> kHeavyProbeKinds = {ProbeKind::LongContext, ProbeKind::Burst,
                                                              ProbeKind::Capacity, ProbeKind::SharedPrefix};
bool is_heavy_kind(ProbeKind k);

// A row's [start, end] in wall ms; a row with no end time covers its start only.
std::pair<int64_t, int64_t> wall_span(const ProbeResult& r);

// Marks the rows of `rows` whose span (start to its end) overlaps the span of
// a heavy row in `others`; returns how many it marked. Rows of the same
// candidate are never marked by each other.
int64_t mark_overlapped_heavy(std::vector<ProbeResult>& rows, const std::vector<ProbeResult>& others);

}  // namespace soak
