#include "probes/queue_watch.h"

#include <algorithm>
#include <string>

#include "probes/prometheus.h"
#include "probes/runtime_metrics.h"
#include "probes/transport/http_types.h"

namespace soak::probes {

namespace {

bool has(const Runtime& rt, QueueSource s) {
  switch (s) {
    case QueueSource::Slots: return rt.slots && rt.read_slots;
    case QueueSource::Metrics: return rt.metrics && !rt.series.waiting.empty();
    case QueueSource::Status: return rt.status && rt.read_status;
    case QueueSource::None: return false;
  }
  return false;
}

QueueSource after(QueueSource s) {
  switch (s) {
    case QueueSource::Slots: return QueueSource::Metrics;
    case QueueSource::Metrics: return QueueSource::Status;
    default: return QueueSource::None;
  }
}

}  // namespace

QueueSource next_queue_source(const Runtime& rt, QueueSource failed) {
  QueueSource s = after(failed);
  while (s != QueueSource::None && !has(rt, s)) s = after(s);
  return s;
}

QueueSource first_queue_source(const Runtime& rt) {
  return has(rt, QueueSource::Slots) ? QueueSource::Slots : next_queue_source(rt, QueueSource::Slots);
}

const HttpRoute* queue_route(const Runtime& rt, QueueSource s) {
  if (!has(rt, s)) return nullptr;
  switch (s) {
    case QueueSource::Slots: return &*rt.slots;
    case QueueSource::Metrics: return &*rt.metrics;
    case QueueSource::Status: return &*rt.status;
    case QueueSource::None: break;
  }
  return nullptr;
}

Result<QueueReading> read_queue(const Runtime& rt, QueueSource s, std::string_view body) {
  if (!has(rt, s)) return make_error("the runtime has no such queue route");
  QueueReading q;
  if (s == QueueSource::Slots) {
    auto slots = rt.read_slots(body);
    if (!slots.ok()) return slots.error();
    std::vector<int64_t> tasks;
    for (const auto& x : *slots)
      if (x.is_processing) tasks.push_back(x.id_task.value_or(-1 - x.id));
    std::sort(tasks.begin(), tasks.end());
    q.slot_tasks = std::move(tasks);
    q.slots_total = static_cast<int64_t>(slots->size());
  } else if (s == QueueSource::Metrics) {
    q.waiting = queue_depth_from_metrics(rt.series, parse_prometheus_text(body)).waiting;
    if (!q.waiting) return make_error("no " + std::string(rt.series.waiting) + " in the metrics");
  } else {
    auto st = rt.read_status(body);
    if (!st.ok()) return st.error();
    if (!st->waiting_requests) return make_error("the status names no waiting requests");
    q.waiting = st->waiting_requests;
  }
  return q;
}

bool queue_moved(const QueueReading& before, const QueueReading& now) {
  if (before.slot_tasks && now.slot_tasks && *before.slot_tasks != *now.slot_tasks) return true;
  return before.waiting && now.waiting && *now.waiting < *before.waiting;
}

std::optional<bool> queue_busy(const QueueReading& r) {
  if (r.waiting) return *r.waiting > 0;
  if (r.slot_tasks && r.slots_total && *r.slots_total > 0)
    return static_cast<int64_t>(r.slot_tasks->size()) >= *r.slots_total;
  return std::nullopt;
}

std::string describe_queue(QueueSource s, const QueueReading& r) {
  switch (s) {
    case QueueSource::Slots:
      if (r.slot_tasks && r.slots_total)
        return "/slots: " + std::to_string(r.slot_tasks->size()) + " of " + std::to_string(*r.slots_total) +
               " slots busy";
      break;
    case QueueSource::Metrics:
    case QueueSource::Status:
      if (r.waiting)
        return std::string(s == QueueSource::Metrics ? "/metrics: " : "status: ") + std::to_string(*r.waiting) +
               (*r.waiting == 1 ? " request waiting" : " requests waiting");
      break;
    case QueueSource::None: break;
  }
  return "the runtime's queue";
}

namespace {
QueueSource busy_after(QueueSource s) {
  switch (s) {
    case QueueSource::Metrics: return QueueSource::Status;
    case QueueSource::Status: return QueueSource::Slots;
    default: return QueueSource::None;
  }
}
}  // namespace

QueueSource next_busy_source(const Runtime& rt, QueueSource failed) {
  QueueSource s = busy_after(failed);
  while (s != QueueSource::None && !has(rt, s)) s = busy_after(s);
  return s;
}

QueueSource first_busy_source(const Runtime& rt) {
  return has(rt, QueueSource::Metrics) ? QueueSource::Metrics : next_busy_source(rt, QueueSource::Metrics);
}

int64_t queue_poll_ms(int64_t stall_timeout_ms) {
  if (stall_timeout_ms <= 0) return kQueuePollMaxMs;
  return std::clamp(stall_timeout_ms / kQueuePollsPerStall, kQueuePollMinMs, kQueuePollMaxMs);
}

bool QueueWatch::on_answer(int http_status, std::string_view body) {
  if (source_ == QueueSource::None) return false;
  // No answer (the reading was cancelled with its group, timed out behind a
  // busy server, or the connection failed): nothing learnt about the route.
  if (http_status == 0) return false;
  Result<QueueReading> r =
      is_2xx(http_status) ? read_queue(rt_, source_, body) : Result<QueueReading>(make_error("not 2xx"));
  if (!r.ok()) {
    source_ = next_queue_source(rt_, source_);
    last_.reset();
    return false;
  }
  const bool moved = last_ && queue_moved(*last_, *r);
  last_ = std::move(*r);
  return moved;
}

}  // namespace soak::probes
