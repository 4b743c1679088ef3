// One candidate's campaign as pure stage transitions (docs/DESIGN.md §3).
//
// A Track is what Campaigns remembers about one configured candidate: its
// stored candidate row, the stage it is in, that stage's plan and task states,
// and where the campaign stands (reading the build, staged, waiting for the
// canary window, done). The functions below take a track and `now` and return
// a Transition: the stage rows, verdict rows and events to write, the tasks to
// dispatch, and whether to judge, cut or start a stage. They change the track
// and nothing else: no store, no runner, no clock. Campaigns
// (campaigns/campaigns.h) does the I/O, applying a Transition in the order its
// fields are listed.
//
// A stage starts in two steps because the store gives the stage its id:
// open_stage() makes the row, the caller stores it, and enter_stage() makes the
// stored row the running stage.
//
// Thread-agnostic, no I/O; `now` is always a value.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/types.h"
#include "judges/judge.h"
#include "judges/recipe.h"
#include "schedules/managed_track.h"
#include "schedules/plan.h"

namespace soak {

inline constexpr int64_t kSmokeRetryMs = 15'000;  // unreachable smoke: try again after this
// The early check after clean work (docs/DESIGN.md §3.12): with a baseline,
// latency_slo and paired can cross on rows no one counts as failed (a slow
// clean row, a shadow run completing a pair), so clean work also asks for the
// check, once max(kEarlyCheckMinRows, n / kEarlyCheckGrowth) timed rows have
// come in since the check at n. A crossing is seen at most that many rows
// late, and a stage of n rows is read O(log n) times, not once a row.
inline constexpr int64_t kEarlyCheckMinRows = 16;
inline constexpr int64_t kEarlyCheckGrowth = 4;

enum class Phase { ReadingBuild, Staged, WaitingCanary, Done };

struct Track {
  std::string name;
  CandidateSnapshot cfg;    // this candidate in the running config snapshot
  std::string config_hash;  // Config::candidate_hash of cfg (verdicts and recipes carry it)
  Phase phase = Phase::ReadingBuild;
  std::optional<CandidateRow> row;  // the candidate x build being judged
  bool from_build_change = false;   // replaced a judged build: its canary waits for the nightly window
  std::optional<int64_t> baseline_id;
  std::optional<StageRow> stage;  // the running stage, or the last one
  StagePlan plan;
  std::vector<TaskState> tasks;  // one per plan.tasks
  int64_t canary_not_before_ms = 0;
  std::optional<int64_t> smoke_retry_at_ms;
  bool extension_noted = false;
  // The running stage's end waits for evidence (docs/DESIGN.md §3.2): its
  // judgment found decisive rules short of it while more of that work was
  // coming. It is judged again once its timed rows grew past `recheck_rows`
  // or the clock passed `recheck_ms`, and for the last time at its deadline.
  struct EvidenceWait {
    std::vector<EvidenceGap> gaps;
    int64_t recheck_rows = 0;
    int64_t recheck_ms = 0;
  };
  std::optional<EvidenceWait> evidence_wait;
  // The running stage's timed rows (judges/judge.h perf_judged) so far (a
  // resumed stage starts from its stored rows), and that count at the last
  // early check.
  int64_t stage_rows = 0;
  int64_t rows_at_check = 0;
  std::optional<VerdictState> final_state;  // once Done
  std::optional<int64_t> shadow_live_ok;    // last shadow scrape of the baseline was clean (1) or not (0)
  // When this track last started a heavy task: among tracks whose heavy work
  // waits equally long, the one served least recently goes first.
  std::optional<int64_t> last_heavy_start_ms;

  // Build reads, driven by Campaigns.
  bool build_read_in_flight = false;
  int64_t next_build_check_ms = 0;
  std::optional<int64_t> first_build_attempt_ms;
  std::string last_build_error;

  // A managed candidate's runtime (schedules/managed_track.h); untouched for the others.
  ManagedState managed;
};

// Points a track at `c`, one candidate of `cfg` (new settings apply from now;
// a running stage keeps its start and deadline).
void set_config(Track& t, const ConfigSnapshot& cfg, const CandidateConfig& c);

// What to do, in this order.
struct Transition {
  std::optional<StageRow> close_stage;  // update: the stage that just ended
  std::vector<VerdictRow> verdicts;     // insert
  std::vector<Event> events;            // insert
  std::vector<std::string> notes;       // for the log
  bool cancel = false;                  // cut the track's runs in flight (recorded as cancelled_by_daemon)
  std::vector<Due> dispatch;            // run these tasks of the running stage (already marked started)
  bool check_hard_failures = false;     // a candidate failure came in: look for a hard failure in the rows
  std::optional<StageEnd> judge;        // judge the running stage on its stored rows, then stage_judged()
  std::optional<StageKind> start;       // start this stage next (open_stage(), store it, enter_stage())
  // After the rest: whether what the runtime was started with holds the
  // running stage (judges/floors.h launch hold), before any (more) probes.
  bool check_launch_hold = false;
};

std::optional<StageKind> next_stage(StageKind k);
// The order tracks are stepped in, so that the heavy gate serves candidates in
// the order their heavy work became due (docs/DESIGN.md §3.7): the track whose
// held heavy task has waited longest first, then the one served least
// recently, then by name.
bool heavy_turn_before(const Track& a, const Track& b);
// The oldest wait of a track's held heavy tasks (nullopt: none waits).
std::optional<int64_t> heavy_waiting_since(const Track& t);

// A task in flight on the host, as the heavy gate sees it.
struct RunningTask {
  std::string track;
  Weight weight = Weight::Light;
  bool canary = false;  // a canary's own run or its baseline's interleaved run
  bool traffic = true;  // sends inference requests (the heartbeat's scrape does not)
};
// The heavy gate as `t` sees it (docs/DESIGN.md §3.7): busy while `t` runs a
// heavy task (one per candidate); while another candidate's heavy task runs,
// when schedule.exclusive_heavy is set or that task is a canary's; and for a
// canary, while another candidate's gate or soak traffic runs (its timed rows
// overlap no such traffic, whatever exclusive_heavy says).
HeavyGate heavy_gate_for(const Track& t, const std::vector<RunningTask>& running, bool exclusive_heavy);
// Tasks whose runs are repeated against a live, promoted baseline in the same
// slot (interleaved A/B), so the canary compares like with like.
bool interleaves(TaskKind k);

// The previous promoted build's runtime beside a managed canary (ab
// "interleaved", docs/DESIGN.md §4.8), what to do with it now: Start (decide
// for this canary and launch it; stop one that runs for another row or
// baseline first), Stop (stop it if it runs and forget this canary's
// decision), or nothing. It is wanted from the moment the canary could start
// (`canary_due`, for a track waiting for its canary) until the canary ends;
// once decided for a canary it is not tried again within it.
enum class PreviousAction { None, Start, Stop };
PreviousAction previous_action(const Track& t, bool canary_due);
// A canary about to start waits while the previous build's runtime starts.
bool canary_waits_for_previous(const Track& t);

// The verdict row of the track's current stage (none yet: no stage), with its
// bookkeeping filled; `who` non-empty makes it an override.
VerdictRow verdict_for(const Track& t, VerdictState state, std::string reason, int64_t now, const std::string& who = "",
                       const std::string& why = "");

// Stage start: the row to store (no id yet), then the stored row entered.
StageRow open_stage(const Track& t, StageKind kind, int64_t now);
Transition enter_stage(Track& t, const StageRow& stored, int64_t now);

// What the running stage needs at `now`.
struct StepInputs {
  bool busy = false;                  // the track has runs in flight
  HeavyGate heavy = HeavyGate::Free;  // a heavy task runs on this host
  bool frozen = false;                // shutting down: dispatch nothing
  // Another candidate's canary measures its heavy work on this host (or is
  // about to): only the heartbeat runs; the rest waits (docs/DESIGN.md §3.7).
  bool hold_traffic = false;
};
// Smoke ends when its one pass ends (or it stays unreachable for its length);
// other stages run their plan until their clock says complete (judge), or
// extend past their nominal end to make up coverage, or heavy work that
// waited for the host and never ran (noted once, with an event), until their
// deadline (judge as timed out). Runs still in flight at
// the end are cut first; the judging waits for their completions.
Transition step_stage(Track& t, const StepInputs& in, int64_t now);

// The stage's judgment came back inconclusive for want of evidence alone
// (VerdictRow::awaiting_evidence): while the stage can run on before its
// deadline and its plan brings more of that work (or, for samples, time), the
// stage runs on instead of ending — a stage_extended event the first time,
// naming the rules — and is judged again when it has grown; nullopt when the
// judgment stands (no deadline left, nothing more coming).
std::optional<Transition> wait_for_evidence(Track& t, const VerdictRow& v, int64_t now);

// One of the track's own runs finished (a shadow baseline run is not).
// An unreachable smoke is retried after kSmokeRetryMs; a candidate failure
// asks for a hard-failure check, and so, after smoke and with a baseline, does
// clean work on the spacing of kEarlyCheckMinRows / kEarlyCheckGrowth.
Transition task_finished(Track& t, size_t task, const TaskReport& report, int64_t now);

// The judge's verdict on the running stage: close the stage, write the verdict
// (state "running" while the campaign goes on), then the next stage — the
// canary waits for the nightly window after a build change — or the end.
Transition stage_judged(Track& t, VerdictRow v, const ScheduleSettings& schedule, int utc_offset_minutes, int64_t now);

// An end the judge did not decide (abort, override, build replaced, removed
// from the config, unreachable): a running stage is closed (passed when
// promoted, else aborted) and the verdict written.
Transition end_campaign(Track& t, VerdictState state, const std::string& reason, int64_t now,
                        const std::string& who = "", const std::string& why = "");

// The judge's recipe for the running stage, its rows bounded by the stage start
// and `now`; a canary's baseline rows per `baseline` (none: no choice could be
// made). rows.max_ids is left to the caller (the store's, at judgment time),
// and so is the equivalence block's top-1 rule (the runtime's to say).
StoredRecipe recipe_for(const Track& t, StageEnd end, const std::optional<BaselineChoice>& baseline, int64_t now);

// After a restart: the running stage as stored, its task states rebuilt from
// the rows it already has (the last slot each task served) and from its
// heavy_wait events (`stage_events`, the candidate's since the stage started:
// how often and how long each heavy task waited for the host), and a gap
// event for the time the daemon was away.
Transition resume_stage(Track& t, const StageRow& running, const std::vector<ProbeResult>& stage_rows,
                        const std::vector<Event>& stage_events, int64_t now);
// After a restart between a passed stage and the next one.
Transition resume_after(Track& t, StageKind passed, int64_t now);

// A resumed stage whose managed runtime had to be started again (soakd stopped
// it, or crashed and stopped the orphan): one stage measures one process, so
// the stage is closed (aborted, with `reason` and a gap event) and the same
// stage starts over on the new process (docs/DESIGN.md §4.8).
Transition restart_stage(Track& t, const std::string& reason, int64_t now);

}  // namespace soak
