// The wall and stall limits of one transfer as a pure function of time, so the
// rules are tested in virtual time; HttpClient only arms a timer for the
// returned instant and asks again when it fires.
//
// The stall clock runs from the request start until the first content, then
// from the last content: bytes and keep-alives never reset it, so a runtime
// that sends only `: ping` during a stuck prefill still trips it. Times are
// Clock::mono_ns, which stops while the host sleeps: a sleeping Mac does not
// make a healthy stream look stalled.
#pragma once

#include <cstdint>
#include <optional>

#include "probes/transport/http_types.h"

namespace soak {

struct DeadlineCheck {
  std::optional<EndReason> tripped;   // Timeout or Stalled, if a limit has passed
  std::optional<int64_t> next_ns;     // when to look again (nullopt: no limit is set)
};

// wall_ns / stall_ns of 0 disable that limit. If both have passed, the one
// whose deadline came first is reported.
DeadlineCheck check_deadlines(int64_t start_ns, std::optional<int64_t> last_content_ns, int64_t wall_ns,
                              int64_t stall_ns, int64_t now_ns);

// Milliseconds for a libuv timer to cover `ns` (rounded up, at least 1).
uint64_t timer_ms_for(int64_t ns);

}  // namespace soak
