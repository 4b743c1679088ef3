// The runtime's own queue, read while soakd's requests wait in it
// (docs/DESIGN.md §2.4): a runtime that queues what its slots cannot take
// writes nothing to a waiting request, so soakd's own answers are not the
// only sign the queue moves — another client's requests at the same server
// hold the slots just as well. The watch reads the runtime's queue state
// (llama.cpp /slots, else the queue gauge of its /metrics; oMLX /api/status;
// vLLM /metrics; which route and series is the runtime's entry,
// probes/runtimes/) and says when it moved: a slot took a new task or let one
// go, or fewer requests wait than before. The group step that owns it then
// tells the HttpClient (mark_queue_moved), which gives every request still
// waiting at that origin its first-content budget again.
//
// Pure: the caller sends the requests and hands the answers in. Threading:
// whoever owns it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "probes/runtimes/runtime.h"

namespace soak::probes {

// Where the queue is read, best first.
enum class QueueSource { Slots, Metrics, Status, None };

// One reading. slot_tasks: the task each busy slot runs, sorted (a slot whose
// runtime names no task counts as -1 - its id); waiting: requests queued for
// a slot. Either may be unknown for a source.
struct QueueReading {
  std::optional<std::vector<int64_t>> slot_tasks;
  std::optional<int64_t> waiting;
  std::optional<int64_t> slots_total;  // /slots: how many slots it listed
};

// The first source `rt` has, and the one after `failed` (None: no more).
QueueSource first_queue_source(const Runtime& rt);
QueueSource next_queue_source(const Runtime& rt, QueueSource failed);
// The route of `s` on `rt`; nullptr for None or a source `rt` lacks.
const HttpRoute* queue_route(const Runtime& rt, QueueSource s);
// An answer of `s`'s route; an error when it is not the documented shape.
Result<QueueReading> read_queue(const Runtime& rt, QueueSource s, std::string_view body);

// Whether the runtime's queue moved between two readings: a slot started or
// ended a task, or fewer requests wait.
bool queue_moved(const QueueReading& before, const QueueReading& after);

// Whether a reading shows the runtime busy (docs/DESIGN.md §2.2 "Queued is
// not hung"): requests waiting for a slot (a queue gauge, oMLX's status), or
// read from /slots, every slot busy. nullopt: the reading cannot tell.
std::optional<bool> queue_busy(const QueueReading& r);
// The reading in words for a row's detail: "/metrics: 3 requests waiting",
// "/slots: 2 of 2 slots busy".
std::string describe_queue(QueueSource s, const QueueReading& r);

// The sources to read whether the runtime is busy, best first: a waiting
// count says exactly that a request waits, where every slot busy on /slots
// may be soakd's own request in its slot. The first `rt` has, and the one
// after `failed` (None: no more).
QueueSource first_busy_source(const Runtime& rt);
QueueSource next_busy_source(const Runtime& rt, QueueSource failed);

// How often to read the queue while a request waits in it: several times per
// stall timeout, so a move is seen well inside the budget it restarts.
inline constexpr int64_t kQueuePollMaxMs = 1'000;
inline constexpr int64_t kQueuePollMinMs = 20;
inline constexpr int64_t kQueuePollsPerStall = 4;
int64_t queue_poll_ms(int64_t stall_timeout_ms);

// The readings of one watch: on each answer, whether the queue moved since
// the previous one. A source that fails (an HTTP error, a shape not its own:
// llama-server without --metrics, or started with --no-slots) gives way to
// the next; once none is left, route() is nullptr. A reading that got no
// answer at all (http_status 0: cancelled, timed out, refused) says nothing
// of the route and keeps it.
class QueueWatch {
 public:
  explicit QueueWatch(const Runtime& rt) : rt_(rt), source_(first_queue_source(rt)) {}
  const HttpRoute* route() const { return queue_route(rt_, source_); }
  QueueSource source() const { return source_; }
  bool on_answer(int http_status, std::string_view body);

 private:
  const Runtime& rt_;
  QueueSource source_;
  std::optional<QueueReading> last_;
};

}  // namespace soak::probes
