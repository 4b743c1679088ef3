// Heavy work that waited for the host (judges/heavy_work.h): a planned heavy
// task that never ran makes the stage inconclusive by name, with how often and
// how long it waited; the recipe keeps the figures, so a recomputed verdict
// says the same (docs/DESIGN.md §3.7, §3.8).
#include "judges/judge.h"
#include "judges/recipe.h"
#include "tests/catch.h"
#include "tests/unit/judge_rows.h"

using namespace soak;
using namespace soak::testing;

namespace {
JudgeInput canary_with_rows() {
  JudgeInput in = input_for(StageKind::Canary);
  in.recipe.baseline_mode = BaselineMode::None;
  in.recipe.baseline_id.reset();
  Rows cand{kCandidate, 1};
  for (int i = 0; i < 12; ++i) cand.perf(ProbeKind::Stream, "stream", jittered(Perf{}, i));
  in.candidate_rows = cand.rows;
  return in;
}
}  // namespace

TEST_CASE("heavy work: a heavy task that never ran is named with its waits, not judged as 0 of 0") {
  JudgeInput in = canary_with_rows();
  in.recipe.heavy_waits = {HeavyWait{"long_context", 2, 0, 5, 3 * kHourMs, 55 * kMinuteMs},
                           HeavyWait{"burst", 2, 2, 1, 10 * kMinuteMs, 10 * kMinuteMs}};
  const VerdictRow v = judge_stage(in);
  INFO(v.reason);
  CHECK(v.state == VerdictState::Inconclusive);
  CHECK(contains(v.reason,
                 "heavy work did not run: long_context ran 0 of 2 planned run(s); waited 5 time(s) for "
                 "the host's heavy work, 3h in all (longest 55m)"));
  const MetricEvidence* lc = find_metric(v, "heavy/long_context");
  REQUIRE(lc);
  CHECK(lc->result == MetricResult::Insufficient);
  // A task that waited and still ran is shown, and passes.
  const MetricEvidence* burst = find_metric(v, "heavy/burst");
  REQUIRE(burst);
  CHECK(burst->result == MetricResult::Pass);
  CHECK(contains(burst->reason, "burst ran 2 of 2 planned run(s); waited 1 time(s)"));
}

TEST_CASE("heavy work: nothing waited, nothing said; the recipe keeps the waits for a recompute") {
  JudgeInput in = canary_with_rows();
  const VerdictRow v = judge_stage(in);
  CHECK_FALSE(find_metric(v, "heavy/long_context"));
  CHECK_FALSE(contains(v.reason, "heavy work"));

  StoredRecipe s;
  s.recipe = in.recipe;
  s.recipe.heavy_waits = {HeavyWait{"capacity", 2, 0, 3, 90 * kMinuteMs, 40 * kMinuteMs}};
  auto back = recipe_from_json(recipe_to_json(s));
  REQUIRE(back.ok());
  CHECK(back->recipe.heavy_waits == s.recipe.heavy_waits);
  // A recipe without waits keeps the shape earlier verdicts have.
  StoredRecipe plain;
  plain.recipe = in.recipe;
  CHECK_FALSE(contains(recipe_to_json(plain), "heavy_waits"));
}
