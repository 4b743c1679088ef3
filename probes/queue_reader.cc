#include "probes/queue_reader.h"

#include <algorithm>
#include <utility>

namespace soak::probes {

RuntimeQueueReader::RuntimeQueueReader(EngineIo& io, const CandidateConfig& cand, const Runtime& rt)
    : io_(io), cand_(cand), rt_(rt), origin_(origin_of(cand.base_url)), source_(first_busy_source(rt)), poll_(io.loop) {
  io_.http.set_queue_reader(origin_, this);
}

RuntimeQueueReader::~RuntimeQueueReader() {
  poll_.stop();
  io_.http.set_queue_reader(origin_, nullptr);
}

void RuntimeQueueReader::read() {
  if (live_ && live_->live()) return;  // its answer tells every request held now
  const HttpRoute* route = queue_route(rt_, source_);
  if (!route) {
    io_.defer.post([this] { report(QueueState::Unknown, false, "the runtime's queue cannot be read"); });
    return;
  }
  spent_.reset();
  ExchangeSpec spec;
  spec.kind = ExchangeKind::Plain;
  spec.method = std::string(route->method);
  spec.path = std::string(route->path);
  // A reading answers in milliseconds; one a wedged runtime never answers says so within a stall timeout.
  spec.wall_timeout_ms = cand_.settings.limits.stall_timeout_ms;
  live_ = std::make_unique<Exchange>(io_, cand_, std::move(spec), [this](const ExchangeResult& x) { on_answer(x); });
  live_->start();
}

void RuntimeQueueReader::on_answer(const ExchangeResult& x) {
  spent_ = std::move(live_);  // freed at the next reading: this is its own done
  const int status = x.transfer.head.status;
  if (status == 0) return report(QueueState::Unknown, false, "the runtime's queue did not answer");
  Result<QueueReading> r =
      is_2xx(status) ? read_queue(rt_, source_, x.transfer.body) : Result<QueueReading>(make_error("not 2xx"));
  if (!r.ok()) {
    // A route the runtime refuses gives way to the next, read at once.
    source_ = next_busy_source(rt_, source_);
    last_.reset();
    if (source_ == QueueSource::None) return report(QueueState::Unknown, false, "the runtime's queue cannot be read");
    io_.defer.post([this] { read(); });
    return;
  }
  const bool moved = last_ && queue_moved(*last_, *r);
  const std::optional<bool> busy = queue_busy(*r);
  std::string why = describe_queue(source_, *r);
  last_ = std::move(*r);
  report(busy ? (*busy ? QueueState::Busy : QueueState::Free) : QueueState::Unknown, moved, std::move(why));
}

void RuntimeQueueReader::report(QueueState state, bool moved, std::string why) {
  io_.http.report_queue(origin_, state, moved, io_.clock.mono_ns(), std::move(why));
  if (io_.http.held(origin_) == 0) {
    last_.reset();  // the next hold starts a fresh watch
    return;
  }
  const auto every = static_cast<uint64_t>(queue_poll_ms(cand_.settings.limits.stall_timeout_ms));
  poll_.start(every, 0, [this] { read(); });
}

}  // namespace soak::probes
