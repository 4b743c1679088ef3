// A canary's or soak's golden-set rule: the runs chosen by the recipe, compared,
// and the metric rows of the verdict (docs/DESIGN.md §3.13).
//
// Metric rows: `equivalence` (the run-level summary: mean KL against its
// threshold, counts per status), `equivalence/<prompt id>` for every prompt
// that did not answer the same (fail: a fork with a clear margin, a greedy
// token below its top-1, a text difference over the floor's rate; pass: a near
// tie, recorded; insufficient: not answered in both runs, whichever side
// asked it without an answer or did not ask it), `equivalence/kl` and
// `equivalence/text` when their run-level rule applies. A failing row is a
// stage-rule failure (judge.h step 3): it is decided at the stage's end, when
// the end run and the noise floor exist; nothing about it is known earlier.
#include "judges/same_answers.h"

#include <algorithm>
#include <cmath>

#include "judges/internal.h"

namespace soak {

namespace {

using judge_detail::format;

std::vector<StoredGoldenRun> runs_of(const std::vector<GoldenAnswerRow>& rows) { return group_golden_runs(rows); }

// Runs of stage `stage_id` asking `set_hash` (any set when empty), oldest first.
std::vector<const StoredGoldenRun*> in_stage(const std::vector<StoredGoldenRun>& runs, std::optional<int64_t> stage_id,
                                             const std::string& set_hash = "") {
  std::vector<const StoredGoldenRun*> out;
  for (const auto& r : runs)
    if (r.stage_id == stage_id && (set_hash.empty() || r.set_hash == set_hash)) out.push_back(&r);
  return out;
}

}  // namespace

std::optional<GoldenComparison> compare_golden(const JudgeRecipe& recipe, const std::vector<GoldenAnswerRow>& golden,
                                               const std::vector<GoldenAnswerRow>& reference_golden) {
  if (!recipe.equivalence || (recipe.stage != StageKind::Canary && recipe.stage != StageKind::Soak))
    return std::nullopt;
  const EquivalenceRecipe& e = *recipe.equivalence;
  GoldenComparison out;
  const std::vector<StoredGoldenRun> own = runs_of(golden);
  const auto stage_runs = in_stage(own, recipe.stage_id);
  if (stage_runs.empty()) {
    out.skipped = "no golden-set run stored in this " + std::string(to_string(recipe.stage)) + ": not compared";
    return out;
  }
  const StoredGoldenRun& cur = *stage_runs.back();
  out.run = cur.run;

  std::vector<StoredGoldenRun> ref_runs;
  std::vector<const StoredGoldenRun*> ref_stage;  // soak: its canary's runs
  const StoredGoldenRun* ref = nullptr;
  if (recipe.stage == StageKind::Canary) {
    // The noise floor: this canary's first and last runs of the same set.
    const auto same = in_stage(own, recipe.stage_id, cur.set_hash);
    if (same.size() >= 2) {
      out.floor = noise_floor(same.front()->answers, cur.answers, e.rules, e.top1);
      out.floor_from = "this canary's runs " + same.front()->run + " and " + cur.run;
    }
    if (!e.reference_id) {
      out.skipped = "no baseline (first build of this candidate): its golden-set runs are stored for the next build";
      return out;
    }
    ref_runs = runs_of(reference_golden);
    for (const auto& r : ref_runs)
      if (r.set_hash == cur.set_hash) ref = &r;  // the latest
    out.reference = format("the baseline (candidate row %lld)", static_cast<long long>(*e.reference_id));
    if (!ref) {
      out.skipped = out.reference + " has no stored golden-set run of this set: not compared";
      return out;
    }
  } else {
    // The soak: the candidate's own latest earlier stage that ran the set (its canary).
    std::optional<int64_t> earlier;
    for (const auto& r : own)
      if (r.stage_id && recipe.stage_id && *r.stage_id < *recipe.stage_id && r.set_hash == cur.set_hash &&
          (!earlier || *r.stage_id > *earlier))
        earlier = r.stage_id;
    if (!earlier) {
      out.skipped = "no golden-set run of an earlier stage (its canary) stored: drift not compared";
      return out;
    }
    ref_stage = in_stage(own, earlier, cur.set_hash);
    ref = ref_stage.back();
    out.reference = format("its canary (stage %lld)", static_cast<long long>(*earlier));
    if (ref_stage.size() >= 2) {
      out.floor = noise_floor(ref_stage.front()->answers, ref->answers, e.rules, e.top1);
      out.floor_from = "its canary's runs " + ref_stage.front()->run + " and " + ref->run;
    }
  }
  out.reference_run = ref->run;
  out.result = compare_runs(ref->answers, cur.answers, e.rules, out.floor, e.top1);
  return out;
}

namespace judge_detail {

// The golden set's evidence: a share of its prompts compared on both sides
// (a verdict resting on 1 of 32 said "equivalent" while the other 31 were
// missing on one side). The golden set runs at a stage's start and end only,
// so a stage short of it gets no more by running on.
constexpr double kEquivalenceMinShare = 0.75;

void equivalence_need(Judgement& j, int64_t compared, int64_t prompts) {
  const auto share = static_cast<int64_t>(std::ceil(kEquivalenceMinShare * static_cast<double>(prompts)));
  j.need({"equivalence",
          compared,
          std::max<int64_t>(1, share),
          format("prompts answered on both sides of %lld", static_cast<long long>(prompts)),
          {ProbeKind::Equivalence},
          "a changed answer on any prompt compared",
          0});
}

void judge_equivalence(const Context& c, Judgement& j) {
  const auto g = compare_golden(c.in.recipe, c.in.golden, c.in.reference_golden);
  if (!g) return;
  if (!g->result) {
    j.add(metric("equivalence", MetricResult::Insufficient, g->skipped));  // a note, never a failure
    // A canary with a baseline build whose own run is not stored: short (the
    // other skips are notes: no reference, or none with a stored run).
    if (g->run.empty() && c.in.recipe.stage == StageKind::Canary && c.in.recipe.equivalence->reference_id)
      j.need({"equivalence", 0, 1, "golden-set runs stored in this canary", {ProbeKind::Equivalence}, "", 0});
    return;
  }
  const EquivalenceResult& r = *g->result;
  equivalence_need(j, r.compared(), static_cast<int64_t>(r.prompts.size()));
  const EquivalenceSettings& rules = c.in.recipe.equivalence->rules;
  const double text_rate = r.text_prompts > 0 ? static_cast<double>(r.text_differences) / r.text_prompts : 0;
  const bool text_fails = r.text_prompts > 0 && text_rate > r.text_rate_limit;
  const bool kl_fails = r.positions > 0 && r.mean_kl > r.kl_threshold;

  auto summary =
      metric("equivalence",
             r.verdict == EquivalenceVerdict::NotEquivalent ? MetricResult::Fail
             : r.verdict == EquivalenceVerdict::Equivalent  ? MetricResult::Pass
                                                            : MetricResult::Insufficient,
             "run " + g->run + " against " + g->reference + " run " + g->reference_run + ", noise floor " +
                 (g->floor ? "from " + g->floor_from : std::string("zero (one run only)")) + ": " + r.summary());
  summary.n = r.compared();  // the prompts the verdict stands on; the reason names them of the set
  set_numbers(summary, r.mean_kl, g->floor ? g->floor->mean_kl : 0, 0, 0, r.kl_threshold, 1);
  j.add(std::move(summary));

  for (const PromptComparison& p : r.prompts) {
    if (p.status == PromptStatus::Equal) continue;
    const std::string name = "equivalence/" + p.prompt_id;
    MetricResult result = MetricResult::Pass;
    std::string why;
    switch (p.status) {
      case PromptStatus::Fork:
      case PromptStatus::NotTop1: result = MetricResult::Fail; break;
      case PromptStatus::NearTie:
        why = format("recorded, not failed: both margins within max_fork_margin %.3g; ", rules.max_fork_margin);
        break;
      case PromptStatus::TextDiffers:
        result = text_fails ? MetricResult::Fail : MetricResult::Pass;
        why = text_fails ? "no logprobs to weigh it; the text differences are over the noise floor's rate; "
                         : "no logprobs to weigh it; within the noise floor's rate of differences; ";
        break;
      case PromptStatus::Missing:
        result = MetricResult::Insufficient;
        why = "not compared: ";
        break;
      case PromptStatus::Equal: break;
    }
    auto m = metric(name, result, why + describe(p));
    m.n = p.compared_positions;
    set_numbers(m, p.fork_index ? static_cast<double>(*p.fork_index) : 0, 0, 0, 0, rules.max_fork_margin, 1);
    if (result == MetricResult::Fail && p.status != PromptStatus::TextDiffers)
      j.find(Severity::Failure, name + ": " + describe(p));
    j.add(std::move(m));
  }
  if (r.positions > 0) {
    auto m = metric("equivalence/kl", kl_fails ? MetricResult::Fail : MetricResult::Pass,
                    format("mean top-k KL %.4f nats over %lld positions before the forks; fails above %.4f "
                           "(kl_factor %.3g x the noise floor's %.4f, at least min_kl %.4g)",
                           r.mean_kl, static_cast<long long>(r.positions), r.kl_threshold, rules.kl_factor,
                           g->floor ? g->floor->mean_kl : 0.0, rules.min_kl));
    m.n = r.positions;
    set_numbers(m, r.mean_kl, g->floor ? g->floor->mean_kl : 0, 0, 0, r.kl_threshold, 1);
    if (kl_fails) j.find(Severity::Failure, "equivalence: " + m.reason);
    j.add(std::move(m));
  }
  if (r.text_prompts > 0) {
    auto m = metric("equivalence/text", text_fails ? MetricResult::Fail : MetricResult::Pass,
                    format("%lld of %lld prompts without logprobs answer another text (%.1f%%); fails above the "
                           "noise floor's rate %.1f%%",
                           static_cast<long long>(r.text_differences), static_cast<long long>(r.text_prompts),
                           text_rate * 100, r.text_rate_limit * 100));
    m.n = r.text_prompts;
    set_numbers(m, text_rate, r.text_rate_limit, 0, 0, r.text_rate_limit, 1);
    if (text_fails) j.find(Severity::Failure, "equivalence: " + m.reason);
    j.add(std::move(m));
  }
}

}  // namespace judge_detail
}  // namespace soak
