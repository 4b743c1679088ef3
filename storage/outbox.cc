#include "storage/outbox.h"

#include <algorithm>
#include <utility>

#include <nlohmann/json.hpp>

#include "core/duration.h"
#include "storage/write_fault.h"

namespace soak {
namespace {

const char* row_name(const QueuedRow& row) {
  switch (row.index()) {
    case 0: return "probe row";
    case 1: return "host sample";
    case 2: return "process sample";
    case 3: return "event";
    case 4: return "stage update";
    default: return "verdict";
  }
}

}  // namespace

Outbox::Outbox(Store& store, const Clock& clock, Logger log, int64_t host_id, StoreOutageSettings settings)
    : store_(store), clock_(clock), log_(std::move(log)), host_id_(host_id), settings_(settings) {}

Result<int64_t> Outbox::write(const QueuedRow& row) {
  return std::visit(
      [this](const auto& r) -> Result<int64_t> {
        using T = std::decay_t<decltype(r)>;
        if constexpr (std::is_same_v<T, ProbeResult>)
          return store_.insert_probe_result(r);
        else if constexpr (std::is_same_v<T, HostSample>)
          return store_.insert_host_sample(r);
        else if constexpr (std::is_same_v<T, ProcessSample>)
          return store_.insert_process_sample(r);
        else if constexpr (std::is_same_v<T, Event>)
          return store_.insert_event(r);
        else if constexpr (std::is_same_v<T, VerdictRow>)
          return store_.insert_verdict(r);
        else if (auto st = store_.update_stage(r.stage); !st)
          return st.error();
        else
          return r.stage.id;
      },
      row);
}

std::optional<int64_t> Outbox::put(QueuedRow row) {
  if (paused()) {
    keep(std::move(row));
    return std::nullopt;
  }
  auto id = write(row);
  if (id) return *id;
  if (classify_write_failure(id.error()) == WriteFault::Permanent) {
    ++lost_;
    log_->error("cannot store a {}: {}", row_name(row), id.message());
    return std::nullopt;
  }
  pause(id.message(), clock_.wall_ms());
  keep(std::move(row));
  announce();
  return std::nullopt;
}

void Outbox::note_failure(const Error& error) {
  if (paused()) return;
  if (classify_write_failure(error) == WriteFault::Permanent) return;
  pause(error.message, clock_.wall_ms());
  announce();
}

void Outbox::keep(QueuedRow row) {
  if (queue_.size() >= static_cast<size_t>(std::max<int64_t>(0, settings_.max_queued_rows))) {
    // The oldest rows are the ones a stage already counts on; the newest go.
    if (dropped_++ == 0)
      log_->error("store not writable and {} rows already waiting: dropping new rows (counted) until it writes",
                  queue_.size());
    return;
  }
  ++waited_;
  queue_.push_back(std::move(row));
}

void Outbox::pause(const std::string& reason, int64_t now_ms) {
  since_ms_ = now_ms;
  reason_ = reason;
  backoff_ms_ = kOutboxRetryFirstMs;
  next_try_ms_ = now_ms + backoff_ms_;
  waited_ = 0;
  dropped_ = 0;
}

void Outbox::announce() {
  tell();  // the note first: whoever reads the log line can read the note too
  log_->error("store not writable since {}: {}; pausing new probe work until it writes", iso_utc(*since_ms_), reason_);
}

bool Outbox::retry() {
  if (!paused()) return true;
  const int64_t now_ms = clock_.wall_ms();
  if (now_ms < next_try_ms_) return false;
  while (!queue_.empty()) {
    auto id = write(queue_.front());
    if (!id) {
      if (classify_write_failure(id.error()) == WriteFault::Permanent) {
        ++lost_;
        log_->error("cannot store a waiting {}: {}", row_name(queue_.front()), id.message());
        queue_.pop_front();
        continue;
      }
      reason_ = id.message();
      backoff_ms_ = std::min(backoff_ms_ * 2, kOutboxRetryMaxMs);
      next_try_ms_ = now_ms + backoff_ms_;
      log_->warn("{}", describe());
      tell();
      return false;
    }
    queue_.pop_front();
  }
  resume(now_ms);
  return !paused();
}

void Outbox::resume(int64_t now_ms) {
  const int64_t from = *since_ms_;
  Event e;
  e.wall_ms = now_ms;
  e.host_id = host_id_;
  e.kind = EventKind::Gap;
  e.duration_ms = now_ms - from;
  e.detail_json =
      nlohmann::json{{"cause", "store_unwritable"}, {"reason", reason_},       {"from_ms", from}, {"to_ms", now_ms},
                     {"rows_waited", waited_},      {"rows_dropped", dropped_}}
          .dump();
  if (auto id = store_.insert_event(e); !id) {
    // It wrote the queue a moment ago; try again at the next retry with the gap still owed.
    reason_ = id.message();
    next_try_ms_ = now_ms + backoff_ms_;
    return;
  }
  log_->warn("store writable again after {} s: {} row(s) written, {} dropped", (now_ms - from) / 1000, waited_,
             dropped_);
  since_ms_.reset();
  reason_.clear();
  tell();
}

bool Outbox::flush() {
  next_try_ms_ = 0;
  return retry();
}

std::optional<int64_t> Outbox::next_retry_ms() const {
  if (!paused()) return std::nullopt;
  return next_try_ms_;
}

bool Outbox::overdue(int64_t now_ms) const { return paused() && now_ms - *since_ms_ > settings_.stop_after_ms; }

std::string Outbox::describe() const {
  if (!paused()) return "";
  return "store not writable since " + iso_utc(*since_ms_) + ": " + reason_ + "; " + std::to_string(queue_.size()) +
         " rows waiting" + (dropped_ ? ", " + std::to_string(dropped_) + " dropped" : "");
}

}  // namespace soak
