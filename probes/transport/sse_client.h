// Server-Sent Events over HttpClient: each response body goes through its own
// SseParser and the handler gets one call per event or comment, stamped with
// the arrival time of the bytes that completed it.
//
// Only the handler can tell content from a keep-alive (llama.cpp `:` pings and
// MLX-LM `: keepalive n/m` are comments, but oMLX sends whole data chunks with
// "model":"keepalive"), so on_event and on_comment say which it was: Content
// resets the transfer's stall clock (HttpClient::mark_content), Progress — the
// runtime reporting more of the prompt read (MLX-LM's n rising, llama.cpp's
// prompt_progress) — counts as prefill progress (HttpClient::mark_progress),
// anything else changes nothing.
//
// A response that is not text/event-stream (an error JSON with a 4xx/5xx, say)
// is not parsed: its body is handed back whole in SseResult::transfer.body.
//
// Ownership: the caller owns the HttpClient and every handler (until its
// on_done); the SseClient owns one small adapter per live stream and must
// outlive them, i.e. destroy it after HttpClient::shutdown().
// Threading and failure: as HttpClient (loop thread only; exactly one on_done
// per started stream; a throwing handler ends its stream with EndReason::Error).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>
#include <unordered_map>

#include "probes/transport/http_client.h"
#include "probes/transport/sse.h"

namespace soak {

enum class EventClass {
  Content,     // output, the finish, usage, [DONE], an error: the stall clock restarts
  Progress,    // prefill progress before any content: see HttpClient::mark_progress
  NotContent,  // a keep-alive, a role-only chunk: nothing moves
};

struct SseResult {
  TransferResult transfer;    // body: filled only when the response was not an event stream
  bool event_stream = false;  // Content-Type was text/event-stream
  int64_t events = 0;         // delivered to the handler
  int64_t comments = 0;
  std::optional<int64_t> first_event_ns;  // first dispatched event (content or not)
  SseTail tail;                           // what the end of the stream left unfinished
};

class SseHandler {
 public:
  virtual ~SseHandler() = default;
  virtual void on_headers(TransferId, const ResponseHead&, int64_t /*mono_ns*/) {}
  // Views are valid during the call only.
  virtual EventClass on_event(TransferId, const SseEvent& event, int64_t mono_ns) = 0;
  virtual EventClass on_comment(TransferId, std::string_view /*text*/, int64_t /*mono_ns*/) {
    return EventClass::NotContent;
  }
  virtual void on_done(TransferId, const SseResult& result) = 0;
};

class SseClient {
 public:
  explicit SseClient(HttpClient& http);
  ~SseClient();
  SseClient(const SseClient&) = delete;
  SseClient& operator=(const SseClient&) = delete;

  // Forces BodyMode::Stream and adds `Accept: text/event-stream` unless the
  // request has an Accept header. kNoTransfer after HttpClient::shutdown().
  TransferId start(HttpRequest request, SseHandler* handler);
  // As HttpClient::cancel(), and no further event or comment is delivered,
  // not even the rest of the bytes already read.
  void cancel(TransferId id);

 private:
  class Stream;
  std::unique_ptr<Stream> release(TransferId id);

  HttpClient& http_;
  std::unordered_map<TransferId, std::unique_ptr<Stream>> streams_;
};

}  // namespace soak
