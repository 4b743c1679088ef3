// One daemon per store. DaemonLock holds an exclusive flock() on "<store>.lock"
// for the life of the process and writes its pid there; the kernel drops the
// lock when the process dies, however it dies, so a crash never leaves a stale
// lock. A second soakd on the same store is refused with the holder's pid.
//
// The file is also where a running soakd says what a reader of the store
// cannot learn from the store itself: that it cannot write to it (the second
// line, e.g. "store not writable since ...; 12 rows waiting"). The file is
// sized once at start and rewritten in place, so saying it needs no new disk
// space on a full disk.
#pragma once

#include <memory>
#include <optional>
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
  // Replaces the note (one line, cut to fit; empty clears it).
  void set_note(const std::string& line);
  // The note of the soakd that holds the lock on `store_path` now; nothing
  // when no soakd runs there or it has nothing to say.
  static std::optional<std::string> running_note(const std::string& store_path);
  // The pid of the soakd that holds the lock on `store_path` now.
  static std::optional<int> running_pid(const std::string& store_path);

 private:
  DaemonLock(int fd, std::string path, size_t note_at) : fd_(fd), path_(std::move(path)), note_at_(note_at) {}
  int fd_;
  std::string path_;
  size_t note_at_;  // the note starts after the pid line
};

}  // namespace soak
