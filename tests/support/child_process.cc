#include "tests/support/child_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <exception>
#include <utility>

namespace soak {

namespace {
int64_t now_ms() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1'000'000;
}
}  // namespace

std::optional<ChildProcess> ChildProcess::spawn(const std::vector<std::string>& argv) {
  int out[2], err[2];
  // pipe() + FD_CLOEXEC rather than pipe2(), which macOS lacks; tests are single-threaded here.
  auto make_pipe = [](int fds[2]) {
    if (pipe(fds) != 0) return false;
    fcntl(fds[0], F_SETFD, FD_CLOEXEC);
    fcntl(fds[1], F_SETFD, FD_CLOEXEC);
    return true;
  };
  if (!make_pipe(out)) return std::nullopt;
  if (!make_pipe(err)) {
    close(out[0]);
    close(out[1]);
    return std::nullopt;
  }
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = fork();
  if (pid < 0) return std::nullopt;
  if (pid == 0) {
    dup2(out[1], STDOUT_FILENO);
    dup2(err[1], STDERR_FILENO);
    execv(args[0], args.data());
    _exit(127);
  }
  close(out[1]);
  close(err[1]);
  return ChildProcess(pid, out[0], err[0]);
}

ChildProcess::ChildProcess(ChildProcess&& o) noexcept
    : pid_(o.pid_),
      out_fd_(o.out_fd_),
      err_fd_(o.err_fd_),
      out_(std::move(o.out_)),
      err_(std::move(o.err_)),
      status_(o.status_) {
  o.pid_ = -1;
  o.out_fd_ = o.err_fd_ = -1;
}

ChildProcess::~ChildProcess() {
  if (pid_ > 0 && !status_) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  if (out_fd_ >= 0) close(out_fd_);
  if (err_fd_ >= 0) close(err_fd_);
}

bool ChildProcess::signal(int sig) const { return pid_ > 0 && kill(pid_, sig) == 0; }

bool ChildProcess::pump(int timeout_ms) {
  pollfd fds[2];
  int n = 0;
  if (out_fd_ >= 0) fds[n++] = {out_fd_, POLLIN, 0};
  if (err_fd_ >= 0) fds[n++] = {err_fd_, POLLIN, 0};
  if (n == 0) return false;
  int rc = poll(fds, static_cast<nfds_t>(n), timeout_ms);
  if (rc <= 0) return true;
  for (int i = 0; i < n; ++i) {
    if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
    char buf[4096];
    ssize_t got = read(fds[i].fd, buf, sizeof buf);
    bool is_out = fds[i].fd == out_fd_;
    if (got > 0) {
      (is_out ? out_ : err_).append(buf, static_cast<size_t>(got));
    } else if (got == 0 || (got < 0 && errno != EINTR && errno != EAGAIN)) {
      close(fds[i].fd);
      (is_out ? out_fd_ : err_fd_) = -1;
    }
  }
  return out_fd_ >= 0 || err_fd_ >= 0;
}

bool ChildProcess::find_line(const std::string& needle, std::string& line, size_t& scanned_out,
                             size_t& scanned_err) const {
  for (auto [buf, scanned] : {std::pair<const std::string*, size_t*>{&out_, &scanned_out}, {&err_, &scanned_err}}) {
    size_t pos;
    while ((pos = buf->find('\n', *scanned)) != std::string::npos) {
      std::string l = buf->substr(*scanned, pos - *scanned);
      *scanned = pos + 1;
      if (l.find(needle) != std::string::npos) {
        line = l;
        return true;
      }
    }
  }
  return false;
}

std::optional<int> ChildProcess::wait_for_port(const std::string& needle, int timeout_ms) {
  auto line = wait_for_line(needle, timeout_ms);
  const size_t colon = line ? line->rfind(':') : std::string::npos;
  if (colon == std::string::npos) return std::nullopt;
  try {
    return std::stoi(line->substr(colon + 1));
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

std::optional<std::string> ChildProcess::wait_for_line(const std::string& needle, int timeout_ms) {
  const int64_t deadline = now_ms() + timeout_ms;
  size_t so = 0, se = 0;
  std::string line;
  while (true) {
    if (find_line(needle, line, so, se)) return line;
    int64_t left = deadline - now_ms();
    if (left <= 0) return std::nullopt;
    if (!pump(static_cast<int>(left))) {
      if (find_line(needle, line, so, se)) return line;
      return std::nullopt;
    }
  }
}

std::optional<int> ChildProcess::wait_exit(int timeout_ms) {
  if (status_) return status_;
  const int64_t deadline = now_ms() + timeout_ms;
  while (true) {
    int st = 0;
    pid_t r = waitpid(pid_, &st, WNOHANG);
    if (r == pid_) {
      while (pump(0)) {
      }
      status_ = st;
      return status_;
    }
    int64_t left = deadline - now_ms();
    if (left <= 0) return std::nullopt;
    // Output closes when the child exits; poll on it instead of sleeping.
    if (!pump(static_cast<int>(std::min<int64_t>(left, 50)))) {
      if (waitpid(pid_, &st, 0) == pid_) {
        status_ = st;
        return status_;
      }
    }
  }
}

RunResult run_program(const std::vector<std::string>& argv, int timeout_ms) {
  RunResult r;
  auto c = ChildProcess::spawn(argv);
  if (!c) return r;
  auto st = c->wait_exit(timeout_ms);
  r.out = c->out();
  r.err = c->err();
  if (st && WIFEXITED(*st)) r.exit_code = WEXITSTATUS(*st);
  return r;
}

}  // namespace soak
