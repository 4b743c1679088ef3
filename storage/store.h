// The Store: everything soakd knows, persisted. The daemon owns one read-write
// Store; soakctl opens its own read-only one. Every insert is committed before
// the call returns (one row, one transaction), so a crash loses nothing that
// was reported stored.
//
// Threading: a Store instance is used from one thread (the daemon's loop
// thread). Separate processes may read while the daemon writes (WAL).
// Failure: every call returns Result/Status; nothing throws.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/golden.h"
#include "core/result.h"
#include "core/types.h"

namespace soak {

struct StatusRow {  // one line of `soakctl status`
  CandidateRow candidate;
  std::optional<StageRow> stage;      // latest stage
  std::optional<VerdictRow> verdict;  // latest verdict (metrics not loaded)
};

// The sequential test's evidence of a running stage as soakd last computed it
// (reports/evidence_live.h LiveEvidence): what `soakctl status` shows without
// reading the stage's rows. One row per stage, rewritten as the stage grows.
struct StageEvidence {
  int64_t stage_id = 0;
  int64_t candidate_id = 0;
  int64_t wall_ms = 0;        // when soakd computed it
  int64_t probe_max_id = 0;   // from the probe rows up to this id
  std::string measures_json;  // reports/evidence_live.h stage_evidence_json (measures_to_json before)
};

struct ProbeQuery {
  std::optional<int64_t> candidate_id;
  std::optional<int64_t> stage_id;
  std::optional<int64_t> min_id, max_id;      // inclusive id range
  std::optional<int64_t> since_ms, until_ms;  // started_wall_ms range, inclusive
  std::optional<ProbeKind> kind;
  // Only rows of a campaign stage (stage_id set): not a canary's interleaved
  // baseline runs, which carry none (campaigns/recipe_store.h choose_baseline).
  bool staged_only = false;
  int64_t limit = 0;  // 0 = no limit
};

// Probe rows counted by candidate, kind and outcome: counters without reading
// the rows (soakctl metrics, soakd's metrics textfile).
struct ProbeCount {
  int64_t candidate_id = 0;
  ProbeKind kind = ProbeKind::Health;
  Outcome outcome = Outcome::Clean;
  int64_t n = 0;
};

struct SampleQuery {
  std::optional<int64_t> host_id;
  std::optional<int64_t> candidate_id;  // process samples only
  std::optional<int64_t> since_ms, until_ms;
  std::optional<int64_t> min_id;
  std::optional<int64_t> max_id;  // snapshot bound: rows written after a judgment are left out
  bool newest_only = false;       // host samples: the newest one matching, not all
};

enum class HostWide { Exclude, Include };

struct EventQuery {
  std::optional<int64_t> candidate_id;
  HostWide host_wide = HostWide::Exclude;  // with candidate_id: also events with no candidate (host-wide)
  std::optional<int64_t> host_id;
  std::optional<EventKind> kind;
  std::optional<int64_t> since_ms, until_ms;
  std::optional<int64_t> min_id, max_id;
};

struct LaunchQuery {
  std::optional<int64_t> host_id;
  std::optional<std::string> name;
  std::optional<int64_t> candidate_id;
  bool open_only = false;  // running or left_running: what a starting soakd must find again
};

// How often soakd reads pending control requests at the least. soakctl
// signals soakd (SIGUSR1, soakctl/control.cc) after queueing a request, so
// this poll is only the fallback for a soakctl that may not signal it
// (another user); an idle soakd wakes for it, so it is not frequent.
inline constexpr int64_t kControlPollEveryMs = 5'000;

class Store {
 public:
  virtual ~Store() = default;

  // ---- identities
  virtual Result<int64_t> upsert_host(const HostInfo& host, int64_t now_ms) = 0;
  // Finds (host, name, model, runtime, build, fingerprint) or inserts it; updates last_seen and base_url.
  virtual Result<int64_t> upsert_candidate(const CandidateRow& c, int64_t now_ms) = 0;
  virtual Status set_baseline(int64_t candidate_id, std::optional<int64_t> baseline_id) = 0;
  // The launch fingerprint of a row registered before it was known (an Ollama
  // tag that loads on demand); a known one that changes is a new row instead.
  virtual Status set_fingerprint(int64_t candidate_id, const std::string& fingerprint) = 0;
  virtual Result<std::optional<CandidateRow>> candidate(int64_t id) = 0;
  virtual Result<std::vector<CandidateRow>> candidates() = 0;

  // ---- rows (each committed on return)
  virtual Result<int64_t> insert_probe_result(const ProbeResult& r) = 0;
  virtual Result<int64_t> insert_host_sample(const HostSample& s) = 0;
  virtual Result<int64_t> insert_process_sample(const ProcessSample& s) = 0;
  virtual Result<int64_t> insert_event(const Event& e) = 0;

  // ---- stages
  virtual Result<int64_t> insert_stage(const StageRow& s) = 0;
  virtual Status update_stage(const StageRow& s) = 0;
  virtual Result<std::vector<StageRow>> stages(int64_t candidate_id) = 0;

  // ---- verdicts
  virtual Result<int64_t> insert_verdict(const VerdictRow& v) = 0;
  virtual Result<std::optional<VerdictRow>> latest_verdict(int64_t candidate_id) = 0;
  virtual Result<std::vector<VerdictRow>> verdicts(int64_t candidate_id) = 0;

  // ---- context reach (one row per judged canary; the latest counts)
  virtual Result<int64_t> insert_context_reach(const ContextReach& r) = 0;
  // nullopt when the candidate has none (or the store predates the table).
  virtual Result<std::optional<ContextReach>> context_reach(int64_t candidate_id) = 0;

  // ---- golden answers (docs/DESIGN.md §3.13): one row per prompt and run
  virtual Result<int64_t> insert_golden_answer(const GoldenAnswerRow& r) = 0;
  // The candidate's answers in id order (none in a store that predates the table).
  virtual Result<std::vector<GoldenAnswerRow>> golden_answers(int64_t candidate_id) = 0;

  // ---- running stages' evidence (one row per stage, the latest kept)
  virtual Status put_stage_evidence(const StageEvidence& e) = 0;
  // nullopt when soakd wrote none for the stage (or the store predates the table).
  virtual Result<std::optional<StageEvidence>> stage_evidence(int64_t stage_id) = 0;

  // ---- control requests (soakctl -> daemon)
  virtual Result<int64_t> insert_control(const ControlRequest& c) = 0;
  virtual Result<std::vector<ControlRequest>> pending_controls() = 0;
  virtual Status mark_control_handled(int64_t id, int64_t now_ms, const std::string& result) = 0;

  // ---- managed runtimes (runtime_launches)
  virtual Result<int64_t> insert_launch(const RuntimeLaunch& l) = 0;
  // Rewrites candidate_id, ready, state, end, exit status/signal, log tail and detail.
  virtual Status update_launch(const RuntimeLaunch& l) = 0;
  virtual Result<std::vector<RuntimeLaunch>> launches(const LaunchQuery& q) = 0;  // oldest first

  // ---- queries
  virtual Result<std::vector<ProbeResult>> probe_results(const ProbeQuery& q) = 0;
  // The rows probe_results(q) would return (its limit aside), counted; ordered
  // by candidate, kind and outcome name.
  virtual Result<std::vector<ProbeCount>> probe_counts(const ProbeQuery& q) = 0;
  // How many rows probe_results(q) would return (its limit aside): from an
  // index alone when q names a stage or a candidate with an id range only.
  virtual Result<int64_t> probe_row_count(const ProbeQuery& q) = 0;
  virtual Result<std::vector<HostSample>> host_samples(const SampleQuery& q) = 0;
  virtual Result<std::vector<ProcessSample>> process_samples(const SampleQuery& q) = 0;
  virtual Result<std::vector<Event>> events(const EventQuery& q) = 0;
  virtual Result<std::vector<StatusRow>> status() = 0;
  // Highest row id per table (0 when empty): snapshot bounds for a judgment.
  using MaxIds = RowMaxIds;
  virtual Result<MaxIds> max_ids() = 0;
};

}  // namespace soak
