#include "platform/darwin_figures.h"

#include <cstring>
#include <limits>

#include "platform/procfs.h"

namespace soak::darwin {
namespace {

using procfs::append_error;

std::optional<int64_t> as_int64(uint64_t v) {
  if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
  return static_cast<int64_t>(v);
}

std::optional<int64_t> pages_to_bytes(uint64_t pages, uint64_t page_size) {
  auto p = as_int64(pages);
  auto ps = as_int64(page_size);
  if (!p || !ps) return std::nullopt;
  return procfs::checked_mul(*p, *ps);
}

void set_bytes(std::optional<int64_t>& out, uint64_t pages, uint64_t page_size, std::string_view what,
               std::string& error) {
  out = pages_to_bytes(pages, page_size);
  if (!out) append_error(error, std::string("vm: ") + std::string(what) + " out of range");
}

void set_count(std::optional<int64_t>& out, uint64_t v, std::string_view what, std::string& error) {
  out = as_int64(v);
  if (!out) append_error(error, std::string("vm: ") + std::string(what) + " out of range");
}

}  // namespace

void apply_vm(const VmRaw& vm, HostSample& s) {
  if (vm.page_size == 0) {
    append_error(s.error, "vm: page size unknown");
    return;
  }
  std::string err;
  set_bytes(s.free_bytes, vm.free_count, vm.page_size, "free", err);
  set_bytes(s.active_bytes, vm.active_count, vm.page_size, "active", err);
  set_bytes(s.inactive_bytes, vm.inactive_count, vm.page_size, "inactive", err);
  set_bytes(s.wired_bytes, vm.wire_count, vm.page_size, "wired", err);
  set_bytes(s.compressed_bytes, vm.compressor_page_count, vm.page_size, "compressed", err);
  set_count(s.pageins, vm.pageins, "pageins", err);
  set_count(s.pageouts, vm.pageouts, "pageouts", err);
  set_count(s.swapins, vm.swapins, "swapins", err);
  set_count(s.swapouts, vm.swapouts, "swapouts", err);
  append_error(s.error, err);
}

void apply_swap(const SwapRaw& sw, HostSample& s) {
  s.swap_total_bytes = as_int64(sw.total);
  s.swap_used_bytes = as_int64(sw.used);
  if (!s.swap_total_bytes || !s.swap_used_bytes)
    append_error(s.error, "vm.swapusage: out of range");
  else if (*s.swap_used_bytes > *s.swap_total_bytes)
    append_error(s.error, "vm.swapusage: used exceeds total");
}

void apply_pressure_level(int64_t raw, HostSample& s) {
  if (raw == kPressureNormal || raw == kPressureWarn || raw == kPressureCritical) {
    s.pressure_level = static_cast<int>(raw);
  } else {
    s.pressure_level.reset();
    append_error(s.error, "kern.memorystatus_vm_pressure_level: unexpected value " + std::to_string(raw));
  }
}

void apply_memorystatus_level(int64_t raw, HostSample& s) {
  if (raw >= 0 && raw <= 100) {
    s.memorystatus_level = static_cast<int>(raw);
  } else {
    s.memorystatus_level.reset();
    append_error(s.error, "kern.memorystatus_level: unexpected value " + std::to_string(raw));
  }
}

void apply_memsize(uint64_t raw, HostSample& s) {
  s.total_bytes = raw == 0 ? std::nullopt : as_int64(raw);
  if (!s.total_bytes) append_error(s.error, "hw.memsize: unexpected value");
}

std::optional<int64_t> abstime_to_ms(uint64_t abstime, Timebase tb) {
  if (tb.numer == 0 || tb.denom == 0) return std::nullopt;
  // 128-bit intermediate: abstime * numer overflows 64 bits after ~2 days of
  // uptime with Apple Silicon's 125/3 timebase.
  unsigned __int128 ns = static_cast<unsigned __int128>(abstime) * tb.numer / tb.denom;
  unsigned __int128 ms = ns / 1'000'000;
  if (ms > static_cast<unsigned __int128>(std::numeric_limits<int64_t>::max())) return std::nullopt;
  return static_cast<int64_t>(ms);
}

void apply_rusage(const RusageRaw& ru, Timebase tb, ProcessSample& s) {
  s.footprint_bytes = as_int64(ru.phys_footprint);
  s.resident_bytes = as_int64(ru.resident_size);
  if (!s.footprint_bytes || !s.resident_bytes) append_error(s.error, "rusage: out of range");
  s.start_time = abstime_to_ms(ru.proc_start_abstime, tb);
  if (!s.start_time) append_error(s.error, "rusage: start time unreadable");
}

Result<ProcArgs> parse_procargs2(std::string_view buf) {
  int32_t argc = 0;
  if (buf.size() < sizeof argc) return make_error("procargs: buffer too short");
  std::memcpy(&argc, buf.data(), sizeof argc);
  // ARG_MAX bounds what exec accepts; a larger count means a corrupt buffer.
  constexpr int32_t kMaxArgc = 1 << 20;
  if (argc < 0 || argc > kMaxArgc) return make_error("procargs: bad argc");
  buf.remove_prefix(sizeof argc);

  ProcArgs out;
  size_t nul = buf.find('\0');
  if (nul == std::string_view::npos) return make_error("procargs: unterminated path");
  out.exec_path = std::string(buf.substr(0, nul));
  buf.remove_prefix(nul);
  while (!buf.empty() && buf.front() == '\0') buf.remove_prefix(1);

  out.argv.reserve(static_cast<size_t>(argc));
  for (int32_t i = 0; i < argc; ++i) {
    if (buf.empty()) return make_error("procargs: fewer arguments than argc");
    nul = buf.find('\0');
    if (nul == std::string_view::npos) return make_error("procargs: unterminated argument");
    out.argv.emplace_back(buf.substr(0, nul));
    buf.remove_prefix(nul + 1);
  }
  return out;
}

std::string bounded_string(const char* p, size_t max) {
  if (!p) return {};
  const void* end = std::memchr(p, '\0', max);
  size_t n = end ? static_cast<size_t>(static_cast<const char*>(end) - p) : max;
  return std::string(p, n);
}

std::string macos_version(std::string_view product_version, std::string_view build) {
  product_version = procfs::trim(product_version);
  build = procfs::trim(build);
  if (product_version.empty()) return {};
  std::string out = "macOS ";
  out += product_version;
  if (!build.empty()) {
    out += " (";
    out += build;
    out += ")";
  }
  return out;
}

uint16_t port_from_insi_lport(int lport_network_order) {
  auto v = static_cast<uint16_t>(lport_network_order & 0xFFFF);
  // Network order is big-endian; the value was stored as raw bytes.
  uint8_t b[2];
  std::memcpy(b, &v, sizeof b);
  return static_cast<uint16_t>((b[0] << 8) | b[1]);
}

}  // namespace soak::darwin
