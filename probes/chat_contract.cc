#include "probes/chat_contract.h"

#include "probes/text_util.h"

namespace soak::probes {

namespace {

// Phrases runtimes use when a prompt does not fit: llama.cpp "exceeds the
// available context size", vLLM "maximum context length", oMLX "Prompt too
// long: N tokens exceeds max context window".
constexpr std::string_view kContextPhrases[] = {
    "exceeds the available context size",
    "maximum context length",
    "context window",
    "context length exceeded",
    "prompt too long",
};

std::string status_detail(int status, const ApiError& e) {
  std::string d = "HTTP " + std::to_string(status);
  if (!e.type.empty()) d += " " + text::excerpt(e.type, 60);
  if (!e.message.empty()) d += ": " + text::excerpt(e.message, 160);
  return d;
}

}  // namespace

Verdict classify_http_error(int http_status, std::string_view body) {
  ApiError e = parse_api_error(body);
  std::string detail = status_detail(http_status, e);
  // llama.cpp answers 503 "Loading model" on every route while loading;
  // Rapid-MLX /health/ready answers 503 "model loading"; oMLX answers 409
  // "Model '...' is already being loaded" (omlx/engine_pool.py) when another
  // request is loading the model into its pool.
  if ((http_status == 503 || http_status == 409) &&
      (text::contains_ci(e.message, "loading") || text::contains_ci(e.message, "being loaded"))) {
    return {Outcome::Loading, detail};
  }
  if (http_status >= 400 && e.type == "exceed_context_size_error") return {Outcome::ContextExceeded, detail};
  if (http_status >= 400 && http_status < 500) {
    for (std::string_view p : kContextPhrases)
      if (text::contains_ci(e.message, p)) return {Outcome::ContextExceeded, detail};
    return {Outcome::Http4xx, detail};
  }
  if (http_status >= 500 && http_status < 600) return {Outcome::Http5xx, detail};
  return {Outcome::MalformedResponse, "unexpected " + detail};
}

Verdict classify_chat(TransportEnd end, std::optional<int> http_status, std::string_view error_body,
                      const ChatResult& r, const ChatExpectations& expect) {
  switch (end) {
    case TransportEnd::ConnectRefused: return {Outcome::ConnectRefused, "connection refused"};
    case TransportEnd::ConnectTimeout: return {Outcome::ConnectTimeout, "no connection within the connect timeout"};
    case TransportEnd::CancelledByDaemon: return {Outcome::CancelledByDaemon, "cancelled by soakd"};
    case TransportEnd::LocalError: return {Outcome::HarnessError, "soakd could not run the request"};
    // Queued, never let in: not a hang of the stream (there was none), a queue that never drained.
    case TransportEnd::QueueTimeout:
      return {Outcome::QueueTimeout, "the wall timeout passed while the request waited in the runtime's queue"};
    default: break;
  }
  // A connection dropped before any status line is not an SSE hang: a runtime
  // refusing or shedding connections under a burst does this (docs/DESIGN.md §2.1).
  if (end == TransportEnd::ConnectionLost && !http_status)
    return {Outcome::ConnectionReset, "connection closed or reset before any status line"};
  if (http_status && (*http_status < 200 || *http_status >= 300)) return classify_http_error(*http_status, error_body);
  if (r.error) {
    std::string d = "error inside the ";
    d += r.mode == ResponseMode::Stream ? "stream" : "body";
    if (!r.error->type.empty()) d += ": " + text::excerpt(r.error->type, 60);
    if (!r.error->message.empty()) d += ": " + text::excerpt(r.error->message, 160);
    if (r.mode == ResponseMode::Stream && !r.saw_done) d += " (no [DONE] followed)";
    return {Outcome::StreamError, d};
  }
  switch (end) {
    case TransportEnd::WallTimeout: return {Outcome::Timeout, "wall timeout"};
    case TransportEnd::Stalled:
      return {Outcome::Stalled, std::string("no content event within the stall timeout") +
                                    (r.first_token_ns ? "" : " and prefill budget; " + describe(r.prefill))};
    case TransportEnd::SizeCapped: return {Outcome::Truncated, "response-size cap hit"};
    default: break;
  }
  const bool lost = end == TransportEnd::ConnectionLost;
  const int64_t real_events = r.data_events - r.keepalive_events - r.progress_events;
  if (real_events == 0) {
    return {Outcome::NoBody,
            r.keepalive_events + r.progress_events > 0
                ? "HTTP 200 and only keep-alives or prefill progress, no event"
                : (r.mode == ResponseMode::Stream ? "HTTP 200 and no SSE event" : "HTTP 200 and an empty body")};
  }
  if (r.mode == ResponseMode::Stream && !r.saw_done) {
    return {Outcome::NoTerminal, std::string("stream ended without data: [DONE]") + (lost ? " (connection lost)" : "") +
                                     " after " + std::to_string(r.data_events) + " events"};
  }
  if (r.mode == ResponseMode::NonStream && !r.terminal_ns) {
    if (lost) return {Outcome::NoTerminal, "connection lost before the body was complete"};
    return {Outcome::MalformedResponse, r.problems.empty() ? "body is not a chat completion" : r.problems.front()};
  }
  if (r.malformed_events > 0) {
    return {Outcome::MalformedResponse, std::to_string(r.malformed_events) + " malformed event(s); first: " +
                                            (r.problems.empty() ? std::string() : r.problems.front())};
  }
  if (r.finish_reason.empty()) return {Outcome::MissingFinishReason, "no choice carried a finish_reason"};
  if (expect.usage == UsagePolicy::Required && !(r.usage && r.usage->completion_tokens)) {
    return {Outcome::MissingUsage, r.mode == ResponseMode::Stream
                                       ? "no usage chunk although stream_options.include_usage was sent"
                                       : "body has no usage"};
  }
  if (expect.identity == IdentityEvidence::ResponseModel) {
    if (r.model != expect.canonical_model) {
      return {Outcome::IdentityMismatch, "response model '" + text::excerpt(r.model, 100) +
                                             "' is not the canonical id '" +
                                             text::excerpt(expect.canonical_model, 100) + "'"};
    }
  } else if (!r.model.empty() && r.model != expect.requested_model) {
    return {Outcome::IdentityMismatch, "response model '" + text::excerpt(r.model, 100) +
                                           "' does not echo the requested '" +
                                           text::excerpt(expect.requested_model, 100) + "'"};
  }
  return {Outcome::Clean, ""};
}

}  // namespace soak::probes
