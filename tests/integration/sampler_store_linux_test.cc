// A child process really grows its memory on command; the real Linux sampler
// samples it after each step; the samples go into a real SqliteStore; the
// stored rows show the footprint growth. The parent tells the child over a
// pipe to allocate and touch the next 64 MiB and waits for its ack: no sleep.
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

#include "platform/sampler.h"
#include "storage/sqlite_store.h"
#include "tests/catch.h"
#include "tests/support/runtime_signatures.h"
#include "tests/support/temp_dir.h"

using namespace soak;

namespace {

constexpr size_t kStepBytes = 64 * 1024 * 1024;
constexpr int kSteps = 4;
constexpr char kGrow = 'g';
constexpr char kAck = 'k';

bool read_byte(int fd, char& c) {
  ssize_t n;
  do n = ::read(fd, &c, 1);
  while (n < 0 && errno == EINTR);
  return n == 1;
}

bool write_byte(int fd, char c) {
  ssize_t n;
  do n = ::write(fd, &c, 1);
  while (n < 0 && errno == EINTR);
  return n == 1;
}

// The child: on each 'g', map 64 MiB more, write every page, answer 'k'.
// Exits when the command pipe closes. Only async-signal-safe calls after fork.
[[noreturn]] void grow_on_command(int cmd, int ack) {
  long page = ::sysconf(_SC_PAGESIZE);
  char c;
  while (read_byte(cmd, c)) {
    void* p = ::mmap(nullptr, kStepBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) ::_exit(2);
    auto* bytes = static_cast<volatile char*>(p);
    for (size_t i = 0; i < kStepBytes; i += static_cast<size_t>(page)) bytes[i] = 1;
    if (!write_byte(ack, kAck)) ::_exit(3);
  }
  ::_exit(0);
}

class GrowingChild {
 public:
  GrowingChild() {
    int cmd[2], ack[2];
    REQUIRE(::pipe(cmd) == 0);
    REQUIRE(::pipe(ack) == 0);
    pid_ = ::fork();
    REQUIRE(pid_ >= 0);
    if (pid_ == 0) {
      ::close(cmd[1]);
      ::close(ack[0]);
      grow_on_command(cmd[0], ack[1]);
    }
    ::close(cmd[0]);
    ::close(ack[1]);
    cmd_ = cmd[1];
    ack_ = ack[0];
  }
  ~GrowingChild() {
    ::close(cmd_);
    ::close(ack_);
    int status = 0;
    ::waitpid(pid_, &status, 0);
  }
  int pid() const { return pid_; }
  // Returns once the child has touched another 64 MiB.
  bool grow() {
    char c = 0;
    return write_byte(cmd_, kGrow) && read_byte(ack_, c) && c == kAck;
  }

 private:
  pid_t pid_ = -1;
  int cmd_ = -1, ack_ = -1;
};

}  // namespace

TEST_CASE("a child's memory growth shows in the stored process samples") {
  TempDir dir;
  auto store = SqliteStore::open(dir.path() + "/soak.db", OpenMode::ReadWrite);
  REQUIRE(store);
  auto sampler = make_system_sampler(test::builtin_signatures());
  auto host = sampler->host_info();
  REQUIRE(host);
  auto host_id = (*store)->upsert_host(*host, 1'000);
  REQUIRE(host_id);

  GrowingChild child;
  int64_t wall_ms = 1'767'225'600'000;  // virtual stamps: the test reads no clock
  for (int step = 0; step <= kSteps; ++step) {
    if (step > 0) REQUIRE(child.grow());
    ProcessSample s = sampler->sample_process(child.pid(), wall_ms);
    INFO(s.error);
    REQUIRE(s.error.empty());
    s.host_id = *host_id;
    REQUIRE((*store)->insert_process_sample(s));
    HostSample h = sampler->sample_host(wall_ms);
    h.host_id = *host_id;
    REQUIRE((*store)->insert_host_sample(h));
    wall_ms += 5'000;
  }

  SampleQuery q;
  q.host_id = *host_id;
  auto rows = (*store)->process_samples(q);
  REQUIRE(rows);
  REQUIRE(rows->size() == kSteps + 1);
  const auto& r = *rows;
  REQUIRE(r[0].footprint_bytes.has_value());
  const int64_t base = *r[0].footprint_bytes;
  for (int step = 1; step <= kSteps; ++step) {
    INFO("step " << step);
    REQUIRE(r[step].footprint_bytes.has_value());
    CHECK(r[step].pid == child.pid());
    CHECK(r[step].start_time == r[0].start_time);  // same process throughout
    int64_t grown = *r[step].footprint_bytes - base;
    // Every page written: at least the mapped bytes; at most a quarter more
    // (page tables, and AddressSanitizer's 1/8 shadow in sanitizer builds).
    CHECK(grown >= static_cast<int64_t>(step * kStepBytes));
    CHECK(grown <= static_cast<int64_t>(step * kStepBytes * 5 / 4));
    CHECK(*r[step].resident_bytes - *r[0].resident_bytes >= static_cast<int64_t>(step * kStepBytes));
    CHECK(*r[step].pss_bytes > *r[step - 1].pss_bytes);
    CHECK(r[step].wall_ms == r[step - 1].wall_ms + 5'000);
  }
  auto hosts = (*store)->host_samples(q);
  REQUIRE(hosts);
  CHECK(hosts->size() == kSteps + 1);
  CHECK(hosts->front().total_bytes == host->mem_bytes);
}
