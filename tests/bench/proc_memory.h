// Reading a process's memory from /proc (Linux), for the at-rest benchmarks:
// /proc/<pid>/status fields and the resident set split by what is mapped.
#pragma once

#include <sys/types.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace soak::bench {

inline std::string slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// A "Key:   123 kB" field of a /proc status file, -1 when absent.
inline long long field_kb(const std::string& status, const std::string& key) {
  auto at = status.find(key + ":");
  if (at == std::string::npos) return -1;
  return std::atoll(status.c_str() + at + key.size() + 1);
}

// The resident set by what is mapped: the program's own file, the shared
// libraries, and anonymous memory (heap, stacks, copied-on-write pages).
struct ResidentParts {
  long long program_kb = 0, libraries_kb = 0, anonymous_kb = 0, other_kb = 0;
  int libraries = 0;
};

inline ResidentParts resident_parts(pid_t pid) {
  const std::string base = "/proc/" + std::to_string(pid);
  ResidentParts r;
  char buf[4096];
  const ssize_t n = ::readlink((base + "/exe").c_str(), buf, sizeof buf - 1);
  const std::string exe = n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
  std::ifstream smaps(base + "/smaps");
  std::string line, name, last_lib;
  while (std::getline(smaps, line)) {
    // Mapping header: "start-end perms offset dev inode [path]".
    const auto dash = line.find('-'), space = line.find(' ');
    if (dash != std::string::npos && space != std::string::npos && dash < space && line.find(':') > space) {
      const auto slash = line.find('/');
      name = slash == std::string::npos ? "" : line.substr(slash);
      continue;
    }
    if (line.rfind("Rss:", 0) != 0) continue;
    const long long kb = std::atoll(line.c_str() + 4);
    if (name.empty()) {
      r.anonymous_kb += kb;
    } else if (name == exe) {
      r.program_kb += kb;
    } else if (name.find(".so") != std::string::npos) {
      r.libraries_kb += kb;
      if (name != last_lib) ++r.libraries, last_lib = name;
    } else {
      r.other_kb += kb;
    }
  }
  return r;
}

}  // namespace soak::bench
