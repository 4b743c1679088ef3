#include "daemon/campaigns.h"

#include <algorithm>
#include <set>

#include <nlohmann/json.hpp>

#include "daemon/recipe_store.h"

namespace soak {

using json = nlohmann::ordered_json;

namespace {

std::optional<StageKind> next_stage(StageKind k) {
  switch (k) {
    case StageKind::Smoke: return StageKind::Canary;
    case StageKind::Canary: return StageKind::Gate;
    case StageKind::Gate: return StageKind::Soak;
    case StageKind::Soak: return std::nullopt;
  }
  return std::nullopt;
}

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

// Tasks whose runs are repeated against a live, promoted baseline in the same
// slot (interleaved A/B), so the canary compares like with like.
bool interleaves(TaskKind k) {
  return k == TaskKind::Scrape || k == TaskKind::Functional || k == TaskKind::LongContext || k == TaskKind::Burst;
}

}  // namespace

Campaigns::Campaigns(ConfigSnapshot cfg, const Deps& deps, TaskRunner& runner, UtcOffset utc_offset_minutes)
    : cfg_(std::move(cfg)), d_(deps), runner_(runner), utc_offset_minutes_(std::move(utc_offset_minutes)) {
  for (const auto& c : cfg_->candidates) {
    if (!c.enabled) continue;
    Track t;
    t.name = c.name;
    t.cfg = candidate_snapshot(cfg_, c);
    tracks_.emplace(c.name, std::move(t));
  }
}

Campaigns::Track* Campaigns::track(const std::string& name) {
  auto it = tracks_.find(name);
  return it == tracks_.end() ? nullptr : &it->second;
}

void Campaigns::write_event(EventKind kind, std::optional<int64_t> candidate_id, const std::string& detail,
                            int64_t now, std::optional<int64_t> duration_ms) {
  Event e;
  e.wall_ms = now;
  e.host_id = d_.host_id;
  e.candidate_id = candidate_id;
  e.kind = kind;
  e.detail_json = detail;
  e.duration_ms = duration_ms;
  if (auto r = d_.store.insert_event(e); !r) d_.log->error("cannot record {} event: {}", to_string(kind), r.message());
}

// ============================================================== resume
Status Campaigns::resume(int64_t now) {
  last_now_ = now;
  auto rows = d_.store.candidates();
  if (!rows) return make_error("cannot read candidates: " + rows.message());
  auto max = d_.store.max_ids();
  if (!max) return make_error(max.message());
  last_event_seen_ = max->event;
  for (auto& [name, t] : tracks_) {
    // The newest row of this candidate on this host.
    const CandidateRow* latest = nullptr;
    for (const auto& r : *rows)
      if (r.host_id == d_.host_id && r.name == name && (!latest || r.id > latest->id)) latest = &r;
    if (!latest) continue;  // never seen: read its build first
    t.row = *latest;
    t.baseline_id = latest->baseline_id;
    auto stages = d_.store.stages(latest->id);
    if (!stages) return make_error(stages.message());
    auto verdict = d_.store.latest_verdict(latest->id);
    if (!verdict) return make_error(verdict.message());
    const bool final_verdict = *verdict && (*verdict)->state != VerdictState::Running;
    if (final_verdict) {
      t.phase = Phase::Done;
      t.final_state = (*verdict)->state;
      continue;
    }
    if (!stages->empty() && stages->back().state == StageState::Running) {
      t.stage = stages->back();
      t.plan = plan_for(t.stage->kind, t.cfg->settings);
      rebuild_task_states(t);
      t.phase = Phase::Staged;
      // The daemon was away: say so, with how long since the stage last ran anything.
      ProbeQuery q;
      q.stage_id = t.stage->id;
      auto last_rows = d_.store.probe_results(q);
      int64_t last = t.stage->started_ms;
      if (last_rows && !last_rows->empty()) last = std::max(last, last_rows->back().started_wall_ms);
      json d;
      d["reason"] = "daemon restart";
      d["stage"] = to_string(t.stage->kind);
      d["stage_id"] = t.stage->id;
      write_event(EventKind::Gap, t.row->id, d.dump(), now, now - last);
      d_.log->info("{}: resuming {} stage started {} ms ago (deadline unchanged)", name, to_string(t.stage->kind),
                   now - t.stage->started_ms);
    } else if (!stages->empty() && stages->back().state == StageState::Passed) {
      // Stopped between a passed stage and the next one.
      auto nxt = next_stage(stages->back().kind);
      if (nxt && *nxt == StageKind::Canary) {
        t.phase = Phase::WaitingCanary;
        t.canary_not_before_ms = now;
      } else if (nxt) {
        start_stage(t, *nxt, now);
      }
    } else {
      t.phase = Phase::ReadingBuild;  // registered, no stage yet
    }
  }
  return {};
}

void Campaigns::rebuild_task_states(Track& t) {
  t.tasks.assign(t.plan.tasks.size(), TaskState{});
  ProbeQuery q;
  q.stage_id = t.stage->id;
  auto rows = d_.store.probe_results(q);
  if (!rows) return;
  for (size_t i = 0; i < t.plan.tasks.size(); ++i) {
    const TaskSpec& spec = t.plan.tasks[i];
    const std::string name(to_string(spec.kind));
    std::set<int64_t> slots;
    int64_t last_start = -1;
    for (const auto& r : *rows) {
      if (r.task != name) continue;
      const int64_t elapsed = r.started_wall_ms - t.stage->started_ms;
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
}

// ============================================================== controls
void Campaigns::handle_controls(int64_t now) {
  if (now < next_control_poll_ms_) return;
  next_control_poll_ms_ = now + kControlPollEveryMs;
  auto pending = d_.store.pending_controls();
  if (!pending) {
    d_.log->error("cannot read control requests: {}", pending.message());
    return;
  }
  for (const auto& c : *pending) {
    std::string result;
    Track* t = track(c.candidate);
    if (!t) {
      result = "no candidate named \"" + c.candidate + "\" in the running config";
    } else if (c.action == ControlAction::Start) {
      if (!t->row) {
        result = "the build of " + c.candidate + " is not known yet; it starts on its own once read";
      } else if (t->phase == Phase::Staged) {
        result = "already running (" + std::string(to_string(t->stage->kind)) + ")";
      } else {
        t->stage.reset();
        t->from_build_change = false;
        start_stage(*t, StageKind::Smoke, now);
        result = "started: smoke";
      }
    } else if (c.action == ControlAction::Abort) {
      if (t->phase == Phase::Done || !t->row) {
        result = "nothing to abort";
      } else {
        make_done(*t, VerdictState::Inconclusive, "aborted by " + (c.who.empty() ? "an operator" : c.who) +
                                                      (c.why.empty() ? "" : ": " + c.why),
                  now, c.who, c.why);
        result = "aborted";
      }
    } else {  // Promote
      if (!c.is_override) {
        result = "refused: promoting by hand needs --override";
      } else if (!t->row) {
        result = "the build of " + c.candidate + " is not known yet";
      } else {
        make_done(*t, VerdictState::Promoted, "promoted by override", now, c.who.empty() ? "an operator" : c.who,
                  c.why);
        result = "promoted (override)";
      }
    }
    if (auto st = d_.store.mark_control_handled(c.id, now, result); !st)
      d_.log->error("cannot mark control request {} handled: {}", c.id, st.message());
    d_.log->info("control {} {}: {}", to_string(c.action), c.candidate, result);
    json d;
    d["action"] = to_string(c.action);
    d["who"] = c.who;
    d["why"] = c.why;
    d["override"] = c.is_override;
    d["result"] = result;
    write_event(EventKind::Control, t && t->row ? std::optional<int64_t>(t->row->id) : std::nullopt, d.dump(), now);
  }
}

// ============================================================== builds
void Campaigns::check_build(Track& t, int64_t now) {
  if (t.build_read_in_flight || now < t.next_build_check_ms || frozen_) return;
  t.build_read_in_flight = true;
  if (!t.first_build_attempt_ms) t.first_build_attempt_ms = now;
  std::string name = t.name;
  runner_.read_build(*t.cfg, [this, name](Result<probes::BuildIdentity> b) {
    on_build(name, std::move(b), current_time());
    changed();
  });
}

std::optional<int64_t> Campaigns::find_baseline(const Track& t, int64_t exclude_id) {
  // The previous promoted build of this candidate, else the configured
  // baseline's current row (its newest stored row when it is not running).
  auto rows = d_.store.candidates();
  if (rows) {
    std::optional<int64_t> best;
    for (const auto& r : *rows) {
      if (r.host_id != d_.host_id || r.name != t.name || r.id == exclude_id) continue;
      auto v = d_.store.latest_verdict(r.id);
      if (v && *v && (*v)->state == VerdictState::Promoted && (!best || r.id > *best)) best = r.id;
    }
    if (best) return best;
  }
  if (t.cfg->baseline) {
    auto it = tracks_.find(*t.cfg->baseline);
    if (it != tracks_.end()) return it->second.row ? std::optional<int64_t>(it->second.row->id) : std::nullopt;
    std::optional<int64_t> newest;
    if (rows)
      for (const auto& r : *rows)
        if (r.host_id == d_.host_id && r.name == *t.cfg->baseline && (!newest || r.id > *newest)) newest = r.id;
    return newest;
  }
  return std::nullopt;
}

void Campaigns::register_candidate(Track& t, const std::string& build, int64_t now) {
  CandidateRow c;
  c.host_id = d_.host_id;
  c.name = t.name;
  c.model = t.cfg->model;
  c.runtime = t.cfg->runtime;
  c.build = build;
  c.base_url = t.cfg->base_url;
  auto id = d_.store.upsert_candidate(c, now);
  if (!id) {
    d_.log->error("{}: cannot register build {}: {}", t.name, build, id.message());
    return;
  }
  auto row = d_.store.candidate(*id);
  if (!row || !*row) return;
  t.row = **row;
  t.baseline_id = find_baseline(t, *id);
  if (t.baseline_id && t.row->baseline_id != t.baseline_id) {
    if (auto st = d_.store.set_baseline(*id, t.baseline_id); st) t.row->baseline_id = t.baseline_id;
  }
}

void Campaigns::on_build(const std::string& name, Result<probes::BuildIdentity> b, int64_t now) {
  Track* tp = track(name);
  if (!tp) return;  // removed by a reload meanwhile
  Track& t = *tp;
  t.build_read_in_flight = false;
  t.next_build_check_ms = now + t.cfg->settings.cadence.build_poll_ms;
  if (!b) {
    if (t.last_build_error != b.message()) d_.log->warn("{}: cannot read build: {}", name, b.message());
    t.last_build_error = b.message();
    // Never reachable for a whole smoke length: the candidate is blocked.
    if (!t.row && t.phase == Phase::ReadingBuild && t.first_build_attempt_ms &&
        now - *t.first_build_attempt_ms >= t.cfg->settings.stages.smoke_ms) {
      register_candidate(t, std::string(kUnknownBuild), now);
      if (t.row) make_done(t, VerdictState::Blocked, "cannot read the build: " + b.message(), now);
    }
    // Retry sooner while nothing is known yet.
    if (!t.row || t.row->build == "unknown")
      t.next_build_check_ms = now + std::min<int64_t>(t.cfg->settings.cadence.build_poll_ms, kSmokeRetryMs);
    return;
  }
  t.last_build_error.clear();
  if (b->model && *b->model != t.cfg->model) {
    // A different model under the same URL is never merged into this candidate;
    // the identity probe rejects it with the evidence. Log it here too.
    d_.log->warn("{}: runtime reports model \"{}\", config says \"{}\"", name, *b->model, t.cfg->model);
  }
  if (t.row && t.row->build == b->build) return;  // unchanged
  const bool had_build = t.row && t.row->build != "unknown";
  if (had_build) {
    json d;
    d["from"] = t.row->build;
    d["to"] = b->build;
    d["candidate"] = name;
    write_event(EventKind::BuildChange, t.row->id, d.dump(), now);
    d_.log->info("{}: build changed {} -> {}", name, t.row->build, b->build);
    if (t.phase == Phase::Staged || t.phase == Phase::WaitingCanary)
      make_done(t, VerdictState::Inconclusive, "build replaced by " + b->build + " before the campaign finished", now);
  }
  register_candidate(t, b->build, now);
  if (!t.row) return;
  auto v = d_.store.latest_verdict(t.row->id);
  if (v && *v && (*v)->state != VerdictState::Running) {
    t.phase = Phase::Done;  // this build was judged before (e.g. a rollback to it)
    t.final_state = (*v)->state;
    return;
  }
  t.from_build_change = had_build;
  t.stage.reset();
  start_stage(t, StageKind::Smoke, now);
}

// ============================================================== stages
void Campaigns::start_stage(Track& t, StageKind kind, int64_t now) {
  const CampaignSettings& s = t.cfg->settings;
  StageRow st;
  st.candidate_id = t.row->id;
  st.kind = kind;
  st.state = StageState::Running;
  st.started_ms = now;
  st.length_ms = s.stages.length_ms(kind);
  st.deadline_ms = stage_deadline(now, st.length_ms, s.stages.grace_fraction);
  auto id = d_.store.insert_stage(st);
  if (!id) {
    d_.log->error("{}: cannot start {}: {}", t.name, to_string(kind), id.message());
    return;
  }
  st.id = *id;
  t.stage = st;
  t.plan = plan_for(kind, s);
  t.tasks.assign(t.plan.tasks.size(), TaskState{});
  t.phase = Phase::Staged;
  t.smoke_retry_at_ms.reset();
  t.extension_noted = false;
  write_running_verdict(t, std::string(to_string(kind)) + " running", now);
  d_.log->info("{} ({}): {} started, {} (deadline +{})", t.name, t.row->build, to_string(kind),
               format_duration(st.length_ms), format_duration(st.deadline_ms - now));
}

void Campaigns::write_running_verdict(Track& t, const std::string& reason, int64_t now) {
  VerdictRow v;
  v.candidate_id = t.row->id;
  v.stage_id = t.stage ? std::optional<int64_t>(t.stage->id) : std::nullopt;
  v.wall_ms = now;
  v.state = VerdictState::Running;
  v.stage = t.stage ? std::string(to_string(t.stage->kind)) : "";
  v.reason = reason;
  v.judge_version = std::string(kJudgeVersion);
  v.config_hash = cfg_->candidate_hash(*t.cfg);
  v.baseline_id = t.baseline_id;
  if (auto r = d_.store.insert_verdict(v); !r) d_.log->error("{}: cannot write verdict: {}", t.name, r.message());
}

StoredRecipe Campaigns::recipe_for(const Track& t, StageEnd end, int64_t now) {
  const CampaignSettings& s = t.cfg->settings;
  StoredRecipe stored;
  JudgeRecipe& r = stored.recipe;
  RowSelection& rows = stored.rows;
  r.stage = t.stage->kind;
  r.end = end;
  r.candidate_id = t.row->id;
  r.host_id = d_.host_id;
  r.stage_id = t.stage->id;
  r.now_ms = now;
  r.config_hash = cfg_->candidate_hash(*t.cfg);
  r.judge = s.judge;
  r.gate = s.gate;
  r.soak = s.soak;
  r.guard = s.guard;
  if (t.plan.heartbeat) {
    r.slots_planned = nominal_slots(t.plan.tasks[*t.plan.heartbeat], t.stage->length_ms);
    r.slots_run = std::min(t.tasks[*t.plan.heartbeat].runs, r.slots_planned);
  } else {
    r.slots_planned = 1;
    r.slots_run = 1;
  }
  rows.since_ms = t.stage->started_ms;
  rows.until_ms = now;
  if (t.stage->kind == StageKind::Canary) {
    auto choice = choose_baseline(d_.store, t.baseline_id, t.stage->started_ms, now);
    if (choice) {
      r.baseline_mode = choice->mode;
      rows.baseline_since_ms = choice->since_ms;
      rows.baseline_until_ms = choice->until_ms;
    }
    r.baseline_id = t.baseline_id;
    if (!t.baseline_id && t.cfg->baseline) r.missing_baseline = *t.cfg->baseline;
  }
  auto max = d_.store.max_ids();
  if (max) rows.max_ids = *max;
  return stored;
}

void Campaigns::finish_stage(Track& t, StageEnd end, int64_t now) {
  auto v = judge_from_store(d_.store, recipe_for(t, end, now));
  if (!v) {
    d_.log->error("{}: cannot judge {}: {}", t.name, to_string(t.stage->kind), v.message());
    return;  // retried on the next tick
  }
  finish_with(t, std::move(*v), now);
}

void Campaigns::finish_with(Track& t, VerdictRow v, int64_t now) {
  StageRow st = *t.stage;
  st.state = stage_state_for(v.state);
  st.ended_ms = now;
  st.reason = v.reason;
  if (auto u = d_.store.update_stage(st); !u) d_.log->error("{}: cannot close stage: {}", t.name, u.message());
  t.stage = st;
  const auto nxt = next_stage(st.kind);
  const bool passed = v.state == VerdictState::Promoted;
  if (passed && nxt) {
    // The stage passed but the campaign goes on: the verdict row keeps the
    // judge's evidence and reason; its state stays "running" until the soak.
    v.state = VerdictState::Running;
  }
  if (auto r = d_.store.insert_verdict(v); !r) d_.log->error("{}: cannot write verdict: {}", t.name, r.message());
  d_.log->info("{} ({}): {}", t.name, t.row->build, v.reason);
  if (!passed || !nxt) {
    t.phase = Phase::Done;
    t.final_state = v.state;
    return;
  }
  if (*nxt == StageKind::Canary) {
    t.phase = Phase::WaitingCanary;
    t.canary_not_before_ms =
        t.from_build_change
            ? next_window_start(now, cfg_->schedule.nightly_window, utc_offset_minutes_ ? utc_offset_minutes_(now) : 0)
            : now;
    if (t.canary_not_before_ms > now)
      d_.log->info("{}: canary waits for the nightly window ({} from now)", t.name,
                   format_duration(t.canary_not_before_ms - now));
    return;
  }
  start_stage(t, *nxt, now);
}

void Campaigns::make_done(Track& t, VerdictState state, const std::string& reason, int64_t now, const std::string& who,
                          const std::string& why) {
  if (t.stage && t.stage->state == StageState::Running) {
    StageRow st = *t.stage;
    st.state = state == VerdictState::Promoted ? StageState::Passed : StageState::Aborted;
    st.ended_ms = now;
    st.reason = reason;
    if (auto u = d_.store.update_stage(st); !u) d_.log->error("{}: cannot close stage: {}", t.name, u.message());
    t.stage = st;
  }
  VerdictRow v;
  v.candidate_id = t.row->id;
  v.stage_id = t.stage ? std::optional<int64_t>(t.stage->id) : std::nullopt;
  v.wall_ms = now;
  v.state = state;
  v.stage = t.stage ? std::string(to_string(t.stage->kind)) : "";
  v.reason = reason;
  v.judge_version = std::string(kJudgeVersion);
  v.config_hash = cfg_->candidate_hash(*t.cfg);
  v.baseline_id = t.baseline_id;
  v.is_override = !who.empty();
  v.who = who;
  v.why = why;
  if (auto r = d_.store.insert_verdict(v); !r) d_.log->error("{}: cannot write verdict: {}", t.name, r.message());
  d_.log->info("{} ({}): {}: {}", t.name, t.row->build, to_string(state), reason);
  t.phase = Phase::Done;
  t.final_state = state;
}

// ============================================================== per-track step
void Campaigns::cancel_track(const Track& t) {
  std::vector<int64_t> ids;
  for (const auto& [id, f] : in_flight_)
    if (!f.shadow && f.track == t.name) ids.push_back(id);
  for (int64_t id : ids) runner_.cancel(id);
}

bool Campaigns::baseline_known(const Track& t) const {
  // A configured baseline whose build is not read yet: wait for it, rather
  // than judge this canary as if no baseline existed.
  if (!t.cfg->baseline) return true;
  auto it = tracks_.find(*t.cfg->baseline);
  return it == tracks_.end() || it->second.row.has_value();
}

bool Campaigns::heavy_busy() const {
  for (const auto& [id, f] : in_flight_)
    if (f.weight == Weight::Heavy) return true;
  return false;
}

int Campaigns::canaries_running() const {
  int n = 0;
  for (const auto& [name, t] : tracks_)
    if (t.phase == Phase::Staged && t.stage && t.stage->kind == StageKind::Canary) ++n;
  return n;
}

void Campaigns::step(Track& t, int64_t now) {
  if (t.cfg->build.source == BuildSource::Fixed) {
    if (!t.row || t.row->build != t.cfg->build.fixed) on_build(t.name, probes::BuildIdentity{t.cfg->build.fixed, {}}, now);
  } else {
    check_build(t, now);
  }
  switch (t.phase) {
    case Phase::ReadingBuild:
    case Phase::Done:
      return;
    case Phase::WaitingCanary:
      if (now >= t.canary_not_before_ms && canaries_running() < cfg_->schedule.max_concurrent_canaries && !frozen_ &&
          baseline_known(t)) {
        // The baseline is settled when the canary starts: the previous promoted
        // build, else the configured baseline's current build.
        t.baseline_id = find_baseline(t, t.row->id);
        if (t.baseline_id != t.row->baseline_id && d_.store.set_baseline(t.row->id, t.baseline_id))
          t.row->baseline_id = t.baseline_id;
        start_stage(t, StageKind::Canary, now);
      }
      return;
    case Phase::Staged:
      break;
  }
  if (!t.stage) return;
  bool busy = false;
  for (const auto& [id, f] : in_flight_)
    if (!f.shadow && f.track == t.name) busy = true;

  // Smoke ends when its one pass ends (or it stays unreachable for its length).
  if (t.stage->kind == StageKind::Smoke) {
    const bool ran = !t.tasks.empty() && t.tasks[0].runs > 0;
    if (ran && !busy && !t.smoke_retry_at_ms) {
      finish_stage(t, StageEnd::Completed, now);
      return;
    }
    if (now >= t.stage->started_ms + t.stage->length_ms) {
      // Out of time: what is still running is cut (recorded as cancelled by
      // the daemon), then the smoke is judged on what it saw.
      if (busy) cancel_track(t);
      else finish_stage(t, StageEnd::TimedOut, now);
      return;
    }
    if (t.smoke_retry_at_ms && now < *t.smoke_retry_at_ms) return;
    t.smoke_retry_at_ms.reset();
    dispatch(t, now);
    return;
  }

  const double cov = coverage(t.plan, t.tasks, t.stage->length_ms);
  const double min_cov = t.cfg->settings.gate.min_coverage;
  switch (stage_clock(*t.stage, cov, min_cov, now)) {
    case StageClock::Running:
      dispatch(t, now);
      return;
    case StageClock::Extended:
      if (!t.extension_noted) {
        t.extension_noted = true;
        json d;
        d["reason"] = "coverage below threshold at the nominal end";
        d["coverage"] = cov;
        d["min_coverage"] = min_cov;
        d["stage"] = to_string(t.stage->kind);
        d["stage_id"] = t.stage->id;
        write_event(EventKind::StageExtended, t.row->id, d.dump(), now, t.stage->deadline_ms - now);
        d_.log->info("{}: {} coverage {:.0f}% < {:.0f}%: extended up to its deadline", t.name,
                     to_string(t.stage->kind), cov * 100, min_cov * 100);
      }
      dispatch(t, now);
      return;
    case StageClock::Complete:
      if (!busy) finish_stage(t, StageEnd::Completed, now);
      return;
    case StageClock::DeadlineHit:
      if (busy) cancel_track(t);
      else finish_stage(t, StageEnd::TimedOut, now);
      return;
  }
}

void Campaigns::dispatch(Track& t, int64_t now) {
  if (frozen_ || !t.stage) return;
  DueSet due = next_due(t.plan, t.tasks, t.stage->started_ms, now, heavy_busy() ? HeavyGate::Busy : HeavyGate::Free);
  const int64_t stage_id = t.stage->id;
  for (const Due& d : due.due) {
    if (t.phase != Phase::Staged || !t.stage || t.stage->id != stage_id) return;
    const TaskSpec& spec = t.plan.tasks[d.task];
    if (spec.weight == Weight::Heavy && heavy_busy()) continue;
    mark_started(t.tasks, d);
    const int64_t work_id = next_work_id_++;
    in_flight_[work_id] = InFlight{d.task, false, t.name, t.row->id, spec.weight};
    TaskRequest req;
    req.work_id = work_id;
    req.candidate = t.cfg;
    req.candidate_id = t.row->id;
    req.host_id = d_.host_id;
    req.stage_id = t.stage->id;
    req.stage = t.stage->kind;
    req.task = spec.kind;
    req.group_id = d.slot;
    runner_.run(req, [this, work_id](TaskReport rep) {
      on_task_done(work_id, std::move(rep), current_time());
      changed();
    });
  }
}

void Campaigns::on_task_done(int64_t work_id, TaskReport rep, int64_t now) {
  auto it = in_flight_.find(work_id);
  if (it == in_flight_.end()) return;
  InFlight f = it->second;
  in_flight_.erase(it);
  Track* tp = track(f.track);
  if (!tp) return;
  Track& t = *tp;

  if (f.shadow) {
    if (t.plan.tasks.size() > f.task && t.plan.tasks[f.task].kind == TaskKind::Scrape) {
      bool clean = !rep.outcomes.empty() &&
                   std::all_of(rep.outcomes.begin(), rep.outcomes.end(), [](Outcome o) { return o == Outcome::Clean; });
      t.shadow_live_ok = clean ? 1 : 0;
    }
    return;
  }
  if (t.phase != Phase::Staged || !t.stage || !t.row || t.row->id != f.candidate_id) return;  // finished meanwhile
  mark_finished(t.tasks, f.task, now);
  const TaskKind kind = t.plan.tasks[f.task].kind;

  bool candidate_failure = false, only_unreachable = !rep.outcomes.empty();
  for (Outcome o : rep.outcomes) {
    if (category_of(o) == OutcomeCategory::CandidateFailure) candidate_failure = true;
    if (!is_unreachable(o)) only_unreachable = false;
  }
  if (kind == TaskKind::Smoke && only_unreachable) {
    // Not up yet (refused, or still loading): try again within the smoke length.
    t.tasks[f.task].runs = 0;
    t.smoke_retry_at_ms = now + kSmokeRetryMs;
    d_.log->info("{}: not reachable yet ({}); smoke retries in {}", t.name, rep.detail, format_duration(kSmokeRetryMs));
    return;
  }
  if (candidate_failure) check_hard_failures(t, now);
  if (t.phase != Phase::Staged) return;

  // Interleaved A/B: repeat the run against a live, promoted baseline.
  if (t.stage->kind == StageKind::Canary && interleaves(kind) && t.baseline_id && !frozen_) {
    const Track* b = nullptr;
    for (const auto& [n, other] : tracks_)
      if (other.row && other.row->id == *t.baseline_id) b = &other;
    const bool baseline_idle = b && b->phase == Phase::Done && b->final_state == VerdictState::Promoted;
    if (baseline_idle && (kind == TaskKind::Scrape || t.shadow_live_ok.value_or(0) == 1)) {
      const Weight w = t.plan.tasks[f.task].weight;
      if (w == Weight::Light || !heavy_busy()) {
        const int64_t sid = next_work_id_++;
        in_flight_[sid] = InFlight{f.task, true, t.name, *t.baseline_id, w};
        TaskRequest req;
        req.work_id = sid;
        req.candidate = b->cfg;
        req.candidate_id = *t.baseline_id;
        req.host_id = d_.host_id;
        req.stage = StageKind::Canary;
        req.task = kind;
        req.group_id = work_id;
        runner_.run(req, [this, sid](TaskReport r) {
          on_task_done(sid, std::move(r), current_time());
          changed();
        });
      }
    }
  }
}

void Campaigns::check_hard_failures(Track& t, int64_t now) {
  auto v = hard_failure_from_store(d_.store, recipe_for(t, StageEnd::Stopped, now));
  if (!v) {
    d_.log->error("{}: cannot check for hard failures: {}", t.name, v.message());
    return;
  }
  if (*v) finish_with(t, std::move(**v), now);
}

// ============================================================== tick
void Campaigns::tick(int64_t now) {
  last_now_ = now;
  handle_controls(now);
  // New hard events (memory guard, crash/restart) reach a running stage at once.
  EventQuery eq;
  eq.min_id = last_event_seen_ + 1;
  if (auto ev = d_.store.events(eq); ev) {
    std::set<int64_t> cand_hit;
    bool host_wide = false;
    for (const auto& e : *ev) {
      last_event_seen_ = std::max(last_event_seen_, e.id);
      if (e.kind != EventKind::GuardTrip && e.kind != EventKind::ProcessRestart) continue;
      if (e.candidate_id) cand_hit.insert(*e.candidate_id);
      else host_wide = true;
    }
    for (auto& [name, t] : tracks_)
      if (t.phase == Phase::Staged && t.row && (host_wide || cand_hit.count(t.row->id))) check_hard_failures(t, now);
  }
  for (auto& [name, t] : tracks_) step(t, now);
}

std::optional<int64_t> Campaigns::next_wake_ms(int64_t now) const {
  // Only future times: whatever was due at `now` was dispatched by tick(), and
  // work held back (a heavy task waiting for the gate) resumes on a completion.
  // Control requests are picked up by the owner's periodic tick, not here.
  std::optional<int64_t> w;
  auto wake = [&](int64_t x) {
    if (x > now && (!w || x < *w)) w = x;
  };
  for (const auto& [name, t] : tracks_) {
    if (!t.build_read_in_flight && t.cfg->build.source != BuildSource::Fixed) wake(t.next_build_check_ms);
    if (t.phase == Phase::WaitingCanary) wake(t.canary_not_before_ms);
    if (t.phase != Phase::Staged || !t.stage || frozen_) continue;
    if (t.smoke_retry_at_ms) wake(*t.smoke_retry_at_ms);
    wake(t.stage->started_ms + t.stage->length_ms);
    wake(t.stage->deadline_ms);
    DueSet d = next_due(t.plan, t.tasks, t.stage->started_ms, now, HeavyGate::Free);
    if (d.next_wake_ms) wake(*d.next_wake_ms);
  }
  return w;
}

std::vector<Campaigns::Active> Campaigns::active() const {
  std::vector<Active> out;
  for (const auto& [name, t] : tracks_) {
    if (!t.row || t.phase == Phase::Done || t.row->build == "unknown") continue;
    Active a{name, t.cfg, t.row->id, std::nullopt};
    if (t.phase == Phase::Staged && t.stage) a.stage = t.stage->kind;
    out.push_back(std::move(a));
  }
  return out;
}

bool Campaigns::settled() const {
  if (!in_flight_.empty()) return false;
  for (const auto& [name, t] : tracks_)
    if (t.phase != Phase::Done || t.build_read_in_flight) return false;
  return true;
}

void Campaigns::reload(ConfigSnapshot cfg, int64_t now) {
  cfg_ = std::move(cfg);
  std::set<std::string> names;
  for (const auto& c : cfg_->candidates) {
    if (!c.enabled) continue;
    names.insert(c.name);
    auto it = tracks_.find(c.name);
    if (it == tracks_.end()) {
      Track t;
      t.name = c.name;
      t.cfg = candidate_snapshot(cfg_, c);
      tracks_.emplace(c.name, std::move(t));
    } else {
      it->second.cfg = candidate_snapshot(cfg_, c);  // new settings apply from now (running stage keeps its start/deadline)
    }
  }
  for (auto it = tracks_.begin(); it != tracks_.end();) {
    if (names.count(it->first)) {
      ++it;
      continue;
    }
    Track& t = it->second;
    if (t.row && (t.phase == Phase::Staged || t.phase == Phase::WaitingCanary))
      make_done(t, VerdictState::Inconclusive, "removed from the config", now);
    it = tracks_.erase(it);
  }
}

}  // namespace soak
