// Default client-side limits of one request: the only set. The config's Limits
// (core/config.h) and the transport's HttpRequest (probes/transport/http_types.h)
// both start from these, so a request built without a config is bounded like
// one built from a config that leaves "limits" out.
//
// Requests carry no max_tokens (docs/DESIGN.md §2.2), so these limits are what
// bound them; reaching one is an outcome of its own, never a silent cut.
#pragma once

#include <cstdint>

#include "core/duration.h"

namespace soak {

// A fresh 131K-token prefill on a laptop-class GPU fits, with room to decode.
inline constexpr int64_t kDefaultWallTimeoutMs = 15 * kMinute;
// No content for this long is a stall (a long prefill streams nothing, hence minutes, not seconds).
inline constexpr int64_t kDefaultStallTimeoutMs = 2 * kMinute;
// Runtimes are local or on the LAN, where a connection takes milliseconds; the
// rest is margin for a host busy with a long prefill.
inline constexpr int64_t kDefaultConnectTimeoutMs = 10 * kSecond;
// Body bytes after de-chunking. A probe's answer (even an embeddings batch) is
// far smaller; a runaway stream is cut here and recorded as truncated.
inline constexpr int64_t kDefaultMaxResponseBytes = 8 * 1024 * 1024;

}  // namespace soak
