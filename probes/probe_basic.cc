// Probes of the runtime's own routes: health, identity (model list, then a
// non-stream answer), scrape (props, slots, metrics), and
// the engine's quiet /props preamble.
#include <nlohmann/json.hpp>

#include "core/hash.h"
#include "probes/engine_rows.h"
#include "probes/probe_step.h"
#include "probes/prometheus.h"
#include "probes/runtime_metrics.h"
#include "probes/served_state.h"
#include "probes/validators.h"

namespace soak::probes {
namespace {

using ojson = nlohmann::ordered_json;

constexpr size_t kMaxListedModels = 8;

// A route this runtime build does not serve (e.g. llama-server without --metrics).
bool unserved(int s) { return s == 404 || s == 405 || s == 501; }

// ---------------------------------------------------------------- health
class HealthStep final : public Step {
 public:
  using Step::Step;
  void start() override {
    send(route(env_.runtime.health), [this](const ExchangeResult& x) {
      ProbeResult r = plain_row(ProbeKind::Health, workload_id(ProbeKind::Health), x);
      set_verdict(r, starting_up(classify_health(env_.runtime, x.end, x.transfer)), x.transfer.body);
      emit(std::move(r));
      finish();
    });
  }

 private:
  // A runtime that refuses connections while it starts (vLLM, until its
  // engine is up): within the grace of the first refusal of a streak that is
  // loading; past it, refused.
  Verdict starting_up(Verdict v) {
    std::optional<int64_t>& since = env_.state.refused_since_ns;
    if (v.outcome != Outcome::ConnectRefused) {
      since.reset();
      return v;
    }
    if (env_.runtime.refuses_while_starting.empty()) return v;
    const int64_t now = env_.io.clock.mono_ns();
    if (!since) since = now;
    const int64_t streak_ms = (now - *since) / 1'000'000;
    if (streak_ms >= env_.opts.startup_grace_ms) return v;
    return {Outcome::Loading, "connection refused " + std::to_string(streak_ms / 1000) + " s into " +
                                  std::string(env_.runtime.refuses_while_starting)};
  }
};

// ---------------------------------------------------------------- identity
// The model list; a short answer that must name (or echo) the model; then what
// the runtime says it serves (its entry's served-state routes: /props,
// /v1/models, /api/ps, /api/v0/models, /metrics; or its argv, MLX-LM's, which
// is judged before any request because a wrong id would make it load other
// weights). The
// answer comes first so a runtime that loads on demand (Ollama, LM Studio)
// has the model loaded when asked. The row says how identity was proven;
// "echo only" is identity_unproven, never a pass.
class IdentityStep final : public Step {
 public:
  using Step::Step;
  void start() override {
    send(route(env_.runtime.models), [this](const ExchangeResult& x) { on_models(x); });
  }

 private:
  void on_models(const ExchangeResult& x) {
    ProbeResult r = plain_row(ProbeKind::Identity, workload_id(ProbeKind::Identity), x);
    extra_["listed"] = ojson::array();
    if (r.outcome == Outcome::Clean) {
      std::vector<std::string> ids = parse_model_ids(x.transfer.body);
      for (size_t i = 0; i < ids.size() && i < kMaxListedModels; ++i) extra_["listed"].push_back(ids[i]);
      set_verdict(r, check_model_list(ids, env_.cand.model), x.transfer.body);
    }
    if (r.outcome == Outcome::Clean && env_.runtime.served_from_argv) {
      served_ = served_by_argv(env_.runtime, env_.cand, env_.opts.runtime_argv);
      set_verdict(r, judge_served(served_, env_.cand.model, env_.expect_model), "");
      proof_detail_ = r.detail;
      note_served();
    }
    if (r.outcome == Outcome::Clean && cancelled())
      set_verdict(r, {Outcome::CancelledByDaemon, "cancelled by soakd"}, "");
    if (r.outcome != Outcome::Clean) return done(std::move(r));
    ChatJob job;
    job.req = marker_request(chat_options(Streaming::Off), make_marker(fnv1a64(env_.io.nonces.next())));
    job.req.kind = ProbeKind::Identity;
    job.workload = workload_id(ProbeKind::Identity);
    run_chat(std::move(job), [this](ProbeResult& row, const ExchangeResult& x) {
      queue_note_ = queue_note(x.transfer);
      on_answer(std::move(row));
    });
  }

  void on_answer(ProbeResult row) {
    row_ = std::move(row);
    // An answer cut by the server's own cap still named its model: identity is
    // judged on it too (a failure there outranks the cap).
    const bool answered = row_.outcome == Outcome::Clean || row_.outcome == Outcome::ServerTokenCap;
    if (!answered || env_.runtime.served_from_argv) return done(std::move(row_));
    if (env_.runtime.served.empty()) {
      // A plain OpenAI server: its answer's own model name is the evidence.
      extra_["proof"] = "response model";
      return done(std::move(row_));
    }
    next_served();
  }

  void next_served() {
    const auto routes = env_.runtime.served;
    if (i_ >= routes.size()) {
      note_served();
      Verdict v = judge_served(served_, env_.cand.model, env_.expect_model);
      if (row_.outcome == Outcome::Clean || v.outcome != Outcome::Clean) set_verdict(row_, v, "");
      return done(std::move(row_));
    }
    if (cancelled()) {
      set_verdict(row_, {Outcome::CancelledByDaemon, "cancelled by soakd"}, "");
      return done(std::move(row_));
    }
    send(route(routes[i_].route), [this, routes](const ExchangeResult& x) {
      const std::string path(routes[i_++].route.path);
      Verdict v = classify_plain(x.end, x.transfer);
      if (v.outcome == Outcome::Clean) {
        if (Status st = read_served_answer(env_.runtime, path, x.transfer.body, env_.cand.model, served_); !st.ok())
          v = {Outcome::MalformedResponse, st.message()};
      }
      // The first route is the evidence itself. A later one that fails (not
      // served: llama-server --no-slots; a timeout under load; a proxy that
      // only passes /v1) only leaves its own fields unknown, as in the build
      // read; the row says which and why.
      if (i_ > 1 && v.outcome != Outcome::Clean) {
        extra_["unavailable"].push_back(path + ": " +
                                        (x.end == TransportEnd::Completed && unserved(x.transfer.head.status)
                                             ? std::string("not served")
                                             : v.detail));
        return next_served();
      }
      if (v.outcome != Outcome::Clean) {
        set_verdict(row_, {v.outcome, path + ": " + v.detail}, x.transfer.body);
        return done(std::move(row_));
      }
      next_served();
    });
  }

  void note_served() {
    row_.server_running = served_.running;
    row_.server_waiting = served_.waiting;
    extra_["proof"] = std::string(to_string(served_.proof));
    if (!served_.loaded.empty()) extra_["served"] = served_.loaded;
    if (!served_.served_digest.empty()) extra_["digest"] = served_.served_digest;
    if (!served_.fingerprint.empty()) extra_["fingerprint"] = served_.fingerprint.summary();
  }

  void done(ProbeResult r) {
    if (r.outcome == Outcome::Clean && r.detail.empty()) r.detail = proof_detail_;
    // The identity verdict replaced the answer's detail: the queue wait stays said.
    if (!queue_note_.empty() && r.detail.find(queue_note_) == std::string::npos)
      r.detail = r.detail.empty() ? queue_note_ : r.detail + "; " + queue_note_;
    r.extra_json = extra_.dump();
    emit(std::move(r));
    finish();
  }

  ProbeResult row_;
  ojson extra_ = ojson::object();
  size_t i_ = 0;  // the next of the runtime's served-state routes
  ServedState served_;
  std::string proof_detail_;
  std::string queue_note_;  // the answer waited in the runtime's queue (engine_rows.h queue_note)
};

// ---------------------------------------------------------------- scrape
class ScrapeStep final : public Step {
 public:
  using Step::Step;
  void start() override {
    const Runtime& t = env_.runtime;
    if (t.props) routes_.push_back({"props", *t.props});
    if (t.slots) routes_.push_back({"slots", *t.slots});
    if (t.metrics) routes_.push_back({"metrics", *t.metrics});
    if (t.status) routes_.push_back({"status", *t.status});
    if (routes_.empty()) return finish();  // nothing to scrape on this runtime: health is its heartbeat
    row_ = row(ProbeKind::Scrape, workload_id(ProbeKind::Scrape));
    row_.outcome = Outcome::Clean;
    next();
  }

 private:
  struct Named {
    std::string_view name;
    HttpRoute route;
  };

  void next() {
    if (i_ >= routes_.size()) return done();
    send(route(routes_[i_].route), [this](const ExchangeResult& x) { on_answer(x); });
  }

  void on_answer(const ExchangeResult& x) {
    const std::string name(routes_[i_++].name);
    if (!first_start_ns_) {
      first_start_ns_ = request_origin_ns(x.transfer.times);
      row_.started_wall_ms = x.started_wall_ms;
    }
    row_.bytes_received += x.transfer.bytes_received;
    row_.t_done_us = (x.transfer.times.done_ns - *first_start_ns_) / 1000;
    hashes_ += x.body_hash;
    const int status = x.transfer.head.status;
    if (x.end == TransportEnd::Completed && unserved(status)) {
      extra_[name] = "unavailable (HTTP " + std::to_string(status) + ")";
    } else {
      Verdict v = classify_plain(x.end, x.transfer);
      if (v.outcome != Outcome::Clean) {
        fail(name, v, x);
        // Nothing more will answer when the runtime is unreachable or soakd stops.
        if (status == 0 || cancelled()) return done();
      } else {
        read(name, x.transfer.body);
      }
    }
    if (cancelled()) return done();
    next();
  }

  void fail(const std::string& name, const Verdict& v, const ExchangeResult& x) {
    extra_[name] = "failed: " + v.detail;
    if (row_.outcome != Outcome::Clean) return;  // the first failure names the row
    if (x.transfer.head.status > 0) row_.http_status = x.transfer.head.status;
    set_verdict(row_, {v.outcome, name + ": " + v.detail}, x.transfer.body);
  }

  void read(const std::string& name, const std::string& body) {
    const Runtime& rt = env_.runtime;
    if (name == "props" && rt.read_props) {
      auto p = rt.read_props(body);
      if (!p) {
        extra_[name] = "unreadable: " + p.message();
        return;
      }
      ojson j;
      if (p->total_slots) {
        j["total_slots"] = *p->total_slots;
        env_.state.runtime_slots = p->total_slots;
        env_.state.props_read = true;
        if (!env_.cand.slots) row_.runtime_slots = p->total_slots;
      }
      if (p->n_ctx) {
        j["n_ctx"] = *p->n_ctx;
        env_.state.slot_ctx = p->n_ctx;
        env_.state.slot_ctx_source = "/props n_ctx";
      }
      if (!p->build_info.empty()) j["build_info"] = p->build_info;
      if (p->is_sleeping) j["is_sleeping"] = *p->is_sleeping;
      // The model's template tokens, read for leaked markup from the next answer on.
      if (!p->template_tokens.empty()) env_.state.template_tokens = p->template_tokens;
      extra_[name] = j;
    } else if (name == "slots" && rt.read_slots) {
      auto s = rt.read_slots(body);
      if (!s) {
        extra_[name] = "unreadable: " + s.message();
        return;
      }
      SlotSummary sum = summarize_slots(*s);
      if (!env_.state.runtime_slots && sum.total > 0) {  // /props says it first where it answers
        env_.state.runtime_slots = sum.total;
        if (!env_.cand.slots) row_.runtime_slots = sum.total;
      }
      // /props says it too; /slots is the fallback where /props is off.
      if (!s->empty() && s->front().n_ctx && env_.state.slot_ctx_source != "/props n_ctx") {
        env_.state.slot_ctx = s->front().n_ctx;
        env_.state.slot_ctx_source = "/slots n_ctx";
      }
      extra_[name] = ojson{{"total", sum.total}, {"busy", sum.busy}};
    } else if (name == "metrics") {
      PromText prom = parse_prometheus_text(body);
      ojson m = ojson::object();
      for (std::string_view key : rt.key_metrics)
        if (auto v = prom.value(key)) m[std::string(key)] = *v;
      extra_[name] = m;
      if (!prom.errors.empty()) extra_["metrics_line_errors"] = prom.errors.size();
      QueueDepth q = queue_depth_from_metrics(rt.series, prom);
      row_.server_running = q.running;
      row_.server_waiting = q.waiting;
      spec(prom);
    } else if (name == "status" && rt.read_status) {
      auto s = rt.read_status(body);
      if (!s) {
        extra_[name] = "unreadable: " + s.message();
        return;
      }
      row_.server_running = s->active_requests;
      row_.server_waiting = s->waiting_requests;
      ojson j = ojson::object();
      if (s->models_loaded) j["models_loaded"] = *s->models_loaded;
      if (s->models_loading) j["models_loading"] = *s->models_loading;
      if (s->loaded_models) j["loaded_models"] = *s->loaded_models;
      extra_[name] = j;
    }
  }

  // vLLM / Rapid-MLX speculative counters are cumulative: the row carries what
  // was drafted and accepted since the previous scrape, in the columns
  // llama.cpp's per-answer draft_n / draft_n_accepted go to. The first scrape
  // (or one after the runtime restarted: a counter went down) only remembers.
  void spec(const PromText& prom) {
    SpecCounters now = spec_counters_from_metrics(env_.runtime.series, prom);
    if (!now.drafted || !now.accepted) return;
    std::optional<SpecCounters>& seen = env_.state.spec_seen;
    ojson s{{"drafted_total", *now.drafted}, {"accepted_total", *now.accepted}};
    if (now.drafts) s["drafts_total"] = *now.drafts;
    // Mean acceptance length: tokens per verify step, 1 + accepted / drafts.
    if (now.drafts && *now.drafts > 0)
      s["mean_acceptance_length"] = 1.0 + static_cast<double>(*now.accepted) / static_cast<double>(*now.drafts);
    if (seen && seen->drafted && seen->accepted && *now.drafted >= *seen->drafted && *now.accepted >= *seen->accepted) {
      row_.server_draft_n = *now.drafted - *seen->drafted;
      row_.server_draft_accepted = *now.accepted - *seen->accepted;
    }
    extra_["spec_decode"] = s;
    seen = now;
  }

  void done() {
    if (row_.outcome == Outcome::Clean && !row_.http_status) row_.http_status = 200;
    row_.body_hash = hash_hex(hashes_);
    row_.extra_json = extra_.dump();
    if (cancelled() && row_.outcome == Outcome::Clean && i_ < routes_.size())
      set_verdict(row_, {Outcome::CancelledByDaemon, "cancelled by soakd"}, "");
    emit(std::move(row_));
    finish();
  }

  std::vector<Named> routes_;
  size_t i_ = 0;
  ProbeResult row_;
  ojson extra_ = ojson::object();
  std::string hashes_;
  std::optional<int64_t> first_start_ns_;
};

// ---------------------------------------------------------------- props preamble
class PropsStep final : public Step {
 public:
  using Step::Step;
  void start() override {
    send(route(*env_.runtime.props), [this](const ExchangeResult& x) {
      if (x.end == TransportEnd::Completed && is_2xx(x.transfer.head.status) && env_.runtime.read_props) {
        if (auto p = env_.runtime.read_props(x.transfer.body); p && p->total_slots) {
          env_.state.runtime_slots = p->total_slots;
          env_.state.props_read = true;
          env_.state.template_tokens = p->template_tokens;
          if (p->n_ctx) {
            env_.state.slot_ctx = p->n_ctx;
            env_.state.slot_ctx_source = "/props n_ctx";
          }
        }
      }
      finish();
    });
  }
};

}  // namespace

std::unique_ptr<Step> make_health_step(StepEnv env) { return std::make_unique<HealthStep>(std::move(env)); }
std::unique_ptr<Step> make_identity_step(StepEnv env) { return std::make_unique<IdentityStep>(std::move(env)); }
std::unique_ptr<Step> make_scrape_step(StepEnv env) { return std::make_unique<ScrapeStep>(std::move(env)); }
std::unique_ptr<Step> make_props_step(StepEnv env) { return std::make_unique<PropsStep>(std::move(env)); }

}  // namespace soak::probes
