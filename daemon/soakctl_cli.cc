// soakctl: queries of a soakd store, and control requests to the daemon
// through the store. Queries open the store read-only, so they work while soakd
// writes; start/abort/promote only append a row to control_requests, which the
// daemon acts on. soakctl never creates, migrates or rewrites results.
#include "daemon/soakctl_cli.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include <nlohmann/json.hpp>

#include <unistd.h>

#include "daemon/args.h"
#include "core/config.h"
#include "daemon/evidence.h"
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
  soakctl [STORE] explain CANDIDATE [--build B] [--json]
      Why: recomputes the latest judged verdict of CANDIDATE (a config name)
      from the stored rows and shows every metric with its n, estimate,
      baseline, interval, threshold and reason. Exit 5 if the recomputed
      verdict differs from the stored one.
  soakctl [STORE] history CANDIDATE [--json]
      Every build of CANDIDATE with its stages and verdicts.
  soakctl [STORE] events [--candidate CANDIDATE] [--kind K] [--limit N] [--json]
      The latest events (daemon start/stop, reloads, build changes, gaps,
      guard trips, restarts, controls), newest last. Default limit 50.
  soakctl [STORE] start CANDIDATE [--who W] [--why TEXT]
      Ask soakd to (re)start CANDIDATE's campaign from smoke now, ignoring the
      nightly window.
  soakctl [STORE] abort CANDIDATE [--who W] [--why TEXT]
      Ask soakd to stop CANDIDATE's running stage; the verdict becomes
      inconclusive, recording who and why.
  soakctl [STORE] promote CANDIDATE --override [--who W] --why TEXT
      Promote by hand. Recorded as an override with who and why.
      start/abort/promote are requests through the store: soakd picks them up
      within a second (see `soakctl events --kind control`).

STORE (first match wins):
  --db PATH        the store file
  --config FILE    the store named in soakd's config FILE
  (default)        )" "%DEFAULT%" R"(

Every command takes --json for machine-readable output.
Exit codes: 0 ok / promoted, 1 rejected, 2 usage error, 3 not decided,
            4 store or candidate not found / unreadable, 5 explain: the
            recomputed verdict differs from the stored one.
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

// The status table shows the start of a reason; `explain` shows all of it.
constexpr size_t kStatusReasonChars = 90;

std::string clip(const std::string& s, size_t n) {
  if (s.size() <= n) return s;
  size_t cut = n;
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;  // not inside a UTF-8 sequence
  return s.substr(0, cut) + "...";
}

struct Ctl {
  std::ostream& out;
  std::ostream& err;
  const Clock& clock;
};

Result<std::unique_ptr<SqliteStore>> open_store(const Args& a, OpenMode mode) {
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
  return SqliteStore::open(path, mode);
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
      j["runtime"] = to_string(r.candidate.runtime);
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
      verdict += ": " + clip(r.verdict->reason, kStatusReasonChars);
    if (r.verdict && r.verdict->is_override) verdict += " (override by " + r.verdict->who + ")";
    std::snprintf(line, sizeof line, "%-22s %-24s %-10s %-18s %-7s %-19s ", r.candidate.name.c_str(),
                  r.candidate.model.c_str(), std::string(to_string(r.candidate.runtime)).c_str(), r.candidate.build.c_str(), stage.c_str(),
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
    if (r.candidate.model != *model || to_string(r.candidate.runtime) != *runtime) continue;
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
    j["runtime"] = to_string(best->candidate.runtime);
    j["build"] = best->candidate.build;
    j["candidate"] = best->candidate.name;
    j["verdict"] = best->verdict ? verdict_json(*best->verdict) : json(nullptr);
    j["exit_code"] = code;
    c.out << j.dump(2) << "\n";
  } else {
    c.out << best->candidate.model << " on " << to_string(best->candidate.runtime) << " at " << best->candidate.build << ": ";
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


// Newest row of a config name (or the named build).
std::optional<CandidateRow> find_candidate(Store& st, const std::string& name, const std::optional<std::string>& build) {
  auto rows = st.candidates();
  if (!rows) return std::nullopt;
  std::optional<CandidateRow> best;
  for (const auto& r : *rows) {
    if (r.name != name || (build && r.build != *build)) continue;
    if (!best || r.id > best->id) best = r;
  }
  return best;
}

std::string fmt_num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

json metric_json(const MetricEvidence& m) {
  json j;
  j["metric"] = m.metric;
  j["result"] = to_string(m.result);
  j["n"] = m.n;
  j["n_baseline"] = m.n_baseline;
  j["estimate"] = m.estimate;
  j["baseline"] = m.baseline;
  j["interval"] = {m.lo, m.hi};
  j["threshold"] = m.threshold;
  j["p_value"] = m.p_value;
  j["reason"] = m.reason;
  return j;
}

// A stage that passed before the soak is stored as "running" (the campaign goes
// on) with the judge's evidence; the judge itself says "promoted" for it.
bool same_verdict(const VerdictRow& stored, const VerdictRow& again) {
  const bool state_ok = stored.state == again.state ||
                        (stored.state == VerdictState::Running && again.state == VerdictState::Promoted &&
                         stored.stage != "soak");
  return state_ok && stored.reason == again.reason && stored.judge_version == again.judge_version &&
         stored.evidence_first_id == again.evidence_first_id && stored.evidence_last_id == again.evidence_last_id &&
         stored.baseline_mode == again.baseline_mode && metrics_to_json(stored.metrics) == metrics_to_json(again.metrics);
}

int cmd_explain(const Ctl& c, const Args& a, Store& st) {
  if (a.positionals().size() != 2) {
    c.err << "soakctl explain: give exactly one CANDIDATE (see soakctl --help)\n";
    return kCtlExitUsage;
  }
  const std::string& name = a.positionals()[1];
  auto row = find_candidate(st, name, a.get("build"));
  if (!row) {
    c.err << "soakctl: no candidate named \"" << name << "\"" << (a.get("build") ? " at build " + *a.get("build") : "")
          << " in the store\n";
    return kCtlExitStore;
  }
  auto all = st.verdicts(row->id);
  if (!all) {
    c.err << "soakctl: " << all.message() << "\n";
    return kCtlExitStore;
  }
  const VerdictRow* judged = nullptr;
  for (const auto& v : *all)
    if (recipe_from_json(v.judge_input_json).ok()) judged = &v;
  const VerdictRow* latest = all->empty() ? nullptr : &all->back();
  if (!judged) {
    c.out << name << " (" << row->model << " on " << to_string(row->runtime) << " at " << row->build << "): ";
    if (latest)
      c.out << to_string(latest->state) << (latest->reason.empty() ? "" : " — " + latest->reason)
            << (latest->is_override ? " (override by " + latest->who + ": " + latest->why + ")" : "")
            << "\nno judged stage yet: nothing to recompute\n";
    else
      c.out << "no verdict yet\n";
    return kCtlExitOk;
  }
  auto recipe = recipe_from_json(judged->judge_input_json);
  auto again = judge_from_store(st, *recipe);
  if (!again) {
    c.err << "soakctl: cannot recompute: " << again.message() << "\n";
    return kCtlExitStore;
  }
  const bool identical = same_verdict(*judged, *again);
  if (a.flag("json")) {
    json j;
    j["candidate"] = name;
    j["model"] = row->model;
    j["runtime"] = to_string(row->runtime);
    j["build"] = row->build;
    j["verdict"] = verdict_json(*judged);
    json ms = json::array();
    for (const auto& m : again->metrics) ms.push_back(metric_json(m));
    j["metrics"] = ms;
    j["recomputed"] = {{"identical", identical}, {"state", to_string(again->state)}, {"reason", again->reason}};
    if (latest && latest != judged) j["latest"] = verdict_json(*latest);
    c.out << j.dump(2) << "\n";
    return identical ? kCtlExitOk : kCtlExitMismatch;
  }
  c.out << name << " (" << row->model << " on " << to_string(row->runtime) << " at " << row->build << ")\n";
  c.out << "verdict: " << to_string(judged->state) << " (" << judged->stage << ")"
        << (judged->reason.empty() ? "" : " — " + judged->reason) << "\n";
  c.out << "judged " << iso_utc(judged->wall_ms) << " by " << judged->judge_version << ", config " << judged->config_hash
        << ", evidence probe rows " << judged->evidence_first_id << ".." << judged->evidence_last_id << ", baseline "
        << judged->baseline_mode
        << (judged->baseline_id ? " (candidate row " + std::to_string(*judged->baseline_id) + ")" : "") << "\n";
  if (latest && latest != judged)
    c.out << "now: " << to_string(latest->state) << (latest->reason.empty() ? "" : " — " + latest->reason) << "\n";
  c.out << "recomputed from the stored rows: "
        << (identical ? "identical" : "DIFFERENT: " + std::string(to_string(again->state)) + " — " + again->reason)
        << "\n\n";
  char line[256];
  std::snprintf(line, sizeof line, "%-8s %7s %7s %11s %11s %23s %9s %9s  %s\n", "RESULT", "N", "N_BASE", "ESTIMATE",
                "BASELINE", "INTERVAL", "THRESHOLD", "P", "METRIC");
  c.out << line;
  // What decided comes first: failures, then marginal results, then the rest.
  auto rank = [](const MetricEvidence& m) {
    if (m.result == MetricResult::Fail) return 0;
    if (m.result == MetricResult::Marginal) return 1;
    if (m.result == MetricResult::Insufficient) return 3;
    return 2;
  };
  std::vector<const MetricEvidence*> order;
  for (const auto& m : again->metrics) order.push_back(&m);
  std::stable_sort(order.begin(), order.end(), [&](const auto* x, const auto* y) { return rank(*x) < rank(*y); });
  for (const MetricEvidence* mp : order) {
    const MetricEvidence& m = *mp;
    std::string interval = "[" + fmt_num(m.lo) + ", " + fmt_num(m.hi) + "]";
    std::snprintf(line, sizeof line, "%-8s %7lld %7lld %11s %11s %23s %9s %9s  ", std::string(to_string(m.result)).c_str(),
                  static_cast<long long>(m.n), static_cast<long long>(m.n_baseline), fmt_num(m.estimate).c_str(),
                  fmt_num(m.baseline).c_str(), interval.c_str(), fmt_num(m.threshold).c_str(),
                  fmt_num(m.p_value).c_str());
    c.out << line << m.metric << "\n";
    if (!m.reason.empty()) c.out << "         " << m.reason << "\n";
  }
  return identical ? kCtlExitOk : kCtlExitMismatch;
}

int cmd_history(const Ctl& c, const Args& a, Store& st) {
  if (a.positionals().size() != 2) {
    c.err << "soakctl history: give exactly one CANDIDATE (see soakctl --help)\n";
    return kCtlExitUsage;
  }
  const std::string& name = a.positionals()[1];
  auto rows = st.candidates();
  if (!rows) {
    c.err << "soakctl: " << rows.message() << "\n";
    return kCtlExitStore;
  }
  json arr = json::array();
  bool any = false;
  for (const auto& r : *rows) {
    if (r.name != name) continue;
    any = true;
    auto stages = st.stages(r.id);
    auto verdicts = st.verdicts(r.id);
    if (!stages || !verdicts) {
      c.err << "soakctl: cannot read history\n";
      return kCtlExitStore;
    }
    if (a.flag("json")) {
      json j;
      j["build"] = r.build;
      j["candidate_id"] = r.id;
      j["first_seen"] = iso_utc(r.first_seen_ms);
      if (r.baseline_id) j["baseline_candidate_id"] = *r.baseline_id;
      json ss = json::array();
      for (const auto& s : *stages) ss.push_back(stage_json(s, c.clock.wall_ms()));
      j["stages"] = ss;
      json vs = json::array();
      for (const auto& v : *verdicts) vs.push_back(verdict_json(v));
      j["verdicts"] = vs;
      arr.push_back(std::move(j));
      continue;
    }
    c.out << r.build << " (candidate row " << r.id << ", first seen " << iso_utc(r.first_seen_ms)
          << (r.baseline_id ? ", baseline row " + std::to_string(*r.baseline_id) : "") << ")\n";
    for (const auto& s : *stages) {
      c.out << "  stage " << to_string(s.kind) << ": " << to_string(s.state) << ", " << iso_utc(s.started_ms);
      if (s.ended_ms) c.out << " -> " << iso_utc(*s.ended_ms) << " (" << format_duration(*s.ended_ms - s.started_ms) << ")";
      if (!s.reason.empty()) c.out << " — " << s.reason;
      c.out << "\n";
    }
    for (const auto& v : *verdicts) {
      c.out << "  verdict " << iso_utc(v.wall_ms) << " " << to_string(v.state) << " (" << v.stage << ")";
      if (!v.reason.empty()) c.out << " — " << v.reason;
      if (v.is_override) c.out << " [override by " << v.who << ": " << v.why << "]";
      c.out << "\n";
    }
  }
  if (!any) {
    c.err << "soakctl: no candidate named \"" << name << "\" in the store\n";
    return kCtlExitStore;
  }
  if (a.flag("json")) c.out << arr.dump(2) << "\n";
  return kCtlExitOk;
}

int cmd_events(const Ctl& c, const Args& a, Store& st) {
  EventQuery q;
  if (auto name = a.get("candidate")) {
    auto row = find_candidate(st, *name, std::nullopt);
    if (!row) {
      c.err << "soakctl: no candidate named \"" << *name << "\" in the store\n";
      return kCtlExitStore;
    }
    q.candidate_id = row->id;
    q.host_wide = HostWide::Include;
  }
  if (auto k = a.get("kind")) {
    q.kind = parse_event_kind(*k);
    if (!q.kind) {
      c.err << "soakctl events: unknown --kind \"" << *k << "\" (one of: " << event_kind_names() << ")\n";
      return kCtlExitUsage;
    }
  }
  int64_t limit = 50;
  if (auto l = a.get("limit")) {
    try {
      limit = std::stoll(*l);
    } catch (...) {
      limit = -1;
    }
    if (limit <= 0) {
      c.err << "soakctl events: --limit must be a positive number\n";
      return kCtlExitUsage;
    }
  }
  auto ev = st.events(q);
  if (!ev) {
    c.err << "soakctl: " << ev.message() << "\n";
    return kCtlExitStore;
  }
  size_t from = ev->size() > static_cast<size_t>(limit) ? ev->size() - static_cast<size_t>(limit) : 0;
  json arr = json::array();
  for (size_t i = from; i < ev->size(); ++i) {
    const Event& e = (*ev)[i];
    if (a.flag("json")) {
      json j;
      j["id"] = e.id;
      j["at"] = iso_utc(e.wall_ms);
      j["kind"] = to_string(e.kind);
      if (e.candidate_id) j["candidate_id"] = *e.candidate_id;
      j["detail"] = json::parse(e.detail_json, nullptr, false);
      if (e.duration_ms) j["duration_ms"] = *e.duration_ms;
      arr.push_back(std::move(j));
    } else {
      c.out << iso_utc(e.wall_ms) << "  " << to_string(e.kind);
      if (e.candidate_id) c.out << " (candidate row " << *e.candidate_id << ")";
      if (e.duration_ms) c.out << " " << format_duration(*e.duration_ms);
      c.out << "  " << e.detail_json << "\n";
    }
  }
  if (a.flag("json")) c.out << arr.dump(2) << "\n";
  return kCtlExitOk;
}

int cmd_control(const Ctl& c, const Args& a, Store& st, ControlAction action) {
  const std::string verb(to_string(action));
  if (a.positionals().size() != 2) {
    c.err << "soakctl " << verb << ": give exactly one CANDIDATE (see soakctl --help)\n";
    return kCtlExitUsage;
  }
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

}  // namespace

int soakctl_main(const std::vector<std::string>& argv, std::ostream& out, std::ostream& err, const Clock& clock) {
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
