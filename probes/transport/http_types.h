// Plain values of the HTTP transport: what a request asks for, what came back,
// and how a transfer ended. No behaviour beyond a few pure functions; owned by
// whoever holds them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/limits.h"

namespace soak {

// Stream: body bytes go to TransferHandler::on_body as they arrive, and only
//   HttpClient::mark_content() resets the stall clock (keep-alives must not).
// Buffer: the body is collected into TransferResult::body and every received
//   body byte counts as progress for the stall clock.
enum class BodyMode { Stream, Buffer };

// Reuse: an idle keep-alive connection to the same host may carry the request.
// Fresh: open a new connection and close it afterwards (cold measurements,
//   bursts whose spread must include connection setup).
enum class ConnectionPolicy { Reuse, Fresh };

// Slot: the request takes one of the runtime's slots, and waits silently in
//   its queue while none is free (chat completions); the client keeps the
//   queue's moves per origin (HttpClient, deadline.h).
// None: served beside the queue (health, models, metrics, slots, props).
enum class QueueRole { None, Slot };

// Header names compare ASCII case-insensitively (RFC 9110 §5.1).
bool header_name_equals(std::string_view a, std::string_view b);

struct HttpHeader {
  std::string name;
  std::string value;
  bool operator==(const HttpHeader&) const = default;
};

// HTTP/1 header text as curl hands it over, a line at a time: the line (or a
// value) without its surrounding blanks and CR LF; the status of a status
// line ("HTTP/1.1 200 OK" -> 200; 0 if malformed); whether a header is there.
std::string_view trim_header_line(std::string_view s);
int parse_status_line(std::string_view line);
bool find_header(const std::vector<HttpHeader>& headers, std::string_view name);

// The origin of an http(s) URL (RFC 6454): "scheme://host:port", scheme and
// host lower-cased, the scheme's default port written out, so that every
// spelling of one server's base URL is one queue. A URL without "://" is its
// own origin, whole.
std::string origin_of(std::string_view url);

struct HttpRequest {
  std::string method = "GET";
  std::string url;
  std::vector<HttpHeader> headers;  // a body without Content-Type is sent as application/json
  std::string body;
  // Limits default to the config's (core/limits.h: docs/DESIGN.md §2.2, requests carry
  // no max_tokens, so these are what bound them). 0 disables a limit.
  int64_t connect_timeout_ms = kDefaultConnectTimeoutMs;
  int64_t wall_timeout_ms = kDefaultWallTimeoutMs;    // from start(), whatever arrives
  int64_t stall_timeout_ms = kDefaultStallTimeoutMs;  // from start() or the last content
  // Added to the stall timeout before the first content: the time a long
  // prompt may take to be read (deadline.h prefill_allowance_ms). 0: none.
  int64_t prefill_allowance_ms = 0;
  // The allowance again from each move of the runtime's queue (deadline.h):
  // then only the request's own prompt is left to read. nullopt: the same as
  // prefill_allowance_ms (a request that counted no other prompts ahead).
  std::optional<int64_t> moved_prefill_allowance_ms;
  int64_t max_response_bytes = kDefaultMaxResponseBytes;  // body bytes after de-chunking
  BodyMode body_mode = BodyMode::Stream;
  ConnectionPolicy connection = ConnectionPolicy::Reuse;
  QueueRole queue_role = QueueRole::None;
  // QueueRole::Slot: the runtime's parallel slots when known; soakd's own slot
  // requests that a slot took filling them mean it waits in the queue
  // (deadline.h on_budget_spent). nullopt: not known, that rule is off.
  std::optional<int> runtime_slots;
  // Whose request it is (a candidate's name): HttpClient::serving() sums the
  // slot requests of one owner. Empty: nobody's in particular.
  std::string owner;
};

// A success status (2xx).
inline bool is_2xx(int status) { return status >= 200 && status < 300; }

struct ResponseHead {
  int status = 0;                   // 0 until a final (non-1xx) status line arrived
  std::vector<HttpHeader> headers;  // in order, names as sent
  // First header with this name (ASCII case-insensitive), or nullptr.
  const std::string* find(std::string_view name) const;
};

// How a transfer ended. Every limit has its own reason; nothing is cut silently.
enum class EndReason {
  Completed,       // the response arrived whole (any HTTP status)
  ConnectRefused,  // TCP connect refused / host unreachable
  ConnectTimeout,  // no connection within connect_timeout_ms
  Timeout,         // wall_timeout_ms passed
  Stalled,         // stall_timeout_ms (plus the prefill allowance before the first content) passed without content
  QueueTimeout,    // wall_timeout_ms passed while the request still waited in the runtime's queue (deadline.h)
  Truncated,       // the body reached max_response_bytes; the rest was not read
  PeerClosed,      // the server closed or reset the connection before the response was whole
  Cancelled,       // HttpClient::cancel() or shutdown()
  Error,           // anything else: curl code and message in the result
};
std::string_view to_string(EndReason r);

// The reason for a transfer that libcurl finished (rather than one of our own
// limits): `curl_code` is its CURLcode; `connected` whether a connection was
// ever ready. Pure, so the mapping is tested without sockets.
EndReason end_reason_for_curl(int curl_code, bool connected);

// Monotonic stamps (Clock::mono_ns) of one transfer.
struct TransferTimes {
  int64_t start_ns = 0;                     // start() was called
  std::optional<int64_t> connect_start_ns;  // socket of a new connection created (nullopt if reused)
  std::optional<int64_t> connected_ns;      // connection ready (new or reused), request about to be sent
  std::optional<int64_t> first_byte_ns;     // first response byte (status line) processed
  int64_t done_ns = 0;                      // the end reason was decided
};

struct TransferResult {
  EndReason reason = EndReason::Error;
  ResponseHead head;           // status 0 if no final status line arrived
  int64_t bytes_received = 0;  // body bytes delivered (never more than the cap)
  TransferTimes times;
  bool reused_connection = false;
  int local_port = 0;  // client side of the TCP connection, 0 if none
  int curl_code = 0;   // CURLcode of the transfer (0 when we ended it ourselves)
  std::string detail;  // human-readable cause for every reason but Completed
  std::string body;    // BodyMode::Buffer only
  // A slot request that waited in the runtime's queue (deadline.h): when it
  // was first held, when it last left (nullopt: it never did), and what showed
  // the runtime busy ("2 of soakd's own requests in its 2 slots", "/metrics: 3
  // requests waiting"). Unset for a request that was never held.
  struct Queue {
    std::optional<int64_t> first_held_ns;
    std::optional<int64_t> left_ns;
    std::string why;
  } queue;
};

}  // namespace soak
