// Logprobs for the golden set's greedy answers (docs/DESIGN.md §3.13), and the
// builds that change them: knob `answers` (--answers, /fake/control
// {"answers": ...}).
//
//   steady       every position sure of its token (top-1 at -0.05 nats, the
//                runner-up 3.15 nats below), except position kTiePosition: a
//                near tie (0.49 vs 0.47, a margin of 0.04 nats)
//   changed      prompts that ask for an answer "as JSON" get another token at
//                kChangedPosition, where steady was sure: a clear fork
//   near-tie     every answer takes the runner-up of steady's near tie: forks
//                whose margins are both within 0.1 nats
//   no-logprobs  answers without logprobs (as LM Studio and oMLX): text only
//   not-top1     the same tokens as steady, but the logprobs rank another token
//                first at kNotTop1Position (2.4 nats above the one chosen)
//   looping      prose answers (not a tool call, not a JSON document) repeat
//                their first kLoopUnitPieces pieces and never stop: they run
//                to the request's max_tokens (else the server's cap, else
//                kLoopCeilingPieces) and end with finish_reason "length", as a
//                greedy model caught in a loop does (the tiny random-weight
//                model's greedy answers loop within 256 tokens on 9 of the 32
//                golden prompts); steady's logprobs
//
// The shape is llama-server's non-streamed chat answer: choices[0].logprobs
// .content[] of {id, token, bytes, logprob, top_logprobs[{id, token, bytes,
// logprob}]} (tools/server/server-task.cpp probs_vector_to_json). Pure.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/fake_runtime/text_model.h"

namespace soak::fake {

enum class AnswerMode { Steady, Changed, NearTie, NoLogprobs, NotTop1, Looping };
std::optional<AnswerMode> parse_answer_mode(std::string_view s);  // "" is steady
std::string answer_mode_names();

inline constexpr size_t kChangedPosition = 1;
inline constexpr size_t kTiePosition = 2;
inline constexpr size_t kNotTop1Position = 3;
inline constexpr size_t kLoopUnitPieces = 5;
inline constexpr int kLoopCeilingPieces = 1024;

// The answer's pieces as the mode has them (changed and near-tie replace one,
// looping repeats a unit up to `limit`, the request's or the server's token
// limit); the responder shapes greedy requests' answers only (the golden set's).
void shape_answer(AnswerMode m, std::string_view prompt, ReplyPlan& plan, std::optional<int> limit);
// choices[0].logprobs for the answer's content and tool-call pieces, with
// `top_k` alternatives a position; nullopt in no-logprobs mode.
std::optional<nlohmann::ordered_json> answer_logprobs(AnswerMode m, std::string_view prompt,
                                                      const std::vector<Piece>& pieces, int top_k);

}  // namespace soak::fake
