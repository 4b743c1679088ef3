#include "reports/evidence_live.h"

#include <string>
#include <utility>

#include "judges/recipe.h"

namespace soak::report {

Result<JudgeRecipe> running_recipe(Store& store, int64_t candidate_id, const StageRow& stage) {
  auto verdicts = store.verdicts(candidate_id);
  if (!verdicts) return verdicts.error();
  JudgeRecipe r;
  for (const auto& v : *verdicts)
    if (auto stored = recipe_from_json(v.judge_input_json)) r = stored->recipe;
  r.stage = stage.kind;
  r.stage_id = stage.id;
  r.candidate_id = candidate_id;
  r.baseline_id.reset();
  r.baseline_mode = BaselineMode::None;
  if (stage.kind != StageKind::Smoke) {
    auto row = store.candidate(candidate_id);
    if (!row) return row.error();
    if (*row) r.baseline_id = (*row)->baseline_id;
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
    auto more = store.probe_results(same);
    if (!more) return more.error();
    for (const auto& r : *more) rows.push_back(slim_row(r));
    read_to = max_id;
    return Status::Ok();
  }
  same.limit = 1;  // the baseline's first row in the stage's window makes it interleaved
  auto any = store.probe_results(same);
  if (!any) return any.error();
  if (!any->empty()) {
    same.limit = 0;
    auto now_rows = store.probe_results(same);
    if (!now_rows) return now_rows.error();
    rows.clear();
    for (const auto& r : *now_rows) rows.push_back(slim_row(r));
    recipe.baseline_mode = BaselineMode::Interleaved;
    read_to = max_id;
    return Status::Ok();
  }
  if (recipe.baseline_mode == BaselineMode::History) return Status::Ok();  // fixed at the stage's start: read once
  ProbeQuery hist;
  hist.candidate_id = *recipe.baseline_id;
  hist.since_ms = stage.started_ms - kHistoryLookbackMs;
  hist.until_ms = stage.started_ms;
  hist.max_id = max_id;
  auto old_rows = store.probe_results(hist);
  if (!old_rows) return old_rows.error();
  rows.clear();
  for (const auto& r : *old_rows) rows.push_back(slim_row(r));
  recipe.baseline_mode = old_rows->empty() ? BaselineMode::None : BaselineMode::History;
  return Status::Ok();
}

Result<std::vector<SequentialMeasure>> running_evidence(Store& store, int64_t candidate_id, const StageRow& stage) {
  if (stage.state != StageState::Running) return std::vector<SequentialMeasure>{};
  auto recipe = running_recipe(store, candidate_id, stage);
  if (!recipe) return recipe.error();
  ProbeQuery q;
  q.candidate_id = candidate_id;
  q.stage_id = stage.id;
  auto rows = store.probe_results(q);
  if (!rows) return rows.error();
  auto max = store.max_ids();
  if (!max) return max.error();
  JudgeInput in;
  in.recipe = *recipe;
  in.candidate_rows.reserve(rows->size());
  for (auto& r : *rows) in.candidate_rows.push_back(slim_row(std::move(r)));
  int64_t read_to = 0;
  if (auto st = extend_running_baseline(store, in.recipe, stage, in.baseline_rows, read_to, max->probe); !st)
    return st.error();
  return sequential_evidence(in);
}

}  // namespace soak::report
