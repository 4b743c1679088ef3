#include "probes/prefill_progress.h"

#include <charconv>

#include "probes/json_fields.h"

namespace soak::probes {
namespace {

constexpr std::string_view kKeepalive = "keepalive ";

std::optional<int64_t> whole_number(std::string_view s) {
  int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

std::optional<PrefillReport> valid(int64_t processed, int64_t total) {
  if (total <= 0 || processed < 0 || processed > total) return std::nullopt;
  return PrefillReport{processed, total};
}

}  // namespace

std::optional<PrefillReport> parse_keepalive_comment(std::string_view text) {
  if (text.substr(0, kKeepalive.size()) != kKeepalive) return std::nullopt;
  text.remove_prefix(kKeepalive.size());
  while (!text.empty() && (text.back() == ' ' || text.back() == '\r')) text.remove_suffix(1);
  const size_t slash = text.find('/');
  if (slash == std::string_view::npos) return std::nullopt;
  auto processed = whole_number(text.substr(0, slash));
  auto total = whole_number(text.substr(slash + 1));
  if (!processed || !total) return std::nullopt;
  return valid(*processed, *total);
}

std::optional<PrefillReport> parse_prompt_progress(const nlohmann::json& chunk) {
  const jsonf::json* p = jsonf::member(chunk, "prompt_progress");
  if (!p || !p->is_object()) return std::nullopt;
  auto processed = jsonf::get_int(*p, "processed");
  auto total = jsonf::get_int(*p, "total");
  if (!processed || !total) return std::nullopt;
  return valid(*processed, *total);
}

bool carries_only_progress(const nlohmann::json& j) {
  if (jsonf::member(j, "usage") || jsonf::member(j, "error")) return false;
  const jsonf::json* choices = jsonf::member(j, "choices");
  if (!choices || !choices->is_array()) return true;
  auto non_empty = [](const jsonf::json& obj, const char* key) {
    auto v = jsonf::get_string(obj, key);
    return v && !v->empty();
  };
  for (const auto& ch : *choices) {
    if (non_empty(ch, "finish_reason")) return false;
    const jsonf::json* delta = jsonf::member(ch, "delta");
    if (!delta) continue;
    for (const char* key : {"content", "reasoning_content", "reasoning"})
      if (non_empty(*delta, key)) return false;
    if (const jsonf::json* tc = jsonf::member(*delta, "tool_calls"); tc && tc->is_array() && !tc->empty()) return false;
  }
  return true;
}

bool PrefillProgress::note(const PrefillReport& r) {
  if (r.processed <= processed.value_or(0)) return false;
  processed = r.processed;
  total = r.total;
  ++reports;
  return true;
}

std::string describe(const PrefillProgress& p) {
  if (p.reports == 0 || !p.processed || !p.total) return "no prefill progress reported";
  return "the prefill last reported " + std::to_string(*p.processed) + "/" + std::to_string(*p.total) +
         " prompt tokens";
}

}  // namespace soak::probes
