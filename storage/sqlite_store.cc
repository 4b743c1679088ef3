#include "storage/sqlite_store.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <functional>
#include <system_error>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "core/files.h"
#include "storage/schema.h"

namespace soak {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

}  // namespace

// Prepared statements kept for reuse, keyed by their SQL text: the daemon runs
// the same few inserts and queries for weeks, and parsing them anew each time
// costs more than running them.
struct SqliteStore::StmtCache {
  std::unordered_map<std::string, sqlite3_stmt*> idle;
  ~StmtCache() {
    for (auto& [sql, st] : idle) sqlite3_finalize(st);
  }
  sqlite3_stmt* take(const std::string& sql) {
    auto it = idle.find(sql);
    if (it == idle.end()) return nullptr;
    sqlite3_stmt* st = it->second;
    idle.erase(it);
    return st;
  }
  void put(std::string sql, sqlite3_stmt* st) {
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    if (!idle.emplace(std::move(sql), st).second) sqlite3_finalize(st);
  }
};

namespace {

using StmtCache = SqliteStore::StmtCache;

// ---- a thin prepared-statement wrapper --------------------------------------
class Stmt {
 public:
  // With a cache the statement is borrowed from it and returned on destruction.
  Stmt(StmtCache* cache, sqlite3* db, const std::string& sql) : db_(db), cache_(cache) {
    if (cache_ && (s_ = cache_->take(sql))) {
      rc_ = SQLITE_OK;
    } else {
      rc_ = sqlite3_prepare_v2(db, sql.c_str(), -1, &s_, nullptr);
    }
    if (cache_) sql_ = sql;
  }
  ~Stmt() {
    if (cache_ && rc_ == SQLITE_OK && s_)
      cache_->put(std::move(sql_), s_);
    else
      sqlite3_finalize(s_);
  }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;

  bool ok() const { return rc_ == SQLITE_OK; }
  std::string error() const { return sqlite3_errmsg(db_); }

  Stmt& bind(int64_t v) { sqlite3_bind_int64(s_, ++i_, v); return *this; }
  Stmt& bind(int v) { sqlite3_bind_int64(s_, ++i_, v); return *this; }
  Stmt& bind(bool v) { sqlite3_bind_int64(s_, ++i_, v ? 1 : 0); return *this; }
  Stmt& bind(double v) { sqlite3_bind_double(s_, ++i_, v); return *this; }
  Stmt& bind(const std::string& v) {
    sqlite3_bind_text(s_, ++i_, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
    return *this;
  }
  Stmt& bind(std::string_view v) {
    sqlite3_bind_text(s_, ++i_, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
    return *this;
  }
  Stmt& bind(const char* v) { return bind(std::string_view(v)); }
  // Closed vocabularies are stored by their names (core/types.h).
  template <class E>
    requires std::is_enum_v<E>
  Stmt& bind(E e) { return bind(to_string(e)); }
  template <class T>
  Stmt& bind(const std::optional<T>& v) {
    if (v) return bind(*v);
    sqlite3_bind_null(s_, ++i_);
    return *this;
  }

  int step() { return sqlite3_step(s_); }

  // column readers
  int64_t i64(int c) const { return sqlite3_column_int64(s_, c); }
  double dbl(int c) const { return sqlite3_column_double(s_, c); }
  bool null(int c) const { return sqlite3_column_type(s_, c) == SQLITE_NULL; }
  std::string text(int c) const {
    auto p = sqlite3_column_text(s_, c);
    return p ? std::string(reinterpret_cast<const char*>(p), static_cast<size_t>(sqlite3_column_bytes(s_, c))) : "";
  }
  std::optional<int64_t> oi64(int c) const { return null(c) ? std::nullopt : std::optional<int64_t>(i64(c)); }
  std::optional<int> oint(int c) const { return null(c) ? std::nullopt : std::optional<int>(static_cast<int>(i64(c))); }
  std::optional<double> odbl(int c) const { return null(c) ? std::nullopt : std::optional<double>(dbl(c)); }

 private:
  sqlite3* db_;
  StmtCache* cache_;
  std::string sql_;
  sqlite3_stmt* s_ = nullptr;
  int rc_;
  int i_ = 0;
};

std::string errmsg(sqlite3* db, const std::string& what) { return what + ": " + sqlite3_errmsg(db); }

Status exec(sqlite3* db, const char* sql) {
  char* err = nullptr;
  if (sqlite3_exec(db, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    std::string m = err ? err : "unknown error";
    sqlite3_free(err);
    return make_error(m);
  }
  return {};
}

Result<int64_t> pragma_int(sqlite3* db, const char* pragma) {
  Stmt s(nullptr, db, pragma);
  if (!s.ok()) return make_error(s.error());
  int rc = s.step();
  if (rc == SQLITE_ROW) return s.i64(0);
  if (rc == SQLITE_DONE) return int64_t{0};
  return make_error(s.error());
}

// Runs a prepared insert and returns the new row id.
Result<int64_t> run_insert(sqlite3* db, Stmt& s, const char* what) {
  if (!s.ok()) return make_error(errmsg(db, std::string("prepare ") + what));
  if (s.step() != SQLITE_DONE) return make_error(errmsg(db, std::string("insert ") + what));
  return static_cast<int64_t>(sqlite3_last_insert_rowid(db));
}

Status run_update(sqlite3* db, Stmt& s, const char* what) {
  if (!s.ok()) return make_error(errmsg(db, std::string("prepare ") + what));
  if (s.step() != SQLITE_DONE) return make_error(errmsg(db, std::string("update ") + what));
  return {};
}

// ---- row <-> statement ------------------------------------------------------
constexpr const char* kCandidateCols =
    "id, host_id, name, model, runtime, build, base_url, first_seen_ms, last_seen_ms, baseline_id";

CandidateRow read_candidate(const Stmt& s) {
  CandidateRow c;
  c.id = s.i64(0);
  c.host_id = s.i64(1);
  c.name = s.text(2);
  c.model = s.text(3);
  c.runtime = parse_runtime_kind(s.text(4)).value_or(RuntimeKind::OpenAI);
  c.build = s.text(5);
  c.base_url = s.text(6);
  c.first_seen_ms = s.i64(7);
  c.last_seen_ms = s.i64(8);
  c.baseline_id = s.oi64(9);
  return c;
}

constexpr const char* kStageCols =
    "id, candidate_id, kind, state, started_ms, length_ms, deadline_ms, ended_ms, reason";

StageRow read_stage(const Stmt& s, int o = 0) {
  StageRow r;
  r.id = s.i64(o + 0);
  r.candidate_id = s.i64(o + 1);
  r.kind = parse_stage_kind(s.text(o + 2)).value_or(StageKind::Smoke);
  r.state = parse_stage_state(s.text(o + 3)).value_or(StageState::Pending);
  r.started_ms = s.i64(o + 4);
  r.length_ms = s.i64(o + 5);
  r.deadline_ms = s.i64(o + 6);
  r.ended_ms = s.oi64(o + 7);
  r.reason = s.text(o + 8);
  return r;
}

constexpr const char* kVerdictCols =
    "id, candidate_id, stage_id, ts_ms, state, stage, reason, judge_version, config_hash, "
    "evidence_first_id, evidence_last_id, baseline_id, baseline_mode, metrics, is_override, who, why, judge_input";

VerdictRow read_verdict(const Stmt& s, int o = 0, bool with_metrics = true) {
  VerdictRow v;
  v.id = s.i64(o + 0);
  v.candidate_id = s.i64(o + 1);
  v.stage_id = s.oi64(o + 2);
  v.wall_ms = s.i64(o + 3);
  v.state = parse_verdict_state(s.text(o + 4)).value_or(VerdictState::Inconclusive);
  v.stage = s.text(o + 5);
  v.reason = s.text(o + 6);
  v.judge_version = s.text(o + 7);
  v.config_hash = s.text(o + 8);
  v.evidence_first_id = s.i64(o + 9);
  v.evidence_last_id = s.i64(o + 10);
  v.baseline_id = s.oi64(o + 11);
  v.baseline_mode = s.text(o + 12);
  if (with_metrics) {
    auto m = metrics_from_json(s.text(o + 13));
    if (m) v.metrics = std::move(*m);
  }
  v.is_override = s.i64(o + 14) != 0;
  v.who = s.text(o + 15);
  v.why = s.text(o + 16);
  if (with_metrics) v.judge_input_json = s.text(o + 17);
  return v;
}

constexpr const char* kProbeCols =
    "id, candidate_id, host_id, stage_id, started_ms, kind, task, workload_id, fixture_hash, size_tokens, "
    "cache_state, sampling, thinking, client_concurrency, runtime_slots, group_id, outcome, http_status, "
    "detail, t_connect_us, t_first_byte_us, t_first_event_us, t_first_token_us, t_last_token_us, "
    "t_terminal_us, t_done_us, itl_p50_us, itl_p95_us, itl_max_us, client_decode_tps, timing_artifact, "
    "prompt_tokens, completion_tokens, reasoning_tokens, content_events, reasoning_events, "
    "server_prompt_n, server_cache_n, server_predicted_n, server_prompt_ms, server_prompt_tps, "
    "server_predicted_ms, server_predicted_tps, server_ttft_ms, server_draft_n, server_draft_accepted, "
    "finish_reason, response_model, bytes_received, body_hash, excerpt, extra";

ProbeResult read_probe(const Stmt& s) {
  ProbeResult r;
  int c = 0;
  r.id = s.i64(c++);
  r.candidate_id = s.i64(c++);
  r.host_id = s.i64(c++);
  r.stage_id = s.oi64(c++);
  r.started_wall_ms = s.i64(c++);
  r.kind = parse_probe_kind(s.text(c++)).value_or(ProbeKind::Health);
  r.task = s.text(c++);
  r.workload_id = s.text(c++);
  r.fixture_hash = s.text(c++);
  r.size_tokens = s.oi64(c++);
  r.cache_state = parse_cache_state(s.text(c++)).value_or(CacheState::None);
  r.sampling_json = s.text(c++);
  if (!s.null(c)) r.thinking = s.i64(c) != 0;
  ++c;
  r.client_concurrency = static_cast<int>(s.i64(c++));
  r.runtime_slots = s.oint(c++);
  r.group_id = s.oi64(c++);
  r.outcome = parse_outcome(s.text(c++)).value_or(Outcome::HarnessError);
  r.http_status = s.oint(c++);
  r.detail = s.text(c++);
  r.t_connect_us = s.oi64(c++);
  r.t_first_byte_us = s.oi64(c++);
  r.t_first_event_us = s.oi64(c++);
  r.t_first_token_us = s.oi64(c++);
  r.t_last_token_us = s.oi64(c++);
  r.t_terminal_us = s.oi64(c++);
  r.t_done_us = s.oi64(c++);
  r.itl_p50_us = s.oi64(c++);
  r.itl_p95_us = s.oi64(c++);
  r.itl_max_us = s.oi64(c++);
  r.client_decode_tps = s.odbl(c++);
  r.timing_artifact = s.i64(c++) != 0;
  r.prompt_tokens = s.oi64(c++);
  r.completion_tokens = s.oi64(c++);
  r.reasoning_tokens = s.oi64(c++);
  r.content_events = s.i64(c++);
  r.reasoning_events = s.i64(c++);
  r.server_prompt_n = s.oi64(c++);
  r.server_cache_n = s.oi64(c++);
  r.server_predicted_n = s.oi64(c++);
  r.server_prompt_ms = s.odbl(c++);
  r.server_prompt_tps = s.odbl(c++);
  r.server_predicted_ms = s.odbl(c++);
  r.server_predicted_tps = s.odbl(c++);
  r.server_ttft_ms = s.odbl(c++);
  r.server_draft_n = s.oi64(c++);
  r.server_draft_accepted = s.oi64(c++);
  r.finish_reason = s.text(c++);
  r.response_model = s.text(c++);
  r.bytes_received = s.i64(c++);
  r.body_hash = s.text(c++);
  r.excerpt = s.text(c++);
  r.extra_json = s.text(c++);
  return r;
}

constexpr const char* kHostSampleCols =
    "id, host_id, ts_ms, free_bytes, active_bytes, inactive_bytes, wired_bytes, compressed_bytes, "
    "available_bytes, total_bytes, swap_used_bytes, swap_total_bytes, pageins, pageouts, swapins, "
    "swapouts, pressure_level, memorystatus_level, psi_some_avg10, psi_full_avg10, psi_some_total_us, "
    "psi_full_total_us, error";

constexpr const char* kProcessSampleCols =
    "id, host_id, candidate_id, ts_ms, pid, name, start_time, footprint_bytes, resident_bytes, "
    "swap_bytes, pss_bytes, error";

constexpr const char* kEventCols = "id, ts_ms, host_id, candidate_id, kind, detail, duration_ms";

constexpr const char* kControlCols =
    "id, ts_ms, candidate, candidate_id, action, is_override, who, why, handled_ms, result";

ControlRequest read_control(const Stmt& s) {
  ControlRequest c;
  c.id = s.i64(0);
  c.wall_ms = s.i64(1);
  c.candidate = s.text(2);
  c.candidate_id = s.oi64(3);
  c.action = parse_control_action(s.text(4)).value_or(ControlAction::Start);
  c.is_override = s.i64(5) != 0;
  c.who = s.text(6);
  c.why = s.text(7);
  c.handled_ms = s.oi64(8);
  c.result = s.text(9);
  return c;
}

// Builds "WHERE a = ? AND b >= ? ..." with its binders.
class Where {
 public:
  template <class T>
  void add(const char* clause, const std::optional<T>& v) {
    if (!v) return;
    sql_ += (sql_.empty() ? " WHERE " : " AND ");
    sql_ += clause;
    binders_.push_back([v](Stmt& s) { s.bind(*v); });
  }
  const std::string& sql() const { return sql_; }
  void bind(Stmt& s) const {
    for (const auto& b : binders_) b(s);
  }

 private:
  std::string sql_;
  std::vector<std::function<void(Stmt&)>> binders_;
};

template <class T, class F>
Result<std::vector<T>> select_all(StmtCache* cache, sqlite3* db, const std::string& sql, const Where& w, F read) {
  Stmt s(cache, db, sql);
  if (!s.ok()) return make_error(errmsg(db, "prepare query"));
  w.bind(s);
  std::vector<T> out;
  int rc;
  while ((rc = s.step()) == SQLITE_ROW) out.push_back(read(s));
  if (rc != SQLITE_DONE) return make_error(errmsg(db, "query"));
  return out;
}

}  // namespace

// ============================================================== open
Result<std::unique_ptr<SqliteStore>> SqliteStore::open(const std::string& path, OpenMode mode, Durability durability) {
  const bool rw = mode != OpenMode::ReadOnly;
  const bool existing_only = mode != OpenMode::ReadWrite;  // soakctl never creates or migrates a store
  std::error_code ec;
  bool exists = fs::exists(path, ec);
  if (!exists && existing_only)
    return make_error("no soakd store at " + path + " (start soakd once to create it, or pass --db PATH)");
  if (!exists) {
    if (auto st = make_parent_dirs_private(path); !st) return make_error(st.message());
    int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0 && errno != EEXIST) return make_error("cannot create store " + path + ": " + std::strerror(errno));
    if (fd >= 0) ::close(fd);
  }

  sqlite3* db = nullptr;
  int flags = rw ? SQLITE_OPEN_READWRITE : SQLITE_OPEN_READONLY;
  if (sqlite3_open_v2(path.c_str(), &db, flags | SQLITE_OPEN_NOMUTEX, nullptr) != SQLITE_OK) {
    std::string m = db ? sqlite3_errmsg(db) : "out of memory";
    sqlite3_close(db);
    return make_error("cannot open store " + path + ": " + m);
  }
  auto fail = [&](const std::string& m) -> Result<std::unique_ptr<SqliteStore>> {
    sqlite3_close(db);
    return make_error(m);
  };
  sqlite3_busy_timeout(db, kBusyTimeoutMs);

  // Identify before writing anything.
  auto app_id = pragma_int(db, "PRAGMA application_id");
  if (!app_id) return fail(path + " is not a soakd store (not an SQLite database: " + app_id.message() + "); refusing to touch it");
  auto version = pragma_int(db, "PRAGMA user_version");
  auto tables = pragma_int(db, "SELECT count(*) FROM sqlite_master");
  if (!version || !tables) return fail("cannot read " + path + ": " + sqlite3_errmsg(db));
  const bool empty = *tables == 0 && *version == 0 && *app_id == 0;
  if (!empty && *app_id != kSoakdApplicationId)
    return fail(path + " is not a soakd store (it holds other data); refusing to touch it. Point --db or \"store\" at another file.");
  if (*version > schema_version())
    return fail(path + " was written by a newer soakd (schema " + std::to_string(*version) + ", this soakd knows up to " +
                std::to_string(schema_version()) + "); upgrade soakd/soakctl. The store was not modified.");

  if (existing_only) {
    if (empty) return fail(path + " is an empty file, not a soakd store yet (start soakd once to create it)");
    if (*version < schema_version())
      return fail(path + " has schema " + std::to_string(*version) + " but this soakctl expects " +
                  std::to_string(schema_version()) + "; start the new soakd once to migrate it");
    const char* p = mode == OpenMode::ReadOnly ? "PRAGMA query_only = ON" : "PRAGMA foreign_keys = ON";
    if (auto st = exec(db, p); !st) return fail(st.message());
    return std::unique_ptr<SqliteStore>(new SqliteStore(db, path, static_cast<int>(*version)));
  }

  const char* sync = durability == Durability::Full ? "PRAGMA synchronous = FULL" : "PRAGMA synchronous = OFF";
  for (const char* p : {"PRAGMA journal_mode = WAL", sync, "PRAGMA foreign_keys = ON"}) {
    if (auto st = exec(db, p); !st) return fail("cannot configure store " + path + ": " + st.message());
  }
  // Migrate, one transaction per step, so a crash mid-migration leaves a whole version.
  int v = static_cast<int>(*version);
  const auto& ms = migrations();
  for (; v < schema_version(); ++v) {
    std::string sql = "BEGIN IMMEDIATE;\n" + std::string(ms[static_cast<size_t>(v)]) +
                      "\nPRAGMA application_id = " + std::to_string(kSoakdApplicationId) +
                      ";\nPRAGMA user_version = " + std::to_string(v + 1) + ";\nCOMMIT;";
    if (auto st = exec(db, sql.c_str()); !st) {
      exec(db, "ROLLBACK").ok();
      return fail("cannot migrate store " + path + " to schema " + std::to_string(v + 1) + ": " + st.message());
    }
  }
  ::chmod(path.c_str(), 0600);
  return std::unique_ptr<SqliteStore>(new SqliteStore(db, path, v));
}

SqliteStore::SqliteStore(sqlite3* db, std::string path, int version)
    : db_(db), path_(std::move(path)), version_(version), cache_(std::make_unique<StmtCache>()) {}

SqliteStore::~SqliteStore() {
  cache_.reset();  // statements are finalized before the connection closes
  sqlite3_close(db_);
}

// ============================================================== identities
Result<int64_t> SqliteStore::upsert_host(const HostInfo& h, int64_t now_ms) {
  Stmt s(cache_.get(), db_,
         "INSERT INTO hosts (hostname, hw_model, mem_bytes, os_version, first_seen_ms, last_seen_ms) "
         "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (hostname, hw_model, mem_bytes, os_version) "
         "DO UPDATE SET last_seen_ms = excluded.last_seen_ms RETURNING id");
  if (!s.ok()) return make_error(errmsg(db_, "prepare upsert host"));
  s.bind(h.hostname).bind(h.hw_model).bind(h.mem_bytes).bind(h.os_version).bind(now_ms).bind(now_ms);
  if (s.step() != SQLITE_ROW) return make_error(errmsg(db_, "upsert host"));
  int64_t id = s.i64(0);
  if (s.step() != SQLITE_DONE) return make_error(errmsg(db_, "upsert host"));
  return id;
}

Result<int64_t> SqliteStore::upsert_candidate(const CandidateRow& c, int64_t now_ms) {
  Stmt s(cache_.get(), db_,
         "INSERT INTO candidates (host_id, name, model, runtime, build, base_url, first_seen_ms, last_seen_ms, baseline_id) "
         "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (host_id, name, model, runtime, build) "
         "DO UPDATE SET last_seen_ms = excluded.last_seen_ms, base_url = excluded.base_url RETURNING id");
  if (!s.ok()) return make_error(errmsg(db_, "prepare upsert candidate"));
  s.bind(c.host_id).bind(c.name).bind(c.model).bind(c.runtime).bind(c.build).bind(c.base_url).bind(now_ms).bind(now_ms).bind(c.baseline_id);
  if (s.step() != SQLITE_ROW) return make_error(errmsg(db_, "upsert candidate"));
  int64_t id = s.i64(0);
  if (s.step() != SQLITE_DONE) return make_error(errmsg(db_, "upsert candidate"));
  return id;
}

Status SqliteStore::set_baseline(int64_t candidate_id, std::optional<int64_t> baseline_id) {
  Stmt s(cache_.get(), db_, "UPDATE candidates SET baseline_id = ? WHERE id = ?");
  s.bind(baseline_id).bind(candidate_id);
  return run_update(db_, s, "candidate baseline");
}

Result<std::optional<CandidateRow>> SqliteStore::candidate(int64_t id) {
  Where w;
  w.add("id = ?", std::optional<int64_t>(id));
  auto r = select_all<CandidateRow>(cache_.get(), db_, std::string("SELECT ") + kCandidateCols + " FROM candidates" + w.sql(), w, read_candidate);
  if (!r) return r.error();
  if (r->empty()) return std::optional<CandidateRow>{};
  return std::optional<CandidateRow>(r->front());
}

Result<std::vector<CandidateRow>> SqliteStore::candidates() {
  return select_all<CandidateRow>(cache_.get(), db_, std::string("SELECT ") + kCandidateCols + " FROM candidates ORDER BY id", Where{},
                                  read_candidate);
}

// ============================================================== rows
Result<int64_t> SqliteStore::insert_probe_result(const ProbeResult& r) {
  Stmt s(cache_.get(), db_,
         "INSERT INTO probe_results (candidate_id, host_id, stage_id, started_ms, kind, task, workload_id, fixture_hash, "
         "size_tokens, cache_state, sampling, thinking, client_concurrency, runtime_slots, group_id, outcome, "
         "outcome_category, http_status, detail, t_connect_us, t_first_byte_us, t_first_event_us, t_first_token_us, "
         "t_last_token_us, t_terminal_us, t_done_us, itl_p50_us, itl_p95_us, itl_max_us, client_decode_tps, "
         "timing_artifact, prompt_tokens, completion_tokens, reasoning_tokens, content_events, reasoning_events, "
         "server_prompt_n, server_cache_n, server_predicted_n, server_prompt_ms, server_prompt_tps, "
         "server_predicted_ms, server_predicted_tps, server_ttft_ms, server_draft_n, server_draft_accepted, "
         "finish_reason, response_model, bytes_received, body_hash, excerpt, extra) VALUES "
         "(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
  std::string_view category;
  switch (category_of(r.outcome)) {
    case OutcomeCategory::Clean: category = "clean"; break;
    case OutcomeCategory::CandidateFailure: category = "candidate"; break;
    case OutcomeCategory::Harness: category = "harness"; break;
  }
  std::optional<int64_t> thinking;
  if (r.thinking) thinking = *r.thinking ? 1 : 0;
  s.bind(r.candidate_id).bind(r.host_id).bind(r.stage_id).bind(r.started_wall_ms).bind(to_string(r.kind))
      .bind(r.task).bind(r.workload_id).bind(r.fixture_hash).bind(r.size_tokens).bind(to_string(r.cache_state))
      .bind(r.sampling_json).bind(thinking).bind(r.client_concurrency).bind(r.runtime_slots).bind(r.group_id)
      .bind(to_string(r.outcome)).bind(category).bind(r.http_status).bind(r.detail).bind(r.t_connect_us)
      .bind(r.t_first_byte_us).bind(r.t_first_event_us).bind(r.t_first_token_us).bind(r.t_last_token_us)
      .bind(r.t_terminal_us).bind(r.t_done_us).bind(r.itl_p50_us).bind(r.itl_p95_us).bind(r.itl_max_us)
      .bind(r.client_decode_tps).bind(r.timing_artifact).bind(r.prompt_tokens).bind(r.completion_tokens)
      .bind(r.reasoning_tokens).bind(r.content_events).bind(r.reasoning_events).bind(r.server_prompt_n)
      .bind(r.server_cache_n).bind(r.server_predicted_n).bind(r.server_prompt_ms).bind(r.server_prompt_tps)
      .bind(r.server_predicted_ms).bind(r.server_predicted_tps).bind(r.server_ttft_ms).bind(r.server_draft_n)
      .bind(r.server_draft_accepted).bind(r.finish_reason).bind(r.response_model).bind(r.bytes_received)
      .bind(r.body_hash).bind(r.excerpt).bind(r.extra_json);
  return run_insert(db_, s, "probe result");
}

Result<int64_t> SqliteStore::insert_host_sample(const HostSample& h) {
  Stmt s(cache_.get(), db_,
         "INSERT INTO host_samples (host_id, ts_ms, free_bytes, active_bytes, inactive_bytes, wired_bytes, "
         "compressed_bytes, available_bytes, total_bytes, swap_used_bytes, swap_total_bytes, pageins, pageouts, "
         "swapins, swapouts, pressure_level, memorystatus_level, psi_some_avg10, psi_full_avg10, "
         "psi_some_total_us, psi_full_total_us, error) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
  s.bind(h.host_id).bind(h.wall_ms).bind(h.free_bytes).bind(h.active_bytes).bind(h.inactive_bytes)
      .bind(h.wired_bytes).bind(h.compressed_bytes).bind(h.available_bytes).bind(h.total_bytes)
      .bind(h.swap_used_bytes).bind(h.swap_total_bytes).bind(h.pageins).bind(h.pageouts).bind(h.swapins)
      .bind(h.swapouts).bind(h.pressure_level).bind(h.memorystatus_level).bind(h.psi_some_avg10)
      .bind(h.psi_full_avg10).bind(h.psi_some_total_us).bind(h.psi_full_total_us).bind(h.error);
  return run_insert(db_, s, "host sample");
}

Result<int64_t> SqliteStore::insert_process_sample(const ProcessSample& p) {
  Stmt s(cache_.get(), db_,
         "INSERT INTO process_samples (host_id, candidate_id, ts_ms, pid, name, start_time, footprint_bytes, "
         "resident_bytes, swap_bytes, pss_bytes, error) VALUES (?,?,?,?,?,?,?,?,?,?,?)");
  s.bind(p.host_id).bind(p.candidate_id).bind(p.wall_ms).bind(p.pid).bind(p.name).bind(p.start_time)
      .bind(p.footprint_bytes).bind(p.resident_bytes).bind(p.swap_bytes).bind(p.pss_bytes).bind(p.error);
  return run_insert(db_, s, "process sample");
}

Result<int64_t> SqliteStore::insert_event(const Event& e) {
  Stmt s(cache_.get(), db_, "INSERT INTO events (ts_ms, host_id, candidate_id, kind, detail, duration_ms) VALUES (?,?,?,?,?,?)");
  s.bind(e.wall_ms).bind(e.host_id).bind(e.candidate_id).bind(e.kind)
      .bind(e.detail_json.empty() ? std::string("{}") : e.detail_json).bind(e.duration_ms);
  return run_insert(db_, s, "event");
}

// ============================================================== stages
Result<int64_t> SqliteStore::insert_stage(const StageRow& r) {
  Stmt s(cache_.get(), db_,
         "INSERT INTO stages (candidate_id, kind, state, started_ms, length_ms, deadline_ms, ended_ms, reason) "
         "VALUES (?,?,?,?,?,?,?,?)");
  s.bind(r.candidate_id).bind(to_string(r.kind)).bind(to_string(r.state)).bind(r.started_ms).bind(r.length_ms)
      .bind(r.deadline_ms).bind(r.ended_ms).bind(r.reason);
  return run_insert(db_, s, "stage");
}

Status SqliteStore::update_stage(const StageRow& r) {
  Stmt s(cache_.get(), db_, "UPDATE stages SET state = ?, deadline_ms = ?, ended_ms = ?, reason = ? WHERE id = ?");
  s.bind(to_string(r.state)).bind(r.deadline_ms).bind(r.ended_ms).bind(r.reason).bind(r.id);
  return run_update(db_, s, "stage");
}

Result<std::vector<StageRow>> SqliteStore::stages(int64_t candidate_id) {
  Where w;
  w.add("candidate_id = ?", std::optional<int64_t>(candidate_id));
  return select_all<StageRow>(cache_.get(), db_, std::string("SELECT ") + kStageCols + " FROM stages" + w.sql() + " ORDER BY id", w,
                              [](const Stmt& s) { return read_stage(s); });
}

// ============================================================== verdicts
std::string metrics_to_json(const std::vector<MetricEvidence>& ms) {
  nlohmann::ordered_json arr = nlohmann::ordered_json::array();
  for (const auto& m : ms) {
    nlohmann::ordered_json j;
    j["metric"] = m.metric;
    j["n"] = m.n;
    j["n_baseline"] = m.n_baseline;
    j["estimate"] = m.estimate;
    j["baseline"] = m.baseline;
    j["lo"] = m.lo;
    j["hi"] = m.hi;
    j["threshold"] = m.threshold;
    j["p_value"] = m.p_value;
    j["result"] = to_string(m.result);
    j["reason"] = m.reason;
    arr.push_back(std::move(j));
  }
  return arr.dump();
}

Result<std::vector<MetricEvidence>> metrics_from_json(const std::string& s) {
  std::vector<MetricEvidence> out;
  json arr = json::parse(s, nullptr, false);
  if (arr.is_discarded() || !arr.is_array()) return make_error("verdict metrics are not a JSON array");
  for (const auto& j : arr) {
    MetricEvidence m;
    m.metric = j.value("metric", "");
    m.n = j.value("n", int64_t{0});
    m.n_baseline = j.value("n_baseline", int64_t{0});
    m.estimate = j.value("estimate", 0.0);
    m.baseline = j.value("baseline", 0.0);
    m.lo = j.value("lo", 0.0);
    m.hi = j.value("hi", 0.0);
    m.threshold = j.value("threshold", 0.0);
    m.p_value = j.value("p_value", 1.0);
    auto result = parse_metric_result(j.value("result", ""));
    if (!result) return make_error("verdict metric \"" + m.metric + "\" has an unknown result \"" + j.value("result", "") + "\"");
    m.result = *result;
    m.reason = j.value("reason", "");
    out.push_back(std::move(m));
  }
  return out;
}

Result<int64_t> SqliteStore::insert_verdict(const VerdictRow& v) {
  Stmt s(cache_.get(), db_,
         "INSERT INTO verdicts (candidate_id, stage_id, ts_ms, state, stage, reason, judge_version, config_hash, "
         "evidence_first_id, evidence_last_id, baseline_id, baseline_mode, metrics, is_override, who, why, judge_input) "
         "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
  s.bind(v.candidate_id).bind(v.stage_id).bind(v.wall_ms).bind(to_string(v.state)).bind(v.stage).bind(v.reason)
      .bind(v.judge_version).bind(v.config_hash).bind(v.evidence_first_id).bind(v.evidence_last_id)
      .bind(v.baseline_id).bind(v.baseline_mode.empty() ? std::string("none") : v.baseline_mode)
      .bind(metrics_to_json(v.metrics)).bind(v.is_override).bind(v.who).bind(v.why)
      .bind(v.judge_input_json.empty() ? std::string("{}") : v.judge_input_json);
  return run_insert(db_, s, "verdict");
}

Result<std::optional<VerdictRow>> SqliteStore::latest_verdict(int64_t candidate_id) {
  Where w;
  w.add("candidate_id = ?", std::optional<int64_t>(candidate_id));
  auto r = select_all<VerdictRow>(cache_.get(), db_, std::string("SELECT ") + kVerdictCols + " FROM verdicts" + w.sql() +
                                           " ORDER BY id DESC LIMIT 1",
                                  w, [](const Stmt& s) { return read_verdict(s); });
  if (!r) return r.error();
  if (r->empty()) return std::optional<VerdictRow>{};
  return std::optional<VerdictRow>(r->front());
}

Result<std::vector<VerdictRow>> SqliteStore::verdicts(int64_t candidate_id) {
  Where w;
  w.add("candidate_id = ?", std::optional<int64_t>(candidate_id));
  return select_all<VerdictRow>(cache_.get(), db_, std::string("SELECT ") + kVerdictCols + " FROM verdicts" + w.sql() + " ORDER BY id",
                                w, [](const Stmt& s) { return read_verdict(s); });
}

// ============================================================== control
Result<int64_t> SqliteStore::insert_control(const ControlRequest& c) {
  Stmt s(cache_.get(), db_,
         "INSERT INTO control_requests (ts_ms, candidate, candidate_id, action, is_override, who, why) "
         "VALUES (?,?,?,?,?,?,?)");
  s.bind(c.wall_ms).bind(c.candidate).bind(c.candidate_id).bind(to_string(c.action)).bind(c.is_override)
      .bind(c.who).bind(c.why);
  return run_insert(db_, s, "control request");
}

Result<std::vector<ControlRequest>> SqliteStore::pending_controls() {
  return select_all<ControlRequest>(cache_.get(), db_, std::string("SELECT ") + kControlCols + " FROM control_requests WHERE handled_ms IS NULL ORDER BY id",
      Where{}, read_control);
}

Status SqliteStore::mark_control_handled(int64_t id, int64_t now_ms, const std::string& result) {
  Stmt s(cache_.get(), db_, "UPDATE control_requests SET handled_ms = ?, result = ? WHERE id = ?");
  s.bind(now_ms).bind(result).bind(id);
  return run_update(db_, s, "control request");
}

// ============================================================== queries
Result<std::vector<ProbeResult>> SqliteStore::probe_results(const ProbeQuery& q) {
  Where w;
  w.add("candidate_id = ?", q.candidate_id);
  w.add("stage_id = ?", q.stage_id);
  w.add("id >= ?", q.min_id);
  w.add("id <= ?", q.max_id);
  w.add("started_ms >= ?", q.since_ms);
  w.add("started_ms <= ?", q.until_ms);
  std::optional<std::string> kind;
  if (q.kind) kind = std::string(to_string(*q.kind));
  w.add("kind = ?", kind);
  std::string sql = std::string("SELECT ") + kProbeCols + " FROM probe_results" + w.sql() + " ORDER BY id";
  if (q.limit > 0) sql += " LIMIT " + std::to_string(q.limit);
  return select_all<ProbeResult>(cache_.get(), db_, sql, w, read_probe);
}

Result<std::vector<HostSample>> SqliteStore::host_samples(const SampleQuery& q) {
  Where w;
  w.add("host_id = ?", q.host_id);
  w.add("ts_ms >= ?", q.since_ms);
  w.add("ts_ms <= ?", q.until_ms);
  w.add("id >= ?", q.min_id);
  w.add("id <= ?", q.max_id);
  return select_all<HostSample>(cache_.get(), db_, std::string("SELECT ") + kHostSampleCols + " FROM host_samples" + w.sql() + " ORDER BY ts_ms, id",
                                w, [](const Stmt& s) {
                                  HostSample h;
                                  int c = 0;
                                  h.id = s.i64(c++);
                                  h.host_id = s.i64(c++);
                                  h.wall_ms = s.i64(c++);
                                  for (auto* f : {&h.free_bytes, &h.active_bytes, &h.inactive_bytes, &h.wired_bytes,
                                                  &h.compressed_bytes, &h.available_bytes, &h.total_bytes,
                                                  &h.swap_used_bytes, &h.swap_total_bytes, &h.pageins, &h.pageouts,
                                                  &h.swapins, &h.swapouts})
                                    *f = s.oi64(c++);
                                  h.pressure_level = s.oint(c++);
                                  h.memorystatus_level = s.oint(c++);
                                  h.psi_some_avg10 = s.odbl(c++);
                                  h.psi_full_avg10 = s.odbl(c++);
                                  h.psi_some_total_us = s.oi64(c++);
                                  h.psi_full_total_us = s.oi64(c++);
                                  h.error = s.text(c++);
                                  return h;
                                });
}

Result<std::vector<ProcessSample>> SqliteStore::process_samples(const SampleQuery& q) {
  Where w;
  w.add("host_id = ?", q.host_id);
  w.add("candidate_id = ?", q.candidate_id);
  w.add("ts_ms >= ?", q.since_ms);
  w.add("ts_ms <= ?", q.until_ms);
  w.add("id >= ?", q.min_id);
  w.add("id <= ?", q.max_id);
  return select_all<ProcessSample>(cache_.get(), db_, std::string("SELECT ") + kProcessSampleCols + " FROM process_samples" + w.sql() +
                                            " ORDER BY ts_ms, id",
                                   w, [](const Stmt& s) {
                                     ProcessSample p;
                                     p.id = s.i64(0);
                                     p.host_id = s.i64(1);
                                     p.candidate_id = s.oi64(2);
                                     p.wall_ms = s.i64(3);
                                     p.pid = static_cast<int>(s.i64(4));
                                     p.name = s.text(5);
                                     p.start_time = s.oi64(6);
                                     p.footprint_bytes = s.oi64(7);
                                     p.resident_bytes = s.oi64(8);
                                     p.swap_bytes = s.oi64(9);
                                     p.pss_bytes = s.oi64(10);
                                     p.error = s.text(11);
                                     return p;
                                   });
}

Result<std::vector<Event>> SqliteStore::events(const EventQuery& q) {
  Where w;
  if (q.host_wide == HostWide::Include)
    w.add("(candidate_id = ? OR candidate_id IS NULL)", q.candidate_id);
  else
    w.add("candidate_id = ?", q.candidate_id);
  w.add("host_id = ?", q.host_id);
  w.add("kind = ?", q.kind);
  w.add("ts_ms >= ?", q.since_ms);
  w.add("ts_ms <= ?", q.until_ms);
  w.add("id >= ?", q.min_id);
  w.add("id <= ?", q.max_id);
  return select_all<Event>(cache_.get(), db_, std::string("SELECT ") + kEventCols + " FROM events" + w.sql() + " ORDER BY ts_ms, id", w,
                           [](const Stmt& s) {
                             Event e;
                             e.id = s.i64(0);
                             e.wall_ms = s.i64(1);
                             e.host_id = s.oi64(2);
                             e.candidate_id = s.oi64(3);
                             e.kind = parse_event_kind(s.text(4)).value_or(EventKind::Gap);
                             e.detail_json = s.text(5);
                             e.duration_ms = s.oi64(6);
                             return e;
                           });
}

Result<std::vector<StatusRow>> SqliteStore::status() {
  // One pass: each candidate with its latest stage and latest verdict, via the
  // (candidate_id, id) indexes; no scan of probe_results.
  std::string sql = std::string("SELECT ") +
                    "c.id, c.host_id, c.name, c.model, c.runtime, c.build, c.base_url, c.first_seen_ms, "
                    "c.last_seen_ms, c.baseline_id, "
                    "s.id, s.candidate_id, s.kind, s.state, s.started_ms, s.length_ms, s.deadline_ms, s.ended_ms, "
                    "s.reason, "
                    "v.id, v.candidate_id, v.stage_id, v.ts_ms, v.state, v.stage, v.reason, v.judge_version, "
                    "v.config_hash, v.evidence_first_id, v.evidence_last_id, v.baseline_id, v.baseline_mode, "
                    "'[]', v.is_override, v.who, v.why, '{}' "
                    "FROM candidates c "
                    "LEFT JOIN stages s ON s.id = (SELECT MAX(id) FROM stages WHERE candidate_id = c.id) "
                    "LEFT JOIN verdicts v ON v.id = (SELECT MAX(id) FROM verdicts WHERE candidate_id = c.id) "
                    "ORDER BY c.name, c.id";
  return select_all<StatusRow>(cache_.get(), db_, sql, Where{}, [](const Stmt& s) {
    StatusRow r;
    r.candidate = read_candidate(s);
    if (!s.null(10)) r.stage = read_stage(s, 10);
    if (!s.null(19)) r.verdict = read_verdict(s, 19, /*with_metrics=*/false);
    return r;
  });
}

Result<Store::MaxIds> SqliteStore::max_ids() {
  MaxIds m;
  for (auto [table, out] : {std::pair<const char*, int64_t*>{"probe_results", &m.probe},
                            {"host_samples", &m.host_sample},
                            {"process_samples", &m.process_sample},
                            {"events", &m.event}}) {
    auto v = pragma_int(db_, (std::string("SELECT COALESCE(MAX(id), 0) FROM ") + table).c_str());
    if (!v) return v.error();
    *out = *v;
  }
  return m;
}

}  // namespace soak
