#include "probes/answer_check.h"

#include <algorithm>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "core/log_text.h"
#include "probes/text_util.h"

namespace soak::probes {

namespace {

bool continuation(unsigned char c) { return (c & 0xC0) == 0x80; }

// The byte length of the UTF-8 character starting with `c` (1 for a stray byte).
size_t char_len(unsigned char c) {
  if (c >= 0xF0 && c <= 0xF4) return 4;
  if (c >= 0xE0) return 3;
  if (c >= 0xC2 && c < 0xE0) return 2;
  return 1;
}

std::string code_point_name(unsigned cp) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "U+%04X", cp);
  return buf;
}

struct Needle {
  std::string_view text;
  MarkupKind kind;
};

// The fixed lists, then the runtime's tokens they do not already hold.
std::vector<Needle> needles(std::span<const std::string> template_tokens) {
  std::vector<Needle> out;
  for (auto t : kReasoningMarkup) out.push_back({t, MarkupKind::Reasoning});
  for (auto t : kHarmonyHeaders) out.push_back({t, MarkupKind::Harmony});
  for (auto t : kTemplateTokens) out.push_back({t, MarkupKind::TemplateToken});
  for (const std::string& t : template_tokens) {
    if (t.empty()) continue;
    if (std::none_of(out.begin(), out.end(), [&](const Needle& n) { return n.text == t; }))
      out.push_back({t, MarkupKind::RuntimeToken});
  }
  return out;
}

// The longest needle at `at` (none: an empty text).
const Needle* match_at(std::string_view s, size_t at, const std::vector<Needle>& all) {
  const Needle* best = nullptr;
  for (const Needle& n : all)
    if (s.compare(at, n.text.size(), n.text) == 0 && (!best || n.text.size() > best->text.size())) best = &n;
  return best;
}

std::string described(const MarkupFinding& f) {
  switch (f.kind) {
    case MarkupKind::Reasoning: return "reasoning markup " + f.text;
    case MarkupKind::Harmony: return "harmony header " + f.text;
    case MarkupKind::TemplateToken: return "chat-template token " + f.text;
    case MarkupKind::RuntimeToken: return "the template's own token " + f.text;
    case MarkupKind::Replacement: return f.text + " (replacement character)";
    case MarkupKind::Control: return "control character " + f.text;
  }
  return f.text;
}

}  // namespace

std::string_view to_string(MarkupKind k) {
  switch (k) {
    case MarkupKind::Reasoning: return "reasoning markup";
    case MarkupKind::Harmony: return "harmony header";
    case MarkupKind::TemplateToken: return "chat-template token";
    case MarkupKind::RuntimeToken: return "template token";
    case MarkupKind::Replacement: return "replacement character";
    case MarkupKind::Control: return "control character";
  }
  return "markup";
}

MarkupReport scan_markup(std::string_view s, std::span<const std::string> template_tokens, bool cut) {
  MarkupReport rep;
  const std::vector<Needle> all = needles(template_tokens);
  // A cut answer's trailing U+FFFDs are the cut's (see the header).
  size_t end = s.size();
  if (cut)
    while (end >= 3 && s.substr(end - 3, 3) == "\xEF\xBF\xBD") end -= 3;
  size_t chars = 0;
  auto note = [&](MarkupKind kind, std::string text, size_t at, size_t len) {
    ++rep.total;
    if (rep.found.size() < kMaxMarkupFindings) rep.found.push_back({kind, std::move(text), at, len, chars});
  };
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    size_t len = 1;
    if (i >= end) {
      // the cut's tail: counted as characters, not as findings
    } else if (c == '<' || c == '[') {
      if (const Needle* n = match_at(s, i, all)) {
        len = n->text.size();
        note(n->kind, std::string(n->text), i, len);
      }
    } else if ((c < 0x20 && c != '\n' && c != '\r' && c != '\t') || c == 0x7F) {
      note(MarkupKind::Control, code_point_name(c), i, 1);
    } else if (c == 0xC2 && i + 1 < s.size() && static_cast<unsigned char>(s[i + 1]) >= 0x80 &&
               static_cast<unsigned char>(s[i + 1]) <= 0x9F) {
      len = 2;  // U+0080..U+009F, the C1 controls (NEL, CSI, ...)
      note(MarkupKind::Control, code_point_name(static_cast<unsigned char>(s[i + 1])), i, 2);
    } else if (s.compare(i, 3, "\xEF\xBF\xBD") == 0) {
      len = 3;
      note(MarkupKind::Replacement, "U+FFFD", i, 3);
    } else {
      len = char_len(c);
    }
    // Characters counted by their lead bytes (a needle is ASCII, or starts
    // with '<' and holds whole characters).
    for (size_t k = i; k < i + len && k < s.size(); ++k)
      if (!continuation(static_cast<unsigned char>(s[k]))) ++chars;
    i += len;
  }
  rep.chars = chars;
  return rep;
}

std::string escaped_excerpt(std::string_view s, size_t at, size_t len, size_t max_chars) {
  at = std::min(at, s.size());
  len = std::min(len, s.size() - at);
  // Characters either side of the finding, stepping over whole characters.
  const size_t side = max_chars > 2 ? max_chars / 2 : 1;
  size_t from = at, to = at + len;
  for (size_t n = 0; n < side && from > 0; ++n) {
    --from;
    while (from > 0 && continuation(static_cast<unsigned char>(s[from]))) --from;
  }
  for (size_t n = 0; n < side && to < s.size(); ++n) {
    ++to;
    while (to < s.size() && continuation(static_cast<unsigned char>(s[to]))) ++to;
  }
  std::string out = from > 0 ? "..." : "";
  for (size_t i = from; i < to;) {
    const auto c = static_cast<unsigned char>(s[i]);
    const size_t l = std::min(char_len(c), to - i);
    const std::string_view ch = s.substr(i, l);
    char buf[16];
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7F) {
      std::snprintf(buf, sizeof buf, "\\u%04X", c);
      out += buf;
    } else if (l == 2 && c == 0xC2 && static_cast<unsigned char>(ch[1]) <= 0x9F) {
      std::snprintf(buf, sizeof buf, "\\u%04X", static_cast<unsigned char>(ch[1]));
      out += buf;
    } else if (ch == "\xEF\xBF\xBD") {
      out += "\\uFFFD";
    } else if (ch == "\xE2\x80\xA8" || ch == "\xE2\x80\xA9") {  // line and paragraph separators
      out += ch[2] == '\xA8' ? "\\u2028" : "\\u2029";
    } else if (l == 1 && c >= 0x80) {
      out += '?';  // a stray byte (the decoder never leaves one; kept one line and valid)
    } else {
      out += ch;
    }
    i += l;
  }
  if (to < s.size()) out += "...";
  return redact(out);
}

Verdict markup_verdict(const MarkupReport& rep, std::string_view content) {
  if (rep.found.empty()) return {Outcome::Clean, ""};
  const MarkupFinding& first = rep.found.front();
  std::string detail = described(first) + " at char " + std::to_string(first.char_at) + " of " +
                       std::to_string(rep.chars) + " in the answer content";
  // The other things found, each once, in order.
  std::vector<std::string_view> others;
  for (const MarkupFinding& f : rep.found)
    if (f.text != first.text && std::find(others.begin(), others.end(), f.text) == others.end())
      others.push_back(f.text);
  if (rep.total > 1) {
    detail += " (" + std::to_string(rep.total) + " found";
    constexpr size_t kNamed = 4;
    for (size_t i = 0; i < others.size() && i < kNamed; ++i) detail += (i ? ", " : "; also ") + std::string(others[i]);
    if (others.size() > kNamed) detail += ", ...";
    detail += ")";
  }
  return {Outcome::LeakedMarkup, std::move(detail), escaped_excerpt(content, first.byte_at, first.byte_len)};
}

RepetitionReport answer_repetition(const ChatResult& r) {
  return detect_repetition(r.content.empty() ? std::string_view(r.reasoning) : std::string_view(r.content));
}

std::optional<Verdict> check_answer(const ChatResult& r, const RepetitionReport& rep, bool expects_answer,
                                    std::span<const std::string> template_tokens) {
  // Leaked markup first: it names the cause (see the header). Only content.
  if (const MarkupReport m = scan_markup(r.content, template_tokens, r.finish_reason == "length"); m.total > 0) {
    Verdict v = markup_verdict(m, r.content);
    if (rep.looping) v.detail += "; the answer also ends in a loop (" + repetition_verdict(rep).detail + ")";
    return v;
  }
  if (rep.looping) return repetition_verdict(rep);
  if (!expects_answer || !r.tool_calls.empty() || !text::trim(r.content).empty()) return std::nullopt;
  if (!r.reasoning.empty()) {
    return Verdict{Outcome::EmptyAnswer, "no answer content: the whole reply (" + std::to_string(r.reasoning.size()) +
                                             " bytes) came as reasoning, which is not an answer"};
  }
  return Verdict{Outcome::EmptyAnswer, "no answer content and no tool call (finish_reason " +
                                           (r.finish_reason.empty() ? std::string("none") : r.finish_reason) + ")"};
}

std::string with_loop_figure(const std::string& extra_json, const RepetitionReport& rep) {
  auto j = nlohmann::ordered_json::parse(extra_json.empty() ? "{}" : extra_json, nullptr, false);
  if (j.is_discarded() || !j.is_object()) j = nlohmann::ordered_json::object();
  j["loop_run_chars"] = rep.longest_run_chars;
  j["loop_tail_chars"] = rep.tail_chars;
  return j.dump();
}

Verdict check_code_word(const ChatResult& r, const std::string& code_word) {
  if (r.content.find(code_word) != std::string::npos) return {Outcome::Clean, ""};
  if (!code_word.empty() && r.reasoning.find(code_word) != std::string::npos)
    return {Outcome::MissingMarker,
            "code word " + code_word + " only in the reasoning, not in the long-context answer"};
  return {Outcome::MissingMarker, "code word " + code_word + " absent from the long-context answer; answer starts: " +
                                      text::excerpt(r.content, 80)};
}

}  // namespace soak::probes
