// A small argv parser for soakd and soakctl: `--flag`, `--key value`,
// `--key=value` and positionals, in any order. Unknown options are errors that
// name the option and the command's --help.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/result.h"

namespace soak {

// Exit statuses of soakd's commands: done, failed, and a command line that is
// wrong (soakd, soakctl).
constexpr int kExitOk = 0;
constexpr int kExitFailure = 1;
constexpr int kExitUsage = 2;

struct ArgSpec {
  std::set<std::string> flags;    // options without a value, e.g. "json"
  std::set<std::string> options;  // options with a value, e.g. "config"
};

class Args {
 public:
  static Result<Args> parse(const std::vector<std::string>& argv, const ArgSpec& spec);

  bool flag(const std::string& name) const { return flags_.count(name) > 0; }
  std::optional<std::string> get(const std::string& name) const {
    auto it = options_.find(name);
    if (it == options_.end()) return std::nullopt;
    return it->second;
  }
  const std::vector<std::string>& positionals() const { return positionals_; }

 private:
  std::set<std::string> flags_;
  std::map<std::string, std::string> options_;
  std::vector<std::string> positionals_;
};

}  // namespace soak
