// `soakctl history`: every build (or launch) of a candidate with what it served
// with, its stages and verdicts.
#include "soakctl/common.h"

#include <string>

#include "core/duration.h"
#include "probes/served_state.h"

namespace soak::soakctl {

namespace {

int cmd_history(const Ctl& c, const Args& a, Store& st) {
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
    auto launches = launches_of(st, r.id);
    if (!stages || !verdicts || !launches) {
      c.err << "soakctl: cannot read history\n";
      return kCtlExitStore;
    }
    if (a.flag("json")) {
      json j;
      j["build"] = r.build;
      j["candidate_id"] = r.id;
      j["first_seen"] = iso_utc(r.first_seen_ms);
      if (r.baseline_id) j["baseline_candidate_id"] = *r.baseline_id;
      if (!r.fingerprint.empty()) j["launch"] = json::parse(r.fingerprint, nullptr, false);
      json ss = json::array();
      for (const auto& s : *stages) ss.push_back(stage_json(s, c.clock.wall_ms()));
      j["stages"] = ss;
      json vs = json::array();
      for (const auto& v : *verdicts) vs.push_back(verdict_json(v));
      j["verdicts"] = vs;
      if (!launches->empty()) j["launches"] = launches_json(*launches);  // a managed candidate's runtime
      arr.push_back(std::move(j));
      continue;
    }
    c.out << r.build << " (candidate row " << r.id << ", first seen " << iso_utc(r.first_seen_ms)
          << (r.baseline_id ? ", baseline row " + std::to_string(*r.baseline_id) : "") << ")\n";
    // What the row served with (a change of it is a new row, like a build).
    if (auto fp = probes::parse_fingerprint_json(r.fingerprint); fp && !r.fingerprint.empty())
      c.out << "  launch: " << fp->summary() << "\n";
    print_launches(c.out, *launches, "  ");
    for (const auto& s : *stages) {
      c.out << "  stage " << to_string(s.kind) << ": " << to_string(s.state) << ", " << iso_utc(s.started_ms);
      if (s.ended_ms)
        c.out << " -> " << iso_utc(*s.ended_ms) << " (" << format_duration(*s.ended_ms - s.started_ms) << ")";
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
    c.err << no_candidate_text(name, std::nullopt);
    return kCtlExitStore;
  }
  if (a.flag("json")) c.out << arr.dump(2) << "\n";
  return kCtlExitOk;
}

}  // namespace

const Command kHistoryCommand{"history", Operand::Candidate, {{"json"}, {}}, OpenMode::ReadOnly, cmd_history};

}  // namespace soak::soakctl
