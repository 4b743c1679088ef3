// The Clock seam. Only a Clock reads time; everything above takes `now` as a value
// or asks the Clock it was given. Production uses SystemClock; tests use
// VirtualClock so a 7-day soak runs in well under a second.
//
// Three readings, because they diverge exactly when soakd must notice:
//   wall_ms  — Unix epoch milliseconds (what rows store; jumps with NTP / user).
//   mono_ns  — monotonic, does NOT advance while the machine sleeps (Linux
//              CLOCK_MONOTONIC, macOS mach_absolute_time / CLOCK_UPTIME_RAW).
//   boot_ns  — monotonic, DOES advance across sleep (Linux CLOCK_BOOTTIME,
//              macOS mach_continuous_time / CLOCK_MONOTONIC_RAW).
// boot - mono growing between two readings means the host slept in between.
//
// Thread-safety: SystemClock is safe from any thread. VirtualClock is for tests
// and single-threaded use.
#pragma once

#include <cstdint>

namespace soak {

struct Instant {
  int64_t wall_ms = 0;
  int64_t mono_ns = 0;
  int64_t boot_ns = 0;
};

class Clock {
 public:
  virtual ~Clock() = default;
  virtual int64_t wall_ms() const = 0;
  virtual int64_t mono_ns() const = 0;
  virtual int64_t boot_ns() const = 0;
  Instant now() const { return Instant{wall_ms(), mono_ns(), boot_ns()}; }
};

class SystemClock final : public Clock {
 public:
  int64_t wall_ms() const override;
  int64_t mono_ns() const override;
  int64_t boot_ns() const override;
};

class VirtualClock final : public Clock {
 public:
  explicit VirtualClock(int64_t start_wall_ms = 1'767'225'600'000 /* 2026-01-01Z */) : wall_ms_(start_wall_ms) {}

  int64_t wall_ms() const override { return wall_ms_; }
  int64_t mono_ns() const override { return mono_ns_; }
  int64_t boot_ns() const override { return boot_ns_; }

  // Time passes while awake: all three readings advance together.
  void advance_ns(int64_t ns) {
    mono_ns_ += ns;
    boot_ns_ += ns;
    wall_carry_ns_ += ns;
    wall_ms_ += wall_carry_ns_ / 1'000'000;
    wall_carry_ns_ %= 1'000'000;
  }
  void advance_ms(int64_t ms) { advance_ns(ms * 1'000'000); }
  // The host sleeps: wall and boot advance, mono does not.
  void sleep_ms(int64_t ms) {
    wall_ms_ += ms;
    boot_ns_ += ms * 1'000'000;
  }
  // The wall clock is stepped (NTP, user): only wall changes.
  void step_wall_ms(int64_t delta_ms) { wall_ms_ += delta_ms; }

 private:
  int64_t wall_ms_;
  int64_t mono_ns_ = 1'000'000'000;
  int64_t boot_ns_ = 1'000'000'000;
  int64_t wall_carry_ns_ = 0;
};

}  // namespace soak
