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
  return r;
}

ProbeResult slim_row(ProbeResult r) {
  // Figures and keys stay; the text a row carries goes (the sequential test
  // reads outcomes, statuses and send order, never an excerpt or a body).
  for (std::string* text : {&r.fixture_hash, &r.sampling_json, &r.detail, &r.finish_reason, &r.response_model,
                            &r.body_hash, &r.excerpt, &r.extra_json})
    std::string().swap(*text);
  r.golden.reset();
  return r;
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
  for (auto& r : *rows) in.candidate_rows.push_back(slim_row(std::move(r)));
  return sequential_evidence(in);
}

}  // namespace soak::report
