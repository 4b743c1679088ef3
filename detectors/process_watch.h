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
// ProcessSampleKeeper: one per candidate. Which of the candidate's process
// samples (read every sampler tick) are stored: one per `every_ms`, and at
// once any sample that shows another process, an error, or a footprint past
// the memory budget. The judges read the stored ones only (block medians over
// the stage, docs/DESIGN.md §3.6), so what is stored is what is judged.
//
// HostSampleKeeper: one per host, the same for the host samples (read every
// tick, each seen by the memory guard): one stored per `every_ms`, and at
// once any sample whose levels (memory pressure, memorystatus, thermal),
// swap in use, swapouts or error differ from the last stored. The judges'
// host figures are step series of those (the thermal level in effect at a
// row, swap growth, swapouts summed), which the stored samples keep whole;
// the free/active figures between two stored samples are not kept.
//
// Pure logic over samples and process lists; time is the caller's wall_ms.
// Threading: the daemon's loop thread.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
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

class ProcessSampleKeeper {
 public:
  explicit ProcessSampleKeeper(int64_t every_ms) : every_ms_(every_ms) {}

  // Whether `s` is stored; a stored sample becomes the one the next are
  // measured from. `over_budget`: the footprint is past the candidate's budget.
  bool keep(const ProcessSample& s, bool over_budget = false);

 private:
  int64_t every_ms_;
  std::optional<int64_t> last_ms_;
  std::optional<ProcessIdentity> last_identity_;
  std::string last_error_;
  bool last_over_budget_ = false;
};

class HostSampleKeeper {
 public:
  explicit HostSampleKeeper(int64_t every_ms) : every_ms_(every_ms) {}

  // Whether `s` is stored; a stored sample becomes the one the next are
  // measured from. A sample not stored is kept as the pending one.
  bool keep(const HostSample& s);
  // The newest sample not stored, if any (written at shutdown, so that the
  // next start measures the daemon's absence from the last reading).
  std::optional<HostSample> take_pending();
  void set_every_ms(int64_t every_ms) { every_ms_ = every_ms; }

 private:
  int64_t every_ms_;
  std::optional<HostSample> last_, pending_;
};

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
