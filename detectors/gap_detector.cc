#include "detectors/gap_detector.h"

#include <utility>

#include <nlohmann/json.hpp>

namespace soak {
namespace {

constexpr int64_t kNsPerMs = 1'000'000;

}  // namespace

GapDetector::GapDetector(int64_t interval_ms, std::optional<int64_t> host_id)
    : interval_ms_(interval_ms > 0 ? interval_ms : 1), host_id_(host_id) {}

Event GapDetector::gap_event(const char* cause, int64_t from_ms, int64_t to_ms, int64_t length_ms, int64_t slept_ms) {
  // Slots that should have had a sample strictly between the two samples.
  int64_t missed = length_ms / interval_ms_ - 1;
  if (missed < 1) missed = 1;
  gap_ms_total_ += length_ms;
  Event e;
  e.wall_ms = to_ms;
  e.host_id = host_id_;
  e.kind = EventKind::Gap;
  e.duration_ms = length_ms;
  e.detail_json = nlohmann::json{{"cause", cause},     {"missed_slots", missed}, {"slept_ms", slept_ms},
                                 {"from_ms", from_ms}, {"to_ms", to_ms},         {"interval_ms", interval_ms_}}
                      .dump();
  return e;
}

std::vector<Event> GapDetector::start(const Instant& now, std::optional<int64_t> last_sample_wall_ms) {
  std::vector<Event> out;
  prev_ = now;
  if (last_sample_wall_ms) {
    int64_t length = now.wall_ms - *last_sample_wall_ms;
    if (length > static_cast<int64_t>(interval_ms_ * kGapLateFactor)) {
      out.push_back(gap_event("daemon_down", *last_sample_wall_ms, now.wall_ms, length, 0));
    }
  }
  return out;
}

std::vector<Event> GapDetector::tick(const Instant& now) {
  std::vector<Event> out;
  if (!prev_) {
    prev_ = now;
    return out;
  }
  const Instant prev = *prev_;
  prev_ = now;
  int64_t elapsed_ms = (now.boot_ns - prev.boot_ns) / kNsPerMs;  // real time, sleep included
  int64_t awake_ms = (now.mono_ns - prev.mono_ns) / kNsPerMs;
  int64_t wall_ms = now.wall_ms - prev.wall_ms;
  if (elapsed_ms < 0 || awake_ms < 0) return out;  // not the same boot: nothing to compare
  int64_t slept_ms = elapsed_ms > awake_ms ? elapsed_ms - awake_ms : 0;

  if (elapsed_ms > static_cast<int64_t>(interval_ms_ * kGapLateFactor)) {
    // Mostly asleep: a sleep gap; otherwise the daemon was awake and did not sample.
    const char* cause = slept_ms * 2 >= elapsed_ms ? "sleep" : "stall";
    out.push_back(gap_event(cause, now.wall_ms - elapsed_ms, now.wall_ms, elapsed_ms, slept_ms));
  }
  int64_t step_ms = wall_ms - elapsed_ms;
  if (step_ms > kClockStepMinMs || step_ms < -kClockStepMinMs) {
    Event e;
    e.wall_ms = now.wall_ms;
    e.host_id = host_id_;
    e.kind = EventKind::ClockStep;
    e.detail_json =
        nlohmann::json{{"step_ms", step_ms}, {"wall_elapsed_ms", wall_ms}, {"elapsed_ms", elapsed_ms}}.dump();
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace soak
