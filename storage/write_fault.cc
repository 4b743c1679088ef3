#include "storage/write_fault.h"

namespace soak {

WriteFault classify_write_failure(const Error& e) {
  switch (e.code) {
    case ErrorCode::StoreFull:      // the operator frees space
    case ErrorCode::StoreBusy:      // another writer past the busy timeout lets go
    case ErrorCode::StoreReadOnly:  // the file or mount is made writable again
    case ErrorCode::StoreIo:        // ENOSPC on some writes, EIO
    case ErrorCode::StoreCantOpen:  // a journal or WAL file that could not be made
      return WriteFault::Passing;
    case ErrorCode::Unspecified:
    case ErrorCode::StoreConstraint:
    case ErrorCode::StoreOther: break;
  }
  return WriteFault::Permanent;
}

}  // namespace soak
