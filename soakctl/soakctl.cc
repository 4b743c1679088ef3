// soakctl: queries of a soakd store, and control requests to the daemon
// through the store. Queries open the store read-only, so they work while soakd
// writes; start/abort/promote only append a row to control_requests, which the
// daemon acts on. soakctl never creates, migrates or rewrites results.
#include "soakctl/soakctl.h"

#include <set>
#include <string>
#include <vector>

#include "core/version.h"
#include "soakctl/common.h"

namespace soak {

namespace soakctl {

const std::vector<const Command*>& commands() {
  static const std::vector<const Command*> kCommands{
      &kStatusCommand, &kVerdictCommand, &kEquivalenceCommand, &kExplainCommand, &kHistoryCommand, &kEventsCommand,
      &kReportCommand, &kMetricsCommand, &kStartCommand,       &kAbortCommand,   &kPromoteCommand};
  return kCommands;
}

namespace {

const ArgSpec kStoreArgs{{}, {"db", "config"}};  // every command's: where the store is
const ArgSpec kProgramArgs{{"help", "version"}, {}};

void add(ArgSpec& to, const ArgSpec& from) {
  to.flags.insert(from.flags.begin(), from.flags.end());
  to.options.insert(from.options.begin(), from.options.end());
}

// What the command line may hold at all: each command's options, the store's
// and the program's; whether the command given takes them is checked after.
ArgSpec all_args() {
  ArgSpec all;
  add(all, kProgramArgs);
  add(all, kStoreArgs);
  for (const Command* cmd : commands()) add(all, cmd->args);
  return all;
}

const Command* find_command(const std::string& name) {
  for (const Command* cmd : commands())
    if (cmd->name == name) return cmd;
  return nullptr;
}

std::string command_names() {
  std::string s;
  for (const Command* cmd : commands()) s += (s.empty() ? "" : ", ") + std::string(cmd->name);
  return s;
}

// The command's argument count and options; empty when they fit, else the
// usage error naming the fix.
std::string misuse(const Command& cmd, const Args& a) {
  const std::string name(cmd.name);
  const std::string see = "see soakctl --help";
  const size_t given = a.positionals().size() - 1;
  if (cmd.operand == Operand::Candidate && given != 1)
    return "soakctl " + name + ": give exactly one CANDIDATE, a name as `soakctl status` lists it (" + see + ")";
  if (cmd.operand == Operand::TwoCandidates && given != 2)
    return "soakctl " + name + ": give two candidates, A and B, names as `soakctl status` lists them (" + see + ")";
  if (cmd.operand == Operand::OptionalCandidate && given > 1)
    return "soakctl " + name + ": give at most one CANDIDATE, a name as `soakctl status` lists it (" + see + ")";
  if (cmd.operand == Operand::None && given != 0)
    return "soakctl " + name + ": unexpected argument \"" + a.positionals()[1] + "\" (" + name +
           " takes only options: " + option_list(cmd.args) + "; " + see + ")";
  ArgSpec own = cmd.args;
  add(own, kStoreArgs);
  add(own, kProgramArgs);
  const ArgSpec all = all_args();
  std::set<std::string> names = all.flags;
  names.insert(all.options.begin(), all.options.end());
  for (const auto& o : names) {
    const bool used = a.flag(o) || a.get(o).has_value();
    if (used && !own.flags.count(o) && !own.options.count(o))
      return "soakctl " + name + ": --" + o + " does not apply to " + name + " (its options: " + option_list(cmd.args) +
             "; " + see + ")";
  }
  return {};
}

}  // namespace

}  // namespace soakctl

int soakctl_main(const std::vector<std::string>& argv, std::ostream& out, std::ostream& err, const Clock& clock,
                 const Terminal& terminal) {
  using namespace soakctl;
  auto a = Args::parse(argv, all_args());
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
  const Command* cmd = find_command(a->positionals()[0]);
  if (!cmd) {
    err << "soakctl: unknown command \"" << a->positionals()[0] << "\" (one of: " << command_names()
        << "; see soakctl --help)\n";
    return kCtlExitUsage;
  }
  if (auto why = misuse(*cmd, *a); !why.empty()) {
    err << why << "\n";
    return kCtlExitUsage;
  }
  auto store = open_store(*a, cmd->mode);
  if (!store) {
    err << "soakctl: " << store.message() << "\n";
    return kCtlExitStore;
  }
  // A query reads one committed state of the store, whatever soakd writes meanwhile.
  if (cmd->mode == OpenMode::ReadOnly)
    if (auto st = (*store)->begin_snapshot(); !st) {
      err << "soakctl: " << st.message() << "\n";
      return kCtlExitStore;
    }
  Ctl c{out, err, clock, terminal};
  return cmd->run(c, *a, **store);
}

}  // namespace soak
