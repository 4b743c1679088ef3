// Small text helpers shared by the probe parsers. Pure, header-only.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace soak::probes::text {

inline bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == '\v'; }

inline std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

inline char lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

inline std::string to_lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = lower(c);
  return out;
}

inline bool contains_ci(std::string_view hay, std::string_view needle) {
  if (needle.empty()) return true;
  if (needle.size() > hay.size()) return false;
  for (size_t i = 0; i + needle.size() <= hay.size(); ++i) {
    size_t k = 0;
    while (k < needle.size() && lower(hay[i + k]) == lower(needle[k])) ++k;
    if (k == needle.size()) return true;
  }
  return false;
}

// A short, printable, ASCII-only rendering of untrusted bytes for details and
// logs: control and non-ASCII bytes become '?', so the excerpt is always valid
// UTF-8 and one line.
inline std::string excerpt(std::string_view s, size_t max_chars = 120) {
  std::string out;
  size_t n = s.size() < max_chars ? s.size() : max_chars;
  out.reserve(n + 3);
  for (size_t i = 0; i < n; ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    out += (c >= 0x20 && c < 0x7f) ? static_cast<char>(c) : '?';
  }
  if (s.size() > max_chars) out += "...";
  return out;
}

}  // namespace soak::probes::text
