// Internals shared by the judge's translation units (judge*.cc). Not an
// interface: nothing outside judges/ includes this.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "judges/judge.h"
#include "judges/sequential.h"

namespace soak::judge_detail {

// ---- findings ------------------------------------------------------------------
// Ordered most decisive first: the verdict is the first severity any finding has.
// LaunchHold: what the runtime was started with holds it whatever the rows
// say (a launch cap, judges/floors.cc): it outranks missing evidence, so a
// smoke judged before its first probe says why it stopped.
enum class Severity { HardFailure, Blocked, Failure, LaunchHold, Inconclusive, Hold };

struct Finding {
  Severity severity;
  std::string reason;
  // A decisive rule short of its evidence (judges/evidence.cc): the rule and
  // the probe kinds more of whose rows would give it.
  std::optional<EvidenceGap> gap;
};

// What a decisive rule stood on (docs/DESIGN.md §3.2 "A promotion names its
// evidence"): how much it had against what it needs to decide, the probe kinds
// whose rows bring more of it, and what a pass on it can see.
struct EvidenceNeed {
  std::string rule;  // "drift/ttft_ms", "self/wall_ms", "failure_ratio", "equivalence"
  int64_t had = 0, needed = 0;
  std::string unit;              // "rows in each quarter", "completions", "prompts compared"
  std::vector<ProbeKind> kinds;  // whose rows would bring more of it
  std::string sees;              // what a pass on it sees: "a drift of +18% or more (alpha 0.01)"
  double sees_effect = 0;        // that smallest effect as a fraction (0: not stated)
  // A rule a promotion rests on: short of its evidence, the stage is
  // inconclusive. Others (the candidate against itself, a canary's fresh
  // prompt rate) reject on what they see and say when they could not decide.
  bool decisive = true;
  bool short_of_it() const { return had < needed; }
};

struct Judgement {
  std::vector<MetricEvidence> metrics;
  std::vector<Finding> findings;
  std::vector<EvidenceNeed> needs;

  void add(MetricEvidence m) { metrics.push_back(std::move(m)); }
  void find(Severity s, std::string reason) { findings.push_back({s, std::move(reason), std::nullopt}); }
  void need(EvidenceNeed n) { needs.push_back(std::move(n)); }
};

// ---- the prepared input --------------------------------------------------------
struct Context {
  explicit Context(const JudgeInput& input);

  const JudgeInput& in;
  std::vector<const ProbeResult*> cand;  // candidate rows by (started_wall_ms, id)
  std::vector<const ProbeResult*> base;  // baseline rows, same order
  std::vector<const ProbeResult*> own;   // the candidate's own earlier stages' rows, same order

  double confidence() const { return 1 - in.recipe.judge.alpha; }
};

// ---- text ----------------------------------------------------------------------
// printf-style formatting into a std::string (the "C" numeric locale: soakd
// never changes it).
std::string format(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
std::string pct(double fraction);                      // "+12.3%"
std::string num(double v);                             // 4 significant digits
std::string pval(double p);                            // "p=0.0031"
std::string id_list(const std::vector<int64_t>& ids);  // "12, 15, 19 and 4 more"

// Metric row with the numeric fields sanitised: NaN/inf never reach storage
// (they would serialize as JSON null).
MetricEvidence metric(std::string name, MetricResult result, std::string reason);
void set_numbers(MetricEvidence& m, double estimate, double baseline, double lo, double hi, double threshold,
                 double p_value);

// ---- events --------------------------------------------------------------------
// Events of `kind` that concern the candidate, by (wall_ms, id). Host-wide
// events (no candidate id) count when the scope allows them.
enum class EventScope { Candidate, CandidateOrHost };
std::vector<const Event*> events_of(const Context& c, EventKind kind, EventScope scope);

// ---- locators ------------------------------------------------------------------
// Everything that must match for two numbers to be comparable (docs/DESIGN.md §2.8).
// The candidate itself is not part of it: candidate and baseline pools with the
// same locator are compared with each other. The text fields view the rows'
// strings: a Locator lives no longer than the JudgeInput it was taken from.
struct Locator {
  int64_t host_id = 0;
  ProbeKind kind = ProbeKind::Health;
  std::string_view workload_id;
  std::optional<int64_t> size_tokens;
  CacheState cache_state = CacheState::None;
  std::optional<bool> thinking;
  int client_concurrency = 1;
  std::optional<int> runtime_slots;
  std::string_view fixture_hash;
  std::string_view sampling_json;

  // Spelled out rather than defaulted: std::tuple's comparison also works
  // where a standard library lacks operator<=> for string_view.
  auto fields() const {
    return std::tie(host_id, kind, workload_id, size_tokens, cache_state, thinking, client_concurrency, runtime_slots,
                    fixture_hash, sampling_json);
  }
  bool operator<(const Locator& o) const { return fields() < o.fields(); }
  bool operator==(const Locator& o) const { return fields() == o.fields(); }
};
Locator locator_of(const ProbeResult& r);
std::string locator_label(const Locator& l);  // "<workload>{cache=...,...}"

using Pools = std::map<Locator, std::vector<const ProbeResult*>>;
Pools pool_rows(const std::vector<const ProbeResult*>& rows);
// `rows` without a canary warm-up's (core/tasks.h TaskKind::Warmup): they
// measure the model's page-in, not the build, and never enter a comparison;
// nor do the golden set's (ProbeKind::Equivalence): their answers are
// compared, not their speed (no prompt cache, two runs a stage).
std::vector<const ProbeResult*> measured_rows(const std::vector<const ProbeResult*>& rows);

// ---- per-row figures -----------------------------------------------------------
bool counts_against(const ProbeResult& r);  // runtime failure (not clean, not harness)
bool is_harness(const ProbeResult& r);
bool is_clean(const ProbeResult& r);
// A row that reports on a group of others (a burst's summary): its members are
// the attempts, so it never counts as one itself.
bool is_group_summary(const ProbeResult& r);
// A completion the candidate was asked for: what failure ratios count. Health
// checks, scrapes and build reads are not (they would thin every ratio 2-3x).
bool is_completion(const ProbeResult& r);
// The probe kinds the canary's pooled failure rule counts: the workload's
// functional, long-context, burst and capacity probes (judge.cc, sequential.cc).
std::vector<ProbeKind> canary_pooled_kinds(WorkloadKind workload);
// A refused long prompt (ContextExceeded on a long-context or capacity row) is
// the long-context and capacity rules' to judge: a hold when the size is beyond
// the runtime's own context, a rejection otherwise; failure ratios leave it out.
bool refused_long_prompt(const ProbeResult& r);

enum class Better { Lower, Higher };

// One performance figure as read from rows. `extract` returns nullopt when the
// row has no value for it; rows that are not clean never contribute.
enum class Figure { Ttft, PromptTps, DecodeTps, Wall };
struct PerfMetric {
  Figure figure;
  std::string_view name;
  Better better;
  bool fresh_only;  // prompt throughput means nothing on a cache hit
  bool rate;        // a rate: timing-artifact rows are excluded
};
inline constexpr PerfMetric kTtft{Figure::Ttft, "ttft_ms", Better::Lower, false, false};
inline constexpr PerfMetric kPromptTps{Figure::PromptTps, "prompt_tps", Better::Higher, true, true};
inline constexpr PerfMetric kDecodeTps{Figure::DecodeTps, "decode_tps", Better::Higher, false, true};
inline constexpr PerfMetric kWall{Figure::Wall, "wall_ms", Better::Lower, false, false};
inline constexpr const PerfMetric* kPerfMetrics[] = {&kTtft, &kPromptTps, &kDecodeTps, &kWall};

// Values of `m` over the given row sets. A figure with a server and a client
// source (prompt and decode throughput) uses the server's only when every
// eligible row in every set has it, so the two sides are never measured
// differently. `source` says which was used.
struct Extracted {
  std::vector<std::vector<double>> values;  // one per input set
  std::string_view source;                  // "client" | "server"
};
Extracted extract(const PerfMetric& m, const std::vector<const std::vector<const ProbeResult*>*>& sets);
// The figure of `m` for each of `rows` that has one, in their order (extract's
// rules: clean rows, timing artifacts out of rates, cold loads out of times;
// one source for all of them).
struct RowFigures {
  std::vector<std::pair<const ProbeResult*, double>> rows;
  std::string_view source;
};
RowFigures figures_of(const PerfMetric& m, const std::vector<const ProbeResult*>& rows);
// One row's client-side value of `m` (TTFT, wall), when the row is eligible
// for it as extract() decides; nullopt otherwise.
std::optional<double> client_figure(const PerfMetric& m, const ProbeResult& r);

// ---- one figure pooled over locators (judges/pooled.cc) ---------------------------
// A locator's reference values (its early rows, the baseline's rows of it,
// the candidate's own earlier stage's) and the values tested against them.
struct LocatorValues {
  std::vector<double> ref, test;
};
// Every test value as its ratio to its locator's reference median, against
// the reference values' own ratios: one Mann–Whitney over all locators, in
// logs. Fractions "worse" are positive when the figure got worse (a time
// longer, a rate lower).
struct Pooled {
  int64_t n_ref = 0, n_test = 0;
  int locators = 0;  // locators with values on both sides
  double p_value = 1;
  double estimate = 0;    // the Hodges–Lehmann change, as a fraction worse
  double worse = 0;       // the interval's end nearest no change, as a fraction worse (0: the interval reaches it)
  double lo = 0, hi = 0;  // the interval as signed relative changes of the figure
  double ms_rise = 0;     // latencies: the test values' median rise over their locator's reference median, ms
  double sees = 0;        // the smallest change worse that a test on these samples tells from noise at alpha
};
Pooled pooled_change(Better better, bool latency, const std::vector<LocatorValues>& locs, double alpha);
// A row of a pooled series: when it was sent, and its figure as the log of
// its ratio to its locator's reference median.
struct TimedRatio {
  int64_t t_ms = 0;
  int64_t id = 0;
  double log_ratio = 0;
};
// The span of consecutive rows (in send order) whose ratios differ most from
// the others': where a slowdown started and how long it lasted.
struct ChangeSpan {
  bool found = false;
  int64_t from_ms = 0, to_ms = 0;  // the span's first and last rows
  bool from_start = false, to_end = false;
  int64_t n_in = 0, n_out = 0;
  double ratio_in = 1, ratio_out = 1;  // median ratio inside the span and outside it
};
ChangeSpan change_span(std::vector<TimedRatio> pts);
// "the rows split best from 1h20m into the stage to its end (1h40m, 62
// rows): x1000 <reference> there against x1.01 in the other 180"; empty when
// the best split is the whole stage.
std::string describe_span(const ChangeSpan& s, int64_t stage_start_ms, std::string_view reference);

// ---- a history baseline's own drift (judges/spread.cc) -----------------------------
// The baseline's stage-to-stage spread of one figure: its rows grouped by
// stored stage, the median of each stage with at least `min_samples` values,
// and (high - low) / low of those medians, i.e. how far one of its own
// sessions moved from another. stages < 2: not measurable.
struct StageSpread {
  int stages = 0;
  double low = 0, high = 0;  // the smallest and largest stage median
  double fraction = 0;
};
StageSpread stage_spread(const PerfMetric& m, const std::vector<const ProbeResult*>& base, int min_samples);

// ---- soak footprint trend (judges/trends.cc; judges/views.cc draws the same) -----
struct TrendPoint {
  int64_t t;  // wall ms
  double v;   // MB
};
// The candidate's processes summed per sample time, in MB; `source` says
// whether footprint or (where no sample has one) resident bytes were used.
std::vector<TrendPoint> footprint_series(const JudgeInput& in, std::string_view& source);
// Block medians of a time-sorted series: x in hours since its first sample.
void block_medians(const std::vector<TrendPoint>& s, std::vector<double>& x, std::vector<double>& y);

// ---- thermal pressure (judges/thermal.cc) -----------------------------------------
// More than this share of a stage's timed rows measured hot: inconclusive.
inline constexpr double kMaxHotShare = 0.25;
// `rows` without the timed rows measured above nominal thermal pressure (a
// sample of their host in effect at their start or taken while they ran).
struct ThermalSplit {
  std::vector<const ProbeResult*> rows;  // what comparisons see
  std::vector<int64_t> hot_ids;          // the timed rows left out
  int64_t timed = 0;                     // timed rows in all
  int worst = 0;                         // the highest level seen on a hot row
  bool read = false;                     // some sample carried a level at all
};
// `before`: the last sample before the window, in effect at its first rows.
ThermalSplit leave_out_hot(const std::vector<const ProbeResult*>& rows, const std::vector<HostSample>& samples,
                           const std::optional<HostSample>& before = std::nullopt);
// What the comparisons compare, both sides: past the warm-up, none measured
// hot (a history baseline's rows against its own window's samples).
struct CoolRows {
  ThermalSplit cand, base;
};
CoolRows cool_rows(const Context& c);
// The `thermal` metric (how many were left out), and an inconclusive finding
// past kMaxHotShare. Says nothing when no sample carried a level.
void judge_thermal(const Context& c, const ThermalSplit& cand, const ThermalSplit& base, Judgement& j);

// ---- the judges' parts (one translation unit each) ------------------------------
void judge_hard(const Context& c, Judgement& j);      // judges/hard.cc
void judge_runtime(const Context& c, Judgement& j);   // judges/managed.cc (called by judge_hard)
void judge_unserved(const Context& c, Judgement& j);  // judges/liveness.cc (called by judge_hard)
void judge_compare(const Context& c, Judgement& j);   // judges/compare.cc
void judge_trends(const Context& c, Judgement& j);    // judges/trends.cc
// judges/trends.cc: the soak's drift and completion rate alone
void judge_drift_evidence(const Context& c, Judgement& j);
void judge_long_context(const Context& c, Judgement& j);  // judges/context.cc
void judge_capacity(const Context& c, Judgement& j);      // judges/context.cc
// context_exceeded where the runtime's own context (the row's, else the stage's) does not exceed the prompt.
bool beyond_reach(const ProbeResult& r, std::optional<int64_t> stage_ctx);  // judges/context.cc
void judge_rounds(const Context& c, Judgement& j);       // judges/rounds.cc: gate and soak, per size and round
void judge_answers(const Context& c, Judgement& j);      // judges/answers.cc: loops, completion length
void judge_heavy_work(const Context& c, Judgement& j);   // judges/heavy_work.cc
void judge_equivalence(const Context& c, Judgement& j);  // judges/same_answers.cc: the golden set (canary, soak)
// judges/evidence.cc: every decisive rule's evidence as an `evidence/<rule>`
// row, and a rule short of it an inconclusive finding naming what it had and
// needed (called once, after every rule has stated its need).
void judge_evidence(const Context& c, Judgement& j);
// judges/compare.cc: the gate's and soak's rows against the same locators in
// the candidate's own earlier stages (the candidate against itself).
void judge_self(const Context& c, Judgement& j);
// An agent-session turn (probes/session.h): its tool calls are judged per
// context band (judges/session.cc), not in the hard ratio classes.
bool is_session_row(const ProbeResult& r);
// A session turn that asked for a tool call (its extra_json's tool_required),
// and the outcomes that are tool-call failures (missing, invalid, empty args).
bool requires_tool_call(const ProbeResult& r);
bool is_tool_failure(Outcome o);
void judge_session_hard(const Context& c, Judgement& j);  // judges/session.cc: tool-call bands, thinking 5xx
void judge_session(const Context& c, Judgement& j);       // judges/session.cc: recovery, sessions summary
void judge_prefix_reuse(const Context& c, Judgement& j);  // judges/session.cc: the canary's cold/warm/prefix rule
void judge_pooling_rps(const Context& c, Judgement& j);   // judges/session.cc: pooling bursts' requests/s
void judge_floors(const Context& c, Judgement& j);        // judges/floors.cc: the slo floors
void judge_launch_cap(const Context& c, Judgement& j);    // judges/floors.cc: the launch's default output cap
// judges/sequential.cc: the e-process of every watched failure measure, and
// their metric rows (a crossing is a hard failure; called by judge_hard).
std::vector<SequentialMeasure> evidence(const Context& c);
void judge_sequential(const Context& c, Judgement& j);

}  // namespace soak::judge_detail
