// Running a short command on the loop: argv WITHOUT a shell via uv_spawn,
// optional text on its stdin, its stdout and stderr read together (capped),
// killed with SIGKILL at its time bound, with every process it started (it
// leads a process group of its own). Two callers: a candidate's version
// command (probes/probe_build.h) and the verdict notification (daemon/notifier.h).
//
// Ownership: the caller owns the CommandRun; destroying it kills a child that
// still runs (its exit is not waited for). Threading: loop thread only.
// Failure: nothing throws; `done` fires exactly once, never from inside
// start() or cancel() (a failed spawn is reported on a later loop pass).
// A command given input may exit without reading it: the process must ignore
// SIGPIPE (`soakd run` does), or libuv's write to it would end the process.
#pragma once

#include <uv.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/result.h"

namespace soak::probes {

class Deferrer;  // probes/engine_exchange.h

// What a command's stdout and stderr keep, together, at most.
inline constexpr size_t kMaxCommandOutput = 64 * 1024;

struct CommandSpec {
  std::vector<std::string> argv;  // argv[0] looked up in PATH unless it holds a '/'
  int64_t timeout_ms = 0;         // then SIGKILL
  std::string input;              // written to stdin, which is then closed (empty: stdin is /dev/null)
  // The whole environment, "NAME=value" each; nullopt: soakd's own, inherited.
  std::optional<std::vector<std::string>> env;
};

// How a command ended.
enum class CommandEndKind {
  NotStarted,  // uv_spawn failed (no such program, not executable): `error` says why
  Exited,      // on its own: `exit_status`, or `term_signal` when a signal ended it
  TimedOut,    // killed at its time bound
  Cancelled,   // cancel() killed it
};

struct CommandEnd {
  CommandEndKind kind = CommandEndKind::NotStarted;
  int64_t exit_status = 0;
  int term_signal = 0;
  std::string error;   // NotStarted only
  std::string output;  // stdout and stderr as they came, at most kMaxCommandOutput
  bool ok() const { return kind == CommandEndKind::Exited && exit_status == 0 && term_signal == 0; }
};

// One line for the log and the store: "exited with status 3", "killed by
// signal 9", "did not finish within 30000 ms (killed)", "cannot run x: ...".
std::string describe_end(const std::string& program, const CommandEnd& end, int64_t timeout_ms);

class CommandRun {
 public:
  using Done = std::function<void(Result<std::string>)>;  // the output on exit status 0, else why not
  using Ended = std::function<void(CommandEnd)>;
  CommandRun(uv_loop_t* loop, Deferrer& defer, std::vector<std::string> argv, int64_t timeout_ms, Done done);
  CommandRun(uv_loop_t* loop, Deferrer& defer, CommandSpec spec, Ended ended);
  ~CommandRun();  // kills the child if it still runs
  CommandRun(const CommandRun&) = delete;
  CommandRun& operator=(const CommandRun&) = delete;
  void start();
  void cancel();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace soak::probes
