// `soakctl start / abort / promote`: a request appended to control_requests;
// then the running soakd is told (SIGUSR1 to the pid in its lock file) so it
// reads the request at once; one that cannot be told (another user's soakd)
// reads it on its fallback poll (kControlPollEveryMs, storage/store.h).
#include "soakctl/common.h"

#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "storage/lock.h"
#include "storage/store.h"

namespace soak::soakctl {

namespace {

// "soakd (pid N) told" when the running soakd was signalled; else when it will look.
std::string tell_soakd(const Args& a) {
  const std::string later = "soakd picks it up within " + format_duration(kControlPollEveryMs);
  auto path = store_path(a);
  if (!path) return later;
  auto pid = DaemonLock::running_pid(*path);
  if (!pid) return "no soakd is running on this store now; the next one to start picks it up";
  // Never this process: a test or tool holding the lock in-process has no SIGUSR1 handler.
  if (*pid == ::getpid() || ::kill(*pid, SIGUSR1) != 0) return later;
  return "soakd (pid " + std::to_string(*pid) + ") was told and picks it up now";
}

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
  const std::string told = tell_soakd(a);
  if (a.flag("json")) {
    json j;
    j["request_id"] = *id;
    j["action"] = verb;
    j["candidate"] = r.candidate;
    j["who"] = r.who;
    j["why"] = r.why;
    j["soakd"] = told;
    c.out << j.dump(2) << "\n";
  } else {
    c.out << "request " << *id << " queued: " << verb << " " << r.candidate << " (by " << r.who
          << (r.why.empty() ? "" : ": " + r.why) << "). " << told << "; see "
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
const Command kPromoteCommand{
    "promote", Operand::Candidate, {{"json", "override"}, {"who", "why"}}, OpenMode::Control, cmd_promote};

}  // namespace soak::soakctl
