// The platform seam for memory sampling: host figures, per-process figures,
// process discovery and the TCP-listener lookup.
//
// Ownership: the composition root makes one Sampler with make_system_sampler()
// (sampler_linux.cc or sampler_mach.cc, chosen by CMake), handing it the
// signatures of the runtimes it knows (RuntimeSignature, which the sampler
// keeps a copy of), and lends it to the sampling service. Tests may use the
// Linux sampler on a fake /proc tree.
// Threading: called from the daemon's loop thread only (from its one sampling
// timer); not thread-safe, because it reuses its read buffers between calls.
// Cost: calls are synchronous reads of a few small /proc files or a few Mach
// and sysctl calls; nothing spawns a process or shells out (no ps, no vm_stat).
// sample_host/sample_process allocate nothing in steady state beyond the
// returned sample; list_processes and find_listening_pid walk every process
// and are meant for discovery, not for every tick.
// Failure: nothing throws. A figure that could not be read is std::nullopt and
// the reason is appended to the sample's `error` text; never a made-up zero.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "core/types.h"

namespace soak {

struct ProcessInfo {
  int pid = 0;
  int ppid = 0;                   // 0 when unknown
  std::string name;               // kernel's short name (Linux comm, macOS p_comm / p_name)
  std::string path;               // executable path; empty when not visible to this user
  std::vector<std::string> argv;  // empty when not visible (another user's process, zombie)
};

// How one runtime's server processes show in a process list: its programs
// (argv[0], the executable, or a Python script), its Python modules (`-m
// module`) and its desktop app. Each name may end in '*' (a prefix) and be
// followed by a space and the subcommand that must come first after it
// ("vllm serve"). Platform knows no runtime: the composition root builds
// these from the runtimes' entries (daemon/wiring.h runtime_signatures()),
// and platform/runtime_processes.h matches them. The spans point at constant
// data that lives for the whole program.
struct RuntimeSignature {
  RuntimeKind kind = RuntimeKind::OpenAI;
  std::span<const std::string_view> programs;
  std::span<const std::string_view> modules;
  std::string_view app;  // its process name, or any process inside "/<app>.app/"
};
using RuntimeSignatures = std::span<const RuntimeSignature>;

// A TCP port a process listens on where a client on this machine reaches it
// at a loopback address: bound to 127.0.0.1 or ::1, or to the unspecified
// address (procfs.h LocalListener).
struct LocalPort {
  uint16_t port = 0;
  bool ipv4 = true;  // reached at 127.0.0.1; false: at [::1] only
  bool operator==(const LocalPort&) const = default;
};

class Sampler {
 public:
  explicit Sampler(RuntimeSignatures runtimes) : runtimes_(runtimes.begin(), runtimes.end()) {}
  virtual ~Sampler() = default;

  // The runtimes process discovery recognises (platform/runtime_processes.h).
  RuntimeSignatures runtimes() const { return runtimes_; }

  // This host's locator. Fails when the hostname or the physical memory size
  // cannot be read; a model or OS version that cannot be read is "unknown".
  virtual Result<HostInfo> host_info() = 0;

  // Host memory figures now. `wall_ms` is stamped on the sample as given: the
  // sampler never reads a clock.
  virtual HostSample sample_host(int64_t wall_ms) = 0;

  // One process's figures now. A pid that does not exist gives a sample with
  // every figure unknown and an error saying so.
  virtual ProcessSample sample_process(int pid, int64_t wall_ms) = 0;

  // Every process visible to this user. Processes that exit during the walk
  // are skipped; fails only when the process table itself cannot be read.
  virtual Result<std::vector<ProcessInfo>> list_processes() = 0;

  // The process owning a TCP socket that listens on `port` (IPv4 or IPv6, any
  // local address); the lowest pid when several share it (pre-forked
  // workers). nullopt when nothing listens there. An error when something
  // listens but its owner is not visible to this user.
  virtual Result<std::optional<int>> find_listening_pid(uint16_t port) = 0;

  // The ports `pid` listens on that loopback reaches (LocalPort), each once,
  // lowest first (`soakd init` asks each what it serves). An error when the
  // process's sockets cannot be inspected (another user's process). The base
  // class's answer is that error, for samplers that do not look (tests').
  virtual Result<std::vector<LocalPort>> local_listening_ports(int pid);

 private:
  std::vector<RuntimeSignature> runtimes_;
};

// The implementation for the platform this was built for, recognising `runtimes`.
std::unique_ptr<Sampler> make_system_sampler(RuntimeSignatures runtimes);

// ---- shared by the implementations (sampler.cc) -------------------------------
// A sample stamped with pid and time; an error when the pid cannot name a process.
ProcessSample begin_process_sample(int pid, int64_t wall_ms);
// The error text of a pid that names no process.
std::string no_such_process(int pid);
// The process ended, before or while it was read: `gone`, no start time (a
// pid with none identifies no instance), and no_such_process(pid) + `how` in
// the error. Callers test `gone`, never the text.
void mark_gone(ProcessSample& s, const std::string& how = "");
// Whether a read's errno says the process is no longer there: its /proc
// directory gone (ENOENT) or the task ending under the read (ESRCH).
bool ended_errno(int err);
// The outcome of a search for a port's listener: `lowest` found wins;
// otherwise it is an error when the socket table showed a listener
// (Linux knows that before looking for its owner) or when `hidden` processes
// could not be inspected (the owner may be among them); else nothing listens.
enum class ListenerInTable { Unknown, Yes };
Result<std::optional<int>> listener_search_result(std::optional<int> lowest, int hidden, ListenerInTable table,
                                                  uint16_t port);

}  // namespace soak
