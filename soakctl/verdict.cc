// `soakctl verdict`: the latest verdict of a model on a runtime, as an exit code
// a script can branch on.
#include "soakctl/common.h"

#include <string>

namespace soak::soakctl {

namespace {

int cmd_verdict(const Ctl& c, const Args& a, Store& st) {
  auto model = a.get("model");
  auto runtime = a.get("runtime");
  if (!model || !runtime) {
    c.err << "soakctl verdict: needs --model M and --runtime R (soakctl status lists each candidate's model and "
             "runtime; see soakctl --help)\n";
    return kCtlExitUsage;
  }
  const auto kind = parse_runtime_kind(*runtime);
  if (!kind) {
    c.err << "soakctl verdict: unknown --runtime \"" << *runtime << "\" (one of: " << runtime_kind_names() << ")\n";
    return kCtlExitUsage;
  }
  auto build = a.get("build");
  auto rows = st.status();
  if (!rows) {
    c.err << "soakctl: " << rows.message() << "\n";
    return kCtlExitStore;
  }
  const StatusRow* best = nullptr;
  for (const auto& r : *rows) {
    if (r.candidate.model != *model || r.candidate.runtime != *kind) continue;
    if (build && r.candidate.build != *build) continue;
    // Newest build seen wins: the most recently first-seen candidate.
    if (!best || r.candidate.first_seen_ms > best->candidate.first_seen_ms ||
        (r.candidate.first_seen_ms == best->candidate.first_seen_ms && r.candidate.id > best->candidate.id))
      best = &r;
  }
  if (!best) {
    c.err << "soakctl: no candidate with model \"" << *model << "\" on runtime \"" << *runtime << "\""
          << (build ? " at build \"" + *build + "\"" : std::string())
          << " in the store (soakctl status lists each candidate's model, runtime and build)\n";
    return kCtlExitStore;
  }
  int code = kCtlExitUndecided;
  if (best->verdict && best->verdict->state == VerdictState::Promoted) code = kCtlExitOk;
  if (best->verdict && best->verdict->state == VerdictState::Rejected) code = kCtlExitRejected;
  if (a.flag("json")) {
    json j;
    j["model"] = best->candidate.model;
    j["runtime"] = to_string(best->candidate.runtime);
    j["build"] = best->candidate.build;
    j["candidate"] = best->candidate.name;
    j["verdict"] = best->verdict ? verdict_json(*best->verdict) : json(nullptr);
    if (auto reach = latest_reach(st, best->candidate.id)) j["context_reach"] = reach_json(*reach);
    j["exit_code"] = code;
    c.out << j.dump(2) << "\n";
  } else {
    c.out << best->candidate.model << " on " << to_string(best->candidate.runtime) << " at " << best->candidate.build
          << ": ";
    if (best->verdict) {
      c.out << to_string(best->verdict->state);
      if (!best->verdict->stage.empty()) c.out << " (" << best->verdict->stage << ")";
      if (!best->verdict->reason.empty()) c.out << " — " << best->verdict->reason;
      c.out << " [" << iso_utc(best->verdict->wall_ms) << "]\n";
      if (auto reach = latest_reach(st, best->candidate.id)) c.out << reach_text(*reach) << "\n";
    } else {
      c.out << "no verdict yet\n";
    }
  }
  return code;
}

}  // namespace

const Command kVerdictCommand{
    "verdict", Operand::None, {{"json"}, {"model", "runtime", "build"}}, OpenMode::ReadOnly, cmd_verdict};

}  // namespace soak::soakctl
