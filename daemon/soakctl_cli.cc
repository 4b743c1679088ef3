// soakctl: read-only queries of a soakd store (and, through the store, control
// requests to the daemon). Opens the store read-only, so it works while soakd
// writes, and never changes results.
#include "daemon/soakctl_cli.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include <nlohmann/json.hpp>

#include "daemon/args.h"
#include "daemon/base/config.h"
#include "daemon/version.h"
#include "storage/sqlite_store.h"

namespace soak {

using json = nlohmann::ordered_json;

namespace {

const char* kUsage = R"(soakctl — query soakd's promotion verdicts

Usage:
  soakctl [STORE] status [--json]
      One row per candidate: model, runtime, build, current stage with a
      progress bar, latest verdict.
  soakctl [STORE] verdict --model M --runtime R [--build B] [--json]
      The latest verdict of model M on runtime R (at build B, else the newest
      build seen). Exit code: 0 promoted, 1 rejected, 3 anything else
      (running, hold, inconclusive, blocked, or no verdict yet).

STORE (first match wins):
  --db PATH        the store file
  --config FILE    the store named in soakd's config FILE
  (default)        )" "%DEFAULT%" R"(

Every command takes --json for machine-readable output.
Exit codes: 0 ok / promoted, 1 rejected, 2 usage error, 3 not decided,
            4 store or candidate not found / unreadable.
)";

std::string usage_text() {
  std::string u = kUsage;
  auto pos = u.find("%DEFAULT%");
  u.replace(pos, 9, default_store_path());
  return u;
}

std::string iso_utc(int64_t ms) {
  time_t t = static_cast<time_t>(ms / 1000);
  tm tmv{};
  gmtime_r(&t, &tmv);
  char buf[32];
  strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tmv);
  return buf;
}

std::string progress_bar(double fraction, int width) {
  fraction = std::clamp(fraction, 0.0, 1.0);
  int filled = static_cast<int>(std::lround(fraction * width));
  std::string bar = "[";
  for (int i = 0; i < width; ++i) bar += i < filled ? "#" : ".";
  bar += "] ";
  bar += std::to_string(static_cast<int>(std::floor(fraction * 100))) + "%";
  return bar;
}

struct Ctl {
  std::ostream& out;
  std::ostream& err;
  const Clock& clock;
};

Result<std::unique_ptr<SqliteStore>> open_store(const Args& a) {
  std::string path;
  if (auto db = a.get("db")) {
    path = expand_home(*db);
  } else if (auto cfg_path = a.get("config")) {
    auto cfg = load_config(*cfg_path);
    if (!cfg) return make_error(cfg.message());
    path = cfg->store_path;
  } else {
    path = default_store_path();
  }
  return SqliteStore::open(path, OpenMode::ReadOnly);
}

json stage_json(const StageRow& s, int64_t now_ms) {
  json j;
  j["kind"] = to_string(s.kind);
  j["state"] = to_string(s.state);
  j["started_ms"] = s.started_ms;
  j["length_ms"] = s.length_ms;
  j["deadline_ms"] = s.deadline_ms;
  if (s.ended_ms) j["ended_ms"] = *s.ended_ms;
  if (s.state == StageState::Running && s.length_ms > 0)
    j["progress"] = std::clamp(static_cast<double>(now_ms - s.started_ms) / static_cast<double>(s.length_ms), 0.0, 1.0);
  if (!s.reason.empty()) j["reason"] = s.reason;
  return j;
}

json verdict_json(const VerdictRow& v) {
  json j;
  j["state"] = to_string(v.state);
  j["stage"] = v.stage;
  j["reason"] = v.reason;
  j["at_ms"] = v.wall_ms;
  j["at"] = iso_utc(v.wall_ms);
  j["judge_version"] = v.judge_version;
  j["config_hash"] = v.config_hash;
  j["evidence"] = {{"first_id", v.evidence_first_id}, {"last_id", v.evidence_last_id}};
  j["baseline_mode"] = v.baseline_mode;
  if (v.baseline_id) j["baseline_candidate_id"] = *v.baseline_id;
  if (v.is_override) j["override"] = {{"who", v.who}, {"why", v.why}};
  return j;
}

int cmd_status(const Ctl& c, const Args& a, Store& st) {
  auto rows = st.status();
  if (!rows) {
    c.err << "soakctl: " << rows.message() << "\n";
    return kCtlExitStore;
  }
  const int64_t now = c.clock.wall_ms();
  if (a.flag("json")) {
    json arr = json::array();
    for (const auto& r : *rows) {
      json j;
      j["candidate"] = r.candidate.name;
      j["model"] = r.candidate.model;
      j["runtime"] = r.candidate.runtime;
      j["build"] = r.candidate.build;
      j["base_url"] = r.candidate.base_url;
      j["candidate_id"] = r.candidate.id;
      j["stage"] = r.stage ? stage_json(*r.stage, now) : json(nullptr);
      j["verdict"] = r.verdict ? verdict_json(*r.verdict) : json(nullptr);
      arr.push_back(std::move(j));
    }
    c.out << arr.dump(2) << "\n";
    return kCtlExitOk;
  }
  if (rows->empty()) {
    c.out << "no candidates yet (soakd registers each candidate once it has read its build)\n";
    return kCtlExitOk;
  }
  char line[512];
  std::snprintf(line, sizeof line, "%-22s %-24s %-10s %-18s %-7s %-19s %s\n", "CANDIDATE", "MODEL", "RUNTIME", "BUILD",
                "STAGE", "PROGRESS", "VERDICT");
  c.out << line;
  for (const auto& r : *rows) {
    std::string stage = r.stage ? std::string(to_string(r.stage->kind)) : "-";
    std::string progress = "-";
    if (r.stage) {
      if (r.stage->state == StageState::Running && r.stage->length_ms > 0)
        progress = progress_bar(static_cast<double>(now - r.stage->started_ms) / static_cast<double>(r.stage->length_ms), 10);
      else
        progress = std::string(to_string(r.stage->state));
    }
    std::string verdict = r.verdict ? std::string(to_string(r.verdict->state)) : "-";
    if (r.verdict && !r.verdict->reason.empty() && r.verdict->state != VerdictState::Running)
      verdict += ": " + r.verdict->reason;
    if (r.verdict && r.verdict->is_override) verdict += " (override by " + r.verdict->who + ")";
    std::snprintf(line, sizeof line, "%-22s %-24s %-10s %-18s %-7s %-19s ", r.candidate.name.c_str(),
                  r.candidate.model.c_str(), r.candidate.runtime.c_str(), r.candidate.build.c_str(), stage.c_str(),
                  progress.c_str());
    c.out << line << verdict << "\n";
  }
  return kCtlExitOk;
}

int cmd_verdict(const Ctl& c, const Args& a, Store& st) {
  auto model = a.get("model");
  auto runtime = a.get("runtime");
  if (!model || !runtime) {
    c.err << "soakctl verdict: --model M and --runtime R are required (see soakctl --help)\n";
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
    if (r.candidate.model != *model || r.candidate.runtime != *runtime) continue;
    if (build && r.candidate.build != *build) continue;
    // Newest build seen wins: the most recently first-seen candidate.
    if (!best || r.candidate.first_seen_ms > best->candidate.first_seen_ms ||
        (r.candidate.first_seen_ms == best->candidate.first_seen_ms && r.candidate.id > best->candidate.id))
      best = &r;
  }
  if (!best) {
    c.err << "soakctl: no candidate with model \"" << *model << "\" on runtime \"" << *runtime << "\""
          << (build ? " at build \"" + *build + "\"" : std::string()) << " in the store\n";
    return kCtlExitStore;
  }
  int code = kCtlExitUndecided;
  if (best->verdict && best->verdict->state == VerdictState::Promoted) code = kCtlExitOk;
  if (best->verdict && best->verdict->state == VerdictState::Rejected) code = kCtlExitRejected;
  if (a.flag("json")) {
    json j;
    j["model"] = best->candidate.model;
    j["runtime"] = best->candidate.runtime;
    j["build"] = best->candidate.build;
    j["candidate"] = best->candidate.name;
    j["verdict"] = best->verdict ? verdict_json(*best->verdict) : json(nullptr);
    j["exit_code"] = code;
    c.out << j.dump(2) << "\n";
  } else {
    c.out << best->candidate.model << " on " << best->candidate.runtime << " at " << best->candidate.build << ": ";
    if (best->verdict) {
      c.out << to_string(best->verdict->state);
      if (!best->verdict->stage.empty()) c.out << " (" << best->verdict->stage << ")";
      if (!best->verdict->reason.empty()) c.out << " — " << best->verdict->reason;
      c.out << " [" << iso_utc(best->verdict->wall_ms) << "]\n";
    } else {
      c.out << "no verdict yet\n";
    }
  }
  return code;
}

}  // namespace

int soakctl_main(const std::vector<std::string>& argv, std::ostream& out, std::ostream& err, const Clock& clock) {
  ArgSpec spec{{"help", "version", "json"}, {"db", "config", "model", "runtime", "build"}};
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
  static const std::vector<std::string> kCommands{"status", "verdict"};
  if (std::find(kCommands.begin(), kCommands.end(), cmd) == kCommands.end()) {
    err << "soakctl: unknown command \"" << cmd << "\" (see soakctl --help)\n";
    return kCtlExitUsage;
  }
  auto store = open_store(*a);
  if (!store) {
    err << "soakctl: " << store.message() << "\n";
    return kCtlExitStore;
  }
  Ctl c{out, err, clock};
  if (cmd == "status") return cmd_status(c, *a, **store);
  return cmd_verdict(c, *a, **store);
}

}  // namespace soak
