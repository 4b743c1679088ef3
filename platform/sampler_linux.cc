// Linux sampler: reads /proc and /sys text files with plain open/read into
// one reused buffer and hands the text to the pure parsers in procfs.h.
#include "platform/sampler_linux.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>
#include <string_view>
#include <vector>

#include "platform/procfs.h"
#include "platform/runtime_processes.h"
#include "platform/thermal.h"

namespace soak {
namespace {

using procfs::append_error;

constexpr size_t kInitialBuffer = 16 * 1024;
constexpr std::string_view kDeletedSuffix = " (deleted)";

std::optional<int> pid_of_dirent(const char* name) {
  auto v = procfs::parse_count(name);
  if (!v || *v <= 0 || *v > 0x7FFFFFFF) return std::nullopt;
  return static_cast<int>(*v);
}

class LinuxSampler final : public Sampler {
 public:
  LinuxSampler(LinuxRoots roots, RuntimeSignatures runtimes)
      : Sampler(runtimes), roots_(std::move(roots)), thermal_(make_thermal_source(roots_.sys)), buf_(kInitialBuffer) {
    long t = ::sysconf(_SC_CLK_TCK);
    clk_tck_ = t > 0 ? t : 0;
  }

  Result<HostInfo> host_info() override {
    HostInfo h;
    int err = read(roots_.proc + "/sys/kernel/hostname");
    if (err) return make_error("hostname: " + std::string(std::strerror(err)));
    h.hostname = std::string(procfs::trim(text_));
    err = read(roots_.proc + "/meminfo");
    if (err) return make_error("meminfo: " + std::string(std::strerror(err)));
    auto total = procfs::parse_meminfo(text_).mem_total;
    if (!total || h.hostname.empty()) return make_error("hostname or MemTotal unreadable");
    h.mem_bytes = *total;
    h.hw_model = hardware_model();
    h.os_version = os_version();
    return h;
  }

  HostSample sample_host(int64_t wall_ms) override {
    HostSample s;
    s.wall_ms = wall_ms;
    if (int err = read(path("%s/meminfo", roots_.proc.c_str()))) {
      append_error(s.error, "meminfo: " + std::string(std::strerror(err)));
    } else {
      procfs::apply_meminfo(text_, s);
    }
    if (int err = read(path("%s/vmstat", roots_.proc.c_str()))) {
      append_error(s.error, "vmstat: " + std::string(std::strerror(err)));
    } else {
      procfs::apply_vmstat(text_, s);
    }
    int err = read(path("%s/pressure/memory", roots_.proc.c_str()));
    // Kernels before 4.20, or booted with psi=0, have no PSI: unknown, not an error.
    if (err == 0) {
      procfs::apply_pressure(text_, s);
    } else if (err != ENOENT && err != EOPNOTSUPP) {
      append_error(s.error, "pressure/memory: " + std::string(std::strerror(err)));
    }
    apply_thermal(*thermal_, s);
    return s;
  }

  ProcessSample sample_process(int pid, int64_t wall_ms) override {
    ProcessSample s = begin_process_sample(pid, wall_ms);
    if (!s.error.empty()) return s;
    if (int err = read(path("%s/%d/stat", roots_.proc.c_str(), pid))) {
      if (ended_errno(err))
        mark_gone(s);
      else
        append_error(s.error, "stat: " + std::string(std::strerror(err)));
      return s;
    }
    procfs::apply_stat(text_, clk_tck_, s);
    if (auto st = procfs::parse_stat(text_); st && st->state == 'Z') {
      // A zombie has ended; only its exit status waits for its parent to
      // reap it (an orphan waits for init, which may take a while).
      mark_gone(s, " (a zombie)");
      return s;
    }
    // The process may end between its files: a later read that finds it gone
    // makes the whole sample gone, never a half-read one.
    if (int err = read(path("%s/%d/status", roots_.proc.c_str(), pid))) {
      if (ended_while_read(pid, err)) {
        mark_gone(s, " (ended while read)");
        return s;
      }
      append_error(s.error, "status: " + std::string(std::strerror(err)));
    } else {
      procfs::apply_status(text_, s);
    }
    // Needs ptrace-read access: another user's runtime gives EACCES here.
    if (int err = read(path("%s/%d/smaps_rollup", roots_.proc.c_str(), pid))) {
      if (ended_while_read(pid, err)) {
        mark_gone(s, " (ended while read)");
        return s;
      }
      append_error(s.error, "smaps_rollup: " + std::string(std::strerror(err)));
    } else {
      procfs::apply_smaps_rollup(text_, s);
    }
    return s;
  }

  Result<std::vector<ProcessInfo>> list_processes() override {
    DIR* dir = ::opendir(roots_.proc.c_str());
    if (!dir) return make_error(roots_.proc + ": " + std::strerror(errno));
    std::vector<ProcessInfo> out;
    while (dirent* ent = ::readdir(dir)) {
      auto pid = pid_of_dirent(ent->d_name);
      if (!pid) continue;
      // The process may exit at any point of the walk: skip it then.
      if (read(path("%s/%d/stat", roots_.proc.c_str(), *pid))) continue;
      auto st = procfs::parse_stat(text_);
      if (!st) continue;
      ProcessInfo p;
      p.pid = *pid;
      p.ppid = st->ppid;
      p.name = std::move(st->comm);
      if (read(path("%s/%d/cmdline", roots_.proc.c_str(), *pid)) == 0) p.argv = procfs::parse_cmdline(text_);
      p.path = read_link(path("%s/%d/exe", roots_.proc.c_str(), *pid));
      out.push_back(std::move(p));
    }
    ::closedir(dir);
    return out;
  }

  Result<std::optional<int>> find_listening_pid(uint16_t port) override {
    std::vector<uint64_t> inodes;
    if (int err = read(path("%s/net/tcp", roots_.proc.c_str()))) {
      return make_error("net/tcp: " + std::string(std::strerror(err)));
    }
    procfs::parse_tcp_listeners(text_, port, inodes);
    int err = read(path("%s/net/tcp6", roots_.proc.c_str()));
    if (err == 0) {
      procfs::parse_tcp_listeners(text_, port, inodes);
    } else if (err != ENOENT) {  // ENOENT: IPv6 disabled
      return make_error("net/tcp6: " + std::string(std::strerror(err)));
    }
    if (inodes.empty()) return std::optional<int>{};
    std::set<uint64_t> wanted(inodes.begin(), inodes.end());

    DIR* dir = ::opendir(roots_.proc.c_str());
    if (!dir) return make_error(roots_.proc + ": " + std::strerror(errno));
    std::optional<int> lowest;
    int hidden = 0;
    while (dirent* ent = ::readdir(dir)) {
      auto pid = pid_of_dirent(ent->d_name);
      if (!pid || (lowest && *pid > *lowest)) continue;
      int r = holds_socket(*pid, wanted);
      if (r > 0) lowest = *pid;
      if (r < 0) ++hidden;
    }
    ::closedir(dir);
    return listener_search_result(lowest, hidden, ListenerInTable::Yes, port);
  }

  Result<std::vector<LocalPort>> local_listening_ports(int pid) override {
    std::map<uint64_t, LocalPort> by_inode;  // the loopback-reachable listeners, by socket inode
    for (bool v6 : {false, true}) {
      const char* table = v6 ? "net/tcp6" : "net/tcp";
      if (int err = read(roots_.proc + "/" + table)) {
        if (v6 && err == ENOENT) continue;  // IPv6 disabled
        return make_error(std::string(table) + ": " + std::strerror(err));
      }
      auto listeners = procfs::parse_local_listeners(text_, v6);
      if (!listeners) return make_error(std::string(table) + ": not a tcp table");
      for (const auto& l : *listeners) by_inode[l.inode] = LocalPort{l.port, !v6};
    }
    std::map<uint16_t, bool> ports;  // port -> reached over IPv4
    if (!by_inode.empty()) {
      DIR* fds = ::opendir(path("%s/%d/fd", roots_.proc.c_str(), pid));
      if (!fds)
        return make_error("pid " + std::to_string(pid) + ": its sockets cannot be read: " + std::strerror(errno));
      while (dirent* ent = ::readdir(fds)) {
        if (ent->d_name[0] == '.') continue;
        ssize_t n = ::readlinkat(::dirfd(fds), ent->d_name, link_, sizeof link_ - 1);
        if (n <= 0) continue;
        auto inode = procfs::parse_socket_link(std::string_view(link_, static_cast<size_t>(n)));
        auto it = inode ? by_inode.find(*inode) : by_inode.end();
        if (it != by_inode.end()) ports[it->second.port] = ports[it->second.port] || it->second.ipv4;
      }
      ::closedir(fds);
    }
    std::vector<LocalPort> out;
    for (const auto& [port, v4] : ports) out.push_back(LocalPort{port, v4});
    return out;
  }

 private:
  // Reads a whole file into buf_ (text_ views it). Returns 0 or an errno.
  int read(const std::string& p) { return read(p.c_str()); }
  int read(const char* p) {
    text_ = {};
    int fd = ::open(p, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return errno;
    size_t len = 0;
    while (true) {
      if (len == buf_.size()) buf_.resize(buf_.size() * 2);
      ssize_t n = ::read(fd, buf_.data() + len, buf_.size() - len);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        int err = errno;
        ::close(fd);
        return err;
      }
      if (n == 0) break;
      len += static_cast<size_t>(n);
    }
    ::close(fd);
    text_ = std::string_view(buf_.data(), len);
    return 0;
  }

  // After its stat was read: a file of the process that fails with ESRCH (the
  // task ending under the read), or ENOENT with its whole directory gone,
  // says the process ended; ENOENT beside a directory that is still there is
  // a file this kernel lacks (smaps_rollup before Linux 4.14).
  bool ended_while_read(int pid, int err) {
    if (err == ESRCH) return true;
    return err == ENOENT && ::access(path("%s/%d", roots_.proc.c_str(), pid), F_OK) != 0;
  }

  const char* path(const char* fmt, const char* root) {
    std::snprintf(path_, sizeof path_, fmt, root);
    return path_;
  }
  const char* path(const char* fmt, const char* root, int pid) {
    std::snprintf(path_, sizeof path_, fmt, root, pid);
    return path_;
  }

  std::string read_link(const char* p) {
    ssize_t n = ::readlink(p, link_, sizeof link_ - 1);
    if (n <= 0) return {};  // kernel threads, other users' processes
    std::string_view target(link_, static_cast<size_t>(n));
    // An upgraded binary still running shows as "<path> (deleted)".
    if (target.size() > kDeletedSuffix.size() &&
        target.substr(target.size() - kDeletedSuffix.size()) == kDeletedSuffix) {
      target.remove_suffix(kDeletedSuffix.size());
    }
    return std::string(target);
  }

  // 1: pid holds one of the sockets; 0: it does not; -1: its fds are not visible.
  int holds_socket(int pid, const std::set<uint64_t>& wanted) {
    DIR* fds = ::opendir(path("%s/%d/fd", roots_.proc.c_str(), pid));
    if (!fds) return errno == EACCES || errno == EPERM ? -1 : 0;
    int found = 0;
    while (dirent* ent = ::readdir(fds)) {
      if (ent->d_name[0] == '.') continue;
      ssize_t n = ::readlinkat(::dirfd(fds), ent->d_name, link_, sizeof link_ - 1);
      if (n <= 0) continue;
      auto inode = procfs::parse_socket_link(std::string_view(link_, static_cast<size_t>(n)));
      if (inode && wanted.count(*inode)) {
        found = 1;
        break;
      }
    }
    ::closedir(fds);
    return found;
  }

  std::string first_readable(std::initializer_list<std::string> paths) {
    for (const auto& p : paths) {
      if (read(p) == 0) {
        std::string v(procfs::trim(text_));
        if (!v.empty()) return v;
      }
    }
    return {};
  }

  std::string hardware_model() {
    std::string m =
        first_readable({roots_.sys + "/class/dmi/id/product_name", roots_.sys + "/firmware/devicetree/base/model"});
    if (m.empty() && read(roots_.proc + "/cpuinfo") == 0) m = procfs::cpuinfo_model(text_);
    return m.empty() ? "unknown" : m;
  }

  std::string os_version() {
    std::string os_release = read(roots_.etc + "/os-release") == 0 ? std::string(text_) : std::string();
    std::string kernel = read(roots_.proc + "/sys/kernel/osrelease") == 0 ? std::string(text_) : std::string();
    std::string v = procfs::linux_os_version(os_release, kernel);
    return v.empty() ? "unknown" : v;
  }

  LinuxRoots roots_;
  std::unique_ptr<ThermalSource> thermal_;
  std::vector<char> buf_;
  std::string_view text_;
  char path_[4096];
  char link_[4096];
  long clk_tck_ = 0;
};

}  // namespace

std::unique_ptr<Sampler> make_linux_sampler(LinuxRoots roots, RuntimeSignatures runtimes) {
  return std::make_unique<LinuxSampler>(std::move(roots), runtimes);
}

std::unique_ptr<Sampler> make_system_sampler(RuntimeSignatures runtimes) {
  return make_linux_sampler(LinuxRoots{}, runtimes);
}

}  // namespace soak
