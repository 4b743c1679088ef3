#include "storage/lock.h"

#include "core/files.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace soak {

Result<std::unique_ptr<DaemonLock>> DaemonLock::acquire(const std::string& store_path) {
  std::string path = store_path + ".lock";
  if (auto st = make_parent_dirs_private(path); !st) return make_error(st.message());
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return make_error("cannot open lock file " + path + ": " + std::strerror(errno));
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    int err = errno;
    char buf[32] = {0};
    ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
    ::close(fd);
    std::string holder = n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
    while (!holder.empty() && (holder.back() == '\n' || holder.back() == ' ')) holder.pop_back();
    if (err == EWOULDBLOCK)
      return make_error("another soakd (pid " + (holder.empty() ? std::string("unknown") : holder) +
                        ") is already running on store " + store_path + "; stop it first or use another store");
    return make_error("cannot lock " + path + ": " + std::strerror(err));
  }
  std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, pid.data(), pid.size(), 0) != static_cast<ssize_t>(pid.size())) {
    int err = errno;
    ::close(fd);
    return make_error("cannot write pid to " + path + ": " + std::strerror(err));
  }
  return std::unique_ptr<DaemonLock>(new DaemonLock(fd, path));
}

DaemonLock::~DaemonLock() {
  // Leave the file (another process may already hold it after us); just drop the lock.
  ::close(fd_);
}

}  // namespace soak
