// Verdict judges: stored rows in, one VerdictRow out (docs/DESIGN.md §3.2, §3.8).
//
// judge_stage() is a pure function of its JudgeInput: no clock, no store, no
// randomness. The daemon builds the input from the store when a stage ends and
// `soakctl explain` builds the same input from the same rows, so both get a
// byte-identical verdict (metric order and numbers included) whatever order
// the rows arrive in. Rows must carry their store ids (unique per table): ties
// in time are broken by id.
//
// What the judge decides, most decisive first:
//   1. hard failures reject at once (hung stream, missing terminal event,
//      identity mismatch, repeated 5xx, crash/restart, stale slot, memory guard
//      trip, invalid JSON / tool call / empty tool arguments beyond tolerance,
//      leaked markup in answers beyond the same tolerance;
//      for a managed runtime its exit, and a footprint above the memory budget);
//   2. blocked: no clean response and nothing but connect/loading failures;
//   3. stage rules reject (smoke not all clean, canary regression vs baseline,
//      the canary's pooled failure ratio (Wilson lower bound over
//      JudgeRules::max_failure_ratio), a long-context size or capacity prompt
//      not served clean, a serialized burst on a multi-slot runtime, swap
//      growth or swapouts since the stage start (canary, gate), gate/soak
//      failure ratio at or over GateRules::max_failure_ratio, too few
//      completed gate requests, soak leak, swap growth or drift; gate and
//      soak: a long-context size or capacity entry whose last round was not
//      clean or that failed on more than one round; any stage: two answers
//      ending in a loop, answers stopping early against the baseline's);
//   4. inconclusive: a decisive rule short of its evidence (judges/evidence.cc:
//      each such rule names what it had and needed; VerdictRow::awaiting_evidence
//      lists them when nothing else is missing, so a stage can run on for
//      them), stage stopped or timed out, coverage below
//      GateRules::min_coverage (every stage), no baseline data (canary), not
//      enough samples to compare anything, a configured long-context size never
//      served (canary), another engine resident (SOLO, unless
//      allow_coexisting), no footprint samples (soak);
//   (after 3, before 4: a launch that holds the candidate whatever the rows
//      say, a default output cap below limits.min_server_cap;
//      docs/DESIGN.md §3.11; the slo floors are stage rules of 3, in every stage)
//   5. hold: a marginal regression (between the effect floor and floor + hold
//      band, or a significant tail-only regression, or a slope above its bound
//      whose interval still reaches below it), a context reach short of the
//      configured sizes because the runtime's own context is smaller;
//   6. otherwise promoted (for smoke/canary/gate: the stage passed).
// Harness outcomes (cancelled_by_daemon, harness_error) never count against
// the candidate; they are reported in their own metric row, as are timing
// artifacts. Failure ratios count completions only: health, scrape and build
// rows and group summaries are not attempts. Every stage after smoke compares
// against the baseline (the gate and soak their agent turns and long-context
// rounds; a missing baseline there is noted, not inconclusive).
//
// Metric rows (MetricEvidence), in this order: hard/<class>, stage rules,
// per-locator comparisons, soak trends, harness/timing-artifact counts.
// Per-locator names are "<metric>/<workload>{<locator>}" (the locator lists
// kind, cache state, size, thinking, concurrency, slots, host and short hashes
// of fixture and sampling). Field meanings:
//   central (ttft_ms, prompt_tps, decode_tps, wall_ms): estimate/baseline are
//     medians, lo/hi the Hodges–Lehmann shift interval as a signed fraction of
//     the baseline median, threshold the effect floor, p_value Mann–Whitney;
//   tails (<metric>.p95, .p99; .p5, .p1 for rates where low is bad):
//     estimate/baseline are the quantiles, lo/hi the Wilson interval of the
//     fraction of candidate samples beyond the baseline's quantile, threshold
//     the tail tolerance, p_value Fisher on those exceedance counts;
//   error_rate: estimate/baseline are failure fractions, lo/hi the Wilson
//     interval of the candidate's, threshold alpha, p_value Fisher (one-sided);
//   trends: see judges/trends.cc.
// Results are "pass" | "fail" | "marginal" | "insufficient".
//
// Thread-agnostic; safe to call from any thread on its own input.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/config.h"
#include "core/tasks.h"
#include "core/types.h"
#include "judges/equivalence.h"
#include "judges/floors.h"
#include "judges/heavy_work.h"

namespace soak {

// Bumped whenever a rule or a number format changes, so stored verdicts say
// which rules produced them and explain knows when a recompute may differ
// (docs/DESIGN.md §3.8 lists what each version changed).
inline constexpr std::string_view kJudgeVersion = "judge-11";

// Where the baseline rows came from: interleaved A/B slots in the same period,
// stored history of the baseline candidate, or no baseline at all.
enum class BaselineMode { None, Interleaved, History };
std::string_view to_string(BaselineMode m);
// How long before a stage window a history baseline may reach back
// (campaigns/recipe_store.h choose_baseline, reports/evidence_live.h).
inline constexpr int64_t kHistoryLookbackMs = 30LL * 24 * 60 * 60 * 1000;

// How the stage ended, as the scheduler saw it. Only Completed can pass.
enum class StageEnd { Completed, Stopped, TimedOut };

// The runtime could not be reached yet (refused, timed out connecting, or
// still loading the model): not an answer, so not a failure of the candidate.
// Smoke retries on it; a stage that saw nothing else is blocked.
bool is_unreachable(Outcome o);

// Rows of this kind carry a performance figure (health, scrape, build and
// cancel rows carry none).
bool perf_judged(ProbeKind k);

// Everything a judgment takes besides rows: which stage of which candidate and
// how it ended, the rules in force, coverage and the baseline. The daemon
// stores it with the verdict, beside the bounds of the rows it selected
// (campaigns/recipe_store.h), so that `soakctl explain` can recompute the verdict.
// Whether soakd launched the candidate's runtime (docs/DESIGN.md §4.8): then
// its process ending during the stage (a process_gone event) is a hard failure.
enum class Supervision { Unmanaged, Managed };

// What a canary's or soak's golden-set comparison stands on (judges/same_answers.cc):
//   canary  this stage's last run against the reference's latest stored run of
//           the same set (the baseline build's: its runtime need not be up),
//           the noise floor this stage's first and last runs;
//   soak    this stage's last run against the candidate's own latest earlier
//           stage's runs (its canary: drift over the week), the noise floor
//           that stage's first and last runs.
// A reference without a stored run skips the rule with a note, never a failure.
struct EquivalenceRecipe {
  EquivalenceSettings rules;            // max_fork_margin, kl_factor, min_kl (enabled is implied)
  std::optional<int64_t> reference_id;  // canary: the baseline candidate row (none: a first build); soak: the candidate
  TopOneRule top1 = TopOneRule::AllPrompts;  // the runtime's logprobs come before its grammar: UnconstrainedOnly
  bool operator==(const EquivalenceRecipe&) const = default;
};

struct JudgeRecipe {
  StageKind stage = StageKind::Smoke;
  StageEnd end = StageEnd::Completed;
  int64_t candidate_id = 0;
  int64_t host_id = 0;  // the candidate's host (host samples, host-wide events)
  std::optional<int64_t> stage_id;
  int64_t now_ms = 0;       // wall time written into the verdict
  std::string config_hash;  // Config::candidate_hash of the effective settings

  JudgeRules judge;
  GateRules gate;
  SoakRules soak;
  GuardRules guard;

  int64_t slots_planned = 0;  // coverage = slots_run / slots_planned
  int64_t slots_run = 0;

  BaselineMode baseline_mode = BaselineMode::None;
  std::optional<int64_t> baseline_id;  // baseline candidate row
  std::string missing_baseline;        // configured baseline that has no build/row (canary is inconclusive)
  // A managed canary with ab "interleaved" (docs/DESIGN.md §3.3): how the
  // previous build ran beside it, or why it did not and the canary fell back
  // to its stored history. Shown as the baseline/ab metric; added to the
  // reason when the baseline is not interleaved. Empty in every other recipe.
  std::string baseline_note;

  Supervision supervision = Supervision::Unmanaged;
  std::optional<int64_t> memory_budget_bytes;  // a process sample's footprint above it is a hard failure
  // Canary: every configured long-context size must be served clean, fresh
  // and repeat (empty in recipes stored before the rule: nothing required).
  std::vector<int64_t> long_context_sizes;

  // The runtime's own prompt-cache cap in MiB from the launch fingerprint
  // (llama-server --cache-ram: 8192 unless given, -1 unlimited, 0 off;
  // nullopt: not known). Soak footprint growth that stopped under it is the
  // cache filling; growth past it fails (docs/DESIGN.md §3.6).
  std::optional<int64_t> cache_cap_mib;

  // The candidate may run beside other inference engines (candidate key
  // allow_coexisting); otherwise a duplicate_engine event makes the stage
  // inconclusive (SOLO).
  bool allow_coexisting = false;

  // What the candidate serves: a pooling candidate's smoke requires its own
  // probes and its gate counts pooling requests (chat in recipes stored before).
  WorkloadKind workload = WorkloadKind::Chat;
  // Agent-session rules (gate, soak): tool-call bands, recovery (defaults in
  // recipes stored before them).
  AgentSettings agent;
  // Absolute floors, every stage (docs/DESIGN.md §3.11); nullopt in recipes
  // stored before them: none apply.
  std::optional<SloSettings> slo;
  // The launch fingerprint's default output cap, when it knows one: below
  // limits.min_server_cap it holds the candidate (judges/floors.h).
  std::optional<LaunchCap> launch_cap;
  // Heavy tasks that waited for the host's heavy gate (none in recipes stored
  // before the rule, and none when nothing waited).
  std::vector<HeavyWait> heavy_waits;
  // The candidate's own earlier stages whose rows the gate and the soak
  // compare with (the candidate against itself, docs/DESIGN.md §3.5): the
  // gate its canary, the soak its canary and gate. Empty in smoke and canary
  // recipes and in recipes stored before the rule.
  std::vector<int64_t> own_stage_ids;
  // The golden-set comparison (docs/DESIGN.md §3.13): nullopt when the stage
  // runs no golden set (smoke, gate, a pooling candidate, equivalence.enabled
  // off, recipes stored before the rule).
  std::optional<EquivalenceRecipe> equivalence;
};

struct JudgeInput {
  JudgeRecipe recipe;

  std::vector<ProbeResult> candidate_rows;  // the candidate's rows in this stage
  std::vector<ProbeResult> baseline_rows;   // the baseline's rows (same period or history)
  std::vector<ProbeResult> own_rows;        // the rows of recipe.own_stage_ids
  std::vector<ProcessSample> process_samples;
  std::vector<HostSample> host_samples;
  // A history baseline's host samples over its own window (its rows' thermal
  // state); unused unless the baseline mode is History (host_samples holds
  // an interleaved baseline's).
  std::vector<HostSample> baseline_host_samples;
  // The last host sample before each window: the thermal level in effect when
  // its first rows started (samples are stored once a period, or at a change).
  std::optional<HostSample> host_sample_before, baseline_host_sample_before;
  std::vector<Event> events;
  // Golden answers (recipe.equivalence): every stored answer of the candidate
  // (its earlier stages' are a soak's reference) and of the reference when it
  // is another candidate row (the canary's baseline), id order.
  std::vector<GoldenAnswerRow> golden;
  std::vector<GoldenAnswerRow> reference_golden;

  // What smoke must have seen clean at least once: what a smoke pass runs
  // (build_judge_input sets it for the recipe's workload).
  std::vector<ProbeKind> smoke_required = probe_kinds_for(TaskKind::Smoke);
};

// The context reach shown by the rows (long-context rows of the candidate):
// the largest of `sizes` with a clean fresh row, and the runtime's own context
// as the probes learnt it (the latest row that says). candidate/stage/time are
// left for the caller.
ContextReach context_reach(const std::vector<ProbeResult>& rows, const std::vector<int64_t>& sizes);
// The context reach a judgment stands on: for a canary with configured
// long-context sizes, context_reach() of its candidate rows at those sizes,
// with the recipe's candidate, stage and time; nullopt for any other stage and
// for a recipe stored before the rule (no sizes). The canary's context_reach
// metric, the store's context_reach row (campaigns/recipe_store.h) and the
// report's ladder (reports/model.cc) all take it from here, so `soakctl status`
// and the page cannot show two reaches for one canary.
std::optional<ContextReach> judged_context_reach(const JudgeInput& in);
// "32K" for 32768, "131K" for 131072, "512" below a thousand: how the field
// reports name sizes.
std::string size_label(int64_t tokens);

// The stage's verdict. Never returns VerdictState::Running.
VerdictRow judge_stage(const JudgeInput& in);

// A running stage's way to its decisive rules' evidence, from its own rows
// so far (docs/DESIGN.md §3.2; soakctl status shows the shortest): each rule
// the stage's rows alone can count — its failure ratio, the gate's completed
// requests, the soak's pooled drift and completion rate — with what it has
// and what it needs. The comparisons, the golden set and the footprint are
// decided at the stage's end and not listed.
struct EvidenceProgress {
  std::string rule;
  int64_t had = 0, needed = 0;
  std::string unit;
  double fraction() const {
    return needed > 0 ? std::min(1.0, static_cast<double>(had) / static_cast<double>(needed)) : 1;
  }
};
std::vector<EvidenceProgress> evidence_progress(const JudgeInput& in);

// For checks while a stage runs: the rejecting verdict if a hard failure is
// already in the rows, nullopt otherwise (nothing else is decided early).
std::optional<VerdictRow> judge_hard_failures(const JudgeInput& in);

// For the start of a stage, before any probe: the stage's whole verdict
// (judge_stage) when the launch alone holds the candidate (a default output
// cap below limits.min_server_cap, not accepted), nullopt otherwise. Such a
// hold outranks missing evidence (the smoke has no rows yet), not a failure.
std::optional<VerdictRow> judge_launch_hold(const JudgeInput& in);

}  // namespace soak
