// What a tokenize answer says (docs/DESIGN.md §2.9: fixtures are sized with
// the runtime's /tokenize where it has one): llama.cpp answers `tokens`,
// vLLM `count` and `max_model_len` beside them. Read as the text streams by,
// without building the answer's tree: a 131K-token answer holds 131K numbers
// (docs/DESIGN.md §4.10). Which route and body a runtime takes is its entry's
// (probes/runtimes/).
//
// Pure, thread-agnostic; nothing throws.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "core/result.h"

namespace soak::probes {

struct TokenizeAnswer {
  std::optional<int64_t> count;          // `count`
  std::optional<int64_t> tokens;         // length of `tokens`
  std::optional<int64_t> max_model_len;  // vLLM
};
std::optional<TokenizeAnswer> parse_tokenize_answer(std::string_view body);

// The token count as the length of `tokens` (llama.cpp).
Result<int64_t> count_of_tokens(std::string_view body);
// `count`, else the length of `tokens` (vLLM).
Result<int64_t> count_field_or_tokens(std::string_view body);

}  // namespace soak::probes
