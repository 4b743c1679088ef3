#include "core/log_text.h"

#include <regex>

namespace soak {

std::string redact(std::string_view text) {
  static const std::regex kBearer(R"((Bearer\s+)[A-Za-z0-9._~+/=-]+)", std::regex::icase);
  static const std::regex kAuthHeader(R"((Authorization:\s*)[^\r\n]+)", std::regex::icase);
  static const std::regex kApiKey(R"((\"?api[_-]?key\"?\s*[:=]\s*\"?)[^\s\",}]+)", std::regex::icase);
  std::string s(text);
  s = std::regex_replace(s, kAuthHeader, "$1[redacted]");
  s = std::regex_replace(s, kBearer, "$1[redacted]");
  s = std::regex_replace(s, kApiKey, "$1[redacted]");
  return s;
}

std::string log_tail_line(std::string tail, size_t max_chars, std::string_view separator) {
  while (!tail.empty() && (tail.back() == '\n' || tail.back() == ' ')) tail.pop_back();
  if (tail.size() > max_chars) tail = "..." + tail.substr(tail.size() - max_chars);
  std::string out;
  for (char c : tail) {
    if (c == '\n')
      out += separator;
    else if (c != '\r')
      out += c;
  }
  return out;
}

}  // namespace soak
