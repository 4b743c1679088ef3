#include "reports/evidence_live.h"

#include <algorithm>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "judges/recipe.h"

namespace soak::report {

Result<JudgeRecipe> running_recipe(Store& store, int64_t candidate_id, const StageRow& stage) {
  SOAK_TRY_ASSIGN(auto verdicts, store.verdicts(candidate_id));
  JudgeRecipe r;
  for (const auto& v : verdicts)
    if (auto stored = recipe_from_json(v.judge_input_json)) r = stored->recipe;
  r.stage = stage.kind;
  r.stage_id = stage.id;
  r.candidate_id = candidate_id;
  r.baseline_id.reset();
  r.baseline_mode = BaselineMode::None;
  if (stage.kind != StageKind::Smoke) {
    SOAK_TRY_ASSIGN(auto row, store.candidate(candidate_id));  // optional: the row if there is one
    if (row) r.baseline_id = row->baseline_id;
  }
  return r;
}

ProbeResult slim_row(ProbeResult r) {
  // Figures and keys stay (latency_slo pools rows by fixture and sampling, a
  // session turn's facts are in its extra); the text no measure reads goes.
  for (std::string* text : {&r.detail, &r.finish_reason, &r.response_model, &r.body_hash, &r.excerpt})
    std::string().swap(*text);
  if (r.kind != ProbeKind::Agent) std::string().swap(r.extra_json);
  r.golden.reset();
  return r;
}

Status extend_running_baseline(Store& store, JudgeRecipe& recipe, const StageRow& stage, std::vector<ProbeResult>& rows,
                               int64_t& read_to, int64_t max_id) {
  if (!recipe.baseline_id || stage.kind == StageKind::Smoke) {
    recipe.baseline_mode = BaselineMode::None;
    return Status::Ok();
  }
  ProbeQuery same;
  same.candidate_id = *recipe.baseline_id;
  same.since_ms = stage.started_ms;
  same.max_id = max_id;
  if (recipe.baseline_mode == BaselineMode::Interleaved) {
    same.min_id = read_to + 1;
    SOAK_TRY_ASSIGN(auto more, store.probe_results(same));
    for (const auto& r : more) rows.push_back(slim_row(r));
    read_to = max_id;
    return Status::Ok();
  }
  // The baseline's first row in the stage's window makes it interleaved. Only
  // rows stored since the last look are looked at: a history baseline's rows
  // all predate the stage, and looking through all of them again every minute
  // cost seconds a refresh on a month's store.
  const int64_t looked_to = read_to;
  same.limit = 1;
  same.min_id = looked_to + 1;
  SOAK_TRY_ASSIGN(auto any, store.probe_results(same));
  if (!any.empty()) {
    same.limit = 0;
    same.min_id.reset();
    SOAK_TRY_ASSIGN(auto now_rows, store.probe_results(same));
    rows.clear();
    for (const auto& r : now_rows) rows.push_back(slim_row(r));
    recipe.baseline_mode = BaselineMode::Interleaved;
    read_to = max_id;
    return Status::Ok();
  }
  read_to = max_id;
  if (recipe.baseline_mode == BaselineMode::History) return Status::Ok();  // fixed at the stage's start: read once
  // No history yet (None after a first look): only a row stored since can
  // have started in the lookback window (one in flight when the stage began).
  ProbeQuery hist;
  hist.candidate_id = *recipe.baseline_id;
  hist.since_ms = stage.started_ms - kHistoryLookbackMs;
  hist.until_ms = stage.started_ms;
  if (looked_to > 0) hist.min_id = looked_to + 1;
  hist.max_id = max_id;
  SOAK_TRY_ASSIGN(auto old_rows, store.probe_results(hist));
  rows.clear();
  for (const auto& r : old_rows) rows.push_back(slim_row(r));
  recipe.baseline_mode = old_rows.empty() ? BaselineMode::None : BaselineMode::History;
  return Status::Ok();
}

Result<std::vector<SequentialMeasure>> running_evidence(Store& store, int64_t candidate_id, const StageRow& stage) {
  if (stage.state != StageState::Running) return std::vector<SequentialMeasure>{};
  JudgeInput in;
  SOAK_TRY_ASSIGN(in.recipe, running_recipe(store, candidate_id, stage));
  ProbeQuery q;
  q.candidate_id = candidate_id;
  q.stage_id = stage.id;
  SOAK_TRY_ASSIGN(auto rows, store.probe_results(q));
  SOAK_TRY_ASSIGN(auto max, store.max_ids());
  in.candidate_rows.reserve(rows.size());
  for (auto& r : rows) in.candidate_rows.push_back(slim_row(std::move(r)));
  int64_t read_to = 0;
  SOAK_TRY(extend_running_baseline(store, in.recipe, stage, in.baseline_rows, read_to, max.probe));
  return sequential_evidence(in);
}

Status LiveEvidence::refresh(Store& store, int64_t candidate_id, const StageRow& stage, int64_t max_probe) {
  std::vector<ProbeResult> fresh;
  if (stage.id == stage_id_ && read_to_ >= max_probe) return refresh(store, candidate_id, stage, max_probe, fresh);
  ProbeQuery q;
  q.stage_id = stage.id;
  q.min_id = stage.id == stage_id_ ? read_to_ + 1 : 1;
  q.max_id = max_probe;
  SOAK_TRY_ASSIGN(auto rows, store.probe_results(q));
  return refresh(store, candidate_id, stage, max_probe, rows);
}

Status LiveEvidence::refresh(Store& store, int64_t candidate_id, const StageRow& stage, int64_t max_probe,
                             const std::vector<ProbeResult>& fresh) {
  if (stage.id != stage_id_) *this = LiveEvidence{};
  stage_id_ = stage.id;
  if (read_to_ >= max_probe && recipe_) return Status::Ok();
  for (const auto& r : fresh)
    if (r.candidate_id == candidate_id && r.stage_id == stage.id && r.id > read_to_ && r.id <= max_probe)
      rows_.push_back(slim_row(r));
  read_to_ = std::max(read_to_, max_probe);
  if (!recipe_) {
    SOAK_TRY_ASSIGN(recipe_, running_recipe(store, candidate_id, stage));
  }
  SOAK_TRY(extend_running_baseline(store, *recipe_, stage, baseline_rows_, baseline_read_to_, max_probe));
  // The rows lent to the judgment and taken back: a week of them is not copied.
  JudgeInput in;
  in.recipe = *recipe_;
  in.candidate_rows = std::move(rows_);
  in.baseline_rows = std::move(baseline_rows_);
  evidence_ = sequential_evidence(in);
  progress_ = evidence_progress(in);
  rows_ = std::move(in.candidate_rows);
  baseline_rows_ = std::move(in.baseline_rows);
  return Status::Ok();
}

Status StageEvidenceWriter::refresh(Store& store, int64_t now_ms, int64_t every_ms, int max_first) {
  SOAK_TRY_ASSIGN(auto status, store.status());
  SOAK_TRY_ASSIGN(auto max, store.max_ids());
  Status first = Status::Ok();
  std::map<int64_t, Live> kept;
  for (const auto& s : status) {
    if (!s.stage || s.stage->state != StageState::Running || s.stage->kind == StageKind::Smoke) continue;
    Live& live = kept[s.candidate.id];
    if (auto it = live_.find(s.candidate.id); it != live_.end()) live = std::move(it->second);
    if (live.stage_id != s.stage->id) {
      live = Live{};
      live.stage_id = s.stage->id;
    }
    const LiveEvidence* shared = shared_ ? shared_(s.candidate.id) : nullptr;
    if (shared && shared->stage_id() != s.stage->id) shared = nullptr;
    const bool unread = !shared && live.evidence.stage_id() != s.stage->id;
    if (live.refreshed_ms && now_ms - *live.refreshed_ms < every_ms) continue;
    if (unread && max_first-- <= 0) continue;
    live.refreshed_ms = now_ms;
    Status st = Status::Ok();
    const LiveEvidence* ev = shared;
    if (shared) {
      live.evidence = LiveEvidence{};  // the shared reader's rows serve: none kept twice
    } else {
      st = live.evidence.refresh(store, s.candidate.id, *s.stage, max.probe);
      ev = &live.evidence;
    }
    if (st && live.stored_to != ev->read_to()) {  // something new since the row stored last
      st = store.put_stage_evidence(StageEvidence{s.stage->id, s.candidate.id, now_ms, ev->read_to(),
                                                  stage_evidence_json(ev->measures(), ev->progress())});
      if (st) live.stored_to = ev->read_to();
    }
    if (!st && first) first = st;
  }
  live_ = std::move(kept);  // candidates whose stage ended are forgotten
  return first;
}

bool StageEvidenceWriter::due(const std::vector<int64_t>& candidates, int64_t now_ms, int64_t every_ms) const {
  for (int64_t id : candidates) {
    auto it = live_.find(id);
    if (it == live_.end() || !it->second.refreshed_ms || now_ms - *it->second.refreshed_ms >= every_ms) return true;
  }
  return false;
}

namespace {

nlohmann::json point_to_json(const SequentialPoint& p) { return nlohmann::json::array({p.n, p.k, p.log_e, p.row_id}); }

std::optional<SequentialPoint> point_from_json(const nlohmann::json& j) {
  if (!j.is_array() || j.size() != 4 || !j[0].is_number_integer() || !j[1].is_number_integer() || !j[2].is_number() ||
      !j[3].is_number_integer())
    return std::nullopt;
  return SequentialPoint{j[0].get<int64_t>(), j[1].get<int64_t>(), j[2].get<double>(), j[3].get<int64_t>()};
}

}  // namespace

std::string measures_to_json(const std::vector<SequentialMeasure>& ms) {
  nlohmann::json arr = nlohmann::json::array();
  for (const auto& m : ms) {
    nlohmann::json j = {{"name", m.name},
                        {"budget", m.budget},
                        {"alpha", m.alpha},
                        {"estimate_alpha", m.estimate_alpha},
                        {"basis", m.basis},
                        {"last", point_to_json(m.last)},
                        {"peak", point_to_json(m.peak)}};
    if (m.stop) j["stop"] = point_to_json(*m.stop);
    arr.push_back(std::move(j));
  }
  return arr.dump();
}

std::string stage_evidence_json(const std::vector<SequentialMeasure>& ms,
                                const std::vector<EvidenceProgress>& progress) {
  nlohmann::json p = nlohmann::json::array();
  for (const auto& e : progress)
    p.push_back({{"rule", e.rule}, {"had", e.had}, {"needed", e.needed}, {"unit", e.unit}});
  return nlohmann::json{{"measures", nlohmann::json::parse(measures_to_json(ms))}, {"progress", p}}.dump();
}

std::vector<EvidenceProgress> progress_from_json(const std::string& s) {
  std::vector<EvidenceProgress> out;
  const auto j = nlohmann::json::parse(s, nullptr, false);
  if (!j.is_object() || !j.contains("progress") || !j["progress"].is_array()) return out;
  for (const auto& e : j["progress"]) {
    if (!e.is_object() || !e.contains("rule") || !e["rule"].is_string() || !e.contains("had") ||
        !e["had"].is_number_integer() || !e.contains("needed") || !e["needed"].is_number_integer())
      continue;
    out.push_back({e["rule"].get<std::string>(), e["had"].get<int64_t>(), e["needed"].get<int64_t>(),
                   e.value("unit", std::string())});
  }
  return out;
}

Result<std::vector<SequentialMeasure>> measures_from_json(const std::string& s) {
  auto arr = nlohmann::json::parse(s, nullptr, false);
  // Stored since the evidence progress: {"measures": [...], "progress": [...]}.
  if (arr.is_object() && arr.contains("measures")) arr = arr["measures"];
  if (!arr.is_array()) return make_error("stage evidence: not a JSON array");
  std::vector<SequentialMeasure> out;
  for (const auto& j : arr) {
    const auto bad = [&](const char* what) {
      return make_error(std::string("stage evidence: measure ") + std::to_string(out.size()) + ": " + what);
    };
    if (!j.is_object() || !j.contains("name") || !j["name"].is_string()) return bad("no name");
    SequentialMeasure m;
    m.name = j["name"].get<std::string>();
    for (auto [key, field] : {std::pair<const char*, double*>{"budget", &m.budget},
                              {"alpha", &m.alpha},
                              {"estimate_alpha", &m.estimate_alpha}}) {
      if (!j.contains(key) || !j[key].is_number()) return bad("no number budget / alpha / estimate_alpha");
      *field = j[key].get<double>();
    }
    if (j.contains("basis") && j["basis"].is_string()) m.basis = j["basis"].get<std::string>();
    auto last = j.contains("last") ? point_from_json(j["last"]) : std::nullopt;
    auto peak = j.contains("peak") ? point_from_json(j["peak"]) : std::nullopt;
    if (!last || !peak) return bad("no [n, k, log_e, row_id] last / peak point");
    m.last = *last;
    m.peak = *peak;
    if (j.contains("stop")) {
      auto stop = point_from_json(j["stop"]);
      if (!stop) return bad("a stop that is not a [n, k, log_e, row_id] point");
      m.stop = *stop;
    }
    out.push_back(std::move(m));
  }
  return out;
}

}  // namespace soak::report
