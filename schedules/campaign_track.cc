#include "schedules/campaign_track.h"

#include <algorithm>
#include <set>

#include <spdlog/fmt/fmt.h>
#include <nlohmann/json.hpp>

#include "core/duration.h"
#include "schedules/heavy_waits.h"

namespace soak {

using json = nlohmann::ordered_json;

namespace {

StageState stage_state_for(VerdictState v) {
  switch (v) {
    case VerdictState::Promoted: return StageState::Passed;
    case VerdictState::Rejected: return StageState::Failed;
    case VerdictState::Hold: return StageState::Hold;
    case VerdictState::Blocked: return StageState::Blocked;
    case VerdictState::Inconclusive:
    case VerdictState::Running: return StageState::Inconclusive;
  }
  return StageState::Inconclusive;
}

Event track_event(const Track& t, EventKind kind, const json& detail, int64_t now, int64_t duration_ms) {
  Event e;
  e.wall_ms = now;
  e.host_id = t.row->host_id;
  e.candidate_id = t.row->id;
  e.kind = kind;
  e.detail_json = detail.dump();
  e.duration_ms = duration_ms;
  return e;
}

// A heavy task's wait began (duration: none) or ended (duration: its length):
// stored, so a restarted daemon counts the same waits (schedules/heavy_waits.h).
void wait_event(const Track& t, size_t task, WaitPhase phase, int64_t now, std::optional<int64_t> duration_ms,
                Transition& tr) {
  Event e = track_event(t, EventKind::HeavyWait, json::object(), now, 0);
  e.detail_json = heavy_wait_detail(t.plan.tasks[task].kind, phase, t.stage->kind, t.stage->id);
  e.duration_ms = duration_ms;
  tr.events.push_back(std::move(e));
}

void hold(Track& t, const std::vector<size_t>& held, int64_t now, Transition& tr) {
  for (size_t i : held)
    if (!t.tasks.at(i).waiting_since_ms) wait_event(t, i, WaitPhase::Began, now, std::nullopt, tr);
  mark_held(t.tasks, held, now);
}

// The tasks due at `now`, marked started.
void due_now(Track& t, const StepInputs& in, int64_t now, Transition& tr) {
  if (in.frozen || !t.stage) return;
  DueSet due = next_due(t.plan, t.tasks, t.stage->started_ms, now, in.heavy);
  hold(t, due.held, now, tr);
  for (const Due& d : due.due) {
    // While another candidate's canary measures, only the heartbeat runs.
    if (in.hold_traffic && t.plan.tasks[d.task].kind != TaskKind::Scrape) {
      if (t.plan.tasks[d.task].weight == Weight::Heavy) hold(t, {d.task}, now, tr);
      continue;
    }
    if (const auto& since = t.tasks[d.task].waiting_since_ms)
      wait_event(t, d.task, WaitPhase::Ended, now, std::max<int64_t>(0, now - *since), tr);
    mark_started(t.tasks, d, now);
    if (t.plan.tasks[d.task].weight == Weight::Heavy) t.last_heavy_start_ms = now;
    tr.dispatch.push_back(d);
  }
}

// Heavy tasks of the plan that waited for the host's heavy gate and have not
// run once in this stage (a closing task waits at the end by design).
std::vector<size_t> heavy_starved(const Track& t) {
  std::vector<size_t> out;
  for (size_t i = 0; i < t.plan.tasks.size() && i < t.tasks.size(); ++i)
    if (t.plan.tasks[i].weight == Weight::Heavy && t.plan.tasks[i].repeat != Repeat::Closing && t.tasks[i].runs == 0 &&
        !t.tasks[i].running && t.tasks[i].waits > 0)
      out.push_back(i);
  return out;
}

// The stage is at its end and nothing of it runs: its closing task (the
// golden set) runs now, alone, or waits for the host's heavy gate (and, like
// any traffic, for another candidate's canary measuring).
void closing_now(Track& t, const StepInputs& in, size_t task, int64_t now, Transition& tr) {
  if (in.frozen) return;
  if (in.heavy == HeavyGate::Busy || in.hold_traffic) {
    hold(t, {task}, now, tr);
    return;
  }
  if (const auto& since = t.tasks[task].waiting_since_ms)
    wait_event(t, task, WaitPhase::Ended, now, std::max<int64_t>(0, now - *since), tr);
  const Due d{task, 0};
  mark_started(t.tasks, d, now);
  t.last_heavy_start_ms = now;
  tr.dispatch.push_back(d);
}

// Out of time: what is still running is cut first (recorded as cancelled by the
// daemon); the stage is judged on what it saw once nothing is in flight.
void at_end(const StepInputs& in, StageEnd end, Transition& tr) {
  if (in.busy)
    tr.cancel = true;
  else
    tr.judge = end;
}

}  // namespace

void set_config(Track& t, const ConfigSnapshot& cfg, const CandidateConfig& c) {
  t.name = c.name;
  t.cfg = candidate_snapshot(cfg, c);
  t.config_hash = cfg->candidate_hash(c);
}

std::optional<StageKind> next_stage(StageKind k) {
  switch (k) {
    case StageKind::Smoke: return StageKind::Canary;
    case StageKind::Canary: return StageKind::Gate;
    case StageKind::Gate: return StageKind::Soak;
    case StageKind::Soak: return std::nullopt;
  }
  return std::nullopt;
}

std::optional<int64_t> heavy_waiting_since(const Track& t) {
  std::optional<int64_t> out;
  if (t.phase != Phase::Staged) return out;
  for (size_t i = 0; i < t.plan.tasks.size() && i < t.tasks.size(); ++i)
    if (t.plan.tasks[i].weight == Weight::Heavy && t.tasks[i].waiting_since_ms &&
        (!out || *t.tasks[i].waiting_since_ms < *out))
      out = t.tasks[i].waiting_since_ms;
  return out;
}

bool heavy_turn_before(const Track& a, const Track& b) {
  const auto wa = heavy_waiting_since(a), wb = heavy_waiting_since(b);
  if (wa != wb) return wa && (!wb || *wa < *wb);  // a waiting track before one that does not wait
  if (a.last_heavy_start_ms != b.last_heavy_start_ms)
    return !a.last_heavy_start_ms || (b.last_heavy_start_ms && *a.last_heavy_start_ms < *b.last_heavy_start_ms);
  return a.name < b.name;
}

HeavyGate heavy_gate_for(const Track& t, const std::vector<RunningTask>& running, bool exclusive_heavy) {
  const bool canary = t.stage && t.stage->kind == StageKind::Canary;
  for (const RunningTask& r : running) {
    if (r.track == t.name) {
      if (r.weight == Weight::Heavy) return HeavyGate::Busy;
      continue;
    }
    // Gate and soak traffic waits for a canary's heavy work; another canary's
    // light probes are its own timed rows, held to the heavy rule only.
    if (canary && r.traffic && !r.canary) return HeavyGate::Busy;
    if (r.weight == Weight::Heavy && (exclusive_heavy || r.canary)) return HeavyGate::Busy;
  }
  return HeavyGate::Free;
}

bool interleaves(TaskKind k) {
  return k == TaskKind::Scrape || k == TaskKind::Functional || k == TaskKind::LongContext || k == TaskKind::Burst ||
         k == TaskKind::Capacity;
}

VerdictRow verdict_for(const Track& t, VerdictState state, std::string reason, int64_t now, const std::string& who,
                       const std::string& why) {
  VerdictRow v;
  v.candidate_id = t.row->id;
  v.stage_id = t.stage ? std::optional<int64_t>(t.stage->id) : std::nullopt;
  v.wall_ms = now;
  v.state = state;
  v.stage = t.stage ? std::string(to_string(t.stage->kind)) : "";
  v.reason = std::move(reason);
  v.judge_version = std::string(kJudgeVersion);
  v.config_hash = t.config_hash;
  v.baseline_id = t.baseline_id;
  v.is_override = !who.empty();
  v.who = who;
  v.why = why;
  return v;
}

// ============================================================== stage start
StageRow open_stage(const Track& t, StageKind kind, int64_t now) {
  const CampaignSettings& s = t.cfg->settings;
  StageRow st;
  st.candidate_id = t.row->id;
  st.kind = kind;
  st.state = StageState::Running;
  st.started_ms = now;
  st.length_ms = s.stages.length_ms(kind);
  st.deadline_ms = stage_deadline(now, st.length_ms, s.stages.grace_fraction);
  return st;
}

namespace {
// A managed runtime may have just loaded its model, and a first build has no
// earlier run on this host that paged it in: their canary opens with a warm-up.
Warmup warmup_for(const Track& t, StageKind stage) {
  const bool opens = stage == StageKind::Canary && (t.cfg->launch.has_value() || !t.baseline_id);
  return opens ? Warmup::Opening : Warmup::None;
}
}  // namespace

Transition enter_stage(Track& t, const StageRow& stored, int64_t now) {
  t.stage = stored;
  t.plan = plan_for(stored.kind, t.cfg->settings, t.cfg->kind, warmup_for(t, stored.kind));
  t.tasks.assign(t.plan.tasks.size(), TaskState{});
  t.phase = Phase::Staged;
  t.smoke_retry_at_ms.reset();
  t.extension_noted = false;
  t.evidence_wait.reset();
  t.stage_rows = t.rows_at_check = 0;
  Transition tr;
  tr.verdicts.push_back(verdict_for(t, VerdictState::Running, std::string(to_string(stored.kind)) + " running", now));
  tr.notes.push_back(fmt::format("{} ({}): {} started, {} (deadline +{})", t.name, t.row->build, to_string(stored.kind),
                                 format_duration(stored.length_ms), format_duration(stored.deadline_ms - now)));
  return tr;
}

// ============================================================== running stage
Transition step_stage(Track& t, const StepInputs& in, int64_t now) {
  Transition tr;
  if (t.phase != Phase::Staged || !t.stage) return tr;
  const StageRow& st = *t.stage;

  if (st.kind == StageKind::Smoke) {
    const bool ran = !t.tasks.empty() && t.tasks[0].runs > 0;
    if (ran && !in.busy && !t.smoke_retry_at_ms) {
      tr.judge = StageEnd::Completed;
    } else if (now >= st.started_ms + st.length_ms) {
      at_end(in, StageEnd::TimedOut, tr);
    } else if (!t.smoke_retry_at_ms || now >= *t.smoke_retry_at_ms) {
      t.smoke_retry_at_ms.reset();
      due_now(t, in, now, tr);
    }
    return tr;
  }

  const double cov = coverage(t.plan, t.tasks, st.length_ms);
  const double min_cov = t.cfg->settings.gate.min_coverage;
  switch (stage_clock(st, cov, min_cov, now)) {
    case StageClock::Running: due_now(t, in, now, tr); break;
    case StageClock::Extended:
      if (!t.extension_noted) {
        t.extension_noted = true;
        json d;
        d["reason"] = "coverage below threshold at the nominal end";
        d["coverage"] = cov;
        d["min_coverage"] = min_cov;
        d["stage"] = to_string(st.kind);
        d["stage_id"] = st.id;
        tr.events.push_back(track_event(t, EventKind::StageExtended, d, now, st.deadline_ms - now));
        tr.notes.push_back(fmt::format("{}: {} coverage {:.0f}% < {:.0f}%: extended up to its deadline", t.name,
                                       to_string(st.kind), cov * 100, min_cov * 100));
      }
      due_now(t, in, now, tr);
      break;
    case StageClock::Complete: {
      // Heavy work that waited for the host and never ran: the grace makes it up.
      const std::vector<size_t> starved = heavy_starved(t);
      if (!starved.empty() && now < st.deadline_ms) {
        if (!t.extension_noted) {
          t.extension_noted = true;
          json d;
          d["reason"] = "planned heavy work waited for the host and has not run";
          json tasks = json::array();
          for (size_t i : starved) {
            const TaskState& s = t.tasks[i];
            const int64_t waited = s.waited_ms + (s.waiting_since_ms ? now - *s.waiting_since_ms : 0);
            tasks.push_back({{"task", to_string(t.plan.tasks[i].kind)}, {"waits", s.waits}, {"waited_ms", waited}});
          }
          d["tasks"] = tasks;
          d["stage"] = to_string(st.kind);
          d["stage_id"] = st.id;
          tr.events.push_back(track_event(t, EventKind::StageExtended, d, now, st.deadline_ms - now));
          tr.notes.push_back(
              fmt::format("{}: {} heavy work has not run ({} task(s) waited for the host): extended "
                          "up to its deadline",
                          t.name, to_string(st.kind), starved.size()));
        }
        due_now(t, in, now, tr);
        break;
      }
      // Waiting for a decisive rule's evidence: the plan runs on until the
      // stage has grown enough to judge again (or its deadline).
      if (t.evidence_wait && now < st.deadline_ms && t.stage_rows < t.evidence_wait->recheck_rows &&
          now < t.evidence_wait->recheck_ms) {
        due_now(t, in, now, tr);
        break;
      }
      if (in.busy) break;
      // The golden set's end run, alone on the runtime, before the judgment.
      if (const auto closing = closing_due(t.plan, t.tasks)) {
        closing_now(t, in, *closing, now, tr);
        break;
      }
      tr.judge = StageEnd::Completed;
      break;
    }
    case StageClock::DeadlineHit: at_end(in, StageEnd::TimedOut, tr); break;
  }
  return tr;
}

namespace {

// A rule's work is still coming when a task the plan runs again (not an
// opening or closing run) produces one of its kinds; a rule whose evidence is
// samples (no kinds) gets more as the stage runs.
bool evidence_coming(const Track& t, const EvidenceGap& gap) {
  if (gap.kinds.empty()) return true;
  for (const TaskSpec& spec : t.plan.tasks) {
    if (spec.repeat != Repeat::Periodic && spec.repeat != Repeat::Continuous) continue;
    for (ProbeKind k : probe_kinds_for(spec.kind, t.cfg->kind))
      if (std::find(gap.kinds.begin(), gap.kinds.end(), k) != gap.kinds.end()) return true;
  }
  return false;
}

// How far a waiting stage runs before it is judged again: an eighth more
// timed rows (at least kEarlyCheckMinRows), or an eighth of what is left to
// its deadline, whichever comes first; a stage of n rows is judged again
// O(log n) times, never on every tick.
constexpr int64_t kEvidenceRecheckParts = 8;

}  // namespace

std::optional<Transition> wait_for_evidence(Track& t, const VerdictRow& v, int64_t now) {
  if (!t.stage || v.awaiting_evidence.empty() || now >= t.stage->deadline_ms) return std::nullopt;
  std::vector<EvidenceGap> coming;
  for (const EvidenceGap& g : v.awaiting_evidence)
    if (evidence_coming(t, g)) coming.push_back(g);
  if (coming.empty()) return std::nullopt;
  Transition tr;
  const StageRow& st = *t.stage;
  const bool first = !t.evidence_wait;
  t.evidence_wait =
      Track::EvidenceWait{coming, t.stage_rows + std::max(kEarlyCheckMinRows, t.stage_rows / kEvidenceRecheckParts),
                          now + std::max<int64_t>(1, (st.deadline_ms - now) / kEvidenceRecheckParts)};
  if (first) {
    json d;
    d["reason"] = "decisive rules short of their evidence at the nominal end";
    json rules = json::array();
    for (const EvidenceGap& g : coming) rules.push_back(g.rule);
    d["rules"] = rules;
    d["verdict_reason"] = v.reason;
    d["stage"] = to_string(st.kind);
    d["stage_id"] = st.id;
    tr.events.push_back(track_event(t, EventKind::StageExtended, d, now, st.deadline_ms - now));
    std::string names;
    for (const EvidenceGap& g : coming) names += (names.empty() ? "" : ", ") + g.rule;
    tr.notes.push_back(fmt::format("{}: {} short of evidence ({}): runs on up to its deadline (+{})", t.name,
                                   to_string(st.kind), names, format_duration(st.deadline_ms - now)));
  }
  return tr;
}

Transition task_finished(Track& t, size_t task, const TaskReport& report, int64_t now) {
  Transition tr;
  mark_finished(t.tasks, task, now);
  const TaskKind kind = t.plan.tasks[task].kind;
  bool candidate_failure = false, only_unreachable = !report.outcomes.empty();
  for (Outcome o : report.outcomes) {
    if (category_of(o) == OutcomeCategory::CandidateFailure) candidate_failure = true;
    if (!is_unreachable(o)) only_unreachable = false;
  }
  if (kind == TaskKind::Smoke && only_unreachable) {
    // Not up yet (refused, or still loading): try again within the smoke length.
    t.tasks[task].runs = 0;
    t.smoke_retry_at_ms = now + kSmokeRetryMs;
    tr.notes.push_back(fmt::format("{}: not reachable yet ({}); smoke retries in {}", t.name, report.detail,
                                   format_duration(kSmokeRetryMs)));
    return tr;
  }
  for (ProbeKind k : report.kinds) t.stage_rows += perf_judged(k) ? 1 : 0;
  const bool clean_check_due =
      t.baseline_id && t.stage && t.stage->kind != StageKind::Smoke &&
      t.stage_rows - t.rows_at_check >= std::max(kEarlyCheckMinRows, t.rows_at_check / kEarlyCheckGrowth);
  tr.check_hard_failures = candidate_failure || clean_check_due;
  if (tr.check_hard_failures) t.rows_at_check = t.stage_rows;
  return tr;
}

// ============================================================== stage end
Transition stage_judged(Track& t, VerdictRow v, const ScheduleSettings& schedule, int utc_offset_minutes, int64_t now) {
  Transition tr;
  StageRow st = *t.stage;
  st.state = stage_state_for(v.state);
  st.ended_ms = now;
  st.reason = v.reason;
  tr.close_stage = st;
  t.stage = st;
  const auto nxt = next_stage(st.kind);
  const bool passed = v.state == VerdictState::Promoted;
  if (passed && nxt) {
    // The stage passed but the campaign goes on: the verdict row keeps the
    // judge's evidence and reason; its state stays "running" until the soak.
    v.state = VerdictState::Running;
  }
  tr.notes.push_back(fmt::format("{} ({}): {}", t.name, t.row->build, v.reason));
  const VerdictState state = v.state;
  tr.verdicts.push_back(std::move(v));
  if (!passed || !nxt) {
    t.phase = Phase::Done;
    t.final_state = state;
    return tr;
  }
  if (*nxt == StageKind::Canary) {
    t.phase = Phase::WaitingCanary;
    t.canary_not_before_ms =
        t.from_build_change ? next_window_start(now, schedule.nightly_window, utc_offset_minutes) : now;
    if (t.canary_not_before_ms > now)
      tr.notes.push_back(fmt::format("{}: canary waits for the nightly window ({} from now)", t.name,
                                     format_duration(t.canary_not_before_ms - now)));
    return tr;
  }
  tr.start = *nxt;
  return tr;
}

Transition end_campaign(Track& t, VerdictState state, const std::string& reason, int64_t now, const std::string& who,
                        const std::string& why) {
  Transition tr;
  if (t.stage && t.stage->state == StageState::Running) {
    StageRow st = *t.stage;
    st.state = state == VerdictState::Promoted ? StageState::Passed : StageState::Aborted;
    st.ended_ms = now;
    st.reason = reason;
    tr.close_stage = st;
    t.stage = st;
  }
  tr.verdicts.push_back(verdict_for(t, state, reason, now, who, why));
  tr.notes.push_back(fmt::format("{} ({}): {}: {}", t.name, t.row->build, to_string(state), reason));
  t.phase = Phase::Done;
  t.final_state = state;
  return tr;
}

namespace {

// The prompt-cache cap the launch fingerprint recorded (probes/served_state.h
// writes it as "cache_ram_mib"), read here from the stored JSON because the
// probes sit beside this layer, not below it.
std::optional<int64_t> cache_cap_of(const std::string& fingerprint) {
  if (fingerprint.empty()) return std::nullopt;
  auto j = json::parse(fingerprint, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return std::nullopt;
  auto it = j.find("cache_ram_mib");
  if (it == j.end() || !it->is_number_integer()) return std::nullopt;
  return it->get<int64_t>();
}

}  // namespace

PreviousAction previous_action(const Track& t, bool canary_due) {
  const PreviousRuntime& p = t.managed.previous;
  const bool decided = t.row && t.baseline_id && p.phase != PreviousPhase::Idle && p.for_row == t.row->id &&
                       p.baseline_id == *t.baseline_id;
  const bool in_canary = t.phase == Phase::Staged && t.stage && t.stage->kind == StageKind::Canary;
  const bool wanted = t.cfg->ab == AbMode::Interleaved && t.cfg->launch && t.row && t.row->build != kUnknownBuild &&
                      t.baseline_id && (in_canary || (t.phase == Phase::WaitingCanary && (canary_due || decided)));
  if (!wanted) return p.phase == PreviousPhase::Idle ? PreviousAction::None : PreviousAction::Stop;
  return decided ? PreviousAction::None : PreviousAction::Start;
}

bool canary_waits_for_previous(const Track& t) { return t.managed.previous.phase == PreviousPhase::Starting; }

StoredRecipe recipe_for(const Track& t, StageEnd end, const std::optional<BaselineChoice>& baseline, int64_t now) {
  const CampaignSettings& s = t.cfg->settings;
  StoredRecipe stored;
  JudgeRecipe& r = stored.recipe;
  RowSelection& rows = stored.rows;
  r.stage = t.stage->kind;
  r.end = end;
  r.candidate_id = t.row->id;
  r.host_id = t.row->host_id;
  r.stage_id = t.stage->id;
  r.now_ms = now;
  r.config_hash = t.config_hash;
  r.judge = s.judge;
  r.gate = s.gate;
  r.soak = s.soak;
  r.guard = s.guard;
  r.supervision = t.cfg->launch ? Supervision::Managed : Supervision::Unmanaged;
  r.memory_budget_bytes = t.cfg->memory_budget_bytes;
  // A pooling server serves no long-context prompt: nothing to require.
  if (t.stage->kind == StageKind::Canary && t.cfg->kind == WorkloadKind::Chat)
    r.long_context_sizes = s.long_context_sizes;
  r.allow_coexisting = t.cfg->allow_coexisting;
  r.workload = t.cfg->kind;
  r.agent = s.agent;
  r.slo = s.slo;  // the launch cap is the campaign's to add: it reads the row's fingerprint
  // Heavy work that had to wait for the host: the judge names it (judges/heavy_work.h).
  for (size_t i = 0; i < t.plan.tasks.size() && i < t.tasks.size(); ++i) {
    const TaskSpec& spec = t.plan.tasks[i];
    const TaskState& st = t.tasks[i];
    if (spec.weight != Weight::Heavy || st.waits == 0) continue;
    HeavyWait w;
    w.task = std::string(to_string(spec.kind));
    w.planned = nominal_slots(spec, t.stage->length_ms);
    w.runs = st.runs;
    w.waits = st.waits;
    const int64_t current = st.waiting_since_ms ? std::max<int64_t>(0, now - *st.waiting_since_ms) : 0;
    w.waited_ms = st.waited_ms + current;
    w.longest_ms = std::max(st.longest_wait_ms, current);
    r.heavy_waits.push_back(std::move(w));
  }
  if (t.plan.heartbeat) {
    r.slots_planned = nominal_slots(t.plan.tasks[*t.plan.heartbeat], t.stage->length_ms);
    r.slots_run = std::min(t.tasks[*t.plan.heartbeat].runs, r.slots_planned);
  } else {
    r.slots_planned = 1;
    r.slots_run = 1;
  }
  rows.since_ms = t.stage->started_ms;
  rows.until_ms = now;
  // Every stage after smoke compares with the baseline: the canary its probes,
  // the gate and the soak their agent turns and long-context rounds
  // (docs/DESIGN.md §3.5).
  if (t.stage->kind != StageKind::Smoke) {
    if (baseline) {
      r.baseline_mode = baseline->mode;
      rows.baseline_since_ms = baseline->since_ms;
      rows.baseline_until_ms = baseline->until_ms;
    }
    r.baseline_id = t.baseline_id;
    if (!t.baseline_id && t.cfg->baseline) r.missing_baseline = *t.cfg->baseline;
    const PreviousRuntime& p = t.managed.previous;
    if (t.stage->kind == StageKind::Canary && p.for_row == t.row->id) r.baseline_note = p.note;
  }
  r.cache_cap_mib = cache_cap_of(t.row->fingerprint);
  // The golden set, where the plan runs it (a chat canary or soak with
  // equivalence.enabled): the canary against the baseline build's stored
  // runs, the soak against its own canary's (docs/DESIGN.md §3.13).
  const bool golden = std::any_of(t.plan.tasks.begin(), t.plan.tasks.end(), [](const TaskSpec& spec) {
    return spec.kind == TaskKind::GoldenStart || spec.kind == TaskKind::GoldenEnd;
  });
  if (golden) {
    EquivalenceRecipe e;
    e.rules = s.equivalence;
    e.reference_id = t.stage->kind == StageKind::Soak ? std::optional<int64_t>(t.row->id) : t.baseline_id;
    r.equivalence = e;
  }
  return stored;
}

// ============================================================== restart
Transition resume_stage(Track& t, const StageRow& running, const std::vector<ProbeResult>& stage_rows,
                        const std::vector<Event>& stage_events, int64_t now) {
  t.stage = running;
  // Whether the stage opened with a warm-up is what its rows say, not what
  // today's config would choose: a warm-up never runs mid-stage. Only the
  // heartbeat's rows (it runs while a warm-up waits) decide nothing.
  Warmup warmup = warmup_for(t, running.kind);
  const std::string warm_task(to_string(TaskKind::Warmup)), beat_task(to_string(TaskKind::Scrape));
  bool warmed = false, began = false;
  for (const auto& r : stage_rows) {
    warmed = warmed || r.task == warm_task;
    began = began || r.task != beat_task;
  }
  if (warmed)
    warmup = Warmup::Opening;
  else if (began)
    warmup = Warmup::None;
  t.plan = plan_for(running.kind, t.cfg->settings, t.cfg->kind, warmup);
  t.tasks.assign(t.plan.tasks.size(), TaskState{});
  // Its timed rows so far; the first task after the restart asks for the early check.
  t.stage_rows = std::count_if(stage_rows.begin(), stage_rows.end(), [](const auto& r) { return perf_judged(r.kind); });
  t.rows_at_check = 0;
  for (size_t i = 0; i < t.plan.tasks.size(); ++i) {
    const TaskSpec& spec = t.plan.tasks[i];
    const std::string name(to_string(spec.kind));
    std::set<int64_t> slots;
    int64_t last_start = -1;
    for (const auto& r : stage_rows) {
      if (r.task != name) continue;
      const int64_t elapsed = r.started_wall_ms - running.started_ms;
      slots.insert(spec.every_ms > 0 ? elapsed / spec.every_ms : r.group_id.value_or(r.id));
      last_start = std::max(last_start, r.started_wall_ms);
    }
    TaskState& st = t.tasks[i];
    st.runs = static_cast<int64_t>(slots.size());
    if (!slots.empty()) {
      if (spec.repeat == Repeat::Periodic) st.last_slot = *slots.rbegin();
      st.last_end_ms = last_start;
    }
  }
  t.phase = Phase::Staged;

  // The daemon was away: say so, with how long since the stage last ran anything.
  int64_t last = running.started_ms;
  if (!stage_rows.empty()) last = std::max(last, stage_rows.back().started_wall_ms);
  Transition tr;
  for (const ClosedWait& w : resume_heavy_waits(t.plan, running.id, stage_events, last, t.tasks))
    wait_event(t, w.task, WaitPhase::Ended, now, w.length_ms, tr);
  json d;
  d["reason"] = "daemon restart";
  d["stage"] = to_string(running.kind);
  d["stage_id"] = running.id;
  tr.events.push_back(track_event(t, EventKind::Gap, d, now, now - last));
  tr.notes.push_back(fmt::format("{}: resuming {} stage started {} ms ago (deadline unchanged)", t.name,
                                 to_string(running.kind), now - running.started_ms));
  return tr;
}

Transition resume_after(Track& t, StageKind passed, int64_t now) {
  Transition tr;
  const auto nxt = next_stage(passed);
  if (nxt && *nxt == StageKind::Canary) {
    t.phase = Phase::WaitingCanary;
    t.canary_not_before_ms = now;
  } else if (nxt) {
    tr.start = *nxt;
  }
  return tr;
}

Transition restart_stage(Track& t, const std::string& reason, int64_t now) {
  Transition tr;
  if (t.phase != Phase::Staged || !t.stage) return tr;
  StageRow st = *t.stage;
  st.state = StageState::Aborted;
  st.ended_ms = now;
  st.reason = reason;
  tr.close_stage = st;
  t.stage = st;
  json d;
  d["reason"] = reason;
  d["stage"] = to_string(st.kind);
  d["stage_id"] = st.id;
  tr.events.push_back(track_event(t, EventKind::Gap, d, now, now - st.started_ms));
  tr.notes.push_back(fmt::format("{}: {} starts over: {}", t.name, to_string(st.kind), reason));
  tr.start = st.kind;
  return tr;
}

}  // namespace soak
