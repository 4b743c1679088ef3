// Same answers across builds: the golden set's greedy answers of two runs,
// compared prompt by prompt (docs/DESIGN.md §3.13).
//
// Pure: runs in, a comparison out; no clock, no store, no I/O. The daemon (the
// canary against the previous promoted build's stored runs, the soak's end
// against the candidate's own canary runs) and `soakctl equivalence` get the
// same answer from the same runs.
//
// Per prompt: equal or not; the first fork (the first position whose chosen
// tokens differ: ids where both sides have them, else the text pieces); at the
// fork each side's chosen token and its top-1 − top-2 margin in nats; before
// the fork the share of positions whose top-1 agree and the mean top-k KL with
// a tail bucket. The verdict, per run pair:
//   - a fork where either side's margin is above max_fork_margin fails (a
//     changed answer); forks whose margins are both at or below it are near
//     ties: recorded, not failed;
//   - a greedy token that is not its side's top-1 (the top-1 above it by more
//     than max_fork_margin) fails: the sampler is not greedy;
//   - the mean KL over every compared position above
//     max(kl_factor × the noise floor's mean KL, min_kl) fails;
//   - prompts without logprobs on either side (LM Studio, oMLX) are judged on
//     text alone: their rate of differing texts above the noise floor's rate
//     fails.
// The noise floor is the build against itself (its canary's start and end
// runs, compared with the same function); without one the floor is zero.
//
// Thread-agnostic; safe on any thread with its own input.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/config.h"
#include "core/golden.h"

namespace soak {

enum class PromptStatus {
  Equal,        // same tokens (or the same text, without steps)
  NearTie,      // forked where both margins are at or below max_fork_margin: recorded, not failed
  Fork,         // forked with a clear margin on either side: a changed answer
  NotTop1,      // a greedy token below its side's top-1 by more than max_fork_margin
  TextDiffers,  // no logprobs to weigh the difference: counted against the floor's rate
  Missing,      // not answered on both sides: asked and not answered (its row says why), or not asked
};
std::string_view to_string(PromptStatus s);

// A prompt in one run: answered, asked without an answer (a refused, stalled
// or cut request: core/golden.h GoldenAnswer::answered), or not in the run.
enum class Presence { Answered, Unanswered, Absent };
std::string_view to_string(Presence p);

// One side at the fork (or at its first non-top-1 position).
struct ForkSide {
  std::string token;
  std::optional<double> margin;  // top-1 − top-2 in nats; nullopt without two top entries
};

struct PromptComparison {
  std::string prompt_id;
  PromptStatus status = PromptStatus::Equal;
  std::optional<int64_t> fork_index;  // first differing position (a shorter answer ends there)
  ForkSide a, b;                      // a = the reference (baseline, or the earlier run)
  // The first greedy token below its side's top-1 by more than max_fork_margin
  // (status NotTop1), on the reference ('a') or the other run ('b').
  struct NotTop1 {
    char side = 'a';
    int64_t index = 0;
    std::string token;  // what was chosen
    std::string top1;   // what the runtime ranked first
    double gap = 0;     // top-1's logprob − the chosen token's
  };
  std::optional<NotTop1> not_top1;
  Presence in_a = Presence::Answered, in_b = Presence::Answered;  // Missing: which side lacks the answer
  int64_t compared_positions = 0;  // positions before the fork with logprobs on both sides
  double top1_agreement = 1;       // share of those whose top-1 tokens agree
  double kl_sum = 0;               // summed KL(a || b) over those positions
  double mean_kl() const;
};

// The build against itself: its own differences are what the comparison stands on.
struct NoiseFloor {
  int64_t prompts = 0;           // prompts compared
  int64_t text_differences = 0;  // of those, texts that differ (any status but Equal)
  int64_t positions = 0;         // positions with logprobs on both sides
  double mean_kl = 0;            // over those positions
  double text_difference_rate() const;
};

enum class EquivalenceVerdict { Equivalent, NotEquivalent, Insufficient };
std::string_view to_string(EquivalenceVerdict v);

struct EquivalenceResult {
  EquivalenceVerdict verdict = EquivalenceVerdict::Insufficient;
  // Every prompt either run holds (asked, answered or not), in the reference
  // run's order, then b's extras: none is left out, a prompt answered on one
  // side only is Missing.
  std::vector<PromptComparison> prompts;
  int64_t compared() const;  // prompts answered on both sides (every status but Missing)
  int64_t positions = 0;     // compared positions over all prompts
  double mean_kl = 0;
  double kl_threshold = 0;   // max(kl_factor × floor, min_kl)
  int64_t text_prompts = 0;  // prompts judged on text alone
  int64_t text_differences = 0;
  double text_rate_limit = 0;        // the floor's rate of differences
  std::vector<std::string> reasons;  // one line per failing rule, empty when equivalent
  std::string summary() const;       // one line: verdict, counts, KL against its threshold
};

// Which prompts the not-top-1 rule applies to. A runtime that reports its
// logprobs before a grammar constrains the sample (llama-server's
// populate_token_probs reads the raw logits unless post_sampling_probs,
// tools/server/server-context.cpp) shows a constrained answer's token (a tool
// call, a JSON schema: core/golden.h constrained_prompt) below a top-1 the
// grammar had ruled out: that is the grammar, not a sampler that is not greedy.
enum class TopOneRule { AllPrompts, UnconstrainedOnly };

// One prompt's answers compared; `rules` decide Fork against NearTie and
// NotTop1. Missing when either side is not answered.
PromptComparison compare_answers(const GoldenAnswer& a, const GoldenAnswer& b, const EquivalenceSettings& rules,
                                 TopOneRule top1 = TopOneRule::AllPrompts);

// Two runs compared under the rules and the noise floor (nullopt: a floor of
// zero). `a` is the reference: the baseline's run, or the earlier one.
EquivalenceResult compare_runs(const GoldenRun& a, const GoldenRun& b, const EquivalenceSettings& rules,
                               const std::optional<NoiseFloor>& floor, TopOneRule top1 = TopOneRule::AllPrompts);

// The noise floor of two runs of one build (its canary's start and end).
NoiseFloor noise_floor(const GoldenRun& first, const GoldenRun& second, const EquivalenceSettings& rules,
                       TopOneRule top1 = TopOneRule::AllPrompts);

// KL(p || q) over p's top-k tokens plus one tail bucket holding the mass
// neither lists (exposed for tests). A token of p's top-k that q does not list
// gets q's least listed probability, capped by what q left unlisted.
double topk_kl(const std::vector<TokenChoice>& p, const std::vector<TokenChoice>& q);

// "Fork at token 12: \" the\" (margin 0.83) vs \" a\" (margin 0.02)": how explain names a failing prompt.
std::string describe(const PromptComparison& c);

}  // namespace soak
