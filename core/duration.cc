#include "core/duration.h"

#include <cctype>
#include <ctime>

namespace soak {

Result<int64_t> parse_duration(std::string_view s) {
  if (s.empty()) return make_error("empty duration");
  int64_t total = 0;
  size_t i = 0;
  bool any = false;
  while (i < s.size()) {
    size_t start = i;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
    if (i == start) return make_error("expected a number in \"" + std::string(s) + "\"");
    int64_t n = 0;
    for (size_t k = start; k < i; ++k) {
      n = n * 10 + (s[k] - '0');
      if (n > 1'000'000'000'000LL) return make_error("number too large in \"" + std::string(s) + "\"");
    }
    size_t ustart = i;
    while (i < s.size() && std::isalpha(static_cast<unsigned char>(s[i]))) ++i;
    std::string_view unit = s.substr(ustart, i - ustart);
    int64_t mult = 0;
    if (unit == "ms")
      mult = 1;
    else if (unit == "s")
      mult = kSecond;
    else if (unit == "m")
      mult = kMinute;
    else if (unit == "h")
      mult = kHour;
    else if (unit == "d")
      mult = kDay;
    else if (unit.empty())
      return make_error("missing unit in \"" + std::string(s) + "\" (use ms, s, m, h or d)");
    else
      return make_error("unknown unit \"" + std::string(unit) + "\" (use ms, s, m, h or d)");
    total += n * mult;
    any = true;
  }
  if (!any) return make_error("empty duration");
  return total;
}

std::string format_duration(int64_t ms) {
  if (ms == 0) return "0s";
  std::string out;
  if (ms < 0) {
    out = "-";
    ms = -ms;
  }
  struct U {
    int64_t ms;
    const char* name;
  };
  static constexpr U kUnits[] = {{kDay, "d"}, {kHour, "h"}, {kMinute, "m"}, {kSecond, "s"}, {1, "ms"}};
  for (const auto& u : kUnits) {
    if (ms >= u.ms) {
      out += std::to_string(ms / u.ms) + u.name;
      ms %= u.ms;
    }
  }
  return out;
}

std::string iso_utc(int64_t wall_ms) {
  std::time_t t = static_cast<std::time_t>(wall_ms / 1000);
  std::tm tm{};
  if (!gmtime_r(&t, &tm)) return std::to_string(wall_ms);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace soak
