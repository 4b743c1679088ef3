#include "managed/launcher.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

namespace soak {

namespace {

struct SignalName {
  int sig;
  const char* name;
};
constexpr SignalName kSignals[] = {
    {SIGHUP, "SIGHUP"},   {SIGINT, "SIGINT"},   {SIGQUIT, "SIGQUIT"}, {SIGILL, "SIGILL"},   {SIGTRAP, "SIGTRAP"},
    {SIGABRT, "SIGABRT"}, {SIGBUS, "SIGBUS"},   {SIGFPE, "SIGFPE"},   {SIGKILL, "SIGKILL"}, {SIGUSR1, "SIGUSR1"},
    {SIGSEGV, "SIGSEGV"}, {SIGUSR2, "SIGUSR2"}, {SIGPIPE, "SIGPIPE"}, {SIGALRM, "SIGALRM"}, {SIGTERM, "SIGTERM"},
    {SIGSYS, "SIGSYS"},   {SIGXCPU, "SIGXCPU"}, {SIGXFSZ, "SIGXFSZ"},
};

}  // namespace

std::string signal_name(int sig) {
  for (const auto& s : kSignals)
    if (s.sig == sig) return s.name;
  return "signal " + std::to_string(sig);
}

std::string ChildExit::describe() const {
  if (term_signal) return "killed by " + signal_name(*term_signal) + " (signal " + std::to_string(*term_signal) + ")";
  if (exit_status) return "exited with status " + std::to_string(*exit_status);
  return "ended (exit status unknown)";
}

std::string_view describe(ForeignStop s) {
  switch (s) {
    case ForeignStop::AlreadyGone: return "already gone";
    case ForeignStop::Terminated: return "ended after SIGTERM";
    case ForeignStop::Killed: return "ended after SIGKILL";
    case ForeignStop::Lingering: return "still there after SIGKILL";
  }
  return "?";
}

bool signal_group(int pid, int sig) {
  if (pid <= 0) return false;
  if (::getpgid(pid) == pid) return ::kill(-pid, sig) == 0;
  return ::kill(pid, sig) == 0;
}

Launcher::Launcher(uv_loop_t* loop) : loop_(loop) {}

Launcher::~Launcher() {
  // Nobody will watch these any more: end them rather than leave them unowned.
  for (auto& [pid, c] : children_) signal_group(pid, SIGKILL);
  children_.clear();
  foreign_.clear();
}

Result<int> Launcher::spawn(const SpawnSpec& s, std::function<void(const ChildExit&)> on_exit) {
  if (s.argv.empty()) return make_error("no program to run");
  auto child = std::make_unique<Child>();
  std::vector<std::string> argv = s.argv, env = s.env;
  std::vector<char*> args, envp;
  for (auto& a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  uv_stdio_container_t stdio[3];
  stdio[0].flags = UV_IGNORE;  // /dev/null
  for (int i = 1; i <= 2; ++i) {
    stdio[i].flags = s.output_fd >= 0 ? UV_INHERIT_FD : UV_IGNORE;
    stdio[i].data.fd = s.output_fd;
  }
  uv_process_options_t o{};
  o.file = s.file.c_str();
  o.args = args.data();
  o.env = envp.data();
  o.cwd = s.cwd.empty() ? nullptr : s.cwd.c_str();
  o.flags = UV_PROCESS_DETACHED;  // setsid(): a process group (and session) of its own
  o.stdio_count = 3;
  o.stdio = stdio;
  o.exit_cb = &Launcher::on_child_exit;
  child->proc.get()->data = this;
  const int rc = uv_spawn(loop_, child->proc.get(), &o);
  child->proc.mark_initialized();  // initialised by uv_spawn even when it fails, and closed either way
  if (rc != 0) return make_error("cannot start " + s.file + ": " + uv_strerror(rc));
  child->pid = child->proc.get()->pid;
  child->on_exit = std::move(on_exit);
  const int pid = child->pid;
  children_[pid] = std::move(child);
  return pid;
}

void Launcher::on_child_exit(uv_process_t* p, int64_t exit_status, int term_signal) {
  auto* self = static_cast<Launcher*>(p->data);
  auto it = self->children_.find(p->pid);
  if (it == self->children_.end()) return;
  std::unique_ptr<Child> c = std::move(it->second);
  self->children_.erase(it);
  ChildExit e;
  if (term_signal != 0)
    e.term_signal = term_signal;
  else
    e.exit_status = static_cast<int>(exit_status);
  auto cb = std::move(c->on_exit);
  c.reset();  // closes the handle and the kill timer
  if (cb) cb(e);
}

void Launcher::stop(int pid, int64_t timeout_ms) {
  auto it = children_.find(pid);
  if (it == children_.end()) return;
  Child& c = *it->second;
  signal_group(pid, SIGTERM);
  if (c.kill_timer) return;  // already stopping: keep the first deadline
  c.kill_timer = std::make_unique<Timer>(loop_);
  c.kill_timer->start(static_cast<uint64_t>(std::max<int64_t>(0, timeout_ms)), 0, [this, pid] {
    if (children_.count(pid)) signal_group(pid, SIGKILL);  // not reaped yet: still ours
  });
}

void Launcher::release(int pid) { children_.erase(pid); }

void Launcher::stop_foreign(int pid, std::function<bool()> still_same, int64_t timeout_ms,
                            std::function<void(ForeignStop)> done) {
  const uint64_t id = next_foreign_++;
  auto f = std::make_unique<Foreign>();
  f->owner = this;
  f->id = id;
  f->pid = pid;
  f->still_same = std::move(still_same);
  f->timeout_ms = timeout_ms;
  f->done = std::move(done);
  uv_timer_init(loop_, f->timer.get());
  f->timer.mark_initialized();
  f->timer.get()->data = f.get();
  f->signalled = f->still_same() && signal_group(pid, SIGTERM);
  // Checked on the loop, the first time at once: `done` never fires inside this call.
  uv_timer_start(
      f->timer.get(),
      [](uv_timer_t* h) {
        auto* self = static_cast<Foreign*>(h->data);
        self->owner->foreign_tick(self->id);  // may destroy *self
      },
      0, static_cast<uint64_t>(kForeignPollMs));
  foreign_[id] = std::move(f);
}

void Launcher::foreign_tick(uint64_t id) {
  auto it = foreign_.find(id);
  if (it == foreign_.end()) return;
  Foreign& f = *it->second;
  const int64_t elapsed = f.ticks++ * kForeignPollMs;
  if (!f.still_same()) {
    finish_foreign(id, f.killed      ? ForeignStop::Killed
                       : f.signalled ? ForeignStop::Terminated
                                     : ForeignStop::AlreadyGone);
    return;
  }
  if (!f.killed && elapsed >= f.timeout_ms) {
    f.killed = true;
    signal_group(f.pid, SIGKILL);
  } else if (f.killed && elapsed >= f.timeout_ms + kAfterKillWaitMs) {
    finish_foreign(id, ForeignStop::Lingering);
  }
}

void Launcher::finish_foreign(uint64_t id, ForeignStop how) {
  auto it = foreign_.find(id);
  if (it == foreign_.end()) return;
  auto done = std::move(it->second->done);
  foreign_.erase(it);  // closes its timer (allowed from the timer's own callback)
  if (done) done(how);
}

}  // namespace soak
