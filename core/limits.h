// Default client-side limits of one request: the only set. The config's Limits
// (core/config.h) and the transport's HttpRequest (probes/transport/http_types.h)
// both start from these, so a request built without a config is bounded like
// one built from a config that leaves "limits" out.
//
// Requests carry no max_tokens (docs/DESIGN.md §2.2), so these limits are what
// bound them; reaching one is an outcome of its own, never a silent cut.
#pragma once

#include <cmath>
#include <cstdint>

#include "core/duration.h"

namespace soak {

// No content for this long is a stall. Before the first content a prompt's
// prefill allowance comes on top (below), so this only has to cover a short
// prompt's queue and prefill and the longest pause between two tokens.
inline constexpr int64_t kDefaultStallTimeoutMs = 2 * kMinute;
// The slowest fresh prefill soakd waits for without progress reports, in
// prompt tokens per second: before the first content the stall budget is
// stall_timeout + prompt_tokens / this (docs/DESIGN.md §2.2). The slowest
// rate in the field reports is 133 tok/s (a 27B on MLX-LM: 65,538 tokens in
// 494.2 s); 100 tok/s leaves a quarter below it, so that run gets
// 2 min + 655 s = 775 s, and MLX-LM's 100K in 160 s and 131K in 235 s get
// 1,120 s and 1,431 s. A runtime that reports progress (MLX-LM keep-alive
// counts, llama.cpp prompt_progress) is not bound by it.
inline constexpr double kDefaultPrefillFloorTps = 100.0;
// The wall limit must not cut a budget the stall rule grants: the largest
// default long-context size (131,072 tokens) may take 2 min + 1,311 s =
// 23 min 51 s to its first token at the floor rate, and 30 min leaves it
// six minutes to answer.
inline constexpr int64_t kDefaultWallTimeoutMs = 30 * kMinute;
// Liveness (docs/DESIGN.md §3.4): nothing served of a candidate's inference
// requests for longer than this while some are outstanding rejects the stage
// (or for longer than the largest silent budget among them, stall timeout plus
// prefill allowance, when that is longer). Longer than a stall timeout: a
// request may wait legitimately in the runtime's queue behind another
// client's work, and a queue that moves counts as served; five minutes of no
// answer and no movement at all is a runtime that stopped serving.
inline constexpr int64_t kDefaultUnservedTimeoutMs = 5 * kMinute;
// Runtimes are local or on the LAN, where a connection takes milliseconds; the
// rest is margin for a host busy with a long prefill.
inline constexpr int64_t kDefaultConnectTimeoutMs = 10 * kSecond;
// Body bytes after de-chunking. A probe's answer (even an embeddings batch) is
// far smaller; a runaway stream is cut here and recorded as truncated.
inline constexpr int64_t kDefaultMaxResponseBytes = 8 * 1024 * 1024;

// Before the first content, how long a prompt of `prompt_tokens` may take to
// be read at no less than `floor_tps` tokens per second: prompt_tokens /
// floor_tps in whole ms, rounded up; 0 when either is not positive. The stall
// budget is the stall timeout plus this (probes/transport/deadline.h).
inline int64_t prefill_allowance_ms(int64_t prompt_tokens, double floor_tps) {
  if (prompt_tokens <= 0 || !(floor_tps > 0)) return 0;
  return static_cast<int64_t>(std::ceil(static_cast<double>(prompt_tokens) * 1000.0 / floor_tps));
}

}  // namespace soak
