#include "soakctl/common.h"

#include "judges/judge.h"

#include <algorithm>
#include <ctime>
#include <set>

#include "core/config.h"

namespace soak::soakctl {

Result<std::string> store_path(const Args& a) {
  if (auto db = a.get("db")) return expand_home(*db);
  if (auto cfg_path = a.get("config")) {
    auto cfg = load_config(*cfg_path);
    if (!cfg) return make_error(cfg.message());
    return cfg->store_path;
  }
  return default_store_path();
}

Result<std::unique_ptr<SqliteStore>> open_store(const Args& a, OpenMode mode) {
  auto path = store_path(a);
  if (!path) return path.error();
  return SqliteStore::open(*path, mode);
}

std::optional<CandidateRow> find_candidate(Store& st, const std::string& name,
                                           const std::optional<std::string>& build) {
  auto rows = st.candidates();
  if (!rows) return std::nullopt;
  std::optional<CandidateRow> best;
  for (const auto& r : *rows) {
    if (r.name != name || (build && r.build != *build)) continue;
    if (!best || r.id > best->id) best = r;
  }
  return best;
}

std::string no_candidate_text(const std::string& name, const std::optional<std::string>& build) {
  return "soakctl: no candidate named \"" + name + "\"" + (build ? " at build " + *build : std::string()) +
         " in the store (soakctl status lists the candidates)\n";
}

std::optional<CandidateRow> lookup_candidate(const Ctl& c, Store& st, const std::string& name,
                                             const std::optional<std::string>& build) {
  auto row = find_candidate(st, name, build);
  if (!row) c.err << no_candidate_text(name, build);
  return row;
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

bool same_verdict(const VerdictRow& stored, const VerdictRow& again) {
  const bool state_ok =
      stored.state == again.state ||
      (stored.state == VerdictState::Running && again.state == VerdictState::Promoted && stored.stage != "soak");
  return state_ok && stored.reason == again.reason && stored.judge_version == again.judge_version &&
         stored.evidence_first_id == again.evidence_first_id && stored.evidence_last_id == again.evidence_last_id &&
         stored.baseline_mode == again.baseline_mode &&
         metrics_to_json(stored.metrics) == metrics_to_json(again.metrics);
}

json reach_json(const ContextReach& r) {
  json j;
  j["reach_tokens"] = r.reach_tokens;
  j["configured_tokens"] = r.configured_tokens;
  j["runtime_ctx_tokens"] = r.runtime_ctx_tokens ? json(*r.runtime_ctx_tokens) : json(nullptr);
  j["runtime_ctx_source"] = r.runtime_ctx_source;
  j["at"] = iso_utc(r.wall_ms);
  if (r.stage_id) j["stage_id"] = *r.stage_id;
  return j;
}

std::string reach_text(const ContextReach& r) {
  std::string s = "context reach " + size_label(r.reach_tokens) + ", configured " + size_label(r.configured_tokens);
  if (r.runtime_ctx_tokens)
    s += "; runtime context " + std::to_string(*r.runtime_ctx_tokens) + " per slot, from " + r.runtime_ctx_source;
  return s;
}

std::optional<ContextReach> latest_reach(Store& st, int64_t candidate_id) {
  auto r = st.context_reach(candidate_id);
  if (!r) return std::nullopt;
  return *r;
}

std::string option_list(const ArgSpec& spec) {
  std::set<std::string> names = spec.flags;
  names.insert(spec.options.begin(), spec.options.end());
  std::string s;
  for (const auto& n : names) s += (s.empty() ? "--" : ", --") + n;
  return s;
}

}  // namespace soak::soakctl
