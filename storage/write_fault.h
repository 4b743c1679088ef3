// Which failed writes can pass. A full disk, a write lock held past the busy
// timeout, a store made read-only, a journal that could not be created: each
// clears when the operator frees space or the other process lets go, so the
// row is kept and written later (storage/outbox.h). Anything else (a constraint,
// a malformed row) will fail again however long one waits.
//
// Decided by the error's code, never its text: every error a Store write
// returns carries the code of the SQLite call that failed (storage/sqlite_stmt.h
// sqlite_error), and so does one passed up with a word added (error_in,
// core/result.h). An error without a code (Unspecified) is Permanent.
#pragma once

#include "core/result.h"

namespace soak {

enum class WriteFault { Passing, Permanent };

WriteFault classify_write_failure(const Error& e);

}  // namespace soak
