#include "core/files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

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

Status write_file_atomic(const std::string& path, const std::string& content, unsigned mode) {
  // The temporary name is unique per process, so two writers never share it;
  // a leftover from a crash is overwritten by the next write.
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, static_cast<mode_t>(mode));
  if (fd < 0) return make_error("cannot write " + tmp + ": " + std::strerror(errno));
  size_t done = 0;
  while (done < content.size()) {
    const ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const std::string why = std::strerror(errno);
      ::close(fd);
      ::unlink(tmp.c_str());
      return make_error("cannot write " + tmp + ": " + why);
    }
    done += static_cast<size_t>(n);
  }
  const bool synced = ::fsync(fd) == 0;
  const std::string sync_error = synced ? "" : std::strerror(errno);
  if (::close(fd) != 0 || !synced) {
    const std::string why = synced ? std::strerror(errno) : sync_error;
    ::unlink(tmp.c_str());
    return make_error("cannot write " + tmp + ": " + why);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    ::unlink(tmp.c_str());
    return make_error("cannot replace " + path + ": " + why);
  }
  return {};
}

std::optional<std::string> read_file_whole(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::string out;
  char buf[8192];
  while (true) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      ::close(fd);
      return std::nullopt;
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
}

}  // namespace soak
