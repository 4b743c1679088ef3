// The store on a real, small file system that fills while soakd runs, then
// frees (docs/DESIGN.md §4.9): soakd pauses new work, keeps what it measured
// in memory, writes one store_unwritable gap, drops nothing and resumes. The
// store lives on a 4 MiB tmpfs mounted in a mount namespace of this test alone
// (as root, or in an unprivileged user namespace where the kernel allows it);
// where neither can be made the test is skipped (exit 77), saying why.
#include <fcntl.h>
#include <signal.h>
#include <sqlite3.h>
#include <unistd.h>
#if defined(__linux__)
#include <sched.h>
#include <sys/mount.h>
#endif

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "storage/sqlite_store.h"
#include "tests/catch.h"
#include "tests/fake_runtime/fake_runtime.h"
#include "tests/support/child_process.h"
#include "tests/support/temp_dir.h"

using namespace soak;
using namespace soak::fake;

namespace {

const std::string kSoakd = std::string(SOAKD_BINARY_DIR) + "/daemon/soakd";
constexpr int kSkipExitCode = 77;
constexpr int kWaitMs = 30'000;

[[noreturn]] void skip(const std::string& why) {
  std::printf("skipped: %s\n", why.c_str());
  std::fflush(stdout);
  std::_Exit(kSkipExitCode);
}

#if defined(__linux__)
bool write_file(const std::string& path, const std::string& text) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  return ok;
}

#endif

// A private mount namespace for this process (and the soakd it starts), with
// a small tmpfs at `dir`. Root: a mount namespace; otherwise a user namespace
// mapping this user to root in it. Must run before any thread starts.
std::string mount_small_tmpfs(const std::string& dir) {
#if !defined(__linux__)
  (void)dir;
  return "a private tmpfs needs Linux mount namespaces";
#else
  constexpr const char* kTmpfsSize = "size=4m";
  if (::unshare(CLONE_NEWNS) != 0) {
    const uid_t uid = ::getuid();
    const gid_t gid = ::getgid();
    if (::unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0)
      return std::string("cannot make a mount namespace (") + std::strerror(errno) +
             "): run as root, or allow unprivileged user namespaces";
    write_file("/proc/self/setgroups", "deny");
    if (!write_file("/proc/self/uid_map", "0 " + std::to_string(uid) + " 1") ||
        !write_file("/proc/self/gid_map", "0 " + std::to_string(gid) + " 1"))
      return "cannot map this user in a user namespace";
  }
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0)
    return std::string("cannot make / private in the new namespace: ") + std::strerror(errno);
  if (::mount("tmpfs", dir.c_str(), "tmpfs", 0, kTmpfsSize) != 0)
    return std::string("cannot mount a tmpfs: ") + std::strerror(errno);
  return {};
#endif
}

void unmount(const std::string& dir) {
#if defined(__linux__)
  ::umount2(dir.c_str(), MNT_DETACH);
#else
  (void)dir;
#endif
}

// Fills the file system holding `path` until it refuses another byte.
void fill(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  REQUIRE(f);
  std::vector<char> block(64 * 1024, 'x');
  while (std::fwrite(block.data(), 1, block.size(), f) == block.size()) {
  }
  std::fclose(f);
  // Whatever the stdio buffer held back: one byte at a time to the end.
  int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
  REQUIRE(fd >= 0);
  while (::write(fd, "x", 1) == 1) {
  }
  ::close(fd);
}

int64_t wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

TEST_CASE("the store's disk fills while soakd runs: work pauses, nothing is dropped, one gap, resumed when freed") {
  TempDir tmp;
  const std::string disk = tmp.path() + "/disk";
  std::filesystem::create_directories(disk);
  if (auto why = mount_small_tmpfs(disk); !why.empty()) skip(why);

  ListenerConfig lc = ListenerConfig::make(Scenario::Healthy, Flavour::LlamaCpp);
  lc.knobs.token_interval_ms = 1;
  FakeRuntime rt({lc});
  REQUIRE(rt.start().ok());

  const std::string store = disk + "/soakd.db";
  const std::string cfg = tmp.path() + "/soakd.json";
  // Scrapes and functional probes every second, samples every 200 ms: a
  // pause of seconds would hold many rows.
  std::ofstream(cfg) << R"({
    "store": ")" << store
                     << R"(",
    "sampler": { "keep_awake": false, "interval": "200ms" },
    "schedule": { "nightly_window": "now" },
    "defaults": {
      "stages": { "smoke": "2s", "canary": "10m" },
      "cadence": { "scrape": "300ms", "functional": "1s", "long_context": "1h", "burst": "1h", "cancel": "1h" }
    },
    "candidates": [ { "name": "a", "model": "qwen3.6-35b-a3b", "runtime": "llama.cpp",
                      "base_url": ")"
                     << rt.base_url() << R"(", "build": { "fixed": "b1" },
                      "allow_coexisting": true } ] })";
  auto d = ChildProcess::spawn({kSoakd, "run", "--config", cfg, "--log-stderr"});
  REQUIRE(d);
  REQUIRE(d->wait_for_line("canary started", kWaitMs));

  const std::string filler = disk + "/filler";
  const int64_t filled_ms = wall_ms();
  fill(filler);
  REQUIRE(d->wait_for_line("store not writable since", kWaitMs));
  const int64_t paused_seen_ms = wall_ms();
  // Held for a while: at these cadences a running soakd would start a probe
  // every few hundred milliseconds.
  CHECK_FALSE(d->wait_for_line("store writable again", 3'000));
  const int64_t freed_ms = wall_ms();
  REQUIRE(std::filesystem::remove(filler));
  REQUIRE(d->wait_for_line("store writable again", kWaitMs));
  // Work goes on: a probe row started after the space came back.
  const auto resumed_by = std::chrono::steady_clock::now() + std::chrono::milliseconds(kWaitMs);
  bool resumed_rows = false;
  while (!resumed_rows && std::chrono::steady_clock::now() < resumed_by) {
    d->wait_for_line("\n", 200);  // drains its output while waiting
    auto st = SqliteStore::open(store, OpenMode::ReadOnly);
    if (!st) continue;
    ProbeQuery q;
    q.since_ms = freed_ms;
    auto rows = (*st)->probe_results(q);
    resumed_rows = rows && !rows->empty();
  }
  CHECK(resumed_rows);
  REQUIRE(d->signal(SIGTERM));
  REQUIRE(d->wait_exit(kWaitMs));
  INFO(d->err());
  CHECK(d->err().find("cannot store") == std::string::npos);
  CHECK(d->err().find("dropping") == std::string::npos);

  auto st = SqliteStore::open(store, OpenMode::ReadOnly);
  REQUIRE(st.ok());
  // Nothing measured was dropped, and the pause is one gap naming the cause.
  auto ev = (*st)->events({});
  REQUIRE(ev.ok());
  int outages = 0;
  for (const auto& e : *ev) {
    if (e.kind != EventKind::Gap || e.detail_json.find("store_unwritable") == std::string::npos) continue;
    ++outages;
    CHECK(e.detail_json.find("\"rows_dropped\":0") != std::string::npos);
    CHECK(e.detail_json.find("full") != std::string::npos);
  }
  CHECK(outages == 1);
  // No probe started while the store could not write (those in flight when it
  // filled finished, and were kept).
  ProbeQuery during;
  during.since_ms = paused_seen_ms;
  during.until_ms = freed_ms;
  auto paused_rows = (*st)->probe_results(during);
  REQUIRE(paused_rows.ok());
  CHECK(paused_rows->empty());
  // The rows of the minute before the disk filled are all there: probes ran.
  ProbeQuery before;
  before.until_ms = filled_ms;
  auto earlier = (*st)->probe_results(before);
  REQUIRE(earlier.ok());
  CHECK(earlier->size() >= 3);
  st->reset();

  // The store is intact.
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open_v2(store.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK);
  sqlite3_stmt* s = nullptr;
  REQUIRE(sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &s, nullptr) == SQLITE_OK);
  REQUIRE(sqlite3_step(s) == SQLITE_ROW);
  CHECK(std::string(reinterpret_cast<const char*>(sqlite3_column_text(s, 0))) == "ok");
  sqlite3_finalize(s);
  sqlite3_close(db);
  rt.stop();
  unmount(disk);
}
