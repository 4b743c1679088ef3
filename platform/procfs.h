// Parsers for the Linux /proc text files the sampler reads. Pure functions of
// the file text: no I/O, no clock, no allocation beyond the values returned.
// Tested on real captures (tests/fixtures/proc/) and literal edge cases.
//
// Failure model: a figure that is absent or unreadable stays std::nullopt and
// a short reason is appended to the `error` text of the sample being filled
// (several reasons are joined with "; "). Nothing throws. Values that do not
// fit in int64_t (counters near 2^64, kB values whose byte count overflows)
// are treated as unreadable, never wrapped or clamped.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "core/types.h"

namespace soak::procfs {

// ---- shared helpers -------------------------------------------------------
// Appends "<what>" to `error`, separated by "; " from what is already there.
void append_error(std::string& error, std::string_view what);

// Decimal integer, optional leading '-'. nullopt on anything else or overflow.
std::optional<int64_t> parse_int(std::string_view s);
// Unsigned decimal that must fit in int64_t.
std::optional<int64_t> parse_count(std::string_view s);
// "12.34" style fixed-point (PSI averages). nullopt on anything else.
std::optional<double> parse_decimal(std::string_view s);
// a * b, nullopt on overflow or if either is negative.
std::optional<int64_t> checked_mul(int64_t a, int64_t b);

// ---- /proc/meminfo ----------------------------------------------------------
struct MemInfo {  // bytes
  std::optional<int64_t> mem_total, mem_free, mem_available, active, inactive, mlocked, swap_total, swap_free, zswap;
  std::string error;  // malformed values of known keys
};
MemInfo parse_meminfo(std::string_view text);
// Fills total/free/available/active/inactive/compressed (zswap pool) and swap
// figures of `s`; missing required keys are recorded in s.error.
void apply_meminfo(std::string_view text, HostSample& s);

// ---- /proc/vmstat -----------------------------------------------------------
struct VmStat {                            // cumulative counters since boot
  std::optional<int64_t> pgpgin, pgpgout;  // KiB paged in/out
  std::optional<int64_t> pswpin, pswpout;  // pages swapped in/out
  std::string error;
};
VmStat parse_vmstat(std::string_view text);
// pageins/pageouts <- pgpgin/pgpgout (KiB), swapins/swapouts <- pswpin/pswpout (pages).
void apply_vmstat(std::string_view text, HostSample& s);

// ---- /proc/pressure/memory (PSI) -------------------------------------------
struct PsiLine {
  std::optional<double> avg10, avg60, avg300;
  std::optional<int64_t> total_us;
};
struct Pressure {
  PsiLine some, full;
  std::string error;
};
Pressure parse_pressure(std::string_view text);
void apply_pressure(std::string_view text, HostSample& s);

// ---- /proc/<pid>/status -----------------------------------------------------
struct ProcStatus {
  std::string name;
  std::optional<int> ppid;
  std::optional<int64_t> vm_rss, rss_anon, rss_file, rss_shmem, vm_swap;  // bytes
  std::string error;
};
ProcStatus parse_status(std::string_view text);
// name, resident (VmRSS), swap (VmSwap) and footprint. Linux has no
// phys_footprint; the nearest figure is the process's private anonymous
// memory wherever it lives: RssAnon + VmSwap (resident or swapped out). That
// is what grows when a runtime leaks, and what swap hides from VmRSS.
void apply_status(std::string_view text, ProcessSample& s);

// ---- /proc/<pid>/smaps_rollup ------------------------------------------------
std::optional<int64_t> parse_smaps_rollup_pss(std::string_view text);  // bytes
void apply_smaps_rollup(std::string_view text, ProcessSample& s);

// ---- /proc/<pid>/stat ---------------------------------------------------------
struct ProcStat {
  int pid = 0;
  std::string comm;  // between the first '(' and the LAST ')': comm may hold both
  char state = '?';
  int ppid = 0;
  int64_t start_ticks = 0;  // field 22: clock ticks after boot
};
Result<ProcStat> parse_stat(std::string_view text);
// start_time = start in milliseconds after boot. Stable for the life of the
// process (unlike /proc/stat btime, which moves with the wall clock), so pid +
// start_time identifies one process instance.
void apply_stat(std::string_view text, int64_t clock_ticks_per_s, ProcessSample& s);

// ---- /proc/<pid>/cmdline -------------------------------------------------------
// NUL-separated arguments (a trailing NUL is not an extra empty argument).
std::vector<std::string> parse_cmdline(std::string_view bytes);

// ---- /proc/net/tcp, /proc/net/tcp6 ---------------------------------------------
inline constexpr int kTcpListenState = 0x0A;
// Appends the inodes of sockets in LISTEN state on local `port` (any address).
// Returns false if the text is not a tcp table at all (no header).
bool parse_tcp_listeners(std::string_view text, uint16_t port, std::vector<uint64_t>& inodes);
// A socket in LISTEN state that a client on this machine reaches at a
// loopback address: bound to 127.0.0.1, ::1, the unspecified address 0.0.0.0
// or ::, or their IPv4-mapped forms (::ffff:127.0.0.1, ::ffff:0.0.0.0).
// Sockets bound to another address (a LAN address, 127.0.0.2) are left out:
// `soakd init` asks only what 127.0.0.1 or [::1] reaches.
struct LocalListener {
  uint16_t port = 0;
  uint64_t inode = 0;
  bool ipv6 = false;      // from /proc/net/tcp6
  bool loopback = false;  // bound to a loopback address (else the unspecified one)
  bool operator==(const LocalListener&) const = default;
};
// Every such LISTEN entry of a /proc/net/tcp or /proc/net/tcp6 table, in its
// order. The kernel prints each address as 32-bit words in host byte order
// (so 127.0.0.1 is "0100007F" on a little-endian host); `ipv6` says which
// table it is. Malformed lines and entries with inode 0 are skipped. nullopt
// when the text is not a tcp table (no header).
std::optional<std::vector<LocalListener>> parse_local_listeners(std::string_view text, bool ipv6);
// "socket:[12345]" (readlink of /proc/<pid>/fd/N) -> 12345.
std::optional<uint64_t> parse_socket_link(std::string_view link);

// ---- host identity --------------------------------------------------------------
// PRETTY_NAME from /etc/os-release (quotes removed), empty if absent.
std::string os_release_pretty_name(std::string_view text);
// "Debian GNU/Linux 12 (bookworm), Linux 6.18.44" from os-release and the kernel release.
std::string linux_os_version(std::string_view os_release, std::string_view kernel_release);
// First "model name" (x86) / "Model" or "Hardware" (ARM) value in /proc/cpuinfo.
std::string cpuinfo_model(std::string_view text);
// Trims whitespace and NULs (sysfs and device-tree strings end in '\n' or '\0').
std::string_view trim(std::string_view s);

}  // namespace soak::procfs
