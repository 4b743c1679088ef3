// The wall and stall rules in virtual time: only content resets the stall
// clock, it runs from the request start until the first content, and host
// sleep (mono stops, boot runs) is not a stall.
#include <algorithm>

#include "core/clock.h"
#include "probes/transport/deadline.h"
#include "tests/catch.h"

using namespace soak;

namespace {
constexpr int64_t kMs = 1'000'000;
constexpr int64_t kWall = 10'000 * kMs;
constexpr int64_t kStall = 1'000 * kMs;
}  // namespace

TEST_CASE("deadline: no content at all stalls at start + stall, however many bytes or pings came") {
  VirtualClock clock;
  const int64_t start = clock.mono_ns();
  for (int i = 0; i < 9; ++i) {
    clock.advance_ms(100);  // a keep-alive every 100 ms changes nothing: no content was marked
    auto c = check_deadlines(start, std::nullopt, kWall, kStall, clock.mono_ns());
    CHECK_FALSE(c.tripped.has_value());
    CHECK(c.next_ns == start + kStall);
  }
  clock.advance_ms(100);
  auto c = check_deadlines(start, std::nullopt, kWall, kStall, clock.mono_ns());
  CHECK(c.tripped == EndReason::Stalled);
}

TEST_CASE("deadline: content moves the stall deadline; the wall deadline does not move") {
  VirtualClock clock;
  const int64_t start = clock.mono_ns();
  std::optional<int64_t> last;
  for (int i = 0; i < 20; ++i) {
    clock.advance_ms(500);
    last = clock.mono_ns();
    auto c = check_deadlines(start, last, kWall, kStall, clock.mono_ns());
    if (clock.mono_ns() < start + kWall) {
      CHECK_FALSE(c.tripped.has_value());
      CHECK(c.next_ns == std::min(*last + kStall, start + kWall));
    } else {
      CHECK(c.tripped == EndReason::Timeout);
    }
  }
  clock.advance_ms(999);
  CHECK(check_deadlines(start, last, 0, kStall, clock.mono_ns()).tripped == std::nullopt);
  clock.advance_ms(1);
  CHECK(check_deadlines(start, last, 0, kStall, clock.mono_ns()).tripped == EndReason::Stalled);
}

TEST_CASE("deadline: when both passed, the earlier deadline names the reason") {
  const int64_t start = 1'000 * kMs;
  CHECK(check_deadlines(start, std::nullopt, 5'000 * kMs, 2'000 * kMs, start + 6'000 * kMs).tripped ==
        EndReason::Stalled);
  CHECK(check_deadlines(start, start + 4'500 * kMs, 5'000 * kMs, 2'000 * kMs, start + 9'000 * kMs).tripped ==
        EndReason::Timeout);
}

TEST_CASE("deadline: zero disables a limit; with none set there is nothing to watch") {
  const int64_t start = 0;
  auto c = check_deadlines(start, std::nullopt, 0, 0, 1'000'000 * kMs);
  CHECK_FALSE(c.tripped.has_value());
  CHECK_FALSE(c.next_ns.has_value());
  CHECK(check_deadlines(start, std::nullopt, kWall, 0, kWall).tripped == EndReason::Timeout);
  CHECK(check_deadlines(start, std::nullopt, 0, kStall, kStall).tripped == EndReason::Stalled);
}

TEST_CASE("deadline: host sleep advances boot time only and trips nothing") {
  VirtualClock clock;
  const int64_t start = clock.mono_ns();
  clock.advance_ms(900);
  clock.sleep_ms(60 * 60 * 1000);  // the Mac slept an hour mid-stream
  auto c = check_deadlines(start, std::nullopt, kWall, kStall, clock.mono_ns());
  CHECK_FALSE(c.tripped.has_value());
  CHECK(clock.boot_ns() - clock.mono_ns() >= 3'600'000 * kMs);
}

TEST_CASE("deadline: timer milliseconds round up so a timer never fires early") {
  CHECK(timer_ms_for(1) == 1);
  CHECK(timer_ms_for(kMs) == 1);
  CHECK(timer_ms_for(kMs + 1) == 2);
  CHECK(timer_ms_for(0) == 1);
  CHECK(timer_ms_for(-5) == 1);
  CHECK(timer_ms_for(300 * kMs) == 300);
}
