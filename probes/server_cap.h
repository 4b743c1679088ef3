// A server-side answer cap (docs/DESIGN.md §2.2): an answer that ends with
// finish_reason "length" although the request named no max_tokens was cut by
// the runtime's own default, not by soakd. The one request that names its own
// bound (the golden set's, probes/golden_set.h) is cut by soakd when it reaches
// that bound, and by the runtime when it stops short of it (a full slot). MLX-LM applies --max-tokens (512
// unless started with more) to every request that sends none; llama-server
// applies -n / --n-predict (unlimited by default) and stops anyway when the
// slot's context is full. Such a row is the named failure server_token_cap,
// and its detail says how to lift the cap on that runtime: the advice is the
// runtime's entry's (probes/runtimes/, Runtime::lift_cap).
//
// Pure and thread-agnostic.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/types.h"
#include "probes/openai_chat.h"

namespace soak::probes {

// Whether the request named its own token limit. soakd's chat builders never
// do (probes/requests.h), so every finish_reason "length" they see is the
// server's; the golden set's greedy request sends max_tokens
// (kGoldenMaxTokens), and an answer that reached it was cut by soakd.
enum class RequestLimit { None, Sent };

// A runtime's advice on lifting its cap, given what the cut answer showed
// (its entry's Runtime::lift_cap): "MLX-LM caps answers at 512 tokens: start
// mlx_lm.server with --max-tokens 32768".
using LiftCap = std::string (*)(int64_t completion_tokens, std::optional<int64_t> prompt_tokens,
                                std::optional<int64_t> slot_ctx);

struct ServerCapContext {
  LiftCap lift = nullptr;  // the runtime's advice; nullptr: soakd knows none for it
  RequestLimit request_limit = RequestLimit::None;
  int64_t request_max_tokens = 0;   // Sent: the bound the request named (0: unknown, any "length" is soakd's)
  std::optional<int64_t> slot_ctx;  // llama.cpp /props default_generation_settings.n_ctx (per slot)
};

// What the advice suggests instead: room for a long thinking answer.
inline constexpr int64_t kSuggestedServerMaxTokens = 32768;

// ServerTokenCap when `r` finished with "length" on a request without a limit,
// or before the limit the request named; nullopt otherwise (a natural stop, a
// tool call, an answer that ran to the request's own limit).
std::optional<Verdict> classify_server_cap(const ChatResult& r, const ServerCapContext& c);

// The answer's completion tokens: usage, else the tokens that arrived.
int64_t completion_tokens_of(const ChatResult& r);

// `lift`'s advice, or soakd's generic one when the runtime has none.
std::string lift_server_cap(LiftCap lift, int64_t completion_tokens, std::optional<int64_t> prompt_tokens,
                            std::optional<int64_t> slot_ctx);

}  // namespace soak::probes
