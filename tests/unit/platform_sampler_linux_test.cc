// The Linux sampler's reading paths on a fake /proc tree built from the real
// captures: which file feeds which figure, and what a missing or unreadable
// file becomes (a recorded error or, for PSI, simply unknown; never a crash
// or a zero).
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "core/files.h"
#include "platform/sampler_linux.h"
#include "tests/catch.h"
#include "tests/support/process_state.h"
#include "tests/support/runtime_signatures.h"
#include "tests/support/temp_dir.h"

using namespace soak;
namespace fs = std::filesystem;

namespace {

constexpr int kPid = 1234;
constexpr int64_t KiB = 1024;

void write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream f(p, std::ios::binary);
  f << text;
  REQUIRE(f.good());
}

void copy_fixture(const std::string& name, const fs::path& to) {
  fs::create_directories(to.parent_path());
  fs::copy_file(fs::path(SOAKD_FIXTURES_DIR) / "proc" / name, to, fs::copy_options::overwrite_existing);
}

// A /proc, /sys and /etc holding the captured files in their real places.
struct FakeRoots {
  TempDir dir;
  LinuxRoots roots;
  FakeRoots() {
    fs::path root = dir.path();
    roots = LinuxRoots{(root / "proc").string(), (root / "sys").string(), (root / "etc").string()};
    fs::path proc = roots.proc;
    copy_fixture("meminfo", proc / "meminfo");
    copy_fixture("vmstat", proc / "vmstat");
    copy_fixture("osrelease", proc / "sys/kernel/osrelease");
    write(proc / "sys/kernel/hostname", "studio-01\n");
    copy_fixture("os-release", fs::path(roots.etc) / "os-release");
    write(fs::path(roots.sys) / "class/dmi/id/product_name", "Test Board 9000\n");
    fs::path pid = proc / std::to_string(kPid);
    copy_fixture("pid-stat", pid / "stat");
    copy_fixture("pid-status", pid / "status");
    copy_fixture("pid-smaps_rollup", pid / "smaps_rollup");
    copy_fixture("pid-cmdline", pid / "cmdline");
    copy_fixture("net-tcp", proc / "net/tcp");
    copy_fixture("net-tcp6", proc / "net/tcp6");
    fs::create_directories(pid / "fd");
    fs::create_symlink("/dev/null", pid / "fd/0");
    fs::create_symlink("socket:[15278]", pid / "fd/3");
    fs::create_symlink("socket:[15279]", pid / "fd/4");
    fs::create_symlink("/usr/bin/python3.11 (deleted)", pid / "exe");
  }
};

}  // namespace

TEST_CASE("linux sampler: host figures from meminfo and vmstat; no PSI file is not an error") {
  FakeRoots f;
  auto sampler = make_linux_sampler(f.roots, test::builtin_signatures());
  HostSample s = sampler->sample_host(42);
  CHECK(s.wall_ms == 42);
  CHECK(s.error.empty());
  CHECK(s.total_bytes == 24683620 * KiB);
  CHECK(s.swap_used_bytes == 0);
  CHECK(s.pageins == 1666285);
  CHECK(s.swapouts == 0);
  CHECK_FALSE(s.psi_some_avg10.has_value());
  CHECK_FALSE(s.pressure_level.has_value());  // a macOS figure: unknown here
}

TEST_CASE("linux sampler: PSI read when present, garbage in it recorded") {
  FakeRoots f;
  write(fs::path(f.roots.proc) / "pressure/memory",
        "some avg10=3.25 avg60=1.00 avg300=0.10 total=4242\nfull avg10=0.50 avg60=0.10 avg300=0.00 total=77\n");
  auto sampler = make_linux_sampler(f.roots, test::builtin_signatures());
  HostSample s = sampler->sample_host(1);
  CHECK(s.psi_some_avg10 == Approx(3.25));
  CHECK(s.psi_full_total_us == 77);
  write(fs::path(f.roots.proc) / "pressure/memory", "nonsense\n");
  HostSample bad = sampler->sample_host(2);
  CHECK_FALSE(bad.psi_some_avg10.has_value());
  CHECK(bad.error.find("pressure") != std::string::npos);
}

TEST_CASE("linux sampler: host info from hostname, meminfo, DMI and os-release") {
  FakeRoots f;
  auto info = make_linux_sampler(f.roots, test::builtin_signatures())->host_info();
  REQUIRE(info);
  CHECK(info->hostname == "studio-01");
  CHECK(info->mem_bytes == 24683620 * KiB);
  CHECK(info->hw_model == "Test Board 9000");
  CHECK(info->os_version == "Debian GNU/Linux 12 (bookworm), Linux 6.18.44-fc-v782");
  // No DMI, no device tree, no cpuinfo: "unknown", said as such.
  fs::remove_all(fs::path(f.roots.sys));
  auto bare = make_linux_sampler(f.roots, test::builtin_signatures())->host_info();
  REQUIRE(bare);
  CHECK(bare->hw_model == "unknown");
}

TEST_CASE("linux sampler: a process's figures, start time and name") {
  FakeRoots f;
  auto sampler = make_linux_sampler(f.roots, test::builtin_signatures());
  ProcessSample p = sampler->sample_process(kPid, 7);
  CHECK(p.error.empty());
  CHECK(p.pid == kPid);
  CHECK(p.wall_ms == 7);
  CHECK(p.name == "python3");
  CHECK(p.footprint_bytes == 56352 * KiB);
  CHECK(p.resident_bytes == 63220 * KiB);
  CHECK(p.swap_bytes == 0);
  CHECK(p.pss_bytes == 61734 * KiB);
  long tck = ::sysconf(_SC_CLK_TCK);
  REQUIRE(tck > 0);
  CHECK(p.start_time == 71507LL * 1000 / tck);
}

TEST_CASE("linux sampler: a missing process or file is an error, never a zero") {
  FakeRoots f;
  auto sampler = make_linux_sampler(f.roots, test::builtin_signatures());
  ProcessSample gone = sampler->sample_process(999, 1);
  CHECK(gone.error == "pid 999: no such process");
  CHECK(gone.gone);
  CHECK_FALSE(gone.footprint_bytes.has_value());
  CHECK_FALSE(gone.start_time.has_value());
  CHECK(sampler->sample_process(0, 1).error == "invalid pid 0");

  fs::remove(fs::path(f.roots.proc) / std::to_string(kPid) / "smaps_rollup");
  ProcessSample partial = sampler->sample_process(kPid, 1);
  CHECK(partial.footprint_bytes == 56352 * KiB);
  CHECK_FALSE(partial.pss_bytes.has_value());
  CHECK(partial.error.find("smaps_rollup: No such file") != std::string::npos);
  CHECK_FALSE(partial.gone);  // its directory is there: a file this kernel lacks, not an ended process
}

TEST_CASE("linux sampler: a zombie has ended: gone, with no start time") {
  FakeRoots f;
  auto sampler = make_linux_sampler(f.roots, test::builtin_signatures());
  const fs::path dir = fs::path(f.roots.proc) / std::to_string(kPid);
  std::string stat;
  {
    std::ifstream in(dir / "stat");
    std::getline(in, stat);
  }
  const auto close = stat.rfind(')');
  REQUIRE(close != std::string::npos);
  std::string zombie = stat;
  zombie[close + 2] = 'Z';
  std::ofstream(dir / "stat") << zombie << "\n";
  ProcessSample z = sampler->sample_process(kPid, 1);
  CHECK(z.gone);
  CHECK(z.error == "pid " + std::to_string(kPid) + ": no such process (a zombie)");
  CHECK_FALSE(z.start_time.has_value());

  // The same process running again ('S'): not gone.
  std::ofstream(dir / "stat") << stat << "\n";
  ProcessSample alive = sampler->sample_process(kPid, 1);
  CHECK_FALSE(alive.gone);
  CHECK(alive.start_time.has_value());
}

TEST_CASE("linux sampler: an empty /proc gives errors for everything and crashes nothing") {
  TempDir empty;
  LinuxRoots roots{empty.path() + "/proc", empty.path() + "/sys", empty.path() + "/etc"};
  auto sampler = make_linux_sampler(roots, test::builtin_signatures());
  HostSample s = sampler->sample_host(1);
  CHECK_FALSE(s.total_bytes.has_value());
  CHECK_FALSE(s.swapouts.has_value());
  CHECK(s.error.find("meminfo: No such file") != std::string::npos);
  CHECK(s.error.find("vmstat: No such file") != std::string::npos);
  CHECK_FALSE(sampler->host_info().ok());
  CHECK_FALSE(sampler->list_processes().ok());
  CHECK_FALSE(sampler->find_listening_pid(80).ok());
}

TEST_CASE("linux sampler: process list with argv, parent and executable") {
  FakeRoots f;
  auto procs = make_linux_sampler(f.roots, test::builtin_signatures())->list_processes();
  REQUIRE(procs);
  REQUIRE(procs->size() == 1);  // "sys", "net", "meminfo" are not processes
  const ProcessInfo& p = procs->front();
  CHECK(p.pid == kPid);
  CHECK(p.ppid == 1);
  CHECK(p.name == "python3");
  CHECK(p.path == "/usr/bin/python3.11");  // " (deleted)" of an upgraded binary dropped
  REQUIRE(p.argv.size() == 6);
  CHECK(p.argv[5] == "tiny model");
}

TEST_CASE("linux sampler: listening port to pid through socket inodes, IPv4 and IPv6") {
  FakeRoots f;
  auto sampler = make_linux_sampler(f.roots, test::builtin_signatures());
  auto v4 = sampler->find_listening_pid(18080);
  REQUIRE(v4);
  CHECK(*v4 == kPid);
  auto v6 = sampler->find_listening_pid(18081);
  REQUIRE(v6);
  CHECK(*v6 == kPid);
  auto none = sampler->find_listening_pid(9);
  REQUIRE(none);
  CHECK_FALSE(none->has_value());
  // A listener in the table whose owner is not in this /proc: an error, not "nothing".
  fs::remove(fs::path(f.roots.proc) / std::to_string(kPid) / "fd/3");
  auto orphan = sampler->find_listening_pid(18080);
  REQUIRE_FALSE(orphan.ok());
  CHECK(orphan.message().find("no process visible here") != std::string::npos);
  fs::create_symlink("socket:[15278]", fs::path(f.roots.proc) / std::to_string(kPid) / "fd/3");
  // IPv6 disabled: no tcp6 file, IPv4 still answers.
  fs::remove(fs::path(f.roots.proc) / "net/tcp6");
  auto still = sampler->find_listening_pid(18080);
  REQUIRE(still);
  CHECK(*still == kPid);
}

TEST_CASE("read_file_whole: a file whole; an ended process's /proc file is absent, never a throw") {
  TempDir tmp;
  std::ofstream(tmp.path() + "/f") << "one\ntwo\n";
  CHECK(read_file_whole(tmp.path() + "/f") == std::optional<std::string>("one\ntwo\n"));
  CHECK_FALSE(read_file_whole(tmp.path() + "/missing").has_value());
  const auto self = read_file_whole("/proc/self/stat");
  REQUIRE(self.has_value());
  CHECK(self->find(") R ") != std::string::npos);  // the reader itself is running

  // A child that ended and was reaped: its directory is gone.
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) ::_exit(0);
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  CHECK_FALSE(read_file_whole("/proc/" + std::to_string(child) + "/stat").has_value());
  CHECK_FALSE(test::process_running(child));
  CHECK(test::process_running(::getpid()));
  auto sampler = make_system_sampler(test::builtin_signatures());
  const ProcessSample s = sampler->sample_process(child, 1);
  CHECK(s.gone);
  CHECK(s.error == "pid " + std::to_string(child) + ": no such process");
}
