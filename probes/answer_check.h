// What every chat answer is judged on, whatever its probe (docs/DESIGN.md §2.1,
// "Every answer is read"): once the stream contract passed, before the probe's
// own content check.
//
//   1. hygiene: answer content that carries reasoning markup (`<think>`,
//      `</think>`), a harmony header (`<|channel|>`, `<|start|>`,
//      `<|message|>`, `<|end|>`, ...), a chat-template special token (a fixed
//      list, plus the tokens the runtime's own template names where it tells:
//      llama.cpp /props), U+FFFD or a control character other than \n, \r, \t
//      is `leaked_markup`. Only `content` is read: reasoning that arrives in
//      `reasoning_content` / `reasoning` is where it belongs, and tool-call
//      arguments are the tool-call checks'. The detail names what was found
//      and where ("chat-template token <|im_end|> at char 31 of 40"), the
//      excerpt shows the text around it, escaped;
//   2. a loop: the repetition detector runs on every answer (content, else
//      reasoning), agent turns and soak traffic included (S0:85, S1:214: the
//      long-session loops a soak exists to catch), not only on the canary's
//      repetition probe; a looping answer is `repetition` whatever stopped it;
//   3. an empty answer: a probe that expects text and got no answer content
//      and no tool call is `empty_answer`, with or without finish_reason and
//      usage. Reasoning alone is not an answer: a runtime that puts the whole
//      reply in `reasoning_content` answered nothing an agent can use.
//
// Leaked markup comes first because it names the cause where the others name
// a symptom. A reasoning parser that stopped separating (a changed template,
// `--reasoning-format`) puts the thinking into content, where the marker, the
// JSON document and the code word then look missing or invalid; a template
// whose end-of-turn token is not taken as the end writes `<|im_end|>` and goes
// on into invented turns, which loop or run into the runtime's cap. Each of
// those says what broke downstream; the markup says where to look. Its detail
// still names a loop it found, and the caller adds the probe's own verdict and
// a cap (probes/probe_step.cc).
//
// False positives. soakd's prompts are fixed (probes/prompts.h, requests.h,
// golden_set.h) and none asks about markup, templates or tokenizers, so a
// `<think>` or `<|im_end|>` in an answer is the runtime's, not the model
// quoting one; JSON answers (the strict-JSON probe) carry escapes as text
// (`\u0007` is six printable bytes) and code answers raw tabs and newlines,
// neither of which is flagged. A model that mentions a marker in prose is the
// rare case the judge's tolerance (judge.max_invalid_ratio) absorbs.
//
// Every answer's row carries the detector's figure in extra_json
// (`loop_run_chars`, `loop_tail_chars`), so a loop that stays under the
// threshold is still visible. Pure; thread-agnostic; never throws.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "probes/openai_chat.h"
#include "probes/validators.h"

namespace soak::probes {

// ---------------------------------------------------------------- hygiene

// What the scanner looks for, besides the runtime's own tokens.
enum class MarkupKind {
  Reasoning,      // <think>, </think>: a reasoning parser that did not separate
  Harmony,        // <|channel|>, <|start|>, <|message|>, <|end|>, ... (gpt-oss's harmony format)
  TemplateToken,  // <|im_start|>, <|im_end|>, <|endoftext|>, <|eot_id|>, <end_of_turn>, ...
  RuntimeToken,   // a token the runtime's own template names (CandidateState::template_tokens)
  Replacement,    // U+FFFD: bytes that were not UTF-8 (a detokenizer split a character)
  Control,        // a C0 or C1 control character other than \n, \r, \t (DEL included)
};
std::string_view to_string(MarkupKind k);

// The fixed lists (the runtime's tokens come on top). Matched as written:
// the runtimes' special tokens have one spelling.
inline constexpr std::string_view kReasoningMarkup[] = {"<think>", "</think>"};
// openai/harmony: a message is <|start|>role<|channel|>name<|message|>text<|end|>,
// a final one ends <|return|>, a tool call <|call|>, <|constrain|> names a format.
inline constexpr std::string_view kHarmonyHeaders[] = {"<|start|>",  "<|channel|>", "<|message|>",  "<|end|>",
                                                       "<|return|>", "<|call|>",    "<|constrain|>"};
// ChatML (Qwen, Phi-4's <|im_sep|>), Llama 3, Gemma.
inline constexpr std::string_view kTemplateTokens[] = {
    "<|im_start|>",    "<|im_end|>",          "<|im_sep|>",        "<|endoftext|>", "<|begin_of_text|>",
    "<|end_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>",    "<|eom_id|>",
    "<|python_tag|>",  "<start_of_turn>",     "<end_of_turn>"};

struct MarkupFinding {
  MarkupKind kind = MarkupKind::Control;
  std::string text;  // the token as found, or "U+FFFD" / "U+0007"
  size_t byte_at = 0, byte_len = 0;
  size_t char_at = 0;  // in characters (code points) from the start of content
};

struct MarkupReport {
  std::vector<MarkupFinding> found;  // in order of position, the first kMaxMarkupFindings
  size_t total = 0;                  // every finding
  size_t chars = 0;                  // the content's length in characters
};
inline constexpr size_t kMaxMarkupFindings = 16;

// Scans `content` (UTF-8, as the JSON decoder produced it). `template_tokens`
// are the runtime's own (special_tokens_in_template, probes/runtimes/runtime.h);
// `cut`: the runtime stopped the answer at a length (finish_reason "length"),
// where a U+FFFD at the very end is what cutting a character in two gives,
// not a broken detokenizer, and is not counted.
MarkupReport scan_markup(std::string_view content, std::span<const std::string> template_tokens = {}, bool cut = false);

// The leaked_markup verdict of a report with findings: the first named with
// its place, the other kinds listed, the escaped excerpt around the first.
Verdict markup_verdict(const MarkupReport& rep, std::string_view content);

// At most `max_chars` characters of `content` around [at, at + len): each side
// cut at a character boundary ("..." where cut), control characters, U+FFFD
// and line separators written as \n, \t, \u0007, \uFFFD, the rest as it was.
std::string escaped_excerpt(std::string_view content, size_t at, size_t len, size_t max_chars = 48);

// ---------------------------------------------------------------- the answer

// The repetition report of an answer: its content, else its reasoning.
RepetitionReport answer_repetition(const ChatResult& r);

// Leaked markup, a loop, or an empty answer where one was expected; nullopt
// when the answer passes all three (the probe's own check follows).
// `template_tokens`: the runtime's own special tokens, where it told them.
std::optional<Verdict> check_answer(const ChatResult& r, const RepetitionReport& rep, bool expects_answer,
                                    std::span<const std::string> template_tokens = {});

// `extra_json` (an object, or empty) with the loop figure added.
std::string with_loop_figure(const std::string& extra_json, const RepetitionReport& rep);

// The long-context answer must contain the code word its prompt asked for
// (S4:208: an MLX MTP path that broke long context gave empty output, 75 %
// valid). MissingMarker, naming the code word.
Verdict check_code_word(const ChatResult& r, const std::string& code_word);

}  // namespace soak::probes
