#include "storage/lock.h"

#include "core/files.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

namespace soak {
namespace {

// pid line + note line, padded with spaces; written whole at start so later
// notes overwrite bytes the file already has.
constexpr size_t kLockFileBytes = 512;

}  // namespace

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
    holder = holder.substr(0, holder.find('\n'));  // the pid line
    while (!holder.empty() && (holder.back() == '\n' || holder.back() == ' ')) holder.pop_back();
    if (err == EWOULDBLOCK)
      return make_error("another soakd (pid " + (holder.empty() ? std::string("unknown") : holder) +
                        ") is already running on store " + store_path + "; stop it first or use another store");
    return make_error("cannot lock " + path + ": " + std::strerror(err));
  }
  std::string pid = std::to_string(::getpid()) + "\n";
  std::string body = pid;
  body.resize(kLockFileBytes - 1, ' ');
  body += '\n';
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, body.data(), body.size(), 0) != static_cast<ssize_t>(body.size())) {
    int err = errno;
    ::close(fd);
    return make_error("cannot write pid to " + path + ": " + std::strerror(err));
  }
  return std::unique_ptr<DaemonLock>(new DaemonLock(fd, path, pid.size()));
}

void DaemonLock::set_note(const std::string& line) {
  std::string text = line.substr(0, kLockFileBytes - note_at_ - 1);
  for (char& ch : text)
    if (ch == '\n') ch = ' ';
  text.resize(kLockFileBytes - note_at_ - 1, ' ');
  // Best effort: the note is for a reader, the store's rows do not depend on it.
  (void)!::pwrite(fd_, text.data(), text.size(), static_cast<off_t>(note_at_));
}

namespace {

// The lock file's text while a soakd holds the lock; nothing otherwise.
std::optional<std::string> held_lock_text(const std::string& store_path) {
  const std::string path = store_path + ".lock";
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  const bool held = ::flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
  std::string body(kLockFileBytes, '\0');
  const ssize_t n = held ? ::pread(fd, body.data(), body.size(), 0) : 0;
  ::close(fd);  // drops the shared lock if it was taken
  if (n <= 0) return std::nullopt;
  body.resize(static_cast<size_t>(n));
  return body;
}

}  // namespace

std::optional<std::string> DaemonLock::running_note(const std::string& store_path) {
  auto body = held_lock_text(store_path);
  if (!body) return std::nullopt;
  const auto nl = body->find('\n');
  if (nl == std::string::npos) return std::nullopt;
  std::string note = body->substr(nl + 1);
  while (!note.empty() && (note.back() == ' ' || note.back() == '\n' || note.back() == '\0')) note.pop_back();
  if (note.empty()) return std::nullopt;
  return note;
}

std::optional<int> DaemonLock::running_pid(const std::string& store_path) {
  auto body = held_lock_text(store_path);
  if (!body) return std::nullopt;
  const long pid = std::strtol(body->c_str(), nullptr, 10);
  if (pid <= 0) return std::nullopt;
  return static_cast<int>(pid);
}

DaemonLock::~DaemonLock() {
  // Leave the file (another process may already hold it after us); just drop the lock.
  ::close(fd_);
}

}  // namespace soak
