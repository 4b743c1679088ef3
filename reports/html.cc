#include "reports/html.h"

#include <cmath>
#include <cstdio>
#include <ctime>
#include <string>
#include <vector>

namespace soak::report {

std::string escape(std::string_view text) {
  std::string out;
  out.reserve(text.size() + text.size() / 8);
  for (char ch : text) {
    switch (ch) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: {
        const auto u = static_cast<unsigned char>(ch);
        if ((u < 0x20 && ch != '\n' && ch != '\t') || u == 0x7f)
          out += "\xEF\xBF\xBD";
        else
          out += ch;
      }
    }
  }
  return out;
}

std::string row_anchor(int64_t id) { return "row-" + std::to_string(id); }
std::string event_anchor(int64_t id) { return "event-" + std::to_string(id); }

namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// The words after which a judge's reason lists ids (judges/*.cc:
// id_list() and the evidence range), and which table they point into.
struct Cue {
  std::string_view text;
  bool rows;  // else events
};
constexpr Cue kCues[] = {{"row(s) (", true}, {"rows ", true}, {"events ", false}, {"event(s) (", false}};

// One id cited in a reason: where its digits are, and which table it is in.
struct Cited {
  size_t at = 0, len = 0;
  int64_t id = 0;
  bool row = true;
};

// The id list starting at `at`: "53, 78, 111", "1..500", "12 and 4 more".
size_t read_list(std::string_view s, size_t at, bool rows, std::vector<Cited>& out) {
  size_t i = at;
  auto number = [&]() -> bool {
    size_t j = i;
    while (j < s.size() && is_digit(s[j])) ++j;
    if (j == i || j - i > 18) return false;
    out.push_back({i, j - i, std::stoll(std::string(s.substr(i, j - i))), rows});
    i = j;
    return true;
  };
  if (!number()) return at;
  while (i + 2 < s.size() && (s.compare(i, 2, ", ") == 0 || s.compare(i, 2, "..") == 0) && is_digit(s[i + 2])) {
    i += 2;
    number();
  }
  return i;
}

std::vector<Cited> scan(std::string_view reason) {
  std::vector<Cited> out;
  size_t i = 0;
  while (i < reason.size()) {
    const Cue* hit = nullptr;
    for (const Cue& c : kCues)
      if (reason.compare(i, c.text.size(), c.text) == 0) hit = &c;
    if (!hit) {
      ++i;
      continue;
    }
    i += hit->text.size();
    i = read_list(reason, i, hit->rows, out);
  }
  return out;
}

}  // namespace

std::string linked_reason(std::string_view reason, const std::set<int64_t>& rows, const std::set<int64_t>& events) {
  std::string out;
  size_t from = 0;
  for (const Cited& c : scan(reason)) {
    if (!(c.row ? rows : events).count(c.id)) continue;
    out += escape(reason.substr(from, c.at - from));
    out += "<a href=\"#" + (c.row ? row_anchor(c.id) : event_anchor(c.id)) + "\">" + std::to_string(c.id) + "</a>";
    from = c.at + c.len;
  }
  out += escape(reason.substr(from));
  return out;
}

CitedIds cited_ids(std::string_view reason) {
  CitedIds ids;
  for (const Cited& c : scan(reason)) (c.row ? ids.rows : ids.events).insert(c.id);
  return ids;
}

std::string num(double v) {
  if (!std::isfinite(v)) v = 0;
  char buf[64];
  if (std::fabs(v) >= 1e4 && std::fabs(v) < 1e15)
    std::snprintf(buf, sizeof buf, "%.0f", v);
  else
    std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

std::string pct(double fraction) {
  if (!std::isfinite(fraction)) fraction = 0;
  char buf[64];
  std::snprintf(buf, sizeof buf, "%+.1f%%", fraction * 100);
  return buf;
}

std::string mb(double bytes) { return num(bytes / 1e6) + " MB"; }

std::string duration_text(int64_t ms) {
  if (ms < 0) ms = 0;
  char buf[64];
  const int64_t s = ms / 1000, m = s / 60, h = m / 60, d = h / 24;
  if (d > 0)
    std::snprintf(buf, sizeof buf, "%lldd %02lldh", static_cast<long long>(d), static_cast<long long>(h % 24));
  else if (h > 0)
    std::snprintf(buf, sizeof buf, "%lldh %02lldm", static_cast<long long>(h), static_cast<long long>(m % 60));
  else if (m > 0)
    std::snprintf(buf, sizeof buf, "%lldm %02llds", static_cast<long long>(m), static_cast<long long>(s % 60));
  else
    std::snprintf(buf, sizeof buf, "%.1fs", static_cast<double>(ms) / 1000);
  return buf;
}

}  // namespace soak::report
