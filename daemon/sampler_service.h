// Samples host memory and each active candidate's runtime process every
// `sampler.interval` on one timer, persists every sample, and turns what it
// sees into events: memory guard trips, sleep/daemon gaps, process restarts
// and duplicate engines, and a footprint above a candidate's memory_budget
// during a stage (a memory_budget event: the judge rejects on the samples).
// A managed candidate's process is the pid soakd launched, never looked for.
// Holds the keep-awake assertion while a canary, gate or soak runs. With
// metrics.textfile set, each tick also rewrites that file (reports/textfile.h:
// the figures `soakctl metrics` prints), atomically. While stages run, it
// stores each running stage's sequential evidence every twelfth tick (a
// minute at the default interval; reports/evidence_live.h
// StageEvidenceWriter), which `soakctl status` shows without reading the
// stage's rows; a stage not read yet is read at one per tick.
//
// Cost: one timer; a tick is a few /proc reads or Mach calls per process, one
// read a tick however many candidates the process serves. The process table
// is walked only to (re)locate a candidate's process and for the
// duplicate-engine scan, at most every kDefaultEngineScanEveryMs.
//
// Threading: the loop thread. Ownership: borrows what Deps names, the Sampler
// and the source of active candidates; owns its detectors and timer. Reads
// the config when built and on reload, keeps none of it.
#pragma once

#include <uv.h>

#include <functional>
#include <map>
#include <memory>
#include <optional>

#include "campaigns/campaigns.h"
#include "core/clock.h"
#include "core/uv_util.h"
#include "daemon/daemon.h"
#include "detectors/gap_detector.h"
#include "detectors/memory_guard.h"
#include "detectors/process_watch.h"
#include "platform/keep_awake.h"
#include "platform/sampler.h"
#include "reports/evidence_live.h"
#include "reports/textfile.h"

namespace soak {

using ActiveSource = std::function<std::vector<Campaigns::Active>()>;

class SamplerService final : public Service {
 public:
  SamplerService(const ConfigSnapshot& cfg, const Deps& deps, Sampler& sampler, ActiveSource active,
                 std::unique_ptr<PowerAssertion> power);

  void start() override;
  void reload(const ConfigSnapshot& cfg) override;
  void stop(std::function<void()> done) override;

  // One sampling pass at the current time (the timer calls it; tests may too).
  void tick();
  // How often the running stages' evidence is stored: every
  // kEvidenceIntervals ticks, at most kStageEvidenceEveryMs apart.
  static constexpr int64_t kEvidenceIntervals = 12;
  static int64_t evidence_every(int64_t interval_ms);

 private:
  struct Watched {
    std::optional<int> pid;
    int64_t located_ms = 0;
    RestartDetector restarts;
    DuplicateEngineDetector duplicates;
    bool over_budget_reported = false;  // one memory_budget event per candidate row
    ProcessSampleKeeper stored;         // which samples are written
  };
  void write(const std::vector<Event>& events);
  void write_metrics(int64_t wall_ms);
  void write_evidence(int64_t wall_ms);
  // A footprint past the candidate's memory_budget: one event per candidate row.
  void report_over_budget(const Campaigns::Active& a, Watched& w, const ProcessSample& p, int64_t sample_id);
  void sample_candidate(const Campaigns::Active& a, Watched& w, int64_t wall_ms, bool scan_due,
                        const std::vector<ProcessInfo>* processes, const std::vector<int>& candidate_pids);
  // The process `pid` as this tick read it: read once per tick however many
  // candidates it serves (one runtime process may listen for several).
  ProcessSample read_process(int pid, int64_t wall_ms);

  Store& store_;    // reads
  Outbox& outbox_;  // samples and events
  Sampler& sampler_;
  const Clock& clock_;
  Logger log_;
  int64_t host_id_;
  ActiveSource active_;
  int64_t interval_ms_;
  int64_t process_every_ms_;
  MemoryGuard guard_;
  GapDetector gaps_;
  HostSampleKeeper host_stored_;  // which host samples are written
  KeepAwake keep_awake_;
  Timer timer_;
  std::map<int64_t, Watched> watched_;  // by candidate row id
  int64_t last_scan_ms_ = 0;
  std::map<int, ProcessSample> read_this_tick_;  // by pid; emptied at each tick's start
  std::string metrics_path_;                     // empty: no metrics textfile
  report::TextfileCollector metrics_;
  bool metrics_failing_ = false;  // logged once per run of failures, not every tick
  report::StageEvidenceWriter evidence_;
  int64_t evidence_every_ms_;
  bool evidence_failing_ = false;
};

}  // namespace soak
