// A managed runtime's stdout and stderr, in <log dir>/<candidate>.runtime.log
// beside soakd's own log (docs/DESIGN.md §4.8).
//
// The runtime writes the file itself: its stdout and stderr are a descriptor
// of the file opened for appending, not a pipe to soakd, so its output keeps
// landing there when soakd stops or crashes (a runtime writing to a pipe
// whose reader died would get SIGPIPE). soakd bounds the file: enforce_cap(),
// called every few seconds, copies a file grown past the cap to
// <file>.1 (replacing the previous one) and truncates it; the runtime's
// appends go on at the start. At most cap + what is written between two
// checks, plus one rotated copy.
//
// Threading: the loop thread (synchronous file calls on small files, and one
// copy of at most a cap when rotating). Failure: values; never throws.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/result.h"

namespace soak {

inline constexpr int64_t kRuntimeLogCapBytes = 8LL * 1024 * 1024;
inline constexpr int64_t kRuntimeLogCheckEveryMs = 2'000;
inline constexpr size_t kLogTailLines = 20;  // what an exit event and a blocked reason quote
inline constexpr size_t kLogTailBytes = 2'000;

class RuntimeLog {
 public:
  // <directory of soakd_log_path>/<candidate>.runtime.log
  static std::string path_for(const std::string& soakd_log_path, const std::string& candidate);

  RuntimeLog(std::string path, int64_t cap_bytes = kRuntimeLogCapBytes);
  const std::string& path() const { return path_; }

  // Appends one line of soakd's own ("---- soakd: ... ----") to mark a launch.
  void mark(const std::string& line);
  // A descriptor for the child's stdout and stderr (append, 0600, close-on-exec
  // unset only in the child by uv_spawn's stdio setup). The caller closes it
  // once the child is spawned.
  Result<int> open_for_child();
  // Rotates once the file is past the cap. Returns whether it rotated.
  bool enforce_cap();
  // The last `max_lines` lines, at most `max_bytes` (from the rotated copy too
  // when the file itself was just truncated).
  std::string tail(size_t max_lines = kLogTailLines, size_t max_bytes = kLogTailBytes) const;

 private:
  std::string path_;
  int64_t cap_;
};

}  // namespace soak
