// What every soakctl command shares: the streams and clock it runs with, the
// store it reads (found through --db, --config or the default path), candidate
// lookup by config name, and the formatting of times, stages and verdicts in
// text and JSON. Each command lives in its own file and is declared here.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/args.h"
#include "core/clock.h"
#include "core/duration.h"
#include "core/result.h"
#include "core/types.h"
#include "soakctl/soakctl.h"
#include "storage/sqlite_store.h"
#include "storage/store.h"

namespace soak::soakctl {

using json = nlohmann::ordered_json;

struct Ctl {
  std::ostream& out;
  std::ostream& err;
  const Clock& clock;
  const Terminal& terminal;
};

// `soakctl events` without --limit: about a screenful.
inline constexpr int64_t kDefaultEventLimit = 50;

// The store named by --db, else by --config FILE's "store", else the default path.
Result<std::string> store_path(const Args& a);
Result<std::unique_ptr<SqliteStore>> open_store(const Args& a, OpenMode mode);

// Newest row of a config name (or the named build).
std::optional<CandidateRow> find_candidate(Store& st, const std::string& name, const std::optional<std::string>& build);
// What a command that looks a candidate up by name says when the store has no
// row of that name (at that build): one wording for every command, ending in
// a newline.
std::string no_candidate_text(const std::string& name, const std::optional<std::string>& build);
// find_candidate(), or no_candidate_text() on c.err: the caller then exits
// with kCtlExitStore.
std::optional<CandidateRow> lookup_candidate(const Ctl& c, Store& st, const std::string& name,
                                             const std::optional<std::string>& build);

using soak::iso_utc;  // core/duration.h
json stage_json(const StageRow& s, int64_t now_ms);
json verdict_json(const VerdictRow& v);
// A build's context reach (docs/DESIGN.md §3.9): JSON, and one line of text
// ("context reach 32K, configured 131K; runtime context 32768 per slot, from /props n_ctx").
json reach_json(const ContextReach& r);
std::string reach_text(const ContextReach& r);
// The latest context reach of a candidate; nullopt when none (or unreadable:
// the reach is an addition to what a command shows, never a reason to fail it).
std::optional<ContextReach> latest_reach(Store& st, int64_t candidate_id);

// Whether a verdict recomputed from the stored rows is the stored one: what
// `explain` checks and the report shows. A stage that passed before the soak
// is stored as "running" (the campaign goes on); its judge says "promoted".
bool same_verdict(const VerdictRow& stored, const VerdictRow& again);

// A candidate row's runtime launches (managed candidates; none for the others),
// as explain and history show them with the build (launches.cc).
Result<std::vector<RuntimeLaunch>> launches_of(Store& st, int64_t candidate_id);
json launches_json(const std::vector<RuntimeLaunch>& ls);
void print_launches(std::ostream& out, const std::vector<RuntimeLaunch>& ls, const std::string& indent);

// Whether a command takes one candidate name as its argument (`explain NAME`);
// the dispatcher checks the count, so a Candidate command finds it at positionals()[1].
enum class Operand { None, Candidate, OptionalCandidate, TwoCandidates };

// One command as the dispatcher (soakctl.cc) sees it. Each command file defines
// its own next to the code that reads the options; the dispatcher refuses an
// option the command does not take, and `--help` documents each (help.cc,
// checked by tests/unit/soakctl_test.cc).
struct Command {
  std::string_view name;
  Operand operand = Operand::None;
  ArgSpec args;                        // the command's own flags and options; --db and --config come on top
  OpenMode mode = OpenMode::ReadOnly;  // queries read; start/abort/promote queue a request
  int (*run)(const Ctl& c, const Args& a, Store& st) = nullptr;  // returns the exit code (soakctl.h)
};

extern const Command kStatusCommand;       // status.cc
extern const Command kVerdictCommand;      // verdict.cc
extern const Command kEquivalenceCommand;  // equivalence.cc
extern const Command kExplainCommand;      // explain.cc
extern const Command kHistoryCommand;      // history.cc
extern const Command kEventsCommand;       // events.cc
extern const Command kReportCommand;       // report.cc
extern const Command kMetricsCommand;      // metrics.cc
extern const Command kStartCommand;        // control.cc
extern const Command kAbortCommand;        // control.cc
extern const Command kPromoteCommand;      // control.cc

// Every command, in the order --help lists them.
const std::vector<const Command*>& commands();

// The names of a spec's flags and options, as "--a, --b".
std::string option_list(const ArgSpec& spec);

// `soakctl --help` (help.cc).
std::string usage_text();

}  // namespace soak::soakctl
