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
// Thread-agnostic, no I/O.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace soak {

enum class RuntimePhase { Down, Starting, Up };

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
};

}  // namespace soak
