// `soakctl metrics`: the Prometheus text soakd writes to its metrics.textfile
// (reports/textfile.h), printed from the store; --json gives the same samples
// as a list of {name, labels, value}.
#include "soakctl/common.h"

#include <sstream>
#include <string>

#include "core/config.h"
#include "core/version.h"
#include "reports/textfile.h"

namespace soak::soakctl {

namespace {

// One exposition line, "name{k="v",...} value", as JSON.
json sample_json(const std::string& line) {
  json j;
  size_t i = line.find_first_of("{ ");
  j["name"] = line.substr(0, i);
  json labels = json::object();
  if (i != std::string::npos && line[i] == '{') {
    ++i;
    while (i < line.size() && line[i] != '}') {
      const size_t eq = line.find('=', i);
      const std::string key = line.substr(i, eq - i);
      std::string v;
      size_t k = eq + 2;  // past ="
      for (; k < line.size() && line[k] != '"'; ++k) {
        if (line[k] == '\\' && k + 1 < line.size()) {
          ++k;
          v += line[k] == 'n' ? '\n' : line[k];
        } else {
          v += line[k];
        }
      }
      labels[key] = v;
      i = k + 1;
      if (i < line.size() && line[i] == ',') ++i;
    }
    ++i;
  }
  j["labels"] = labels;
  j["value"] = std::stod(line.substr(line.rfind(' ') + 1));
  return j;
}

int cmd_metrics(const Ctl& c, const Args& a, Store& st) {
  report::MetricsOptions o;
  o.guard_window_ms = GuardRules{}.window_ms;
  o.version = std::string(kSoakdVersion);
  if (auto cfg_path = a.get("config"); cfg_path && !a.get("db")) {
    auto cfg = load_config(*cfg_path);  // read once already by open_store: it is valid
    if (cfg) o.guard_window_ms = cfg->defaults.guard.window_ms;
  }
  report::TextfileCollector m(o);
  const int64_t now = c.clock.wall_ms();
  if (auto r = m.refresh(st, now); !r) {
    c.err << "soakctl: " << r.message() << "\n";
    return kCtlExitStore;
  }
  const std::string text = m.render(now);
  if (!a.flag("json")) {
    c.out << text;
    return kCtlExitOk;
  }
  json arr = json::array();
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);)
    if (!line.empty() && line[0] != '#') arr.push_back(sample_json(line));
  c.out << arr.dump(2) << "\n";
  return kCtlExitOk;
}

}  // namespace

const Command kMetricsCommand{"metrics", Operand::None, {{"json"}, {}}, OpenMode::ReadOnly, cmd_metrics};

}  // namespace soak::soakctl
