// macOS sampler: Mach, sysctl and libproc calls that gather raw numbers into
// the plain structs of darwin_figures.h, where every conversion and decision
// is made (and tested on Linux). Every call's return is checked; a failing
// call becomes a line in the sample's `error` text.
//
// Signatures, from the macOS SDK headers:
//   <mach/mach_init.h>    mach_port_t mach_host_self(void);
//                         kern_return_t host_page_size(host_t, vm_size_t *);
//   <mach/mach_host.h>    kern_return_t host_statistics64(host_t, host_flavor_t,
//                             host_info64_t, mach_msg_type_number_t *);
//   <mach/host_info.h>    HOST_VM_INFO64, HOST_VM_INFO64_COUNT
//   <mach/vm_statistics.h> struct vm_statistics64 (free_count, active_count, inactive_count,
//                             wire_count, compressor_page_count, pageins, pageouts,
//                             swapins, swapouts, ...)
//   <mach/mach_port.h>    kern_return_t mach_port_deallocate(ipc_space_t, mach_port_name_t);
//   <mach/mach_time.h>    kern_return_t mach_timebase_info(mach_timebase_info_t);
//   <sys/sysctl.h>        int sysctl(int *, u_int, void *, size_t *, void *, size_t);
//                         int sysctlnametomib(const char *, int *, size_t *);
//                         struct xsw_usage { xsu_total, xsu_avail, xsu_used, ... };
//                         CTL_KERN, KERN_ARGMAX, KERN_PROCARGS2, CTL_MAXNAME
//   <libproc.h>           int proc_pid_rusage(int pid, int flavor, rusage_info_t *buffer);
//                         int proc_listallpids(void *buffer, int buffersize);  (count of pids, 0 on error)
//                         int proc_pidpath(int pid, void *buffer, uint32_t buffersize);
//                         int proc_name(int pid, void *buffer, uint32_t buffersize);
//                         int proc_pidinfo(int pid, int flavor, uint64_t arg, void *buffer, int buffersize);
//                         int proc_pidfdinfo(int pid, int fd, int flavor, void *buffer, int buffersize);
//   <sys/resource.h>      struct rusage_info_v4 (ri_phys_footprint, ri_resident_size,
//                             ri_proc_start_abstime), RUSAGE_INFO_V4, typedef void *rusage_info_t
//   <sys/proc_info.h>     PROC_PIDTBSDINFO + struct proc_bsdinfo (pbi_ppid, pbi_comm, pbi_name),
//                         PROC_PIDLISTFDS + struct proc_fdinfo (proc_fd, proc_fdtype),
//                         PROX_FDTYPE_SOCKET, PROC_PIDFDSOCKETINFO + struct socket_fdinfo
//                         (psi.soi_kind, psi.soi_proto.pri_tcp.tcpsi_state,
//                         psi.soi_proto.pri_tcp.tcpsi_ini.insi_lport), SOCKINFO_TCP,
//                         TSI_S_LISTEN, PROC_PIDPATHINFO_MAXSIZE
#include <arpa/inet.h>
#include <errno.h>
#include <libproc.h>
#include <mach/host_info.h>
#include <mach/mach_host.h>
#include <mach/mach_init.h>
#include <mach/mach_port.h>
#include <mach/mach_time.h>
#include <mach/vm_statistics.h>
#include <netinet/in.h>
#include <sys/proc_info.h>
#include <sys/resource.h>
#include <sys/sysctl.h>
#include <unistd.h>

#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "platform/darwin_figures.h"
#include "platform/procfs.h"
#include "platform/runtime_processes.h"
#include "platform/sampler.h"
#include "platform/thermal.h"

namespace soak {
namespace {

using procfs::append_error;

std::string errno_text(const char* call) { return std::string(call) + ": " + std::strerror(errno); }

// A sysctl looked up by name once, then read by MIB (no name lookup per sample).
class Sysctl {
 public:
  explicit Sysctl(const char* name) : name_(name) {
    len_ = CTL_MAXNAME;
    if (::sysctlnametomib(name, mib_, &len_) != 0) len_ = 0;
  }
  // Reads a fixed-size integer value of 4 or 8 bytes.
  bool read_int(int64_t& out, std::string& error) const {
    if (len_ == 0) {
      append_error(error, std::string(name_) + ": not available");
      return false;
    }
    uint64_t v = 0;
    size_t size = sizeof v;
    if (::sysctl(const_cast<int*>(mib_), static_cast<u_int>(len_), &v, &size, nullptr, 0) != 0) {
      append_error(error, errno_text(name_));
      return false;
    }
    if (size == sizeof(uint32_t)) {
      uint32_t v32 = 0;
      std::memcpy(&v32, &v, sizeof v32);
      out = static_cast<int64_t>(v32);
    } else if (size == sizeof(uint64_t)) {
      out = static_cast<int64_t>(v);
    } else {
      append_error(error, std::string(name_) + ": unexpected size " + std::to_string(size));
      return false;
    }
    return true;
  }
  template <class T>
  bool read_struct(T& out, std::string& error) const {
    if (len_ == 0) {
      append_error(error, std::string(name_) + ": not available");
      return false;
    }
    size_t size = sizeof out;
    if (::sysctl(const_cast<int*>(mib_), static_cast<u_int>(len_), &out, &size, nullptr, 0) != 0) {
      append_error(error, errno_text(name_));
      return false;
    }
    if (size != sizeof out) {
      append_error(error, std::string(name_) + ": unexpected size " + std::to_string(size));
      return false;
    }
    return true;
  }
  bool read_string(std::string& out, std::string& error) const {
    char buf[256];
    size_t size = sizeof buf;
    if (len_ == 0 || ::sysctl(const_cast<int*>(mib_), static_cast<u_int>(len_), buf, &size, nullptr, 0) != 0) {
      append_error(error, len_ == 0 ? std::string(name_) + ": not available" : errno_text(name_));
      return false;
    }
    out = darwin::bounded_string(buf, size);
    return true;
  }

 private:
  const char* name_;
  int mib_[CTL_MAXNAME];
  size_t len_ = 0;
};

class MachSampler final : public Sampler {
 public:
  explicit MachSampler(RuntimeSignatures runtimes)
      : Sampler(runtimes),
        host_(::mach_host_self()),
        swapusage_("vm.swapusage"),
        pressure_("kern.memorystatus_vm_pressure_level"),
        memstatus_level_("kern.memorystatus_level"),
        memsize_("hw.memsize"),
        model_("hw.model"),
        product_version_("kern.osproductversion"),
        os_build_("kern.osversion"),
        thermal_(make_thermal_source("")) {
    mach_timebase_info_data_t tb{};
    if (::mach_timebase_info(&tb) == KERN_SUCCESS) timebase_ = darwin::Timebase{tb.numer, tb.denom};
    int argmax = 0;
    size_t size = sizeof argmax;
    int mib[2] = {CTL_KERN, KERN_ARGMAX};
    if (::sysctl(mib, 2, &argmax, &size, nullptr, 0) == 0 && argmax > 0) procargs_.resize(static_cast<size_t>(argmax));
  }
  // mach_host_self() hands out a send right; give it back once.
  ~MachSampler() override {
    if (host_ != MACH_PORT_NULL) (void)::mach_port_deallocate(::mach_task_self(), host_);
  }

  Result<HostInfo> host_info() override {
    HostInfo h;
    std::string error;
    char name[256] = {};
    if (::gethostname(name, sizeof name - 1) != 0) return make_error(errno_text("gethostname"));
    h.hostname = darwin::bounded_string(name, sizeof name);
    int64_t mem = 0;
    if (!memsize_.read_int(mem, error) || mem <= 0) return make_error("hw.memsize unreadable: " + error);
    h.mem_bytes = mem;
    if (!model_.read_string(h.hw_model, error) || h.hw_model.empty()) h.hw_model = "unknown";
    std::string product, build;
    if (product_version_.read_string(product, error)) (void)os_build_.read_string(build, error);
    h.os_version = darwin::macos_version(product, build);
    if (h.os_version.empty()) h.os_version = "unknown";
    return h;
  }

  HostSample sample_host(int64_t wall_ms) override {
    HostSample s;
    s.wall_ms = wall_ms;

    vm_size_t page_size = 0;
    kern_return_t kr = ::host_page_size(host_, &page_size);
    vm_statistics64_data_t vm{};
    mach_msg_type_number_t count = HOST_VM_INFO64_COUNT;
    if (kr != KERN_SUCCESS) {
      append_error(s.error, "host_page_size: kern_return " + std::to_string(kr));
    } else if ((kr = ::host_statistics64(host_, HOST_VM_INFO64, reinterpret_cast<host_info64_t>(&vm), &count)) !=
               KERN_SUCCESS) {
      append_error(s.error, "host_statistics64: kern_return " + std::to_string(kr));
    } else {
      darwin::apply_vm(darwin::VmRaw{.page_size = page_size,
                                     .free_count = vm.free_count,
                                     .active_count = vm.active_count,
                                     .inactive_count = vm.inactive_count,
                                     .wire_count = vm.wire_count,
                                     .compressor_page_count = vm.compressor_page_count,
                                     .speculative_count = vm.speculative_count,
                                     .pageins = vm.pageins,
                                     .pageouts = vm.pageouts,
                                     .swapins = vm.swapins,
                                     .swapouts = vm.swapouts},
                       s);
    }

    struct xsw_usage sw {};
    if (swapusage_.read_struct(sw, s.error))
      darwin::apply_swap(darwin::SwapRaw{sw.xsu_total, sw.xsu_avail, sw.xsu_used}, s);
    int64_t v = 0;
    if (pressure_.read_int(v, s.error)) darwin::apply_pressure_level(v, s);
    if (memstatus_level_.read_int(v, s.error)) darwin::apply_memorystatus_level(v, s);
    if (memsize_.read_int(v, s.error)) darwin::apply_memsize(static_cast<uint64_t>(v), s);
    apply_thermal(*thermal_, s);
    return s;
  }

  ProcessSample sample_process(int pid, int64_t wall_ms) override {
    ProcessSample s = begin_process_sample(pid, wall_ms);
    if (!s.error.empty()) return s;
    rusage_info_v4 ri{};
    // No task port needed: works for the user's own processes, and for all as root.
    if (::proc_pid_rusage(pid, RUSAGE_INFO_V4, reinterpret_cast<rusage_info_t*>(&ri)) != 0) {
      if (errno == ESRCH)
        mark_gone(s);
      else
        append_error(s.error, errno_text("proc_pid_rusage"));
      return s;
    }
    darwin::apply_rusage(darwin::RusageRaw{ri.ri_phys_footprint, ri.ri_resident_size, ri.ri_proc_start_abstime},
                         timebase_, s);
    char name[2 * MAXCOMLEN + 1] = {};
    if (::proc_name(pid, name, sizeof name) > 0)
      s.name = darwin::bounded_string(name, sizeof name);
    else
      append_error(s.error, errno_text("proc_name"));
    return s;
  }

  Result<std::vector<ProcessInfo>> list_processes() override {
    if (!list_pids()) return make_error(errno_text("proc_listallpids"));
    std::vector<ProcessInfo> out;
    out.reserve(pids_.size());
    for (int pid : pids_) {
      if (pid <= 0) continue;
      proc_bsdinfo bsd{};
      // Fails for processes that exited during the walk: skip them.
      if (::proc_pidinfo(pid, PROC_PIDTBSDINFO, 0, &bsd, sizeof bsd) != static_cast<int>(sizeof bsd)) continue;
      ProcessInfo p;
      p.pid = pid;
      p.ppid = static_cast<int>(bsd.pbi_ppid);
      p.name = darwin::bounded_string(bsd.pbi_name, sizeof bsd.pbi_name);
      if (p.name.empty()) p.name = darwin::bounded_string(bsd.pbi_comm, sizeof bsd.pbi_comm);
      char path[PROC_PIDPATHINFO_MAXSIZE];
      int n = ::proc_pidpath(pid, path, sizeof path);
      if (n > 0) p.path.assign(path, static_cast<size_t>(n));
      p.argv = read_argv(pid);
      out.push_back(std::move(p));
    }
    return out;
  }

  Result<std::optional<int>> find_listening_pid(uint16_t port) override {
    if (!list_pids()) return make_error(errno_text("proc_listallpids"));
    std::optional<int> lowest;
    int hidden = 0;
    for (int pid : pids_) {
      if (pid <= 0 || (lowest && pid > *lowest)) continue;
      int r = listens_on(pid, port);
      if (r > 0) lowest = pid;
      if (r < 0) ++hidden;
    }
    return listener_search_result(lowest, hidden, ListenerInTable::Unknown, port);
  }

  Result<std::vector<LocalPort>> local_listening_ports(int pid) override {
    int bytes = ::proc_pidinfo(pid, PROC_PIDLISTFDS, 0, nullptr, 0);
    if (bytes <= 0) return make_error("pid " + std::to_string(pid) + ": " + errno_text("proc_pidinfo"));
    fds_.resize(static_cast<size_t>(bytes) / sizeof(proc_fdinfo) + 16);
    bytes = ::proc_pidinfo(pid, PROC_PIDLISTFDS, 0, fds_.data(), static_cast<int>(fds_.size() * sizeof(proc_fdinfo)));
    if (bytes <= 0) return make_error("pid " + std::to_string(pid) + ": " + errno_text("proc_pidinfo"));
    std::map<uint16_t, bool> ports;  // port -> reached over IPv4
    for (size_t i = 0, n = static_cast<size_t>(bytes) / sizeof(proc_fdinfo); i < n; ++i) {
      if (fds_[i].proc_fdtype != PROX_FDTYPE_SOCKET) continue;
      socket_fdinfo si{};
      if (::proc_pidfdinfo(pid, fds_[i].proc_fd, PROC_PIDFDSOCKETINFO, &si, sizeof si) != static_cast<int>(sizeof si))
        continue;
      if (si.psi.soi_kind != SOCKINFO_TCP || si.psi.soi_proto.pri_tcp.tcpsi_state != TSI_S_LISTEN) continue;
      const in_sockinfo& ini = si.psi.soi_proto.pri_tcp.tcpsi_ini;
      const uint16_t port = darwin::port_from_insi_lport(ini.insi_lport);
      if ((ini.insi_vflag & INI_IPV4) != 0) {
        const uint32_t a = ntohl(ini.insi_laddr.ina_46.i46a_addr4.s_addr);
        if (a == INADDR_ANY || a == INADDR_LOOPBACK) ports[port] = true;
      } else if ((ini.insi_vflag & INI_IPV6) != 0) {
        const in6_addr& a = ini.insi_laddr.ina_6;
        if (IN6_IS_ADDR_LOOPBACK(&a) || IN6_IS_ADDR_UNSPECIFIED(&a)) ports.try_emplace(port, false);
      }
    }
    std::vector<LocalPort> out;
    for (const auto& [port, v4] : ports) out.push_back(LocalPort{port, v4});
    return out;
  }

 private:
  bool list_pids() {
    int n = ::proc_listallpids(nullptr, 0);
    if (n <= 0) return false;
    // Room for processes started between the two calls.
    pids_.resize(static_cast<size_t>(n) + 64);
    n = ::proc_listallpids(pids_.data(), static_cast<int>(pids_.size() * sizeof(int)));
    if (n <= 0) return false;
    pids_.resize(static_cast<size_t>(n));
    return true;
  }

  // Only the arguments: KERN_PROCARGS2 also carries the environment, which is never kept.
  std::vector<std::string> read_argv(int pid) {
    if (procargs_.empty()) return {};
    int mib[3] = {CTL_KERN, KERN_PROCARGS2, pid};
    size_t size = procargs_.size();
    if (::sysctl(mib, 3, procargs_.data(), &size, nullptr, 0) != 0) return {};  // other users' processes
    auto args = darwin::parse_procargs2(std::string_view(procargs_.data(), size));
    return args ? std::move(args->argv) : std::vector<std::string>{};
  }

  // 1: pid has a TCP socket listening on port; 0: it does not; -1: not visible.
  int listens_on(int pid, uint16_t port) {
    int bytes = ::proc_pidinfo(pid, PROC_PIDLISTFDS, 0, nullptr, 0);
    if (bytes <= 0) return errno == EPERM ? -1 : 0;
    fds_.resize(static_cast<size_t>(bytes) / sizeof(proc_fdinfo) + 16);
    bytes = ::proc_pidinfo(pid, PROC_PIDLISTFDS, 0, fds_.data(), static_cast<int>(fds_.size() * sizeof(proc_fdinfo)));
    if (bytes <= 0) return errno == EPERM ? -1 : 0;
    size_t n = static_cast<size_t>(bytes) / sizeof(proc_fdinfo);
    for (size_t i = 0; i < n; ++i) {
      if (fds_[i].proc_fdtype != PROX_FDTYPE_SOCKET) continue;
      socket_fdinfo si{};
      if (::proc_pidfdinfo(pid, fds_[i].proc_fd, PROC_PIDFDSOCKETINFO, &si, sizeof si) != static_cast<int>(sizeof si)) {
        continue;  // closed since the listing
      }
      if (si.psi.soi_kind != SOCKINFO_TCP || si.psi.soi_proto.pri_tcp.tcpsi_state != TSI_S_LISTEN) continue;
      if (darwin::port_from_insi_lport(si.psi.soi_proto.pri_tcp.tcpsi_ini.insi_lport) == port) return 1;
    }
    return 0;
  }

  mach_port_t host_;
  darwin::Timebase timebase_;
  Sysctl swapusage_, pressure_, memstatus_level_, memsize_, model_, product_version_, os_build_;
  std::unique_ptr<ThermalSource> thermal_;
  std::vector<int> pids_;
  std::vector<proc_fdinfo> fds_;
  std::vector<char> procargs_;
};

}  // namespace

std::unique_ptr<Sampler> make_system_sampler(RuntimeSignatures runtimes) {
  return std::make_unique<MachSampler>(runtimes);
}

}  // namespace soak
