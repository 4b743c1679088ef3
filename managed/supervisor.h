// RuntimeSupervisor: the managed candidates' runtimes as processes of this
// host (docs/DESIGN.md §4.8). It is the daemon's RuntimeControl (what
// Campaigns asks for) and a Service (recovery at start, stop at shutdown).
//
// Start: the program is found in PATH, fingerprinted and recorded; the
// runtime's port must be free (a process soakd did not start holding it
// blocks the candidate, with its pid and name, and is never signalled); the
// environment is the inherited minimal set plus the launch block's entries
// (secrets read from soakd's environment now, never stored); stdout and
// stderr go to <log dir>/<candidate>.runtime.log; the adapter's health is
// polled until ready, within ready_timeout. Every launch is a
// runtime_launches row: pid, start time, argv (secrets masked), executable
// fingerprint, and how it ended (exit status or signal, log tail).
//
// Recovery, when the daemon starts: every launch still recorded as running
// is looked for. Gone, or its pid now held by another process (a different
// start time or other arguments): recorded, left alone. Still the runtime it
// launched: adopted when its candidate keeps `keep_running` with the same
// argv (a stage survives a soakd restart), else stopped before anything is
// launched again. Starts asked for meanwhile wait for the recovery.
//
// Stop (soakd stopping): runtimes with keep_running are left up (recorded
// left_running, adopted by the next soakd); the others get SIGTERM and, after
// their stop_timeout, SIGKILL; the service reports done once they ended, so
// the daemon's graceful stop takes up to kStopGraceMs + the largest
// stop_timeout + kAfterKillWaitMs (stop_budget_ms()).
//
// Threading: the loop thread. Ownership: borrows what Deps names and the
// Sampler (port owners, start times); owns the Launcher and the runtime logs.
// Failure: a runtime that cannot start is an error to the start() caller
// (with the reason and the log tail); store errors are logged.
#pragma once

#include <uv.h>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "campaigns/runtime_control.h"
#include "core/service.h"
#include "core/uv_util.h"
#include "managed/launcher.h"
#include "managed/runtime_identity.h"
#include "managed/runtime_log.h"
#include "platform/sampler.h"
#include "probes/engine.h"
#include "storage/outbox.h"
#include "storage/store.h"

namespace soak {

inline constexpr int64_t kReadyPollMs = 500;  // health polled this often while a runtime starts

// Asks the candidate's health route once: ready, or what it said instead.
using ReadyCheck = std::function<void(const CandidateConfig& c, std::function<void(bool ready, std::string detail)>)>;
// The adapter's health probe through the engine (rows are not stored).
ReadyCheck engine_ready_check(probes::ProbeEngine& engine);

class RuntimeSupervisor final : public Service, public RuntimeControl {
 public:
  RuntimeSupervisor(ConfigSnapshot cfg, const Deps& deps, Sampler& sampler, ReadyCheck ready,
                    probes::EnvReader env = probes::process_env());
  ~RuntimeSupervisor() override;

  // ---- Service
  void start() override;
  void reload(const ConfigSnapshot& cfg) override { cfg_ = cfg; }
  void stop(std::function<void()> done) override;
  int64_t stop_budget_ms() const override;

  // ---- RuntimeControl
  void start(const CandidateSnapshot& c, std::function<void(Result<RuntimeUp>)> ready) override;
  void stop(const std::string& name, const std::string& why) override;
  void set_on_exit(std::function<void(const std::string&, const RuntimeExit&)> f) override { on_exit_ = std::move(f); }
  void link(const std::string& name, int64_t candidate_id) override;
  std::string executable_change(const CandidateConfig& c) override;
  Result<PreviousBuild> previous_build(const CandidateConfig& c, int64_t previous_candidate_id) override;

 private:
  enum class State { Starting, Up, Stopping };
  struct Runtime {
    std::string name;
    CandidateSnapshot cfg;
    State state = State::Starting;
    RuntimeOrigin origin = RuntimeOrigin::Launched;
    uint64_t gen = 0;  // this start of it: callbacks of an earlier one are ignored
    RuntimeLaunch record;
    std::unique_ptr<RuntimeLog> log;
    std::unique_ptr<Timer> poll;      // health while starting
    std::unique_ptr<Timer> deadline;  // ready_timeout
    bool check_in_flight = false;
    std::string last_health;
    std::string stop_why;
    std::vector<std::function<void(Result<RuntimeUp>)>> waiters;
  };
  struct Queued {
    CandidateSnapshot cfg;
    std::function<void(Result<RuntimeUp>)> ready;
  };

  void recover();
  void recovered_one();
  void adopt(const RuntimeLaunch& rec, const CandidateSnapshot& c);
  void launch(const CandidateSnapshot& c, std::function<void(Result<RuntimeUp>)> ready);
  Result<int> spawn(Runtime& r, const CandidateConfig& c);
  void poll_health(const std::string& name, uint64_t gen);
  void became_ready(Runtime& r);
  void fail_start(Runtime& r, const std::string& why);
  void on_child_exit(const std::string& name, uint64_t gen, const ChildExit& e);
  void ended(std::unique_ptr<Runtime> r, LaunchState state, const ChildExit& e, const std::string& detail);
  void check_adopted();
  void keep_house();
  void run_queued(const std::string& name);
  void maybe_stopped();
  void save(const RuntimeLaunch& rec);
  void later(std::function<void()> f);  // on the next loop pass: callbacks never fire inside the call
  bool same_process(int pid, std::optional<int64_t> start_time);
  std::optional<ExeFingerprint> last_fingerprint(const std::string& name);
  std::string path_env(const LaunchSpec& s) const;
  std::string log_path(const std::string& name) const;

  ConfigSnapshot cfg_;
  Deps d_;
  Sampler& sampler_;
  ReadyCheck ready_;
  probes::EnvReader env_;
  Launcher launcher_;
  Timer housekeeping_;  // log caps, adopted runtimes' liveness
  Timer defer_;
  std::vector<std::function<void()>> deferred_;
  bool defer_armed_ = false;
  uint64_t gen_ = 0;
  std::map<std::string, std::unique_ptr<Runtime>> runtimes_;
  std::map<std::string, std::vector<Queued>> queued_;  // waiting for recovery, or for a stop to finish
  std::map<std::string, ExeFingerprint> last_fp_;      // per candidate: its last launch's executable
  std::map<std::string, ExeFingerprint> disk_fp_;      // per candidate: the executable as last seen on disk
  std::map<std::string, std::string> fp_errors_;       // last fingerprint error logged per candidate
  std::function<void(const std::string&, const RuntimeExit&)> on_exit_;
  bool recovered_ = false;
  size_t recovering_ = 0;
  bool stopping_ = false;
  std::function<void()> stop_done_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);  // health answers check it
};

}  // namespace soak
