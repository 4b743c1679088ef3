// The heavy_wait events (docs/DESIGN.md §3.7): a heavy task held for the
// host's heavy gate begins a wait, and ends it when it starts. The campaign
// track writes one event at each; after a restart it counts the stage's
// waits again from them, so the judge and `soakctl explain` name the same
// waits as before the restart.
//
// Pure; thread-agnostic.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/types.h"
#include "schedules/plan.h"

namespace soak {

enum class WaitPhase { Began, Ended };

// The detail JSON of a heavy_wait event: task, wait ("began" / "ended"),
// stage and stage id. The length of an ended wait is the event's duration.
std::string heavy_wait_detail(TaskKind task, WaitPhase phase, StageKind stage, int64_t stage_id);

// The waits of the stage `stage_id` again, from its heavy_wait events, into
// `tasks` (one per task of `plan`). A wait still open when the daemon went
// away ends at `last_ms` (the stage's last activity before it, or the wait's
// own start if later): the time away is the restart's gap, not a wait.
// Returns the waits it so closed (task index, length), for the caller to
// store their "ended" events: the next restart then counts each once.
struct ClosedWait {
  size_t task = 0;
  int64_t length_ms = 0;
};
std::vector<ClosedWait> resume_heavy_waits(const StagePlan& plan, int64_t stage_id, const std::vector<Event>& events,
                                           int64_t last_ms, std::vector<TaskState>& tasks);

}  // namespace soak
