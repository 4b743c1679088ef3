#include "probes/engine.h"

#include <algorithm>
#include <map>
#include <utility>

#include "probes/engine_exchange.h"
#include "probes/probe_build.h"
#include "probes/probe_step.h"
#include "probes/runtimes/catalog.h"

namespace soak::probes {

std::vector<ProbeKind> all_probe_kinds() {
  return {ProbeKind::Health,   ProbeKind::Identity, ProbeKind::Marker,      ProbeKind::Stream, ProbeKind::StrictJson,
          ProbeKind::ToolCall, ProbeKind::Thinking, ProbeKind::Repetition,  ProbeKind::Scrape, ProbeKind::SharedPrefix,
          ProbeKind::Agent,    ProbeKind::Cancel,   ProbeKind::LongContext, ProbeKind::Burst,  ProbeKind::Capacity};
}

bool engine_runs(ProbeKind k) { return k != ProbeKind::Build; }

struct ProbeEngine::Impl {
  Impl(uv_loop_t* loop, HttpClient& http, const Clock& clock, EngineOptions o)
      : opts(std::move(o)), io(loop, http, clock, opts) {}

  struct Run {
    RunId id = 0;
    CandidateConfig cand;
    RunSpec spec;
    RowSink on_row;
    std::function<void()> done;
    size_t next = 0;
    bool preamble_done = false;
    bool cancelled = false;
    std::unique_ptr<Step> step;
  };

  EngineOptions opts;
  EngineIo io;
  std::map<RunId, std::unique_ptr<Run>> runs;
  std::map<uint64_t, std::unique_ptr<BuildRead>> builds;
  std::map<std::string, CandidateState> states;
  uint64_t next_id = 1;

  CandidateState& state_for(const CandidateConfig& c) { return states[c.name + "\n" + c.base_url]; }
  // The candidate's runtime entry, in the caller's table or the built-in one.
  const Runtime& runtime_for(const CandidateConfig& c) const {
    return runtime_in(opts.runtimes.empty() ? builtin_runtimes() : opts.runtimes, c.runtime);
  }

  StepEnv env_for(Run& r) {
    const RunId id = r.id;
    return StepEnv{io,
                   opts,
                   r.cand,
                   runtime_for(r.cand),
                   state_for(r.cand),
                   r.spec.group_id,
                   r.spec.expect_model,
                   [this, id](ProbeResult row) {
                     auto it = runs.find(id);
                     if (it != runs.end() && it->second->on_row) it->second->on_row(std::move(row));
                   },
                   [this, id] { io.defer.post([this, id] { advance(id); }); }};
  }

  bool needs_props(const Run& r) { return runtime_for(r.cand).props && !r.cand.slots && !state_for(r.cand).props_read; }

  // Always entered from the deferrer: never inside run(), cancel() or a step's own callback.
  void advance(RunId id) {
    auto it = runs.find(id);
    if (it == runs.end()) return;
    Run& r = *it->second;
    r.step.reset();
    while (!r.cancelled && r.next <= r.spec.kinds.size()) {
      if (!r.preamble_done) {
        r.preamble_done = true;
        if (needs_props(r)) r.step = make_props_step(env_for(r));
      } else {
        if (r.next == r.spec.kinds.size()) break;
        r.step = make_step(r.spec.kinds[r.next++], env_for(r));
      }
      if (r.step) {
        r.step->start();
        return;
      }
    }
    auto done = std::move(r.done);
    runs.erase(it);
    if (done) done();
  }
};

ProbeEngine::ProbeEngine(uv_loop_t* loop, HttpClient& http, const Clock& clock, EngineOptions opts)
    : impl_(std::make_unique<Impl>(loop, http, clock, std::move(opts))) {}

ProbeEngine::~ProbeEngine() {
  // Runs still here were ended by HttpClient::shutdown(); their continuations
  // are dropped with the deferrer.
  impl_->io.defer.clear();
}

RunId ProbeEngine::run(const CandidateConfig& c, RunSpec spec, RowSink on_row, std::function<void()> done) {
  auto r = std::make_unique<Impl::Run>();
  const RunId id = impl_->next_id++;
  r->id = id;
  r->cand = c;
  r->spec = std::move(spec);
  r->on_row = std::move(on_row);
  r->done = std::move(done);
  impl_->runs.emplace(id, std::move(r));
  impl_->io.defer.post([impl = impl_.get(), id] { impl->advance(id); });
  return id;
}

void ProbeEngine::cancel(RunId id) {
  auto it = impl_->runs.find(id);
  if (it == impl_->runs.end()) return;
  Impl::Run& r = *it->second;
  if (r.cancelled) return;
  r.cancelled = true;
  if (r.step) r.step->cancel();
}

void ProbeEngine::cancel_all() {
  std::vector<RunId> ids;
  for (const auto& [id, r] : impl_->runs) ids.push_back(id);
  for (RunId id : ids) cancel(id);
  for (auto& [id, b] : impl_->builds) b->cancel();
}

size_t ProbeEngine::in_flight() const { return impl_->runs.size() + impl_->builds.size(); }

ServingState ProbeEngine::serving(const std::string& candidate) const {
  const ServingStats s = impl_->io.http.serving(candidate);
  const int64_t now = impl_->io.clock.mono_ns();
  ServingState out;
  out.outstanding = s.outstanding;
  out.queued = s.held;
  if (s.oldest_start_ns) out.oldest_age_ms = std::max<int64_t>(0, now - *s.oldest_start_ns) / 1'000'000;
  if (s.last_served_ns) out.served_age_ms = std::max<int64_t>(0, now - *s.last_served_ns) / 1'000'000;
  out.silent_budget_ms = s.silent_budget_ms;
  return out;
}

void ProbeEngine::read_build(const CandidateConfig& c, std::function<void(Result<BuildIdentity>)> done) {
  Impl* impl = impl_.get();
  const uint64_t id = impl->next_id++;
  auto b = std::make_unique<BuildRead>(impl->io, impl->opts, c, impl->runtime_for(c),
                                       [impl, id, done = std::move(done)](Result<BuildIdentity> r) {
                                         // Out of the reader's own callback before it is destroyed.
                                         impl->io.defer.post([impl, id, done, r = std::move(r)]() mutable {
                                           impl->builds.erase(id);
                                           if (done) done(std::move(r));
                                         });
                                       });
  BuildRead& ref = *b;
  impl->builds.emplace(id, std::move(b));
  ref.start();
}

}  // namespace soak::probes
