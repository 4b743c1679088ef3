#include "probes/runtimes/argv.h"

#include <charconv>

namespace soak::probes::argv {

std::optional<std::string> flag_value(const std::vector<std::string>& argv, size_t i, std::string_view flag) {
  std::string_view a = argv[i];
  if (a == flag) return i + 1 < argv.size() ? std::optional<std::string>(argv[i + 1]) : std::nullopt;
  if (a.size() > flag.size() && a.substr(0, flag.size()) == flag && a[flag.size()] == '=')
    return std::string(a.substr(flag.size() + 1));
  return std::nullopt;
}

std::optional<std::string> any_flag_value(const std::vector<std::string>& argv, size_t i,
                                          std::initializer_list<std::string_view> flags) {
  for (std::string_view f : flags)
    if (auto v = flag_value(argv, i, f)) return v;
  return std::nullopt;
}

bool has_option(const std::vector<std::string>& argv, std::initializer_list<std::string_view> names) {
  for (const auto& a : argv)
    for (auto n : names)
      if (a == n || (a.size() > n.size() && a.compare(0, n.size(), n) == 0 && a[n.size()] == '=')) return true;
  return false;
}

std::optional<int64_t> to_int(std::string_view v) {
  int64_t n = 0;
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (ec != std::errc() || end != v.data() + v.size()) return std::nullopt;
  return n;
}

std::string_view basename(std::string_view path) {
  const size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

}  // namespace soak::probes::argv
