#include "probes/engine_rows.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <utility>

#include <nlohmann/json.hpp>

#include "core/log_text.h"
#include "probes/chat_contract.h"
#include "probes/runtimes/runtime.h"
#include "probes/text_util.h"
#include "probes/transport/deadline.h"

namespace soak::probes {

TransportEnd transport_end(EndReason r, CutBy cancelled_by) {
  switch (r) {
    case EndReason::Completed: return TransportEnd::Completed;
    case EndReason::ConnectRefused: return TransportEnd::ConnectRefused;
    case EndReason::ConnectTimeout: return TransportEnd::ConnectTimeout;
    case EndReason::Timeout: return TransportEnd::WallTimeout;
    case EndReason::Stalled: return TransportEnd::Stalled;
    case EndReason::QueueTimeout: return TransportEnd::QueueTimeout;
    case EndReason::Truncated: return TransportEnd::SizeCapped;
    case EndReason::PeerClosed: return TransportEnd::ConnectionLost;
    // A cut the probe made on purpose is judged by the probe, not as a loss.
    case EndReason::Cancelled:
      return cancelled_by == CutBy::Probe ? TransportEnd::Completed : TransportEnd::CancelledByDaemon;
    case EndReason::Error: return TransportEnd::LocalError;
  }
  return TransportEnd::LocalError;
}

int64_t request_origin_ns(const TransferTimes& t) {
  if (t.connected_ns) return *t.connected_ns;
  if (t.connect_start_ns) return *t.connect_start_ns;
  return t.start_ns;
}

std::optional<int64_t> connect_setup_us(const TransferTimes& t) {
  if (!t.connected_ns) return std::nullopt;
  if (!t.connect_start_ns) return 0;
  return std::max<int64_t>(0, *t.connected_ns - *t.connect_start_ns) / 1000;
}

RequestClock request_clock(const TransferTimes& t) {
  RequestClock c;
  c.start_ns = request_origin_ns(t);
  c.connect_us = connect_setup_us(t);
  c.first_byte_ns = t.first_byte_ns;
  c.done_ns = t.done_ns;
  return c;
}

ProbeResult make_row(ProbeKind kind, std::string workload_id) {
  ProbeResult r;
  r.kind = kind;
  r.workload_id = std::move(workload_id);
  return r;
}

void fill_transfer(const TransferResult& t, ProbeResult& row) {
  if (t.head.status > 0) row.http_status = t.head.status;
  row.bytes_received = t.bytes_received;
  const int64_t origin = request_origin_ns(t.times);
  auto rel = [&](std::optional<int64_t> ns) -> std::optional<int64_t> {
    if (!ns) return std::nullopt;
    return (*ns - origin) / 1000;
  };
  row.t_connect_us = connect_setup_us(t.times);
  row.t_first_byte_us = rel(t.times.first_byte_ns);
  row.t_done_us = rel(t.times.done_ns);
  if (auto wait = queue_wait_ns(t.queue.first_held_ns, t.queue.left_ns, t.times.done_ns, origin))
    row.queue_wait_us = *wait / 1000;
}

std::string queue_note(const TransferResult& t, bool with_why) {
  const auto wait = queue_wait_ns(t.queue.first_held_ns, t.queue.left_ns, t.times.done_ns, request_origin_ns(t.times));
  if (!wait) return {};
  char figure[32];
  std::snprintf(figure, sizeof figure, "%.1f s", static_cast<double>(*wait) / 1e9);
  std::string note = std::string(t.queue.left_ns ? "waited " : "held ") + figure + " in the runtime's queue";
  if (with_why && !t.queue.why.empty()) note += " (" + t.queue.why + ")";
  return note;
}

Verdict classify_plain(TransportEnd end, const TransferResult& t) {
  switch (end) {
    case TransportEnd::ConnectRefused: return {Outcome::ConnectRefused, "connection refused"};
    case TransportEnd::ConnectTimeout: return {Outcome::ConnectTimeout, "no connection within the connect timeout"};
    case TransportEnd::CancelledByDaemon: return {Outcome::CancelledByDaemon, "cancelled by soakd"};
    case TransportEnd::LocalError:
      return {Outcome::HarnessError, "soakd could not run the request: " + text::excerpt(t.detail, kExcerptChars)};
    case TransportEnd::WallTimeout: return {Outcome::Timeout, "wall timeout"};
    case TransportEnd::Stalled: return {Outcome::Stalled, "no byte within the stall timeout"};
    case TransportEnd::QueueTimeout:
      return {Outcome::QueueTimeout, "the wall timeout passed while the request waited in the runtime's queue"};
    case TransportEnd::SizeCapped: return {Outcome::Truncated, "response-size cap hit"};
    default: break;
  }
  const bool lost = end == TransportEnd::ConnectionLost;
  if (t.head.status == 0) {
    return {lost ? Outcome::ConnectionReset : Outcome::MalformedResponse,
            lost ? "connection closed or reset before any status line" : "no HTTP status"};
  }
  if (t.head.status < 200 || t.head.status >= 300) return classify_http_error(t.head.status, t.body);
  if (lost) return {Outcome::NoTerminal, "connection lost before the body was complete"};
  return {Outcome::Clean, ""};
}

Verdict classify_health(const Runtime& runtime, TransportEnd end, const TransferResult& t) {
  const bool answered = t.head.status > 0 && (end == TransportEnd::Completed || end == TransportEnd::ConnectionLost);
  if (!answered) return classify_plain(end, t);
  HealthVerdict h = runtime.read_health(t.head.status, t.body);
  switch (h.state) {
    case HealthState::Up: return {Outcome::Clean, ""};
    case HealthState::Loading: return {Outcome::Loading, h.detail};
    case HealthState::Draining: return {Outcome::Http5xx, "draining: " + h.detail};
    case HealthState::Down: break;
  }
  if (t.head.status >= 500) return {Outcome::Http5xx, h.detail};
  if (t.head.status >= 400) return {Outcome::Http4xx, h.detail};
  return {Outcome::MalformedResponse, h.detail};
}

std::string failure_excerpt(std::string_view body) { return text::excerpt(redact(text::trim(body)), kExcerptChars); }

std::string failure_excerpt(const ChatResult& r, std::string_view error_body) {
  if (!text::trim(error_body).empty()) return failure_excerpt(error_body);
  if (!r.content.empty()) return failure_excerpt(r.content);
  if (!r.reasoning.empty()) return failure_excerpt(r.reasoning);
  for (const auto& c : r.tool_calls)
    if (!c.arguments.empty()) return failure_excerpt(c.name + " " + c.arguments);
  if (!r.problems.empty()) return failure_excerpt(r.problems.front());
  return {};
}

// ---------------------------------------------------------------- bursts

std::optional<double> nearest_rank(std::vector<double> values, double q) {
  if (values.empty()) return std::nullopt;
  std::sort(values.begin(), values.end());
  auto k = static_cast<size_t>(std::ceil(q * static_cast<double>(values.size())));
  return values[k == 0 ? 0 : std::min(k, values.size()) - 1];
}

namespace {

constexpr double kNsPerMs = 1e6;

int peak_overlap(const std::vector<std::pair<int64_t, int64_t>>& intervals) {
  // Ends sort before starts at the same instant: touching intervals do not overlap.
  std::vector<std::pair<int64_t, int>> edges;
  for (const auto& [a, b] : intervals) {
    edges.emplace_back(a, +1);
    edges.emplace_back(b, -1);
  }
  std::sort(edges.begin(), edges.end());
  int now = 0, peak = 0;
  for (const auto& e : edges) {
    now += e.second;
    peak = std::max(peak, now);
  }
  return peak;
}

void put(nlohmann::ordered_json& j, const char* key, const std::optional<double>& v) {
  if (v) {
    j[key] = std::round(*v * 1000.0) / 1000.0;
  } else {
    j[key] = nullptr;
  }
}

}  // namespace

BurstSummary summarize_burst(const std::vector<BurstMember>& members) {
  BurstSummary s;
  s.n = static_cast<int>(members.size());
  if (members.empty()) return s;
  std::vector<double> ttfts, walls, decode_ms;
  std::vector<std::pair<int64_t, int64_t>> decoding;
  int64_t first_start = members.front().start_ns, last_done = members.front().done_ns;
  std::optional<int64_t> first_sent, last_sent;
  int64_t tokens = 0;
  for (const auto& m : members) {
    // An answer the runtime cut at its own token cap was still served: the cap
    // ends the decode, not the wait for the first token that shows a queue.
    const bool answered = m.outcome == Outcome::Clean || m.outcome == Outcome::ServerTokenCap;
    if (answered && m.first_token_ns) ++s.answered;
    if (m.first_token_ns && m.last_token_ns)
      decode_ms.push_back(static_cast<double>(*m.last_token_ns - *m.first_token_ns) / kNsPerMs);
    if (m.outcome == Outcome::Clean) {
      ++s.clean;
      walls.push_back(static_cast<double>(m.done_ns - m.start_ns) / kNsPerMs);
    }
    if (m.first_token_ns) ttfts.push_back(static_cast<double>(*m.first_token_ns - m.start_ns) / kNsPerMs);
    if (m.first_token_ns && m.last_token_ns && *m.last_token_ns > *m.first_token_ns)
      decoding.emplace_back(*m.first_token_ns, *m.last_token_ns);
    if (m.completion_tokens) tokens += *m.completion_tokens;
    first_start = std::min(first_start, m.start_ns);
    last_done = std::max(last_done, m.done_ns);
    if (m.sent_ns) {
      first_sent = first_sent ? std::min(*first_sent, *m.sent_ns) : *m.sent_ns;
      last_sent = last_sent ? std::max(*last_sent, *m.sent_ns) : *m.sent_ns;
    }
  }
  s.ttft_p50_ms = nearest_rank(ttfts, 0.50);
  s.ttft_p95_ms = nearest_rank(ttfts, 0.95);
  s.ttft_max_ms = nearest_rank(ttfts, 1.0);
  s.wall_p50_ms = nearest_rank(walls, 0.50);
  s.wall_p95_ms = nearest_rank(walls, 0.95);
  s.wall_max_ms = nearest_rank(walls, 1.0);
  if (tokens > 0 && last_done > first_start)
    s.aggregate_tps = static_cast<double>(tokens) / (static_cast<double>(last_done - first_start) / 1e9);
  if (first_sent && last_sent) s.send_spread_ms = static_cast<double>(*last_sent - *first_sent) / kNsPerMs;
  s.peak_decoding = peak_overlap(decoding);
  if (!ttfts.empty()) {
    const auto fastest = nearest_rank(ttfts, 0.0);
    const auto decode = nearest_rank(decode_ms, 0.5);
    s.service_ms = *fastest + decode.value_or(0.0);
    s.queue_span_ms = *s.ttft_max_ms - *fastest;
    if (s.n >= 2 && *s.service_ms > 0)
      s.queue_ratio = *s.queue_span_ms / (static_cast<double>(s.n - 1) * *s.service_ms);
  }
  s.serialized = read_serial(s.queue_figures(), SerialFloors{}).staircase();
  return s;
}

BurstQueueFigures BurstSummary::queue_figures() const {
  BurstQueueFigures f;
  f.n = n;
  f.answered = answered;
  f.stored_serialized = serialized;
  f.peak_decoding = peak_decoding;
  f.service_ms = service_ms;
  f.queue_span_ms = queue_span_ms;
  f.queue_ratio = queue_ratio;
  return f;
}

std::string BurstSummary::to_json() const {
  nlohmann::ordered_json j;
  j["n"] = n;
  j["clean"] = clean;
  put(j, "ttft_p50_ms", ttft_p50_ms);
  put(j, "ttft_p95_ms", ttft_p95_ms);
  put(j, "ttft_max_ms", ttft_max_ms);
  put(j, "wall_p50_ms", wall_p50_ms);
  put(j, "wall_p95_ms", wall_p95_ms);
  put(j, "wall_max_ms", wall_max_ms);
  put(j, "aggregate_tps", aggregate_tps);
  put(j, "send_spread_ms", send_spread_ms);
  j["peak_decoding"] = peak_decoding;
  put(j, "service_ms", service_ms);
  put(j, "queue_span_ms", queue_span_ms);
  put(j, "queue_ratio", queue_ratio);
  put(j, "rise_per_place_ms", queue_figures().rise_per_place_ms());
  j["answered"] = answered;
  j["serialized"] = serialized;
  if (runtime_slots) j["runtime_slots"] = *runtime_slots;
  if (floors) j["serial_floors"] = {{"min_share", floors->min_share}, {"min_effect_ms", floors->min_effect_ms}};
  if (!fifo.empty()) j["fifo"] = fifo;
  return j.dump();
}

std::optional<double> reuse_ratio(std::optional<int64_t> cold_ttft_us, const std::vector<int64_t>& prefix_ttfts_us) {
  if (!cold_ttft_us || *cold_ttft_us <= 0 || prefix_ttfts_us.empty()) return std::nullopt;
  std::vector<double> v(prefix_ttfts_us.begin(), prefix_ttfts_us.end());
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  const double median = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
  return median / static_cast<double>(*cold_ttft_us);
}

}  // namespace soak::probes
