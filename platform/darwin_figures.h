// Conversions and decisions for the macOS sampler, kept apart from the Mach
// calls so they are compiled and tested on every platform. sampler_mach.cc
// only gathers raw numbers into these plain structs (page counts, sysctl
// values, rusage fields, the KERN_PROCARGS2 buffer) and hands them here.
//
// Pure functions; failure is recorded in the sample's `error` text, never a
// fake zero.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "core/types.h"

namespace soak::darwin {

// kern.memorystatus_vm_pressure_level returns the dispatch flags, not the
// kernel's internal enum: NOTE_MEMORYSTATUS_PRESSURE_{NORMAL,WARN,CRITICAL}.
inline constexpr int kPressureNormal = 1;
inline constexpr int kPressureWarn = 2;
inline constexpr int kPressureCritical = 4;

// Fields of vm_statistics64 (<mach/vm_statistics.h>), counts of pages, and
// the kernel page size from host_page_size() (16 KiB on Apple Silicon; never
// assume the 4 KiB of a user-space page).
struct VmRaw {
  uint64_t page_size = 0;
  uint64_t free_count = 0, active_count = 0, inactive_count = 0, wire_count = 0;
  uint64_t compressor_page_count = 0, speculative_count = 0;
  uint64_t pageins = 0, pageouts = 0, swapins = 0, swapouts = 0;  // cumulative
};
// free/active/inactive/wired/compressed in bytes; pageins/pageouts/swapins/swapouts as counts.
void apply_vm(const VmRaw& vm, HostSample& s);

// struct xsw_usage (<sys/sysctl.h>) from sysctl vm.swapusage, bytes.
struct SwapRaw {
  uint64_t total = 0, avail = 0, used = 0;
};
void apply_swap(const SwapRaw& sw, HostSample& s);

// 1/2/4 -> the level; anything else is recorded as an error and left unknown.
void apply_pressure_level(int64_t raw, HostSample& s);
// kern.memorystatus_level: percent of memory the kernel considers free (0..100).
void apply_memorystatus_level(int64_t raw, HostSample& s);
void apply_memsize(uint64_t raw, HostSample& s);

// mach_timebase_info (<mach/mach_time.h>): abstime * numer / denom = ns.
struct Timebase {
  uint32_t numer = 0, denom = 0;
};
std::optional<int64_t> abstime_to_ms(uint64_t abstime, Timebase tb);

// Fields of struct rusage_info_v4 (<sys/resource.h>) from proc_pid_rusage.
struct RusageRaw {
  uint64_t phys_footprint = 0;  // what Activity Monitor calls Memory: dirty + compressed + swapped
  uint64_t resident_size = 0;
  uint64_t proc_start_abstime = 0;
};
// footprint/resident in bytes; start_time = ms of mach_absolute_time at
// process start (stable for the process's life; compared only for equality).
// macOS has no per-process swap or PSS figure: those stay unknown.
void apply_rusage(const RusageRaw& ru, Timebase tb, ProcessSample& s);

// The KERN_PROCARGS2 buffer: int argc (native endian), the executable path,
// NUL padding, then argc NUL-terminated arguments, then the environment
// (which is never returned: it may hold secrets).
struct ProcArgs {
  std::string exec_path;
  std::vector<std::string> argv;
};
Result<ProcArgs> parse_procargs2(std::string_view buf);

// A fixed-size C char array that may lack its NUL (pbi_comm, sysctl strings).
std::string bounded_string(const char* p, size_t max);

// "macOS 15.3.1 (24D70)" from kern.osproductversion and kern.osversion.
std::string macos_version(std::string_view product_version, std::string_view build);

// insi_lport of struct in_sockinfo (<sys/proc_info.h>) holds the port in
// network byte order inside an int.
uint16_t port_from_insi_lport(int lport_network_order);

}  // namespace soak::darwin
