#include "platform/procfs.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstring>
#include <limits>

namespace soak::procfs {
namespace {

constexpr int64_t kKiB = 1024;

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\0'; }

// Calls fn(line) for each line, without the newline.
template <class Fn>
void for_each_line(std::string_view text, Fn&& fn) {
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    fn(line);
    if (nl == std::string_view::npos) break;
    text.remove_prefix(nl + 1);
  }
}

// Splits at whitespace; calls fn(index, token) until fn returns false.
template <class Fn>
void for_each_token(std::string_view line, Fn&& fn) {
  size_t index = 0;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && is_space(line[i])) ++i;
    if (i >= line.size()) break;
    size_t start = i;
    while (i < line.size() && !is_space(line[i])) ++i;
    if (!fn(index++, line.substr(start, i - start))) return;
  }
}

// "Key:   123 kB" -> bytes. The kernel prints these values in KiB whether or
// not the " kB" suffix is there (HugePages_* lines are counts, not asked for).
std::optional<int64_t> parse_kb_value(std::string_view value) {
  value = trim(value);
  if (value.size() >= 2 && value.substr(value.size() - 2) == "kB") {
    value = trim(value.substr(0, value.size() - 2));
  }
  auto n = parse_count(value);
  if (!n) return std::nullopt;
  return checked_mul(*n, kKiB);
}

struct KeyTarget {
  std::string_view key;
  std::optional<int64_t>* out;
};

// Lines "<key><sep><value>"; fills the listed keys with parse(value) and
// notes values that do not parse.
template <size_t N, class Parse>
void parse_table(std::string_view file, std::string_view text, char sep, const KeyTarget (&targets)[N], Parse parse,
                 std::string& error) {
  for_each_line(text, [&](std::string_view line) {
    // std::find, not line.find: GCC 12 -O2 warns (-Wstringop-overread) on the
    // inlined memchr of string_view::find here, a bound it cannot prove.
    const auto sep_at = std::find(line.begin(), line.end(), sep);
    if (sep_at == line.end()) return;
    const auto at = static_cast<size_t>(sep_at - line.begin());
    std::string_view key = line.substr(0, at);
    for (const auto& t : targets) {
      if (t.key != key) continue;
      *t.out = parse(line.substr(at + 1));
      if (!*t.out) append_error(error, std::string(file) + ": unreadable " + std::string(key));
    }
  });
}

// "Key: value kB" files (meminfo, status, smaps_rollup).
template <size_t N>
void parse_kb_table(std::string_view file, std::string_view text, const KeyTarget (&targets)[N], std::string& error) {
  parse_table(file, text, ':', targets, parse_kb_value, error);
}

void require(std::string& error, std::string_view file, std::string_view key, const std::optional<int64_t>& v,
             std::string_view already) {
  // A key already reported as unreadable is not reported again as missing.
  if (v || already.find(key) != std::string_view::npos) return;
  append_error(error, std::string(file) + ": no " + std::string(key));
}

std::optional<int64_t> subtract(const std::optional<int64_t>& a, const std::optional<int64_t>& b) {
  if (!a || !b || *b > *a) return std::nullopt;
  return *a - *b;
}

}  // namespace

// ---------------------------------------------------------------- helpers
void append_error(std::string& error, std::string_view what) {
  if (what.empty()) return;
  if (!error.empty()) error += "; ";
  error += what;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

std::optional<int64_t> parse_int(std::string_view s) {
  if (s.empty()) return std::nullopt;
  int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

std::optional<int64_t> parse_count(std::string_view s) {
  if (s.empty() || s.front() == '-' || s.front() == '+') return std::nullopt;
  uint64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
  return static_cast<int64_t>(v);
}

std::optional<double> parse_decimal(std::string_view s) {
  // Fixed-point by hand: std::from_chars for double is not in every libc++ we build with.
  size_t dot = s.find('.');
  std::string_view whole = s.substr(0, dot);
  std::string_view frac = dot == std::string_view::npos ? std::string_view{} : s.substr(dot + 1);
  if (whole.empty() || frac.size() > 9) return std::nullopt;
  if (dot != std::string_view::npos && frac.empty()) return std::nullopt;
  auto w = parse_count(whole);
  if (!w) return std::nullopt;
  double v = static_cast<double>(*w);
  if (!frac.empty()) {
    auto f = parse_count(frac);
    if (!f) return std::nullopt;
    double scale = 1;
    for (size_t i = 0; i < frac.size(); ++i) scale *= 10;
    v += static_cast<double>(*f) / scale;
  }
  return v;
}

std::optional<int64_t> checked_mul(int64_t a, int64_t b) {
  if (a < 0 || b < 0) return std::nullopt;
  int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

// ---------------------------------------------------------------- meminfo
MemInfo parse_meminfo(std::string_view text) {
  MemInfo m;
  const KeyTarget targets[] = {
      {"MemTotal", &m.mem_total},   {"MemFree", &m.mem_free},   {"MemAvailable", &m.mem_available},
      {"Active", &m.active},        {"Inactive", &m.inactive},  {"Mlocked", &m.mlocked},
      {"SwapTotal", &m.swap_total}, {"SwapFree", &m.swap_free}, {"Zswap", &m.zswap},
  };
  parse_kb_table("meminfo", text, targets, m.error);
  return m;
}

void apply_meminfo(std::string_view text, HostSample& s) {
  MemInfo m = parse_meminfo(text);
  std::string err = m.error;
  for (auto [key, v] : {std::pair<std::string_view, const std::optional<int64_t>*>{"MemTotal", &m.mem_total},
                        {"MemFree", &m.mem_free},
                        {"MemAvailable", &m.mem_available},
                        {"SwapTotal", &m.swap_total},
                        {"SwapFree", &m.swap_free}}) {
    require(err, "meminfo", key, *v, m.error);
  }
  s.total_bytes = m.mem_total;
  s.free_bytes = m.mem_free;
  s.available_bytes = m.mem_available;
  s.active_bytes = m.active;
  s.inactive_bytes = m.inactive;
  s.compressed_bytes = m.zswap;  // absent before Linux 5.19 or without zswap: stays unknown
  s.swap_total_bytes = m.swap_total;
  s.swap_used_bytes = subtract(m.swap_total, m.swap_free);
  if (m.swap_total && m.swap_free && *m.swap_free > *m.swap_total) {
    append_error(err, "meminfo: SwapFree exceeds SwapTotal");
  }
  append_error(s.error, err);
}

// ---------------------------------------------------------------- vmstat
VmStat parse_vmstat(std::string_view text) {
  VmStat v;
  const KeyTarget targets[] = {
      {"pgpgin", &v.pgpgin}, {"pgpgout", &v.pgpgout}, {"pswpin", &v.pswpin}, {"pswpout", &v.pswpout}};
  parse_table(
      "vmstat", text, ' ', targets, [](std::string_view value) { return parse_count(trim(value)); }, v.error);
  return v;
}

void apply_vmstat(std::string_view text, HostSample& s) {
  VmStat v = parse_vmstat(text);
  std::string err = v.error;
  require(err, "vmstat", "pswpin", v.pswpin, v.error);
  require(err, "vmstat", "pswpout", v.pswpout, v.error);
  require(err, "vmstat", "pgpgin", v.pgpgin, v.error);
  require(err, "vmstat", "pgpgout", v.pgpgout, v.error);
  s.pageins = v.pgpgin;
  s.pageouts = v.pgpgout;
  s.swapins = v.pswpin;
  s.swapouts = v.pswpout;
  append_error(s.error, err);
}

// ---------------------------------------------------------------- PSI
Pressure parse_pressure(std::string_view text) {
  Pressure p;
  bool any = false;
  for_each_line(text, [&](std::string_view line) {
    line = trim(line);
    if (line.empty()) return;
    PsiLine* target = nullptr;
    std::string_view which;
    for_each_token(line, [&](size_t i, std::string_view tok) {
      if (i == 0) {
        if (tok == "some")
          target = &p.some;
        else if (tok == "full")
          target = &p.full;
        which = tok;
        return target != nullptr;
      }
      size_t eq = tok.find('=');
      std::string_view k = tok.substr(0, eq);
      std::string_view val = eq == std::string_view::npos ? std::string_view{} : tok.substr(eq + 1);
      if (k == "avg10")
        target->avg10 = parse_decimal(val);
      else if (k == "avg60")
        target->avg60 = parse_decimal(val);
      else if (k == "avg300")
        target->avg300 = parse_decimal(val);
      else if (k == "total")
        target->total_us = parse_count(val);
      return true;
    });
    if (!target) {
      append_error(p.error, "pressure: unexpected line");
      return;
    }
    any = true;
    if (!target->avg10 || !target->total_us) {
      append_error(p.error, "pressure: unreadable " + std::string(which) + " line");
    }
  });
  if (!any && p.error.empty()) append_error(p.error, "pressure: empty");
  return p;
}

void apply_pressure(std::string_view text, HostSample& s) {
  Pressure p = parse_pressure(text);
  s.psi_some_avg10 = p.some.avg10;
  s.psi_full_avg10 = p.full.avg10;
  s.psi_some_total_us = p.some.total_us;
  s.psi_full_total_us = p.full.total_us;
  append_error(s.error, p.error);
}

// ---------------------------------------------------------------- status
ProcStatus parse_status(std::string_view text) {
  ProcStatus st;
  const KeyTarget targets[] = {
      {"VmRSS", &st.vm_rss},       {"RssAnon", &st.rss_anon}, {"RssFile", &st.rss_file},
      {"RssShmem", &st.rss_shmem}, {"VmSwap", &st.vm_swap},
  };
  parse_kb_table("status", text, targets, st.error);
  for_each_line(text, [&](std::string_view line) {
    if (line.substr(0, 5) == "Name:") {
      st.name = std::string(trim(line.substr(5)));
    } else if (line.substr(0, 5) == "PPid:") {
      auto v = parse_int(trim(line.substr(5)));
      if (v && *v >= 0 && *v <= std::numeric_limits<int>::max()) st.ppid = static_cast<int>(*v);
    }
  });
  return st;
}

void apply_status(std::string_view text, ProcessSample& s) {
  ProcStatus st = parse_status(text);
  std::string err = st.error;
  if (st.name.empty()) append_error(err, "status: no Name");
  // Kernel threads and zombies have no memory lines at all: that is "unknown", and said so.
  require(err, "status", "VmRSS", st.vm_rss, st.error);
  require(err, "status", "RssAnon", st.rss_anon, st.error);
  require(err, "status", "VmSwap", st.vm_swap, st.error);
  if (!st.name.empty()) s.name = st.name;
  s.resident_bytes = st.vm_rss;
  s.swap_bytes = st.vm_swap;
  if (st.rss_anon && st.vm_swap) {
    int64_t sum = 0;
    if (!__builtin_add_overflow(*st.rss_anon, *st.vm_swap, &sum)) s.footprint_bytes = sum;
  }
  append_error(s.error, err);
}

// ---------------------------------------------------------------- smaps_rollup
std::optional<int64_t> parse_smaps_rollup_pss(std::string_view text) {
  std::optional<int64_t> pss;
  std::string ignored;
  const KeyTarget targets[] = {{"Pss", &pss}};
  parse_kb_table("smaps_rollup", text, targets, ignored);
  return pss;
}

void apply_smaps_rollup(std::string_view text, ProcessSample& s) {
  s.pss_bytes = parse_smaps_rollup_pss(text);
  if (!s.pss_bytes) append_error(s.error, "smaps_rollup: no Pss");
}

// ---------------------------------------------------------------- stat
Result<ProcStat> parse_stat(std::string_view text) {
  ProcStat st;
  size_t open = text.find('(');
  size_t close = text.rfind(')');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open) {
    return make_error("stat: no (comm)");
  }
  auto pid = parse_int(trim(text.substr(0, open)));
  if (!pid || *pid <= 0 || *pid > std::numeric_limits<int>::max()) return make_error("stat: bad pid");
  st.pid = static_cast<int>(*pid);
  st.comm = std::string(text.substr(open + 1, close - open - 1));
  // Fields after ")" start at field 3 (state); starttime is field 22.
  constexpr size_t kStateIndex = 0, kPpidIndex = 1, kStartIndex = 19;
  bool have_state = false, have_ppid = false, have_start = false;
  std::string err;
  for_each_token(text.substr(close + 1), [&](size_t i, std::string_view tok) {
    if (i == kStateIndex) {
      have_state = tok.size() == 1;
      if (have_state) st.state = tok[0];
    } else if (i == kPpidIndex) {
      auto v = parse_int(tok);
      have_ppid = v && *v >= 0 && *v <= std::numeric_limits<int>::max();
      if (have_ppid) st.ppid = static_cast<int>(*v);
    } else if (i == kStartIndex) {
      auto v = parse_count(tok);
      have_start = v.has_value();
      if (have_start) st.start_ticks = *v;
      return false;
    }
    return true;
  });
  if (!have_state || !have_ppid) return make_error("stat: bad state/ppid");
  if (!have_start) return make_error("stat: no starttime");
  return st;
}

void apply_stat(std::string_view text, int64_t clock_ticks_per_s, ProcessSample& s) {
  auto st = parse_stat(text);
  if (!st) {
    append_error(s.error, st.message());
    return;
  }
  if (clock_ticks_per_s <= 0) {
    append_error(s.error, "stat: unknown clock tick rate");
    return;
  }
  auto ms = checked_mul(st->start_ticks, 1000);
  if (!ms) {
    append_error(s.error, "stat: starttime out of range");
    return;
  }
  s.start_time = *ms / clock_ticks_per_s;
  if (s.name.empty()) s.name = st->comm;
}

// ---------------------------------------------------------------- cmdline
std::vector<std::string> parse_cmdline(std::string_view bytes) {
  std::vector<std::string> argv;
  if (!bytes.empty() && bytes.back() == '\0') bytes.remove_suffix(1);
  if (bytes.empty()) return argv;
  while (true) {
    size_t nul = bytes.find('\0');
    argv.emplace_back(bytes.substr(0, nul));
    if (nul == std::string_view::npos) break;
    bytes.remove_prefix(nul + 1);
  }
  return argv;
}

// ---------------------------------------------------------------- net/tcp
bool parse_tcp_listeners(std::string_view text, uint16_t port, std::vector<uint64_t>& inodes) {
  bool header = false;
  for_each_line(text, [&](std::string_view line) {
    if (!header) {
      header = line.find("local_address") != std::string_view::npos;
      return;
    }
    // sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
    constexpr size_t kLocal = 1, kState = 3, kInode = 9;
    std::optional<unsigned> lport;
    std::optional<unsigned> state;
    std::optional<uint64_t> inode;
    for_each_token(line, [&](size_t i, std::string_view tok) {
      if (i == kLocal) {
        size_t colon = tok.rfind(':');
        if (colon != std::string_view::npos) {
          unsigned v = 0;
          auto sv = tok.substr(colon + 1);
          auto [p, ec] = std::from_chars(sv.data(), sv.data() + sv.size(), v, 16);
          if (ec == std::errc() && p == sv.data() + sv.size() && v <= 0xFFFF) lport = v;
        }
      } else if (i == kState) {
        unsigned v = 0;
        auto [p, ec] = std::from_chars(tok.data(), tok.data() + tok.size(), v, 16);
        if (ec == std::errc() && p == tok.data() + tok.size()) state = v;
      } else if (i == kInode) {
        uint64_t v = 0;
        auto [p, ec] = std::from_chars(tok.data(), tok.data() + tok.size(), v);
        if (ec == std::errc() && p == tok.data() + tok.size()) inode = v;
        return false;
      }
      return true;
    });
    // inode 0 is a socket without an owner (e.g. orphaned): it names no process.
    if (lport && *lport == port && state && *state == kTcpListenState && inode && *inode != 0) {
      inodes.push_back(*inode);
    }
  });
  return header;
}

namespace {

// One address word of a tcp table: 8 hex digits, the 32-bit value as the
// kernel holds it, so its bytes in memory are the address's bytes in order.
std::optional<std::array<uint8_t, 4>> tcp_address_word(std::string_view hex) {
  uint32_t v = 0;
  if (hex.size() != 8) return std::nullopt;
  auto [p, ec] = std::from_chars(hex.data(), hex.data() + hex.size(), v, 16);
  if (ec != std::errc() || p != hex.data() + hex.size()) return std::nullopt;
  std::array<uint8_t, 4> b{};
  std::memcpy(b.data(), &v, sizeof v);
  return b;
}

// 0: not local; 1: unspecified; 2: loopback.
int tcp_address_scope(std::string_view hex, bool ipv6) {
  std::array<uint8_t, 16> a{};
  const size_t words = ipv6 ? 4 : 1;
  if (hex.size() != words * 8) return 0;
  for (size_t w = 0; w < words; ++w) {
    auto b = tcp_address_word(hex.substr(w * 8, 8));
    if (!b) return 0;
    std::memcpy(a.data() + w * 4, b->data(), 4);
  }
  auto v4_scope = [](const uint8_t* p) {
    if (p[0] == 0 && p[1] == 0 && p[2] == 0 && p[3] == 0) return 1;
    if (p[0] == 127 && p[1] == 0 && p[2] == 0 && p[3] == 1) return 2;
    return 0;
  };
  if (!ipv6) return v4_scope(a.data());
  bool zero10 = std::all_of(a.begin(), a.begin() + 10, [](uint8_t x) { return x == 0; });
  if (zero10 && a[10] == 0xFF && a[11] == 0xFF) return v4_scope(a.data() + 12);  // ::ffff:a.b.c.d
  bool zero15 = zero10 && a[10] == 0 && a[11] == 0 && a[12] == 0 && a[13] == 0 && a[14] == 0;
  if (zero15 && a[15] == 0) return 1;  // ::
  if (zero15 && a[15] == 1) return 2;  // ::1
  return 0;
}

}  // namespace

std::optional<std::vector<LocalListener>> parse_local_listeners(std::string_view text, bool ipv6) {
  bool header = false;
  std::vector<LocalListener> out;
  for_each_line(text, [&](std::string_view line) {
    if (!header) {
      header = line.find("local_address") != std::string_view::npos;
      return;
    }
    constexpr size_t kLocal = 1, kState = 3, kInode = 9;
    std::string_view local, state, inode;
    for_each_token(line, [&](size_t i, std::string_view tok) {
      if (i == kLocal) local = tok;
      if (i == kState) state = tok;
      if (i == kInode) inode = tok;
      return i < kInode;
    });
    const size_t colon = local.rfind(':');
    if (colon == std::string_view::npos || state != "0A") return;
    unsigned port = 0;
    std::string_view ps = local.substr(colon + 1);
    auto [pp, pe] = std::from_chars(ps.data(), ps.data() + ps.size(), port, 16);
    if (pe != std::errc() || pp != ps.data() + ps.size() || port == 0 || port > 0xFFFF) return;
    uint64_t ino = 0;
    auto [ip, ie] = std::from_chars(inode.data(), inode.data() + inode.size(), ino);
    if (ie != std::errc() || ip != inode.data() + inode.size() || ino == 0) return;
    const int scope = tcp_address_scope(local.substr(0, colon), ipv6);
    if (scope == 0) return;
    out.push_back(LocalListener{static_cast<uint16_t>(port), ino, ipv6, scope == 2});
  });
  if (!header) return std::nullopt;
  return out;
}

std::optional<uint64_t> parse_socket_link(std::string_view link) {
  constexpr std::string_view kPrefix = "socket:[";
  if (link.substr(0, kPrefix.size()) != kPrefix || link.empty() || link.back() != ']') return std::nullopt;
  std::string_view digits = link.substr(kPrefix.size(), link.size() - kPrefix.size() - 1);
  uint64_t v = 0;
  auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
  if (digits.empty() || ec != std::errc() || p != digits.data() + digits.size()) return std::nullopt;
  return v;
}

// ---------------------------------------------------------------- host identity
std::string os_release_pretty_name(std::string_view text) {
  std::string out;
  for_each_line(text, [&](std::string_view line) {
    constexpr std::string_view kKey = "PRETTY_NAME=";
    if (line.substr(0, kKey.size()) != kKey) return;
    std::string_view v = trim(line.substr(kKey.size()));
    if (v.size() >= 2 && (v.front() == '"' || v.front() == '\'') && v.back() == v.front()) {
      v = v.substr(1, v.size() - 2);
    }
    out = std::string(v);
  });
  return out;
}

std::string linux_os_version(std::string_view os_release, std::string_view kernel_release) {
  std::string pretty = os_release_pretty_name(os_release);
  std::string_view kernel = trim(kernel_release);
  std::string out = pretty;
  if (!kernel.empty()) {
    if (!out.empty()) out += ", ";
    out += "Linux ";
    out += kernel;
  }
  return out;
}

std::string cpuinfo_model(std::string_view text) {
  std::string out;
  for_each_line(text, [&](std::string_view line) {
    if (!out.empty()) return;
    size_t colon = line.find(':');
    if (colon == std::string_view::npos) return;
    std::string_view key = trim(line.substr(0, colon));
    if (key == "model name" || key == "Model" || key == "Hardware") out = std::string(trim(line.substr(colon + 1)));
  });
  return out;
}

}  // namespace soak::procfs
