// Liveness: outstanding work is evidence (docs/DESIGN.md §3.4, "unserved").
//
// A runtime that stops serving while its health routes still answer leaves
// soakd's requests outstanding: each may be held in the runtime's queue until
// its wall timeout (queue_timeout) or wait on a long budget, and a stage that
// only counts rows as they finish sees nothing wrong until they do. So every
// tick of every stage reads what the candidate has in flight
// (TaskRunner::serving) and how long nothing of it was served — no first
// byte, prefill progress, content, whole answer or queue move of any of its
// inference requests; health, scrape and model-list answers do not count —
// and once that passes the bound while requests are outstanding, an
// `unserved` event is stored (outstanding count, oldest sent, unserved for,
// last served at) and the stage's hard failures are checked: the judge
// rejects on it (judges/liveness.cc), and `soakctl explain` reads the same
// event.
//
// The bound: the larger of limits.unserved_timeout (5 min) and the largest
// silent budget among the outstanding requests (stall timeout plus prefill
// allowance: a prefill that takes its whole allowance serves nothing
// meanwhile). Past the stage's nominal end the budget alone: a stage waiting
// for its last requests gives them their own budget and no more, so it never
// passes while requests it sent are outstanding past it.
//
// Pure: values in, values out; `now` and the runner's ages are values.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/types.h"
#include "probes/probe_types.h"

namespace soak {

struct Unserved {
  int64_t outstanding = 0;                // inference requests in flight
  int64_t queued = 0;                     // of them, held in the runtime's queue
  int64_t oldest_sent_ms = 0;             // wall time the oldest of them was sent
  int64_t unserved_ms = 0;                // how long nothing of them was served
  std::optional<int64_t> last_served_ms;  // wall time anything was last served (nullopt: nothing ever)
  int64_t bound_ms = 0;                   // the bound it passed
  std::string bound;                      // "limits.unserved_timeout" or "stall timeout + prefill allowance"
};

// How long nothing was served: since the later of the last thing served and
// the oldest outstanding request's send (time with nothing outstanding does
// not count). 0 when nothing is outstanding.
int64_t unserved_for_ms(const probes::ServingState& s);
// The bound in force (above); `ending`: the stage is past its nominal end.
int64_t liveness_bound_ms(const probes::ServingState& s, int64_t unserved_timeout_ms, bool ending);
// The finding at `now` (wall ms), nullopt while the bound is not passed.
std::optional<Unserved> check_liveness(const probes::ServingState& s, int64_t unserved_timeout_ms, bool ending,
                                       int64_t now_ms);
// When the bound will be passed if nothing is served meanwhile (nullopt:
// nothing outstanding), for the campaign's next wake-up.
std::optional<int64_t> liveness_due_ms(const probes::ServingState& s, int64_t unserved_timeout_ms, bool ending,
                                       int64_t now_ms);
// The event's detail: {"outstanding", "queued", "oldest_sent_ms", "unserved_ms",
// "last_served_ms" (null: nothing ever), "bound_ms", "bound", "stage", "stage_id"}.
std::string unserved_detail(const Unserved& u, StageKind stage, int64_t stage_id);

}  // namespace soak
