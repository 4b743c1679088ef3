#include "core/files.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>
#include <vector>

namespace soak {

namespace fs = std::filesystem;

Status make_parent_dirs_private(const std::string& file_path) {
  fs::path dir = fs::path(file_path).parent_path();
  if (dir.empty()) return {};
  std::vector<fs::path> missing;
  std::error_code ec;
  for (fs::path p = dir; !p.empty() && !fs::exists(p, ec); p = p.parent_path()) {
    missing.push_back(p);
    if (p == p.parent_path()) break;
  }
  for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
    if (::mkdir(it->c_str(), 0700) != 0 && errno != EEXIST)
      return make_error("cannot create directory " + it->string() + ": " + std::strerror(errno));
  }
  return {};
}

}  // namespace soak
