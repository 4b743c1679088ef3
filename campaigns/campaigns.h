// Campaigns: each configured candidate taken through smoke -> canary -> gate ->
// soak, with its verdicts (docs/DESIGN.md §3). This is the I/O around the pure
// stage transitions of schedules/campaign_track.h: it reads and writes the store,
// reads builds and dispatches tasks through the TaskRunner, and applies each
// Transition.
//
// For every candidate in the config Campaigns keeps a Track: it reads the
// runtime's build (a new build is a new candidate row, judged against the
// previous promoted build), starts stages, dispatches the tasks that are due,
// checks each result for hard failures, judges a stage when its clock says so,
// and writes stages, verdicts and events to the store. A restart resumes every
// stage from the store with its original start and deadline; missed slots are
// not backfilled. Across tracks it keeps one heavy task per host (unless
// schedule.exclusive_heavy is false), served in the order it became due, a
// canary's heavy work alone on the host (docs/DESIGN.md §3.7), at most
// schedule.max_concurrent_canaries canaries, and the interleaved baseline runs.
//
// Files: campaigns.cc (ticks, dispatch, completions, judging, resume, reload),
// campaigns/builds.cc (build reads, candidate rows, baseline choice),
// campaigns/controls.cc (soakctl start / abort / promote),
// campaigns/managed_runtimes.cc (managed candidates' runtimes, through a RuntimeControl).
//
// Threading: one thread (the daemon's loop). Ownership: borrows the Store, the
// Clock and the TaskRunner for its lifetime; holds the running ConfigSnapshot
// (each track holds its candidate's part of it). Time: tick() and friends take
// `now` as a value; the Clock is read only for completions, which runners
// report without a time.
// Failure: store errors are logged and the affected step is retried on the next
// tick; nothing throws.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "campaigns/recipe_store.h"
#include "campaigns/runtime_control.h"
#include "campaigns/task_runner.h"
#include "core/config.h"
#include "core/service.h"
#include "schedules/campaign_track.h"
#include "storage/outbox.h"
#include "storage/store.h"

namespace soak {

// A verdict other than `running` (promoted, rejected, hold, inconclusive,
// blocked) as Campaigns writes it, with its candidate row: what the daemon's
// notify command hears of (daemon/notifier.h).
struct VerdictNotice {
  CandidateRow candidate;
  VerdictRow verdict;
};

// How long a hard failure of a managed runtime that is still up waits for
// the runtime's exit before it is judged (Campaigns::check_hard_failures).
inline constexpr int64_t kExitWaitMs = 2 * kSecond;

// Why the previous build's runtime beside a canary (ab "interleaved") is
// stopped when that canary ends: its launch row says it, under the previous
// build's candidate row.
inline constexpr const char* kPreviousCanaryEnded = "the canary it ran beside ended";

// Local UTC offset in minutes at a given wall time (for the nightly window).
using UtcOffset = std::function<int(int64_t wall_ms)>;

class Campaigns {
 public:
  // Uses deps.store, .log, .host_id, and .clock for the time of completions;
  // never deps.loop.
  Campaigns(ConfigSnapshot cfg, const Deps& deps, TaskRunner& runner, UtcOffset utc_offset_minutes);

  // Rebuilds every track from the store (stages keep their start and deadline).
  Status resume(int64_t now_ms);
  // Does everything that is due at `now`: controls, build checks, stage
  // transitions, judgments, task dispatch.
  void tick(int64_t now_ms);
  // The next time tick() has something to do (nullopt: only a completion or a
  // control request can wake it).
  std::optional<int64_t> next_wake_ms(int64_t now_ms) const;
  // A new snapshot: tracks are re-pointed at it (new settings apply from now),
  // new candidates get a track, removed ones end inconclusive.
  void reload(ConfigSnapshot cfg, int64_t now_ms);
  // True once every candidate has a final verdict and nothing is in flight.
  bool settled() const;
  // Called after any task or build read completes (the daemon re-arms its timer).
  void set_on_change(std::function<void()> f) { on_change_ = std::move(f); }
  // Called for each verdict other than `running`, on the loop, once its row is
  // handed to the outbox (written, or waiting while the store cannot write).
  void set_on_verdict(std::function<void(const VerdictNotice&)> f) { on_verdict_ = std::move(f); }
  // Who starts and stops managed candidates' runtimes (borrowed; without one a
  // candidate's launch block is not acted on). Its exits come back here.
  void set_runtime_control(RuntimeControl* control);
  // Candidates with a registered build whose campaign is not over (what the
  // sampler watches), and the stage each is running, if any.
  struct Active {
    std::string name;
    CandidateSnapshot cfg;
    int64_t candidate_id = 0;
    std::optional<StageKind> stage;
    bool managed = false;    // soakd launched its runtime: sample `pid`, never look for a process
    std::optional<int> pid;  // a managed runtime's pid while it is up
    // The previous build's runtime soakd started beside this canary (ab
    // "interleaved") while it is up: expected, never another engine (SOLO),
    // never sampled as the candidate.
    std::optional<int> previous_pid;
  };
  std::vector<Active> active() const;

  // Stop dispatching (shutdown); completions still get recorded.
  void freeze() { frozen_ = true; }
  // The next tick reads control requests, whenever the last read was.
  void poll_controls_now() { next_control_poll_ms_ = 0; }

 private:
  struct InFlight {
    size_t task = 0;
    bool shadow = false;       // an interleaved baseline run
    std::string track;         // owner track name
    int64_t candidate_id = 0;  // row the run is for
    Weight weight = Weight::Light;
    int64_t group_id = 0;  // the run's slot: its rows' group id, and its shadow run's
  };

  // campaigns.cc
  void step(Track& t, int64_t now, bool light_window);
  // Carries out a transition's effects in the order Transition lists them,
  // and those of the transitions the effects produce (a judged stage, a
  // started one), depth first: one loop, which no effect re-enters.
  void apply(Track& t, Transition tr, int64_t now);
  // The one effect, and through apply() the transition it produces (nothing
  // when it produces none).
  void start_stage(Track& t, StageKind kind, int64_t now);
  void check_hard_failures(Track& t, int64_t now);
  // A launch whose default output cap holds the candidate (judges/floors.h):
  // the running stage ends held at once, before any (more) probes.
  void check_launch_hold(Track& t, int64_t now);
  // The effects that do I/O (the store, the judge) and may produce the
  // transition that follows; apply() alone calls them.
  std::optional<Transition> effect_start(Track& t, StageKind kind, int64_t now);
  std::optional<Transition> effect_judge(Track& t, StageEnd end, int64_t now);
  std::optional<Transition> effect_hard_failures(Track& t, int64_t now);
  std::optional<Transition> effect_launch_hold(Track& t, int64_t now);
  // The track's own bookkeeping once a transition's effects are done.
  void after_transition(Track& t);
  void end_with(Track& t, VerdictState state, const std::string& reason, int64_t now, const std::string& who = "",
                const std::string& why = "");
  StoredRecipe stored_recipe(const Track& t, StageEnd end, int64_t now);
  std::vector<int64_t> own_earlier_stages(const Track& t);
  void launch(const InFlight& f, const CandidateSnapshot& cfg, std::optional<int64_t> stage_id, StageKind stage,
              TaskKind task, int64_t group_id);
  void on_task_done(int64_t work_id, TaskReport report, int64_t now);
  void shadow_run(Track& t, const InFlight& f);
  void check_hard_events(int64_t now);
  void write_event(EventKind kind, std::optional<int64_t> candidate_id, const std::string& detail, int64_t now,
                   std::optional<int64_t> duration_ms = std::nullopt);
  void insert_event(const Event& e);
  // The heavy gate as `t` sees it (schedules/campaign_track.h heavy_gate_for).
  HeavyGate heavy_gate(const Track& t) const;
  // A canary's heavy run (its own or its baseline's shadow), and the canary
  // whose heavy run is in flight, if any.
  bool canary_heavy(const InFlight& f) const;
  std::optional<std::string> canary_heavy_in_flight() const;
  // Whether `t` holds its traffic (all but the heartbeat): another
  // candidate's canary runs heavy work, or waits for the host to drain.
  bool holds_traffic(const Track& t, bool light_window) const;
  void update_drain(const Track& t, bool light_window);
  std::vector<Track*> step_order();
  bool busy(const Track& t) const;
  void cancel_track(const Track& t);
  int canaries_running() const;
  bool baseline_known(const Track& t) const;
  int64_t current_time() const { return d_.clock.wall_ms(); }
  void changed() {
    if (on_change_) on_change_();
  }
  Track* track(const std::string& name);

  // campaigns/builds.cc
  void check_build(Track& t, int64_t now);
  void on_build(const std::string& name, Result<probes::BuildIdentity> b, int64_t now);
  void register_candidate(Track& t, const std::string& build, int64_t now, const std::string& fingerprint = {});
  // Same build: a fingerprint known for the first time is set on the row; a
  // known one that changed is a new row (true), judged like a new build.
  bool fingerprint_changed(Track& t, const probes::BuildIdentity& b);
  std::optional<int64_t> find_baseline(const Track& t, int64_t exclude_id);
  // What the row's launch fingerprint says of the default output cap, with
  // the candidate's limits.min_server_cap and accept_server_cap (nullopt: the
  // fingerprint does not know it, or the candidate serves no chat).
  std::optional<LaunchCap> launch_cap_of(const Track& t) const;
  void settle_baseline(Track& t);

  // campaigns/controls.cc
  void handle_controls(int64_t now);

  // campaigns/liveness_watch.cc: outstanding work is evidence (campaigns/liveness.h).
  // Stores an `unserved` event once a stage's requests passed the bound, and
  // checks the stage's hard failures on it.
  void watch_liveness(Track& t, int64_t now);
  std::optional<int64_t> liveness_wake(const Track& t, int64_t now) const;
  std::map<std::string, int64_t> unserved_noted_;  // track name -> the stage its unserved event was stored for

  // campaigns/managed_runtimes.cc
  bool managed(const Track& t) const { return control_ && t.cfg->launch.has_value(); }
  bool runtime_ready(const Track& t) const { return !managed(t) || t.managed.runtime == RuntimePhase::Up; }
  void manage_runtime(Track& t, int64_t now);
  bool runtime_needed(const Track& t) const;
  // Stops the runtime of a campaign that ended (unless keep_running): at once,
  // so that the campaign is settled only once its runtime is on its way down.
  void settle_runtime(Track& t);
  void start_runtime(Track& t);
  void on_runtime_ready(const std::string& name, Result<RuntimeUp> up, int64_t now);
  void on_runtime_exit(const std::string& name, const RuntimeExit& x, int64_t now);
  void launch_failed(Track& t, const std::string& why, int64_t now);
  void restart_for_new_build(Track& t, int64_t now);
  void managed_reload(Track& t, const CandidateConfig* next);
  // ab "interleaved": the previous build's runtime beside the canary
  // (schedules/campaign_track.h previous_action), started, watched, stopped.
  void manage_previous(Track& t, bool canary_due);
  void start_previous(Track& t);
  void stop_previous(Track& t, const std::string& why);
  void on_previous_ready(const std::string& name, uint64_t gen, Result<RuntimeUp> up);
  void on_previous_exit(const std::string& name, const RuntimeExit& x);
  int utc_offset(int64_t now) const { return utc_offset_minutes_ ? utc_offset_minutes_(now) : 0; }

  ConfigSnapshot cfg_;
  Deps d_;
  TaskRunner& runner_;
  UtcOffset utc_offset_minutes_;
  std::map<std::string, Track> tracks_;
  std::map<int64_t, InFlight> in_flight_;
  std::vector<std::pair<int64_t, TaskReport>> deferred_;  // completions that came while the store was paused
  int64_t next_work_id_ = 1;
  int64_t next_control_poll_ms_ = 0;
  int64_t last_event_seen_ = 0;
  bool frozen_ = false;
  std::optional<std::string> drain_for_;  // the canary whose heavy work waits for the host to drain
  bool light_window_ = false;             // a canary's heavy run ended: the next tick runs light work
  bool wake_soon_ = false;                // that tick held heavy work back: tick again at once
  std::function<void()> on_change_;
  std::function<void(const VerdictNotice&)> on_verdict_;
  RuntimeControl* control_ = nullptr;
  uint64_t previous_gen_ = 0;  // starts of previous builds' runtimes
};

}  // namespace soak
