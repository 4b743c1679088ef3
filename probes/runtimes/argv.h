// Reading a runtime's command line: what the argv it runs with, or the launch
// block soakd starts it with, says. Used by the entries' argv readers (the
// identity proof and the launch fingerprint) and their launch warnings.
//
// Pure; nothing throws.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace soak::probes::argv {

// argv[i]'s value when it is `flag value` or `flag=value`.
std::optional<std::string> flag_value(const std::vector<std::string>& argv, size_t i, std::string_view flag);
// The same for the first of `flags` that argv[i] is.
std::optional<std::string> any_flag_value(const std::vector<std::string>& argv, size_t i,
                                          std::initializer_list<std::string_view> flags);
// Whether one of `names` is given anywhere, as `name` or `name=value`.
bool has_option(const std::vector<std::string>& argv, std::initializer_list<std::string_view> names);
// A whole decimal integer ("-1", "4096"); nullopt for anything else.
std::optional<int64_t> to_int(std::string_view v);
// The last path component ("/opt/homebrew/bin/llama-server" -> "llama-server").
std::string_view basename(std::string_view path);

}  // namespace soak::probes::argv
