// What Campaigns keeps about a managed candidate's runtime (see
// docs/DESIGN.md §4.8), beside the track's stage state.
//
// Campaigns (campaigns/managed_runtimes.cc) starts the runtime when the
// campaign needs it (a build to read, a stage to run, a canary to wait for),
// dispatches nothing while it is not up, stops it when the campaign settles
// (unless keep_running), and restarts it at the nightly window when its
// executable changed. A runtime that ends on its own during a stage is a
// hard failure; one that cannot start blocks the candidate.
//
// With ab "interleaved", the previous promoted build's program runs beside
// the new build's canary on a port of its own (PreviousRuntime): started when
// the canary is about to start (the canary waits while it loads), the
// canary's shadow runs sent to it, stopped when the canary ends however it
// ends. When it cannot run, the canary compares with history and its
// verdict says why (`note`).
//
// Thread-agnostic, no I/O.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "core/config.h"

namespace soak {

enum class RuntimePhase { Down, Starting, Up };

enum class PreviousPhase {
  Idle,      // not wanted now, or not decided yet for this canary
  Starting,  // launched, its health not ready yet: the canary waits
  Up,        // serving: the canary's shadow runs go to it
  Off,       // not started (note says why), failed to start or ended: history, or the rows it gave
};

// The previous promoted build's runtime beside a canary (ab "interleaved").
struct PreviousRuntime {
  PreviousPhase phase = PreviousPhase::Idle;
  int64_t for_row = 0;                         // the candidate row (build) whose canary it serves
  int64_t baseline_id = 0;                     // the previous build's candidate row
  uint64_t gen = 0;                            // this start of it: a ready answer for an earlier one is ignored
  std::shared_ptr<const CandidateConfig> cfg;  // previous_build_candidate(): its own name, port and program
  std::optional<int> pid;                      // while up
  std::string what;                            // "the previous build b9430 (PATH) on port N", for notes and logs
  std::string note;                            // for the canary's verdict (JudgeRecipe::baseline_note)
};

struct ManagedState {
  RuntimePhase runtime = RuntimePhase::Down;
  std::optional<int> pid;         // while up
  bool build_unread = false;      // up since the last build read: read it once
  bool hold = false;              // a launch failed: none again until the executable or the launch block
                                  // changes, or soakctl start
  bool resumed_stage = false;     // the running stage began before this soakd started
  bool smoke_when_up = false;     // soakctl start while the runtime was down
  bool expect_new_build = false;  // restarted for a new executable: its build is read next
  std::string pending_change;     // the executable changed (what changed): restart at restart_at_ms
  int64_t restart_at_ms = 0;
  int64_t next_exe_check_ms = 0;
  // A hard failure seen while the runtime was up: judged at this time, or at
  // once when the runtime's exit arrives first (a runtime that died shows
  // first as reset connections, and its verdict should name the exit).
  std::optional<int64_t> exit_wait_until_ms;
  PreviousRuntime previous;  // ab "interleaved": the previous build beside the canary
};

}  // namespace soak
