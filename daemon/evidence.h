// Evidence for a judgment: which stored rows a judge sees, written down as a
// recipe so that `soakctl explain` can fetch exactly the same rows later and
// recompute a byte-identical verdict.
//
// The recipe holds everything the judge takes besides rows (rules, coverage,
// baseline mode, stage end) and the bounds that select the rows (stage id,
// time window, and per-table max ids as they were at judgment time). It is
// stored as JSON in verdicts.judge_input.
//
// Thread-agnostic; uses the Store it is given.
#pragma once

#include <optional>
#include <string>

#include "core/result.h"
#include "schedules/judge.h"
#include "storage/store.h"

namespace soak {

struct JudgeRecipe {
  StageKind stage = StageKind::Smoke;
  StageEnd end = StageEnd::Completed;
  int64_t candidate_id = 0;
  int64_t host_id = 0;
  std::optional<int64_t> stage_id;
  int64_t now_ms = 0;
  std::string config_hash;
  JudgeRules judge;
  GateRules gate;
  SoakRules soak;
  GuardRules guard;
  int64_t slots_planned = 0;
  int64_t slots_run = 0;
  BaselineMode baseline_mode = BaselineMode::None;
  std::optional<int64_t> baseline_id;
  std::string missing_baseline;  // a configured baseline with no build to compare with
  // Rows considered: the stage's rows (by stage id) plus samples and events in
  // [since_ms, until_ms]; baseline rows of baseline_id in [baseline_since_ms,
  // baseline_until_ms]. Every table is bounded by its max id at judgment time.
  int64_t since_ms = 0;
  int64_t until_ms = 0;
  int64_t baseline_since_ms = 0;
  int64_t baseline_until_ms = 0;
  Store::MaxIds max_ids;
};

std::string recipe_to_json(const JudgeRecipe& r);
Result<JudgeRecipe> recipe_from_json(const std::string& s);

// Reads the rows the recipe names and assembles the judge's input.
Result<JudgeInput> build_judge_input(Store& store, const JudgeRecipe& r);

// Which baseline rows exist for a stage window: interleaved when the baseline
// has rows in the same period, else the baseline's stored history (its most
// recent rows before the window), else none.
struct BaselineChoice {
  BaselineMode mode = BaselineMode::None;
  int64_t since_ms = 0;
  int64_t until_ms = 0;
};
Result<BaselineChoice> choose_baseline(Store& store, std::optional<int64_t> baseline_id, int64_t since_ms,
                                       int64_t until_ms);

// Judge a stage from the store and return the verdict with its recipe attached.
Result<VerdictRow> judge_from_store(Store& store, const JudgeRecipe& r);

}  // namespace soak
