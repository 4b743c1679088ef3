#include "storage/sqlite_stmt.h"

#include <sqlite3.h>

namespace soak {

StmtCache::~StmtCache() {
  for (auto& [sql, st] : idle_) sqlite3_finalize(st);
}

sqlite3_stmt* StmtCache::take(const std::string& sql) {
  auto it = idle_.find(sql);
  if (it == idle_.end()) return nullptr;
  sqlite3_stmt* st = it->second;
  idle_.erase(it);
  return st;
}

void StmtCache::put(std::string sql, sqlite3_stmt* st) {
  sqlite3_reset(st);
  sqlite3_clear_bindings(st);
  if (!idle_.emplace(std::move(sql), st).second) sqlite3_finalize(st);
}

Stmt::Stmt(StmtCache* cache, sqlite3* db, const std::string& sql) : cache_(cache) {
  if (cache_ && (s_ = cache_->take(sql))) {
    rc_ = SQLITE_OK;
  } else {
    rc_ = sqlite3_prepare_v2(db, sql.c_str(), -1, &s_, nullptr);
  }
  if (cache_) sql_ = sql;
}

Stmt::~Stmt() {
  if (cache_ && rc_ == SQLITE_OK && s_)
    cache_->put(std::move(sql_), s_);
  else
    sqlite3_finalize(s_);
}

bool Stmt::ok() const { return rc_ == SQLITE_OK; }

Stmt& Stmt::bind(int64_t v) {
  sqlite3_bind_int64(s_, ++i_, v);
  return *this;
}

Stmt& Stmt::bind(double v) {
  sqlite3_bind_double(s_, ++i_, v);
  return *this;
}

Stmt& Stmt::bind(std::string_view v) {
  sqlite3_bind_text(s_, ++i_, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
  return *this;
}

Stmt& Stmt::bind_null() {
  sqlite3_bind_null(s_, ++i_);
  return *this;
}

Stmt::Step Stmt::step() {
  switch (sqlite3_step(s_)) {
    case SQLITE_ROW: return Step::Row;
    case SQLITE_DONE: return Step::Done;
    default: return Step::Failed;
  }
}

int64_t Stmt::i64(int c) const { return sqlite3_column_int64(s_, c); }
double Stmt::dbl(int c) const { return sqlite3_column_double(s_, c); }
bool Stmt::null(int c) const { return sqlite3_column_type(s_, c) == SQLITE_NULL; }

std::string Stmt::text(int c) const { return std::string(text_view(c)); }

std::string_view Stmt::text_view(int c) const {
  auto p = sqlite3_column_text(s_, c);
  return p ? std::string_view(reinterpret_cast<const char*>(p), static_cast<size_t>(sqlite3_column_bytes(s_, c)))
           : std::string_view();
}

ErrorCode store_error_code(int sqlite_rc) {
  switch (sqlite_rc & 0xff) {  // the primary code of an extended one
    case SQLITE_FULL: return ErrorCode::StoreFull;
    case SQLITE_BUSY:
    case SQLITE_LOCKED: return ErrorCode::StoreBusy;
    case SQLITE_READONLY: return ErrorCode::StoreReadOnly;
    case SQLITE_IOERR: return ErrorCode::StoreIo;
    case SQLITE_CANTOPEN: return ErrorCode::StoreCantOpen;
    case SQLITE_CONSTRAINT: return ErrorCode::StoreConstraint;
    default: return ErrorCode::StoreOther;
  }
}

Error sqlite_error(sqlite3* db, std::string_view what) {
  std::string m = what.empty() ? std::string() : std::string(what) + ": ";
  return make_error(store_error_code(sqlite3_extended_errcode(db)), m + sqlite3_errmsg(db));
}

Status exec(sqlite3* db, const char* sql) {
  if (sqlite3_exec(db, sql, nullptr, nullptr, nullptr) != SQLITE_OK) return sqlite_error(db);
  return {};
}

Result<int64_t> query_int(sqlite3* db, const char* sql) {
  Stmt s(nullptr, db, sql);
  if (!s.ok()) return sqlite_error(db);
  switch (s.step()) {
    case Stmt::Step::Row: return s.i64(0);
    case Stmt::Step::Done: return int64_t{0};
    case Stmt::Step::Failed: break;
  }
  return sqlite_error(db);
}

Result<int64_t> run_insert(sqlite3* db, Stmt& s, std::string_view what) {
  if (!s.ok()) return sqlite_error(db, "prepare insert " + std::string(what));
  if (s.step() != Stmt::Step::Done) return sqlite_error(db, "insert " + std::string(what));
  return static_cast<int64_t>(sqlite3_last_insert_rowid(db));
}

Result<int64_t> run_returning_id(sqlite3* db, Stmt& s, std::string_view what) {
  if (!s.ok()) return sqlite_error(db, "prepare " + std::string(what));
  if (s.step() != Stmt::Step::Row) return sqlite_error(db, what);
  int64_t id = s.i64(0);
  if (s.step() != Stmt::Step::Done) return sqlite_error(db, what);
  return id;
}

Status run_update(sqlite3* db, Stmt& s, std::string_view what) {
  if (!s.ok()) return sqlite_error(db, "prepare update " + std::string(what));
  if (s.step() != Stmt::Step::Done) return sqlite_error(db, "update " + std::string(what));
  return {};
}

}  // namespace soak
