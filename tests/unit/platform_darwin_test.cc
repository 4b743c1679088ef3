// The macOS sampler's conversions and decisions, run here on literal raw
// figures shaped like what the Mach, sysctl and libproc calls return.
#include <arpa/inet.h>

#include <cstring>
#include <string>

#include "platform/darwin_figures.h"
#include "tests/catch.h"

using namespace soak;
using namespace soak::darwin;

namespace {

constexpr uint64_t kAppleSiliconPage = 16384;

// argc, exec path, NUL padding, argv, environment: the KERN_PROCARGS2 layout.
std::string procargs(int32_t argc, const std::string& path, int padding, const std::vector<std::string>& args,
                     const std::vector<std::string>& env) {
  std::string b(sizeof argc, '\0');
  std::memcpy(b.data(), &argc, sizeof argc);
  b += path;
  b.append(static_cast<size_t>(padding), '\0');
  for (const auto& a : args) {
    b += a;
    b.push_back('\0');
  }
  for (const auto& e : env) {
    b += e;
    b.push_back('\0');
  }
  return b;
}

}  // namespace

TEST_CASE("vm statistics: pages times the kernel page size") {
  VmRaw vm;
  vm.page_size = kAppleSiliconPage;
  vm.free_count = 8489;
  vm.active_count = 1'000'000;
  vm.inactive_count = 900'000;
  vm.wire_count = 300'000;
  vm.compressor_page_count = 50'000;
  vm.pageins = 123;
  vm.pageouts = 4;
  vm.swapins = 5;
  vm.swapouts = 6;
  HostSample s;
  apply_vm(vm, s);
  CHECK(s.error.empty());
  CHECK(s.free_bytes == 8489 * 16384LL);
  CHECK(s.active_bytes == 1'000'000 * 16384LL);
  CHECK(s.inactive_bytes == 900'000 * 16384LL);
  CHECK(s.wired_bytes == 300'000 * 16384LL);
  CHECK(s.compressed_bytes == 50'000 * 16384LL);
  CHECK(s.pageins == 123);  // counters stay counts
  CHECK(s.swapouts == 6);
  // A 512 GiB Mac Studio's pages fit comfortably.
  vm.free_count = 512ULL * 1024 * 1024 * 1024 / kAppleSiliconPage;
  HostSample big;
  apply_vm(vm, big);
  CHECK(big.free_bytes == 512LL * 1024 * 1024 * 1024);
}

TEST_CASE("vm statistics: unknown page size or out-of-range counters are errors, not zeros") {
  HostSample s;
  apply_vm(VmRaw{}, s);
  CHECK_FALSE(s.free_bytes.has_value());
  CHECK(s.error == "vm: page size unknown");

  VmRaw vm;
  vm.page_size = kAppleSiliconPage;
  vm.swapouts = UINT64_MAX;
  vm.free_count = UINT64_MAX / 2;  // times the page size overflows
  HostSample t;
  apply_vm(vm, t);
  CHECK_FALSE(t.swapouts.has_value());
  CHECK_FALSE(t.free_bytes.has_value());
  CHECK(t.error.find("swapouts out of range") != std::string::npos);
  CHECK(t.error.find("free out of range") != std::string::npos);
}

TEST_CASE("swap usage from xsw_usage") {
  HostSample s;
  apply_swap(SwapRaw{2ULL << 30, 1ULL << 30, 1ULL << 30}, s);
  CHECK(s.swap_total_bytes == (2LL << 30));
  CHECK(s.swap_used_bytes == (1LL << 30));
  CHECK(s.error.empty());
  HostSample zero;
  apply_swap(SwapRaw{0, 0, 0}, zero);  // no swap file yet: a real zero
  CHECK(zero.swap_used_bytes == 0);
  HostSample bad;
  apply_swap(SwapRaw{10, 0, 20}, bad);
  CHECK(bad.error.find("used exceeds total") != std::string::npos);
}

TEST_CASE("pressure level: the sysctl's 1/2/4, nothing else") {
  for (int level : {1, 2, 4}) {
    HostSample s;
    apply_pressure_level(level, s);
    CHECK(s.pressure_level == level);
    CHECK(s.error.empty());
  }
  // The kernel's internal enum (0..3) is not what the sysctl returns: reject it.
  for (int level : {0, 3, 5, -1}) {
    HostSample s;
    apply_pressure_level(level, s);
    CHECK_FALSE(s.pressure_level.has_value());
    CHECK(s.error.find("unexpected value") != std::string::npos);
  }
}

TEST_CASE("memorystatus level and memsize") {
  HostSample s;
  apply_memorystatus_level(42, s);
  CHECK(s.memorystatus_level == 42);
  apply_memorystatus_level(101, s);
  CHECK_FALSE(s.memorystatus_level.has_value());
  HostSample m;
  apply_memsize(549755813888ULL, m);
  CHECK(m.total_bytes == 549755813888LL);
  apply_memsize(0, m);
  CHECK_FALSE(m.total_bytes.has_value());
  CHECK(m.error.find("hw.memsize") != std::string::npos);
}

TEST_CASE("mach absolute time to milliseconds") {
  // Apple Silicon: 24 MHz ticks, timebase 125/3.
  Timebase as{125, 3};
  CHECK(abstime_to_ms(24'000'000, as) == 1000);
  // A week of uptime: abstime * 125 overflows 64 bits, the result must not.
  uint64_t week = 7ULL * 24 * 3600 * 24'000'000;
  CHECK(abstime_to_ms(week * 1000, as) == 7LL * 24 * 3600 * 1000 * 1000);
  CHECK(abstime_to_ms(5'000'000, Timebase{1, 1}) == 5);  // Intel: ns
  CHECK_FALSE(abstime_to_ms(1, Timebase{0, 0}).has_value());
}

TEST_CASE("rusage: footprint, resident and start time; no swap or pss on macOS") {
  ProcessSample s;
  apply_rusage(RusageRaw{3ULL << 30, 2ULL << 30, 24'000'000ULL * 60}, Timebase{125, 3}, s);
  CHECK(s.footprint_bytes == (3LL << 30));
  CHECK(s.resident_bytes == (2LL << 30));
  CHECK(s.start_time == 60'000);
  CHECK_FALSE(s.swap_bytes.has_value());
  CHECK_FALSE(s.pss_bytes.has_value());
  CHECK(s.error.empty());
  ProcessSample bad;
  apply_rusage(RusageRaw{1, 1, 1}, Timebase{}, bad);
  CHECK_FALSE(bad.start_time.has_value());
  CHECK(bad.error.find("start time") != std::string::npos);
}

TEST_CASE("KERN_PROCARGS2: argv of a Python engine, environment dropped") {
  std::string buf = procargs(5, "/opt/homebrew/bin/python3.12", 7,
                             {"/opt/homebrew/bin/python3.12", "-m", "mlx_lm.server", "--model", "mlx-community/Qwen3"},
                             {"HF_TOKEN=secret", "HOME=/Users/me"});
  auto r = parse_procargs2(buf);
  REQUIRE(r);
  CHECK(r->exec_path == "/opt/homebrew/bin/python3.12");
  REQUIRE(r->argv.size() == 5);
  CHECK(r->argv[1] == "-m");
  CHECK(r->argv[2] == "mlx_lm.server");
  CHECK(r->argv[4] == "mlx-community/Qwen3");
  for (const auto& a : r->argv) CHECK(a.find("HF_TOKEN") == std::string::npos);
}

TEST_CASE("KERN_PROCARGS2: malformed buffers are errors") {
  CHECK_FALSE(parse_procargs2("ab").ok());                                      // shorter than argc
  CHECK_FALSE(parse_procargs2(procargs(-1, "/bin/x", 1, {}, {})).ok());         // negative argc
  CHECK_FALSE(parse_procargs2(procargs(3, "/bin/x", 1, {"a", "b"}, {})).ok());  // fewer args than argc
  std::string unterminated(4, '\0');
  int32_t one = 1;
  std::memcpy(unterminated.data(), &one, 4);
  unterminated += "/bin/x";
  CHECK_FALSE(parse_procargs2(unterminated).ok());
  auto zero = parse_procargs2(procargs(0, "/bin/x", 3, {}, {"A=1"}));
  REQUIRE(zero);
  CHECK(zero->argv.empty());
}

TEST_CASE("fixed C strings, version text, socket ports") {
  char comm[16];
  std::memset(comm, 'x', sizeof comm);  // no NUL at all
  CHECK(bounded_string(comm, sizeof comm) == std::string(16, 'x'));
  char name[8] = "Python";
  CHECK(bounded_string(name, sizeof name) == "Python");
  CHECK(macos_version("15.3.1", "24D70") == "macOS 15.3.1 (24D70)");
  CHECK(macos_version("15.3.1", "") == "macOS 15.3.1");
  CHECK(macos_version("", "24D70").empty());
  CHECK(port_from_insi_lport(static_cast<int>(htons(8080))) == 8080);
  CHECK(port_from_insi_lport(static_cast<int>(htons(443))) == 443);
}
