#include "storage/write_fault.h"

#include <array>

namespace soak {

WriteFault classify_write_failure(std::string_view message) {
  static constexpr std::array<std::string_view, 6> kPassing = {
      "database or disk is full",              // SQLITE_FULL
      "database is locked",                    // SQLITE_BUSY (another writer past the busy timeout)
      "database table is locked",              // SQLITE_LOCKED
      "attempt to write a readonly database",  // SQLITE_READONLY (file or mount made read-only)
      "disk I/O error",                        // SQLITE_IOERR (ENOSPC on some writes, EIO)
      "unable to open database file",          // SQLITE_CANTOPEN (journal or WAL file could not be made)
  };
  for (auto text : kPassing)
    if (message.find(text) != std::string_view::npos) return WriteFault::Passing;
  return WriteFault::Permanent;
}

}  // namespace soak
