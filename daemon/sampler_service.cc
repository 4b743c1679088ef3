#include "daemon/sampler_service.h"

#include <algorithm>
#include <set>

#include <nlohmann/json.hpp>

#include "core/files.h"
#include "core/version.h"

namespace soak {

SamplerService::SamplerService(const ConfigSnapshot& cfg, const Deps& deps, Sampler& sampler, ActiveSource active,
                               std::unique_ptr<PowerAssertion> power)
    : store_(deps.store),
      outbox_(deps.outbox),
      sampler_(sampler),
      clock_(deps.clock),
      log_(deps.log),
      host_id_(deps.host_id),
      active_(std::move(active)),
      interval_ms_(cfg->sampler.interval_ms),
      process_every_ms_(cfg->sampler.process_sample_every_ms()),
      guard_(cfg->defaults.guard),
      gaps_(cfg->sampler.interval_ms, deps.host_id),
      host_stored_(cfg->sampler.process_sample_every_ms()),
      keep_awake_(std::move(power), cfg->sampler.keep_awake ? KeepAwakeMode::WhileStagesRun : KeepAwakeMode::Off),
      timer_(deps.loop),
      metrics_path_(cfg->metrics.textfile),
      metrics_(report::MetricsOptions{cfg->defaults.guard.window_ms, kSoakdVersion}),
      evidence_every_ms_(evidence_every(cfg->sampler.interval_ms)) {
  // With the metrics textfile on, it keeps the running stages' evidence up to
  // date at every tick: stored from there, not from a second copy of the rows.
  evidence_.share_from([this](int64_t candidate_id) -> const report::LiveEvidence* {
    return metrics_path_.empty() ? nullptr : metrics_.live(candidate_id);
  });
}

namespace {
// node_exporter usually runs as another user: the file must be readable by it.
constexpr unsigned kMetricsFileMode = 0644;
}  // namespace

int64_t SamplerService::evidence_every(int64_t interval_ms) {
  return std::clamp(kEvidenceIntervals * interval_ms, interval_ms, report::kStageEvidenceEveryMs);
}

void SamplerService::write_evidence(int64_t wall_ms) {
  const Status st = evidence_.refresh(store_, wall_ms, evidence_every_ms_, 1);
  if (!st && !evidence_failing_) log_->warn("the running stages' evidence not written: {}", st.message());
  if (st && evidence_failing_) log_->info("the running stages' evidence is stored again");
  evidence_failing_ = !st;
}

void SamplerService::write_metrics(int64_t wall_ms) {
  Status st = metrics_.refresh(store_, wall_ms);
  if (st) st = write_file_atomic(metrics_path_, metrics_.render(wall_ms), kMetricsFileMode);
  if (!st && !metrics_failing_) log_->error("metrics textfile {}: {}", metrics_path_, st.message());
  if (st && metrics_failing_) log_->info("metrics textfile {} written again", metrics_path_);
  metrics_failing_ = !st;
}

void SamplerService::write(const std::vector<Event>& events) {
  for (const auto& e : events) {
    outbox_.put(e);
    if (e.kind != EventKind::ClockStep) log_->warn("{}: {}", to_string(e.kind), e.detail_json);
  }
}

void SamplerService::start() {
  // The newest sample of an earlier run tells how long the daemon was away.
  std::optional<int64_t> last;
  if (auto max = store_.max_ids(); max && max->host_sample > 0) {
    SampleQuery q;
    q.host_id = host_id_;
    q.min_id = max->host_sample;
    if (auto rows = store_.host_samples(q); rows && !rows->empty()) last = rows->back().wall_ms;
  }
  write(gaps_.start(clock_.now(), last));
  tick();
  timer_.start(static_cast<uint64_t>(interval_ms_), static_cast<uint64_t>(interval_ms_), [this] { tick(); });
}

void SamplerService::tick() {
  const Instant now = clock_.now();
  read_this_tick_.clear();
  write(gaps_.tick(now));

  HostSample h = sampler_.sample_host(now.wall_ms);
  h.host_id = host_id_;
  if (host_stored_.keep(h)) outbox_.put(h);
  write(guard_.observe(h));

  const auto active = active_ ? active_() : std::vector<Campaigns::Active>{};
  std::vector<StageKind> running;
  for (const auto& a : active)
    if (a.stage) running.push_back(*a.stage);
  if (auto st = keep_awake_.update(running); !st) log_->warn("keep-awake: {}", st.message());

  // The process table is walked only for the duplicate-engine scan (while a
  // stage runs) and to find a candidate's process again.
  const bool scan_due = !running.empty() && now.wall_ms - last_scan_ms_ >= kDefaultEngineScanEveryMs;
  std::optional<std::vector<ProcessInfo>> processes;
  if (scan_due) {
    last_scan_ms_ = now.wall_ms;
    auto list = sampler_.list_processes();
    if (list)
      processes = std::move(*list);
    else
      log_->warn("cannot list processes: {}", list.message());
  }
  std::vector<int> candidate_pids;
  std::set<int64_t> seen;
  for (const auto& a : active) {
    seen.insert(a.candidate_id);
    auto it = watched_.find(a.candidate_id);
    if (it == watched_.end())
      it = watched_
               .emplace(a.candidate_id, Watched{std::nullopt, 0, RestartDetector(a.candidate_id, host_id_),
                                                DuplicateEngineDetector(a.candidate_id, host_id_, sampler_.runtimes()),
                                                false, ProcessSampleKeeper(process_every_ms_)})
               .first;
    if (it->second.pid) candidate_pids.push_back(*it->second.pid);
    // The previous build soakd runs beside a canary is expected, not a second engine (SOLO).
    if (a.previous_pid) candidate_pids.push_back(*a.previous_pid);
  }
  for (const auto& a : active)
    sample_candidate(a, watched_.at(a.candidate_id), now.wall_ms, scan_due, processes ? &*processes : nullptr,
                     candidate_pids);
  // Candidates whose campaign ended are no longer watched.
  for (auto it = watched_.begin(); it != watched_.end();)
    it = seen.count(it->first) ? std::next(it) : watched_.erase(it);
  if (!metrics_path_.empty()) write_metrics(now.wall_ms);
  // Not while the store is not writable (the outbox holds what must not be
  // lost): the evidence is derived from stored rows and stored again later.
  // Looked at only when a stage is due (a minute) or new: no query otherwise.
  std::vector<int64_t> staged;
  for (const auto& a : active)
    if (a.stage && *a.stage != StageKind::Smoke) staged.push_back(a.candidate_id);
  if (!staged.empty() && !outbox_.paused() && evidence_.due(staged, now.wall_ms, evidence_every_ms_))
    write_evidence(now.wall_ms);
}

void SamplerService::sample_candidate(const Campaigns::Active& a, Watched& w, int64_t wall_ms, bool scan_due,
                                      const std::vector<ProcessInfo>* processes,
                                      const std::vector<int>& candidate_pids) {
  auto locate = [&] {
    LocatedProcess p = locate_candidate_process(sampler_, *a.cfg);
    w.located_ms = wall_ms;
    if (p.pid != w.pid)
      log_->info("{}: runtime process {} ({})", a.name, p.pid ? std::to_string(*p.pid) : std::string("not found"),
                 p.detail);
    w.pid = p.pid;
  };
  if (a.managed) {
    // The runtime soakd launched: its pid is known, whatever else listens or runs.
    if (a.pid != w.pid)
      log_->info("{}: runtime process {} (launched by soakd)", a.name, a.pid ? std::to_string(*a.pid) : "not up");
    w.pid = a.pid;
    w.located_ms = wall_ms;
  } else if (!w.pid && wall_ms - w.located_ms >= kDefaultEngineScanEveryMs) {
    locate();
  }
  std::optional<ProcessIdentity> identity;
  if (w.pid) {
    ProcessSample p = read_process(*w.pid, wall_ms);
    if (!identity_of(p) && !a.managed) {
      // Gone: look for the runtime again at once (it may have restarted under
      // a new pid) before saying it is gone. A pid that exists but does not
      // read (another user's process) is looked for again only at the scan
      // cadence, not with a process-table walk every tick.
      if (p.gone || wall_ms - w.located_ms >= kDefaultEngineScanEveryMs) {
        const std::optional<int> before = w.pid;
        locate();
        if (w.pid && w.pid != before) p = read_process(*w.pid, wall_ms);
      }
    }
    p.host_id = host_id_;
    p.candidate_id = a.candidate_id;
    const auto& budget = a.cfg->memory_budget_bytes;
    const bool over_budget = budget && p.footprint_bytes && *p.footprint_bytes > *budget;
    if (w.pid && w.stored.keep(p, over_budget)) {
      // A sample that waits for the store has no id yet: the event names it by its time.
      const auto id = outbox_.put(p);
      if (over_budget) report_over_budget(a, w, p, id.value_or(0));
    }
    identity = identity_of(p);
  }
  // A managed runtime's end is reported by soakd itself, with its exit status.
  if (!a.managed) write(w.restarts.observe(identity, wall_ms));
  if (scan_due && processes && a.stage) {
    // Other candidates' runtimes are expected; anything else running is a duplicate.
    std::vector<ProcessInfo> others;
    for (const auto& pi : *processes)
      if (pi.pid == w.pid.value_or(-1) ||
          std::find(candidate_pids.begin(), candidate_pids.end(), pi.pid) == candidate_pids.end())
        others.push_back(pi);
    write(w.duplicates.observe(others, w.pid, wall_ms));
  }
}

ProcessSample SamplerService::read_process(int pid, int64_t wall_ms) {
  // A process's figures cost system time to read (Linux walks its whole
  // address space for smaps_rollup: milliseconds for a large one); candidates
  // it serves together share one read.
  auto it = read_this_tick_.find(pid);
  if (it == read_this_tick_.end()) it = read_this_tick_.emplace(pid, sampler_.sample_process(pid, wall_ms)).first;
  return it->second;
}

void SamplerService::report_over_budget(const Campaigns::Active& a, Watched& w, const ProcessSample& p,
                                        int64_t sample_id) {
  const auto& budget = a.cfg->memory_budget_bytes;
  if (!a.stage || w.over_budget_reported) return;
  w.over_budget_reported = true;
  Event e;
  e.wall_ms = p.wall_ms;
  e.host_id = host_id_;
  e.candidate_id = a.candidate_id;
  e.kind = EventKind::MemoryBudget;
  e.detail_json = nlohmann::json{{"pid", p.pid},
                                 {"footprint_bytes", *p.footprint_bytes},
                                 {"budget_bytes", *budget},
                                 {"process_sample_id", sample_id},
                                 {"stage", std::string(to_string(*a.stage))}}
                      .dump();
  write({e});
}

void SamplerService::reload(const ConfigSnapshot& snapshot) {
  const Config& cfg = *snapshot;
  if (cfg.sampler.interval_ms != interval_ms_) {
    interval_ms_ = cfg.sampler.interval_ms;
    evidence_every_ms_ = evidence_every(interval_ms_);
    gaps_ = GapDetector(interval_ms_, host_id_);
    write(gaps_.start(clock_.now(), std::nullopt));
    timer_.start(static_cast<uint64_t>(interval_ms_), static_cast<uint64_t>(interval_ms_), [this] { tick(); });
  }
  // Candidates watched from now on store at the new cadence.
  process_every_ms_ = cfg.sampler.process_sample_every_ms();
  host_stored_.set_every_ms(process_every_ms_);
  keep_awake_.set_mode(cfg.sampler.keep_awake ? KeepAwakeMode::WhileStagesRun : KeepAwakeMode::Off);
  metrics_path_ = cfg.metrics.textfile;
  metrics_.set_guard_window(cfg.defaults.guard.window_ms);
  // Rebuilt only when its rules change: a rebuild forgets the window and the
  // rules already tripped, so an unrelated reload would trip again.
  if (!(cfg.defaults.guard == guard_.rules())) guard_ = MemoryGuard(cfg.defaults.guard);
}

void SamplerService::stop(std::function<void()> done) {
  timer_.stop();
  if (auto h = host_stored_.take_pending()) outbox_.put(*h);
  if (auto st = keep_awake_.update({}); !st) log_->warn("keep-awake: {}", st.message());
  done();
}

}  // namespace soak
