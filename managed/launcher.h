// Starting and stopping runtime processes on the daemon's loop
// (docs/DESIGN.md §4.8): uv_spawn with an argv and no shell, in a process
// group of its own, its stdout and stderr on a file descriptor (the runtime
// log), and stops by signal to that group: SIGTERM, then SIGKILL after a
// timeout.
//
// Its own group (a session of its own: libuv's detached flag calls setsid in
// the child) means a signal meant for the runtime also reaches whatever the
// runtime started (vLLM's engine processes), while a signal to soakd's own
// group (a terminal's Ctrl-C, launchd stopping soakd's job) never reaches the
// runtime: soakd decides what happens to it.
//
// Processes soakd did not spawn in this run (a runtime it launched before a
// crash) are stopped with stop_foreign(), which re-checks the process is still
// that one (`still_same`: pid and start time) before every signal.
//
// Threading: the loop thread. Ownership: owns the process handles and timers;
// destroying the Launcher kills (SIGKILL to the group) every child it still
// watches, so a runtime is never left without an owner by accident — one
// meant to stay up is release()d first. Callbacks never fire from inside the
// call that caused them. Failure: spawn() returns the error; nothing throws.
#pragma once

#include <uv.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "core/uv_util.h"

namespace soak {

inline constexpr int64_t kForeignPollMs = 100;      // how often a foreign process is checked while stopping it
inline constexpr int64_t kAfterKillWaitMs = 5'000;  // how long a SIGKILLed foreign process may take to go

// How long stopping managed runtimes may take: the largest stop_timeout, then
// the wait after SIGKILL (0 when nothing is managed).
inline int64_t runtime_stop_budget_ms(int64_t largest_stop_timeout_ms) {
  return largest_stop_timeout_ms > 0 ? largest_stop_timeout_ms + kAfterKillWaitMs : 0;
}

struct SpawnSpec {
  std::string file;               // absolute path of the program
  std::vector<std::string> argv;  // as the runtime sees it (secrets resolved)
  std::vector<std::string> env;   // "NAME=value", the whole environment
  std::string cwd;                // empty: soakd's
  int output_fd = -1;             // stdout and stderr; the caller keeps and closes it
};

// How a child ended.
struct ChildExit {
  std::optional<int> exit_status;  // exited normally with this status
  std::optional<int> term_signal;  // ... or was killed by this signal
  // "exited with status 1", "killed by SIGKILL (signal 9)"
  std::string describe() const;
};
std::string signal_name(int sig);  // "SIGKILL", or "signal 42"

enum class ForeignStop { AlreadyGone, Terminated, Killed, Lingering };
// "already gone", "ended after SIGTERM", "ended after SIGKILL", "still there after SIGKILL"
std::string_view describe(ForeignStop s);

class Launcher {
 public:
  explicit Launcher(uv_loop_t* loop);
  ~Launcher();
  Launcher(const Launcher&) = delete;
  Launcher& operator=(const Launcher&) = delete;

  // Spawns the child; `on_exit` fires once when it ends, whatever ended it
  // (its own exit, stop(), a signal from elsewhere). Returns its pid.
  Result<int> spawn(const SpawnSpec& s, std::function<void(const ChildExit&)> on_exit);
  // SIGTERM to the child's group now, SIGKILL to the group after `timeout_ms`
  // if it has not ended; its on_exit reports the end. Unknown pids are ignored.
  void stop(int pid, int64_t timeout_ms);
  // Forgets the child and leaves it running (keep_running); no on_exit follows.
  void release(int pid);

  // Stops a process this soakd did not spawn: SIGTERM to its group (to the
  // pid alone when it leads no group), SIGKILL after `timeout_ms`, each only
  // while `still_same()` says the pid is still that process. `done` fires
  // once it is gone (Lingering: still there kAfterKillWaitMs after SIGKILL).
  void stop_foreign(int pid, std::function<bool()> still_same, int64_t timeout_ms,
                    std::function<void(ForeignStop)> done);

 private:
  struct Child {
    int pid = 0;
    UvHandle<uv_process_t> proc;
    std::unique_ptr<Timer> kill_timer;
    std::function<void(const ChildExit&)> on_exit;
  };
  struct Foreign {
    Launcher* owner = nullptr;
    uint64_t id = 0;
    int pid = 0;
    std::function<bool()> still_same;
    UvHandle<uv_timer_t> timer;  // a plain handle: foreign_tick() may destroy it from its own callback
    int64_t ticks = 0;
    int64_t timeout_ms = 0;
    bool signalled = false;
    bool killed = false;
    std::function<void(ForeignStop)> done;
  };
  static void on_child_exit(uv_process_t* p, int64_t exit_status, int term_signal);
  void foreign_tick(uint64_t id);
  void finish_foreign(uint64_t id, ForeignStop how);

  uv_loop_t* loop_;
  std::map<int, std::unique_ptr<Child>> children_;
  std::map<uint64_t, std::unique_ptr<Foreign>> foreign_;
  uint64_t next_foreign_ = 1;
};

// kill() to the process group `pid` leads, or to `pid` alone when it leads
// none. Returns whether the signal was sent.
bool signal_group(int pid, int sig);

}  // namespace soak
