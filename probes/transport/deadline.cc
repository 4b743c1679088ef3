#include "probes/transport/deadline.h"

#include <algorithm>

namespace soak {

DeadlineCheck check_deadlines(const StallMarks& m, const TransferLimits& l, int64_t now_ns) {
  std::optional<int64_t> wall_at, stall_at;
  if (l.wall_ns > 0) wall_at = m.start_ns + l.wall_ns;
  if (m.held_since_ns) {
    // Queued: the budget waits for the request to leave the queue.
    DeadlineCheck out;
    if (wall_at && now_ns >= *wall_at) out.tripped = EndReason::QueueTimeout;
    out.next_ns = wall_at;
    return out;
  }
  if (l.stall_ns > 0) {
    if (m.last_content_ns) {
      stall_at = *m.last_content_ns + l.stall_ns;
    } else {
      // Prefill: the budget from the start, or a full stall window after the
      // latest progress report, whichever ends later.
      int64_t at = m.start_ns + l.stall_ns + std::max<int64_t>(0, l.prefill_ns);
      if (m.last_progress_ns) at = std::max(at, *m.last_progress_ns + l.stall_ns);
      if (m.queue_moved_ns)
        at = std::max(at,
                      *m.queue_moved_ns + l.stall_ns + std::max<int64_t>(0, l.moved_prefill_ns.value_or(l.prefill_ns)));
      stall_at = at;
    }
  }

  DeadlineCheck out;
  out.stall_at_ns = stall_at;
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

BudgetSpent on_budget_spent(const QueueSignals& s) {
  if (s.first_byte) return BudgetSpent::Stalled;
  if (s.slots && *s.slots > 0 && s.in_slots >= *s.slots) return BudgetSpent::Queued;
  return s.can_read ? BudgetSpent::AskQueue : BudgetSpent::Stalled;
}

HeldCall on_queue_reading(bool confirmed, QueueState state) {
  if (state == QueueState::Busy) return HeldCall::Stay;
  if (!confirmed) return HeldCall::Stall;
  return state == QueueState::Free ? HeldCall::Leave : HeldCall::Stay;
}

std::optional<int64_t> queue_wait_ns(std::optional<int64_t> first_held_ns, std::optional<int64_t> left_ns,
                                     int64_t done_ns, int64_t origin_ns) {
  if (!first_held_ns) return std::nullopt;
  const int64_t until = left_ns && *left_ns >= *first_held_ns ? *left_ns : done_ns;
  return std::max<int64_t>(0, until - origin_ns);
}

std::string describe_limit(EndReason reason, const HttpRequest& r, const StallMarks& m, std::string_view queue_why) {
  if (reason == EndReason::QueueTimeout)
    return "no first byte within the wall timeout of " + std::to_string(r.wall_timeout_ms) +
           " ms: the request waited in the runtime's queue" +
           (queue_why.empty() ? std::string() : " (" + std::string(queue_why) + ")") + ", which never let it in";
  if (reason == EndReason::Timeout)
    return "no complete response within the wall timeout of " + std::to_string(r.wall_timeout_ms) + " ms";
  const std::string stall = "no content for the stall timeout of " + std::to_string(r.stall_timeout_ms) + " ms";
  if (m.last_content_ns) return stall + " (since the last content)";
  const std::string allowance = r.prefill_allowance_ms > 0
                                    ? " plus the prefill allowance of " + std::to_string(r.prefill_allowance_ms) + " ms"
                                    : std::string();
  if (m.last_progress_ns)
    return stall + " since the last prefill progress report (budget: the stall timeout" + allowance +
           " from the request start)";
  if (m.queue_moved_ns) {
    const int64_t own = r.moved_prefill_allowance_ms.value_or(r.prefill_allowance_ms);
    const std::string moved = own > 0 ? " plus the prefill allowance of " + std::to_string(own) + " ms" : std::string();
    return stall + moved + " since the runtime's queue last moved";
  }
  return stall + allowance + " (since the request start; no prefill progress reported)";
}

uint64_t timer_ms_for(int64_t ns) {
  if (ns <= 0) return 1;
  return static_cast<uint64_t>((ns + 999'999) / 1'000'000);
}

}  // namespace soak
