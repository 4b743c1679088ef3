#include "tests/support/faulty_store.h"

#include <utility>

namespace soak::test {

namespace {

struct MethodInfo {
  StoreMethod method;
  std::string_view name;
  StoreAccess access;
};

// One line per Store method; all_store_methods(), to_string and access_of read it.
constexpr std::array<MethodInfo, kStoreMethodCount> kMethods{{
    {StoreMethod::UpsertHost, "upsert_host", StoreAccess::Write},
    {StoreMethod::UpsertCandidate, "upsert_candidate", StoreAccess::Write},
    {StoreMethod::SetBaseline, "set_baseline", StoreAccess::Write},
    {StoreMethod::SetFingerprint, "set_fingerprint", StoreAccess::Write},
    {StoreMethod::Candidate, "candidate", StoreAccess::Read},
    {StoreMethod::Candidates, "candidates", StoreAccess::Read},
    {StoreMethod::InsertProbeResult, "insert_probe_result", StoreAccess::Write},
    {StoreMethod::InsertHostSample, "insert_host_sample", StoreAccess::Write},
    {StoreMethod::InsertProcessSample, "insert_process_sample", StoreAccess::Write},
    {StoreMethod::InsertEvent, "insert_event", StoreAccess::Write},
    {StoreMethod::InsertStage, "insert_stage", StoreAccess::Write},
    {StoreMethod::UpdateStage, "update_stage", StoreAccess::Write},
    {StoreMethod::Stages, "stages", StoreAccess::Read},
    {StoreMethod::InsertVerdict, "insert_verdict", StoreAccess::Write},
    {StoreMethod::LatestVerdict, "latest_verdict", StoreAccess::Read},
    {StoreMethod::Verdicts, "verdicts", StoreAccess::Read},
    {StoreMethod::InsertContextReach, "insert_context_reach", StoreAccess::Write},
    {StoreMethod::ContextReach, "context_reach", StoreAccess::Read},
    {StoreMethod::InsertGoldenAnswer, "insert_golden_answer", StoreAccess::Write},
    {StoreMethod::GoldenAnswers, "golden_answers", StoreAccess::Read},
    {StoreMethod::PutStageEvidence, "put_stage_evidence", StoreAccess::Write},
    {StoreMethod::StageEvidenceOf, "stage_evidence", StoreAccess::Read},
    {StoreMethod::InsertControl, "insert_control", StoreAccess::Write},
    {StoreMethod::PendingControls, "pending_controls", StoreAccess::Read},
    {StoreMethod::MarkControlHandled, "mark_control_handled", StoreAccess::Write},
    {StoreMethod::InsertLaunch, "insert_launch", StoreAccess::Write},
    {StoreMethod::UpdateLaunch, "update_launch", StoreAccess::Write},
    {StoreMethod::Launches, "launches", StoreAccess::Read},
    {StoreMethod::ProbeResults, "probe_results", StoreAccess::Read},
    {StoreMethod::ProbeCounts, "probe_counts", StoreAccess::Read},
    {StoreMethod::ProbeRowCount, "probe_row_count", StoreAccess::Read},
    {StoreMethod::HostSamples, "host_samples", StoreAccess::Read},
    {StoreMethod::ProcessSamples, "process_samples", StoreAccess::Read},
    {StoreMethod::Events, "events", StoreAccess::Read},
    {StoreMethod::Status, "status", StoreAccess::Read},
    {StoreMethod::MaxIds, "max_ids", StoreAccess::Read},
}};

constexpr bool methods_in_enum_order() {
  for (size_t i = 0; i < kMethods.size(); ++i)
    if (static_cast<size_t>(kMethods[i].method) != i) return false;
  return true;
}
static_assert(methods_in_enum_order(), "kMethods lists every StoreMethod once, in enum order");
static_assert(static_cast<size_t>(StoreMethod::MaxIds) + 1 == kStoreMethodCount);

}  // namespace

const std::array<StoreMethod, kStoreMethodCount>& all_store_methods() {
  static const std::array<StoreMethod, kStoreMethodCount> all = [] {
    std::array<StoreMethod, kStoreMethodCount> a{};
    for (size_t i = 0; i < a.size(); ++i) a[i] = kMethods[i].method;
    return a;
  }();
  return all;
}

std::string_view to_string(StoreMethod m) { return kMethods[static_cast<size_t>(m)].name; }
StoreAccess access_of(StoreMethod m) { return kMethods[static_cast<size_t>(m)].access; }

// ---- faults
void FaultyStore::fail_next(StoreMethod m, int64_t times, const Error& fault) {
  slot(m).fail_next = times;
  slot(m).next = fault;
}

void FaultyStore::fail(StoreMethod m, const Error& fault) { slot(m).always = fault; }

void FaultyStore::fail_writes(const Error& fault) {
  for (StoreMethod m : all_store_methods())
    if (access_of(m) == StoreAccess::Write) fail(m, fault);
}

void FaultyStore::fail_reads(const Error& fault) {
  for (StoreMethod m : all_store_methods())
    if (access_of(m) == StoreAccess::Read) fail(m, fault);
}

void FaultyStore::fail_when(FaultRule rule) { rules_.push_back(std::move(rule)); }

void FaultyStore::clear(StoreMethod m) {
  slot(m).fail_next = 0;
  slot(m).always.reset();
}

void FaultyStore::clear() {
  for (StoreMethod m : all_store_methods()) clear(m);
  rules_.clear();
}

// ---- counts
int64_t FaultyStore::calls(StoreAccess a) const {
  int64_t n = 0;
  for (StoreMethod m : all_store_methods())
    if (access_of(m) == a) n += calls(m);
  return n;
}

int64_t FaultyStore::failures(StoreAccess a) const {
  int64_t n = 0;
  for (StoreMethod m : all_store_methods())
    if (access_of(m) == a) n += failures(m);
  return n;
}

void FaultyStore::reset_counts() {
  for (Slot& s : slots_) s.calls = s.failures = 0;
}

std::optional<Error> FaultyStore::enter(StoreMethod m) {
  Slot& s = slot(m);
  ++s.calls;
  std::optional<Error> fault;
  if (s.fail_next > 0) {
    --s.fail_next;
    fault = s.next;
  } else if (s.always) {
    fault = s.always;
  } else {
    const StoreCall call{m, access_of(m), s.calls};
    for (const FaultRule& rule : rules_)
      if ((fault = rule(call))) break;
  }
  if (!fault) return std::nullopt;
  ++s.failures;
  return error_in(to_string(m), *fault);
}

// ---- Store: each call forwarded unless it is to fail
using M = StoreMethod;

Result<int64_t> FaultyStore::upsert_host(const HostInfo& host, int64_t now_ms) {
  return forward<Result<int64_t>>(M::UpsertHost, [&] { return inner_.upsert_host(host, now_ms); });
}
Result<int64_t> FaultyStore::upsert_candidate(const CandidateRow& c, int64_t now_ms) {
  return forward<Result<int64_t>>(M::UpsertCandidate, [&] { return inner_.upsert_candidate(c, now_ms); });
}
Status FaultyStore::set_fingerprint(int64_t candidate_id, const std::string& fingerprint) {
  return forward<Status>(M::SetFingerprint, [&] { return inner_.set_fingerprint(candidate_id, fingerprint); });
}

Status FaultyStore::set_baseline(int64_t candidate_id, std::optional<int64_t> baseline_id) {
  return forward<Status>(M::SetBaseline, [&] { return inner_.set_baseline(candidate_id, baseline_id); });
}
Result<std::optional<CandidateRow>> FaultyStore::candidate(int64_t id) {
  return forward<Result<std::optional<CandidateRow>>>(M::Candidate, [&] { return inner_.candidate(id); });
}
Result<std::vector<CandidateRow>> FaultyStore::candidates() {
  return forward<Result<std::vector<CandidateRow>>>(M::Candidates, [&] { return inner_.candidates(); });
}
Result<int64_t> FaultyStore::insert_probe_result(const ProbeResult& r) {
  return forward<Result<int64_t>>(M::InsertProbeResult, [&] { return inner_.insert_probe_result(r); });
}
Result<int64_t> FaultyStore::insert_host_sample(const HostSample& s) {
  return forward<Result<int64_t>>(M::InsertHostSample, [&] { return inner_.insert_host_sample(s); });
}
Result<int64_t> FaultyStore::insert_process_sample(const ProcessSample& s) {
  return forward<Result<int64_t>>(M::InsertProcessSample, [&] { return inner_.insert_process_sample(s); });
}
Result<int64_t> FaultyStore::insert_event(const Event& e) {
  return forward<Result<int64_t>>(M::InsertEvent, [&] { return inner_.insert_event(e); });
}
Result<int64_t> FaultyStore::insert_stage(const StageRow& s) {
  return forward<Result<int64_t>>(M::InsertStage, [&] { return inner_.insert_stage(s); });
}
Status FaultyStore::update_stage(const StageRow& s) {
  return forward<Status>(M::UpdateStage, [&] { return inner_.update_stage(s); });
}
Result<std::vector<StageRow>> FaultyStore::stages(int64_t candidate_id) {
  return forward<Result<std::vector<StageRow>>>(M::Stages, [&] { return inner_.stages(candidate_id); });
}
Result<int64_t> FaultyStore::insert_verdict(const VerdictRow& v) {
  return forward<Result<int64_t>>(M::InsertVerdict, [&] { return inner_.insert_verdict(v); });
}
Result<std::optional<VerdictRow>> FaultyStore::latest_verdict(int64_t candidate_id) {
  return forward<Result<std::optional<VerdictRow>>>(M::LatestVerdict,
                                                    [&] { return inner_.latest_verdict(candidate_id); });
}
Result<std::vector<VerdictRow>> FaultyStore::verdicts(int64_t candidate_id) {
  return forward<Result<std::vector<VerdictRow>>>(M::Verdicts, [&] { return inner_.verdicts(candidate_id); });
}
Result<int64_t> FaultyStore::insert_context_reach(const ContextReach& r) {
  return forward<Result<int64_t>>(M::InsertContextReach, [&] { return inner_.insert_context_reach(r); });
}
Result<std::optional<ContextReach>> FaultyStore::context_reach(int64_t candidate_id) {
  return forward<Result<std::optional<ContextReach>>>(M::ContextReach,
                                                      [&] { return inner_.context_reach(candidate_id); });
}
Result<int64_t> FaultyStore::insert_golden_answer(const GoldenAnswerRow& r) {
  return forward<Result<int64_t>>(M::InsertGoldenAnswer, [&] { return inner_.insert_golden_answer(r); });
}
Result<std::vector<GoldenAnswerRow>> FaultyStore::golden_answers(int64_t candidate_id) {
  return forward<Result<std::vector<GoldenAnswerRow>>>(M::GoldenAnswers,
                                                       [&] { return inner_.golden_answers(candidate_id); });
}
Status FaultyStore::put_stage_evidence(const StageEvidence& e) {
  return forward<Status>(M::PutStageEvidence, [&] { return inner_.put_stage_evidence(e); });
}
Result<std::optional<StageEvidence>> FaultyStore::stage_evidence(int64_t stage_id) {
  return forward<Result<std::optional<StageEvidence>>>(M::StageEvidenceOf,
                                                       [&] { return inner_.stage_evidence(stage_id); });
}
Result<int64_t> FaultyStore::insert_control(const ControlRequest& c) {
  return forward<Result<int64_t>>(M::InsertControl, [&] { return inner_.insert_control(c); });
}
Result<std::vector<ControlRequest>> FaultyStore::pending_controls() {
  return forward<Result<std::vector<ControlRequest>>>(M::PendingControls, [&] { return inner_.pending_controls(); });
}
Status FaultyStore::mark_control_handled(int64_t id, int64_t now_ms, const std::string& result) {
  return forward<Status>(M::MarkControlHandled, [&] { return inner_.mark_control_handled(id, now_ms, result); });
}
Result<int64_t> FaultyStore::insert_launch(const RuntimeLaunch& l) {
  return forward<Result<int64_t>>(M::InsertLaunch, [&] { return inner_.insert_launch(l); });
}
Status FaultyStore::update_launch(const RuntimeLaunch& l) {
  return forward<Status>(M::UpdateLaunch, [&] { return inner_.update_launch(l); });
}
Result<std::vector<RuntimeLaunch>> FaultyStore::launches(const LaunchQuery& q) {
  return forward<Result<std::vector<RuntimeLaunch>>>(M::Launches, [&] { return inner_.launches(q); });
}
Result<std::vector<ProbeResult>> FaultyStore::probe_results(const ProbeQuery& q) {
  probe_queries_.push_back(q);
  return forward<Result<std::vector<ProbeResult>>>(M::ProbeResults, [&] { return inner_.probe_results(q); });
}
Result<std::vector<ProbeCount>> FaultyStore::probe_counts(const ProbeQuery& q) {
  return forward<Result<std::vector<ProbeCount>>>(M::ProbeCounts, [&] { return inner_.probe_counts(q); });
}
Result<int64_t> FaultyStore::probe_row_count(const ProbeQuery& q) {
  return forward<Result<int64_t>>(M::ProbeRowCount, [&] { return inner_.probe_row_count(q); });
}
Result<std::vector<HostSample>> FaultyStore::host_samples(const SampleQuery& q) {
  return forward<Result<std::vector<HostSample>>>(M::HostSamples, [&] { return inner_.host_samples(q); });
}
Result<std::vector<ProcessSample>> FaultyStore::process_samples(const SampleQuery& q) {
  return forward<Result<std::vector<ProcessSample>>>(M::ProcessSamples, [&] { return inner_.process_samples(q); });
}
Result<std::vector<Event>> FaultyStore::events(const EventQuery& q) {
  return forward<Result<std::vector<Event>>>(M::Events, [&] { return inner_.events(q); });
}
Result<std::vector<StatusRow>> FaultyStore::status() {
  return forward<Result<std::vector<StatusRow>>>(M::Status, [&] { return inner_.status(); });
}
Result<Store::MaxIds> FaultyStore::max_ids() {
  return forward<Result<MaxIds>>(M::MaxIds, [&] { return inner_.max_ids(); });
}

}  // namespace soak::test
