// Prompt fixtures (docs/DESIGN.md §2.3, §2.9): deterministic, public text generated
// from a seed with a fixed built-in word list and splitmix64 — never a system
// random source — so the same fixture is the same bytes on every host and in
// every release that keeps kFixtureGeneratorVersion.
//
// Sizing: a fixture is a number of words; its token count is first estimated
// (kTokensPerWordEstimate) and then refined with the runtime's own /tokenize
// counts via adjust_to_measured(), a pure step the runner repeats until the
// count is within tolerance. The real usage.prompt_tokens is what rows record.
//
// Caching: a fresh prompt starts with a nonce line, so no prefix cache can
// serve any of it; an exact repeat re-sends the same bytes (same fixture, same
// nonce). The fixture hash identifies the text without the nonce, so fresh and
// repeat rows of one fixture share it while their cache_state tells them apart.
//
// Everything here is pure and thread-agnostic; NonceSource is a value type owned
// by whoever issues fresh prompts (one per daemon run, seeded by its caller).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/types.h"

namespace soak::probes {

inline constexpr int kFixtureGeneratorVersion = 1;                // bump when generated text changes
inline constexpr uint64_t kDefaultFixtureSeed = 0x736f616b64ULL;  // "soakd"
// Common English words average a little over one BPE token each once
// punctuation is counted; /tokenize corrects the rest.
inline constexpr double kTokensPerWordEstimate = 1.3;
inline constexpr double kSizeTolerance = 0.02;          // within 2 % of the target...
inline constexpr int64_t kSizeToleranceMinTokens = 16;  // ...or 16 tokens, whichever is larger
inline constexpr size_t kSharedSystemPromptBytes = 7 * 1024;

// splitmix64 (Steele, Lea, Flood 2014): advances `state`, returns the next value.
uint64_t splitmix64(uint64_t& state);

// Deterministic filler: `words` words from the built-in list drawn with
// splitmix64(seed), in sentences and paragraphs. The same (seed, words) always
// yields the same bytes; a longer text extends a shorter one.
std::string filler_text(uint64_t seed, int64_t words);

struct PromptFixture {
  std::string name;  // e.g. "long_context/32768"
  uint64_t seed = kDefaultFixtureSeed;
  int64_t target_tokens = 0;
  int64_t words = 0;  // filler words in the body
  std::string body;   // the prompt without its nonce line
  std::string hash;   // hash of `body` (core/hash.h); identifies the fixture
};

// A long-context fixture of about `target_tokens` tokens: filler, then one
// instruction asking for a short reply that contains a marker.
PromptFixture long_context_fixture(int64_t target_tokens, uint64_t seed = kDefaultFixtureSeed);
// The same fixture with `words` filler words: what a sized fixture is rebuilt
// from (the same target, seed and words give the same body and hash).
PromptFixture long_context_fixture_of_words(int64_t target_tokens, uint64_t seed, int64_t words);

// The word count a first candidate uses for a target, before any measurement.
int64_t estimate_words(int64_t target_tokens);
// The fixture's size in tokens as estimated from its words (what a runtime
// without /tokenize is assumed to count).
int64_t estimated_tokens(const PromptFixture& f);
bool within_size_tolerance(int64_t target_tokens, int64_t measured_tokens);
// Given the tokens the runtime counted for `f`, the fixture re-sized toward
// f.target_tokens (the same fixture when already within tolerance).
PromptFixture adjust_to_measured(const PromptFixture& f, int64_t measured_tokens);

// The marker a long-context fixture asks for (derived from its seed and size).
std::string fixture_marker(const PromptFixture& f);

// Fresh nonces: unique per issued prompt, reproducible from the source's seed.
class NonceSource {
 public:
  explicit NonceSource(uint64_t seed) : state_(seed) {}
  std::string next();  // 16 lowercase hex digits

 private:
  uint64_t state_;
};

// The full prompt: a nonce line, then the body. Called again with the same
// nonce it returns the same bytes — that is the exact repeat.
std::string prompt_with_nonce(const PromptFixture& f, std::string_view nonce);

// ---------------------------------------------------------------- short prompts

// "WORD-1234": a marker no model can guess, derived from `seed`.
std::string make_marker(uint64_t seed);
std::string marker_prompt(std::string_view marker);

// ---------------------------------------------------------------- shared prefix / agent

// About kSharedSystemPromptBytes of agent instructions and project notes,
// starting with the nonce line (one nonce per shared-prefix session: the first
// request is cold, the following ones reuse the prefix). Hash it without the
// nonce with shared_system_prompt_hash().
std::string shared_system_prompt(uint64_t seed, std::string_view nonce);
std::string shared_system_prompt_hash(uint64_t seed);
// The changing user turn `turn` of a session (short, different every turn).
std::string user_turn(uint64_t seed, int64_t turn);

// ---------------------------------------------------------------- workload ids

// "<kind>[/<size>][/<cache_state>][/<variant>]", e.g. "long_context/32768/fresh",
// "burst/8", "thinking/on". Rows of different workload ids are never pooled.
std::string workload_id(ProbeKind kind, std::optional<int64_t> size = std::nullopt, CacheState cache = CacheState::None,
                        std::string_view variant = {});

}  // namespace soak::probes
