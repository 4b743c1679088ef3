#include "daemon/platform/sampler.h"

#include "daemon/platform/procfs.h"

namespace soak {

ProcessSample begin_process_sample(int pid, int64_t wall_ms) {
  ProcessSample s;
  s.pid = pid;
  s.wall_ms = wall_ms;
  if (pid <= 0) procfs::append_error(s.error, "invalid pid " + std::to_string(pid));
  return s;
}

std::string no_such_process(int pid) { return "pid " + std::to_string(pid) + ": no such process"; }

Result<std::optional<int>> listener_search_result(std::optional<int> lowest, int hidden, uint16_t port) {
  if (lowest) return lowest;
  if (hidden > 0) {
    return make_error("port " + std::to_string(port) + ": no visible process holds the listener; " +
                      std::to_string(hidden) + " processes could not be inspected (another user's?)");
  }
  return std::optional<int>{};
}

}  // namespace soak
