// Request bodies for every probe kind (docs/DESIGN.md §2): what soakd sends, byte
// for byte. Pure builders; the runner sends the body to `path` on the
// candidate's base URL.
//
// Rules the builders embody:
// - No max_tokens / max_completion_tokens in any chat probe (docs/DESIGN.md §2.2:
//   mlx-lm silently caps at 512 otherwise). Client-side limits bound them.
// - Streaming chat probes always ask for the usage chunk
//   (stream_options.include_usage): every runtime sends it only when asked.
// - Sampling is recorded, not tuned: temperature/top_p/top_k come from the
//   candidate's soak::Sampling (defaults 0.6 / 0.95 / 20).
// - Thinking is per probe: chat_template_kwargs.enable_thinking is sent only
//   when the probe sets it.
// - Streams to llama.cpp ask for prefill progress ("return_progress": true):
//   its prompt_progress chunks let the stall clock tell a long prefill from a
//   hang (docs/DESIGN.md §2.2); they are not content.
// Bodies are serialized with a fixed key order so the same inputs give the
// same bytes (an exact repeat is an exact repeat on the wire too).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/types.h"
#include "probes/prompts.h"
#include "probes/validators.h"

namespace soak::probes {

inline constexpr std::string_view kChatCompletionsPath = "/v1/chat/completions";
inline constexpr std::string_view kEmbeddingsPath = "/v1/embeddings";
inline constexpr std::string_view kRerankPath = "/v1/rerank";

enum class Streaming { On, Off };
enum class Thinking { On, Off };

// How a runtime takes a chat request: its dialect (each runtime's entry in
// probes/runtimes/ says which).
enum class ToolChoice { Supported, Unsupported };
// How a runtime reports prefill progress on a stream before the first token
// (probes/prefill_progress.h): the stall clock counts a report that read
// further as progress (docs/DESIGN.md §2.2).
enum class PrefillReports {
  None,
  KeepaliveComments,     // MLX-LM `: keepalive <processed>/<total>`, unasked
  PromptProgressChunks,  // llama.cpp `prompt_progress` chunks, when the request sets "return_progress": true
};
enum class ThinkingSwitch {
  ChatTemplateKwargs,  // chat_template_kwargs.enable_thinking (llama.cpp, vLLM, MLX-LM, oMLX, Rapid-MLX, LM Studio)
  ReasoningEffort,     // reasoning_effort "none" turns it off (Ollama openai/openai.go; no chat_template_kwargs)
};
enum class TopK {
  Sent,
  Dropped,  // not a field of the runtime's OpenAI request: not sent, recorded as not applied
};

// Whether a chat answer carries per-token logprobs when asked ("logprobs": true,
// "top_logprobs": k; OpenAI's shape, choices[0].logprobs.content[]), and the
// runtime's prompt-cache switch: the golden set's greedy answers
// (probes/golden_set.h) ask for both the same way on every run.
enum class Logprobs { TopLogprobs, None };
// Where a runtime's logprobs come from when a grammar constrains the sample (a
// tool call, a JSON schema): after it (the sampler's own candidates), or before
// it (the raw logits; llama-server's populate_token_probs unless
// post_sampling_probs, tools/server/server-context.cpp), when a constrained
// answer's token may rank below a top-1 the grammar ruled out.
enum class GrammarLogprobs { AfterGrammar, BeforeGrammar };
enum class PromptCacheSwitch {
  None,
  CachePromptField,  // "cache_prompt": false (llama.cpp: results may differ with the cache on)
};

struct RequestDialect {
  ToolChoice tool_choice = ToolChoice::Supported;
  // llama.cpp streams report prefill progress only when asked.
  PrefillReports prefill_reports = PrefillReports::None;
  ThinkingSwitch thinking_switch = ThinkingSwitch::ChatTemplateKwargs;
  TopK top_k = TopK::Sent;
  // Where chat probes POST: the OpenAI route, or the runtime's own where only
  // that one reports its figures (LM Studio /api/v0: `stats`).
  std::string_view chat_path = kChatCompletionsPath;
  Logprobs logprobs = Logprobs::TopLogprobs;
  GrammarLogprobs grammar_logprobs = GrammarLogprobs::AfterGrammar;
  PromptCacheSwitch prompt_cache = PromptCacheSwitch::None;
};

struct ChatRequestOptions {
  std::string model;  // the request's `model` (the runtime's name for the candidate)
  Sampling sampling;
  Streaming streaming = Streaming::On;
  std::optional<Thinking> thinking;  // sets chat_template_kwargs.enable_thinking when present
  RequestDialect dialect;            // from the runtime's entry
};

struct BuiltRequest {
  ProbeKind kind = ProbeKind::Marker;
  std::string path;  // e.g. "/v1/chat/completions"
  std::string body;  // JSON, exactly as sent
  Streaming streaming = Streaming::Off;
  std::optional<bool> thinking;  // enable_thinking as sent (ProbeResult::thinking)
  // Sampling::to_json() (ProbeResult::sampling_json), plus "not_applied": the
  // settings the runtime's dialect has no field for, so they were not sent.
  std::string sampling_json;
  // The token bound the body names (max_tokens): none for every probe here;
  // only the golden set's greedy request sends one (probes/golden_set.h), and
  // an answer that reaches it was cut by soakd, not by the runtime.
  std::optional<int64_t> max_tokens;
};

// The common head of every chat body (model, messages, sampling, streaming,
// thinking; never max_tokens) and the request made of a finished body: what
// every builder here and in golden_set.h uses.
nlohmann::ordered_json chat_body(const ChatRequestOptions& o, nlohmann::ordered_json messages);
BuiltRequest built_request(ProbeKind kind, const ChatRequestOptions& o, const nlohmann::ordered_json& body);

// ---------------------------------------------------------------- functional

// Short prompt whose answer must contain `marker` exactly.
BuiltRequest marker_request(const ChatRequestOptions& o, std::string_view marker);

// Stream lifecycle: a short answer, checked for [DONE], finish_reason and usage.
BuiltRequest stream_request(const ChatRequestOptions& o);

// Strict JSON under response_format json_schema; validate with strict_json_schema().
BuiltRequest strict_json_request(const ChatRequestOptions& o);
const nlohmann::json& strict_json_schema();

// A tool with a required object argument; validate with tool_probe_expectation().
// tool_choice "required" is sent only where the runtime supports tool_choice.
BuiltRequest tool_call_request(const ChatRequestOptions& o);
const ToolExpectation& tool_probe_expectation();
// The request's "tools" array that offers tool_probe_expectation()'s tool (the tool-call
// probe, the agent session and the golden set send the same one).
nlohmann::ordered_json tool_probe_tools();

// Thinking on/off: a question with a known answer (kThinkingExpectedAnswer).
inline constexpr std::string_view kThinkingExpectedAnswer = "391";
BuiltRequest thinking_request(ChatRequestOptions o, Thinking thinking);

// Ordinary open-ended writing, judged by the repetition detector.
BuiltRequest repetition_request(const ChatRequestOptions& o);

// ---------------------------------------------------------------- load

// Fresh: pass a new nonce. Exact repeat: pass the previous request's nonce.
BuiltRequest long_context_request(const ChatRequestOptions& o, const PromptFixture& f, std::string_view nonce);

// The shared ~7 KB system prompt of a session (one nonce per session) and the
// session's changing user turn.
BuiltRequest shared_prefix_request(const ChatRequestOptions& o, uint64_t seed, std::string_view session_nonce,
                                   int64_t turn);

// One turn of an agent session (probes/session.h): the whole conversation,
// the tools offered, and tool_choice "required" on a turn that needs a call
// (where the runtime supports tool_choice; else left to the model).
BuiltRequest session_request(const ChatRequestOptions& o, nlohmann::ordered_json messages,
                             const nlohmann::ordered_json& tools, bool tool_required);

// One of N requests released together; each carries its own nonce so no two
// members of a burst share a cached prefix.
BuiltRequest burst_request(const ChatRequestOptions& o, int index, std::string_view nonce);

// A long generation the runner aborts mid-stream, then checks the slot freed.
BuiltRequest cancel_request(const ChatRequestOptions& o, std::string_view nonce);

// ---------------------------------------------------------------- pooling routes

BuiltRequest embeddings_request(std::string_view model, const std::vector<std::string>& inputs);
BuiltRequest rerank_request(std::string_view model, std::string_view query, const std::vector<std::string>& documents);

}  // namespace soak::probes
