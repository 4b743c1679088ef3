// What every chat answer is judged on, whatever its probe (docs/DESIGN.md §2.1,
// "Every answer is read"): once the stream contract passed, before the probe's
// own content check.
//
//   1. a loop: the repetition detector runs on every answer (content, else
//      reasoning), agent turns and soak traffic included (S0:85, S1:214: the
//      long-session loops a soak exists to catch), not only on the canary's
//      repetition probe; a looping answer is `repetition` whatever stopped it;
//   2. an empty answer: a probe that expects text and got no answer content
//      and no tool call is `empty_answer`, with or without finish_reason and
//      usage. Reasoning alone is not an answer: a runtime that puts the whole
//      reply in `reasoning_content` answered nothing an agent can use.
//
// Every answer's row carries the detector's figure in extra_json
// (`loop_run_chars`, `loop_tail_chars`), so a loop that stays under the
// threshold is still visible. Pure; thread-agnostic; never throws.
#pragma once

#include <optional>
#include <string>

#include "probes/openai_chat.h"
#include "probes/validators.h"

namespace soak::probes {

// The repetition report of an answer: its content, else its reasoning.
RepetitionReport answer_repetition(const ChatResult& r);

// A loop, or an empty answer where one was expected; nullopt when the answer
// passes both (the probe's own check follows).
std::optional<Verdict> check_answer(const ChatResult& r, const RepetitionReport& rep, bool expects_answer);

// `extra_json` (an object, or empty) with the loop figure added.
std::string with_loop_figure(const std::string& extra_json, const RepetitionReport& rep);

// The long-context answer must contain the code word its prompt asked for
// (S4:208: an MLX MTP path that broke long context gave empty output, 75 %
// valid). MissingMarker, naming the code word.
Verdict check_code_word(const ChatResult& r, const std::string& code_word);

}  // namespace soak::probes
