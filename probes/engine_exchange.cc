#include "probes/engine_exchange.h"

#include <algorithm>
#include <utility>

#include "core/hash.h"
#include "probes/engine_rows.h"
#include "probes/queue_reader.h"

namespace soak::probes {

namespace {
constexpr uint64_t kFnvOffset = 0xcbf29ce484222325ULL;
}  // namespace

// ---------------------------------------------------------------- Deferrer

Deferrer::Deferrer(uv_loop_t* loop) {
  uv_timer_init(loop, timer_.get());
  timer_.mark_initialized();
  timer_.get()->data = this;
}

void Deferrer::post(std::function<void()> fn) {
  queue_.push_back(std::move(fn));
  if (armed_) return;
  armed_ = true;
  uv_timer_start(timer_.get(), &Deferrer::on_timer, 0, 0);
}

void Deferrer::on_timer(uv_timer_t* t) {
  auto* self = static_cast<Deferrer*>(t->data);
  self->armed_ = false;
  std::vector<std::function<void()>> batch;
  batch.swap(self->queue_);
  for (auto& fn : batch) {
    // A callback's exception must not unwind through libuv.
    try {
      fn();
    } catch (...) {
    }
  }
}

// ---------------------------------------------------------------- EngineIo

EngineIo::EngineIo(uv_loop_t* l, HttpClient& h, const Clock& c, const EngineOptions& opts)
    : loop(l),
      http(h),
      sse(h),
      clock(c),
      defer(l),
      env(opts.env ? opts.env : process_env()),
      nonces(opts.nonce_seed ? opts.nonce_seed
                             : static_cast<uint64_t>(c.wall_ms()) * 1'000'003ULL ^ static_cast<uint64_t>(c.mono_ns())) {
}

EngineIo::~EngineIo() = default;

void EngineIo::watch_queue(const CandidateConfig& cand, const Runtime& rt) {
  if (!RuntimeQueueReader::can_read(rt)) return;
  std::string origin = origin_of(cand.base_url);
  if (queue_readers.count(origin)) return;
  queue_readers.emplace(origin, std::make_unique<RuntimeQueueReader>(*this, cand, rt));
}

// ---------------------------------------------------------------- requests

HttpRequest build_http_request(const std::string& base_url, const Limits& l, const ExchangeSpec& spec,
                               const std::optional<std::string>& api_key) {
  HttpRequest r;
  r.method = spec.method;
  r.url = base_url + spec.path;
  r.body = spec.body;
  if (!spec.body.empty()) r.headers.push_back({"Content-Type", "application/json"});
  if (api_key) r.headers.push_back({"Authorization", "Bearer " + *api_key});
  r.connect_timeout_ms = l.connect_timeout_ms;
  r.wall_timeout_ms = spec.wall_timeout_ms.value_or(l.wall_timeout_ms);
  r.stall_timeout_ms = spec.stall_timeout_ms.value_or(l.stall_timeout_ms);
  if (spec.prompt_tokens) {
    const int64_t one = prefill_allowance_ms(*spec.prompt_tokens, l.prefill_floor_tps);
    r.prefill_allowance_ms = one * std::max<int64_t>(1, spec.prefill_rounds);
    if (spec.prefill_rounds > 1) r.moved_prefill_allowance_ms = one;
  }
  r.max_response_bytes = l.max_response_bytes;
  r.body_mode = spec.kind == ExchangeKind::ChatStream ? BodyMode::Stream : BodyMode::Buffer;
  r.connection = spec.connection;
  // A chat request takes a slot, and waits in the runtime's queue for one.
  r.queue_role = spec.kind == ExchangeKind::Plain ? QueueRole::None : QueueRole::Slot;
  r.runtime_slots = spec.runtime_slots;
  return r;
}

// ---------------------------------------------------------------- Exchange

Exchange::Exchange(EngineIo& io, const CandidateConfig& cand, ExchangeSpec spec, Done done)
    : io_(io),
      base_url_(cand.base_url),
      owner_(cand.name),
      limits_(cand.settings.limits),
      api_key_env_(cand.api_key_env),
      spec_(std::move(spec)),
      done_(std::move(done)),
      hash_state_(kFnvOffset) {}

Exchange::~Exchange() {
  // The owner keeps an exchange until its done fired; this only guards the count.
  if (counted_) --io_.live_chat[base_url_];
}

void Exchange::start() {
  if (state_ != State::Idle) return;
  state_ = State::Live;
  result_.started_wall_ms = io_.clock.wall_ms();
  std::optional<std::string> key;
  if (api_key_env_) {
    key = io_.env(*api_key_env_);
    if (!key || key->empty()) return fail_before_sending("environment variable " + *api_key_env_ + " is not set");
  }
  HttpRequest req = build_http_request(base_url_, limits_, spec_, key);
  req.owner = owner_;
  spec_.body = std::string();  // the request holds it now (a long-context body is hundreds of KB)
  if (spec_.kind != ExchangeKind::Plain) {
    ++io_.live_chat[base_url_];
    counted_ = true;
  }
  id_ = spec_.kind == ExchangeKind::ChatStream ? io_.sse.start(std::move(req), this)
                                               : io_.http.start(std::move(req), this);
  if (id_ == kNoTransfer) {
    // The client was shut down: soakd is stopping.
    result_.transfer.reason = EndReason::Cancelled;
    result_.transfer.detail = "transport shut down";
    io_.defer.post([this] { finish(); });
  }
}

void Exchange::fail_before_sending(std::string why) {
  result_.transfer.reason = EndReason::Error;
  result_.transfer.detail = std::move(why);
  io_.defer.post([this] { finish(); });
}

void Exchange::cancel() {
  if (state_ != State::Live || id_ == kNoTransfer) return;
  if (spec_.kind == ExchangeKind::ChatStream) {
    io_.sse.cancel(id_);
  } else {
    io_.http.cancel(id_);
  }
}

EventClass Exchange::on_event(TransferId id, const SseEvent& event, int64_t mono_ns) {
  hash_state_ = fnv1a64(event.data, hash_state_);
  hash_state_ = fnv1a64("\n", hash_state_);
  const ChatResult& r = acc_.result();
  const size_t tokens = r.token_arrivals_ns.size();
  const bool had_finish = !r.finish_reason.empty(), had_usage = r.usage.has_value(), had_done = r.saw_done,
             had_error = r.error.has_value();
  const int64_t reports = r.prefill.reports;
  acc_.on_event(event.data, mono_ns);
  // Only progress resets the stall clock: output, the finish, usage, [DONE] or
  // an error. A role-only chunk or an oMLX keep-alive chunk is not progress.
  const bool progress = r.token_arrivals_ns.size() > tokens || (!had_finish && !r.finish_reason.empty()) ||
                        (!had_usage && r.usage) || (!had_done && r.saw_done) || (!had_error && r.error);
  if (spec_.cut_after_tokens > 0 && !result_.cut &&
      static_cast<int64_t>(r.token_arrivals_ns.size()) >= spec_.cut_after_tokens && !r.saw_done) {
    result_.cut = true;
    io_.sse.cancel(id);
  }
  if (progress) return EventClass::Content;
  // A llama.cpp prompt_progress chunk that read further: the prefill is moving.
  return r.prefill.reports > reports ? EventClass::Progress : EventClass::NotContent;
}

EventClass Exchange::on_comment(TransferId, std::string_view text, int64_t) {
  const int64_t reports = acc_.result().prefill.reports;
  acc_.on_comment(text);  // MLX-LM `: keepalive n/m`; pings change nothing
  return acc_.result().prefill.reports > reports ? EventClass::Progress : EventClass::NotContent;
}

void Exchange::on_done(TransferId, const SseResult& s) {
  result_.transfer = s.transfer;
  result_.chat = acc_.take();
  if (!s.event_stream && is_2xx(s.transfer.head.status) && !s.transfer.body.empty()) {
    // A JSON answer to a stream request: judge what came.
    result_.chat = parse_chat_completion(s.transfer.body, s.transfer.times.done_ns);
  }
  result_.body_hash = s.event_stream ? hex64(hash_state_) : hash_hex(s.transfer.body);
  finish();
}

void Exchange::on_done(TransferId, const TransferResult& t) {
  result_.transfer = t;
  if (spec_.kind == ExchangeKind::ChatBuffered) {
    result_.chat.mode = ResponseMode::NonStream;
    if (is_2xx(t.head.status)) result_.chat = parse_chat_completion(t.body, t.times.done_ns);
  }
  result_.body_hash = hash_hex(t.body);
  finish();
}

void Exchange::finish() {
  if (state_ == State::Done) return;
  state_ = State::Done;
  if (counted_) {
    --io_.live_chat[base_url_];
    counted_ = false;
  }
  if (spec_.kind == ExchangeKind::ChatBuffered) result_.chat.mode = ResponseMode::NonStream;
  result_.end = transport_end(result_.transfer.reason, result_.cut ? CutBy::Probe : CutBy::Daemon);
  done_(result_);
}

}  // namespace soak::probes
