// Sleep/wake and daemon gaps. Missed sample slots are never backfilled; they
// are written as "gap" events with their length so a stage can be extended or
// judged inconclusive (docs/DESIGN.md §3.7).
//
// At each sampling tick the detector compares the Clock's three readings with
// the previous tick's:
//   boot - mono grew   -> the host slept in between (cause "sleep")
//   boot grew by more than the late tolerance without sleep -> the daemon was
//                         stalled: stopped, blocked loop, starved (cause "stall")
//   wall moved differently from boot -> the wall clock was stepped: a
//                         "clock_step" event (rows are stamped with wall time,
//                         so a step shifts windows; it is not a gap)
// At daemon start, the time since the last stored sample is a "gap" with
// cause "daemon_down" (nothing but wall time survives a restart).
//
// Event detail: {"cause", "missed_slots", "slept_ms", "from_ms", "to_ms"};
// duration_ms = the time between the two samples around the gap.
//
// Pure: takes Instants as values. Threading: daemon loop thread.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "core/clock.h"
#include "core/types.h"

namespace soak {

// A slot is missed when a tick comes this much later than the interval.
inline constexpr double kGapLateFactor = 1.5;
// Wall and boot clocks disagreeing by more than this between ticks is a step.
inline constexpr int64_t kClockStepMinMs = 2'000;

class GapDetector {
 public:
  GapDetector(int64_t interval_ms, std::optional<int64_t> host_id);

  // First call after the daemon starts. `last_sample_wall_ms`: the newest
  // stored sample from an earlier run, if any.
  std::vector<Event> start(const Instant& now, std::optional<int64_t> last_sample_wall_ms);

  // At every sampling tick (after start()).
  std::vector<Event> tick(const Instant& now);

  // The total time lost to gaps so far (for stage extension).
  int64_t gap_ms_total() const { return gap_ms_total_; }

 private:
  Event gap_event(const char* cause, int64_t from_ms, int64_t to_ms, int64_t length_ms, int64_t slept_ms);

  int64_t interval_ms_;
  std::optional<int64_t> host_id_;
  std::optional<Instant> prev_;
  int64_t gap_ms_total_ = 0;
};

}  // namespace soak
