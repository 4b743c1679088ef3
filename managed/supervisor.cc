#include "managed/supervisor.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <set>
#include <system_error>

#include "core/duration.h"
#include "core/log.h"
#include "platform/runtime_processes.h"

namespace soak {

namespace {

// Reasons carry the runtime's last lines on one line.
constexpr size_t kReasonTailChars = 600;

std::string with_tail(const std::string& why, const RuntimeLog& log) {
  const std::string t = log_tail_line(log.tail(), kReasonTailChars, " | ");
  return t.empty() ? why + " (its log " + log.path() + " is empty)" : why + "; last lines of " + log.path() + ": " + t;
}

std::string joined(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : " ") + s;
  return out;
}

// A loopback port nothing listens on now: the kernel's pick for a socket
// bound to port 0, released at once for the runtime to bind.
Result<uint16_t> free_loopback_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return make_error(std::string("cannot open a socket to find a free port: ") + std::strerror(errno));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
                  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0;
  const int err = errno;
  ::close(fd);
  if (!ok) return make_error(std::string("cannot find a free loopback port: ") + std::strerror(err));
  return static_cast<uint16_t>(ntohs(a.sin_port));
}

}  // namespace

ReadyCheck engine_ready_check(probes::ProbeEngine& engine) {
  return [&engine](const CandidateConfig& c, std::function<void(bool, std::string)> done) {
    auto row = std::make_shared<std::optional<ProbeResult>>();
    engine.run(
        c, probes::RunSpec{{ProbeKind::Health}, std::nullopt}, [row](ProbeResult r) { *row = std::move(r); },
        [row, done = std::move(done)] {
          if (!*row) return done(false, "no answer");
          const ProbeResult& r = **row;
          if (r.outcome == Outcome::Clean) return done(true, "");
          done(false, std::string(to_string(r.outcome)) + (r.detail.empty() ? "" : ": " + r.detail));
        });
  };
}

RuntimeSupervisor::RuntimeSupervisor(ConfigSnapshot cfg, const Deps& deps, Sampler& sampler, ReadyCheck ready,
                                     probes::EnvReader env)
    : cfg_(std::move(cfg)),
      d_(deps),
      sampler_(sampler),
      ready_(std::move(ready)),
      env_(env ? std::move(env) : probes::process_env()),
      launcher_(deps.loop),
      housekeeping_(deps.loop),
      defer_(deps.loop) {}

RuntimeSupervisor::~RuntimeSupervisor() = default;

// ============================================================== small parts
void RuntimeSupervisor::later(std::function<void()> f) {
  deferred_.push_back(std::move(f));
  if (defer_armed_) return;
  defer_armed_ = true;
  defer_.start(0, 0, [this] {
    defer_armed_ = false;
    auto fs = std::move(deferred_);
    deferred_.clear();
    for (auto& f : fs) f();
  });
}

void RuntimeSupervisor::save(const RuntimeLaunch& rec) {
  if (rec.id == 0) return;
  if (auto st = d_.store.update_launch(rec); !st)
    d_.log->error("{}: cannot record its runtime: {}", rec.name, st.message());
}

bool RuntimeSupervisor::same_process(int pid, std::optional<int64_t> start_time) {
  if (!start_time) return false;
  ProcessSample s = sampler_.sample_process(pid, 0);
  return s.start_time && *s.start_time == *start_time;
}

std::string RuntimeSupervisor::path_env(const LaunchSpec& s) const { return launch_path(s, env_("PATH")); }

std::string RuntimeSupervisor::log_path(const std::string& name) const {
  return RuntimeLog::path_for(cfg_->log_path, name);
}

std::optional<ExeFingerprint> RuntimeSupervisor::last_fingerprint(const std::string& name) {
  if (auto it = last_fp_.find(name); it != last_fp_.end()) return it->second;
  LaunchQuery q;
  q.host_id = d_.host_id;
  q.name = name;
  auto rows = d_.store.launches(q);
  if (!rows || rows->empty()) return std::nullopt;
  return last_fp_[name] = fingerprint_of(rows->back());
}

int64_t RuntimeSupervisor::stop_budget_ms() const {
  int64_t most = 0;
  for (const auto& c : cfg_->candidates)
    if (c.launch) most = std::max(most, c.launch->stop_timeout_ms);
  for (const auto& [name, r] : runtimes_)
    if (r->cfg->launch) most = std::max(most, r->cfg->launch->stop_timeout_ms);
  return runtime_stop_budget_ms(most);
}

// ============================================================== start
void RuntimeSupervisor::start(const CandidateSnapshot& c, std::function<void(Result<RuntimeUp>)> ready) {
  const std::string name = c->name;
  if (stopping_) {
    later([ready] { ready(make_error("soakd is stopping")); });
    return;
  }
  if (!c->launch) {
    later([ready, name] { ready(make_error(name + " has no launch block: soakd never starts it")); });
    return;
  }
  auto it = runtimes_.find(name);
  if (!recovered_ || (it != runtimes_.end() && it->second->state == State::Stopping)) {
    queued_[name].push_back(Queued{c, std::move(ready)});  // after the recovery, or once it has stopped
    return;
  }
  if (it != runtimes_.end()) {
    Runtime& r = *it->second;
    if (r.state == State::Starting) {
      r.waiters.push_back(std::move(ready));
    } else {
      RuntimeUp up{r.record.pid, r.origin};
      later([ready, up] { ready(up); });
    }
    return;
  }
  launch(c, std::move(ready));
}

void RuntimeSupervisor::run_queued(const std::string& name) {
  auto it = queued_.find(name);
  if (it == queued_.end() || !recovered_) return;
  if (auto r = runtimes_.find(name); r != runtimes_.end() && r->second->state == State::Stopping) return;
  std::vector<Queued> q = std::move(it->second);
  queued_.erase(it);
  for (auto& item : q) start(item.cfg, std::move(item.ready));
}

void RuntimeSupervisor::launch(const CandidateSnapshot& c, std::function<void(Result<RuntimeUp>)> ready) {
  auto r = std::make_unique<Runtime>();
  r->name = c->name;
  r->cfg = c;
  r->gen = ++gen_;
  r->log = std::make_unique<RuntimeLog>(log_path(c->name));
  auto pid = spawn(*r, *c);
  if (!pid) {
    const std::string why = pid.message();
    d_.log->warn("{}: cannot start its runtime: {}", c->name, why);
    later([ready, why] { ready(make_error(why)); });
    return;
  }
  r->waiters.push_back(std::move(ready));
  Runtime& ref = *r;
  const std::string name = c->name;
  const uint64_t gen = r->gen;
  runtimes_[name] = std::move(r);
  keep_house();
  ref.poll = std::make_unique<Timer>(d_.loop);
  ref.poll->start(static_cast<uint64_t>(kReadyPollMs) / 5, static_cast<uint64_t>(kReadyPollMs),
                  [this, name, gen] { poll_health(name, gen); });
  ref.deadline = std::make_unique<Timer>(d_.loop);
  ref.deadline->start(static_cast<uint64_t>(c->launch->ready_timeout_ms), 0, [this, name, gen] {
    auto it = runtimes_.find(name);
    if (it == runtimes_.end() || it->second->gen != gen || it->second->state != State::Starting) return;
    Runtime& r = *it->second;
    fail_start(r, "not ready within " + format_duration(r.cfg->launch->ready_timeout_ms) +
                      " (health: " + (r.last_health.empty() ? std::string("no answer yet") : r.last_health) + ")");
  });
}

Result<int> RuntimeSupervisor::spawn(Runtime& r, const CandidateConfig& c) {
  const LaunchSpec& s = *c.launch;
  const std::string path = path_env(s);
  const std::string& argv0 = s.argv.front().text;
  auto file = resolve_executable(argv0, path);
  if (!file) return make_error("cannot run " + argv0 + ": " + file.message());
  auto known = last_fingerprint(c.name);
  auto fp = fingerprint_executable(argv0, path, known ? &*known : nullptr);
  if (!fp) return make_error("cannot run " + argv0 + ": " + fp.message());
  if (!s.cwd.empty() && !std::filesystem::is_directory(s.cwd))
    return make_error("launch.cwd " + s.cwd + " is not a directory");

  // Never touch what soakd did not start: a port already taken blocks, and nothing is signalled.
  if (auto port = local_port_of(c.base_url)) {
    auto holder = sampler_.find_listening_pid(*port);
    if (!holder) return make_error("port " + std::to_string(*port) + " cannot be checked: " + holder.message());
    if (*holder) {
      ProcessSample p = sampler_.sample_process(**holder, 0);
      return make_error("port " + std::to_string(*port) + " is taken by pid " + std::to_string(**holder) + " (" +
                        (p.name.empty() ? std::string("name unknown") : p.name) +
                        "), a process soakd did not start; it is left alone: stop it, or give this candidate "
                        "another port");
    }
  }

  std::vector<std::string> argv, env;
  for (size_t i = 0; i < s.argv.size(); ++i) {
    const LaunchValue& a = s.argv[i];
    if (a.from_env.empty()) {
      argv.push_back(a.text);
      continue;
    }
    auto v = env_(a.from_env);
    if (!v)
      return make_error("launch.argv[" + std::to_string(i) + "] comes from " + a.from_env +
                        ", which soakd's environment does not have");
    argv.push_back(*v);
  }
  for (const auto& [k, v] : s.env) {
    if (v.from_env.empty()) {
      env.push_back(k + "=" + v.text);
      continue;
    }
    auto value = env_(v.from_env);
    if (!value)
      return make_error("launch.env." + k + " comes from " + v.from_env + ", which soakd's environment does not have");
    env.push_back(k + "=" + *value);
  }
  for (std::string_view n : kInheritedEnv) {
    const std::string name(n);
    if (s.env.count(name)) continue;
    if (auto v = env_(name)) env.push_back(name + "=" + *v);
  }

  r.log->mark("---- soakd: starting " + joined(display_argv(s)) + " ----");
  SOAK_TRY_ASSIGN(const int fd, r.log->open_for_child());
  const std::string name = c.name;
  const uint64_t gen = r.gen;
  auto pid = launcher_.spawn(SpawnSpec{*file, argv, env, s.cwd, fd},
                             [this, name, gen](const ChildExit& e) { on_child_exit(name, gen, e); });
  ::close(fd);
  if (!pid) return pid.error();

  const int64_t now = d_.clock.wall_ms();
  RuntimeLaunch& rec = r.record;
  rec.host_id = d_.host_id;
  rec.name = c.name;
  rec.pid = *pid;
  rec.start_time = sampler_.sample_process(*pid, now).start_time;
  rec.executable = fp->path;
  rec.exe_size = fp->size;
  rec.exe_mtime_ms = fp->mtime_ms;
  rec.exe_hash = fp->hash;
  rec.argv_json = argv_json(s);
  rec.started_ms = now;
  rec.state = LaunchState::Running;
  if (auto id = d_.store.insert_launch(rec))
    rec.id = *id;
  else
    d_.log->error("{}: cannot record its launch: {}", c.name, id.message());
  last_fp_[c.name] = *fp;
  disk_fp_[c.name] = *fp;
  d_.log->info("{}: started pid {}: {} (output to {})", c.name, *pid, joined(display_argv(s)), r.log->path());
  return *pid;
}

void RuntimeSupervisor::poll_health(const std::string& name, uint64_t gen) {
  auto it = runtimes_.find(name);
  if (it == runtimes_.end() || it->second->gen != gen) return;
  Runtime& r = *it->second;
  if (r.state != State::Starting || r.check_in_flight) return;
  r.check_in_flight = true;
  ready_(*r.cfg, [this, alive = std::weak_ptr<bool>(alive_), name, gen](bool ok, std::string detail) {
    if (alive.expired()) return;  // an answer after the supervisor went (the engine outlives it)
    auto it = runtimes_.find(name);
    if (it == runtimes_.end() || it->second->gen != gen) return;
    Runtime& r = *it->second;
    r.check_in_flight = false;
    if (r.state != State::Starting) return;
    if (ok)
      became_ready(r);
    else
      r.last_health = std::move(detail);
  });
}

void RuntimeSupervisor::became_ready(Runtime& r) {
  r.state = State::Up;
  if (r.poll) r.poll->stop();
  if (r.deadline) r.deadline->stop();
  r.record.ready_ms = d_.clock.wall_ms();
  save(r.record);
  d_.log->info("{}: runtime pid {} ready after {}", r.name, r.record.pid,
               format_duration(*r.record.ready_ms - r.record.started_ms));
  auto waiters = std::move(r.waiters);
  r.waiters.clear();
  const RuntimeUp up{r.record.pid, r.origin};
  for (auto& w : waiters) w(up);
}

void RuntimeSupervisor::fail_start(Runtime& r, const std::string& why) {
  const std::string msg = with_tail(why, *r.log);
  d_.log->warn("{}: runtime pid {} {}", r.name, r.record.pid, msg);
  auto waiters = std::move(r.waiters);
  r.waiters.clear();
  stop(r.name, why);
  for (auto& w : waiters) w(make_error(msg));
}

// ============================================================== ends
void RuntimeSupervisor::on_child_exit(const std::string& name, uint64_t gen, const ChildExit& e) {
  auto it = runtimes_.find(name);
  if (it == runtimes_.end() || it->second->gen != gen) return;
  std::unique_ptr<Runtime> r = std::move(it->second);
  runtimes_.erase(it);
  if (r->state == State::Stopping) {
    const std::string why = r->stop_why;
    ended(std::move(r), LaunchState::Stopped, e, why);
  } else if (r->state == State::Starting) {
    const std::string msg = with_tail("exited before it was ready: " + e.describe(), *r->log);
    auto waiters = std::move(r->waiters);
    ended(std::move(r), LaunchState::Exited, e, "exited before it was ready");
    for (auto& w : waiters) w(make_error(msg));
  } else {
    RuntimeExit x{r->record.pid, e.describe(), e.exit_status, e.term_signal, r->log->tail()};
    ended(std::move(r), LaunchState::Exited, e, "ended on its own: " + x.exit);
    if (on_exit_) on_exit_(name, x);
  }
  run_queued(name);
  maybe_stopped();
}

void RuntimeSupervisor::ended(std::unique_ptr<Runtime> r, LaunchState state, const ChildExit& e,
                              const std::string& detail) {
  RuntimeLaunch& rec = r->record;
  rec.state = state;
  rec.ended_ms = d_.clock.wall_ms();
  rec.exit_status = e.exit_status;
  rec.term_signal = e.term_signal;
  rec.log_tail = r->log->tail();
  rec.detail = detail;
  save(rec);
  if (state == LaunchState::Exited)
    d_.log->warn("{}: runtime pid {} {}", r->name, rec.pid, e.describe());
  else
    d_.log->info("{}: runtime pid {} stopped ({}): {}", r->name, rec.pid, detail, e.describe());
}

void RuntimeSupervisor::stop(const std::string& name, const std::string& why) {
  if (auto q = queued_.find(name); q != queued_.end()) {
    std::vector<Queued> items = std::move(q->second);
    queued_.erase(q);
    for (auto& item : items) later([ready = std::move(item.ready), why] { ready(make_error("stopped: " + why)); });
  }
  auto it = runtimes_.find(name);
  if (it == runtimes_.end() || it->second->state == State::Stopping) return;
  Runtime& r = *it->second;
  auto waiters = std::move(r.waiters);
  r.waiters.clear();
  for (auto& w : waiters) later([w, why] { w(make_error("stopped before it was ready: " + why)); });
  r.state = State::Stopping;
  r.stop_why = why;
  if (r.poll) r.poll->stop();
  if (r.deadline) r.deadline->stop();
  const int64_t timeout = r.cfg->launch ? r.cfg->launch->stop_timeout_ms : kDefaultStopTimeoutMs;
  d_.log->info("{}: stopping runtime pid {} ({})", name, r.record.pid, why);
  if (r.origin == RuntimeOrigin::Launched) {  // its exit comes from the Launcher; an adopted one is polled
    launcher_.stop(r.record.pid, timeout);
    return;
  }
  const int pid = r.record.pid;
  const auto start_time = r.record.start_time;
  const uint64_t gen = r.gen;
  launcher_.stop_foreign(
      pid, [this, pid, start_time] { return same_process(pid, start_time); }, timeout,
      [this, name, gen](ForeignStop how) {
        auto it = runtimes_.find(name);
        if (it == runtimes_.end() || it->second->gen != gen) return;
        std::unique_ptr<Runtime> r = std::move(it->second);
        runtimes_.erase(it);
        const std::string detail = r->stop_why + " (" + std::string(describe(how)) + ")";
        ended(std::move(r), LaunchState::Stopped, ChildExit{}, detail);
        run_queued(name);
        maybe_stopped();
      });
}

void RuntimeSupervisor::link(const std::string& name, int64_t candidate_id) {
  if (auto it = runtimes_.find(name); it != runtimes_.end()) {
    if (it->second->record.candidate_id == candidate_id) return;
    it->second->record.candidate_id = candidate_id;
    save(it->second->record);
    return;
  }
  // Not running (it failed to start): its last launch belongs to this row.
  LaunchQuery q;
  q.host_id = d_.host_id;
  q.name = name;
  auto rows = d_.store.launches(q);
  if (!rows || rows->empty() || rows->back().candidate_id) return;
  RuntimeLaunch rec = rows->back();
  rec.candidate_id = candidate_id;
  save(rec);
}

std::string RuntimeSupervisor::executable_change(const CandidateConfig& c) {
  if (!c.launch) return "";
  auto last = last_fingerprint(c.name);
  if (!last) return "";
  auto disk = disk_fp_.find(c.name);
  const ExeFingerprint* known = disk != disk_fp_.end() ? &disk->second : &*last;
  auto now = fingerprint_executable(c.launch->argv.front().text, path_env(*c.launch), known);
  if (!now) {
    if (fp_errors_[c.name] != now.message()) d_.log->warn("{}: cannot check its executable: {}", c.name, now.message());
    fp_errors_[c.name] = now.message();
    return "";
  }
  fp_errors_.erase(c.name);
  disk_fp_[c.name] = *now;
  return describe_change(*last, *now);
}

Result<PreviousBuild> RuntimeSupervisor::previous_build(const CandidateConfig& c, int64_t previous_candidate_id) {
  LaunchQuery q;
  q.host_id = d_.host_id;
  q.name = c.name;  // its own launches, not a runtime started beside one of its canaries
  q.candidate_id = previous_candidate_id;
  auto rows = d_.store.launches(q);
  if (!rows) return make_error("its launches cannot be read: " + rows.message());
  const auto fingerprint = [](const std::string& path) { return fingerprint_executable(path, ""); };
  SOAK_TRY_ASSIGN(auto program, previous_program(*rows, last_fingerprint(c.name), fingerprint));
  SOAK_TRY_ASSIGN(auto port, free_loopback_port());
  return PreviousBuild{program, port};
}

}  // namespace soak
