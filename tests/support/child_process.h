// Runs a program as a child for integration tests: captures stdout and stderr,
// waits for an expected line with a deadline (poll, never sleep), sends
// signals, and reaps it. The child is killed (SIGKILL) if still running when
// the object is destroyed.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

namespace soak {

class ChildProcess {
 public:
  // argv[0] is the program path. Returns nullopt if fork/exec setup fails.
  static std::optional<ChildProcess> spawn(const std::vector<std::string>& argv);
  ChildProcess(ChildProcess&& o) noexcept;
  ChildProcess& operator=(ChildProcess&&) = delete;
  ChildProcess(const ChildProcess&) = delete;
  ~ChildProcess();

  pid_t pid() const { return pid_; }

  // Reads output until a line containing `needle` appears on either stream, or
  // until `timeout_ms` passes or both streams close. Returns the line.
  std::optional<std::string> wait_for_line(const std::string& needle, int timeout_ms);
  // wait_for_line for a line that ends in ":PORT" (the fake runtime's and
  // soakd's "listening on 127.0.0.1:PORT"); returns PORT.
  std::optional<int> wait_for_port(const std::string& needle, int timeout_ms);
  // Waits for exit up to timeout_ms, draining output; returns the exit status
  // (as from waitpid) or nullopt on timeout.
  std::optional<int> wait_exit(int timeout_ms);
  bool signal(int sig) const;

  const std::string& out() const { return out_; }
  const std::string& err() const { return err_; }

 private:
  ChildProcess(pid_t pid, int out_fd, int err_fd) : pid_(pid), out_fd_(out_fd), err_fd_(err_fd) {}
  // Reads what is available within timeout_ms; false when both streams are closed.
  bool pump(int timeout_ms);
  bool find_line(const std::string& needle, std::string& line, size_t& scanned_out, size_t& scanned_err) const;

  pid_t pid_ = -1;
  int out_fd_ = -1, err_fd_ = -1;
  std::string out_, err_;
  std::optional<int> status_;
};

// Runs a program to completion (bounded), returning exit status and output.
struct RunResult {
  int exit_code = -1;  // -1: killed by a signal or timed out
  std::string out, err;
};
RunResult run_program(const std::vector<std::string>& argv, int timeout_ms);

}  // namespace soak
