// FaultyStore: a Store that forwards every call to a real one and fails the
// calls a test asks it to, as the real store fails when the disk is full or
// another process holds the write lock. The fault is injected around a real
// implementation, so the code under test runs exactly as in production.
//
// A call can be made to fail
//   - by method, for the next N calls:     fail_next(StoreMethod::InsertEvent, 2)
//   - by method, until cleared:            fail(StoreMethod::InsertEvent)
//   - every write, until cleared:          fail_writes()
//   - whenever a rule says so:             fail_when([&](const StoreCall& c) -> std::optional<Error> {
//                                            if (c.access == StoreAccess::Write && t1 <= clock.now_ms() &&
//                                                clock.now_ms() < t2) return kDiskFull;
//                                            return std::nullopt; });
// A fault is an Error: SQLite's text and the code the real store gives it. A
// failed call does not reach the wrapped store (a failed insert writes nothing)
// and returns that Error as "<method>: <text>" with its code, e.g.
// "insert_probe_result: database or disk is full" (ErrorCode::StoreFull).
// Counted faults are consulted first, then standing faults, then rules in the
// order they were added.
//
// Calls and failures are counted per method. Single-threaded, like Store.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "storage/store.h"

namespace soak::test {

// SQLITE_FULL and SQLITE_BUSY as the real store reports them: SQLite's own texts, and their codes.
inline const Error kDiskFull{"database or disk is full", ErrorCode::StoreFull};
inline const Error kLocked{"database is locked", ErrorCode::StoreBusy};

// Every method of the Store interface (storage/store.h), in its order.
enum class StoreMethod {
  UpsertHost,
  UpsertCandidate,
  SetBaseline,
  SetFingerprint,
  Candidate,
  Candidates,
  InsertProbeResult,
  InsertHostSample,
  InsertProcessSample,
  InsertEvent,
  InsertStage,
  UpdateStage,
  Stages,
  InsertVerdict,
  LatestVerdict,
  Verdicts,
  InsertContextReach,
  ContextReach,
  InsertGoldenAnswer,
  GoldenAnswers,
  PutStageEvidence,
  StageEvidenceOf,
  InsertControl,
  PendingControls,
  MarkControlHandled,
  InsertLaunch,
  UpdateLaunch,
  Launches,
  ProbeResults,
  ProbeCounts,
  ProbeRowCount,
  HostSamples,
  ProcessSamples,
  Events,
  Status,
  MaxIds,
};
inline constexpr size_t kStoreMethodCount = 36;
const std::array<StoreMethod, kStoreMethodCount>& all_store_methods();
std::string_view to_string(StoreMethod m);  // the Store method's name, e.g. "insert_probe_result"

enum class StoreAccess { Read, Write };
StoreAccess access_of(StoreMethod m);

struct StoreCall {
  StoreMethod method;
  StoreAccess access;
  int64_t nth = 0;  // 1 for the first call of this method, 2 for the second, ...
};

// Returns the fault to fail the call with, or nullopt to let it through.
using FaultRule = std::function<std::optional<Error>(const StoreCall& call)>;

class FaultyStore final : public Store {
 public:
  explicit FaultyStore(Store& inner) : inner_(inner) {}

  // ---- faults
  void fail_next(StoreMethod m, int64_t times, const Error& fault = kDiskFull);
  void fail(StoreMethod m, const Error& fault = kDiskFull);  // until clear()
  void fail_writes(const Error& fault = kDiskFull);          // every write method, until clear()
  void fail_reads(const Error& fault = kLocked);             // every read method, until clear()
  void fail_when(FaultRule rule);                            // until clear()
  void clear(StoreMethod m);                                 // its counted and standing faults (rules stay)
  void clear();                                              // every fault and rule; counts stay

  // ---- counts (failed calls included in calls)
  int64_t calls(StoreMethod m) const { return slot(m).calls; }
  int64_t failures(StoreMethod m) const { return slot(m).failures; }
  int64_t calls(StoreAccess a) const;
  int64_t failures(StoreAccess a) const;
  void reset_counts();

  Store& inner() { return inner_; }
  // The queries probe_results was asked, in order (failed calls included).
  const std::vector<ProbeQuery>& probe_queries() const { return probe_queries_; }

  // ---- Store
  Result<int64_t> upsert_host(const HostInfo& host, int64_t now_ms) override;
  Result<int64_t> upsert_candidate(const CandidateRow& c, int64_t now_ms) override;
  Status set_baseline(int64_t candidate_id, std::optional<int64_t> baseline_id) override;
  Status set_fingerprint(int64_t candidate_id, const std::string& fingerprint) override;
  Result<std::optional<CandidateRow>> candidate(int64_t id) override;
  Result<std::vector<CandidateRow>> candidates() override;
  Result<int64_t> insert_probe_result(const ProbeResult& r) override;
  Result<int64_t> insert_host_sample(const HostSample& s) override;
  Result<int64_t> insert_process_sample(const ProcessSample& s) override;
  Result<int64_t> insert_event(const Event& e) override;
  Result<int64_t> insert_stage(const StageRow& s) override;
  Status update_stage(const StageRow& s) override;
  Result<std::vector<StageRow>> stages(int64_t candidate_id) override;
  Result<int64_t> insert_verdict(const VerdictRow& v) override;
  Result<std::optional<VerdictRow>> latest_verdict(int64_t candidate_id) override;
  Result<std::vector<VerdictRow>> verdicts(int64_t candidate_id) override;
  Result<int64_t> insert_context_reach(const ContextReach& r) override;
  Result<std::optional<ContextReach>> context_reach(int64_t candidate_id) override;
  Result<int64_t> insert_golden_answer(const GoldenAnswerRow& r) override;
  Result<std::vector<GoldenAnswerRow>> golden_answers(int64_t candidate_id) override;
  Status put_stage_evidence(const StageEvidence& e) override;
  Result<std::optional<StageEvidence>> stage_evidence(int64_t stage_id) override;
  Result<int64_t> insert_control(const ControlRequest& c) override;
  Result<std::vector<ControlRequest>> pending_controls() override;
  Status mark_control_handled(int64_t id, int64_t now_ms, const std::string& result) override;
  Result<int64_t> insert_launch(const RuntimeLaunch& l) override;
  Status update_launch(const RuntimeLaunch& l) override;
  Result<std::vector<RuntimeLaunch>> launches(const LaunchQuery& q) override;
  Result<std::vector<ProbeResult>> probe_results(const ProbeQuery& q) override;
  Result<std::vector<ProbeCount>> probe_counts(const ProbeQuery& q) override;
  Result<int64_t> probe_row_count(const ProbeQuery& q) override;
  Result<std::vector<HostSample>> host_samples(const SampleQuery& q) override;
  Result<std::vector<ProcessSample>> process_samples(const SampleQuery& q) override;
  Result<std::vector<Event>> events(const EventQuery& q) override;
  Result<std::vector<StatusRow>> status() override;
  Result<MaxIds> max_ids() override;

 private:
  struct Slot {
    int64_t calls = 0, failures = 0;
    int64_t fail_next = 0;  // counted fault: calls left to fail
    Error next;
    std::optional<Error> always;  // standing fault
  };
  Slot& slot(StoreMethod m) { return slots_[static_cast<size_t>(m)]; }
  const Slot& slot(StoreMethod m) const { return slots_[static_cast<size_t>(m)]; }

  // Counts the call; returns the error to answer with when it is to fail.
  std::optional<Error> enter(StoreMethod m);

  // Forwards `call` unless the method is to fail.
  template <class R, class F>
  R forward(StoreMethod m, F call) {
    if (auto err = enter(m)) return *err;
    return call();
  }

  Store& inner_;
  std::array<Slot, kStoreMethodCount> slots_{};
  std::vector<ProbeQuery> probe_queries_;
  std::vector<FaultRule> rules_;
};

}  // namespace soak::test
