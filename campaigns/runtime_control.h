// The seam between campaigns and managed runtimes (docs/DESIGN.md §4.8):
// Campaigns says when a managed candidate's runtime must be up and when it
// may go; a RuntimeControl starts, watches and stops it. The production one
// is RuntimeSupervisor (processes on the loop); tests of the campaign logic
// use a scripted one in virtual time.
//
// Threading: the loop thread. Callbacks never fire from inside the call that
// caused them; `ready` exactly once per start().
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "core/config.h"
#include "core/result.h"

namespace soak {

// Where the runtime that answered ready came from.
enum class RuntimeOrigin {
  Launched,  // started by this soakd process now
  Adopted,   // left up by a soakd before this one (keep_running) and still the same process
};

struct RuntimeUp {
  int pid = 0;
  RuntimeOrigin origin = RuntimeOrigin::Launched;
};

// A runtime that was up ended, and soakd had not asked it to.
struct RuntimeExit {
  int pid = 0;
  std::string exit;                // "killed by SIGKILL (signal 9)", "exited with status 1", ...
  std::optional<int> exit_status;  // when known
  std::optional<int> term_signal;
  std::string log_tail;  // its last lines
};

// What ran the previous promoted build of a managed candidate, to start it
// beside the new build's canary (ab "interleaved", docs/DESIGN.md §4.8).
struct PreviousBuild {
  std::string program;  // the executable its launch ran, still on disk as it was then
  uint16_t port = 0;    // a free loopback port for it
};

class RuntimeControl {
 public:
  virtual ~RuntimeControl() = default;

  // Makes the candidate's runtime answer: nothing to do when it is up, else
  // launch it (or wait for the launch in progress). `ready` gets the runtime
  // once its health answers ready, or why it could not start — port taken by
  // another process (its pid and name), program not found, exited or not
  // ready within ready_timeout (with the last lines of its log).
  virtual void start(const CandidateSnapshot& c, std::function<void(Result<RuntimeUp>)> ready) = 0;
  // Stops it (SIGTERM to its group, SIGKILL after stop_timeout) and records
  // why; no RuntimeExit is reported for it. A start() waiting gets an error.
  virtual void stop(const std::string& name, const std::string& why) = 0;
  // Called when a runtime that was up ends without soakd stopping it.
  virtual void set_on_exit(std::function<void(const std::string& name, const RuntimeExit&)> f) = 0;
  // The running launch serves this candidate row (its build): recorded with it.
  virtual void link(const std::string& name, int64_t candidate_id) = 0;
  // What changed in the executable since this candidate's last launch ("" when
  // nothing did, or when there was no launch to compare with).
  virtual std::string executable_change(const CandidateConfig& c) = 0;
  // The program the launch of `previous_candidate_id` (an earlier build of
  // `c`) recorded, and a free port for it; or why it cannot be started: no
  // launch recorded, the file gone or replaced since, or the same program as
  // the running build's (the build changed in what it loads, not in it). The
  // runtime itself is then started by start() with previous_build_candidate()
  // (core/config.h), and its exit reported under that name.
  virtual Result<PreviousBuild> previous_build(const CandidateConfig& c, int64_t previous_candidate_id) = 0;
};

}  // namespace soak
