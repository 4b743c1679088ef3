#include "platform/sampler.h"

#include <cerrno>

#include "platform/procfs.h"

namespace soak {

ProcessSample begin_process_sample(int pid, int64_t wall_ms) {
  ProcessSample s;
  s.pid = pid;
  s.wall_ms = wall_ms;
  if (pid <= 0) procfs::append_error(s.error, "invalid pid " + std::to_string(pid));
  return s;
}

std::string no_such_process(int pid) { return "pid " + std::to_string(pid) + ": no such process"; }

void mark_gone(ProcessSample& s, const std::string& how) {
  s.gone = true;
  s.start_time.reset();
  procfs::append_error(s.error, no_such_process(s.pid) + how);
}

bool ended_errno(int err) { return err == ENOENT || err == ESRCH; }

Result<std::optional<int>> listener_search_result(std::optional<int> lowest, int hidden, ListenerInTable table,
                                                  uint16_t port) {
  if (lowest) return lowest;
  std::string where = "port " + std::to_string(port) + ": ";
  if (hidden > 0) {
    return make_error(where + "no visible process holds the listener; " + std::to_string(hidden) +
                      " processes could not be inspected (another user's?)");
  }
  if (table == ListenerInTable::Yes) {
    return make_error(where + "a socket listens, but no process visible here holds it (another pid namespace?)");
  }
  return std::optional<int>{};
}

Result<std::vector<LocalPort>> Sampler::local_listening_ports(int pid) {
  return make_error("pid " + std::to_string(pid) + ": this sampler does not read listening sockets");
}

}  // namespace soak
