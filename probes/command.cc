#include "probes/command.h"

#include <signal.h>

#include <algorithm>
#include <utility>

#include "core/uv_util.h"
#include "probes/engine_exchange.h"
#include "probes/engine_rows.h"

namespace soak::probes {

namespace {
// After the command exited, how long its pipes may stay open (a grandchild
// holding them) before what was read is taken as the output.
constexpr uint64_t kPipeDrainMs = 500;

// The command's input and the request writing it: freed by the write's own
// callback, which runs even when the pipe is closed first (UV_ECANCELED).
struct InputWrite {
  uv_write_t req{};
  std::string text;
};
}  // namespace

std::string describe_end(const std::string& program, const CommandEnd& end, int64_t timeout_ms) {
  switch (end.kind) {
    case CommandEndKind::NotStarted: return end.error;
    case CommandEndKind::TimedOut:
      return program + " did not finish within " + std::to_string(timeout_ms) + " ms (killed)";
    case CommandEndKind::Cancelled: return program + " was cancelled";
    case CommandEndKind::Exited:
      if (end.term_signal != 0) return program + " was killed by signal " + std::to_string(end.term_signal);
      return program + " exited with status " + std::to_string(end.exit_status);
  }
  return program;
}

struct CommandRun::Impl {
  Impl(uv_loop_t* l, Deferrer& d, CommandSpec s, Ended cb)
      : loop(l), defer(d), spec(std::move(s)), ended(std::move(cb)) {}

  uv_loop_t* loop;
  Deferrer& defer;
  CommandSpec spec;
  Ended ended;
  UvHandle<uv_process_t> proc;
  UvHandle<uv_pipe_t> in, out, err;
  UvHandle<uv_timer_t> timer;
  std::string output;
  int open_pipes = 0;
  bool running = false, exited = false, timed_out = false, cancelled = false, finished = false;
  int64_t exit_status = 0;
  int term_signal = 0;

  void start() {
    if (spec.argv.empty() || spec.argv[0].empty()) return fail_later("no command configured");
    uv_timer_init(loop, timer.get());
    timer.mark_initialized();
    timer.get()->data = this;
    const bool with_input = !spec.input.empty();
    for (auto* p : {&in, &out, &err}) {
      if (p == &in && !with_input) continue;
      uv_pipe_init(loop, p->get(), 0);
      p->mark_initialized();
      p->get()->data = this;
    }
    uv_stdio_container_t stdio[3];
    if (with_input) {
      stdio[0].flags = static_cast<uv_stdio_flags>(UV_CREATE_PIPE | UV_READABLE_PIPE);
      stdio[0].data.stream = reinterpret_cast<uv_stream_t*>(in.get());
    } else {
      stdio[0].flags = UV_IGNORE;
    }
    stdio[1].flags = static_cast<uv_stdio_flags>(UV_CREATE_PIPE | UV_WRITABLE_PIPE);
    stdio[1].data.stream = reinterpret_cast<uv_stream_t*>(out.get());
    stdio[2].flags = static_cast<uv_stdio_flags>(UV_CREATE_PIPE | UV_WRITABLE_PIPE);
    stdio[2].data.stream = reinterpret_cast<uv_stream_t*>(err.get());
    std::vector<char*> args;
    for (auto& a : spec.argv) args.push_back(a.data());
    args.push_back(nullptr);
    std::vector<char*> env;
    if (spec.env) {
      for (auto& e : *spec.env) env.push_back(e.data());
      env.push_back(nullptr);
    }
    uv_process_options_t o{};
    o.file = spec.argv[0].c_str();
    o.args = args.data();
    o.env = spec.env ? env.data() : nullptr;
    o.stdio_count = 3;
    o.stdio = stdio;
    o.exit_cb = &Impl::on_exit;
    o.flags = UV_PROCESS_DETACHED;  // its own session and process group (kill)
    proc.get()->data = this;
    const int rc = uv_spawn(loop, proc.get(), &o);
    proc.mark_initialized();  // libuv: close the handle even when spawning failed
    if (rc != 0) return fail_later("cannot run " + spec.argv[0] + ": " + uv_strerror(rc));
    running = true;
    for (auto* p : {&out, &err}) {
      if (uv_read_start(reinterpret_cast<uv_stream_t*>(p->get()), &Impl::on_alloc, &Impl::on_read) == 0) ++open_pipes;
    }
    if (with_input) write_input();
    uv_timer_start(timer.get(), &Impl::on_timeout, static_cast<uint64_t>(spec.timeout_ms), 0);
  }

  // The input, then end-of-file: the write end is shut once the write is done.
  void write_input() {
    auto* w = new InputWrite;
    w->text = spec.input;
    uv_buf_t buf = uv_buf_init(w->text.data(), static_cast<unsigned>(w->text.size()));
    auto* stream = reinterpret_cast<uv_stream_t*>(in.get());
    if (uv_write(&w->req, stream, &buf, 1, [](uv_write_t* r, int) { delete reinterpret_cast<InputWrite*>(r); }) != 0) {
      delete w;
      return;
    }
    auto* sd = new uv_shutdown_t;
    if (uv_shutdown(sd, stream, [](uv_shutdown_t* r, int) { delete r; }) != 0) delete sd;
  }

  void fail_later(std::string why) {
    finished = true;
    CommandEnd e;
    e.error = std::move(why);
    defer.post([cb = ended, e = std::move(e)] { cb(e); });
  }

  // The command and everything it started: a script that runs curl without
  // `exec` would otherwise leave curl behind at every bound. The command
  // leads a process group of its own (UV_PROCESS_DETACHED: setsid), and the
  // group is signalled only while the leader lives, so its id is still ours.
  void kill() {
    if (!running || exited) return;
    uv_kill(-proc.get()->pid, SIGKILL);
    uv_process_kill(proc.get(), SIGKILL);
  }

  static void on_alloc(uv_handle_t*, size_t suggested, uv_buf_t* buf) {
    buf->base = new char[suggested];
    buf->len = suggested;
  }

  static void on_read(uv_stream_t* s, ssize_t n, const uv_buf_t* buf) {
    auto* self = static_cast<Impl*>(s->data);
    if (n > 0 && self->output.size() < kMaxCommandOutput)
      self->output.append(buf->base, std::min(static_cast<size_t>(n), kMaxCommandOutput - self->output.size()));
    delete[] buf->base;
    if (n < 0) {
      uv_read_stop(s);
      --self->open_pipes;
      self->maybe_finish();
    }
  }

  static void on_exit(uv_process_t* p, int64_t status, int sig) {
    auto* self = static_cast<Impl*>(p->data);
    self->exited = true;
    self->exit_status = status;
    self->term_signal = sig;
    if (self->open_pipes > 0) uv_timer_start(self->timer.get(), &Impl::on_drain, kPipeDrainMs, 0);
    self->maybe_finish();
  }

  static void on_timeout(uv_timer_t* t) {
    auto* self = static_cast<Impl*>(t->data);
    self->timed_out = true;
    self->kill();
  }

  static void on_drain(uv_timer_t* t) {
    auto* self = static_cast<Impl*>(t->data);
    for (auto* pipe : {&self->out, &self->err}) uv_read_stop(reinterpret_cast<uv_stream_t*>(pipe->get()));
    self->open_pipes = 0;
    self->maybe_finish();
  }

  void maybe_finish() {
    if (finished || !exited || open_pipes > 0) return;
    finished = true;
    uv_timer_stop(timer.get());
    CommandEnd e;
    e.kind = cancelled ? CommandEndKind::Cancelled : timed_out ? CommandEndKind::TimedOut : CommandEndKind::Exited;
    e.exit_status = exit_status;
    e.term_signal = term_signal;
    e.output = std::move(output);
    ended(std::move(e));
  }
};

CommandRun::CommandRun(uv_loop_t* loop, Deferrer& defer, CommandSpec spec, Ended ended)
    : impl_(std::make_unique<Impl>(loop, defer, std::move(spec), std::move(ended))) {}

// The version command's shape: its output on success, else why not (with an
// excerpt of what it printed).
CommandRun::CommandRun(uv_loop_t* loop, Deferrer& defer, std::vector<std::string> argv, int64_t timeout_ms, Done done)
    : CommandRun(loop, defer, CommandSpec{argv, timeout_ms, {}, std::nullopt},
                 [done = std::move(done), timeout_ms, cmd = argv.empty() ? std::string() : argv[0]](CommandEnd e) {
                   if (e.ok()) return done(std::move(e.output));
                   if (e.kind == CommandEndKind::Cancelled) return done(make_error("cancelled"));
                   std::string why = describe_end(cmd, e, timeout_ms);
                   if (e.kind == CommandEndKind::Exited && !e.output.empty()) why += ": " + failure_excerpt(e.output);
                   done(make_error(why));
                 }) {}

CommandRun::~CommandRun() { impl_->kill(); }

void CommandRun::start() { impl_->start(); }

void CommandRun::cancel() {
  impl_->cancelled = true;
  impl_->kill();
}

}  // namespace soak::probes
