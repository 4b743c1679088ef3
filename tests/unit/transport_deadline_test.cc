// The wall and stall rules in virtual time: only content resets the stall
// clock, it runs from the request start until the first content with the
// prompt's prefill allowance on top, prefill progress reports extend it
// before the first content (never after), and host sleep (mono stops, boot
// runs) is not a stall.
#include <algorithm>

#include "core/clock.h"
#include "core/limits.h"
#include "probes/transport/deadline.h"
#include "tests/catch.h"

using namespace soak;

namespace {
constexpr int64_t kMs = 1'000'000;
constexpr int64_t kSec = 1'000 * kMs;
constexpr int64_t kWall = 10'000 * kMs;
constexpr int64_t kStall = 1'000 * kMs;

StallMarks marks(int64_t start, std::optional<int64_t> content = std::nullopt,
                 std::optional<int64_t> progress = std::nullopt) {
  return StallMarks{start, content, progress, std::nullopt, std::nullopt};
}
TransferLimits limits(int64_t wall, int64_t stall, int64_t prefill = 0) {
  return TransferLimits{wall, stall, prefill, std::nullopt};
}
}  // namespace

TEST_CASE("deadline: no content at all stalls at start + stall, however many bytes or pings came") {
  VirtualClock clock;
  const int64_t start = clock.mono_ns();
  for (int i = 0; i < 9; ++i) {
    clock.advance_ms(100);  // a keep-alive every 100 ms changes nothing: no content was marked
    auto c = check_deadlines(marks(start), limits(kWall, kStall), clock.mono_ns());
    CHECK_FALSE(c.tripped.has_value());
    CHECK(c.next_ns == start + kStall);
  }
  clock.advance_ms(100);
  auto c = check_deadlines(marks(start), limits(kWall, kStall), clock.mono_ns());
  CHECK(c.tripped == EndReason::Stalled);
}

TEST_CASE("deadline: content moves the stall deadline; the wall deadline does not move") {
  VirtualClock clock;
  const int64_t start = clock.mono_ns();
  std::optional<int64_t> last;
  for (int i = 0; i < 20; ++i) {
    clock.advance_ms(500);
    last = clock.mono_ns();
    auto c = check_deadlines(marks(start, last), limits(kWall, kStall), clock.mono_ns());
    if (clock.mono_ns() < start + kWall) {
      CHECK_FALSE(c.tripped.has_value());
      CHECK(c.next_ns == std::min(*last + kStall, start + kWall));
    } else {
      CHECK(c.tripped == EndReason::Timeout);
    }
  }
  clock.advance_ms(999);
  CHECK(check_deadlines(marks(start, last), limits(0, kStall), clock.mono_ns()).tripped == std::nullopt);
  clock.advance_ms(1);
  CHECK(check_deadlines(marks(start, last), limits(0, kStall), clock.mono_ns()).tripped == EndReason::Stalled);
}

TEST_CASE("deadline: when both passed, the earlier deadline names the reason") {
  const int64_t start = 1'000 * kMs;
  CHECK(check_deadlines(marks(start), limits(5'000 * kMs, 2'000 * kMs), start + 6'000 * kMs).tripped ==
        EndReason::Stalled);
  CHECK(check_deadlines(marks(start, start + 4'500 * kMs), limits(5'000 * kMs, 2'000 * kMs), start + 9'000 * kMs)
            .tripped == EndReason::Timeout);
}

TEST_CASE("deadline: zero disables a limit; with none set there is nothing to watch") {
  const int64_t start = 0;
  auto c = check_deadlines(marks(start), limits(0, 0, 5 * kSec), 1'000'000 * kMs);
  CHECK_FALSE(c.tripped.has_value());
  CHECK_FALSE(c.next_ns.has_value());
  CHECK_FALSE(c.stall_at_ns.has_value());
  CHECK(check_deadlines(marks(start), limits(kWall, 0), kWall).tripped == EndReason::Timeout);
  CHECK(check_deadlines(marks(start), limits(0, kStall), kStall).tripped == EndReason::Stalled);
}

TEST_CASE("deadline: host sleep advances boot time only and trips nothing") {
  VirtualClock clock;
  const int64_t start = clock.mono_ns();
  clock.advance_ms(900);
  clock.sleep_ms(60 * 60 * 1000);  // the Mac slept an hour mid-stream
  auto c = check_deadlines(marks(start), limits(kWall, kStall), clock.mono_ns());
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

// ---------------------------------------------------------------- prefill budget

TEST_CASE("prefill allowance: prompt tokens over the floor rate, rounded up; nothing without either") {
  CHECK(prefill_allowance_ms(65'536, 100) == 655'360);
  CHECK(prefill_allowance_ms(131'072, 100) == 1'310'720);
  CHECK(prefill_allowance_ms(1, 3) == 334);  // 333.3 ms: never short by a fraction
  CHECK(prefill_allowance_ms(0, 100) == 0);
  CHECK(prefill_allowance_ms(-5, 100) == 0);
  CHECK(prefill_allowance_ms(1000, 0) == 0);
  CHECK(prefill_allowance_ms(1000, -1) == 0);
}

TEST_CASE("prefill budget: the default floor passes every completed prefill of the field reports") {
  // (prompt tokens, seconds to the first token) measured on MLX-LM in the
  // field reports: a 35B at 100K and 131K fresh, a 27B at 65,538.
  struct Run {
    int64_t tokens;
    double seconds;
  };
  for (Run run : {Run{100'000, 160.135}, Run{131'072, 235.043}, Run{65'538, 494.2}}) {
    INFO(run.tokens << " tokens in " << run.seconds << " s");
    const int64_t budget_ns =
        kDefaultStallTimeoutMs * kMs + prefill_allowance_ms(run.tokens, kDefaultPrefillFloorTps) * kMs;
    const auto first_token = static_cast<int64_t>(run.seconds * 1e9);
    const TransferLimits l = limits(kDefaultWallTimeoutMs * kMs, kDefaultStallTimeoutMs * kMs,
                                    prefill_allowance_ms(run.tokens, kDefaultPrefillFloorTps) * kMs);
    // No progress report at all (a runtime that only pings), and still not a stall.
    CHECK_FALSE(check_deadlines(marks(0), l, first_token).tripped.has_value());
    CHECK(budget_ns > first_token);
    // With the stall timeout alone (the rule before the floor) each of them was a stall.
    CHECK(check_deadlines(marks(0), limits(kDefaultWallTimeoutMs * kMs, kDefaultStallTimeoutMs * kMs), first_token)
              .tripped == EndReason::Stalled);
    // The default wall timeout leaves the whole budget standing: it is not a budget the wall cuts first.
    CHECK(budget_ns < kDefaultWallTimeoutMs * kMs);
  }
}

TEST_CASE("prefill budget: before the first content the stall deadline is start + stall + allowance") {
  VirtualClock clock;
  const int64_t start = clock.mono_ns();
  const TransferLimits l = limits(600 * kSec, 2 * kSec, 8 * kSec);
  auto c = check_deadlines(marks(start), l, start);
  CHECK(c.stall_at_ns == start + 10 * kSec);
  CHECK(c.next_ns == start + 10 * kSec);
  clock.advance_ms(9'999);
  CHECK_FALSE(check_deadlines(marks(start), l, clock.mono_ns()).tripped.has_value());
  clock.advance_ms(1);
  CHECK(check_deadlines(marks(start), l, clock.mono_ns()).tripped == EndReason::Stalled);
}

TEST_CASE("prefill budget: progress gives a full stall window from the report when that ends later") {
  VirtualClock clock;
  const int64_t start = clock.mono_ns();
  const TransferLimits l = limits(600 * kSec, 2 * kSec, 3 * kSec);  // budget without progress: 5 s
  // Early progress changes nothing: the budget from the start ends later.
  CHECK(check_deadlines(marks(start, std::nullopt, start + 1 * kSec), l, start + 1 * kSec).stall_at_ns ==
        start + 5 * kSec);
  // Progress every 1.5 s keeps a 20 s prefill going, far past the 5 s budget.
  std::optional<int64_t> progress;
  for (int i = 0; i < 13; ++i) {
    clock.advance_ms(1'500);
    progress = clock.mono_ns();
    auto c = check_deadlines(marks(start, std::nullopt, progress), l, clock.mono_ns());
    CHECK_FALSE(c.tripped.has_value());
    CHECK(c.stall_at_ns == std::max(start + 5 * kSec, *progress + 2 * kSec));
  }
  // Then the reports stop: stalled a stall timeout after the last one, not before.
  clock.advance_ms(1'999);
  CHECK_FALSE(check_deadlines(marks(start, std::nullopt, progress), l, clock.mono_ns()).tripped.has_value());
  clock.advance_ms(1);
  CHECK(check_deadlines(marks(start, std::nullopt, progress), l, clock.mono_ns()).tripped == EndReason::Stalled);
}

TEST_CASE("prefill budget: after the first content the allowance and progress are gone; the stall rule is as before") {
  const int64_t start = 0;
  const TransferLimits l = limits(600 * kSec, 2 * kSec, 100 * kSec);
  const int64_t first = 30 * kSec;
  // A later progress mark (it cannot happen, HttpClient ignores it) would not move it either.
  auto c = check_deadlines(marks(start, first, first + 1 * kSec), l, first + 2 * kSec);
  CHECK(c.stall_at_ns == first + 2 * kSec);
  CHECK(c.tripped == EndReason::Stalled);
}

TEST_CASE("prefill budget: the wall timeout still bounds a prefill that reports progress forever") {
  const TransferLimits l = limits(60 * kSec, 2 * kSec, 10 * kSec);
  auto c = check_deadlines(marks(0, std::nullopt, 59 * kSec), l, 60 * kSec);
  CHECK(c.tripped == EndReason::Timeout);
}

TEST_CASE("deadline: the limit's detail says which limit, how large, and where the clock ran from") {
  HttpRequest r;
  r.wall_timeout_ms = 1800000;
  r.stall_timeout_ms = 120000;
  r.prefill_allowance_ms = 655360;
  CHECK(describe_limit(EndReason::Timeout, r, marks(0)) ==
        "no complete response within the wall timeout of 1800000 ms");
  CHECK(describe_limit(EndReason::Stalled, r, marks(0)) ==
        "no content for the stall timeout of 120000 ms plus the prefill allowance of 655360 ms (since the request "
        "start; no prefill progress reported)");
  CHECK(describe_limit(EndReason::Stalled, r, marks(0, std::nullopt, 5)).find("since the last prefill progress") !=
        std::string::npos);
  CHECK(describe_limit(EndReason::Stalled, r, marks(0, 7)) ==
        "no content for the stall timeout of 120000 ms (since the last content)");
  r.prefill_allowance_ms = 0;
  CHECK(describe_limit(EndReason::Stalled, r, marks(0)) ==
        "no content for the stall timeout of 120000 ms (since the request start; no prefill progress reported)");
}
