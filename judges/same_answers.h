// The golden-set rule of a canary and a soak (docs/DESIGN.md §3.13): which
// stored runs a judgment compares, chosen from stored rows by the recipe
// (judges/judge.h EquivalenceRecipe), and their comparison
// (judges/equivalence.h). The judge turns it into metric rows; the HTML report
// shows its prompts × status table; both from the same rows and function.
//
// Pure and thread-agnostic.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/golden.h"
#include "judges/equivalence.h"
#include "judges/judge.h"

namespace soak {

struct GoldenComparison {
  // Why nothing was compared (empty when something was): no run in this
  // stage, no reference, no stored run of the reference's.
  std::string skipped;
  std::string reference;  // what the reference is: "the baseline (candidate row 3)", "its canary (stage 7)"
  std::string run, reference_run;
  std::optional<NoiseFloor> floor;  // nullopt: one run only, a floor of zero
  std::string floor_from;           // "this canary's runs x and y"
  std::optional<EquivalenceResult> result;
};

// nullopt when the recipe runs no golden set (no equivalence block, or not a
// canary or soak).
std::optional<GoldenComparison> compare_golden(const JudgeRecipe& recipe, const std::vector<GoldenAnswerRow>& golden,
                                               const std::vector<GoldenAnswerRow>& reference_golden);

}  // namespace soak
