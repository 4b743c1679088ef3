// Watching a candidate's runtime process between samples.
//
// RestartDetector: one per candidate. A process is one (pid, start_time)
// pair; when a later sample shows a different pair, the runtime crashed or was
// restarted: a "process_restart" event. When the known process can no longer
// be found or sampled, a "process_gone" event (once, until it is seen again).
//
// DuplicateEngineDetector: one per candidate. Another inference engine
// resident beside the candidate's process tree is a "duplicate_engine" event,
// reported once per duplicate process while it stays; what is an engine is
// the sampler's runtime signatures (platform/runtime_processes.h).
//
// Pure logic over samples and process lists; time is the caller's wall_ms.
// Threading: the daemon's loop thread.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "core/types.h"
#include "platform/runtime_processes.h"

namespace soak {

struct ProcessIdentity {
  int pid = 0;
  int64_t start_time = 0;
  bool operator==(const ProcessIdentity&) const = default;
};

// The identity a sample shows, if it read the process's start time.
std::optional<ProcessIdentity> identity_of(const ProcessSample& s);

class RestartDetector {
 public:
  RestartDetector(std::optional<int64_t> candidate_id, std::optional<int64_t> host_id)
      : candidate_id_(candidate_id), host_id_(host_id) {}

  // `seen`: the candidate's process now, or nullopt when it could not be
  // found or read.
  std::vector<Event> observe(std::optional<ProcessIdentity> seen, int64_t wall_ms);

  const std::optional<ProcessIdentity>& current() const { return known_; }

 private:
  std::optional<int64_t> candidate_id_, host_id_;
  std::optional<ProcessIdentity> known_;
  bool gone_reported_ = false;
};

class DuplicateEngineDetector {
 public:
  // `runtimes` must outlive the detector (the sampler's: Sampler::runtimes()).
  DuplicateEngineDetector(std::optional<int64_t> candidate_id, std::optional<int64_t> host_id,
                          RuntimeSignatures runtimes)
      : candidate_id_(candidate_id), host_id_(host_id), runtimes_(runtimes) {}

  std::vector<Event> observe(const std::vector<ProcessInfo>& processes, std::optional<int> candidate_pid,
                             int64_t wall_ms);

  // Duplicates present as of the last observe().
  const std::vector<EngineProcess>& current() const { return current_; }

 private:
  std::optional<int64_t> candidate_id_, host_id_;
  RuntimeSignatures runtimes_;
  std::set<int> reported_;  // pids already reported and still present
  std::vector<EngineProcess> current_;
};

}  // namespace soak
