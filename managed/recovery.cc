// RuntimeSupervisor (managed/supervisor.h), the two ends of soakd's own
// life: at start, the runtimes a soakd before this one launched and did not
// stop (a crash, a SIGKILL) are found again — adopted (keep_running) or
// stopped, never a process with another start time or other arguments — before
// anything is launched; at stop, runtimes are stopped (or left up) before the
// service reports done (docs/DESIGN.md §4.8).
#include <set>

#include "managed/supervisor.h"

namespace soak {

// ============================================================== recovery
void RuntimeSupervisor::start() { recover(); }

// The housekeeping tick runs only while there are runtimes to keep: with none
// (no managed candidate, or all stopped) soakd does not wake for it.
void RuntimeSupervisor::keep_house() {
  if (runtimes_.empty() || housekeeping_.active()) return;
  housekeeping_.start(static_cast<uint64_t>(kRuntimeLogCheckEveryMs), static_cast<uint64_t>(kRuntimeLogCheckEveryMs),
                      [this] {
                        check_adopted();
                        for (auto& [name, r] : runtimes_) r->log->enforce_cap();
                        if (runtimes_.empty()) housekeeping_.stop();
                      });
}

void RuntimeSupervisor::recover() {
  LaunchQuery q;
  q.host_id = d_.host_id;
  q.open_only = true;
  auto open = d_.store.launches(q);
  if (!open) d_.log->error("cannot read the runtimes soakd launched before: {}", open.message());
  const int64_t now = d_.clock.wall_ms();
  std::optional<std::vector<ProcessInfo>> procs;
  if (open && !open->empty()) {
    auto list = sampler_.list_processes();
    if (list) procs = std::move(*list);
  }
  std::set<std::string> adopted;
  for (const RuntimeLaunch& rec : open ? *open : std::vector<RuntimeLaunch>{}) {
    std::optional<LiveProcess> live;
    ProcessSample s = sampler_.sample_process(rec.pid, now);
    if (!s.gone) {
      LiveProcess lp{s.start_time, {}};
      if (procs)
        for (const auto& p : *procs)
          if (p.pid == rec.pid) lp.argv = p.argv;
      live = std::move(lp);
    }
    const OrphanDecision d = match_orphan(rec, live);
    RuntimeLaunch upd = rec;
    if (d.match != OrphanMatch::Ours) {
      upd.state = LaunchState::Gone;
      upd.ended_ms = now;
      upd.detail = "found at soakd start: " + d.why;
      save(upd);
      d_.log->info("{}: the runtime launched before (pid {}) {}", rec.name, rec.pid, d.why);
      continue;
    }
    const CandidateConfig* c = cfg_->find(rec.name);
    if (c && c->enabled && c->launch && c->launch->keep_running == KeepRunning::Yes && !adopted.count(rec.name) &&
        argv_json(*c->launch) == rec.argv_json) {
      adopted.insert(rec.name);
      adopt(rec, candidate_snapshot(cfg_, *c));
      continue;
    }
    ++recovering_;
    const int64_t timeout = c && c->launch ? c->launch->stop_timeout_ms : kDefaultStopTimeoutMs;
    d_.log->warn("{}: pid {} is a runtime soakd launched before ({}); stopping it before launching again", rec.name,
                 rec.pid, d.why);
    const int pid = rec.pid;
    const auto start_time = rec.start_time;
    launcher_.stop_foreign(
        pid, [this, pid, start_time] { return same_process(pid, start_time); }, timeout,
        [this, upd](ForeignStop how) mutable {
          upd.state = LaunchState::OrphanStopped;
          upd.ended_ms = d_.clock.wall_ms();
          upd.detail = "found running at soakd start (soakd had not stopped it): " + std::string(describe(how));
          upd.log_tail = RuntimeLog(log_path(upd.name)).tail();
          save(upd);
          d_.log->info("{}: pid {} {}", upd.name, upd.pid, describe(how));
          --recovering_;
          recovered_one();
        });
  }
  if (recovering_ == 0) recovered_one();
}

void RuntimeSupervisor::recovered_one() {
  if (recovering_ > 0 || recovered_) {
    maybe_stopped();
    return;
  }
  recovered_ = true;
  std::vector<std::string> names;
  for (const auto& [name, q] : queued_) names.push_back(name);
  for (const auto& n : names) run_queued(n);
  maybe_stopped();
}

void RuntimeSupervisor::adopt(const RuntimeLaunch& rec, const CandidateSnapshot& c) {
  auto r = std::make_unique<Runtime>();
  r->name = rec.name;
  r->cfg = c;
  r->state = State::Up;
  r->origin = RuntimeOrigin::Adopted;
  r->gen = ++gen_;
  r->record = rec;
  r->record.state = LaunchState::Running;
  r->record.detail = "adopted after a soakd restart (keep_running)";
  r->log = std::make_unique<RuntimeLog>(log_path(rec.name));
  save(r->record);
  d_.log->info("{}: adopted its runtime pid {}, left running by the soakd before (keep_running)", rec.name, rec.pid);
  runtimes_[rec.name] = std::move(r);
  keep_house();
}

void RuntimeSupervisor::check_adopted() {
  std::vector<std::string> gone;
  for (const auto& [name, r] : runtimes_)
    if (r->origin == RuntimeOrigin::Adopted && r->state == State::Up &&
        !same_process(r->record.pid, r->record.start_time))
      gone.push_back(name);
  for (const auto& name : gone) {
    auto it = runtimes_.find(name);
    std::unique_ptr<Runtime> r = std::move(it->second);
    runtimes_.erase(it);
    RuntimeExit x;
    x.pid = r->record.pid;
    x.exit = "ended (exit status unknown: soakd adopted it after a restart, so it is not soakd's child)";
    x.log_tail = r->log->tail();
    ended(std::move(r), LaunchState::Exited, ChildExit{}, "ended on its own: " + x.exit);
    if (on_exit_) on_exit_(name, x);
  }
}

// ============================================================== soakd stopping
void RuntimeSupervisor::stop(std::function<void()> done) {
  stopping_ = true;
  stop_done_ = std::move(done);
  housekeeping_.stop();
  for (auto& [name, items] : queued_)
    for (auto& item : items) later([ready = std::move(item.ready)] { ready(make_error("soakd is stopping")); });
  queued_.clear();
  std::vector<std::string> names;
  for (const auto& [name, r] : runtimes_) names.push_back(name);
  for (const auto& name : names) {
    Runtime& r = *runtimes_.at(name);
    const bool keep = r.cfg->launch && r.cfg->launch->keep_running == KeepRunning::Yes && r.state == State::Up;
    if (!keep) {
      stop(name, "soakd stopping");
      continue;
    }
    r.record.state = LaunchState::LeftRunning;
    r.record.detail = "left running when soakd stopped (keep_running): the next soakd adopts it";
    save(r.record);
    if (r.origin == RuntimeOrigin::Launched) launcher_.release(r.record.pid);
    d_.log->info("{}: runtime pid {} left running (keep_running)", name, r.record.pid);
    runtimes_.erase(name);
  }
  maybe_stopped();
}

void RuntimeSupervisor::maybe_stopped() {
  if (!stopping_ || !stop_done_ || !runtimes_.empty() || recovering_ > 0) return;
  auto done = std::move(stop_done_);
  stop_done_ = nullptr;
  done();
}

}  // namespace soak
