// Campaigns: each configured candidate taken through smoke -> canary -> gate ->
// soak, with its verdicts, driven by time values passed in (never a clock).
//
// For every candidate in the config Campaigns keeps a track: it reads the
// runtime's build (a new build is a new candidate row, judged against the
// previous promoted build), starts stages, dispatches the tasks that
// next_due() says are due to the TaskRunner, checks each result for hard
// failures, judges a stage when its clock says so, and writes stages, verdicts
// and events to the store. A restart resumes every stage from the store with its
// original start and deadline; missed slots are not backfilled.
//
// Threading: one thread (the daemon's loop). Ownership: borrows Store and
// TaskRunner for its lifetime; keeps the Config it is given.
// Failure: store errors are logged and the affected step is retried on the next
// tick; nothing throws.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/log.h"
#include "daemon/recipe_store.h"
#include "daemon/task_runner.h"
#include "daemon/wiring.h"
#include "schedules/judge.h"
#include "schedules/plan.h"
#include "storage/store.h"

namespace soak {

inline constexpr int64_t kSmokeRetryMs = 15'000;      // unreachable smoke: try again after this
inline constexpr int64_t kControlPollEveryMs = 1'000;  // soakctl requests picked up within this

// Local UTC offset in minutes at a given wall time (for the nightly window).
using UtcOffset = std::function<int(int64_t wall_ms)>;

class Campaigns {
 public:
  // Uses deps.store, .log, .host_id, and .clock for the time of completions
  // (runners call back without one); never deps.loop.
  Campaigns(ConfigSnapshot cfg, const Deps& deps, TaskRunner& runner, UtcOffset utc_offset_minutes);

  // Rebuilds every track from the store (stages keep their start and deadline).
  Status resume(int64_t now_ms);
  // Does everything that is due at `now`: controls, build checks, stage
  // transitions, judgments, task dispatch.
  void tick(int64_t now_ms);
  // The next time tick() has something to do (nullopt: only a completion or a
  // control request can wake it).
  std::optional<int64_t> next_wake_ms(int64_t now_ms) const;
  void reload(ConfigSnapshot cfg, int64_t now_ms);
  // True once every candidate has a final verdict and nothing is in flight.
  bool settled() const;
  // Called after any task or build read completes (the daemon re-arms its timer).
  void set_on_change(std::function<void()> f) { on_change_ = std::move(f); }
  // Candidates with a registered build whose campaign is not over (what the
  // sampler watches), and the stage each is running, if any.
  struct Active {
    std::string name;
    CandidateSnapshot cfg;
    int64_t candidate_id = 0;
    std::optional<StageKind> stage;
  };
  std::vector<Active> active() const;

  // Stop dispatching (shutdown); completions still get recorded.
  void freeze() { frozen_ = true; }

 private:
  enum class Phase { ReadingBuild, Staged, WaitingCanary, Done };

  struct InFlight {
    size_t task = 0;
    bool shadow = false;       // an interleaved baseline run
    std::string track;         // owner track name
    int64_t candidate_id = 0;  // row the run is for
    Weight weight = Weight::Light;
  };

  struct Track {
    std::string name;
    CandidateSnapshot cfg;
    Phase phase = Phase::ReadingBuild;
    std::optional<CandidateRow> row;
    bool from_build_change = false;
    std::optional<int64_t> baseline_id;
    std::optional<StageRow> stage;
    StagePlan plan;
    std::vector<TaskState> tasks;
    int64_t canary_not_before_ms = 0;
    std::optional<int64_t> smoke_retry_at_ms;
    bool extension_noted = false;
    bool build_read_in_flight = false;
    int64_t next_build_check_ms = 0;
    std::optional<int64_t> first_build_attempt_ms;
    std::string last_build_error;
    std::optional<VerdictState> final_state;  // once Done
    std::optional<int64_t> shadow_live_ok;  // last shadow scrape of the baseline was clean (1) or not (0)
  };

  // steps
  void handle_controls(int64_t now);
  void check_build(Track& t, int64_t now);
  void on_build(const std::string& name, Result<probes::BuildIdentity> b, int64_t now);
  void step(Track& t, int64_t now);
  void dispatch(Track& t, int64_t now);
  void on_task_done(int64_t work_id, TaskReport report, int64_t now);
  void check_hard_failures(Track& t, int64_t now);

  // stage lifecycle
  void start_stage(Track& t, StageKind kind, int64_t now);
  void finish_stage(Track& t, StageEnd end, int64_t now);
  void finish_with(Track& t, VerdictRow v, int64_t now);
  void make_done(Track& t, VerdictState state, const std::string& reason, int64_t now,
                 const std::string& who = "", const std::string& why = "");
  StoredRecipe recipe_for(const Track& t, StageEnd end, int64_t now);
  void rebuild_task_states(Track& t);
  void write_event(EventKind kind, std::optional<int64_t> candidate_id, const std::string& detail,
                   int64_t now, std::optional<int64_t> duration_ms = std::nullopt);
  void write_running_verdict(Track& t, const std::string& reason, int64_t now);
  void register_candidate(Track& t, const std::string& build, int64_t now);
  std::optional<int64_t> find_baseline(const Track& t, int64_t exclude_id);
  bool heavy_busy() const;
  bool baseline_known(const Track& t) const;
  void cancel_track(const Track& t);
  int canaries_running() const;
  int64_t current_time() const { return d_.clock.wall_ms(); }
  void changed() {
    if (on_change_) on_change_();
  }
  Track* track(const std::string& name);

  ConfigSnapshot cfg_;
  Deps d_;
  TaskRunner& runner_;
  UtcOffset utc_offset_minutes_;
  std::map<std::string, Track> tracks_;
  std::map<int64_t, InFlight> in_flight_;
  int64_t next_work_id_ = 1;
  int64_t next_control_poll_ms_ = 0;
  int64_t last_now_ = 0;
  int64_t last_event_seen_ = 0;
  bool frozen_ = false;
  std::function<void()> on_change_;
};

}  // namespace soak
