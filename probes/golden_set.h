// The golden set (docs/DESIGN.md §3.13): fixed prompts whose greedy answers
// are compared across builds, the bytes that ask for them, and the reading of
// an answer's per-token logprobs.
//
// The prompts are generated from the fixture seed with the prompt generator's
// splitmix64 (probes/prompts.h): no data is downloaded, and the same seed
// gives the same set on every host. Kinds: short factual, code, a tool call, a
// JSON-schema answer, and prompts at 2K and 8K context; each asks for about 64
// output tokens in words.
//
// Sent greedy: temperature 0, top_p 1, top_k 1 where the runtime takes top_k,
// a fixed seed, thinking off, not streamed, the runtime's prompt cache off
// where it has the switch, the same logprob fields on every run where it
// gives logprobs (its entry's RequestDialect says which), and soakd's own
// bound, max_tokens kGoldenMaxTokens: the one request that names one (every
// other probe leaves its answer to the client's limits, docs/DESIGN.md §2.2).
// A greedy answer may never stop (a model that loops, random weights that
// never sample EOS); unbounded, it runs into the slot's context, minutes of
// an answer that is compared on its first kGoldenMaxSteps tokens only, and a
// non-streamed answer that long outlasts the stall timeout. An answer that
// reaches the bound was cut by soakd, not by the runtime (probes/server_cap.h),
// and is stored whole: every token it has is a stored step.
//
// Pure and thread-agnostic.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/golden.h"
#include "probes/prompts.h"
#include "probes/requests.h"

namespace soak::probes {

inline constexpr int kGoldenFactual = 12;
inline constexpr int kGoldenCode = 8;
inline constexpr int kGoldenToolCall = 4;
inline constexpr int kGoldenJsonSchema = 4;
inline constexpr int kGoldenContext2K = 2;
inline constexpr int kGoldenContext8K = 2;
inline constexpr int kGoldenSetSize =
    kGoldenFactual + kGoldenCode + kGoldenToolCall + kGoldenJsonSchema + kGoldenContext2K + kGoldenContext8K;
inline constexpr int kGoldenAnswerWords = 45;  // about 64 tokens of English at ~1.4 tokens a word
inline constexpr int kGoldenTopLogprobs = 5;   // every runtime that gives logprobs allows 5 (mlx-lm: up to 11)
inline constexpr int64_t kGoldenSamplingSeed = 1234;
// Steps kept per answer: a model that ignores the length asked for is still
// compared on its first positions (and on its whole text's hash).
inline constexpr size_t kGoldenMaxSteps = 256;
// The bound the golden request sends (max_tokens): four times the length
// asked for, and no more than the steps stored, so an answer cut there is
// stored token for token.
inline constexpr int64_t kGoldenMaxTokens = static_cast<int64_t>(kGoldenMaxSteps);
inline constexpr int64_t kGoldenContextSmall = 2048;
inline constexpr int64_t kGoldenContextLarge = 8192;

enum class GoldenKind { Factual, Code, ToolCall, JsonSchema, Context };
std::string_view to_string(GoldenKind k);

struct GoldenPrompt {
  std::string id;  // "factual/03", "context/8192/1": stable across releases of one generator version
  GoldenKind kind = GoldenKind::Factual;
  std::string text;            // the user message
  int64_t context_tokens = 0;  // Context: the filler's target size
};

// The set for `seed`, always kGoldenSetSize prompts in one order.
std::vector<GoldenPrompt> golden_set(uint64_t seed = kDefaultFixtureSeed);
// The hash identifying the set (its prompts' ids and texts): stored with each
// run so that runs of different sets are never compared.
std::string golden_set_hash(const std::vector<GoldenPrompt>& set);

// The greedy request for one prompt; kind Equivalence, not streamed, bounded
// at kGoldenMaxTokens (BuiltRequest::max_tokens says so).
BuiltRequest golden_request(const ChatRequestOptions& o, const GoldenPrompt& p);

// One answer read from a non-streamed chat body: the text (content, or the
// tool calls' names and arguments) hashed, and choices[0].logprobs.content[]
// read into steps (ids where the runtime gives them, top-k sorted, at most
// kGoldenMaxSteps). No logprobs in the body: the text's hash alone.
// nullopt when the body has no choices[0].message.
std::optional<GoldenAnswer> read_golden_answer(const nlohmann::json& body, std::string_view prompt_id);

}  // namespace soak::probes
