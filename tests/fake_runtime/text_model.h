// The fake's "model": deterministic text rules with no sockets and no clocks.
//
// Tokenizer rule (what /tokenize, usage.prompt_tokens and the prefix cache all
// use): text is cut into pieces; a piece is either a special token `<|...|>`
// (one token), or optional leading whitespace followed by up to 4 non-space
// bytes. So "Hello world" is ["Hell", "o", " worl", "d"] = 4 tokens: about one
// token per 4 characters of each word, whitespace riding on the next word.
// Token ids are a hash of the piece, so equal text gives equal ids and a shared
// prefix gives a shared id prefix.
//
// Reply rules: a prompt asking to "reply with exactly ...: X" (or, failing that,
// containing a code-shaped word like MARKER-xyz or OAK-1234) is answered with X
// alone; a json_schema response_format
// gets one JSON document valid for the schema; tools (unless tool_choice is
// "none") get one tool call whose arguments satisfy the tool's parameters; any
// other prompt gets `reply_tokens` filler words. enable_thinking=true puts
// `reasoning_tokens` reasoning pieces first.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/fake_runtime/scenario.h"

namespace soak::fake {

inline constexpr uint32_t kFakeVocabSize = 151936;  // Qwen3's vocabulary size

struct Token {
  uint32_t id = 0;
  std::string piece;
};

std::vector<Token> tokenize(std::string_view text);
size_t count_tokens(std::string_view text);
std::vector<uint32_t> token_ids(std::string_view text);
size_t common_prefix(const std::vector<uint32_t>& a, const std::vector<uint32_t>& b);

// ChatML rendering of a chat request (messages, tools, the generation prompt),
// the text whose tokens count as the prompt. Content may be a string or a list
// of {"type":"text","text":...} parts.
std::string render_chat_prompt(const nlohmann::json& request);

// The marker a prompt asks to be echoed, if any.
std::optional<std::string> find_marker(std::string_view prompt);

// A JSON value valid for a (simple) JSON schema: object, string (enum, const,
// minLength, maxLength), number/integer (minimum, maximum), boolean, array,
// anyOf/oneOf (first branch). Deterministic.
nlohmann::json sample_for_schema(const nlohmann::json& schema);

enum class PieceKind { Reasoning, Content, ToolArgs };
struct Piece {
  PieceKind kind = PieceKind::Content;
  std::string text;
};

struct ReplyPlan {
  std::vector<Piece> pieces;  // one per generated token, in order
  bool tool_call = false;
  std::string tool_name;
  std::string finish_reason;  // "stop", "length" or "tool_calls"
};

// What the fake answers to a chat completion request under a scenario. Applies
// the request's max_tokens / max_completion_tokens, else knobs.server_max_tokens.
ReplyPlan plan_reply(const nlohmann::json& request, const std::string& prompt, Scenario scenario, const Knobs& knobs);

// Request parameters shared by the flavours.
std::optional<int> requested_max_tokens(const nlohmann::json& request);
bool thinking_enabled(const nlohmann::json& request);
// The turn of a conversation a request is: 1 + the assistant messages it carries.
int conversation_turn(const nlohmann::json& request);
bool wants_stream(const nlohmann::json& request);
bool wants_usage_in_stream(const nlohmann::json& request);

// Deterministic pseudo-embedding of `dims` floats with unit length.
std::vector<float> embed(std::string_view text, int dims);
// Share of the query's words found in the document, in [0, 1].
double relevance(std::string_view query, std::string_view document);

}  // namespace soak::fake
