// The store's errors carry the code of the SQLite call that failed, from real
// failing calls: a store opened read-only refused a write, a row the schema
// refuses, a write lock another connection holds, a database at its size limit.
// And which of them pass (storage/write_fault.h) follows from that code.
#include <sqlite3.h>

#include <memory>
#include <string>
#include <string_view>

#include "storage/sqlite_stmt.h"
#include "storage/sqlite_store.h"
#include "storage/write_fault.h"
#include "tests/catch.h"
#include "tests/support/temp_dir.h"

using namespace soak;

namespace {

struct Db {
  sqlite3* db = nullptr;
  explicit Db(const std::string& path) { sqlite3_open(path.c_str(), &db); }
  ~Db() { sqlite3_close(db); }
  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;
};

Event gap_event(int64_t host_id) {
  Event e;
  e.wall_ms = 1;
  e.host_id = host_id;
  e.kind = EventKind::Gap;
  e.detail_json = "{}";
  return e;
}

// A failed call's error: SQLite's text in it, its code, and whether it passes.
void check_failed(const Error& e, std::string_view text, ErrorCode code, WriteFault fault) {
  INFO(e.message);
  CHECK(e.message.find(text) != std::string::npos);
  CHECK(e.code == code);
  CHECK(classify_write_failure(e) == fault);
}

}  // namespace

TEST_CASE("SQLite's codes, primary or extended, map to one ErrorCode each") {
  CHECK(store_error_code(SQLITE_FULL) == ErrorCode::StoreFull);
  CHECK(store_error_code(SQLITE_BUSY) == ErrorCode::StoreBusy);
  CHECK(store_error_code(SQLITE_BUSY_SNAPSHOT) == ErrorCode::StoreBusy);
  CHECK(store_error_code(SQLITE_LOCKED_SHAREDCACHE) == ErrorCode::StoreBusy);
  CHECK(store_error_code(SQLITE_READONLY_DBMOVED) == ErrorCode::StoreReadOnly);
  CHECK(store_error_code(SQLITE_IOERR_WRITE) == ErrorCode::StoreIo);
  CHECK(store_error_code(SQLITE_CANTOPEN_ISDIR) == ErrorCode::StoreCantOpen);
  CHECK(store_error_code(SQLITE_CONSTRAINT_FOREIGNKEY) == ErrorCode::StoreConstraint);
  CHECK(store_error_code(SQLITE_NOTADB) == ErrorCode::StoreOther);
  CHECK(store_error_code(SQLITE_CORRUPT) == ErrorCode::StoreOther);
  CHECK(store_error_code(SQLITE_OK) == ErrorCode::StoreOther);
  const Error none = sqlite_error(nullptr, "open");  // sqlite3_open_v2 without memory for a handle
  CHECK(none.message == "open: out of memory");
  CHECK(none.code == ErrorCode::StoreOther);
}

TEST_CASE("a write to a store opened read-only fails with StoreReadOnly, which passes") {
  TempDir tmp;
  const std::string path = tmp.path() + "/s.db";
  int64_t host = 0;
  {
    auto rw = SqliteStore::open(path, OpenMode::ReadWrite, Durability::Fast);
    REQUIRE(rw.ok());
    auto h = (*rw)->upsert_host(HostInfo{"studio", "Mac15,14", 1, "macOS 15.5"}, 1);
    REQUIRE(h.ok());
    host = *h;
  }
  auto ro = SqliteStore::open(path, OpenMode::ReadOnly);
  REQUIRE(ro.ok());
  auto id = (*ro)->insert_event(gap_event(host));
  REQUIRE_FALSE(id.ok());
  check_failed(id.error(), "attempt to write a readonly database", ErrorCode::StoreReadOnly, WriteFault::Passing);
}

TEST_CASE("a row the schema refuses fails with StoreConstraint, which does not pass") {
  TempDir tmp;
  auto s = SqliteStore::open(tmp.path() + "/s.db", OpenMode::ReadWrite, Durability::Fast);
  REQUIRE(s.ok());
  auto id = (*s)->insert_event(gap_event(12345));  // no such host: the foreign key refuses it
  REQUIRE_FALSE(id.ok());
  check_failed(id.error(), "FOREIGN KEY constraint failed", ErrorCode::StoreConstraint, WriteFault::Permanent);
}

TEST_CASE("a write lock another connection holds fails with StoreBusy; a full database with StoreFull") {
  TempDir tmp;
  const std::string path = tmp.path() + "/raw.db";
  Db a(path), b(path);
  REQUIRE(exec(a.db, "CREATE TABLE t (x BLOB)").ok());

  REQUIRE(exec(a.db, "BEGIN IMMEDIATE").ok());
  Status busy = exec(b.db, "BEGIN IMMEDIATE");  // no busy timeout on b: at once
  REQUIRE_FALSE(busy.ok());
  check_failed(busy.error(), "database is locked", ErrorCode::StoreBusy, WriteFault::Passing);
  REQUIRE(exec(a.db, "COMMIT").ok());

  // The size limit stands for the disk: the same SQLITE_FULL.
  REQUIRE(exec(b.db, "PRAGMA max_page_count = 4").ok());
  Result<int64_t> id = int64_t{0};
  for (int i = 0; i < 10 && id.ok(); ++i) {
    Stmt s(nullptr, b.db, "INSERT INTO t (x) VALUES (zeroblob(2000))");
    id = run_insert(b.db, s, "t");
  }
  REQUIRE_FALSE(id.ok());
  CHECK(id.message() == "insert t: database or disk is full");
  check_failed(id.error(), "database or disk is full", ErrorCode::StoreFull, WriteFault::Passing);
}
