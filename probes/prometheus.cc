#include "probes/prometheus.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>
#include <locale>
#include <sstream>

#include "probes/text_util.h"

namespace soak::probes {
namespace {

bool is_blank(char c) { return c == ' ' || c == '\t'; }
bool name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':'; }
bool name_char(char c) { return name_start(c) || (c >= '0' && c <= '9'); }
bool label_start(char c) { return name_start(c) && c != ':'; }
bool label_char(char c) { return name_char(c) && c != ':'; }

// A cursor over one line. Methods advance it and report failure as a message.
struct Cursor {
  std::string_view s;
  size_t i = 0;

  bool done() const { return i >= s.size(); }
  char peek() const { return done() ? '\0' : s[i]; }
  void skip_blanks() {
    while (!done() && is_blank(s[i])) ++i;
  }
  std::string_view take_while(bool (*pred)(char)) {
    size_t b = i;
    while (!done() && pred(s[i])) ++i;
    return s.substr(b, i - b);
  }
  std::string_view take_token() {
    size_t b = i;
    while (!done() && !is_blank(s[i])) ++i;
    return s.substr(b, i - b);
  }
};

std::optional<std::string> metric_name(Cursor& c) {
  if (!name_start(c.peek())) return std::nullopt;
  return std::string(c.take_while(name_char));
}

std::optional<double> parse_value(std::string_view tok) {
  if (tok.empty()) return std::nullopt;
  std::string_view body = tok;
  bool negative = false;
  if (body.front() == '+' || body.front() == '-') {
    negative = body.front() == '-';
    body.remove_prefix(1);
  }
  std::string low = text::to_lower(body);
  if (low == "inf" || low == "infinity") {
    return negative ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
  }
  if (low == "nan") return std::numeric_limits<double>::quiet_NaN();
  if (body.empty() || (!std::isdigit(static_cast<unsigned char>(body.front())) && body.front() != '.')) {
    return std::nullopt;
  }
  // Decimal digits, point and exponent only (no hex floats). Floating-point
  // std::from_chars is missing from older macOS SDKs, so a classic-locale
  // stream reads the number: locale-independent and portable.
  for (char ch : body) {
    if (!std::isdigit(static_cast<unsigned char>(ch)) && ch != '.' && ch != 'e' && ch != 'E' && ch != '+' && ch != '-')
      return std::nullopt;
  }
  std::istringstream in{std::string(body)};
  in.imbue(std::locale::classic());
  double v = 0;
  in >> v;
  if (in.fail() || in.peek() != std::char_traits<char>::eof()) return std::nullopt;
  return negative ? -v : v;
}

std::optional<int64_t> parse_timestamp(std::string_view tok) {
  int64_t v = 0;
  const char* b = tok.data();
  if (!tok.empty() && tok.front() == '+') ++b;
  auto [end, ec] = std::from_chars(b, tok.data() + tok.size(), v);
  if (ec != std::errc() || end != tok.data() + tok.size() || b == tok.data() + tok.size()) return std::nullopt;
  return v;
}

// Reads `"..."` with the three escapes the format defines.
std::optional<std::string> quoted(Cursor& c, std::string& error) {
  if (c.peek() != '"') {
    error = "label value must be quoted";
    return std::nullopt;
  }
  ++c.i;
  std::string out;
  while (!c.done()) {
    char ch = c.s[c.i++];
    if (ch == '"') return out;
    if (ch != '\\') {
      out += ch;
      continue;
    }
    if (c.done()) break;
    char e = c.s[c.i++];
    if (e == '\\')
      out += '\\';
    else if (e == '"')
      out += '"';
    else if (e == 'n')
      out += '\n';
    else {
      error = std::string("unknown escape \\") + e + " in label value";
      return std::nullopt;
    }
  }
  error = "unterminated label value";
  return std::nullopt;
}

std::optional<std::vector<PromLabel>> labels(Cursor& c, std::string& error) {
  std::vector<PromLabel> out;
  ++c.i;  // '{'
  while (true) {
    c.skip_blanks();
    if (c.peek() == '}') {
      ++c.i;
      return out;
    }
    if (!label_start(c.peek())) {
      error = c.done() ? "unterminated label set" : "bad label name";
      return std::nullopt;
    }
    std::string name(c.take_while(label_char));
    c.skip_blanks();
    if (c.peek() != '=') {
      error = "expected '=' after label " + name;
      return std::nullopt;
    }
    ++c.i;
    c.skip_blanks();
    auto v = quoted(c, error);
    if (!v) return std::nullopt;
    for (const auto& l : out) {
      if (l.name == name) {
        error = "duplicate label " + name;
        return std::nullopt;
      }
    }
    out.push_back({std::move(name), std::move(*v)});
    c.skip_blanks();
    if (c.peek() == ',') {
      ++c.i;
    } else if (c.peek() != '}') {
      error = "expected ',' or '}' in label set";
      return std::nullopt;
    }
  }
}

std::string unescape_help(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 1 < s.size() && (s[i + 1] == '\\' || s[i + 1] == 'n')) {
      out += s[i + 1] == 'n' ? '\n' : '\\';
      ++i;
    } else {
      out += s[i];
    }
  }
  return out;
}

PromFamily& family_for(PromText& t, const std::string& name) {
  for (auto& f : t.families)
    if (f.name == name) return f;
  t.families.push_back(PromFamily{name, "", ""});
  return t.families.back();
}

constexpr std::string_view kTypes[] = {"counter", "gauge", "histogram", "summary", "untyped"};

void comment_line(PromText& t, Cursor c, int line_no) {
  ++c.i;  // '#'
  c.skip_blanks();
  std::string_view keyword = c.take_token();
  if (keyword != "HELP" && keyword != "TYPE") return;  // any other comment is free text
  c.skip_blanks();
  auto name = metric_name(c);
  if (!name || (!c.done() && !is_blank(c.peek()))) {
    t.errors.push_back({line_no, std::string(keyword) + " without a valid metric name"});
    return;
  }
  c.skip_blanks();
  std::string_view rest = c.s.substr(c.i);
  if (keyword == "HELP") {
    family_for(t, *name).help = unescape_help(rest);
    return;
  }
  std::string_view type = text::trim(rest);
  for (std::string_view k : kTypes) {
    if (type == k) {
      family_for(t, *name).type = std::string(type);
      return;
    }
  }
  t.errors.push_back({line_no, "unknown TYPE '" + text::excerpt(type, 40) + "' for " + *name});
}

void sample_line(PromText& t, Cursor c, int line_no) {
  PromSample s;
  auto name = metric_name(c);
  if (!name) {
    t.errors.push_back({line_no, "line does not start with a metric name: " + text::excerpt(c.s, 60)});
    return;
  }
  s.name = std::move(*name);
  const size_t after_name = c.i;
  c.skip_blanks();
  if (c.peek() != '{') c.i = after_name;  // no label set: the blank check below applies to the name
  if (c.peek() == '{') {
    std::string error;
    auto ls = labels(c, error);
    if (!ls) {
      t.errors.push_back({line_no, s.name + ": " + error});
      return;
    }
    s.labels = std::move(*ls);
  }
  if (!c.done() && !is_blank(c.peek())) {
    t.errors.push_back({line_no, s.name + ": expected a blank before the value"});
    return;
  }
  c.skip_blanks();
  std::string_view vtok = c.take_token();
  auto v = parse_value(vtok);
  if (!v) {
    t.errors.push_back({line_no, s.name + ": bad value '" + text::excerpt(vtok, 40) + "'"});
    return;
  }
  s.value = *v;
  c.skip_blanks();
  if (!c.done()) {
    std::string_view ttok = c.take_token();
    auto ts = parse_timestamp(ttok);
    if (!ts) {
      t.errors.push_back({line_no, s.name + ": bad timestamp '" + text::excerpt(ttok, 40) + "'"});
      return;
    }
    s.timestamp_ms = ts;
    c.skip_blanks();
    if (!c.done()) {
      t.errors.push_back({line_no, s.name + ": trailing text after the timestamp"});
      return;
    }
  }
  t.samples.push_back(std::move(s));
}

}  // namespace

const std::string* PromSample::label(std::string_view n) const {
  for (const auto& l : labels)
    if (l.name == n) return &l.value;
  return nullptr;
}

const PromSample* PromText::find(std::string_view name, const PromLabelMatch& want) const {
  for (const auto& s : samples) {
    if (s.name != name) continue;
    bool all = true;
    for (const auto& [k, v] : want) {
      const std::string* got = s.label(k);
      if (!got || *got != v) {
        all = false;
        break;
      }
    }
    if (all) return &s;
  }
  return nullptr;
}

std::optional<double> PromText::value(std::string_view name, const PromLabelMatch& want) const {
  const PromSample* s = find(name, want);
  if (!s) return std::nullopt;
  return s->value;
}

const PromFamily* PromText::family(std::string_view name) const {
  for (const auto& f : families)
    if (f.name == name) return &f;
  return nullptr;
}

PromText parse_prometheus_text(std::string_view text) {
  PromText t;
  int line_no = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t eol = text.find('\n', pos);
    std::string_view line = text.substr(pos, eol == std::string_view::npos ? text.size() - pos : eol - pos);
    pos = eol == std::string_view::npos ? text.size() : eol + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    Cursor c{line};
    c.skip_blanks();
    if (c.done()) continue;
    if (c.peek() == '#') {
      comment_line(t, c, line_no);
    } else {
      sample_line(t, c, line_no);
    }
  }
  return t;
}

}  // namespace soak::probes
