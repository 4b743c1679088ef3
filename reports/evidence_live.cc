#include "reports/evidence_live.h"

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
  return r;
}

ProbeResult slim_row(const ProbeResult& r) {
  ProbeResult s;
  s.id = r.id;
  s.candidate_id = r.candidate_id;
  s.host_id = r.host_id;
  s.stage_id = r.stage_id;
  s.started_wall_ms = r.started_wall_ms;
  s.kind = r.kind;
  s.task = r.task;
  s.workload_id = r.workload_id;  // a group's summary row is known by it
  s.outcome = r.outcome;
  s.http_status = r.http_status;
  return s;
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
  JudgeInput in;
  in.recipe = *recipe;
  in.candidate_rows.reserve(rows->size());
  for (const auto& r : *rows) in.candidate_rows.push_back(slim_row(r));
  return sequential_evidence(in);
}

}  // namespace soak::report
