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

#include <nlohmann/json.hpp>

#include "core/clock.h"
#include "core/result.h"
#include "core/types.h"
#include "daemon/args.h"
#include "daemon/soakctl/soakctl.h"
#include "storage/sqlite_store.h"
#include "storage/store.h"

namespace soak::soakctl {

using json = nlohmann::ordered_json;

struct Ctl {
  std::ostream& out;
  std::ostream& err;
  const Clock& clock;
};

// The store named by --db, else by --config FILE's "store", else the default path.
Result<std::unique_ptr<SqliteStore>> open_store(const Args& a, OpenMode mode);

// Newest row of a config name (or the named build).
std::optional<CandidateRow> find_candidate(Store& st, const std::string& name, const std::optional<std::string>& build);

std::string iso_utc(int64_t ms);
json stage_json(const StageRow& s, int64_t now_ms);
json verdict_json(const VerdictRow& v);

// The commands; each returns its exit code (daemon/soakctl/soakctl.h).
std::string usage_text();
int cmd_status(const Ctl& c, const Args& a, Store& st);
int cmd_verdict(const Ctl& c, const Args& a, Store& st);
int cmd_explain(const Ctl& c, const Args& a, Store& st);
int cmd_history(const Ctl& c, const Args& a, Store& st);
int cmd_events(const Ctl& c, const Args& a, Store& st);
int cmd_control(const Ctl& c, const Args& a, Store& st, ControlAction action);

}  // namespace soak::soakctl
