// soakd's figures for fleets, in the Prometheus text exposition format
// (version 0.0.4: what node_exporter's textfile collector reads), named by
// Prometheus conventions: soakd_ prefix, base units (_seconds, _bytes), _total
// on counters, HELP and TYPE for every family, state sets as 0/1 gauges with
// the state as a label. No timestamps in the file (the textfile collector
// refuses them); soakd_textfile_written_timestamp_seconds says how fresh it is.
//
// Per candidate row (labels candidate, model, runtime, build): the stage and
// its state as state sets, progress, verdict as a state set, probe outcome
// counters, TTFT and decode-rate summaries of the latest stage per workload,
// the runtime's footprint, resident and swap bytes; the running stage's
// sequential evidence per watched measure (reports/evidence_live.h). Per host (the newest host
// sample's): memory pressure, free memory or PSI, swap, swap-outs, guard
// state; events by kind.
//
// TextfileCollector keeps what it has read: each refresh reads only rows newer
// than the last one (counts through Store::probe_counts, the stage's rows by
// id), so soakd can refresh on every sampler tick. A fresh collector
// refreshed once gives the same text (soakctl metrics). Loop thread or any
// one thread; uses the Store it is given.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/result.h"
#include "core/types.h"
#include "judges/sequential.h"
#include "reports/evidence_live.h"
#include "storage/store.h"

namespace soak::report {

// Samples older than this are not current: their gauges are left out rather
// than repeating a figure soakd no longer measures.
inline constexpr int64_t kSampleFreshMs = 5 * 60'000;
// Quantiles of the TTFT and decode-rate summaries.
inline constexpr double kSummaryQuantiles[] = {0.5, 0.9, 0.99};

struct MetricsOptions {
  int64_t guard_window_ms = 0;  // soakd_guard_tripped: a trip within this window
  std::string version;          // soakd_build_info
};

class TextfileCollector {
 public:
  explicit TextfileCollector(MetricsOptions options) : opt_(std::move(options)) {}

  // Reads what the store gained since the last refresh, and what is current at `now_ms`.
  Status refresh(Store& store, int64_t now_ms);
  // The exposition text as of the last refresh, stamped `now_ms`.
  std::string render(int64_t now_ms) const;

  void set_guard_window(int64_t ms) { opt_.guard_window_ms = ms; }
  // The candidate's running-stage evidence as of the last refresh (nullptr:
  // none read), for StageEvidenceWriter::share_from.
  const LiveEvidence* live(int64_t candidate_id) const {
    auto it = figures_.find(candidate_id);
    return it == figures_.end() ? nullptr : &it->second.live;
  }

 private:
  struct StageFigures {
    int64_t stage_id = 0;
    int64_t read_to = 0;                                            // rows of the stage up to this id are in
    std::map<std::string, std::vector<double>> ttft_s, decode_tps;  // by workload, sorted
    // The runtime's own queue (running / waiting) at the newest row of the
    // stage that read it (scrape and identity rows), and when.
    std::optional<int64_t> running, waiting;
    int64_t queue_ms = 0;
    // The running stage's sequential evidence as of the last refresh.
    LiveEvidence live;
  };
  MetricsOptions opt_;
  int64_t counted_to_ = 0;                                                      // probe rows counted up to this id
  int64_t events_to_ = 0;                                                       // events read up to this id
  std::map<int64_t, std::map<std::pair<ProbeKind, Outcome>, int64_t>> counts_;  // by candidate row
  std::vector<StatusRow> status_;
  std::map<int64_t, StageFigures> figures_;   // by candidate row
  std::map<int64_t, ProcessSample> process_;  // newest current sample by candidate row
  std::optional<HostSample> host_;            // newest current host sample
  std::map<EventKind, int64_t> events_;       // every event by kind
  std::optional<int64_t> last_guard_trip_ms_;
};

// Escapes a label value: backslash, double quote and newline.
std::string label_value(std::string_view v);

}  // namespace soak::report
