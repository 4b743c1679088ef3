// The SQLite statement layer under SqliteStore: a cache of prepared statements,
// a thin statement wrapper (bind in order, read by column), a WHERE-clause
// builder, and the few helpers that run a statement and turn SQLite's status
// into a Result: every error made from a failed SQLite call is sqlite_error's,
// with the call's code mapped by store_error_code. Internal to soak_storage.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "core/result.h"
#include "core/types.h"

struct sqlite3;
struct sqlite3_stmt;

namespace soak {

// Prepared statements kept for reuse, keyed by their SQL text: the daemon runs
// the same few inserts and queries for weeks, and parsing them anew each time
// costs more than running them. Owned by one SqliteStore; finalized before the
// connection closes.
class StmtCache {
 public:
  StmtCache() = default;
  ~StmtCache();
  StmtCache(const StmtCache&) = delete;
  StmtCache& operator=(const StmtCache&) = delete;

  sqlite3_stmt* take(const std::string& sql);   // nullptr when none is idle
  void put(std::string sql, sqlite3_stmt* st);  // reset, unbound, kept for the next take

 private:
  std::unordered_map<std::string, sqlite3_stmt*> idle_;
};

class Stmt {
 public:
  // With a cache the statement is borrowed from it and returned on destruction.
  Stmt(StmtCache* cache, sqlite3* db, const std::string& sql);
  ~Stmt();
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;

  bool ok() const;  // prepared; when not, sqlite_error(db) says why

  // Binds the next placeholder.
  Stmt& bind(int64_t v);
  Stmt& bind(int v) { return bind(static_cast<int64_t>(v)); }
  Stmt& bind(bool v) { return bind(int64_t{v ? 1 : 0}); }
  Stmt& bind(double v);
  Stmt& bind(std::string_view v);
  Stmt& bind(const std::string& v) { return bind(std::string_view(v)); }
  Stmt& bind(const char* v) { return bind(std::string_view(v)); }
  Stmt& bind_null();
  // Closed vocabularies are stored by their names (core/types.h).
  template <class E>
  requires std::is_enum_v<E> Stmt& bind(E e) { return bind(to_string(e)); }
  template <class T>
  Stmt& bind(const std::optional<T>& v) {
    return v ? bind(*v) : bind_null();
  }

  enum class Step { Row, Done, Failed };  // Failed: sqlite_error(db) says why
  Step step();

  // Column readers (0-based).
  int64_t i64(int c) const;
  double dbl(int c) const;
  bool null(int c) const;
  std::string text(int c) const;
  // The column's text in SQLite's own buffer: valid until the next step or
  // column call on this statement ("" for NULL).
  std::string_view text_view(int c) const;

 private:
  StmtCache* cache_;
  std::string sql_;
  sqlite3_stmt* s_ = nullptr;
  int rc_;
  int i_ = 0;
};

// SQLite's result code (primary or extended) as an ErrorCode: the one place
// the two meet. A code it does not name (and SQLITE_OK) is StoreOther.
ErrorCode store_error_code(int sqlite_rc);

// The last failed call on db: "<what>: <SQLite's message>" (the message alone
// when what is empty), with store_error_code of its extended code. A null db
// (sqlite3_open_v2 out of memory) reads as SQLite's "out of memory".
Error sqlite_error(sqlite3* db, std::string_view what = {});

Status exec(sqlite3* db, const char* sql);

// The first column of the first row of `sql` (0 when there is no row).
Result<int64_t> query_int(sqlite3* db, const char* sql);

// Runs a prepared insert and returns the new row id.
Result<int64_t> run_insert(sqlite3* db, Stmt& s, std::string_view what);
// Runs a prepared statement that returns one row whose first column is an id
// (INSERT ... RETURNING id).
Result<int64_t> run_returning_id(sqlite3* db, Stmt& s, std::string_view what);
Status run_update(sqlite3* db, Stmt& s, std::string_view what);

// Builds " WHERE a = ? AND b >= ? ..." from the conditions whose value is set,
// and binds those values in the same order.
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

// Runs a query and reads every row with `read` (const Stmt& -> Result<T>); the
// first row that does not read is the query's error. `expected`: room for that
// many rows made at once (storage/row_codec.h select_rows).
template <class T, class Read>
Result<std::vector<T>> select_all(StmtCache* cache, sqlite3* db, const std::string& sql, const Where& w, Read read,
                                  size_t expected = 0) {
  Stmt s(cache, db, sql);
  if (!s.ok()) return sqlite_error(db, "prepare query");
  w.bind(s);
  std::vector<T> out;
  out.reserve(expected);
  Stmt::Step step;
  while ((step = s.step()) == Stmt::Step::Row) {
    Result<T> row = read(s);
    if (!row) return row.error();
    out.push_back(std::move(*row));
  }
  if (step != Stmt::Step::Done) return sqlite_error(db, "query");
  return out;
}

}  // namespace soak
