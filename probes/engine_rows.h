// Pure pieces of the probe engine: how a finished transfer becomes the fields
// and the outcome of a ProbeResult row, and the figures computed over several
// rows (burst summary, shared-prefix reuse ratio). No I/O, no clock: the engine
// hands in the transport's stamps; everything here is tested on literal values.
//
// Thread-agnostic; nothing throws.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/burst_serial.h"
#include "core/types.h"
#include "probes/openai_chat.h"
#include "probes/transport/http_types.h"

namespace soak::probes {

struct Runtime;  // probes/runtimes/runtime.h

// Rows keep at most this much of a failing answer (bodies are never stored).
inline constexpr size_t kExcerptChars = 160;

// Who ended a transfer that the transport reports as Cancelled: the probe
// itself (the cancel probe cuts its stream on purpose) or soakd's shutdown /
// plan change (recorded as cancelled_by_daemon, never a candidate failure).
enum class CutBy { Daemon, Probe };

TransportEnd transport_end(EndReason r, CutBy cancelled_by);

// Where a request's client timings count from: the moment the request left —
// its connection (new or reused) was ready and the request about to be written
// — not when soakd queued it, nor when curl created its socket. In a burst of
// 80, curl creates every socket and works through their handshakes before
// sending any request; counting from start() charges that (tens of ms) to the
// runtime's TTFT, and counting from socket creation still a few ms. A request
// that never got a connection counts from its socket's creation, else start().
int64_t request_origin_ns(const TransferTimes& t);
// The setup of a new connection before the request left (socket created ->
// ready), in µs; 0 on a reused connection; nullopt when none was ever ready.
std::optional<int64_t> connect_setup_us(const TransferTimes& t);
RequestClock request_clock(const TransferTimes& t);

// A row with its probe kind and workload locator set; every other field at
// its "not measured" value.
ProbeResult make_row(ProbeKind kind, std::string workload_id);

// Status, byte count and the client stamps that every request has (connect,
// first byte, done), relative to the request start.
// A slot request that waited in the runtime's queue also gets its queue wait
// (queue_wait_us, from the same origin as the client stamps).
void fill_transfer(const TransferResult& t, ProbeResult& row);
// The row's words for a request that waited in the runtime's queue ("waited
// 8.9 s in the runtime's queue (/metrics: 1 request waiting)"; "held 20.0 s
// ..." when it never left it); `with_why` false leaves out what showed the
// runtime busy (a queue_timeout's detail already says it). Empty for a request
// that never waited there.
std::string queue_note(const TransferResult& t, bool with_why = true);

// A non-chat route (health, model list, props, slots, metrics, tokenize,
// embeddings, rerank): the transport's end and the HTTP status. Content checks
// are the caller's, after this answers Clean.
Verdict classify_plain(TransportEnd end, const TransferResult& t);

// The health route, read by the runtime's entry (Runtime::read_health):
// llama.cpp's 503 "Loading model" -> loading, Rapid-MLX draining -> http_5xx,
// any answer that is not the runtime's "up" -> its status class.
Verdict classify_health(const Runtime& runtime, TransportEnd end, const TransferResult& t);

// A short, single-line excerpt of what came back, for a failing row: the
// error body of a non-2xx answer, else the answer text, reasoning or tool
// arguments, else the first recorded problem. Secrets are scrubbed.
std::string failure_excerpt(const ChatResult& r, std::string_view error_body);
std::string failure_excerpt(std::string_view body);

// ---------------------------------------------------------------- bursts

// One member of a burst, in monotonic ns (the transport's clock).
struct BurstMember {
  Outcome outcome = Outcome::HarnessError;
  int64_t start_ns = 0;
  std::optional<int64_t> sent_ns;  // connection ready, request about to leave
  std::optional<int64_t> first_token_ns;
  std::optional<int64_t> last_token_ns;
  int64_t done_ns = 0;
  std::optional<int64_t> completion_tokens;
};

struct BurstSummary {
  int n = 0;
  int clean = 0;
  std::optional<double> ttft_p50_ms, ttft_p95_ms, ttft_max_ms;
  std::optional<double> wall_p50_ms, wall_p95_ms, wall_max_ms;
  std::optional<double> aggregate_tps;   // completion tokens of all members / (last done - first start)
  std::optional<double> send_spread_ms;  // first to last request leaving soakd
  int peak_decoding = 0;                 // most members decoding at one instant
  std::optional<double> service_ms;      // one request's service: fastest TTFT + median decode time
  std::optional<double> queue_span_ms;   // last member's TTFT - first member's TTFT
  std::optional<double> queue_ratio;     // queue_span / ((n - 1) * service): 1 = a whole service per place
  int answered = 0;                      // members answered with a first token (clean or cut by the runtime's cap)
  bool serialized = false;               // served one at a time (core/burst_serial.h), at the default share
  // Set by the burst step: the runtime's slots, the floors it read the queue
  // with (the candidate's judge.serial_min_share and serial_min_effect_ms;
  // `serialized` then at that share), and what a serialized burst means for
  // it: "failure" with > 1 slot and an effect above the floors, "under_floor"
  // with > 1 slot and a rise per place under judge.serial_min_effect_ms,
  // "expected" with one slot, "unknown" without a slot count.
  std::optional<int> runtime_slots;
  std::optional<SerialFloors> floors;
  std::string fifo;
  BurstQueueFigures queue_figures() const;  // what core/burst_serial.h reads (and the judge reads back)
  std::string to_json() const;
};

// FIFO serialization is judged from evidence that requests waited (S4: 30-80
// POSTs, p50 ≈ p95 ≈ max): sorted by time to first token, members served one
// at a time each wait a whole service time of the ones before — TTFT climbs a
// staircase whose span is about (n - 1) service times (queue_ratio near 1; with
// k slots about 1/k). Serialized (core/burst_serial.h read_serial): n >=
// kMinSerializedMembers, every member answered with a first token, queue_ratio
// >= the share (kSerializedQueueRatio by default) and never two decoding at
// once (decode intervals [first, last token] that merely touch do not
// overlap). Decode windows alone prove nothing: a runtime that writes a short
// answer in one go has windows that never overlap and no queue at all. A pair
// proves too little: one request that reached a free slot a moment late (a
// busy host, the other's prefill still running) looks exactly like a queue of
// two, so a staircase needs at least three steps. Whether the rise per place
// is an effect a user would feel is the floors' (judge.serial_min_effect_ms):
// the burst step and the judge apply them to these figures.
inline constexpr double kSerializedQueueRatio = kDefaultSerialMinShare;
using soak::kMinSerializedMembers;
BurstSummary summarize_burst(const std::vector<BurstMember>& members);

// Shared prefix: median TTFT of the turns that reuse the prefix over the TTFT
// of the cold first turn (docs/DESIGN.md §2.3: median(prefix)/cold). Lower is
// better; nullopt without a cold figure or any prefix figure.
// The seeds' prefix-cache rule: the runtime reuses a shared prefix when the
// median prefix turn's time to first token is below this fraction of the cold one.
inline constexpr double kPrefixReuseRatio = 0.2;
std::optional<double> reuse_ratio(std::optional<int64_t> cold_ttft_us, const std::vector<int64_t>& prefix_ttfts_us);

// Nearest-rank percentile of unsorted values (q in (0, 1]); nullopt when empty.
std::optional<double> nearest_rank(std::vector<double> values, double q);

}  // namespace soak::probes
