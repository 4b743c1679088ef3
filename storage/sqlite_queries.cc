// SqliteStore's queries: rows by id range, time range and owner, and the
// one-pass status summary. The SELECT lists and readers come from the column
// declarations (storage/columns.h); a stored value that does not read fails the
// query with the table, row id, column and value.
#include <algorithm>
#include <string>

#include "storage/columns.h"
#include "storage/schema.h"
#include "storage/sqlite_stmt.h"
#include "storage/sqlite_store.h"

namespace soak {

namespace {

template <class Row>
Result<std::optional<Row>> first_of(Result<std::vector<Row>> rows) {
  if (!rows) return rows.error();
  if (rows->empty()) return std::optional<Row>{};
  return std::optional<Row>(std::move(rows->front()));
}

Where by_candidate(int64_t candidate_id) {
  Where w;
  w.add("candidate_id = ?", std::optional<int64_t>(candidate_id));
  return w;
}

// The probe rows a ProbeQuery selects: the rows themselves and their counts
// must be the same rows.
Where probe_where(const ProbeQuery& q) {
  Where w;
  w.add("candidate_id = ?", q.candidate_id);
  w.add("stage_id = ?", q.stage_id);
  w.add("id >= ?", q.min_id);
  w.add("id <= ?", q.max_id);
  w.add("started_ms >= ?", q.since_ms);
  w.add("started_ms <= ?", q.until_ms);
  w.add("kind = ?", q.kind);
  w.add("(stage_id IS NOT NULL) = ?", q.staged_only ? std::optional<int64_t>(1) : std::nullopt);
  return w;
}

// Samples and events are bounded alike: a time window on ts_ms and an id range.
void add_window(Where& w, const std::optional<int64_t>& since_ms, const std::optional<int64_t>& until_ms,
                const std::optional<int64_t>& min_id, const std::optional<int64_t>& max_id) {
  w.add("ts_ms >= ?", since_ms);
  w.add("ts_ms <= ?", until_ms);
  w.add("id >= ?", min_id);
  w.add("id <= ?", max_id);
}

}  // namespace

// ============================================================== identities
Result<std::optional<CandidateRow>> SqliteStore::candidate(int64_t id) {
  Where w;
  w.add("id = ?", std::optional<int64_t>(id));
  return first_of(select_rows<CandidateRow>(cache_.get(), db_, w, ""));
}

Result<std::vector<CandidateRow>> SqliteStore::candidates() {
  return select_rows<CandidateRow>(cache_.get(), db_, Where{}, " ORDER BY id");
}

// ============================================================== stages, verdicts, control
Result<std::vector<StageRow>> SqliteStore::stages(int64_t candidate_id) {
  return select_rows<StageRow>(cache_.get(), db_, by_candidate(candidate_id), " ORDER BY id");
}

Result<std::optional<VerdictRow>> SqliteStore::latest_verdict(int64_t candidate_id) {
  return first_of(select_rows<VerdictRow>(cache_.get(), db_, by_candidate(candidate_id), " ORDER BY id DESC LIMIT 1"));
}

Result<std::vector<VerdictRow>> SqliteStore::verdicts(int64_t candidate_id) {
  return select_rows<VerdictRow>(cache_.get(), db_, by_candidate(candidate_id), " ORDER BY id");
}

Result<std::optional<ContextReach>> SqliteStore::context_reach(int64_t candidate_id) {
  if (version_ < kContextReachSchema) return std::optional<ContextReach>{};  // an older store read as it is: none
  return first_of(
      select_rows<ContextReach>(cache_.get(), db_, by_candidate(candidate_id), " ORDER BY id DESC LIMIT 1"));
}

Result<std::vector<GoldenAnswerRow>> SqliteStore::golden_answers(int64_t candidate_id) {
  if (version_ < kGoldenSchema) return std::vector<GoldenAnswerRow>{};  // an older store read as it is: none
  return select_rows<GoldenAnswerRow>(cache_.get(), db_, by_candidate(candidate_id), " ORDER BY id");
}

Result<std::optional<StageEvidence>> SqliteStore::stage_evidence(int64_t stage_id) {
  if (version_ < kStageEvidenceSchema) return std::optional<StageEvidence>{};  // an older store read as it is: none
  Where w;
  w.add("stage_id = ?", std::optional<int64_t>(stage_id));
  auto rows = select_all<StageEvidence>(
      cache_.get(), db_, "SELECT stage_id, candidate_id, ts_ms, probe_max_id, measures FROM stage_evidence" + w.sql(),
      w, [](const Stmt& s) -> Result<StageEvidence> {
        return StageEvidence{s.i64(0), s.i64(1), s.i64(2), s.i64(3), s.text(4)};
      });
  return first_of(std::move(rows));
}

Result<std::vector<ControlRequest>> SqliteStore::pending_controls() {
  return select_rows<ControlRequest>(cache_.get(), db_, Where{}, " WHERE handled_ms IS NULL ORDER BY id");
}

Result<std::vector<RuntimeLaunch>> SqliteStore::launches(const LaunchQuery& q) {
  if (version_ < kLaunchesSchema) return std::vector<RuntimeLaunch>{};  // an older store read as it is: none
  Where w;
  w.add("host_id = ?", q.host_id);
  w.add("name = ?", q.name);
  w.add("candidate_id = ?", q.candidate_id);
  if (q.open_only) w.add("(state IN ('running', 'left_running')) = ?", std::optional<int64_t>(1));
  return select_rows<RuntimeLaunch>(cache_.get(), db_, w, " ORDER BY id");
}

// ============================================================== rows
// At most how many rows a query can return, counted from an index alone (the
// stage's, the candidate's kind's or the candidate's, with the id range; no
// row is read, and a count is about a hundredth of reading what it counts).
// A small limit is its own bound; 0 when the query names none of them, or
// the count fails (the read then grows as it goes).
size_t SqliteStore::probe_rows_at_most(const ProbeQuery& q) {
  constexpr int64_t kSmallLimit = 1024;
  if (q.limit > 0 && q.limit <= kSmallLimit) return static_cast<size_t>(q.limit);
  if (!q.stage_id && !q.candidate_id) return 0;
  ProbeQuery indexed;  // what an index alone answers: no time window
  if (q.stage_id) {
    indexed.stage_id = q.stage_id;
  } else {
    indexed.candidate_id = q.candidate_id;
    indexed.kind = q.kind;
  }
  indexed.min_id = q.min_id;
  indexed.max_id = q.max_id;
  auto n = probe_row_count(indexed);
  if (!n || *n <= 0) return 0;
  return static_cast<size_t>(q.limit > 0 ? std::min(*n, q.limit) : *n);
}

Result<std::vector<ProbeResult>> SqliteStore::probe_results(const ProbeQuery& q) {
  const Where w = probe_where(q);
  std::string tail = " ORDER BY id";
  if (q.limit > 0) tail += " LIMIT " + std::to_string(q.limit);
  return select_rows<ProbeResult>(cache_.get(), db_, w, tail, probe_rows_at_most(q));
}

Result<std::vector<ProbeCount>> SqliteStore::probe_counts(const ProbeQuery& q) {
  const Where w = probe_where(q);
  const std::string sql = "SELECT candidate_id, kind, outcome, COUNT(*) FROM probe_results" + w.sql() +
                          " GROUP BY candidate_id, kind, outcome ORDER BY candidate_id, kind, outcome";
  return select_all<ProbeCount>(cache_.get(), db_, sql, w, [](const Stmt& s) -> Result<ProbeCount> {
    ProbeCount c;
    c.candidate_id = s.i64(0);
    auto kind = parse_probe_kind(s.text(1));
    auto outcome = parse_outcome(s.text(2));
    if (!kind || !outcome)
      return make_error("probe_results: stored kind \"" + s.text(1) + "\" / outcome \"" + s.text(2) +
                        "\" is not one soakd knows (a newer soakd's store?)");
    c.kind = *kind;
    c.outcome = *outcome;
    c.n = s.i64(3);
    return c;
  });
}

Result<int64_t> SqliteStore::probe_row_count(const ProbeQuery& q) {
  const Where w = probe_where(q);
  SOAK_TRY_ASSIGN(auto n, select_all<int64_t>(cache_.get(), db_, "SELECT COUNT(*) FROM probe_results" + w.sql(), w,
                                              [](const Stmt& s) -> Result<int64_t> { return s.i64(0); }));
  return n.empty() ? 0 : n.front();
}

Result<std::vector<HostSample>> SqliteStore::host_samples(const SampleQuery& q) {
  Where w;
  w.add("host_id = ?", q.host_id);
  add_window(w, q.since_ms, q.until_ms, q.min_id, q.max_id);
  return select_rows<HostSample>(cache_.get(), db_, w,
                                 q.newest_only ? " ORDER BY ts_ms DESC, id DESC LIMIT 1" : " ORDER BY ts_ms, id");
}

Result<std::vector<ProcessSample>> SqliteStore::process_samples(const SampleQuery& q) {
  Where w;
  w.add("host_id = ?", q.host_id);
  w.add("candidate_id = ?", q.candidate_id);
  add_window(w, q.since_ms, q.until_ms, q.min_id, q.max_id);
  return select_rows<ProcessSample>(cache_.get(), db_, w, " ORDER BY ts_ms, id");
}

Result<std::vector<Event>> SqliteStore::events(const EventQuery& q) {
  Where w;
  if (q.host_wide == HostWide::Include)
    w.add("(candidate_id = ? OR candidate_id IS NULL)", q.candidate_id);
  else
    w.add("candidate_id = ?", q.candidate_id);
  w.add("host_id = ?", q.host_id);
  w.add("kind = ?", q.kind);
  add_window(w, q.since_ms, q.until_ms, q.min_id, q.max_id);
  return select_rows<Event>(cache_.get(), db_, w, " ORDER BY ts_ms, id");
}

// ============================================================== summaries
Result<std::vector<StatusRow>> SqliteStore::status() {
  // One pass: each candidate with its latest stage and latest verdict (without
  // its metrics), via the (candidate_id, id) indexes; no scan of probe_results.
  static const std::string sql =
      "SELECT " + select_list<CandidateRow>("c.") + ", " + select_list<StageRow>("s.") + ", " +
      select_list<VerdictRow>("v.", Selection::Summary) +
      " FROM candidates c "
      "LEFT JOIN stages s ON s.id = (SELECT MAX(id) FROM stages WHERE candidate_id = c.id) "
      "LEFT JOIN verdicts v ON v.id = (SELECT MAX(id) FROM verdicts WHERE candidate_id = c.id) "
      "ORDER BY c.name, c.id";
  static constexpr int kStageAt = selected_count<CandidateRow>();
  static constexpr int kVerdictAt = kStageAt + selected_count<StageRow>();
  return select_all<StatusRow>(cache_.get(), db_, sql, Where{}, [](const Stmt& s) -> Result<StatusRow> {
    StatusRow r;
    SOAK_TRY_ASSIGN(r.candidate, read_row<CandidateRow>(s));
    if (!s.null(kStageAt)) {  // the stage's id: NULL when the candidate has no stage yet
      SOAK_TRY_ASSIGN(r.stage, read_row<StageRow>(s, kStageAt));
    }
    if (!s.null(kVerdictAt)) {
      SOAK_TRY_ASSIGN(r.verdict, read_row<VerdictRow>(s, kVerdictAt));
    }
    return r;
  });
}

Result<Store::MaxIds> SqliteStore::max_ids() {
  MaxIds m;
  for (auto [table, out] : {std::pair<const char*, int64_t*>{"probe_results", &m.probe},
                            {"host_samples", &m.host_sample},
                            {"process_samples", &m.process_sample},
                            {"events", &m.event}}) {
    SOAK_TRY_ASSIGN(*out, query_int(db_, (std::string("SELECT COALESCE(MAX(id), 0) FROM ") + table).c_str()));
  }
  if (version_ >= kGoldenSchema) {
    SOAK_TRY_ASSIGN(m.golden, query_int(db_, "SELECT COALESCE(MAX(id), 0) FROM golden_answers"));
  }
  return m;
}

}  // namespace soak
