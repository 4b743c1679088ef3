#include "core/args.h"

namespace soak {

Result<Args> Args::parse(const std::vector<std::string>& argv, const ArgSpec& spec) {
  Args a;
  bool only_positionals = false;
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& s = argv[i];
    if (only_positionals || s.size() < 2 || s.rfind("--", 0) != 0) {
      if (s == "-h") {
        a.flags_.insert("help");
        continue;
      }
      if (!only_positionals && s.size() >= 2 && s[0] == '-' && s != "-") return make_error("unknown option " + s);
      a.positionals_.push_back(s);
      continue;
    }
    if (s == "--") {
      only_positionals = true;
      continue;
    }
    std::string name = s.substr(2);
    std::optional<std::string> inline_value;
    if (auto eq = name.find('='); eq != std::string::npos) {
      inline_value = name.substr(eq + 1);
      name = name.substr(0, eq);
    }
    if (spec.flags.count(name)) {
      if (inline_value) return make_error("option --" + name + " takes no value");
      a.flags_.insert(name);
    } else if (spec.options.count(name)) {
      if (inline_value) {
        a.options_[name] = *inline_value;
      } else {
        if (i + 1 >= argv.size()) return make_error("option --" + name + " needs a value");
        a.options_[name] = argv[++i];
      }
    } else {
      return make_error("unknown option --" + name);
    }
  }
  return a;
}

}  // namespace soak
