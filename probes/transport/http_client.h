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
#include <string_view>

#include "core/clock.h"
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
