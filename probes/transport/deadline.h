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
  std::optional<EndReason> tripped;    // Timeout or Stalled, if a limit has passed
  std::optional<int64_t> next_ns;      // when to look again (nullopt: no limit is set)
  std::optional<int64_t> stall_at_ns;  // the stall deadline in force (nullopt: no stall limit)
};

// If both limits have passed, the one whose deadline came first is reported.
DeadlineCheck check_deadlines(const StallMarks& marks, const TransferLimits& limits, int64_t now_ns);

// TransferResult::detail for a transfer that `reason` (Timeout or Stalled)
// ended: which limit, its size, and where the stall clock ran from.
std::string describe_limit(EndReason reason, const HttpRequest& request, const StallMarks& marks);

// Milliseconds for a libuv timer to cover `ns` (rounded up, at least 1).
uint64_t timer_ms_for(int64_t ns);

}  // namespace soak
