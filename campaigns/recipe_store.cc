#include "campaigns/recipe_store.h"

#include "judges/overlap.h"

namespace soak {

namespace {
// The newest host sample of `window`'s host before `since_ms` (within the same
// snapshot bound): the level in effect when the window's first rows started.
Result<std::optional<HostSample>> last_host_sample_before(Store& store, const SampleQuery& window, int64_t since_ms) {
  SampleQuery q;
  q.host_id = window.host_id;
  q.until_ms = since_ms - 1;
  q.max_id = window.max_id;
  q.newest_only = true;
  SOAK_TRY_ASSIGN(auto rows, store.host_samples(q));
  if (rows.empty()) return std::optional<HostSample>{};
  return std::optional<HostSample>(std::move(rows.back()));
}

// The heavy rows of the other candidates on a canary's host over its window.
// Asked per candidate and kind, through the (candidate, kind) index: by kind
// and time alone the query read the whole table, once per kind.
Result<std::vector<ProbeResult>> others_heavy_rows(Store& store, const JudgeRecipe& r, const RowSelection& sel) {
  SOAK_TRY_ASSIGN(auto candidates, store.candidates());
  std::vector<ProbeResult> others;
  for (const CandidateRow& c : candidates) {
    if (c.host_id != r.host_id || c.id == r.candidate_id || c.id == r.baseline_id) continue;
    for (ProbeKind k : kHeavyProbeKinds) {
      ProbeQuery hq;
      hq.candidate_id = c.id;
      hq.kind = k;
      hq.since_ms = sel.since_ms;
      hq.until_ms = sel.until_ms;
      hq.max_id = sel.max_ids.probe;
      SOAK_TRY_ASSIGN(auto heavy, store.probe_results(hq));
      for (auto& h : heavy)
        if (h.host_id == r.host_id) others.push_back(std::move(h));
    }
  }
  return others;
}

// The stage's own rows (the candidate's over the window when no stage is named).
Status read_candidate_rows(Store& store, const StoredRecipe& stored, JudgeInput& in) {
  const JudgeRecipe& r = stored.recipe;
  const RowSelection& sel = stored.rows;
  ProbeQuery pq;
  pq.candidate_id = r.candidate_id;
  pq.stage_id = r.stage_id;
  if (!r.stage_id) {
    pq.since_ms = sel.since_ms;
    pq.until_ms = sel.until_ms;
  }
  pq.max_id = sel.max_ids.probe;
  SOAK_TRY_ASSIGN(in.candidate_rows, store.probe_results(pq));

  // A canary's rows that ran while another candidate's heavy work loaded the
  // host stay out of its comparisons (judges/overlap.h); its baseline's
  // interleaved runs are the canary's own design, not another's load.
  if (r.stage == StageKind::Canary) {
    SOAK_TRY_ASSIGN(auto others, others_heavy_rows(store, r, sel));
    mark_overlapped_heavy(in.candidate_rows, others);
  }
  return {};
}

// The rows the stage's are compared with: its baseline's, and the
// candidate's own earlier stages (the candidate against itself).
Status read_compared_rows(Store& store, const StoredRecipe& stored, JudgeInput& in) {
  const JudgeRecipe& r = stored.recipe;
  const RowSelection& sel = stored.rows;
  if (r.baseline_id && r.baseline_mode != BaselineMode::None) {
    ProbeQuery bq;
    bq.candidate_id = *r.baseline_id;
    bq.since_ms = sel.baseline_since_ms;
    bq.until_ms = sel.baseline_until_ms;
    bq.max_id = sel.max_ids.probe;
    SOAK_TRY_ASSIGN(in.baseline_rows, store.probe_results(bq));
  }
  for (int64_t own_stage : r.own_stage_ids) {
    ProbeQuery oq;
    oq.candidate_id = r.candidate_id;
    oq.stage_id = own_stage;
    oq.max_id = sel.max_ids.probe;
    SOAK_TRY_ASSIGN(auto own, store.probe_results(oq));
    for (auto& o : own) in.own_rows.push_back(std::move(o));
  }
  return {};
}

// The candidate's process samples and its host's over the window, with the
// host sample in effect when it began; a history baseline's host samples too.
Status read_samples(Store& store, const StoredRecipe& stored, JudgeInput& in) {
  const JudgeRecipe& r = stored.recipe;
  const RowSelection& sel = stored.rows;
  SampleQuery ps;
  ps.candidate_id = r.candidate_id;
  ps.since_ms = sel.since_ms;
  ps.until_ms = sel.until_ms;
  ps.max_id = sel.max_ids.process_sample;
  SOAK_TRY_ASSIGN(in.process_samples, store.process_samples(ps));

  SampleQuery hs;
  hs.host_id = r.host_id;
  hs.since_ms = sel.since_ms;
  hs.until_ms = sel.until_ms;
  hs.max_id = sel.max_ids.host_sample;
  SOAK_TRY_ASSIGN(in.host_samples, store.host_samples(hs));
  SOAK_TRY_ASSIGN(in.host_sample_before, last_host_sample_before(store, hs, sel.since_ms));
  if (r.baseline_id && r.baseline_mode == BaselineMode::History) {
    // The thermal state its rows ran at (judges/thermal.cc), from its own window.
    hs.since_ms = sel.baseline_since_ms;
    hs.until_ms = sel.baseline_until_ms;
    SOAK_TRY_ASSIGN(in.baseline_host_samples, store.host_samples(hs));
    SOAK_TRY_ASSIGN(in.baseline_host_sample_before, last_host_sample_before(store, hs, sel.baseline_since_ms));
  }
  return {};
}

// The candidate's events over the window, the host-wide ones included.
Status read_events(Store& store, const StoredRecipe& stored, JudgeInput& in) {
  const RowSelection& sel = stored.rows;
  EventQuery eq;
  eq.candidate_id = stored.recipe.candidate_id;
  eq.host_wide = HostWide::Include;
  eq.since_ms = sel.since_ms;
  eq.until_ms = sel.until_ms;
  eq.max_id = sel.max_ids.event;
  SOAK_TRY_ASSIGN(in.events, store.events(eq));
  return {};
}

// The golden answers the comparison stands on, as stored at judgment time:
// the candidate's, and its reference's when that is another candidate.
Status read_golden(Store& store, const StoredRecipe& stored, JudgeInput& in) {
  const JudgeRecipe& r = stored.recipe;
  if (!r.equivalence) return {};
  auto upto = [&](int64_t candidate_id) -> Result<std::vector<GoldenAnswerRow>> {
    SOAK_TRY_ASSIGN(auto g, store.golden_answers(candidate_id));
    std::erase_if(g, [&](const GoldenAnswerRow& a) { return a.id > stored.rows.max_ids.golden; });
    return g;
  };
  SOAK_TRY_ASSIGN(in.golden, upto(r.candidate_id));
  if (r.equivalence->reference_id && *r.equivalence->reference_id != r.candidate_id) {
    SOAK_TRY_ASSIGN(in.reference_golden, upto(*r.equivalence->reference_id));
  }
  return {};
}
}  // namespace

Result<JudgeInput> build_judge_input(Store& store, const StoredRecipe& stored) {
  JudgeInput in;
  in.recipe = stored.recipe;
  in.smoke_required = probe_kinds_for(TaskKind::Smoke, stored.recipe.workload);
  SOAK_TRY(read_candidate_rows(store, stored, in));
  SOAK_TRY(read_compared_rows(store, stored, in));
  SOAK_TRY(read_samples(store, stored, in));
  SOAK_TRY(read_events(store, stored, in));
  SOAK_TRY(read_golden(store, stored, in));
  return in;
}

Result<BaselineChoice> choose_baseline(Store& store, std::optional<int64_t> baseline_id, StageKind stage,
                                       int64_t since_ms, int64_t until_ms) {
  BaselineChoice c;
  if (!baseline_id) return c;
  ProbeQuery same;
  same.candidate_id = *baseline_id;
  same.since_ms = since_ms;
  same.until_ms = until_ms;
  same.staged_only = stage != StageKind::Canary;
  same.limit = 1;
  SOAK_TRY_ASSIGN(auto now_rows, store.probe_results(same));
  if (!now_rows.empty()) {
    c.mode = BaselineMode::Interleaved;
    c.since_ms = since_ms;
    c.until_ms = until_ms;
    return c;
  }
  ProbeQuery hist;
  hist.candidate_id = *baseline_id;
  hist.since_ms = since_ms - kHistoryLookbackMs;
  hist.until_ms = since_ms;
  hist.limit = 1;
  SOAK_TRY_ASSIGN(auto old_rows, store.probe_results(hist));
  if (!old_rows.empty()) {
    c.mode = BaselineMode::History;
    c.since_ms = since_ms - kHistoryLookbackMs;
    c.until_ms = since_ms;
  }
  return c;
}

VerdictRow judged_verdict(const JudgeInput& in, const StoredRecipe& r) {
  VerdictRow v = judge_stage(in);
  v.judge_input_json = recipe_to_json(r);
  return v;
}

Result<StageJudged> judge_stage_from_store(Store& store, const StoredRecipe& r) {
  SOAK_TRY_ASSIGN(auto in, build_judge_input(store, r));
  StageJudged out;
  out.verdict = judged_verdict(in, r);
  out.reach = judged_context_reach(in);
  return out;
}

Result<VerdictRow> judge_from_store(Store& store, const StoredRecipe& r) {
  SOAK_TRY_ASSIGN(auto j, judge_stage_from_store(store, r));
  return std::move(j.verdict);
}

Result<std::optional<VerdictRow>> hard_failure_from_store(Store& store, const StoredRecipe& r) {
  SOAK_TRY_ASSIGN(auto in, build_judge_input(store, r));
  if (!judge_hard_failures(in)) return std::optional<VerdictRow>();
  // The whole verdict, from the same input and function `soakctl explain` uses.
  return std::optional<VerdictRow>(judged_verdict(in, r));
}

Result<std::optional<VerdictRow>> launch_hold_from_store(Store& store, const StoredRecipe& r) {
  SOAK_TRY_ASSIGN(auto in, build_judge_input(store, r));
  auto v = judge_launch_hold(in);
  if (v) v->judge_input_json = recipe_to_json(r);
  return v;
}

}  // namespace soak
