// What every runtime's entry shares: the plain health reading, the common
// 503 words, build strings from a version command or a JSON `version`, the
// slot summary, the served-state route lookup and the argv-proven identity.
#include "probes/runtimes/runtime.h"

#include <algorithm>

#include "probes/json_fields.h"
#include "probes/text_util.h"
#include "probes/transport/http_types.h"

namespace soak::probes {

std::string_view to_string(HealthState s) {
  switch (s) {
    case HealthState::Up: return "up";
    case HealthState::Loading: return "loading";
    case HealthState::Draining: return "draining";
    case HealthState::Down: return "down";
  }
  return "?";
}

HealthVerdict read_health_plain(int http_status, std::string_view body) {
  if (is_2xx(http_status)) return {HealthState::Up, "HTTP " + std::to_string(http_status)};
  return health_not_ok(http_status, body);
}

HealthVerdict read_health_status_member(int http_status, std::string_view body) {
  if (http_status < 200 || http_status >= 300) return health_not_ok(http_status, body);
  std::string s = jsonf::get_string(jsonf::parse_object(body), "status").value_or("");
  return {HealthState::Up, s.empty() ? "HTTP " + std::to_string(http_status) : s};
}

HealthVerdict health_not_ok(int http_status, std::string_view body, Health503Reader on_503) {
  ApiError e = parse_api_error(body);
  std::string detail =
      "HTTP " + std::to_string(http_status) + (e.message.empty() ? "" : ": " + text::excerpt(e.message, 120));
  if (http_status == 503) {
    if (text::contains_ci(e.message, "loading")) return {HealthState::Loading, detail};
    if (text::contains_ci(body, "draining")) return {HealthState::Draining, detail};
    if (on_503)
      if (auto v = on_503(e.message, detail)) return *v;
  }
  return {HealthState::Down, detail};
}

Result<std::string> build_from_first_line(std::string_view output) {
  std::string_view rest = output;
  while (!rest.empty()) {
    size_t nl = rest.find('\n');
    std::string_view line = text::trim(rest.substr(0, nl));
    if (!line.empty()) return std::string(line);
    if (nl == std::string_view::npos) break;
    rest.remove_prefix(nl + 1);
  }
  return make_error("the version command printed nothing");
}

Result<std::string> version_member(std::string_view body, std::string_view route) {
  auto v = jsonf::get_string(jsonf::parse_object(body), "version");
  if (!v || v->empty()) return make_error("no \"version\" in " + std::string(route) + " answer");
  return *v;
}

SlotSummary summarize_slots(const std::vector<SlotState>& slots) {
  SlotSummary s;
  s.total = static_cast<int>(slots.size());
  for (const auto& x : slots) s.busy += x.is_processing ? 1 : 0;
  return s;
}

Status read_served_answer(const Runtime& rt, std::string_view path, std::string_view body,
                          std::string_view config_model, ServedState& into) {
  for (const ServedRoute& r : rt.served) {
    if (r.route.path != path) continue;
    Status st = r.read(body, config_model, into);
    if (st.ok()) into.fingerprint.add_source(path);
    return st;
  }
  return make_error(std::string(to_string(rt.kind)) + " has no served-state route");
}

std::vector<std::string> no_launch_warnings(const LaunchSpec&) { return {}; }

// ---------------------------------------------------------------- template tokens

namespace {
constexpr size_t kMaxTokenName = 48;

bool name_byte(char c) {
  switch (c) {
    case ' ':
    case '\t':
    case '\n':
    case '\r':
    case '\'':
    case '"':
    case '<':
    case '>':
    case '|':
    case '{':
    case '}':
    case '+':
    case '\\':
    case '[':
    case ']': return false;
    default: return true;
  }
}
}  // namespace

std::vector<std::string> special_tokens_in_template(std::string_view t) {
  struct Bars {
    std::string_view open, close;
  };
  constexpr Bars kBars[] = {{"<|", "|>"}, {"<\xEF\xBD\x9C", "\xEF\xBD\x9C>"}};  // | and U+FF5C
  std::vector<std::string> out;
  for (size_t i = 0; i < t.size() && out.size() < kMaxTemplateTokens; ++i) {
    if (t[i] != '<') continue;
    for (const Bars& b : kBars) {
      if (t.compare(i, b.open.size(), b.open) != 0) continue;
      const size_t from = i + b.open.size();
      size_t end = from;
      while (end < t.size() && end - from <= kMaxTokenName && t.compare(end, b.close.size(), b.close) != 0 &&
             name_byte(t[end]))
        ++end;
      if (end == from || end - from > kMaxTokenName || t.compare(end, b.close.size(), b.close) != 0) continue;
      std::string token(t.substr(i, end + b.close.size() - i));
      if (std::find(out.begin(), out.end(), token) == out.end()) out.push_back(std::move(token));
      break;
    }
  }
  return out;
}

bool looks_special(std::string_view s) {
  if (s.size() < 3 || s.size() > 64) return false;
  for (char c : s)
    if (text::is_space(c)) return false;
  return (s.front() == '<' && s.back() == '>') || (s.front() == '[' && s.back() == ']');
}

Result<std::string> parse_build(const Runtime& rt, std::string_view body) {
  if (rt.read_build) return rt.read_build(body);
  return make_error(std::string(to_string(rt.kind)) + " reports no build over HTTP; configure a version command");
}

namespace {
// "its launch argv has no --model": `whose` and the reader's own words.
void say_unproven(ServedState& s, std::string_view whose) {
  if (s.proof != IdentityProof::EchoOnly) return;
  s.unproven_reason = std::string(whose) + " " + (s.unproven_reason.empty() ? "names no model" : s.unproven_reason);
}
}  // namespace

ServedState served_by_argv(const Runtime& rt, const CandidateConfig& c, const RuntimeArgvReader& reader) {
  if (!rt.served_from_argv) {
    ServedState s;
    s.unproven_reason = std::string(to_string(rt.kind)) + " says nothing of what it serves in its argv";
    return s;
  }
  if (c.launch) {
    ServedState s = rt.served_from_argv(launch_argv_of(c));
    s.fingerprint.source = "launch argv";
    say_unproven(s, "its launch argv");
    return s;
  }
  RuntimeArgv a = runtime_argv_of(c, reader);
  if (!a.error.empty()) {
    ServedState s;
    s.unproven_reason = "its argv could not be read: " + a.error;
    return s;
  }
  ServedState s = rt.served_from_argv(a.argv);
  s.fingerprint.source = "argv of " + (a.source.empty() ? std::string("its process") : a.source);
  say_unproven(s, "its process's argv");
  return s;
}

}  // namespace soak::probes
