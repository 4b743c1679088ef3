// The judge's recipe in the store: which stored rows a judgment saw, written
// down with its verdict so that `soakctl explain` can fetch exactly the same
// rows later and recompute a byte-identical verdict (docs/DESIGN.md §3.8).
//
// A StoredRecipe (judges/recipe.h) is the judge's own recipe plus the bounds
// that select the rows; here are the reads that turn it back into the
// judge's input, and the judgments made from them.
//
// Also here: the baseline choice (interleaved, history, none) for a stage
// window, which is a question put to the store.
//
// Thread-agnostic; uses the Store it is given.
#pragma once

#include <optional>
#include <string>

#include "core/result.h"
#include "judges/judge.h"
#include "judges/recipe.h"
#include "storage/store.h"

namespace soak {

// Reads the rows the recipe names and assembles the judge's input.
Result<JudgeInput> build_judge_input(Store& store, const StoredRecipe& r);
// The verdict of an input built from `r`, with `r` attached as its recipe.
VerdictRow judged_verdict(const JudgeInput& in, const StoredRecipe& r);

// Judge a stage from the store: the verdict with its recipe attached and, for
// a canary with long-context sizes, the context reach its rows showed
// (docs/DESIGN.md §3.9, for the store's context_reach table), both from one
// reading of the rows.
struct StageJudged {
  VerdictRow verdict;
  std::optional<ContextReach> reach;
};
Result<StageJudged> judge_stage_from_store(Store& store, const StoredRecipe& r);
// The verdict alone.
Result<VerdictRow> judge_from_store(Store& store, const StoredRecipe& r);
// The same, for checks while a stage runs: the rejecting verdict (recipe
// attached) if the rows already hold a hard failure, nullopt otherwise.
Result<std::optional<VerdictRow>> hard_failure_from_store(Store& store, const StoredRecipe& r);
// The same for a launch that holds the candidate before any probe
// (judge_launch_hold): the stage's verdict, or nullopt.
Result<std::optional<VerdictRow>> launch_hold_from_store(Store& store, const StoredRecipe& r);

// Which baseline rows exist for a stage window: interleaved when the baseline
// has rows in the same period, else the baseline's stored history (its most
// recent rows before the window), else none. For the gate and the soak the
// same period means the baseline's own campaign (rows of one of its stages):
// a canary's interleaved baseline runs carry no stage, and the last of them,
// still running when the canary ended, lands in the next stage's window,
// where it would have made the gate "interleaved" with a few functional rows
// and no agent turn or long-context round to compare.
Result<BaselineChoice> choose_baseline(Store& store, std::optional<int64_t> baseline_id, StageKind stage,
                                       int64_t since_ms, int64_t until_ms);

}  // namespace soak
