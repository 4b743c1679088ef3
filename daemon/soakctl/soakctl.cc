// soakctl: queries of a soakd store, and control requests to the daemon
// through the store. Queries open the store read-only, so they work while soakd
// writes; start/abort/promote only append a row to control_requests, which the
// daemon acts on. soakctl never creates, migrates or rewrites results.
#include "daemon/soakctl/soakctl.h"

#include <algorithm>
#include <string>
#include <vector>

#include "daemon/soakctl/common.h"
#include "daemon/version.h"

namespace soak {

int soakctl_main(const std::vector<std::string>& argv, std::ostream& out, std::ostream& err, const Clock& clock) {
  using namespace soakctl;
  ArgSpec spec{{"help", "version", "json", "override"},
               {"db", "config", "model", "runtime", "build", "candidate", "kind", "limit", "who", "why"}};
  auto a = Args::parse(argv, spec);
  if (!a) {
    err << "soakctl: " << a.message() << " (see soakctl --help)\n";
    return kCtlExitUsage;
  }
  if (a->flag("help")) {
    out << usage_text();
    return kCtlExitOk;
  }
  if (a->flag("version")) {
    out << "soakctl " << kSoakdVersion << "\n";
    return kCtlExitOk;
  }
  if (a->positionals().empty()) {
    err << usage_text();
    return kCtlExitUsage;
  }
  const std::string& cmd = a->positionals()[0];
  static const std::vector<std::string> kCommands{"status", "verdict", "explain", "history",
                                                  "events", "start", "abort", "promote"};
  if (std::find(kCommands.begin(), kCommands.end(), cmd) == kCommands.end()) {
    err << "soakctl: unknown command \"" << cmd << "\" (see soakctl --help)\n";
    return kCtlExitUsage;
  }
  auto action = parse_control_action(cmd);
  auto store = open_store(*a, action ? OpenMode::Control : OpenMode::ReadOnly);
  if (!store) {
    err << "soakctl: " << store.message() << "\n";
    return kCtlExitStore;
  }
  Ctl c{out, err, clock};
  if (action) return cmd_control(c, *a, **store, *action);
  if (cmd == "status") return cmd_status(c, *a, **store);
  if (cmd == "explain") return cmd_explain(c, *a, **store);
  if (cmd == "history") return cmd_history(c, *a, **store);
  if (cmd == "events") return cmd_events(c, *a, **store);
  return cmd_verdict(c, *a, **store);
}

}  // namespace soak
