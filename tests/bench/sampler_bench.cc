// What sampling costs the machine it measures: CPU time and memory per host
// sample plus a few process samples (the daemon's per-tick work), and per
// discovery pass (process list, listener lookup), with the real sampler.
// Prints figures; asserts nothing about speed.
//
// Usage: sampler_bench [iterations]   (default 2000)
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "platform/sampler.h"
#include "tests/support/runtime_signatures.h"

using namespace soak;

namespace {

constexpr int kDefaultIterations = 2000;
constexpr int kChildren = 3;
constexpr int kDiscoveryPasses = 20;

struct Usage {
  double user_us, sys_us;
  double cpu_us() const { return user_us + sys_us; }
};

Usage usage() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return Usage{ru.ru_utime.tv_sec * 1e6 + ru.ru_utime.tv_usec, ru.ru_stime.tv_sec * 1e6 + ru.ru_stime.tv_usec};
}

// Current resident set (ru_maxrss is a high-water mark; this shows steady state).
long rss_kib() {
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (!f) return -1;
  long pages = 0, resident = 0;
  int n = std::fscanf(f, "%ld %ld", &pages, &resident);
  std::fclose(f);
  return n == 2 ? resident * (sysconf(_SC_PAGESIZE) / 1024) : -1;
}

}  // namespace

int main(int argc, char** argv) {
  int iterations = argc > 1 ? std::atoi(argv[1]) : kDefaultIterations;
  if (iterations <= 0) iterations = kDefaultIterations;

  // A few processes to sample, like the candidates' runtimes: children that
  // wait on a pipe until the benchmark ends.
  int hold[2];
  if (pipe(hold) != 0) return 1;
  std::vector<pid_t> kids;
  for (int i = 0; i < kChildren; ++i) {
    pid_t p = fork();
    if (p == 0) {
      close(hold[1]);
      char c;
      while (read(hold[0], &c, 1) > 0) {
      }
      _exit(0);
    }
    if (p > 0) kids.push_back(p);
  }
  close(hold[0]);

  auto sampler = make_system_sampler(test::builtin_signatures());
  int errors = 0;
  // Warm-up: buffers reach their steady size.
  for (int i = 0; i < 10; ++i) {
    errors += !sampler->sample_host(i).error.empty();
    for (pid_t k : kids) errors += !sampler->sample_process(k, i).error.empty();
  }
  long rss_before = rss_kib();
  Usage u0 = usage();
  for (int i = 0; i < iterations; ++i) {
    HostSample h = sampler->sample_host(i);
    errors += !h.error.empty();
    for (pid_t k : kids) {
      ProcessSample s = sampler->sample_process(k, i);
      errors += !s.error.empty();
    }
  }
  Usage u1 = usage();
  long rss_after = rss_kib();

  Usage d0 = usage();
  size_t procs_seen = 0;
  for (int i = 0; i < kDiscoveryPasses; ++i) {
    auto procs = sampler->list_processes();
    if (procs) procs_seen = procs->size();
    (void)sampler->find_listening_pid(1);
  }
  Usage d1 = usage();

  std::printf("sampler benchmark: %d ticks of 1 host sample + %d process samples\n", iterations, kChildren);
  double tick_us = (u1.cpu_us() - u0.cpu_us()) / iterations;
  std::printf("  cpu per tick:          %.1f us (user %.1f, kernel %.1f)\n", tick_us,
              (u1.user_us - u0.user_us) / iterations, (u1.sys_us - u0.sys_us) / iterations);
  std::printf("  cpu at one tick per 5 s: %.4f %% of one core\n", tick_us / 5e6 * 100);
  std::printf("  rss before/after:      %ld / %ld KiB (growth %ld KiB over %d ticks)\n", rss_before, rss_after,
              rss_after - rss_before, iterations);
  std::printf("  sampling errors:       %d\n", errors);
  std::printf("discovery: process list + listener lookup over %zu processes\n", procs_seen);
  std::printf("  cpu per pass:          %.1f us\n", (d1.cpu_us() - d0.cpu_us()) / kDiscoveryPasses);

  close(hold[1]);
  for (pid_t k : kids) waitpid(k, nullptr, 0);
  return errors == 0 ? 0 : 1;
}
