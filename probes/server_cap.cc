#include "probes/server_cap.h"

namespace soak::probes {

std::string lift_server_cap(LiftCap lift, int64_t tokens, std::optional<int64_t> prompt_tokens,
                            std::optional<int64_t> slot_ctx) {
  if (lift) return lift(tokens, prompt_tokens, slot_ctx);
  return "the server stopped the answer at " + std::to_string(tokens) +
         " tokens with its own default limit (soakd does not know this runtime's): raise its server-side max tokens";
}

int64_t completion_tokens_of(const ChatResult& r) {
  return r.usage && r.usage->completion_tokens ? *r.usage->completion_tokens
                                               : static_cast<int64_t>(r.token_arrivals_ns.size());
}

std::optional<Verdict> classify_server_cap(const ChatResult& r, const ServerCapContext& c) {
  if (r.finish_reason != "length") return std::nullopt;
  const int64_t tokens = completion_tokens_of(r);
  const bool sent = c.request_limit == RequestLimit::Sent;
  // soakd's own bound: the answer ran as far as soakd let it.
  if (sent && (c.request_max_tokens <= 0 || tokens >= c.request_max_tokens)) return std::nullopt;
  const std::optional<int64_t> prompt = r.usage ? r.usage->prompt_tokens : std::nullopt;
  return Verdict{Outcome::ServerTokenCap, lift_server_cap(c.lift, tokens, prompt, c.slot_ctx) +
                                              " (finish_reason length after " + std::to_string(tokens) +
                                              " completion tokens; " +
                                              (sent ? "soakd asked for at most " + std::to_string(c.request_max_tokens)
                                                    : std::string("soakd sent no max_tokens")) +
                                              ")"};
}

}  // namespace soak::probes
