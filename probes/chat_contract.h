// The stream contract (docs/DESIGN.md §2.1): which outcome a chat answer
// earns from how its transfer ended, its status, and what the accumulated
// answer holds (probes/openai_chat.h reads it). Checked in this order:
// transport end, a non-2xx status, an error object in the stream, a client
// limit, no real event, no terminal event, malformed events, finish_reason,
// usage, identity; content checks are the probe's, after this says Clean.
//
// Pure, thread-agnostic; never throws.
#pragma once

#include <optional>
#include <string_view>

#include "probes/openai_chat.h"

namespace soak::probes {

// A non-2xx answer: 503 "Loading model" -> Loading, a context-size refusal ->
// ContextExceeded, else Http4xx / Http5xx.
Verdict classify_http_error(int http_status, std::string_view body);

// The stream contract (docs/DESIGN.md §2.1) for a chat request. Content checks
// (marker, strict JSON, tool call, repetition) are the probe's, after this
// answers Clean. `error_body` is the body of a non-2xx answer (else empty).
Verdict classify_chat(TransportEnd end, std::optional<int> http_status, std::string_view error_body,
                      const ChatResult& r, const ChatExpectations& expect);

}  // namespace soak::probes
