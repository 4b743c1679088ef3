#include "probes/probe_build.h"

#include <signal.h>

#include <algorithm>
#include <utility>

#include "core/uv_util.h"
#include "probes/engine_rows.h"
#include "probes/requests.h"
#include "probes/served_state.h"

namespace soak::probes {

namespace {
constexpr size_t kMaxCommandOutput = 64 * 1024;
// After the command exited, how long its pipes may stay open (a grandchild
// holding them) before what was read is taken as the output.
constexpr uint64_t kPipeDrainMs = 500;
}  // namespace

Result<std::string> build_from_command_output(const Runtime& runtime, std::string_view output) {
  if (runtime.read_version_output)
    if (auto b = runtime.read_version_output(output)) return *b;
  return build_from_first_line(output);
}

// ---------------------------------------------------------------- CommandRun

struct CommandRun::Impl {
  Impl(uv_loop_t* l, Deferrer& d, std::vector<std::string> a, int64_t t, Done cb)
      : loop(l), defer(d), argv(std::move(a)), timeout_ms(t), done(std::move(cb)) {}

  uv_loop_t* loop;
  Deferrer& defer;
  std::vector<std::string> argv;
  int64_t timeout_ms;
  Done done;
  UvHandle<uv_process_t> proc;
  UvHandle<uv_pipe_t> out, err;
  UvHandle<uv_timer_t> timer;
  std::string output;
  int open_pipes = 0;
  bool running = false, exited = false, timed_out = false, cancelled = false, finished = false;
  int64_t exit_status = 0;
  int term_signal = 0;

  void start() {
    if (argv.empty()) return fail_later("no version command configured");
    uv_timer_init(loop, timer.get());
    timer.mark_initialized();
    timer.get()->data = this;
    for (auto* p : {&out, &err}) {
      uv_pipe_init(loop, p->get(), 0);
      p->mark_initialized();
      p->get()->data = this;
    }
    uv_stdio_container_t stdio[3];
    stdio[0].flags = UV_IGNORE;
    stdio[1].flags = static_cast<uv_stdio_flags>(UV_CREATE_PIPE | UV_WRITABLE_PIPE);
    stdio[1].data.stream = reinterpret_cast<uv_stream_t*>(out.get());
    stdio[2].flags = static_cast<uv_stdio_flags>(UV_CREATE_PIPE | UV_WRITABLE_PIPE);
    stdio[2].data.stream = reinterpret_cast<uv_stream_t*>(err.get());
    std::vector<char*> args;
    for (auto& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    uv_process_options_t o{};
    o.file = argv[0].c_str();
    o.args = args.data();
    o.stdio_count = 3;
    o.stdio = stdio;
    o.exit_cb = &Impl::on_exit;
    proc.get()->data = this;
    const int rc = uv_spawn(loop, proc.get(), &o);
    proc.mark_initialized();  // libuv: close the handle even when spawning failed
    if (rc != 0) return fail_later("cannot run " + argv[0] + ": " + uv_strerror(rc));
    running = true;
    for (auto* p : {&out, &err}) {
      if (uv_read_start(reinterpret_cast<uv_stream_t*>(p->get()), &Impl::on_alloc, &Impl::on_read) == 0) ++open_pipes;
    }
    uv_timer_start(timer.get(), &Impl::on_timeout, static_cast<uint64_t>(timeout_ms), 0);
  }

  void fail_later(std::string why) {
    finished = true;
    defer.post([cb = done, why = std::move(why)] { cb(make_error(why)); });
  }

  void kill() {
    if (running && !exited) uv_process_kill(proc.get(), SIGKILL);
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
    const std::string cmd = argv[0];
    if (cancelled) return done(make_error("cancelled"));
    if (timed_out) return done(make_error(cmd + " did not finish within " + std::to_string(timeout_ms) + " ms"));
    if (exit_status != 0 || term_signal != 0) {
      std::string why = cmd + (term_signal ? " was killed by signal " + std::to_string(term_signal)
                                           : " exited with status " + std::to_string(exit_status));
      if (!output.empty()) why += ": " + failure_excerpt(output);
      return done(make_error(why));
    }
    done(output);
  }
};

CommandRun::CommandRun(uv_loop_t* loop, Deferrer& defer, std::vector<std::string> argv, int64_t timeout_ms, Done done)
    : impl_(std::make_unique<Impl>(loop, defer, std::move(argv), timeout_ms, std::move(done))) {}

CommandRun::~CommandRun() { impl_->kill(); }

void CommandRun::start() { impl_->start(); }

void CommandRun::cancel() {
  impl_->cancelled = true;
  impl_->kill();
}

// ---------------------------------------------------------------- BuildRead

BuildRead::BuildRead(EngineIo& io, const EngineOptions& opts, CandidateConfig cand, const Runtime& runtime, Done done)
    : io_(io), opts_(opts), cand_(std::move(cand)), rt_(runtime), done_(std::move(done)) {}

BuildRead::~BuildRead() = default;

void BuildRead::start() {
  switch (cand_.build.source) {
    case BuildSource::Fixed:
      io_.defer.post([this] { with_fingerprint(BuildIdentity{cand_.build.fixed, std::nullopt, {}}); });
      return;
    case BuildSource::Command:
      command_ = std::make_unique<CommandRun>(io_.loop, io_.defer, cand_.build.command,
                                              opts_.version_command_timeout_ms, [this](Result<std::string> out) {
                                                if (!out) return finish(out.error());
                                                auto b = build_from_command_output(rt_, *out);
                                                if (!b) return finish(b.error());
                                                with_fingerprint(BuildIdentity{*b, std::nullopt, {}});
                                              });
      command_->start();
      return;
    case BuildSource::Http: over_http(); return;
  }
}

void BuildRead::over_http() {
  const Runtime& t = rt_;
  ExchangeSpec spec;
  switch (t.build_ask) {
    case BuildAsk::None:
      io_.defer.post([this] {
        finish(make_error(std::string(to_string(cand_.runtime)) +
                          " tells no build over HTTP: set build.command or build.fixed"));
      });
      return;
    case BuildAsk::ChatAnswer: {
      // These name their build only inside an answer: ask for a short one.
      ChatRequestOptions o;
      o.model = cand_.model;
      o.sampling = cand_.settings.sampling;
      o.streaming = Streaming::Off;
      spec.method = "POST";
      spec.path = t.build ? std::string(t.build->path) : std::string(kChatCompletionsPath);
      spec.body = marker_request(o, make_marker(opts_.fixture_seed)).body;
      break;
    }
    case BuildAsk::Route:
      spec.method = std::string(t.build->method);
      spec.path = std::string(t.build->path);
      break;
  }
  exchange_ = std::make_unique<Exchange>(io_, cand_, spec, [this, path = spec.path](const ExchangeResult& x) {
    Verdict v = classify_plain(x.end, x.transfer);
    if (v.outcome != Outcome::Clean) return finish(make_error(path + ": " + v.detail));
    auto b = parse_build(rt_, x.transfer.body);
    if (!b) return finish(make_error(path + ": " + b.message()));
    BuildIdentity r{*b, std::nullopt, {}};
    if (rt_.build_model) r.model = rt_.build_model(x.transfer.body);
    with_fingerprint(std::move(r));
  });
  exchange_->start();
}

void BuildRead::with_fingerprint(BuildIdentity b) {
  got_ = std::move(b);
  routes_ = rt_.served;
  if (rt_.served_from_argv) {
    served_ = served_by_argv(rt_, cand_, opts_.runtime_argv);
    if (served_.proof == IdentityProof::ProcessArgv) got_.fingerprint = served_.fingerprint.to_json();
  }
  next_served();
}

void BuildRead::next_served() {
  if (served_i_ >= routes_.size()) {
    // Only a runtime that names the model it serves has a fingerprint: an
    // Ollama tag not loaded right now (it loads on demand) says nothing yet.
    bool named = false;
    for (const auto& id : served_.loaded) named = named || id == cand_.model;
    if (!routes_.empty() && named) {
      // What only the argv says (llama-server's KV cache type and -n).
      if (rt_.fingerprint_from_argv) {
        if (RuntimeArgv a = runtime_argv_of(cand_, opts_.runtime_argv); a.error.empty())
          rt_.fingerprint_from_argv(a.argv, served_.fingerprint);
      }
      got_.fingerprint = served_.fingerprint.to_json();
    }
    return finish(std::move(got_));
  }
  const HttpRoute r = routes_[served_i_++].route;
  ExchangeSpec spec;
  spec.method = std::string(r.method);
  spec.path = std::string(r.path);
  served_exchanges_.push_back(
      std::make_unique<Exchange>(io_, cand_, spec, [this, path = spec.path](const ExchangeResult& x) {
        // The build is known; a served-state route that fails leaves the
        // fingerprint unknown (never a change) rather than failing the read.
        const bool read = classify_plain(x.end, x.transfer).outcome == Outcome::Clean &&
                          read_served_answer(rt_, path, x.transfer.body, cand_.model, served_).ok();
        // The first route names what is served: without it the fingerprint stays
        // unknown. A later one (llama-server --no-slots, a vLLM whose /metrics is
        // off) only leaves its own fields unknown, as in the identity probe.
        if (!read && served_i_ == 1) {
          served_.loaded.clear();
          served_i_ = routes_.size();
        }
        next_served();
      }));
  served_exchanges_.back()->start();
}

void BuildRead::cancel() {
  if (exchange_ && exchange_->live()) exchange_->cancel();
  if (command_) command_->cancel();
  for (auto& x : served_exchanges_)
    if (x->live()) x->cancel();
}

void BuildRead::finish(Result<BuildIdentity> r) {
  if (done_called_) return;
  done_called_ = true;
  done_(std::move(r));
}

}  // namespace soak::probes
