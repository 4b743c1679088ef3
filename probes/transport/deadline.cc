#include "probes/transport/deadline.h"

namespace soak {

DeadlineCheck check_deadlines(int64_t start_ns, std::optional<int64_t> last_content_ns, int64_t wall_ns,
                              int64_t stall_ns, int64_t now_ns) {
  std::optional<int64_t> wall_at, stall_at;
  if (wall_ns > 0) wall_at = start_ns + wall_ns;
  if (stall_ns > 0) stall_at = last_content_ns.value_or(start_ns) + stall_ns;

  DeadlineCheck out;
  bool wall_passed = wall_at && now_ns >= *wall_at;
  bool stall_passed = stall_at && now_ns >= *stall_at;
  if (wall_passed && stall_passed) {
    out.tripped = *stall_at < *wall_at ? EndReason::Stalled : EndReason::Timeout;
  } else if (wall_passed) {
    out.tripped = EndReason::Timeout;
  } else if (stall_passed) {
    out.tripped = EndReason::Stalled;
  }
  if (wall_at) out.next_ns = *wall_at;
  if (stall_at && (!out.next_ns || *stall_at < *out.next_ns)) out.next_ns = stall_at;
  return out;
}

uint64_t timer_ms_for(int64_t ns) {
  if (ns <= 0) return 1;
  return static_cast<uint64_t>((ns + 999'999) / 1'000'000);
}

}  // namespace soak
