// Stage plans and the pure scheduling function.
//
// A stage runs a few tasks, each on its own cadence, aligned to the stage's
// start: task slot k falls at started + k * every. next_due() is a pure
// function of (plan, task states, stage start, now): it never reads a clock and
// never backfills — if the daemon was down or the host asleep across several
// slots, only the current slot runs, and the missing ones stay missing (they
// lower coverage, they are not made up with a burst of catch-up probes).
//
// Thread-agnostic, no I/O.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "core/config.h"
#include "core/tasks.h"
#include "core/types.h"

namespace soak {

// What one run of a task reported back (campaigns/task_runner.h runs it):
// the rows it wrote and their outcomes, which the campaign track reads.
struct TaskReport {
  std::vector<int64_t> row_ids;   // probe_results rows written (ascending)
  std::vector<Outcome> outcomes;  // one per row, same order
  std::vector<ProbeKind> kinds;   // one per row, same order
  std::string detail;             // short summary for the log
};

// Heavy tasks (long prefill, bursts) never overlap on one host.
enum class Weight { Light, Heavy };
// Opening: once, before anything else of the stage; nothing else is due
// until it has ended (the canary's warm-up, then its first golden-set run;
// several run in plan order). Closing: once, when the stage has reached its
// end and nothing else of it runs, before it is judged (the golden set at the
// canary's and the soak's end); next_due() never lists it: closing_due() does.
enum class Repeat { Once, Periodic, Continuous, Opening, Closing };
// Whether a canary opens with a warm-up (docs/DESIGN.md §2.15): a managed or
// first candidate's runtime may have just loaded its model, and the first
// timed requests would measure the page-in, not the build.
enum class Warmup { None, Opening };

struct TaskSpec {
  TaskKind kind = TaskKind::Scrape;
  Repeat repeat = Repeat::Periodic;
  int64_t every_ms = 0;  // Periodic: slot length
  int64_t pause_ms = 0;  // Continuous: pause after each run
  Weight weight = Weight::Light;
};

struct StagePlan {
  StageKind stage = StageKind::Smoke;
  std::vector<TaskSpec> tasks;
  // Index into tasks of the heartbeat whose slots measure coverage, if any.
  std::optional<size_t> heartbeat;
};

// Tasks that run nothing for `workload` are left out of the plan. `warmup`
// applies to a canary only. With s.equivalence.enabled the canary runs the
// golden set at its start (an Opening task after any warm-up) and its end, the
// soak at its end (Closing tasks); heavy, so that no other candidate's heavy
// work shares the host with them (docs/DESIGN.md §3.13).
StagePlan plan_for(StageKind stage, const CampaignSettings& s, WorkloadKind workload = WorkloadKind::Chat,
                   Warmup warmup = Warmup::None);

// What the scheduler remembers per task of a running stage. Rebuilt from the
// store on restart (the last slot served is derivable from stored rows).
struct TaskState {
  int64_t runs = 0;                    // runs completed in this stage
  std::optional<int64_t> last_slot;    // Periodic: slot index last served
  std::optional<int64_t> last_end_ms;  // Continuous: when the last run ended
  bool running = false;
  // A heavy task held back by the host's heavy gate (docs/DESIGN.md §3.7):
  // since when it has waited this time (cleared when it starts), how many
  // times it had to wait, for how long in all, and its longest wait.
  std::optional<int64_t> waiting_since_ms;
  int64_t waits = 0;
  int64_t waited_ms = 0;
  int64_t longest_wait_ms = 0;
};

struct Due {
  size_t task = 0;   // index into plan.tasks
  int64_t slot = 0;  // Periodic: slot index; Continuous/Once: run number
};

struct DueSet {
  std::vector<Due> due;                 // runnable now, in plan order
  std::optional<int64_t> next_wake_ms;  // earliest future time something becomes due
  std::vector<size_t> held;             // heavy tasks due now and held back by the gate
};

enum class HeavyGate { Free, Busy };

// Pure: which tasks are due at `now`. A heavy task that is due while the host's
// heavy gate is busy is left out and listed in `held` (it stays due and runs
// when the gate frees, still serving its slot unless that slot has passed).
// Of several heavy tasks due at once the one that has waited longest goes
// first (plan order among equals); the others are held.
DueSet next_due(const StagePlan& plan, const std::vector<TaskState>& states, int64_t stage_started_ms, int64_t now_ms,
                HeavyGate heavy);

// The Closing task to run next, once the stage is at its end: the first in
// plan order not yet run nor running (nullopt: none left).
std::optional<size_t> closing_due(const StagePlan& plan, const std::vector<TaskState>& states);

// Marks a task started / finished in `states` (keeps the slot bookkeeping in one place).
// mark_started also ends a heavy task's wait, at `now_ms`.
void mark_started(std::vector<TaskState>& states, const Due& d, int64_t now_ms = 0);
// Heavy tasks held at `now_ms` start (or go on) waiting.
void mark_held(std::vector<TaskState>& states, const std::vector<size_t>& held, int64_t now_ms);
void mark_finished(std::vector<TaskState>& states, size_t task, int64_t now_ms);

// Coverage of a stage: heartbeat slots served / heartbeat slots in the nominal
// length (capped at 1). A stage without a heartbeat has coverage 1.
double coverage(const StagePlan& plan, const std::vector<TaskState>& states, int64_t length_ms);
int64_t nominal_slots(const TaskSpec& t, int64_t length_ms);

// Where a stage stands on its clock.
enum class StageClock {
  Running,      // before its nominal end
  Complete,     // past its nominal end with enough coverage: judge it
  Extended,     // past its nominal end, coverage short: keep running to make up gaps
  DeadlineHit,  // past its deadline with coverage short: inconclusive
};
StageClock stage_clock(const StageRow& stage, double coverage, double min_coverage, int64_t now_ms);

// Deadline of a stage started at `started_ms`: nominal length plus the grace
// allowed for making up gaps.
int64_t stage_deadline(int64_t started_ms, int64_t length_ms, double grace_fraction);

inline constexpr int64_t kNightlyWindowLengthMs = 4 * kHour;

// Nightly window: the earliest time >= now at which a canary may start; the
// window opens at "HH:MM" and stays open kNightlyWindowLengthMs.
// `window` is "now" or "HH:MM" local time; `utc_offset_minutes` is the local
// offset at `now` (east of UTC positive).
int64_t next_window_start(int64_t now_ms, const std::string& window, int utc_offset_minutes);

}  // namespace soak
