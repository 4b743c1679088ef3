// The wall and stall limits of one transfer as a pure function of time, so the
// rules are tested in virtual time; HttpClient only arms a timer for the
// returned instant and asks again when it fires.
//
// The stall clock (docs/DESIGN.md §2.2):
// - Before the first content, the budget is the stall timeout plus a prefill
//   allowance that grows with the prompt (core/limits.h prefill_allowance_ms:
//   prompt tokens / limits.prefill_floor_tps), counted from the request
//   start: a long fresh prompt streams nothing while the runtime reads it, and
//   that is not a hang. Prefill progress the runtime reports (MLX-LM
//   `: keepalive n/m` with n rising, llama.cpp `prompt_progress`) gives a full
//   stall timeout from the report, when that ends later.
// - A request waiting in the runtime's own queue (llama.cpp defers what its
//   slots cannot take, and writes nothing until a slot does) is queued, not
//   stalled: each time the runtime's queue moves (it finishes or starts a
//   request at the same origin, whoever sent it), its budget (stall timeout
//   plus prefill allowance, the request's own prompt's when the allowance
//   from the start counted others ahead of it) runs again from then, so a
//   burst of 80 on 2 slots is not read as 78 hangs while the queue moves.
// - A request whose budget runs out before its first byte while the runtime
//   is busy (soakd's own requests fill the runtime's slots, or the
//   runtime's own queue says every slot is busy or requests wait) is queued,
//   not stalled: it is held, only the wall limit applies, and its budget runs
//   again from when it can have left the queue (a reading that shows a free
//   slot, a queue move, its first byte). The wall limit reached while held is
//   QueueTimeout, not Timeout (docs/DESIGN.md §2.2 "Queued is not hung").
// - From the first content on, it runs from the last content only.
// Plain keep-alives (`: ping`, oMLX keepalive chunks) never move it: the
// caller marks only content and progress, so a runtime that only pings during
// a stuck prefill still trips it once the budget is spent.
// Times are Clock::mono_ns, which stops while the host sleeps: a sleeping Mac
// does not make a healthy stream look stalled.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "probes/transport/http_types.h"

namespace soak {

// What the stall clock has seen of one transfer.
struct StallMarks {
  int64_t start_ns = 0;
  std::optional<int64_t> last_content_ns;   // the latest content
  std::optional<int64_t> last_progress_ns;  // the latest prefill progress before any content
  // The latest time, before any content, that the runtime's queue moved: it
  // served another slot request to the same origin, or reported its queue
  // moving (HttpClient::mark_queue_moved).
  std::optional<int64_t> queue_moved_ns;
  // Since when the request is held in the runtime's queue (its budget ran out
  // while the runtime was busy): no stall limit applies until it leaves, which
  // sets queue_moved_ns. nullopt: not held.
  std::optional<int64_t> held_since_ns;
};

// The limits of one transfer in ns. wall_ns / stall_ns of 0 disable that
// limit; prefill_ns is the allowance on top of the stall timeout before the
// first content (0: none); moved_prefill_ns the allowance from a queue move
// (nullopt: prefill_ns): a request whose allowance counted other prompts read
// before its own has only its own left once the queue moved, so a stuck
// prefill is not given all of them again after every move.
struct TransferLimits {
  int64_t wall_ns = 0;
  int64_t stall_ns = 0;
  int64_t prefill_ns = 0;
  std::optional<int64_t> moved_prefill_ns;
};

struct DeadlineCheck {
  std::optional<EndReason> tripped;    // Timeout, Stalled or QueueTimeout (held), if a limit has passed
  std::optional<int64_t> next_ns;      // when to look again (nullopt: no limit is set)
  std::optional<int64_t> stall_at_ns;  // the stall deadline in force (nullopt: no stall limit)
};

// If both limits have passed, the one whose deadline came first is reported.
// While held in the queue only the wall limit applies, and it is QueueTimeout.
DeadlineCheck check_deadlines(const StallMarks& marks, const TransferLimits& limits, int64_t now_ns);

// What a slot request is once its first-content budget ran out.
struct QueueSignals {
  bool first_byte = false;  // a body byte or content came: a slot has it, it is past the queue
  // soakd's other slot requests to the same origin in flight that a slot took
  // (their first byte came): they hold that many of the runtime's slots.
  int64_t in_slots = 0;
  std::optional<int> slots;  // the runtime's parallel slots, when known
  bool can_read = false;     // the runtime's own queue can be read (a QueueReader at the origin)
};
enum class BudgetSpent {
  Stalled,   // nothing says the runtime is busy: a stall
  Queued,    // soakd's own requests fill the runtime's slots: held
  AskQueue,  // held until the runtime's own queue is read (on_queue_reading)
};
BudgetSpent on_budget_spent(const QueueSignals& s);

// What the runtime's own queue said when read.
enum class QueueState {
  Busy,     // every slot busy, or requests waiting
  Free,     // a slot free and nothing waiting
  Unknown,  // no reading (the route failed, refused or timed out)
};
// A held request on a reading of its runtime's queue: `confirmed` when it was
// held on evidence (soakd's own requests in the slots, or an earlier Busy reading), not
// only until this reading came. A request held only for the reading stalls
// unless the runtime is busy (its budget is spent); a confirmed one leaves
// the queue when the runtime is no longer busy.
enum class HeldCall { Stay, Leave, Stall };
HeldCall on_queue_reading(bool confirmed, QueueState state);

// How long a request that was held waited in the queue: from `origin_ns`
// (when it was sent) to when it last left (`left_ns`), or to its end when it
// never left. nullopt: never held.
std::optional<int64_t> queue_wait_ns(std::optional<int64_t> first_held_ns, std::optional<int64_t> left_ns,
                                     int64_t done_ns, int64_t origin_ns);

// TransferResult::detail for a transfer that `reason` (Timeout, Stalled or
// QueueTimeout) ended: which limit, its size, and where the stall clock ran
// from. `queue_why` (QueueTimeout) says what showed the runtime busy.
std::string describe_limit(EndReason reason, const HttpRequest& request, const StallMarks& marks,
                           std::string_view queue_why = {});

// Milliseconds for a libuv timer to cover `ns` (rounded up, at least 1).
uint64_t timer_ms_for(int64_t ns);

}  // namespace soak
