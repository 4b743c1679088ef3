// The /proc parsers on real captures of the development machine
// (tests/fixtures/proc/README.md) and on literal edge cases.
#include <fstream>
#include <iterator>
#include <string>

#include "platform/procfs.h"
#include "tests/catch.h"

using namespace soak;
using namespace soak::procfs;

namespace {

constexpr int64_t KiB = 1024;

std::string fixture(const std::string& name) {
  std::ifstream f(std::string(SOAKD_FIXTURES_DIR) + "/proc/" + name, std::ios::binary);
  REQUIRE(f.good());
  return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

}  // namespace

TEST_CASE("meminfo capture: every figure in bytes, swap 0 is a real zero") {
  HostSample s;
  apply_meminfo(fixture("meminfo"), s);
  CHECK(s.error.empty());
  CHECK(s.total_bytes == 24683620 * KiB);
  CHECK(s.free_bytes == 23561732 * KiB);
  CHECK(s.available_bytes == 24277268 * KiB);
  CHECK(s.active_bytes == 202700 * KiB);    // "Active:", not "Active(anon):"
  CHECK(s.inactive_bytes == 742692 * KiB);  // "Inactive:", not "Inactive(file):"
  CHECK(s.compressed_bytes == 0);           // Zswap line present, pool empty
  // No swap configured: zero is what the kernel says, not a fallback.
  REQUIRE(s.swap_total_bytes.has_value());
  CHECK(*s.swap_total_bytes == 0);
  REQUIRE(s.swap_used_bytes.has_value());
  CHECK(*s.swap_used_bytes == 0);
}

TEST_CASE("meminfo: swap in use, and keys the kernel lacks") {
  HostSample s;
  apply_meminfo(
      "MemTotal: 1000 kB\nMemFree: 100 kB\nMemAvailable: 500 kB\n"
      "SwapTotal: 2000 kB\nSwapFree: 1500 kB\n",
      s);
  CHECK(s.error.empty());
  CHECK(s.swap_used_bytes == 500 * KiB);
  CHECK(s.swap_total_bytes == 2000 * KiB);
  CHECK_FALSE(s.active_bytes.has_value());      // optional keys: unknown, not zero
  CHECK_FALSE(s.compressed_bytes.has_value());  // no Zswap line before Linux 5.19
}

TEST_CASE("meminfo: a missing required key is unknown and recorded") {
  HostSample s;
  apply_meminfo("MemTotal: 1000 kB\nMemFree: 100 kB\nSwapTotal: 0 kB\nSwapFree: 0 kB\n", s);
  CHECK_FALSE(s.available_bytes.has_value());
  CHECK(s.error.find("no MemAvailable") != std::string::npos);
}

TEST_CASE("meminfo: values whose byte count overflows int64 are unreadable, never wrapped") {
  // 2^63 / 1024 = 9007199254740992 kB is exactly one too many.
  HostSample s;
  apply_meminfo(
      "MemTotal: 9007199254740991 kB\nMemFree: 9007199254740992 kB\nMemAvailable: 18446744073709551615 kB\n"
      "SwapTotal: 0 kB\nSwapFree: 0 kB\n",
      s);
  CHECK(s.total_bytes == 9007199254740991LL * KiB);
  CHECK_FALSE(s.free_bytes.has_value());
  CHECK_FALSE(s.available_bytes.has_value());
  CHECK(s.error.find("unreadable MemFree") != std::string::npos);
  CHECK(s.error.find("unreadable MemAvailable") != std::string::npos);
  CHECK(s.error.find("no MemFree") == std::string::npos);  // said once, not twice
}

TEST_CASE("meminfo: garbage text records errors and invents nothing") {
  HostSample s;
  apply_meminfo("\x01\x02 not a meminfo\nMemTotal: lots kB\n:::\n", s);
  CHECK_FALSE(s.total_bytes.has_value());
  CHECK_FALSE(s.swap_used_bytes.has_value());
  CHECK(s.error.find("unreadable MemTotal") != std::string::npos);
  CHECK(s.error.find("no SwapTotal") != std::string::npos);
}

TEST_CASE("meminfo: SwapFree above SwapTotal leaves swap used unknown") {
  HostSample s;
  apply_meminfo("MemTotal: 1 kB\nMemFree: 1 kB\nMemAvailable: 1 kB\nSwapTotal: 10 kB\nSwapFree: 20 kB\n", s);
  CHECK_FALSE(s.swap_used_bytes.has_value());
  CHECK(s.error.find("SwapFree exceeds SwapTotal") != std::string::npos);
}

TEST_CASE("vmstat capture: swap and paging counters") {
  HostSample s;
  apply_vmstat(fixture("vmstat"), s);
  CHECK(s.error.empty());
  CHECK(s.pageins == 1666285);
  CHECK(s.pageouts == 1156344);
  CHECK(s.swapins == 0);
  CHECK(s.swapouts == 0);
}

TEST_CASE("vmstat: counters near 2^63 and beyond") {
  VmStat v = parse_vmstat("pswpin 9223372036854775807\npswpout 9223372036854775808\npgpgin 12\npgpgout x\n");
  CHECK(v.pswpin == INT64_MAX);
  CHECK_FALSE(v.pswpout.has_value());  // a u64 counter past int64: unknown, not negative
  CHECK(v.pgpgin == 12);
  CHECK_FALSE(v.pgpgout.has_value());
  CHECK(v.error.find("unreadable pswpout") != std::string::npos);
  CHECK(v.error.find("unreadable pgpgout") != std::string::npos);
  // Prefix lookalikes are other counters.
  VmStat w = parse_vmstat("pswpin_extra 5\npswpin 7\n");
  CHECK(w.pswpin == 7);
}

TEST_CASE("vmstat: missing counters are recorded") {
  HostSample s;
  apply_vmstat("nr_free_pages 10\n", s);
  CHECK_FALSE(s.swapouts.has_value());
  CHECK(s.error.find("no pswpout") != std::string::npos);
}

TEST_CASE("pressure capture and literal PSI") {
  HostSample s;
  apply_pressure(fixture("pressure-memory"), s);
  CHECK(s.error.empty());
  CHECK(s.psi_some_avg10 == Approx(0.0));
  CHECK(s.psi_full_total_us == 0);

  Pressure p = parse_pressure(
      "some avg10=12.34 avg60=5.06 avg300=0.90 total=123456789\n"
      "full avg10=1.50 avg60=0.25 avg300=0.00 total=9876543\n");
  CHECK(p.error.empty());
  CHECK(p.some.avg10 == Approx(12.34));
  CHECK(p.some.avg60 == Approx(5.06));
  CHECK(p.some.avg300 == Approx(0.90));
  CHECK(p.some.total_us == 123456789);
  CHECK(p.full.avg10 == Approx(1.50));
  CHECK(p.full.avg60 == Approx(0.25));
  CHECK(p.full.total_us == 9876543);
}

TEST_CASE("pressure: older kernels without a full line; garbage") {
  Pressure p = parse_pressure("some avg10=0.10 avg60=0.20 avg300=0.30 total=5\n");
  CHECK(p.error.empty());
  CHECK(p.some.avg10 == Approx(0.10));
  CHECK_FALSE(p.full.avg10.has_value());

  Pressure bad = parse_pressure("some avg10=abc total=5\nweird line\n");
  CHECK_FALSE(bad.some.avg10.has_value());
  CHECK(bad.error.find("unreadable some") != std::string::npos);
  CHECK(bad.error.find("unexpected line") != std::string::npos);

  CHECK(parse_pressure("").error == "pressure: empty");
}

TEST_CASE("decimal and integer helpers") {
  CHECK(parse_decimal("0.00") == Approx(0.0));
  CHECK(parse_decimal("100.00") == Approx(100.0));
  CHECK(parse_decimal("7") == Approx(7.0));
  CHECK_FALSE(parse_decimal("").has_value());
  CHECK_FALSE(parse_decimal("1.").has_value());
  CHECK_FALSE(parse_decimal("-1.0").has_value());
  CHECK_FALSE(parse_decimal("1.2.3").has_value());
  CHECK(parse_count("9223372036854775807") == INT64_MAX);
  CHECK_FALSE(parse_count("9223372036854775808").has_value());
  CHECK_FALSE(parse_count("-1").has_value());
  CHECK(parse_int("-1") == -1);
  CHECK_FALSE(checked_mul(INT64_MAX / 2 + 1, 2).has_value());
}

TEST_CASE("status capture: footprint is private anonymous memory, resident or swapped") {
  ProcessSample s;
  apply_status(fixture("pid-status"), s);
  CHECK(s.error.empty());
  CHECK(s.name == "python3");
  CHECK(s.resident_bytes == 63220 * KiB);
  CHECK(s.swap_bytes == 0);
  CHECK(s.footprint_bytes == 56352 * KiB);  // RssAnon 56352 + VmSwap 0

  ProcStatus st = parse_status(fixture("pid-status"));
  CHECK(st.ppid == 1);
  CHECK(st.rss_file == 6868 * KiB);
}

TEST_CASE("status: swapped-out memory still counts in the footprint") {
  ProcessSample s;
  apply_status("Name:\tllama-server\nVmRSS:\t  1000 kB\nRssAnon:\t 800 kB\nVmSwap:\t 4000 kB\n", s);
  CHECK(s.footprint_bytes == 4800 * KiB);
  CHECK(s.resident_bytes == 1000 * KiB);
  CHECK(s.swap_bytes == 4000 * KiB);
}

TEST_CASE("status: a kernel thread has no memory lines: unknown, and said") {
  ProcessSample s;
  apply_status("Name:\tkworker/0:1\nState:\tI (idle)\nPPid:\t2\n", s);
  CHECK(s.name == "kworker/0:1");
  CHECK_FALSE(s.footprint_bytes.has_value());
  CHECK_FALSE(s.resident_bytes.has_value());
  CHECK(s.error.find("no VmRSS") != std::string::npos);
}

TEST_CASE("smaps_rollup capture: Pss, not Pss_Anon") {
  ProcessSample s;
  apply_smaps_rollup(fixture("pid-smaps_rollup"), s);
  CHECK(s.pss_bytes == 61734 * KiB);
  ProcessSample none;
  apply_smaps_rollup("Rss: 10 kB\n", none);
  CHECK_FALSE(none.pss_bytes.has_value());
  CHECK(none.error == "smaps_rollup: no Pss");
}

TEST_CASE("stat capture: start time in ms after boot") {
  auto st = parse_stat(fixture("pid-stat"));
  REQUIRE(st);
  CHECK(st->pid == 7325);
  CHECK(st->comm == "python3");
  CHECK(st->state == 'S');
  CHECK(st->ppid == 1);
  CHECK(st->start_ticks == 71507);
  ProcessSample s;
  apply_stat(fixture("pid-stat"), 100, s);
  CHECK(s.start_time == 715070);
  CHECK(s.name == "python3");
}

TEST_CASE("stat: comm with spaces and parentheses") {
  auto st = parse_stat("42 (my (odd) name) R 7 42 42 0 -1 4194304 0 0 0 0 0 0 0 0 20 0 1 0 999 0 0");
  REQUIRE(st);
  CHECK(st->comm == "my (odd) name");
  CHECK(st->ppid == 7);
  CHECK(st->start_ticks == 999);
}

TEST_CASE("stat: truncated or garbage") {
  CHECK_FALSE(parse_stat("42 (x) R 7 42").ok());
  CHECK_FALSE(parse_stat("garbage").ok());
  CHECK_FALSE(parse_stat("x (y) R 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19").ok());
  ProcessSample s;
  apply_stat("42 (x) R 7 42", 100, s);
  CHECK_FALSE(s.start_time.has_value());
  CHECK(s.error == "stat: no starttime");
  // A start time whose millisecond value overflows is unknown, not wrapped.
  ProcessSample big;
  apply_stat("1 (x) S 0 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 9223372036854775807 0", 100, big);
  CHECK_FALSE(big.start_time.has_value());
}

TEST_CASE("cmdline capture: NUL-separated, spaces kept inside arguments") {
  auto argv = parse_cmdline(fixture("pid-cmdline"));
  REQUIRE(argv.size() == 6);
  CHECK(argv[0] == "/root/.pyenv/versions/3.11.7/bin/python3");
  CHECK(argv[1] == "/tmp/listener.py");
  CHECK(argv[4] == "--alias");
  CHECK(argv[5] == "tiny model");
  CHECK(parse_cmdline(std::string_view("", 0)).empty());  // kernel thread
  CHECK(parse_cmdline(std::string_view("a\0\0b", 4)) == std::vector<std::string>{"a", "", "b"});
  CHECK(parse_cmdline("setproctitle style") == std::vector<std::string>{"setproctitle style"});
}

TEST_CASE("net/tcp captures: listeners found by port and state, IPv4 and IPv6") {
  std::vector<uint64_t> inodes;
  CHECK(parse_tcp_listeners(fixture("net-tcp"), 18080, inodes));
  CHECK(inodes == std::vector<uint64_t>{15278});
  inodes.clear();
  CHECK(parse_tcp_listeners(fixture("net-tcp6"), 18081, inodes));
  CHECK(inodes == std::vector<uint64_t>{15279});
  inodes.clear();
  CHECK(parse_tcp_listeners(fixture("net-tcp"), 18081, inodes));
  CHECK(inodes.empty());
  // An established connection on the port is not a listener.
  inodes.clear();
  parse_tcp_listeners(
      "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
      "   0: 0100007F:1F90 0100007F:C350 01 00000000:00000000 00:00000000 00000000  1000        0 777 1\n"
      "   1: 00000000:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 778 1\n"
      "   2: 00000000:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 0 1\n",
      8080, inodes);
  CHECK(inodes == std::vector<uint64_t>{778});
  CHECK_FALSE(parse_tcp_listeners("no header here\n", 80, inodes));
}

// The byte order of the captures is the development machine's (x86-64,
// little-endian), as the kernel printed it.
TEST_CASE("net/tcp captures for soakd init: loopback and unspecified listeners only") {
  auto v4 = parse_local_listeners(fixture("net-tcp-init"), false);
  REQUIRE(v4);
  // 0.0.0.0:18091, 127.0.0.1:18090 (its open connection is not a listener),
  // the machine's own 0.0.0.0:2024; not 127.0.0.2:18093 nor 192.0.2.2:18092.
  CHECK(*v4 == std::vector<LocalListener>{
                   {18091, 32631, false, false}, {18090, 32630, false, true}, {2024, 1063, false, false}});
  auto v6 = parse_local_listeners(fixture("net-tcp6-init"), true);
  REQUIRE(v6);
  // [::]:18095, [::ffff:127.0.0.1]:18096, [::1]:18094.
  CHECK(*v6 == std::vector<LocalListener>{
                   {18095, 32635, true, false}, {18096, 32636, true, true}, {18094, 32634, true, true}});
  // The older captures: 127.0.0.1:18080 and [::1]:18081.
  CHECK(parse_local_listeners(fixture("net-tcp"), false)->at(1) == LocalListener{18080, 15278, false, true});
  CHECK(*parse_local_listeners(fixture("net-tcp6"), true) == std::vector<LocalListener>{{18081, 15279, true, true}});
  // The wrong table for the address width, a broken line, inode 0, no header.
  CHECK(parse_local_listeners(fixture("net-tcp6-init"), false)->empty());
  CHECK(parse_local_listeners(
            "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
            "   0: 0100007F:1F9 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 0 1\n"
            "   1: 0100007F 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 12 1\n"
            "   2: 0100007G:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 13 1\n"
            "   3: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 14 1\n",
            false) == std::vector<LocalListener>{{8080, 14, false, true}});
  CHECK_FALSE(parse_local_listeners("no header here\n", false).has_value());
}

TEST_CASE("socket links") {
  CHECK(parse_socket_link("socket:[15278]") == 15278u);
  CHECK_FALSE(parse_socket_link("pipe:[15278]").has_value());
  CHECK_FALSE(parse_socket_link("socket:[]").has_value());
  CHECK_FALSE(parse_socket_link("socket:[12a]").has_value());
  CHECK_FALSE(parse_socket_link("/dev/null").has_value());
}

TEST_CASE("host identity from os-release, kernel release and cpuinfo") {
  CHECK(os_release_pretty_name(fixture("os-release")) == "Debian GNU/Linux 12 (bookworm)");
  CHECK(linux_os_version(fixture("os-release"), fixture("osrelease")) ==
        "Debian GNU/Linux 12 (bookworm), Linux 6.18.44-fc-v782");
  CHECK(linux_os_version("", "6.1.0\n") == "Linux 6.1.0");
  CHECK(linux_os_version("", "").empty());
  CHECK(os_release_pretty_name("PRETTY_NAME='Alpine'\n") == "Alpine");
  CHECK(cpuinfo_model("processor\t: 0\nmodel name\t: AMD EPYC\nmodel name\t: other\n") == "AMD EPYC");
  CHECK(cpuinfo_model("Hardware\t: BCM2835\n") == "BCM2835");
  CHECK(trim(std::string_view("Mac\0", 4)) == "Mac");
}
