// Campaigns: managed candidates' runtimes (docs/DESIGN.md §4.8), through the
// RuntimeControl — when to start one, when to stop it, what its exit means.
#include <nlohmann/json.hpp>

#include "campaigns/campaigns.h"
#include "core/duration.h"
#include "core/log.h"
#include "schedules/plan.h"

namespace soak {

using json = nlohmann::ordered_json;

namespace {

// A runtime log tail on one line, for verdict reasons.
constexpr size_t kReasonTailChars = 400;

std::string tail_line(const std::string& tail) {
  const std::string line = log_tail_line(tail, kReasonTailChars, " | ");
  return line.empty() ? "" : "; log tail: " + line;
}

}  // namespace

void Campaigns::set_runtime_control(RuntimeControl* control) {
  control_ = control;
  if (control_)
    control_->set_on_exit([this](const std::string& name, const RuntimeExit& x) {
      on_runtime_exit(name, x, current_time());
      changed();
    });
}

void Campaigns::manage_runtime(Track& t, int64_t now) {
  ManagedState& m = t.managed;
  // The executable, every build_poll: a change is a new build, started at the nightly window.
  if (now >= m.next_exe_check_ms && m.runtime != RuntimePhase::Starting) {
    m.next_exe_check_ms = now + t.cfg->settings.cadence.build_poll_ms;
    const std::string change = control_->executable_change(*t.cfg);
    if (!change.empty() && change != m.pending_change) {
      m.pending_change = change;
      m.restart_at_ms = next_window_start(now, cfg_->schedule.nightly_window, utc_offset(now));
      m.hold = false;
      d_.log->info("{}: its executable changed ({}); the runtime starts again for the new build {}", t.name, change,
                   m.restart_at_ms > now ? "at the nightly window, in " + format_duration(m.restart_at_ms - now)
                                         : std::string("now"));
    }
  }
  if (frozen_) return;
  if (!m.pending_change.empty() && now >= m.restart_at_ms) {
    restart_for_new_build(t, now);
    return;
  }
  if (runtime_needed(t)) {
    if (m.runtime == RuntimePhase::Down && !m.hold) start_runtime(t);
  } else {
    settle_runtime(t);
  }
}

bool Campaigns::runtime_needed(const Track& t) const {
  return t.phase != Phase::Done || t.managed.smoke_when_up || t.managed.expect_new_build;
}

void Campaigns::settle_runtime(Track& t) {
  ManagedState& m = t.managed;
  if (!managed(t) || m.runtime != RuntimePhase::Up || runtime_needed(t) ||
      t.cfg->launch->keep_running == KeepRunning::Yes)
    return;
  control_->stop(
      t.name, "its campaign settled" + (t.final_state ? ": " + std::string(to_string(*t.final_state)) : std::string()));
  m.runtime = RuntimePhase::Down;
  m.pid.reset();
}

void Campaigns::start_runtime(Track& t) {
  t.managed.runtime = RuntimePhase::Starting;
  t.managed.pending_change.clear();  // this launch runs the executable as it is now
  const std::string name = t.name;
  control_->start(t.cfg, [this, name](Result<RuntimeUp> up) {
    on_runtime_ready(name, std::move(up), current_time());
    changed();
  });
}

void Campaigns::on_runtime_ready(const std::string& name, Result<RuntimeUp> up, int64_t now) {
  Track* tp = track(name);
  if (!tp || tp->managed.runtime != RuntimePhase::Starting) return;  // removed or stopped meanwhile
  Track& t = *tp;
  if (!up) {
    t.managed.runtime = RuntimePhase::Down;
    launch_failed(t, up.message(), now);
    return;
  }
  t.managed.runtime = RuntimePhase::Up;
  t.managed.pid = up->pid;
  t.managed.build_unread = true;
  t.next_build_check_ms = now;
  if (t.row && t.row->build != kUnknownBuild) control_->link(name, t.row->id);
  const bool resumed = std::exchange(t.managed.resumed_stage, false);
  if (resumed && up->origin == RuntimeOrigin::Launched && t.phase == Phase::Staged)
    apply(t,
          restart_stage(t,
                        "soakd restarted and its managed runtime with it (pid " + std::to_string(up->pid) +
                            " now); set keep_running to keep a runtime, and its stage, across soakd restarts",
                        now),
          now);
}

void Campaigns::launch_failed(Track& t, const std::string& why, int64_t now) {
  ManagedState& m = t.managed;
  m.hold = true;  // not again until something changes
  m.expect_new_build = false;
  m.smoke_when_up = false;
  const std::string reason = "the managed runtime did not start: " + why;
  if (t.phase == Phase::Staged || t.phase == Phase::WaitingCanary) {
    end_with(t, VerdictState::Blocked, reason, now);
    return;
  }
  // No campaign runs: the build this launch was to serve is not known.
  if (!t.row || t.row->build != kUnknownBuild) {
    register_candidate(t, std::string(kUnknownBuild), now);
    t.stage.reset();  // the previous build's stages are not this row's
  }
  if (!t.row) return;
  control_->link(t.name, t.row->id);
  end_with(t, VerdictState::Blocked, reason, now);
}

void Campaigns::on_runtime_exit(const std::string& name, const RuntimeExit& x, int64_t now) {
  if (name.size() > kPreviousRuntimeSuffix.size() &&
      name.compare(name.size() - kPreviousRuntimeSuffix.size(), kPreviousRuntimeSuffix.size(),
                   kPreviousRuntimeSuffix) == 0) {
    on_previous_exit(name, x);
    return;
  }
  Track* tp = track(name);
  if (!tp) return;
  Track& t = *tp;
  t.managed.runtime = RuntimePhase::Down;
  t.managed.pid.reset();
  t.managed.build_unread = false;
  json d;
  d["pid"] = x.pid;
  d["exit"] = x.exit;
  d["exit_status"] = x.exit_status ? json(*x.exit_status) : json(nullptr);
  d["term_signal"] = x.term_signal ? json(*x.term_signal) : json(nullptr);
  d["log_tail"] = x.log_tail;
  d["launched_by"] = "soakd";
  if (t.row) write_event(EventKind::ProcessGone, t.row->id, d.dump(), now);
  const std::string what = "pid " + std::to_string(x.pid) + " " + x.exit + tail_line(x.log_tail);
  switch (t.phase) {
    case Phase::Staged:
      // The judge rejects on the process_gone event, with the rows as evidence;
      // should it not (a store error), the verdict is written all the same.
      check_hard_failures(t, now);
      if (t.phase == Phase::Staged)
        end_with(t, VerdictState::Rejected,
                 "the managed runtime ended during the " + std::string(to_string(t.stage->kind)) + ": " + what, now);
      break;
    case Phase::WaitingCanary:
      end_with(t, VerdictState::Rejected, "the managed runtime ended between stages: " + what, now);
      break;
    case Phase::ReadingBuild: launch_failed(t, "it ended before its build was read: " + what, now); break;
    case Phase::Done: d_.log->warn("{}: its runtime {} after its campaign ended", name, what); break;
  }
}

void Campaigns::restart_for_new_build(Track& t, int64_t now) {
  ManagedState& m = t.managed;
  const std::string change = m.pending_change;
  m.pending_change.clear();
  m.expect_new_build = true;  // first: ending the campaign below must not stop the runtime as "settled"
  if (t.phase == Phase::Staged || t.phase == Phase::WaitingCanary)
    end_with(t, VerdictState::Inconclusive,
             "the executable changed (" + change +
                 "): the runtime starts again for the new build before this "
                 "campaign finished",
             now);
  if (m.runtime != RuntimePhase::Down) control_->stop(t.name, "the executable changed: " + change);
  m.runtime = RuntimePhase::Down;
  m.pid.reset();
  m.hold = false;
  start_runtime(t);  // after the stop ends; its build is read once it is up
}

void Campaigns::managed_reload(Track& t, const CandidateConfig* next) {
  if (!managed(t)) return;
  ManagedState& m = t.managed;
  const bool running = m.runtime != RuntimePhase::Down;
  if (!next || !next->enabled || !next->launch) {
    stop_previous(t, !next ? "its candidate was removed from the config" : "its candidate's launch ended");
    if (running)
      control_->stop(t.name, !next            ? "removed from the config"
                             : !next->enabled ? "disabled in the config"
                                              : "its launch block was removed");
    m = ManagedState{};
    return;
  }
  if (*next->launch != *t.cfg->launch) {
    m.hold = false;  // a changed launch block may start where the last one did not
    if (running)
      d_.log->info("{}: its launch block changed; the running runtime keeps the old one until it starts again", t.name);
  }
}

// ============================================================== ab "interleaved"
namespace {
constexpr const char* kFellBack = "ab interleaved fell back to history: ";
}  // namespace

void Campaigns::manage_previous(Track& t, bool canary_due) {
  switch (previous_action(t, canary_due)) {
    case PreviousAction::None: return;
    case PreviousAction::Stop: stop_previous(t, kPreviousCanaryEnded); return;
    case PreviousAction::Start:
      if (!frozen_) start_previous(t);
      return;
  }
}

void Campaigns::start_previous(Track& t) {
  stop_previous(t, "its canary's build or baseline changed");
  PreviousRuntime& p = t.managed.previous;
  p.for_row = t.row->id;
  p.baseline_id = *t.baseline_id;
  p.phase = PreviousPhase::Off;  // until it is launched
  auto base = d_.store.candidate(p.baseline_id);
  if (!base || !*base) {
    p.note = std::string(kFellBack) + "the previous build's row cannot be read" + (base ? "" : ": " + base.message());
    d_.log->warn("{}: {}", t.name, p.note);
    return;
  }
  // Another candidate as the baseline is interleaved through its own campaign.
  if ((*base)->name != t.name) return;
  const std::string build = (*base)->build;
  auto prev = control_->previous_build(*t.cfg, p.baseline_id);
  if (!prev) {
    p.note = std::string(kFellBack) + "the previous build " + build + " cannot run beside it: " + prev.message();
    d_.log->warn("{}: {}", t.name, p.note);
    return;
  }
  p.cfg = std::make_shared<const CandidateConfig>(previous_build_candidate(*t.cfg, prev->program, prev->port));
  p.phase = PreviousPhase::Starting;
  p.gen = ++previous_gen_;
  p.what = "the previous build " + build + " (" + prev->program + ") on port " + std::to_string(prev->port);
  p.note = p.what + " was starting when the canary was judged";
  d_.log->info("{}: starting {} beside its canary", t.name, p.what);
  const std::string name = t.name;
  const uint64_t gen = p.gen;
  control_->start(p.cfg, [this, name, gen](Result<RuntimeUp> up) {
    on_previous_ready(name, gen, std::move(up));
    changed();
  });
}

void Campaigns::on_previous_ready(const std::string& name, uint64_t gen, Result<RuntimeUp> up) {
  Track* tp = track(name);
  if (!tp) return;
  PreviousRuntime& p = tp->managed.previous;
  if (p.gen != gen || p.phase != PreviousPhase::Starting) return;  // stopped or replaced meanwhile
  if (!up) {
    p.phase = PreviousPhase::Off;
    p.note = std::string(kFellBack) + p.what + " did not start: " + up.message();
    d_.log->warn("{}: {}", name, p.note);
    return;
  }
  p.phase = PreviousPhase::Up;
  p.pid = up->pid;
  p.note = p.what + " ran beside it as pid " + std::to_string(up->pid) + ", each interleaved run repeated against it";
  tp->shadow_live_ok.reset();  // its own scrape says whether it serves
  control_->link(p.cfg->name, p.baseline_id);
  d_.log->info("{}: {} is up (pid {}): the canary's interleaved runs are repeated against it", name, p.what, up->pid);
}

void Campaigns::on_previous_exit(const std::string& name, const RuntimeExit& x) {
  Track* tp = track(name.substr(0, name.size() - kPreviousRuntimeSuffix.size()));
  if (!tp) return;
  PreviousRuntime& p = tp->managed.previous;
  if (p.phase != PreviousPhase::Up || !p.cfg || p.cfg->name != name) return;
  p.phase = PreviousPhase::Off;
  p.pid.reset();
  p.note = p.what + " ended during the canary (pid " + std::to_string(x.pid) + " " + x.exit +
           "): compared with the runs it served before" + tail_line(x.log_tail);
  d_.log->warn("{}: {}", tp->name, p.note);
}

void Campaigns::stop_previous(Track& t, const std::string& why) {
  PreviousRuntime& p = t.managed.previous;
  if (p.phase == PreviousPhase::Starting || p.phase == PreviousPhase::Up) {
    d_.log->info("{}: stopping {}: {}", t.name, p.what, why);
    control_->stop(p.cfg->name, why);
  }
  p = PreviousRuntime{};
}

}  // namespace soak
