// HTTP client on the daemon's libuv loop: libcurl's multi interface driven by
// the loop (the multi-socket pattern of curl's docs/examples/multi-uv.c: one
// uv_poll per socket curl asks for, one uv_timer for curl's timeouts,
// curl_multi_socket_action on each). No thread per request: everything,
// including every handler callback, runs on the loop thread.
//
// Limits (HttpRequest): the connect timeout is curl's; the wall and stall
// limits are our own uv timers that consult the Clock (CURLOPT_LOW_SPEED_*
// would be reset by keep-alive bytes, docs/DESIGN.md §7.3); the size cap aborts from
// the write callback. Each ends the transfer with its own EndReason.
//
// Ownership: the caller owns the loop, the clock and every handler; all must
// outlive the client (a handler: until its on_done). The client owns curl's
// handles and its uv handles; they are freed in their close callbacks, so run
// the loop after shutdown() until it has no handles left, then close it.
//
// Threading: construct, call and destroy on the loop thread only. Handler
// callbacks run on that thread from inside the loop; from inside them it is
// fine to call start(), cancel(), the mark_*() calls and shutdown() (what libcurl
// forbids inside its callbacks is deferred until curl returns), but never to
// destroy the client.
//
// Failure: start() never fails synchronously. Every accepted transfer gets
// exactly one on_done, never from inside start()/cancel()/mark_content()
// (shutdown() called outside any callback is the exception: it delivers
// on_done(Cancelled) to every live transfer before it returns). Nothing throws
// through curl or libuv: an exception from a handler ends that transfer with
// EndReason::Error.
//
// Timing: TransferTimes has start (the call), connect_start (a new socket),
// connected (the request about to be written) and first byte. Curl sets up
// every transfer added in one loop pass before it writes any request, so a
// burst's requests leave back to back, but each waits for the others' setup
// between start and connected (tens of ms for 80 fresh connections on a busy
// 2-vCPU host). Measure a runtime's TTFT from `connected`.
#pragma once

#include <uv.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "core/clock.h"
#include "probes/transport/deadline.h"
#include "probes/transport/http_types.h"

namespace soak {

using TransferId = uint64_t;
inline constexpr TransferId kNoTransfer = 0;

class TransferHandler {
 public:
  virtual ~TransferHandler() = default;
  // The final (non-1xx) status line and headers are complete.
  virtual void on_headers(TransferId, const ResponseHead&, int64_t /*mono_ns*/) {}
  // BodyMode::Stream: body bytes as they arrive (de-chunked), stamped on arrival.
  // `bytes` is valid during the call only.
  virtual void on_body(TransferId, std::string_view /*bytes*/, int64_t /*mono_ns*/) {}
  virtual void on_done(TransferId, const TransferResult& result) = 0;
};

// Reads a runtime's own queue for the client (the probes know each runtime's
// routes and readers: probes/queue_reader.h). The client asks when a slot
// request's first-content budget runs out before its first byte and nothing
// else says the runtime is busy; the reader answers later through
// HttpClient::report_queue, never from inside read(), and reads again every
// poll interval while a request stays held there (HttpClient::held).
class QueueReader {
 public:
  virtual ~QueueReader() = default;
  virtual void read() = 0;
};

// One owner's slot requests (a candidate's inference requests), as the client
// sees them now: what the liveness rule watches (campaigns/liveness.h).
struct ServingStats {
  int64_t outstanding = 0;  // started, not ended
  int64_t held = 0;         // of them, waiting in the runtime's queue now
  std::optional<int64_t> oldest_start_ns;
  // The latest time any of the owner's slot requests was served: its first
  // byte, prefill progress, content or a whole answer, or the runtime's queue
  // moving while it waited there. Kept after the requests end.
  std::optional<int64_t> last_served_ns;
  // The largest silent budget among the outstanding: stall timeout plus the
  // prefill allowance from the start.
  int64_t silent_budget_ms = 0;
};

class HttpClient {
 public:
  HttpClient(uv_loop_t* loop, const Clock& clock);
  ~HttpClient();  // calls shutdown() if it was not called
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  // Starts a transfer and stamps its start. Returns kNoTransfer (and never
  // calls `handler`) only after shutdown().
  TransferId start(HttpRequest request, TransferHandler* handler);

  // Ends the transfer as Cancelled and closes its connection. Unknown or
  // finished ids are ignored.
  void cancel(TransferId id);

  // The caller saw real content on this transfer (only it can tell a token
  // from a keep-alive), arrived at `arrived_mono_ns` (an on_body stamp):
  // resets the stall clock. In BodyMode::Stream nothing else does, and before
  // the first call the stall clock runs from start() with the request's
  // prefill allowance on top (deadline.h).
  void mark_content(TransferId id, int64_t arrived_mono_ns);

  // The caller saw the runtime report prefill progress (more of the prompt
  // read than before) before any content: the stall clock gets a full stall
  // timeout from `arrived_mono_ns` if that ends later than the prefill budget.
  // Ignored once content has been marked.
  void mark_progress(TransferId id, int64_t arrived_mono_ns);

  // The runtime's queue. A QueueRole::Slot request waits in the queue of its
  // URL's origin (origin_of) until its first content. When a slot request to
  // an origin ends served (content marked, or a whole answer), and when the
  // caller says the runtime reported its queue moving (another client's
  // request there ended or started: its /slots or queue metrics), the stall
  // clock's first-content budget of every slot request still waiting there
  // runs again from `at_mono_ns` (deadline.h). A request that has content is
  // past the queue and ignores it.
  void mark_queue_moved(std::string_view origin, int64_t at_mono_ns);
  // Slot requests to `origin` started and still without content.
  size_t queued(std::string_view origin) const;

  // Queued is not hung (deadline.h): a slot request whose first-content
  // budget runs out before its first byte is held in the runtime's queue —
  // only its wall limit applies, QueueTimeout when that passes — while
  // soakd's own slot requests to the origin that a slot took (their first
  // byte came) fill the runtime's slots (HttpRequest::runtime_slots), or
  // while the runtime's own
  // queue, read by the origin's QueueReader, says it is busy. It leaves the
  // queue (its budget runs again from then) when the queue moves, when its
  // first byte comes, when a reading says the runtime is no longer busy, or,
  // held for soakd's own requests, when they no longer fill the slots.
  // Without a reader and with the slots unknown nothing is held: a stall.
  // The reader is borrowed until replaced or removed (nullptr).
  void set_queue_reader(std::string_view origin, QueueReader* reader);
  // What the reader found: `moved` as mark_queue_moved(); `state` for the
  // requests held there (a Busy reading keeps them, Free lets them out, and
  // one held only until this reading stalls unless Busy); `why` what showed
  // the runtime busy, for their rows' detail.
  void report_queue(std::string_view origin, QueueState state, bool moved, int64_t at_mono_ns, std::string why);
  // Slot requests to `origin` held in its queue now.
  size_t held(std::string_view origin) const;
  // The slot requests of `owner` (HttpRequest::owner).
  ServingStats serving(std::string_view owner) const;

  // Stops the timers, ends every transfer as Cancelled (on_done is delivered
  // before this returns), releases curl and starts closing every uv handle.
  // Idempotent.
  void shutdown();

  size_t active() const;  // transfers started and not yet delivered to on_done

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace soak
