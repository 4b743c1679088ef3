// SQLite implementation of Store. WAL journal, busy_timeout, foreign keys on,
// synchronous=FULL (a reported insert survives a crash and a power cut).
//
// Opening never harms a file that is not ours: a database with tables but
// without soakd's application_id is refused, a store written by a newer soakd
// (user_version above ours) is refused before anything is written, and a file
// that is not SQLite at all is refused. New files are created 0600, and any
// directory soakd creates for them 0700.
#pragma once

#include <memory>
#include <string>

#include "storage/evidence_json.h"
#include "storage/store.h"

struct sqlite3;

namespace soak {

class StmtCache;

// ReadWrite: the daemon (creates, migrates). ReadOnly: soakctl queries.
// Control: soakctl's control requests — writes to an existing store at the
// current schema, never creates or migrates it.
enum class OpenMode { ReadWrite, ReadOnly, Control };
// Full: synchronous=FULL, every committed row survives a crash or power cut (the
// daemon). Fast: synchronous=OFF, for tests and benchmarks that build large
// stores in virtual time and do not need crash safety.
enum class Durability { Full, Fast };

inline constexpr int kBusyTimeoutMs = 5000;

// The methods live by concept: open and the writes in sqlite_store.cc, the
// queries in sqlite_queries.cc; every row type's columns in columns.h.
class SqliteStore final : public Store {
 public:
  // ReadWrite creates and migrates; ReadOnly and Control require an existing
  // store and never migrate it. Every migration since v1 only adds tables, so
  // an older store is read as it is: the tables it lacks read as empty.
  static Result<std::unique_ptr<SqliteStore>> open(const std::string& path, OpenMode mode,
                                                   Durability durability = Durability::Full);
  // Whether soakd could keep a store at `path`, said plainly before anything
  // runs: a directory, a folder it cannot write in, a read-only file system,
  // a file it may not write. Does not create anything.
  static Status check_location(const std::string& path);
  ~SqliteStore() override;

  const std::string& path() const { return path_; }
  int user_version() const { return version_; }
  // One read transaction over every query that follows, until the store
  // closes: a command that reads several tables while soakd writes sees one
  // committed state, and SQLite takes its WAL read lock and checks the files
  // once rather than for each statement. For short-lived readers (soakctl's
  // queries): a reader held open would never see a newer row.
  Status begin_snapshot();

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

  // Raw handle for the store's own tests and benchmarks.
  sqlite3* db() const { return db_; }

 private:
  SqliteStore(sqlite3* db, std::string path, int version);
  size_t probe_rows_at_most(const ProbeQuery& q);
  sqlite3* db_;
  std::string path_;
  int version_;
  std::unique_ptr<StmtCache> cache_;
};

}  // namespace soak
