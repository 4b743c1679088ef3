#include "campaigns/campaigns.h"

#include "probes/runtimes/catalog.h"
#include "probes/served_state.h"

#include <algorithm>
#include <set>
#include <utility>

#include <nlohmann/json.hpp>

namespace soak {

using json = nlohmann::ordered_json;

Campaigns::Campaigns(ConfigSnapshot cfg, const Deps& deps, TaskRunner& runner, UtcOffset utc_offset_minutes)
    : cfg_(std::move(cfg)), d_(deps), runner_(runner), utc_offset_minutes_(std::move(utc_offset_minutes)) {
  for (const auto& c : cfg_->candidates) {
    if (!c.enabled) continue;
    Track t;
    set_config(t, cfg_, c);
    tracks_.emplace(c.name, std::move(t));
  }
}

Track* Campaigns::track(const std::string& name) {
  auto it = tracks_.find(name);
  return it == tracks_.end() ? nullptr : &it->second;
}

void Campaigns::insert_event(const Event& e) { d_.outbox.put(e); }

void Campaigns::write_event(EventKind kind, std::optional<int64_t> candidate_id, const std::string& detail, int64_t now,
                            std::optional<int64_t> duration_ms) {
  Event e;
  e.wall_ms = now;
  e.host_id = d_.host_id;
  e.candidate_id = candidate_id;
  e.kind = kind;
  e.detail_json = detail;
  e.duration_ms = duration_ms;
  insert_event(e);
}

// ============================================================== resume
Status Campaigns::resume(int64_t now) {
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
    if (*verdict && (*verdict)->state != VerdictState::Running) {
      t.phase = Phase::Done;
      t.final_state = (*verdict)->state;
    } else if (!stages->empty() && stages->back().state == StageState::Running) {
      ProbeQuery q;
      q.stage_id = stages->back().id;
      auto stage_rows = d_.store.probe_results(q);
      EventQuery eq;
      eq.candidate_id = latest->id;
      eq.kind = EventKind::HeavyWait;
      eq.since_ms = stages->back().started_ms;
      auto waits = d_.store.events(eq);
      apply(t,
            resume_stage(t, stages->back(), stage_rows ? *stage_rows : std::vector<ProbeResult>{},
                         waits ? *waits : std::vector<Event>{}, now),
            now);
    } else if (!stages->empty() && stages->back().state == StageState::Passed) {
      apply(t, resume_after(t, stages->back().kind, now), now);  // stopped between two stages
    } else {
      t.phase = Phase::ReadingBuild;  // registered, no stage yet
    }
    t.managed.resumed_stage = t.phase == Phase::Staged;  // a managed runtime started anew restarts it
  }
  return {};
}

// ============================================================== applying transitions
void Campaigns::apply(Track& t, Transition first, int64_t now) {
  // A frame is a transition and the next of its effects to carry out; an
  // effect that produces a transition pushes it, and it is carried out whole
  // before its parent goes on, as a nested call would, without one.
  enum Step { kWrites, kHardFailures, kJudge, kStart, kAfter, kLaunchHold, kDone };
  struct Frame {
    Transition tr;
    int step = kWrites;
  };
  std::vector<Frame> frames;
  frames.push_back(Frame{std::move(first)});
  while (!frames.empty()) {
    Frame& f = frames.back();
    const Transition& tr = f.tr;
    std::optional<Transition> next;
    switch (f.step++) {
      case kWrites:
        // In order, after the rows they rest on (which may still wait in the outbox).
        if (tr.close_stage) d_.outbox.put(StageUpdate{*tr.close_stage});
        for (const auto& v : tr.verdicts) {
          d_.outbox.put(v);
          if (on_verdict_ && v.state != VerdictState::Running && t.row) on_verdict_(VerdictNotice{*t.row, v});
        }
        for (const auto& e : tr.events) insert_event(e);
        for (const auto& n : tr.notes) d_.log->info("{}", n);
        if (tr.cancel) cancel_track(t);
        for (const Due& d : tr.dispatch) {
          const TaskSpec& spec = t.plan.tasks[d.task];
          launch(InFlight{d.task, false, t.name, t.row->id, spec.weight}, t.cfg, t.stage->id, t.stage->kind, spec.kind,
                 d.slot);
        }
        break;
      case kHardFailures:
        if (tr.check_hard_failures) next = effect_hard_failures(t, now);
        break;
      case kJudge:
        if (tr.judge) next = effect_judge(t, *tr.judge, now);
        break;
      case kStart:
        if (tr.start) next = effect_start(t, *tr.start, now);
        break;
      case kAfter: after_transition(t); break;
      case kLaunchHold:
        if (tr.check_launch_hold) next = effect_launch_hold(t, now);
        break;
      default: frames.pop_back(); continue;
    }
    if (next) frames.push_back(Frame{std::move(*next)});  // `f` is not used past here
  }
}

void Campaigns::after_transition(Track& t) {
  // The previous build's runtime goes when the canary it served ends, however it ends.
  if (managed(t) && previous_action(t, false) == PreviousAction::Stop) stop_previous(t, kPreviousCanaryEnded);
  if (t.phase == Phase::Done) settle_runtime(t);
}

void Campaigns::start_stage(Track& t, StageKind kind, int64_t now) {
  if (auto next = effect_start(t, kind, now)) apply(t, std::move(*next), now);
}

void Campaigns::check_hard_failures(Track& t, int64_t now) {
  if (auto next = effect_hard_failures(t, now)) apply(t, std::move(*next), now);
}

void Campaigns::check_launch_hold(Track& t, int64_t now) {
  if (auto next = effect_launch_hold(t, now)) apply(t, std::move(*next), now);
}

std::optional<Transition> Campaigns::effect_start(Track& t, StageKind kind, int64_t now) {
  StageRow st = open_stage(t, kind, now);
  auto id = d_.store.insert_stage(st);
  if (!id) {
    d_.log->error("{}: cannot start {}: {}", t.name, to_string(kind), id.message());
    d_.outbox.note_failure(id.error());  // a full disk or a held lock pauses the work until it writes
    return std::nullopt;
  }
  st.id = *id;
  Transition tr = enter_stage(t, st, now);
  // What the runtime was started with can hold it before the first probe
  // (at a smoke; at a later stage when the cap was learnt after the smoke).
  tr.check_launch_hold = true;
  return tr;
}

StoredRecipe Campaigns::stored_recipe(const Track& t, StageEnd end, int64_t now) {
  std::optional<BaselineChoice> baseline;
  if (t.stage->kind != StageKind::Smoke)
    if (auto c = choose_baseline(d_.store, t.baseline_id, t.stage->kind, t.stage->started_ms, now)) baseline = *c;
  StoredRecipe r = recipe_for(t, end, baseline, now);
  r.recipe.launch_cap = launch_cap_of(t);
  if (r.recipe.equivalence &&
      probes::builtin_runtime(t.cfg->runtime).dialect.grammar_logprobs == probes::GrammarLogprobs::BeforeGrammar)
    r.recipe.equivalence->top1 = TopOneRule::UnconstrainedOnly;
  if (auto max = d_.store.max_ids()) r.rows.max_ids = *max;
  return r;
}

// The gate's and soak's own earlier stages (the candidate against itself,
// docs/DESIGN.md §3.5): the latest passed canary, and for the soak the latest
// passed gate, of the same candidate row before the running stage.
std::vector<int64_t> Campaigns::own_earlier_stages(const Track& t) {
  std::vector<int64_t> out;
  if (!t.row || !t.stage || (t.stage->kind != StageKind::Gate && t.stage->kind != StageKind::Soak)) return out;
  auto stages = d_.store.stages(t.row->id);
  if (!stages) {
    d_.log->warn("{}: its earlier stages could not be read: {}", t.name, stages.message());
    return out;
  }
  std::vector<StageKind> wanted{StageKind::Canary};
  if (t.stage->kind == StageKind::Soak) wanted.push_back(StageKind::Gate);
  for (StageKind k : wanted) {
    std::optional<int64_t> latest;
    for (const StageRow& st : *stages)
      if (st.kind == k && st.state == StageState::Passed && st.id < t.stage->id) latest = st.id;
    if (latest) out.push_back(*latest);
  }
  return out;
}

std::optional<Transition> Campaigns::effect_judge(Track& t, StageEnd end, int64_t now) {
  // Only the stage's own judgment reads its earlier stages' rows (the checks
  // for hard failures while it runs need none of them).
  StoredRecipe recipe = stored_recipe(t, end, now);
  recipe.recipe.own_stage_ids = own_earlier_stages(t);
  auto judged = judge_stage_from_store(d_.store, recipe);
  if (!judged) {
    d_.log->error("{}: cannot judge {}: {}", t.name, to_string(t.stage->kind), judged.message());
    return std::nullopt;  // retried on the next tick
  }
  // Short of a decisive rule's evidence, with more of it coming: the stage runs on.
  if (end == StageEnd::Completed)
    if (auto wait = wait_for_evidence(t, judged->verdict, now)) return wait;
  // The build's context reach, beside its verdict (soakctl status shows it).
  if (judged->reach)
    if (auto id = d_.store.insert_context_reach(*judged->reach); !id)
      d_.log->error("{}: cannot write the context reach: {}", t.name, id.message());
  return stage_judged(t, std::move(judged->verdict), cfg_->schedule, utc_offset(now), now);
}

std::optional<Transition> Campaigns::effect_hard_failures(Track& t, int64_t now) {
  auto v = hard_failure_from_store(d_.store, stored_recipe(t, StageEnd::Stopped, now));
  if (!v) {
    d_.log->error("{}: cannot check for hard failures: {}", t.name, v.message());
    return std::nullopt;
  }
  if (!*v) {
    t.managed.exit_wait_until_ms.reset();
    return std::nullopt;
  }
  // A managed runtime that dies is seen first as failed requests (a connection
  // reset), its exit a moment later: the verdict waits that moment for the
  // exit, so that it names the signal and the log tail (docs/DESIGN.md §4.8).
  if (managed(t) && t.managed.runtime == RuntimePhase::Up) {
    if (!t.managed.exit_wait_until_ms) t.managed.exit_wait_until_ms = now + kExitWaitMs;
    if (now < *t.managed.exit_wait_until_ms) return std::nullopt;
  }
  t.managed.exit_wait_until_ms.reset();
  // Rejected mid-stage: what it still has in flight is cut (its rows stored as
  // cancelled), so that its heavy work stops holding the host's heavy gate from
  // the candidates still running (docs/DESIGN.md §3.7).
  cancel_track(t);
  return stage_judged(t, std::move(**v), cfg_->schedule, utc_offset(now), now);
}

std::optional<Transition> Campaigns::effect_launch_hold(Track& t, int64_t now) {
  if (t.phase != Phase::Staged || !t.stage) return std::nullopt;
  // Only a cap that holds is worth a reading of the stage's rows.
  const auto cap = launch_cap_of(t);
  if (!cap || cap->tokens < 0 || cap->tokens >= cap->min_tokens || cap->accepted) return std::nullopt;
  auto v = launch_hold_from_store(d_.store, stored_recipe(t, StageEnd::Stopped, now));
  if (!v) {
    d_.log->error("{}: cannot check its launch: {}", t.name, v.message());
    return std::nullopt;
  }
  if (!*v) return std::nullopt;
  cancel_track(t);
  return stage_judged(t, std::move(**v), cfg_->schedule, utc_offset(now), now);
}

void Campaigns::end_with(Track& t, VerdictState state, const std::string& reason, int64_t now, const std::string& who,
                         const std::string& why) {
  apply(t, end_campaign(t, state, reason, now, who, why), now);
}

// ============================================================== per-track step
bool Campaigns::busy(const Track& t) const {
  for (const auto& [id, f] : in_flight_)
    if (!f.shadow && f.track == t.name) return true;
  return false;
}

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

HeavyGate Campaigns::heavy_gate(const Track& t) const {
  std::vector<RunningTask> running;
  for (const auto& [id, f] : in_flight_) {
    auto it = tracks_.find(f.track);
    const bool canary = it != tracks_.end() && it->second.stage && it->second.stage->kind == StageKind::Canary;
    const bool traffic = it == tracks_.end() || f.task >= it->second.plan.tasks.size() ||
                         it->second.plan.tasks[f.task].kind != TaskKind::Scrape;
    running.push_back(RunningTask{f.track, f.weight, canary, traffic});
  }
  return heavy_gate_for(t, running, cfg_->schedule.exclusive_heavy);
}

bool Campaigns::canary_heavy(const InFlight& f) const {
  if (f.weight != Weight::Heavy) return false;  // a shadow run is the canary's baseline, timed as it is
  auto it = tracks_.find(f.track);
  return it != tracks_.end() && it->second.stage && it->second.stage->kind == StageKind::Canary;
}

std::optional<std::string> Campaigns::canary_heavy_in_flight() const {
  for (const auto& [id, f] : in_flight_)
    if (canary_heavy(f)) return f.track;
  return std::nullopt;
}

bool Campaigns::holds_traffic(const Track& t, bool light_window) const {
  // Gate and soak traffic waits; canaries keep their own probes (the heavy rule covers their overlap).
  if (light_window || (t.stage && t.stage->kind == StageKind::Canary)) return false;
  if (auto c = canary_heavy_in_flight(); c && *c != t.name) return true;
  return drain_for_ && *drain_for_ != t.name;
}

void Campaigns::update_drain(const Track& t, bool light_window) {
  const bool waits = t.phase == Phase::Staged && t.stage && t.stage->kind == StageKind::Canary && !frozen_ &&
                     runtime_ready(t) && heavy_waiting_since(t).has_value();
  if (drain_for_ == t.name && !waits) drain_for_.reset();
  // The first canary in turn whose heavy work waits for other candidates'
  // traffic: new traffic waits until what runs has ended.
  if (!drain_for_ && waits && !light_window && !canary_heavy_in_flight()) drain_for_ = t.name;
}

std::vector<Track*> Campaigns::step_order() {
  std::vector<Track*> order;
  for (auto& [name, t] : tracks_) order.push_back(&t);
  std::stable_sort(order.begin(), order.end(),
                   [](const Track* a, const Track* b) { return heavy_turn_before(*a, *b); });
  return order;
}

int Campaigns::canaries_running() const {
  int n = 0;
  for (const auto& [name, t] : tracks_)
    if (t.phase == Phase::Staged && t.stage && t.stage->kind == StageKind::Canary) ++n;
  return n;
}

void Campaigns::step(Track& t, int64_t now, bool light_window) {
  if (managed(t)) manage_runtime(t, now);
  if (t.managed.exit_wait_until_ms && now >= *t.managed.exit_wait_until_ms) {
    if (t.phase == Phase::Staged && t.stage) check_hard_failures(t, now);
    t.managed.exit_wait_until_ms.reset();
  }
  check_build(t, now);
  switch (t.phase) {
    case Phase::ReadingBuild:
    case Phase::Done: return;
    case Phase::WaitingCanary: {
      const bool due = now >= t.canary_not_before_ms && canaries_running() < cfg_->schedule.max_concurrent_canaries &&
                       !frozen_ && baseline_known(t) && runtime_ready(t);
      if (managed(t)) {
        // ab "interleaved": the previous build starts first, against the baseline the canary will have.
        if (due && previous_action(t, true) == PreviousAction::Start) settle_baseline(t);
        manage_previous(t, due);
      }
      if (due && !canary_waits_for_previous(t)) {
        settle_baseline(t);
        start_stage(t, StageKind::Canary, now);
      }
      return;
    }
    case Phase::Staged:
      if (!runtime_ready(t)) return;  // a managed runtime still starting: nothing to probe yet
      if (managed(t)) manage_previous(t, false);
      watch_liveness(t, now);
      if (t.phase != Phase::Staged) return;  // rejected: nothing served
      break;
  }
  const HeavyGate gate = light_window ? HeavyGate::Busy : heavy_gate(t);
  apply(t, step_stage(t, StepInputs{busy(t), gate, frozen_, holds_traffic(t, light_window)}, now), now);
}

// ============================================================== runs
void Campaigns::launch(const InFlight& f, const CandidateSnapshot& cfg, std::optional<int64_t> stage_id,
                       StageKind stage, TaskKind task, int64_t group_id) {
  const int64_t work_id = next_work_id_++;
  in_flight_[work_id] = f;
  in_flight_[work_id].group_id = group_id;
  TaskRequest req;
  req.work_id = work_id;
  req.candidate = cfg;
  req.candidate_id = f.candidate_id;
  req.host_id = d_.host_id;
  req.stage_id = stage_id;
  req.stage = stage;
  req.task = task;
  req.group_id = group_id;
  for (const auto& [name, t] : tracks_)
    if (t.row && t.row->id == f.candidate_id)
      if (auto fp = probes::parse_fingerprint_json(t.row->fingerprint)) req.expect_model = fp->model;
  runner_.run(req, [this, work_id](TaskReport rep) {
    on_task_done(work_id, std::move(rep), current_time());
    changed();
  });
}

void Campaigns::on_task_done(int64_t work_id, TaskReport rep, int64_t now) {
  if (d_.outbox.paused()) {  // applied once the rows it reports on are stored
    deferred_.emplace_back(work_id, std::move(rep));
    return;
  }
  auto it = in_flight_.find(work_id);
  if (it == in_flight_.end()) return;
  InFlight f = it->second;
  if (canary_heavy(f)) light_window_ = true;
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
  apply(t, task_finished(t, f.task, rep, now), now);
  if (t.phase != Phase::Staged) return;
  shadow_run(t, f);
}

// Interleaved A/B: a canary's run repeated against a live, promoted baseline.
void Campaigns::shadow_run(Track& t, const InFlight& f) {
  const TaskSpec& spec = t.plan.tasks[f.task];
  if (t.stage->kind != StageKind::Canary || !interleaves(spec.kind) || !t.baseline_id || frozen_) return;
  // The live baseline: the previous build's runtime soakd started beside this
  // canary (ab "interleaved"), else the baseline candidate's own runtime
  // when its campaign ended promoted.
  CandidateSnapshot live;
  const PreviousRuntime& p = t.managed.previous;
  if (p.phase == PreviousPhase::Up && p.for_row == t.row->id && p.baseline_id == *t.baseline_id) live = p.cfg;
  for (const auto& [n, other] : tracks_)
    if (!live && other.row && other.row->id == *t.baseline_id && other.phase == Phase::Done &&
        other.final_state == VerdictState::Promoted)
      live = other.cfg;
  if (!live || (spec.kind != TaskKind::Scrape && t.shadow_live_ok.value_or(0) != 1)) return;
  if (spec.weight == Weight::Heavy && heavy_gate(t) == HeavyGate::Busy) return;
  // The same group id as the candidate's run it repeats: the pair is known by it.
  launch(InFlight{f.task, true, t.name, *t.baseline_id, spec.weight}, live, std::nullopt, StageKind::Canary, spec.kind,
         f.group_id);
}

// ============================================================== tick
void Campaigns::check_hard_events(int64_t now) {
  // New hard events (memory guard, crash/restart, budget) reach a running stage
  // at once. process_gone is not one of them here: the judge counts it only for
  // a managed runtime, whose exit on_runtime_exit() judges itself.
  EventQuery eq;
  eq.min_id = last_event_seen_ + 1;
  auto ev = d_.store.events(eq);
  if (!ev) return;
  std::set<int64_t> cand_hit;
  bool host_wide = false;
  for (const auto& e : *ev) {
    last_event_seen_ = std::max(last_event_seen_, e.id);
    if (e.kind != EventKind::GuardTrip && e.kind != EventKind::ProcessRestart && e.kind != EventKind::MemoryBudget)
      continue;
    if (e.candidate_id)
      cand_hit.insert(*e.candidate_id);
    else
      host_wide = true;
  }
  for (auto& [name, t] : tracks_)
    if (t.phase == Phase::Staged && t.row && (host_wide || cand_hit.count(t.row->id))) check_hard_failures(t, now);
}

void Campaigns::tick(int64_t now) {
  // While the store cannot write, nothing starts and nothing is judged: the
  // rows a judgment rests on may still wait in the outbox (docs/DESIGN.md §4.9).
  if (!d_.outbox.retry()) return;
  for (auto& [work_id, rep] : std::exchange(deferred_, {})) on_task_done(work_id, std::move(rep), now);
  handle_controls(now);
  check_hard_events(now);
  // Heavy work is served in the order it became due, across candidates
  // (docs/DESIGN.md §3.7): the track that has waited longest is stepped first.
  // After a canary's heavy work, one pass runs the light work every track has
  // due (and no heavy work) before the next canary's heavy work drains the host.
  const bool light_window = light_window_ && !canary_heavy_in_flight();
  if (light_window) light_window_ = false;
  wake_soon_ = light_window;  // the heavy work held for the window goes on the next tick
  for (Track* t : step_order()) {
    step(*t, now, light_window);
    update_drain(*t, light_window);
  }
}

std::optional<int64_t> Campaigns::next_wake_ms(int64_t now) const {
  // Only future times: whatever was due at `now` was dispatched by tick(), and
  // work held back (a heavy task waiting for the gate) resumes on a completion.
  // Control requests are picked up by the owner's periodic tick, not here.
  std::optional<int64_t> w;
  auto wake = [&](int64_t x) {
    if (x > now && (!w || x < *w)) w = x;
  };
  if (d_.outbox.paused()) return d_.outbox.next_retry_ms();
  if (wake_soon_) wake(now + 1);
  for (const auto& [name, t] : tracks_) {
    if (!t.build_read_in_flight) wake(t.next_build_check_ms);  // fixed builds too: their fingerprint is read
    if (t.phase == Phase::WaitingCanary) wake(t.canary_not_before_ms);
    if (managed(t)) {
      wake(t.managed.next_exe_check_ms);
      if (!t.managed.pending_change.empty()) wake(t.managed.restart_at_ms);
      if (t.managed.exit_wait_until_ms) wake(*t.managed.exit_wait_until_ms);
    }
    if (t.phase != Phase::Staged || !t.stage || frozen_) continue;
    if (t.smoke_retry_at_ms) wake(*t.smoke_retry_at_ms);
    wake(t.stage->started_ms + t.stage->length_ms);
    wake(t.stage->deadline_ms);
    DueSet d = next_due(t.plan, t.tasks, t.stage->started_ms, now, HeavyGate::Free);
    if (d.next_wake_ms) wake(*d.next_wake_ms);
    if (auto w = liveness_wake(t, now)) wake(*w);
  }
  return w;
}

std::vector<Campaigns::Active> Campaigns::active() const {
  std::vector<Active> out;
  for (const auto& [name, t] : tracks_) {
    if (!t.row || t.phase == Phase::Done || t.row->build == kUnknownBuild) continue;
    Active a{name, t.cfg, t.row->id, std::nullopt, false, std::nullopt, std::nullopt};
    if (t.phase == Phase::Staged && t.stage) a.stage = t.stage->kind;
    a.managed = managed(t);
    if (a.managed && t.managed.runtime == RuntimePhase::Up) a.pid = t.managed.pid;
    if (t.managed.previous.phase == PreviousPhase::Up) a.previous_pid = t.managed.previous.pid;
    out.push_back(std::move(a));
  }
  return out;
}

bool Campaigns::settled() const {
  if (!in_flight_.empty()) return false;
  for (const auto& [name, t] : tracks_) {
    if (t.phase != Phase::Done || t.build_read_in_flight) return false;
    if (t.managed.runtime == RuntimePhase::Starting || t.managed.expect_new_build) return false;
  }
  return true;
}

void Campaigns::reload(ConfigSnapshot cfg, int64_t now) {
  cfg_ = std::move(cfg);
  std::set<std::string> names;
  for (const auto& c : cfg_->candidates) {
    if (!c.enabled) continue;
    names.insert(c.name);
    if (auto it = tracks_.find(c.name); it != tracks_.end()) managed_reload(it->second, &c);
    // New settings apply from now (a running stage keeps its start and deadline).
    set_config(tracks_[c.name], cfg_, c);
  }
  for (auto it = tracks_.begin(); it != tracks_.end();) {
    if (names.count(it->first)) {
      ++it;
      continue;
    }
    Track& t = it->second;
    const CandidateConfig* disabled = cfg_->find(it->first);
    managed_reload(t, disabled);  // first: its runtime is stopped for this reason, not as "settled"
    if (t.row && (t.phase == Phase::Staged || t.phase == Phase::WaitingCanary))
      end_with(t, VerdictState::Inconclusive, disabled ? "disabled in the config" : "removed from the config", now);
    it = tracks_.erase(it);
  }
}

}  // namespace soak
