#include "core/byte_size.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <limits>

namespace soak {

namespace {

struct Unit {
  std::string_view name;
  double bytes;
};

constexpr Unit kUnits[] = {
    {"B", 1.0},         {"KB", 1e3},           {"MB", 1e6},
    {"GB", 1e9},        {"TB", 1e12},          {"KiB", 1024.0},
    {"MiB", 1048576.0}, {"GiB", 1073741824.0}, {"TiB", 1099511627776.0},
};

}  // namespace

Result<int64_t> parse_byte_size(std::string_view s) {
  const std::string text(s);
  size_t i = 0;
  while (i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '.')) ++i;
  if (i == 0) return make_error("expected a number in \"" + text + "\"");
  const std::string number(s.substr(0, i));
  if (number.find('.') != number.rfind('.') || number.front() == '.' || number.back() == '.')
    return make_error("\"" + number + "\" is not a number");
  std::string_view unit = s.substr(i);
  while (!unit.empty() && unit.front() == ' ') unit.remove_prefix(1);
  if (unit.empty()) return make_error("missing unit in \"" + text + "\" (use GiB, GB, MiB, MB, ...)");
  for (const Unit& u : kUnits) {
    if (unit != u.name) continue;
    const double v = std::strtod(number.c_str(), nullptr) * u.bytes;
    if (!std::isfinite(v) || v >= static_cast<double>(std::numeric_limits<int64_t>::max()))
      return make_error("\"" + text + "\" is too large");
    return static_cast<int64_t>(std::llround(v));
  }
  return make_error("unknown unit \"" + std::string(unit) + "\" (use B, KB, MB, GB, TB, KiB, MiB, GiB or TiB)");
}

std::string format_bytes(int64_t bytes) {
  static constexpr std::string_view kBinary[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  if (bytes < 1024 && bytes > -1024) return std::to_string(bytes) + " B";
  double v = static_cast<double>(bytes);
  size_t u = 0;
  v /= 1024.0;
  while (u + 1 < std::size(kBinary) && std::fabs(v) >= 1024.0) {
    v /= 1024.0;
    ++u;
  }
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.1f %s", v, std::string(kBinary[u]).c_str());
  return buf;
}

}  // namespace soak
