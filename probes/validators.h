// Content checks that run after the stream contract passed (docs/DESIGN.md §2.1:
// "the expected content (marker / strict JSON / valid tool call)"), plus the
// detector of degenerate looping output.
//
// Pure functions on already-accumulated answers; no exceptions escape (JSON is
// parsed without exceptions, schemas are read defensively). Thread-agnostic.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "probes/openai_chat.h"

namespace soak::probes {

// ---------------------------------------------------------------- JSON Schema subset

// The subset soakd's own probe schemas use: type (a name or a list of names:
// object, array, string, number, integer, boolean, null), properties, required,
// additionalProperties (false or a schema), items, enum, minLength/maxLength
// (in Unicode code points), minimum/maximum, minItems/maxItems. Other keywords
// are ignored, so a schema using them is checked less strictly, never wrongly.
// Returns the first violation as "<path>: <what>" (path like $.items[2].name),
// or nullopt when `value` conforms.
std::optional<std::string> schema_violation(const nlohmann::json& value, const nlohmann::json& schema);

// Strict-JSON probe: the answer content must be one JSON value (surrounding
// whitespace allowed, nothing else — no code fences) conforming to `schema`.
// Clean or InvalidJson.
Verdict check_strict_json(std::string_view content, const nlohmann::json& schema);

// ---------------------------------------------------------------- tool calls

struct ToolExpectation {
  std::string name;           // function the probe's tool_choice asks for
  nlohmann::json parameters;  // the tool's parameter schema (an object schema)
};

// Every call must name the expected function and carry arguments that parse as
// a JSON object conforming to the parameter schema. `{}` (or empty arguments)
// where the schema requires keys is EmptyToolArgs — a known runtime failure
// class of its own; anything else wrong is InvalidToolCall. Clean otherwise.
Verdict check_tool_calls(const std::vector<ToolCall>& calls, const ToolExpectation& expect);

// ---------------------------------------------------------------- marker

// The exact marker must appear in the answer content; reasoning does not count
// (a model that thinks the marker but never says it failed the probe).
Verdict check_marker(const ChatResult& r, std::string_view marker);

// ---------------------------------------------------------------- pooling routes

// An embeddings answer (`data[].embedding`): exactly `expected` vectors, all
// of one non-zero dimension, every value finite. Clean or MalformedResponse.
Verdict check_embeddings(std::string_view body, size_t expected);
// A rerank answer (`results[]`, the Jina/Cohere shape served by llama.cpp,
// vLLM and oMLX): at least one result, every `index` below `documents`, every
// `relevance_score` a finite number. Clean or MalformedResponse.
Verdict check_rerank(std::string_view body, size_t documents);

// ---------------------------------------------------------------- repetition

// A reply is looping when its tail ends in one short unit repeated back to
// back: a unit of at most kRepetitionMaxUnitChars bytes, repeated at least
// kRepetitionMinRepeats times, forming a periodic run of at least
// kRepetitionMinLoopChars bytes that covers at least kRepetitionMinTailCoverage
// of the last kRepetitionTailChars bytes. Runaway loops continue until a cap,
// so they own the tail; ordinary prose, code and the random-weight captures
// never have a long exactly periodic suffix. Loops whose unit changes each time
// (a counter: "step 1, step 2, ...") are not detected.
inline constexpr size_t kRepetitionTailChars = 4096;
inline constexpr size_t kRepetitionMaxUnitChars = 256;
inline constexpr size_t kRepetitionMinRepeats = 4;
inline constexpr size_t kRepetitionMinLoopChars = 256;
inline constexpr double kRepetitionMinTailCoverage = 0.5;

struct RepetitionReport {
  bool looping = false;
  size_t unit_chars = 0;  // shortest repeating unit found
  size_t loop_chars = 0;  // length of the periodic run at the end
  std::string unit_excerpt;
  // The figure every answer's row carries, looping or not: the longest
  // periodic run at the end of the tail (a unit of at most
  // kRepetitionMaxUnitChars repeated at least kRepetitionMinRepeats times; 0
  // when there is none) and how many bytes of tail were read.
  size_t longest_run_chars = 0;
  size_t tail_chars = 0;
};

RepetitionReport detect_repetition(std::string_view text);

// Repetition over everything the model produced (content, else reasoning).
// Repetition when the report found a loop (naming its size and unit), else clean.
Verdict repetition_verdict(const RepetitionReport& rep);
Verdict check_repetition(const ChatResult& r);

}  // namespace soak::probes
