#include "probes/probe_build.h"

#include <algorithm>
#include <utility>

#include "probes/engine_rows.h"
#include "probes/requests.h"
#include "probes/served_state.h"

namespace soak::probes {

Result<std::string> build_from_command_output(const Runtime& runtime, std::string_view output) {
  if (runtime.read_version_output)
    if (auto b = runtime.read_version_output(output)) return *b;
  return build_from_first_line(output);
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
