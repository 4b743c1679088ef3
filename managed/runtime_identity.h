// How soakd recognises what it launched (docs/DESIGN.md §4.8), pure or close
// to it, so it is tested on Linux without spawning anything:
//   - the executable a launch block runs, found as `execvp` would find it and
//     fingerprinted (resolved path, size, mtime, content hash): a change of it
//     is a new build of a managed candidate (`brew upgrade llama.cpp` points
//     the bin/ link at a new Cellar directory);
//   - whether a process found running at start is a runtime this soakd
//     launched before a crash: the recorded pid must still have the recorded
//     start time (and the arguments it was given), else it is somebody else's
//     and never touched.
// Thread-agnostic. Failure: values (Result), nothing throws.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/launch.h"
#include "core/result.h"
#include "core/types.h"

namespace soak {

// `argv0` as a program: a path (with a '/') is taken as it is; a name is
// looked up in `path_env` (a PATH value). The error says where it looked.
Result<std::string> resolve_executable(const std::string& argv0, const std::string& path_env);
// The PATH a launch looks its program up in: the block's own PATH when written
// out, else soakd's (`inherited`), else a minimal one.
std::string launch_path(const LaunchSpec& s, const std::optional<std::string>& inherited);

struct ExeFingerprint {
  std::string path;  // resolved, symlinks followed
  int64_t size = 0;
  int64_t mtime_ms = 0;
  std::string hash;  // content hash (FNV-1a 64, hex): a copy with a new mtime and the same bytes is the same build
  bool operator==(const ExeFingerprint&) const = default;
};

// Resolves, follows symlinks, stats and hashes `argv0`. When `known` has the
// same path, size and mtime its hash is reused instead of reading the file
// again (the poll every cadence.build_poll costs a stat, not a read).
Result<ExeFingerprint> fingerprint_executable(const std::string& argv0, const std::string& path_env,
                                              const ExeFingerprint* known = nullptr);
// The fingerprint a launch record holds.
ExeFingerprint fingerprint_of(const RuntimeLaunch& l);
// "path A -> B, size 1 -> 2, content changed" (what differs), or "" when the same.
std::string describe_change(const ExeFingerprint& before, const ExeFingerprint& now);

// The program a previous build ran, to start it again beside a new build's
// canary (ab "interleaved", docs/DESIGN.md §4.8): the newest of `launches`
// (that build's, oldest first) that recorded an executable, when the file at
// its resolved path is still the one recorded (`on_disk`: its fingerprint
// now) and is not the program running now (`current`: the running build's).
// Otherwise why not, in words for a verdict: no launch recorded, the file
// gone (an update or a cleanup removed it) or replaced since, or the same
// program (the build changed in what the program loads).
using OnDisk = std::function<Result<ExeFingerprint>(const std::string& path)>;
Result<std::string> previous_program(const std::vector<RuntimeLaunch>& launches,
                                     const std::optional<ExeFingerprint>& current, const OnDisk& on_disk);

// A process as found at start, for the recorded pid.
struct LiveProcess {
  std::optional<int64_t> start_time;  // as the sampler reads it
  std::vector<std::string> argv;      // empty when it could not be read
};

enum class OrphanMatch {
  Gone,     // no process with that pid
  Ours,     // the recorded pid, start time and arguments: a runtime this soakd launched
  NotOurs,  // the pid belongs to another process now (or cannot be confirmed): never signalled
};
struct OrphanDecision {
  OrphanMatch match = OrphanMatch::Gone;
  std::string why;
};
// `live`: the process now holding the recorded pid (nullopt: none). Ours
// needs the same start time and the recorded literal arguments, in order,
// among its argv (an interpreter or an exec wrapper may add its own).
OrphanDecision match_orphan(const RuntimeLaunch& recorded, const std::optional<LiveProcess>& live);

}  // namespace soak
