// A judgment's recipe as it is stored: the judge's own recipe (JudgeRecipe,
// judges/judge.h: rules, coverage, baseline mode, stage end) plus the bounds
// that select the rows it saw (time windows, and per-table max ids as they
// were at judgment time), so that `soakctl explain` can fetch exactly the
// same rows later and recompute a byte-identical verdict
// (docs/DESIGN.md §3.8). It is stored as one flat JSON object in verdicts.judge_input; the
// format is the one every stored verdict already has. The reads that select
// the rows are campaigns/recipe_store.h.
//
// Pure, thread-agnostic.
#pragma once

#include <cstdint>
#include <string>

#include "core/result.h"
#include "core/types.h"
#include "judges/judge.h"

namespace soak {

// Rows considered: the stage's rows (by stage id; by [since_ms, until_ms] when
// there is no stage) plus samples and events in [since_ms, until_ms]; baseline
// rows of the recipe's baseline_id in [baseline_since_ms, baseline_until_ms].
// Every table is bounded by its max id at judgment time.
struct RowSelection {
  int64_t since_ms = 0;
  int64_t until_ms = 0;
  int64_t baseline_since_ms = 0;
  int64_t baseline_until_ms = 0;
  RowMaxIds max_ids;
};

struct StoredRecipe {
  JudgeRecipe recipe;
  RowSelection rows;
};

std::string recipe_to_json(const StoredRecipe& r);
Result<StoredRecipe> recipe_from_json(const std::string& s);

// Where a stage's baseline rows come from (campaigns/recipe_store.h
// choose_baseline() asks the store).
struct BaselineChoice {
  BaselineMode mode = BaselineMode::None;
  int64_t since_ms = 0;
  int64_t until_ms = 0;
};

}  // namespace soak
