// The report model: what a candidate's page (and the index of every
// candidate) shows, built from Store queries and from the judge's own inputs,
// so every chart draws the numbers that decided. Rendering is in page.h.
//
// The judge's inputs come through a JudgedSource that the caller supplies
// (soakctl rebuilds them from the recipe stored with each verdict,
// campaigns/recipe_store.h); this layer only reads the store and the judges' views.
// Series are reduced here (reports/series.h), so the model is small whatever
// the store holds. Thread-agnostic; uses the Store it is given.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/result.h"
#include "core/types.h"
#include "judges/judge.h"
#include "reports/series.h"
#include "storage/store.h"

namespace soak::report {

// How big the reduced series are: enough for a chart ~1000 px wide.
inline constexpr int kTimeBuckets = 360;
inline constexpr size_t kStripPoints = 120;    // points per side in a strip plot
inline constexpr size_t kMaxFailureRows = 60;  // failure rows listed besides those a reason cites

// A judged verdict as the judge saw it again: its input rebuilt from the
// store, the verdict recomputed from it, and whether that is identical to the
// stored one (what `soakctl explain` checks).
struct JudgedStage {
  JudgeInput input;
  VerdictRow recomputed;
  bool identical = false;
};
// nullopt: the verdict has no recipe (an override, a running verdict).
using JudgedSource = std::function<Result<std::optional<JudgedStage>>(const VerdictRow&)>;

struct StageSpan {
  int64_t id = 0;
  StageKind kind = StageKind::Smoke;
  StageState state = StageState::Pending;
  int64_t start_ms = 0, end_ms = 0;  // end: when it ended, else now (running)
  int64_t nominal_end_ms = 0, deadline_ms = 0;
  std::string reason;
};

// The stages with their times resolved for drawing (StageSpan); the events as
// stored (a gap's duration_ms ends at its wall_ms).
struct Timeline {
  int64_t from_ms = 0, to_ms = 0;
  std::vector<StageSpan> stages;
  std::vector<Event> events;
};

// The soak judge's footprint trend, drawn from its own fit.
struct TrendView {
  int64_t t0_ms = 0;
  double slope = 0, lo = 0, hi = 0, intercept = 0;  // MB/h, MB at t0
  double bound = 0;                                 // the judge's slope bound, MB/h
  double confidence = 0;
  std::vector<double> block_x_h, block_y_mb;
  int64_t samples = 0;
  std::string source;  // footprint | resident
  // The stored verdict's footprint_slope_mb_per_h row, when it has one.
  std::optional<MetricEvidence> stored;
};

struct MemoryChart {
  std::string stage;  // which stage the window is
  int64_t from_ms = 0, to_ms = 0;
  std::vector<Bucket> footprint, resident, swap;  // the candidate's process, bytes
  std::vector<Bucket> host_swap;                  // host swap used, bytes
  std::optional<TrendView> trend;
};

struct PressureChart {
  int64_t from_ms = 0, to_ms = 0;
  std::vector<Bucket> level;      // macOS pressure level (1 normal, 2 warn, 4 critical)
  std::vector<Bucket> free_pct;   // macOS memorystatus level (% free)
  std::vector<Bucket> psi_some;   // Linux PSI some avg10 (%)
  std::vector<Bucket> swap_used;  // bytes
  // Thermal pressure (platform/thermal.h): samples that read a level, those
  // above nominal, and the highest level read (none read: samples == 0).
  int64_t thermal_samples = 0, thermal_hot = 0;
  ThermalLevel thermal_worst = ThermalLevel::Nominal;
};

// One figure of one locator: the candidate beside its baseline.
struct PerfGroup {
  std::string metric;  // the verdict row's name
  std::string figure;  // ttft_ms | decode_tps | wall_ms
  std::string workload;
  std::string source;
  Summary cand, base;
  std::vector<double> cand_points, base_points;  // thinned
  std::optional<MetricEvidence> evidence;        // the stored verdict's row for it
};

struct LadderPoint {
  int64_t size = 0;
  CacheState cache = CacheState::Fresh;
  Summary ttft_ms;
  int64_t attempts = 0, refused = 0;  // refused: context_exceeded
};

struct BurstPoint {
  int n = 0;
  Summary ttft_ms;
  int64_t summaries = 0, serialized = 0;  // summary rows, and those that were serialized_burst
  std::optional<double> peak_decoding;    // median over summaries: most members decoding at once
};

// One speed figure of one workload over the candidate's whole campaign, every
// stage, bucketed in time: a drift is seen as well as judged (the soak judges
// it, judges/trends.cc).
struct SpeedSeries {
  std::string workload;  // "agent 20K shared_prefix", "long_context 32K fresh"
  std::vector<Bucket> buckets;
  int64_t n = 0;
};
struct SpeedChart {
  std::string figure;  // ttft_ms | prompt_tps | decode_tps | wall_ms
  std::string unit;    // "ms", "tok/s"
  int64_t from_ms = 0, to_ms = 0;
  std::vector<SpeedSeries> series;  // the workloads with the most rows, most first
  std::vector<StageSpan> stages;    // where each stage begins and ends
};
// Per figure, at most this many workloads are drawn (the others are named in a note).
inline constexpr size_t kMaxSpeedSeries = 4;

struct JudgedView {
  VerdictRow stored;
  std::optional<bool> identical;  // checked for the latest judged verdict only
  std::string recomputed;         // its state and reason when it differs
};

// The latest golden-set comparison (judges/same_answers.h): the stage that
// made it, what was compared, and each prompt's status, from the judge's own
// input. `skipped` says why nothing was compared.
struct GoldenPromptRow {
  std::string prompt_id;
  std::string status;  // judges/equivalence.h PromptStatus names
  bool fails = false;  // a failing metric of the verdict
  std::string detail;  // the fork (position, both tokens, both margins), or the not-top-1 token
};
struct GoldenTable {
  std::string stage;  // "canary" | "soak"
  std::string skipped;
  std::string compared;  // "run x against the baseline (candidate row 3) run y, noise floor from ..."
  std::string summary;   // the comparison's one line
  std::vector<GoldenPromptRow> prompts;
};

struct CandidateReport {
  CandidateRow candidate;
  std::optional<CandidateRow> baseline;
  int64_t generated_ms = 0;
  std::optional<VerdictRow> latest;  // the newest verdict row (may be running or an override)
  std::vector<JudgedView> judged;    // newest first: the latest judged verdict of each stage
  Timeline timeline;
  std::optional<MemoryChart> memory;
  std::optional<PressureChart> pressure;
  std::string perf_stage;  // whose rows the perf groups are ("canary")
  std::string baseline_mode;
  std::vector<PerfGroup> perf;  // deciding first: failed, marginal, passed, insufficient
  std::vector<LadderPoint> ladder;
  // The latest judged canary's context reach (judges' judged_context_reach()),
  // when it falls short of the largest configured size.
  std::optional<int64_t> context_reach;
  std::vector<BurstPoint> bursts;
  std::vector<SpeedChart> speed;         // each speed figure over the whole campaign
  std::optional<GoldenTable> golden;     // the latest judged canary's or soak's golden set
  std::vector<ProbeResult> rows;         // cited by a reason, or failures (capped); by id
  std::vector<Event> events;             // every event of the timeline, by id
  std::set<int64_t> row_ids, event_ids;  // what the tables have anchors for
  std::vector<std::string> notes;        // what could not be shown, and why
};

// The speed charts from the candidate's rows over its campaign (reports/speed.cc);
// a read that fails leaves them out and says so in rep.notes.
void speed_charts(Store& store, const CandidateRow& candidate, CandidateReport& rep);

Result<CandidateReport> build_candidate_report(Store& store, const CandidateRow& candidate, int64_t now_ms,
                                               const JudgedSource& judged);

struct IndexEntry {
  StatusRow status;
  Timeline timeline;
};
struct IndexReport {
  int64_t generated_ms = 0;
  std::vector<IndexEntry> entries;
};
Result<IndexReport> build_index(Store& store, int64_t now_ms);

}  // namespace soak::report
