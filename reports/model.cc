#include "reports/model.h"

#include <algorithm>
#include <map>

#include <nlohmann/json.hpp>

#include "judges/same_answers.h"
#include "judges/views.h"
#include "reports/html.h"

namespace soak::report {

namespace {

Timeline make_timeline(const std::vector<StageRow>& stages, const std::vector<Event>& events, int64_t from_ms,
                       int64_t now_ms) {
  Timeline t;
  t.from_ms = from_ms;
  t.to_ms = from_ms;
  for (const auto& s : stages) {
    StageSpan sp;
    sp.id = s.id;
    sp.kind = s.kind;
    sp.state = s.state;
    sp.start_ms = s.started_ms;
    sp.end_ms = s.ended_ms.value_or(std::max(s.started_ms, now_ms));
    sp.nominal_end_ms = s.started_ms + s.length_ms;
    sp.deadline_ms = s.deadline_ms;
    sp.reason = s.reason;
    t.from_ms = std::min(t.from_ms, sp.start_ms);
    t.to_ms = std::max({t.to_ms, sp.end_ms, s.state == StageState::Running ? sp.nominal_end_ms : sp.end_ms});
    t.stages.push_back(std::move(sp));
  }
  for (const auto& e : events) t.to_ms = std::max(t.to_ms, e.wall_ms);
  t.events = events;
  if (t.to_ms <= t.from_ms) t.to_ms = t.from_ms + 1000;
  return t;
}

// A candidate's life on a timeline: from its first sighting (or its first
// stage, if earlier) to its last sighting or the end of its last stage (now,
// for one still running).
struct Life {
  int64_t from_ms = 0, to_ms = 0;
};
Life life_of(const CandidateRow& c, const std::vector<StageRow>& stages, int64_t now_ms) {
  Life l;
  l.from_ms = stages.empty() ? c.first_seen_ms : std::min(c.first_seen_ms, stages.front().started_ms);
  l.to_ms = std::max(c.last_seen_ms, l.from_ms);
  for (const auto& s : stages) l.to_ms = std::max(l.to_ms, s.ended_ms.value_or(now_ms));
  return l;
}

// Events of the candidate over its life, and with HostWide::Include the
// host-wide ones too (the candidate's page); host-wide events of a busy week
// (gaps, daemon restarts) are bounded by time, not count.
Result<std::vector<Event>> life_events(Store& store, const CandidateRow& c, const Life& life, HostWide host_wide) {
  EventQuery q;
  q.candidate_id = c.id;
  q.host_wide = host_wide;
  q.since_ms = life.from_ms;
  q.until_ms = life.to_ms;
  return store.events(q);
}

const MetricEvidence* find_metric(const VerdictRow& v, std::string_view name) {
  for (const auto& m : v.metrics)
    if (m.metric == name) return &m;
  return nullptr;
}

int rank_of(const std::optional<MetricEvidence>& m) {
  if (!m) return 4;
  switch (m->result) {
    case MetricResult::Fail: return 0;
    case MetricResult::Marginal: return 1;
    case MetricResult::Pass: return 2;
    case MetricResult::Insufficient: return 3;
  }
  return 4;
}

int figure_order(const std::string& f) {
  if (f == "ttft_ms") return 0;
  if (f == "decode_tps") return 1;
  return 2;
}

// Figures the page compares: TTFT, decode rate and wall latency (prompt
// throughput stays in the verdict's table).
bool shown_figure(const std::string& f) { return f == "ttft_ms" || f == "decode_tps" || f == "wall_ms"; }

std::vector<PerfGroup> perf_groups(const JudgedStage& j, const VerdictRow& stored) {
  std::vector<PerfGroup> out;
  for (auto& s : compared_samples(j.input)) {
    if (!shown_figure(s.figure)) continue;
    PerfGroup g;
    g.metric = s.metric;
    g.figure = s.figure;
    g.workload = s.workload;
    g.source = s.source;
    g.cand = summarize(s.candidate);
    g.base = summarize(s.baseline);
    g.cand_points = thin(s.candidate, kStripPoints);
    g.base_points = thin(s.baseline, kStripPoints);
    if (const MetricEvidence* m = find_metric(stored, s.metric)) g.evidence = *m;
    out.push_back(std::move(g));
  }
  std::stable_sort(out.begin(), out.end(), [](const PerfGroup& a, const PerfGroup& b) {
    const int ra = rank_of(a.evidence), rb = rank_of(b.evidence);
    if (ra != rb) return ra < rb;
    return figure_order(a.figure) < figure_order(b.figure);
  });
  return out;
}

std::optional<double> ttft_ms(const ProbeResult& r) {
  if (r.outcome != Outcome::Clean || !r.t_first_token_us) return std::nullopt;
  return static_cast<double>(*r.t_first_token_us) / 1000.0;
}

// The candidate's rows of one kind over its life, for the ladder and the
// bursts; a read that fails leaves that chart out and says so.
std::optional<std::vector<ProbeResult>> rows_of_kind(Store& store, const CandidateRow& c, ProbeKind kind,
                                                     const char* what, CandidateReport& rep) {
  ProbeQuery q;
  q.candidate_id = c.id;
  q.kind = kind;
  auto rows = store.probe_results(q);
  if (!rows) {
    rep.notes.push_back(std::string(what) + " rows unreadable: " + rows.message());
    return std::nullopt;
  }
  return std::move(*rows);
}

// The ladder draws every long-context row the candidate has; where it marks
// the reach is the canary judge's (build_candidate_report), not the rows'.
void ladder(Store& store, const CandidateRow& c, CandidateReport& rep) {
  auto rows = rows_of_kind(store, c, ProbeKind::LongContext, "long-context", rep);
  if (!rows) return;
  std::map<std::pair<int64_t, CacheState>, std::pair<std::vector<double>, LadderPoint>> by;
  for (const auto& r : *rows) {
    if (!r.size_tokens || category_of(r.outcome) == OutcomeCategory::Harness) continue;
    auto& [vals, p] = by[{*r.size_tokens, r.cache_state}];
    p.size = *r.size_tokens;
    p.cache = r.cache_state;
    ++p.attempts;
    if (r.outcome == Outcome::ContextExceeded) ++p.refused;
    if (auto v = ttft_ms(r)) vals.push_back(*v);
  }
  for (auto& [key, vp] : by) {
    vp.second.ttft_ms = summarize(std::move(vp.first));
    rep.ladder.push_back(vp.second);
  }
}

void bursts(Store& store, const CandidateRow& c, CandidateReport& rep) {
  auto rows = rows_of_kind(store, c, ProbeKind::Burst, "burst", rep);
  if (!rows) return;
  std::map<int, std::vector<double>> ttfts;
  std::map<int, std::vector<double>> peaks;
  std::map<int, BurstPoint> by;
  for (const auto& r : *rows) {
    const int n = r.client_concurrency;
    BurstPoint& p = by[n];
    p.n = n;
    const bool summary =
        r.workload_id.size() >= 8 && r.workload_id.compare(r.workload_id.size() - 8, 8, "/summary") == 0;
    if (summary) {
      ++p.summaries;
      if (r.outcome == Outcome::SerializedBurst) ++p.serialized;
      auto j = nlohmann::json::parse(r.extra_json, nullptr, false);
      if (j.is_object() && j.contains("peak_decoding") && j["peak_decoding"].is_number())
        peaks[n].push_back(j["peak_decoding"].get<double>());
      continue;
    }
    if (auto v = ttft_ms(r)) ttfts[n].push_back(*v);
  }
  for (auto& [n, p] : by) {
    p.ttft_ms = summarize(std::move(ttfts[n]));
    if (!peaks[n].empty()) p.peak_decoding = summarize(peaks[n]).median;
    rep.bursts.push_back(p);
  }
}

std::vector<TimedValue> series(const std::vector<ProcessSample>& s, int64_t candidate_id,
                               std::optional<int64_t> ProcessSample::*field) {
  // The candidate's processes summed per sample time, as the judge sums them.
  std::map<int64_t, int64_t> by_time;
  for (const auto& p : s)
    if (p.candidate_id && *p.candidate_id == candidate_id && (p.*field)) by_time[p.wall_ms] += *(p.*field);
  std::vector<TimedValue> out;
  out.reserve(by_time.size());
  for (const auto& [t, v] : by_time) out.push_back({t, static_cast<double>(v)});
  return out;
}

template <class F>
std::vector<TimedValue> host_series(const std::vector<HostSample>& s, F value) {
  std::vector<TimedValue> out;
  for (const auto& h : s)
    if (auto v = value(h)) out.push_back({h.wall_ms, *v});
  return out;
}

void memory(const std::vector<ProcessSample>& procs, const std::vector<HostSample>& hosts, const CandidateRow& c,
            const std::string& stage, int64_t from, int64_t to, CandidateReport& rep) {
  MemoryChart m;
  m.stage = stage;
  m.from_ms = from;
  m.to_ms = to;
  m.footprint = downsample(series(procs, c.id, &ProcessSample::footprint_bytes), from, to, kTimeBuckets);
  m.resident = downsample(series(procs, c.id, &ProcessSample::resident_bytes), from, to, kTimeBuckets);
  m.swap = downsample(series(procs, c.id, &ProcessSample::swap_bytes), from, to, kTimeBuckets);
  m.host_swap = downsample(host_series(hosts,
                                       [&](const HostSample& h) -> std::optional<double> {
                                         if (h.host_id != c.host_id || !h.swap_used_bytes) return std::nullopt;
                                         return static_cast<double>(*h.swap_used_bytes);
                                       }),
                           from, to, kTimeBuckets);
  rep.memory = std::move(m);

  PressureChart p;
  p.from_ms = from;
  p.to_ms = to;
  auto of = [&](auto get) {
    return downsample(host_series(hosts,
                                  [&](const HostSample& h) -> std::optional<double> {
                                    if (h.host_id != c.host_id) return std::nullopt;
                                    return get(h);
                                  }),
                      from, to, kTimeBuckets);
  };
  p.level = of([](const HostSample& h) -> std::optional<double> {
    return h.pressure_level ? std::optional<double>(*h.pressure_level) : std::nullopt;
  });
  p.free_pct = of([](const HostSample& h) -> std::optional<double> {
    return h.memorystatus_level ? std::optional<double>(*h.memorystatus_level) : std::nullopt;
  });
  p.psi_some = of([](const HostSample& h) { return h.psi_some_avg10; });
  for (const auto& h : hosts) {
    if (h.host_id != c.host_id || !h.thermal_level || h.wall_ms < from || h.wall_ms > to) continue;
    const ThermalLevel l = thermal_level_of(*h.thermal_level).value_or(ThermalLevel::Nominal);
    ++p.thermal_samples;
    if (l != ThermalLevel::Nominal) ++p.thermal_hot;
    p.thermal_worst = std::max(p.thermal_worst, l);
  }
  p.swap_used = rep.memory->host_swap;
  rep.pressure = std::move(p);
}

void add_trend(const JudgedStage& j, const VerdictRow& stored, CandidateReport& rep) {
  const FootprintTrend ft = footprint_trend(j.input);
  if (ft.block_x_h.empty() || !rep.memory) return;
  TrendView t;
  t.t0_ms = ft.t0_ms;
  t.slope = ft.fit.slope;
  t.lo = ft.fit.lo;
  t.hi = ft.fit.hi;
  t.intercept = ft.fit.intercept;
  t.bound = j.input.recipe.soak.max_footprint_slope_mb_per_h;
  t.confidence = ft.confidence;
  t.block_x_h = ft.block_x_h;
  t.block_y_mb = ft.block_y_mb;
  t.samples = static_cast<int64_t>(ft.mb.size());
  t.source = ft.source;
  if (const MetricEvidence* m = find_metric(stored, "footprint_slope_mb_per_h")) t.stored = *m;
  rep.memory->trend = std::move(t);
}

bool is_failure(const ProbeResult& r) { return category_of(r.outcome) == OutcomeCategory::CandidateFailure; }

// The latest judged verdict of each stage (overrides and verdicts without a
// stored judge input left out), and the latest judged of them all.
struct LatestJudged {
  std::map<std::string, const VerdictRow*> per_stage;
  const VerdictRow* latest = nullptr;

  const VerdictRow* of(const std::string& stage) const {
    auto it = per_stage.find(stage);
    return it == per_stage.end() ? nullptr : it->second;
  }
};

LatestJudged latest_judged(const std::vector<VerdictRow>& verdicts) {
  LatestJudged out;
  for (const auto& v : verdicts) {
    if (v.is_override || v.judge_input_json.empty()) continue;
    out.per_stage[v.stage] = &v;
    out.latest = &v;
  }
  return out;
}

// What each judged verdict was judged on, rebuilt through the JudgedSource at
// its first use and kept. A rebuild that fails is noted (and tried again at
// the next use).
class JudgedInputs {
 public:
  JudgedInputs(const JudgedSource& judged, std::vector<std::string>& notes) : judged_(judged), notes_(notes) {}

  // nullptr: no verdict, no source, nothing to rebuild, or a rebuild that failed.
  const JudgedStage* of(const VerdictRow* v) {
    if (!v || !judged_) return nullptr;
    auto it = read_.find(v);
    if (it != read_.end()) return &it->second;
    auto j = judged_(*v);
    if (!j) {
      notes_.push_back("the " + v->stage + " verdict's rows could not be read again: " + j.message());
      return nullptr;
    }
    if (!*j) return nullptr;
    return &read_.emplace(v, std::move(**j)).first->second;
  }
  // Every input rebuilt so far.
  const std::map<const VerdictRow*, JudgedStage>& read() const { return read_; }

 private:
  const JudgedSource& judged_;
  std::vector<std::string>& notes_;
  std::map<const VerdictRow*, JudgedStage> read_;
};

// The latest judged verdict of each stage, newest first; the latest of all
// judged again, and whether that gives the same verdict.
void add_judged_views(const LatestJudged& latest, JudgedInputs& inputs, CandidateReport& rep) {
  std::vector<const VerdictRow*> order;
  for (const auto& [stage, v] : latest.per_stage) order.push_back(v);
  std::sort(order.begin(), order.end(), [](const VerdictRow* a, const VerdictRow* b) { return a->id > b->id; });
  for (const VerdictRow* v : order) {
    JudgedView jv;
    jv.stored = *v;
    if (v == latest.latest) {
      if (const JudgedStage* j = inputs.of(v)) {
        jv.identical = j->identical;
        if (!j->identical) jv.recomputed = std::string(to_string(j->recomputed.state)) + " — " + j->recomputed.reason;
      }
    }
    rep.judged.push_back(std::move(jv));
  }
}

// Candidate beside baseline: the canary's rows, as its judge compared them.
void add_canary_comparison(const LatestJudged& latest, JudgedInputs& inputs, CandidateReport& rep) {
  const VerdictRow* canary = latest.of("canary");
  if (!canary) {
    rep.notes.push_back("no judged canary yet: no comparison with the baseline");
    return;
  }
  const JudgedStage* j = inputs.of(canary);
  if (!j) return;
  rep.perf = perf_groups(*j, *canary);
  rep.perf_stage = "canary";
  rep.baseline_mode = std::string(to_string(j->input.recipe.baseline_mode));
  // The reach the canary was judged on (what soakctl status shows), marked
  // when it falls short of the largest configured size.
  if (auto reach = judged_context_reach(j->input); reach && reach->reach_tokens < reach->configured_tokens)
    rep.context_reach = reach->reach_tokens;
}

// The golden set's comparison as `stage`'s judge made it, its failing prompts marked.
GoldenTable golden_table(const char* stage, const JudgedStage& j, const GoldenComparison& g) {
  GoldenTable t;
  t.stage = stage;
  t.skipped = g.skipped;
  if (!g.result) return t;
  t.compared = "run " + g.run + " against " + g.reference + " run " + g.reference_run + ", noise floor " +
               (g.floor ? "from " + g.floor_from : std::string("zero (one run only)"));
  t.summary = g.result->summary();
  for (const PromptComparison& p : g.result->prompts) {
    GoldenPromptRow row{p.prompt_id, std::string(to_string(p.status)), false, describe(p)};
    for (const auto& m : j.recomputed.metrics)
      if (m.metric == "equivalence/" + p.prompt_id && m.result == MetricResult::Fail) row.fails = true;
    t.prompts.push_back(std::move(row));
  }
  return t;
}

// The latest golden-set comparison: the soak's when it was judged, else the canary's.
void add_golden(const LatestJudged& latest, JudgedInputs& inputs, CandidateReport& rep) {
  for (const char* stage : {"soak", "canary"}) {
    const JudgedStage* j = inputs.of(latest.of(stage));
    if (!j) continue;
    const auto g = compare_golden(j->input.recipe, j->input.golden, j->input.reference_golden);
    if (!g) continue;
    rep.golden = golden_table(stage, *j, *g);
    return;
  }
}

// The stage whose memory the page charts: the latest soak, else the latest stage (nullptr: none).
const StageRow* memory_window(const std::vector<StageRow>& stages) {
  const StageRow* window = nullptr;
  for (const auto& s : stages)
    if (s.kind == StageKind::Soak) window = &s;
  if (!window && !stages.empty()) window = &stages.back();
  return window;
}

// Memory over the soak (or the latest stage): the soak judge's own samples
// when it judged, else the stage's window of the candidate's processes and
// of its host.
Status add_memory(Store& store, const CandidateRow& c, const std::vector<StageRow>& stages, const LatestJudged& latest,
                  JudgedInputs& inputs, int64_t now_ms, CandidateReport& rep) {
  const VerdictRow* soak = latest.of("soak");
  const JudgedStage* soak_input = soak ? inputs.of(soak) : nullptr;
  const StageRow* window = memory_window(stages);
  if (!window) return {};
  const int64_t w_from = window->started_ms, w_to = std::max(window->ended_ms.value_or(now_ms), w_from + 1);
  if (soak_input && window->kind == StageKind::Soak) {
    memory(soak_input->input.process_samples, soak_input->input.host_samples, c, "soak", w_from, w_to, rep);
    add_trend(*soak_input, *soak, rep);
    return {};
  }
  SampleQuery span;
  span.since_ms = w_from;
  span.until_ms = w_to;
  SampleQuery pq = span, hq = span;
  pq.candidate_id = c.id;
  hq.host_id = c.host_id;
  SOAK_TRY_ASSIGN(auto procs, store.process_samples(pq));
  SOAK_TRY_ASSIGN(auto hosts, store.host_samples(hq));
  memory(procs, hosts, c, std::string(to_string(window->kind)), w_from, w_to, rep);
  if (window->kind == StageKind::Soak) rep.notes.push_back("the soak is not judged yet: no trend line");
  return {};
}

// Every row id a judged verdict's reason, or one of its metrics' reasons, cites.
std::set<int64_t> cited_rows(const std::vector<JudgedView>& judged) {
  std::set<int64_t> out;
  for (const auto& jv : judged) {
    for (int64_t id : cited_ids(jv.stored.reason).rows) out.insert(id);
    for (const auto& m : jv.stored.metrics) {
      auto ids = cited_ids(m.reason);
      out.insert(ids.rows.begin(), ids.rows.end());
    }
  }
  return out;
}

// Adds the failures the judges saw to `rows`, up to kMaxFailureRows besides those already in.
void add_failure_rows(const std::map<const VerdictRow*, JudgedStage>& inputs, std::map<int64_t, ProbeResult>& rows,
                      CandidateReport& rep) {
  size_t failures = 0;
  for (const auto& [v, j] : inputs)
    for (const auto& r : j.input.candidate_rows)
      if (is_failure(r) && !rows.count(r.id) && failures < kMaxFailureRows) {
        rows.emplace(r.id, r);
        ++failures;
      }
  if (failures == kMaxFailureRows)
    rep.notes.push_back("failure rows listed up to " + std::to_string(kMaxFailureRows) +
                        " besides those a reason cites (sqlite3 on the store has them all)");
}

// Rows: every id a reason cites, then failures the judges saw (capped).
Status add_rows(Store& store, const CandidateRow& c, const std::map<const VerdictRow*, JudgedStage>& inputs,
                CandidateReport& rep) {
  std::map<int64_t, ProbeResult> rows;
  for (int64_t id : cited_rows(rep.judged)) {
    ProbeQuery q;
    q.candidate_id = c.id;
    q.min_id = id;
    q.max_id = id;
    SOAK_TRY_ASSIGN(auto r, store.probe_results(q));
    for (auto& x : r) rows.emplace(x.id, std::move(x));
  }
  add_failure_rows(inputs, rows, rep);
  for (auto& [id, r] : rows) {
    rep.row_ids.insert(id);
    rep.rows.push_back(std::move(r));
  }
  return {};
}

}  // namespace

Result<CandidateReport> build_candidate_report(Store& store, const CandidateRow& candidate, int64_t now_ms,
                                               const JudgedSource& judged) {
  CandidateReport rep;
  rep.candidate = candidate;
  rep.generated_ms = now_ms;
  if (candidate.baseline_id) {
    SOAK_TRY_ASSIGN(rep.baseline, store.candidate(*candidate.baseline_id));
  }
  SOAK_TRY_ASSIGN(auto stages, store.stages(candidate.id));
  SOAK_TRY_ASSIGN(auto verdicts, store.verdicts(candidate.id));
  if (!verdicts.empty()) rep.latest = verdicts.back();

  const Life life = life_of(candidate, stages, now_ms);
  SOAK_TRY_ASSIGN(auto events, life_events(store, candidate, life, HostWide::Include));
  rep.timeline = make_timeline(stages, events, life.from_ms, now_ms);
  rep.events = events;

  const LatestJudged latest = latest_judged(verdicts);
  JudgedInputs inputs(judged, rep.notes);
  add_judged_views(latest, inputs, rep);
  add_canary_comparison(latest, inputs, rep);
  add_golden(latest, inputs, rep);
  SOAK_TRY(add_memory(store, candidate, stages, latest, inputs, now_ms, rep));

  ladder(store, candidate, rep);
  bursts(store, candidate, rep);
  speed_charts(store, candidate, rep);

  SOAK_TRY(add_rows(store, candidate, inputs.read(), rep));
  for (const auto& e : rep.events) rep.event_ids.insert(e.id);
  return rep;
}

Result<IndexReport> build_index(Store& store, int64_t now_ms) {
  IndexReport idx;
  idx.generated_ms = now_ms;
  SOAK_TRY_ASSIGN(auto status, store.status());
  for (auto& s : status) {
    IndexEntry e;
    SOAK_TRY_ASSIGN(auto stages, store.stages(s.candidate.id));
    const Life life = life_of(s.candidate, stages, now_ms);
    SOAK_TRY_ASSIGN(auto events, life_events(store, s.candidate, life, HostWide::Exclude));
    e.timeline = make_timeline(stages, events, life.from_ms, now_ms);
    e.status = std::move(s);
    idx.entries.push_back(std::move(e));
  }
  return idx;
}

}  // namespace soak::report
