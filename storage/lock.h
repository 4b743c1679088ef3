// One daemon per store. DaemonLock holds an exclusive flock() on "<store>.lock"
// for the life of the process and writes its pid there; the kernel drops the
// lock when the process dies, however it dies, so a crash never leaves a stale
// lock. A second soakd on the same store is refused with the holder's pid.
#pragma once

#include <memory>
#include <string>

#include "core/result.h"

namespace soak {

class DaemonLock {
 public:
  static Result<std::unique_ptr<DaemonLock>> acquire(const std::string& store_path);
  ~DaemonLock();
  DaemonLock(const DaemonLock&) = delete;
  DaemonLock& operator=(const DaemonLock&) = delete;
  const std::string& path() const { return path_; }

 private:
  DaemonLock(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  int fd_;
  std::string path_;
};

}  // namespace soak
