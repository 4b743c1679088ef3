#include "core/clock.h"

#include <time.h>

#include <chrono>

namespace soak {
namespace {
int64_t read_ns(clockid_t id) {
  timespec ts{};
  clock_gettime(id, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}
}  // namespace

int64_t SystemClock::wall_ms() const {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

#if defined(__APPLE__)
// <time.h> on macOS: CLOCK_UPTIME_RAW stops during sleep, CLOCK_MONOTONIC_RAW
// (mach_continuous_time) keeps counting.
int64_t SystemClock::mono_ns() const { return read_ns(CLOCK_UPTIME_RAW); }
int64_t SystemClock::boot_ns() const { return read_ns(CLOCK_MONOTONIC_RAW); }
#else
int64_t SystemClock::mono_ns() const { return read_ns(CLOCK_MONOTONIC); }
int64_t SystemClock::boot_ns() const { return read_ns(CLOCK_BOOTTIME); }
#endif

}  // namespace soak
