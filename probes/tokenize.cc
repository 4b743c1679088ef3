#include "probes/tokenize.h"

#include <string>

#include "probes/json_fields.h"
#include "probes/text_util.h"

namespace soak::probes {
namespace {

using jsonf::json;

// Top-level `count`, `max_model_len` and the length of `tokens` (whatever its
// elements are: ids, or {id, piece} objects with_pieces).
class TokenizeSax final : public nlohmann::json_sax<json> {
 public:
  TokenizeAnswer out;

  bool null() override { return value(); }
  bool boolean(bool) override { return value(); }
  bool number_integer(number_integer_t v) override { return number(v); }
  bool number_unsigned(number_unsigned_t v) override { return number(static_cast<int64_t>(v)); }
  bool number_float(number_float_t, const string_t&) override { return value(); }
  bool string(string_t&) override { return value(); }
  bool binary(binary_t&) override { return value(); }
  bool start_object(std::size_t) override { return open(); }
  bool end_object() override { return close(); }
  bool start_array(std::size_t) override {
    if (depth_ == 1 && key_ == "tokens") {
      in_tokens_ = true;
      out.tokens = 0;
    }
    return open();
  }
  bool end_array() override {
    if (depth_ == 2) in_tokens_ = false;
    return close();
  }
  bool key(string_t& k) override {
    if (depth_ == 1) key_ = k;
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override { return false; }

 private:
  bool open() {
    element();
    ++depth_;
    return true;
  }
  bool close() {
    --depth_;
    return true;
  }
  void element() {
    if (in_tokens_ && depth_ == 2) ++*out.tokens;
  }
  bool value() {
    element();
    return true;
  }
  bool number(int64_t v) {
    element();
    if (depth_ == 1 && key_ == "count") out.count = v;
    if (depth_ == 1 && key_ == "max_model_len") out.max_model_len = v;
    return true;
  }

  int depth_ = 0;
  bool in_tokens_ = false;
  std::string key_;
};

}  // namespace

std::optional<TokenizeAnswer> parse_tokenize_answer(std::string_view body) {
  TokenizeSax sax;
  const std::string_view t = text::trim(body);
  if (t.empty() || t.front() != '{') return std::nullopt;
  if (!json::sax_parse(t.begin(), t.end(), &sax, nlohmann::detail::input_format_t::json, true)) return std::nullopt;
  return sax.out;
}

namespace {
Result<int64_t> neither(std::string_view body) {
  return make_error("tokenize answer has neither count nor tokens: " + text::excerpt(text::trim(body), 80));
}
}  // namespace

Result<int64_t> count_of_tokens(std::string_view body) {
  auto a = parse_tokenize_answer(body);
  if (a && a->tokens) return *a->tokens;
  return neither(body);
}

Result<int64_t> count_field_or_tokens(std::string_view body) {
  auto a = parse_tokenize_answer(body);
  if (a && a->count) return *a->count;
  if (a && a->tokens) return *a->tokens;
  return neither(body);
}

}  // namespace soak::probes
