#include "probes/probe_step.h"

#include <algorithm>
#include <utility>

#include "core/log_text.h"
#include "probes/answer_check.h"
#include "probes/chat_contract.h"
#include "probes/engine_rows.h"

namespace soak::probes {

void Step::cancel() {
  if (cancelled_ || finished_) return;
  cancelled_ = true;
  on_cancel();
  for (auto& x : exchanges_)
    if (x->live()) x->cancel();
  // Nothing in flight (e.g. between two requests): end now; otherwise the
  // cancelled requests' rows arrive first and their handlers end the step.
  if (live_requests() == 0) finish();
}

bool Step::stop_if_cancelled() {
  if (!cancelled_) return false;
  finish();
  return true;
}

int64_t Step::live_requests() const {
  return std::count_if(exchanges_.begin(), exchanges_.end(), [](const auto& x) { return x->live(); });
}

void Step::drop_finished_exchanges() {
  std::erase_if(exchanges_, [](const std::unique_ptr<Exchange>& x) { return !x->live(); });
}

Exchange& Step::send(ExchangeSpec spec, Exchange::Done then) {
  if (spec.kind != ExchangeKind::Plain) {
    // A chat request may wait in the runtime's queue: its slots known, and its queue read when busy.
    if (!spec.runtime_slots) spec.runtime_slots = env_.cand.slots ? env_.cand.slots : env_.state.runtime_slots;
    env_.io.watch_queue(env_.cand, env_.runtime);
  }
  exchanges_.push_back(std::make_unique<Exchange>(env_.io, env_.cand, std::move(spec), std::move(then)));
  Exchange& x = *exchanges_.back();
  x.start();
  return x;
}

void Step::run_chat(ChatJob job, std::function<void(ProbeResult&, const ExchangeResult&)> then) {
  ExchangeSpec spec;
  spec.kind = job.req.streaming == Streaming::On ? ExchangeKind::ChatStream : ExchangeKind::ChatBuffered;
  spec.method = "POST";
  spec.path = job.req.path;
  spec.body = std::move(job.req.body);  // chat_row reads the job's locators, not its body
  spec.connection = job.connection;
  spec.cut_after_tokens = job.cut_after_tokens;
  spec.stall_timeout_ms = job.stall_timeout_ms;
  spec.prompt_tokens = job.prompt_tokens;
  spec.prefill_rounds = job.prefill_rounds;
  auto shared = std::make_shared<ChatJob>(std::move(job));
  send(std::move(spec), [this, shared, then = std::move(then)](const ExchangeResult& x) {
    ProbeResult r = chat_row(*shared, x);
    then(r, x);
  });
}

ProbeResult Step::row(ProbeKind kind, std::string workload) const {
  ProbeResult r = make_row(kind, std::move(workload));
  r.runtime_slots = env_.cand.slots ? env_.cand.slots : env_.state.runtime_slots;
  r.group_id = env_.group_id;
  return r;
}

void Step::set_verdict(ProbeResult& r, const Verdict& v, std::string_view shown) {
  r.outcome = v.outcome;
  r.detail = v.detail;
  r.excerpt.clear();
  if (v.outcome != Outcome::Clean && v.outcome != Outcome::CancelledByDaemon) r.excerpt = failure_excerpt(shown);
}

ProbeResult Step::chat_row(const ChatJob& job, const ExchangeResult& x) const {
  ProbeResult r = row(job.req.kind, job.workload);
  r.cache_state = job.cache;
  r.size_tokens = job.size;
  r.fixture_hash = job.fixture_hash;
  r.client_concurrency = job.client_concurrency;
  r.sampling_json = job.req.sampling_json;
  r.thinking = job.req.thinking;
  r.started_wall_ms = x.started_wall_ms;
  fill_transfer(x.transfer, r);
  fill_probe_result(x.chat, request_clock(x.transfer.times), r);
  r.body_hash = x.body_hash;

  const int status = x.transfer.head.status;
  const bool error_status = status > 0 && (status < 200 || status >= 300);
  const std::string_view error_body = error_status ? std::string_view(x.transfer.body) : std::string_view();
  const ResponseMode mode = job.req.streaming == Streaming::On ? ResponseMode::Stream : ResponseMode::NonStream;
  Verdict v = classify_chat(x.end, status > 0 ? std::optional<int>(status) : std::nullopt, error_body, x.chat,
                            expectations(mode));
  if (x.end == TransportEnd::LocalError && !x.transfer.detail.empty())
    v.detail = "soakd could not run the request: " + x.transfer.detail;
  if (v.outcome == Outcome::ConnectionReset) {
    // The classifier's words, then the transport's own reason and the connection it was on.
    if (!x.transfer.detail.empty()) v.detail += ": " + x.transfer.detail;
    if (x.transfer.reused_connection) v.detail += " (reused connection)";
  }
  // The transport's words say what showed the runtime busy.
  if (v.outcome == Outcome::QueueTimeout && !x.transfer.detail.empty()) v.detail = x.transfer.detail;
  // The loop detector reads every answer; its figure goes on the row.
  const bool has_answer = v.outcome == Outcome::Clean || v.outcome == Outcome::ServerTokenCap ||
                          !x.chat.content.empty() || !x.chat.reasoning.empty();
  const RepetitionReport rep = has_answer ? answer_repetition(x.chat) : RepetitionReport{};
  if (v.outcome == Outcome::Clean) {
    // Leaked markup, a loop or an empty answer first (probes/answer_check.h), then the probe's own check.
    const auto answer = check_answer(x.chat, rep, job.expects_answer, env_.state.template_tokens);
    const Verdict content = answer ? *answer : job.check ? job.check(x.chat) : v;
    v = content;
    if (content.outcome == Outcome::LeakedMarkup) {
      // The markup names the cause (probes/answer_check.h); what the probe's
      // own check and the runtime's cap would have said goes in its detail.
      if (job.check)
        if (const Verdict own = job.check(x.chat); own.outcome != Outcome::Clean)
          v.detail += "; the answer was also " + std::string(to_string(own.outcome));
      if (classify_server_cap(x.chat, server_cap_context(job.req.max_tokens)))
        v.detail += "; the runtime's own cap also cut it (server_token_cap)";
    } else if (content.outcome != Outcome::Repetition) {
      // An answer the runtime cut with its own cap (docs/DESIGN.md §2.2) cannot be
      // judged on its content either: the cap is what to fix. A loop is the
      // exception: it is a loop whatever stopped it; so is leaked markup, which
      // no cut makes (a character cut in two at the end is not counted).
      if (auto cap = classify_server_cap(x.chat, server_cap_context(job.req.max_tokens))) {
        v = *cap;
        if (content.outcome != Outcome::Clean)
          v.detail += "; the cut answer was also " + std::string(to_string(content.outcome));
      }
    }
  }
  r.outcome = v.outcome;
  r.detail = v.detail;
  // A request that waited in the runtime's queue says so, and how long, clean or not.
  if (const std::string note = queue_note(x.transfer, v.outcome != Outcome::QueueTimeout); !note.empty())
    r.detail = r.detail.empty() ? note : r.detail + "; " + note;
  if (v.outcome != Outcome::Clean && v.outcome != Outcome::CancelledByDaemon)
    r.excerpt = v.excerpt.empty() ? failure_excerpt(x.chat, error_body) : v.excerpt;
  if (job.extra) r.extra_json = job.extra(x.chat);
  if (has_answer) r.extra_json = with_loop_figure(r.extra_json, rep);
  return r;
}

ProbeResult Step::plain_row(ProbeKind kind, std::string workload, const ExchangeResult& x) const {
  ProbeResult r = row(kind, std::move(workload));
  r.started_wall_ms = x.started_wall_ms;
  fill_transfer(x.transfer, r);
  r.body_hash = x.body_hash;
  Verdict v = classify_plain(x.end, x.transfer);
  if (x.end == TransportEnd::LocalError && !x.transfer.detail.empty())
    v.detail = "soakd could not run the request: " + x.transfer.detail;
  set_verdict(r, v, x.transfer.body);
  return r;
}

ChatRequestOptions Step::chat_options(Streaming streaming) const {
  ChatRequestOptions o;
  o.model = env_.cand.model;
  o.sampling = env_.cand.settings.sampling;
  o.streaming = streaming;
  o.dialect = env_.runtime.dialect;
  return o;
}

ChatExpectations Step::expectations(ResponseMode mode) const {
  ChatExpectations e;
  e.mode = mode;
  e.usage = UsagePolicy::Required;  // every chat probe asks for usage (stream_options.include_usage)
  e.identity = env_.runtime.identity;
  e.canonical_model = env_.cand.model;
  e.requested_model = env_.cand.model;
  return e;
}

ServerCapContext Step::server_cap_context(std::optional<int64_t> max_tokens) const {
  ServerCapContext c;
  c.lift = env_.runtime.lift_cap;
  // Only the golden set's request names a bound (probes/requests.h BuiltRequest::max_tokens).
  c.request_limit = max_tokens ? RequestLimit::Sent : RequestLimit::None;
  c.request_max_tokens = max_tokens.value_or(0);
  c.slot_ctx = env_.state.slot_ctx;
  return c;
}

ExchangeSpec Step::route(const HttpRoute& r, std::string body) const {
  ExchangeSpec s;
  s.kind = ExchangeKind::Plain;
  s.method = std::string(r.method);
  s.path = std::string(r.path);
  s.body = std::move(body);
  return s;
}

void Step::emit(ProbeResult r) {
  r.detail = redact(r.detail);
  env_.emit(std::move(r));
}

void Step::finish() {
  if (finished_) return;
  finished_ = true;
  env_.finished();
}

std::unique_ptr<Step> make_step(ProbeKind kind, StepEnv env) {
  switch (kind) {
    case ProbeKind::Health: return make_health_step(std::move(env));
    case ProbeKind::Identity: return make_identity_step(std::move(env));
    case ProbeKind::Scrape: return make_scrape_step(std::move(env));
    case ProbeKind::Embeddings:
    case ProbeKind::Rerank: return make_pooling_step(kind, std::move(env));
    case ProbeKind::Marker:
    case ProbeKind::Stream:
    case ProbeKind::StrictJson:
    case ProbeKind::ToolCall:
    case ProbeKind::Thinking:
    case ProbeKind::Repetition:
    case ProbeKind::SharedPrefix: return make_chat_step(kind, std::move(env));
    case ProbeKind::Agent: return make_session_step(std::move(env));
    case ProbeKind::LongContext: return make_long_context_step(std::move(env));
    case ProbeKind::Burst:
      // A pooling server is never sent a chat request: its bursts are pooling requests.
      if (env.cand.kind != WorkloadKind::Chat) return make_pooling_burst_step(std::move(env));
      return make_burst_step(std::move(env));
    case ProbeKind::Capacity: return make_capacity_step(std::move(env));
    case ProbeKind::Cancel: return make_cancel_step(std::move(env));
    case ProbeKind::Equivalence: return make_equivalence_step(std::move(env));
    case ProbeKind::Build: return nullptr;
  }
  return nullptr;
}

std::optional<CandidateState::Sized> recall_sized(const CandidateState& s, int64_t size, uint64_t seed) {
  auto it = s.long_context.find(size);
  if (it == s.long_context.end()) return std::nullopt;
  return CandidateState::Sized{long_context_fixture_of_words(size, seed, it->second.words), it->second.sized_by,
                               it->second.measured_tokens};
}

void remember_sized(CandidateState& s, int64_t size, const CandidateState::Sized& sized) {
  s.long_context[size] = {sized.fixture.words, sized.sized_by, sized.measured_tokens};
}

}  // namespace soak::probes
