// Which failed writes can pass. A full disk, a write lock held past the busy
// timeout, a store made read-only, a journal that could not be created: each
// clears when the operator frees space or the other process lets go, so the
// row is kept and written later (storage/outbox.h). Anything else (a constraint,
// a malformed row) will fail again however long one waits.
//
// The texts are SQLite's own (sqlite3_errstr of SQLITE_FULL, SQLITE_BUSY,
// SQLITE_LOCKED, SQLITE_READONLY, SQLITE_IOERR, SQLITE_CANTOPEN), which is what
// a Store's error message carries (storage/sqlite_stmt.cc: "<what>: <errmsg>").
#pragma once

#include <string_view>

namespace soak {

enum class WriteFault { Passing, Permanent };

WriteFault classify_write_failure(std::string_view message);

}  // namespace soak
