// Interpretation of OpenAI-compatible chat completion answers: what arrived,
// when it arrived, and which outcome class it earns (docs/DESIGN.md §2.1, §2.5, §2.6).
//
// Pure: no I/O, no clock. The transport hands each SSE event's data field to a
// ChatStreamAccumulator together with the monotonic time (ns) it arrived; the
// probe runner then asks fill_probe_result() for the row fields and
// classify_chat() (probes/chat_contract.h) for the outcome. Malformed input never throws: it becomes a
// recorded problem (ChatResult::problems) and, where it matters, an outcome.
//
// Ownership and threads: an accumulator belongs to one request and is used on
// the loop thread that receives that request's events. Nothing here is shared.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/types.h"
#include "probes/prefill_progress.h"

namespace soak::probes {

// ---------------------------------------------------------------- result shape

// llama.cpp `timings` (tools/server/server-task.cpp result_timings::to_json):
// draft_n and draft_n_accepted are present only when draft_n > 0.
struct ServerTimings {
  std::optional<int64_t> prompt_n, cache_n, predicted_n, draft_n, draft_n_accepted;
  std::optional<double> prompt_ms, prompt_per_second, predicted_ms, predicted_per_second;
};

struct Usage {
  std::optional<int64_t> prompt_tokens, completion_tokens, total_tokens;
  std::optional<int64_t> reasoning_tokens;  // completion_tokens_details.reasoning_tokens
  std::optional<int64_t> cached_tokens;     // prompt_tokens_details.cached_tokens, or oMLX usage.cached_tokens
  // Server-side figures some runtimes add to usage (oMLX omlx/server.py
  // stream_chat_completion: seconds and tokens/s), or LM Studio /api/v0 `stats`.
  std::optional<double> server_ttft_s, server_prompt_tps, server_generation_tps;
  std::optional<double> server_load_s;        // oMLX model_load_duration: a cold load the request waited for
  std::optional<double> server_generation_s;  // LM Studio stats.generation_time
};

struct ToolCall {
  int index = 0;
  std::string id;
  std::string type;
  std::string name;
  std::string arguments;  // concatenated fragments, exactly as received
};

// An error reported by the runtime: an `{"error": ...}` object inside a stream,
// or the body of a non-2xx answer.
struct ApiError {
  std::optional<int> code;
  std::string type;
  std::string message;
  std::optional<int64_t> n_prompt_tokens, n_ctx;  // llama.cpp exceed_context_size_error
};

enum class ResponseMode { Stream, NonStream };

struct ChatResult {
  ResponseMode mode = ResponseMode::Stream;

  // Monotonic arrival times (ns, the transport's clock). A token is a delta that
  // carries generated output: answer content, reasoning, or tool-call text. A
  // role-only chunk, an empty delta and a keep-alive chunk are not tokens.
  std::optional<int64_t> first_event_ns;    // first data event that is not a keep-alive
  std::optional<int64_t> first_token_ns;    // first output of any kind
  std::optional<int64_t> first_content_ns;  // first answer content (not reasoning)
  std::optional<int64_t> last_token_ns;
  std::optional<int64_t> terminal_ns;      // `data: [DONE]` (stream) / parsed body (non-stream)
  std::vector<int64_t> token_arrivals_ns;  // every output-bearing event, in order (ITL)

  bool saw_done = false;
  int64_t data_events = 0;       // every data event, keep-alives included
  int64_t keepalive_events = 0;  // oMLX `"model":"keepalive"` chunks
  // llama.cpp prompt_progress chunks that carry nothing else: reports of the
  // prefill, not events of the answer (no first event, no token, not a body).
  int64_t progress_events = 0;
  PrefillProgress prefill;       // prefill progress reported (chunks and MLX-LM comments)
  int64_t content_events = 0;    // events carrying answer content or tool-call text
  int64_t reasoning_events = 0;  // events carrying reasoning

  std::string content;
  std::string reasoning;
  std::vector<ToolCall> tool_calls;  // ordered by index
  std::string finish_reason;
  std::optional<Usage> usage;
  std::optional<ServerTimings> timings;
  std::string model;  // response `model`; keep-alive chunks never set it
  std::string system_fingerprint;
  std::optional<ApiError> error;      // `{"error": ...}` inside the stream or body
  int64_t malformed_events = 0;       // data that is not a JSON object (or a body that is not)
  std::vector<std::string> problems;  // what was odd, first kMaxRecordedProblems only
  int64_t problems_dropped = 0;       // problems beyond that cap
};

// A stream of garbage must not grow memory without bound.
inline constexpr size_t kMaxRecordedProblems = 16;

// ---------------------------------------------------------------- streaming

class ChatStreamAccumulator {
 public:
  // `data` is the event's data field (multi-line data already joined with '\n'
  // by the SSE parser); `arrival_ns` is when the event completed. SSE comments
  // (`: ping`, `: keepalive`) are not events and must not be passed here.
  void on_event(std::string_view data, int64_t arrival_ns);
  // An SSE comment's text: MLX-LM's `keepalive n/m` is a prefill report
  // (result().prefill); any other comment is a plain keep-alive and ignored.
  void on_comment(std::string_view text);

  const ChatResult& result() const { return r_; }
  ChatResult take() { return std::move(r_); }

 private:
  void note_problem(std::string what);
  ChatResult r_;
};

// A whole non-stream body (leading whitespace allowed: oMLX sends spaces as
// keep-alive before the JSON). `arrival_ns` is when the body was complete.
ChatResult parse_chat_completion(std::string_view body, int64_t arrival_ns);

// The error object of a non-2xx body: `{"error":{...}}` (llama.cpp, vLLM,
// oMLX), `{"error":"text"}` (mlx-lm), `{"detail":...}` (FastAPI servers), or
// plain text. Never fails: an unparseable body becomes the message.
ApiError parse_api_error(std::string_view body);

// ---------------------------------------------------------------- row fields

// Monotonic timestamps (ns) the transport recorded for the request.
// start_ns is the request's origin (see request_origin_ns); connect_us the
// setup of a new connection before it (0 when reused, nullopt when none).
struct RequestClock {
  int64_t start_ns = 0;
  std::optional<int64_t> connect_us, first_byte_ns, done_ns;
};

struct ItlStats {
  std::optional<int64_t> p50_us, p95_us, max_us;
};
// Inter-token latency over consecutive arrivals (nearest-rank percentiles).
ItlStats itl_stats(const std::vector<int64_t>& arrivals_ns);

// docs/DESIGN.md §2.5: a row whose first output and finish are implausibly close is
// flagged, not averaged in. The rule: with at least kTimingArtifactMinTokens
// completion tokens, the row is an artifact when all output arrived in a single
// event or at a single instant, or when the implied client decode rate
// (tokens-1)/(last-first) exceeds kTimingArtifactMaxDecodeTps — no local
// runtime decodes one stream that fast, so the runtime buffered its output and
// flushed it at once (or the stream was replayed from a cache of chunks).
inline constexpr int64_t kTimingArtifactMinTokens = 4;
inline constexpr double kTimingArtifactMaxDecodeTps = 5000.0;

struct DecodeRate {
  std::optional<double> tokens_per_s;
  bool timing_artifact = false;
};
// `tokens` is usage.completion_tokens when known, else the output event count.
DecodeRate client_decode_rate(int64_t tokens, const std::vector<int64_t>& arrivals_ns);

// Fills the client timing, token, server_* and identity fields of `out` from
// the accumulated answer and the transport's clock. Client figures and server
// figures land in separate columns and are never mixed.
void fill_probe_result(const ChatResult& r, const RequestClock& clock, ProbeResult& out);

// ---------------------------------------------------------------- outcomes

// How the transfer ended, as the transport saw it (the probe runner maps the
// transport's own status onto this).
enum class TransportEnd {
  Completed,       // the body ended normally (server finished or closed)
  ConnectionLost,  // the connection broke mid-transfer
  ConnectRefused,
  ConnectTimeout,
  WallTimeout,
  Stalled,            // no content event within the stall timeout
  QueueTimeout,       // the wall timeout passed while the request waited in the runtime's queue
  SizeCapped,         // response-size cap hit
  CancelledByDaemon,  // soakd aborted it (shutdown, plan change)
  LocalError,         // soakd's own failure (curl setup, out of memory, ...)
};

enum class UsagePolicy { Required, NotRequired };

// Where the truth about "which model answered" lives for a runtime.
enum class IdentityEvidence {
  ResponseModel,  // response `model` is the runtime's own name for what it served
  EchoesRequest,  // response `model` echoes the request; identity comes from the model list
};

struct ChatExpectations {
  ResponseMode mode = ResponseMode::Stream;
  UsagePolicy usage = UsagePolicy::Required;
  IdentityEvidence identity = IdentityEvidence::ResponseModel;
  std::string canonical_model;  // the candidate's canonical id
  std::string requested_model;  // what the request's `model` said
};

struct Verdict {
  // A constructor, so that {outcome, detail} leaves the excerpt empty without
  // every such verdict spelling it out.
  Verdict(Outcome o = Outcome::HarnessError, std::string d = {}, std::string e = {})
      : outcome(o), detail(std::move(d)), excerpt(std::move(e)) {}
  Outcome outcome;
  std::string detail;
  // The failure's own excerpt for the row (leaked markup: the text around
  // it); empty: the row's default excerpt (engine_rows.h failure_excerpt).
  std::string excerpt;
};

}  // namespace soak::probes
