#include "probes/server_cap.h"

#include "probes/runtimes/runtime.h"

namespace soak::probes {
namespace {

std::string n(int64_t v) { return std::to_string(v); }

}  // namespace

std::string lift_server_cap(RuntimeKind runtime, int64_t tokens, std::optional<int64_t> prompt_tokens,
                            std::optional<int64_t> slot_ctx) {
  const std::string suggested = n(kSuggestedServerMaxTokens);
  switch (runtime) {
    case RuntimeKind::MlxLm:
      // mlx_lm/server.py: max_tokens = the request's, else cli_args.max_tokens (--max-tokens, default 512).
      // The default the adapter knows (--max-tokens 512), or a value it was started with.
      if (tokens == runtime_traits(RuntimeKind::MlxLm).default_max_tokens)
        return "MLX-LM caps answers at " + n(tokens) + " tokens: start mlx_lm.server with --max-tokens " + suggested;
      return "mlx_lm.server was started with --max-tokens " + n(tokens) + ": start it with --max-tokens " +
             (tokens < kSuggestedServerMaxTokens ? suggested : "above " + n(tokens));
    case RuntimeKind::LlamaCpp:
      // tools/server/server-context.cpp: a slot stops with STOP_TYPE_LIMIT when its
      // context is full (prompt + answer + 1 >= n_ctx, without context shift) or when
      // n_decoded reaches -n (params_base.n_predict; -1, the default, is unlimited).
      if (slot_ctx && prompt_tokens && *prompt_tokens + tokens + 1 >= *slot_ctx)
        return "llama-server's slot context is full (n_ctx " + n(*slot_ctx) + " per slot: " + n(*prompt_tokens) +
               " prompt + " + n(tokens) + " answer tokens): start it with a larger -c (shared by its --parallel slots)";
      return "llama-server was started with -n " + n(tokens) + ": start it without -n or with -n -1";
    case RuntimeKind::Omlx:
      // oMLX SamplingDefaults.max_tokens applies when the request sends none.
      return "oMLX caps answers at its max_tokens setting (" + n(*runtime_traits(RuntimeKind::Omlx).default_max_tokens) +
             " unless changed; this one stopped at " + n(tokens) + "): raise max_tokens in oMLX's model settings";
    case RuntimeKind::Vllm:
      // vllm/entrypoints/openai serving_chat.py: default_max_tokens = max_model_len - prompt,
      // lowered by max_new_tokens from the model's generation_config.json (--generation-config auto).
      return "vLLM stopped the answer at " + n(tokens) +
             " tokens: without max_tokens it allows --max-model-len minus the prompt, or the model's "
             "generation_config.json max_new_tokens: raise --max-model-len or start it with --generation-config vllm";
    case RuntimeKind::RapidMlx:
      return "Rapid-MLX stopped the answer at " + n(tokens) +
             " tokens with its server default: start it with a larger --max-tokens";
    case RuntimeKind::Ollama:
      return "Ollama stopped the answer at " + n(tokens) +
             " tokens: the model's num_predict caps it; set PARAMETER num_predict -1 in its Modelfile";
    case RuntimeKind::LmStudio:
      return "LM Studio stopped the answer at " + n(tokens) +
             " tokens: turn off the model's response length limit in its settings";
    case RuntimeKind::OpenAI: break;
  }
  return "the server stopped the answer at " + n(tokens) +
         " tokens with its own default limit (soakd does not know this runtime's): raise its server-side max tokens";
}

std::optional<Verdict> classify_server_cap(const ChatResult& r, const ServerCapContext& c) {
  if (c.request_limit == RequestLimit::Sent || r.finish_reason != "length") return std::nullopt;
  const int64_t tokens = r.usage && r.usage->completion_tokens ? *r.usage->completion_tokens
                                                               : static_cast<int64_t>(r.token_arrivals_ns.size());
  const std::optional<int64_t> prompt = r.usage ? r.usage->prompt_tokens : std::nullopt;
  return Verdict{Outcome::ServerTokenCap, lift_server_cap(c.runtime, tokens, prompt, c.slot_ctx) +
                                              " (finish_reason length after " + n(tokens) +
                                              " completion tokens; soakd sent no max_tokens)"};
}

}  // namespace soak::probes
