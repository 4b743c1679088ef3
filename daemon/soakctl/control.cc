// `soakctl start / abort / promote`: a request appended to control_requests,
// which soakd picks up on its next control poll (daemon/campaigns.h).
#include "daemon/soakctl/common.h"

#include <cstdlib>
#include <string>

namespace soak::soakctl {

namespace {

int cmd_control(const Ctl& c, const Args& a, Store& st, ControlAction action) {
  const std::string verb(to_string(action));
  if (action == ControlAction::Promote && (!a.flag("override") || !a.get("why"))) {
    c.err << "soakctl promote: promoting by hand needs --override and --why TEXT (it is recorded as an override)\n";
    return kCtlExitUsage;
  }
  ControlRequest r;
  r.wall_ms = c.clock.wall_ms();
  r.candidate = a.positionals()[1];
  r.action = action;
  r.is_override = a.flag("override");
  const char* user = std::getenv("USER");
  r.who = a.get("who").value_or(user ? user : "unknown");
  r.why = a.get("why").value_or("");
  if (auto row = find_candidate(st, r.candidate, std::nullopt)) r.candidate_id = row->id;
  auto id = st.insert_control(r);
  if (!id) {
    c.err << "soakctl: cannot queue the request: " << id.message() << "\n";
    return kCtlExitStore;
  }
  if (a.flag("json")) {
    json j;
    j["request_id"] = *id;
    j["action"] = verb;
    j["candidate"] = r.candidate;
    j["who"] = r.who;
    j["why"] = r.why;
    c.out << j.dump(2) << "\n";
  } else {
    c.out << "request " << *id << " queued: " << verb << " " << r.candidate << " (by " << r.who
          << (r.why.empty() ? "" : ": " + r.why) << "). soakd picks it up within a second; see "
          << "`soakctl events --kind control`.\n";
  }
  return kCtlExitOk;
}

int cmd_start(const Ctl& c, const Args& a, Store& st) { return cmd_control(c, a, st, ControlAction::Start); }
int cmd_abort(const Ctl& c, const Args& a, Store& st) { return cmd_control(c, a, st, ControlAction::Abort); }
int cmd_promote(const Ctl& c, const Args& a, Store& st) { return cmd_control(c, a, st, ControlAction::Promote); }

}  // namespace

const Command kStartCommand{"start", Operand::Candidate, {{"json"}, {"who", "why"}}, OpenMode::Control, cmd_start};
const Command kAbortCommand{"abort", Operand::Candidate, {{"json"}, {"who", "why"}}, OpenMode::Control, cmd_abort};
const Command kPromoteCommand{"promote", Operand::Candidate, {{"json", "override"}, {"who", "why"}}, OpenMode::Control,
                              cmd_promote};

}  // namespace soak::soakctl
