// Whether another process (a child of soakd, a runtime) is still running,
// read from /proc where there is one. Every read treats a process that ends
// while it is read as gone (core/files.h read_file_whole never throws), as the
// product's sampler does (platform/sampler_linux.cc).
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <cerrno>
#include <string>

#include "core/files.h"

namespace soak::test {

// A process that exists and has not ended. A zombie has ended: only its
// parent (soakd, or init once soakd is gone) has yet to reap it. Without
// /proc (macOS) a pid that takes signal 0 is running.
inline bool process_running(pid_t pid) {
  if (pid <= 0 || (::kill(pid, 0) != 0 && errno == ESRCH)) return false;
  const auto stat = read_file_whole("/proc/" + std::to_string(pid) + "/stat");
  // No stat file: with /proc there (our own stat reads) the process's
  // directory is gone, so is it; without /proc (macOS) signal 0 tells.
  if (!stat) return !read_file_whole("/proc/self/stat");
  const auto close = stat->rfind(')');
  return close == std::string::npos || close + 2 >= stat->size() || (*stat)[close + 2] != 'Z';
}

// The NUL-separated arguments of `pid`, empty once it has ended.
inline std::string process_cmdline(pid_t pid) {
  return read_file_whole("/proc/" + std::to_string(pid) + "/cmdline").value_or("");
}

}  // namespace soak::test
