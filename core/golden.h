// A golden answer: one prompt's greedy answer in one run, token by token with
// the runtime's top-k logprobs where it gives them (docs/DESIGN.md §3.13).
// Plain values shared by the probe that reads them (probes/golden_set.h), the
// store that keeps them (storage/) and the judge that compares them
// (judges/equivalence.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace soak {

// One of the runtime's most likely tokens at a position, natural-log probability.
struct TokenChoice {
  std::string token;
  std::optional<int64_t> id;
  double logprob = 0;
  bool operator==(const TokenChoice&) const = default;
};

// One generated position: the chosen token, and the runtime's top-k at it
// (empty when it gives no logprobs). `top` is kept sorted most likely first
// (sort_top() does it: mlx-lm's head comes from an unsorted argpartition).
struct TokenStep {
  TokenChoice chosen;
  std::vector<TokenChoice> top;
  bool operator==(const TokenStep&) const = default;
};
void sort_top(TokenStep& s);

// Whether an answer's steps carry logprobs: the runtime's shape, not a guess.
enum class LogprobShape { None, TopK };
std::string_view to_string(LogprobShape s);

// A golden prompt's id is "<kind>/<n>" (probes/golden_set.h); these kinds
// constrain the answer (a tool call's arguments, a JSON schema): the runtime
// may sample under a grammar its logprobs do not show.
inline constexpr std::string_view kGoldenToolCallKind = "tool_call";
inline constexpr std::string_view kGoldenJsonSchemaKind = "json_schema";
bool constrained_prompt(std::string_view prompt_id);

// One golden prompt's greedy answer in one run. Every prompt a run asked is
// stored, answered or not: an answer the runtime returned keeps its text hash
// and its tokens up to where it stopped, whatever its row's outcome (a loop,
// a cap, leaked markup: the row says, the answer rules judge it); a prompt
// whose request brought no answer (refused, stalled, cut by soakd: its row
// says how) is stored with an empty text hash and no steps, so that a
// comparison counts it as missing instead of never seeing it.
struct GoldenAnswer {
  std::string prompt_id;
  std::string text_hash;  // the answer text's hash (core/hash.h); empty: asked, not answered
  LogprobShape logprobs = LogprobShape::None;
  std::vector<TokenStep> steps;  // the token pieces in order (empty: only the hash is known)
  bool answered() const { return !text_hash.empty(); }
  bool operator==(const GoldenAnswer&) const = default;
};
// A prompt asked whose request brought no answer.
GoldenAnswer unanswered_golden(std::string_view prompt_id);

// One run of the golden set: what `soakd probe --kind equivalence` stores.
struct GoldenRun {
  std::vector<GoldenAnswer> answers;
};

// One stored golden answer (table golden_answers): which run of which
// candidate asked which prompt, and what came back.
struct GoldenAnswerRow {
  int64_t id = 0;  // assigned by the store
  int64_t candidate_id = 0;
  std::optional<int64_t> stage_id{};
  int64_t wall_ms = 0;
  std::string run{};       // one run of the set: the id its step drew, shared by its answers
  std::string set_hash{};  // the set asked (probes/golden_set.h golden_set_hash): runs of two sets never compare
  std::string prompt_id{};
  std::string text_hash{};  // empty: the prompt was asked and not answered (GoldenAnswer::answered)
  LogprobShape logprobs = LogprobShape::None;
  std::string steps{};  // encode_steps()
};
std::optional<LogprobShape> parse_logprob_shape(std::string_view s);
std::string logprob_shape_names();

// A stored run: its answers, in the order they were stored.
struct StoredGoldenRun {
  std::string run;
  std::optional<int64_t> stage_id;
  int64_t wall_ms = 0;  // its first answer's
  std::string set_hash;
  GoldenRun answers;
};
// Rows (in id order) grouped into runs, oldest first; an answer whose steps do
// not decode keeps its text hash only.
std::vector<StoredGoldenRun> group_golden_runs(const std::vector<GoldenAnswerRow>& rows);
GoldenAnswerRow golden_row(const GoldenAnswer& a);  // the answer's columns (the caller sets the locators)

// ---- the stored form ------------------------------------------------------------
// An answer's steps as the store keeps them: compact JSON, each distinct token
// once ("t": pieces, "i": ids or null), each step [chosen, logprob, top...]
// with logprobs as integers of kLogprobStoredScale (1e-4 nats: margins and KL
// are read to far finer than the 0.1-nat threshold) and token indexes into the
// table. Under 10 KB per 64-token answer with its top-5 (9.5 KB when every
// alternative is a token of its own).
inline constexpr double kLogprobStoredScale = 10'000;
// A logprob below this is stored as this: llama-server writes a probability of
// 0 as the float's lowest value (server-task.cpp completion_token_output::logarithm).
inline constexpr double kLowestStoredLogprob = -100;
std::string encode_steps(const std::vector<TokenStep>& steps);
// nullopt when `text` is not what encode_steps() writes.
std::optional<std::vector<TokenStep>> decode_steps(std::string_view text);

}  // namespace soak
