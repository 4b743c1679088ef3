// Domain vocabulary shared by every layer: runtime kinds, outcome classes,
// stages, verdicts, and the row types that the store persists. Plain values,
// no behaviour beyond name <-> enum conversion; owned by whoever holds them.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/golden.h"

namespace soak {

// ---------------------------------------------------------------- runtimes
enum class RuntimeKind { LlamaCpp, MlxLm, Omlx, Vllm, RapidMlx, Ollama, LmStudio, OpenAI };
std::string_view to_string(RuntimeKind k);
std::optional<RuntimeKind> parse_runtime_kind(std::string_view s);
std::string runtime_kind_names();  // "llama.cpp, mlx-lm, ..." for error messages

// ---------------------------------------------------------------- outcomes
// Every probe attempt ends in exactly one Outcome (docs/DESIGN.md §2.1). HTTP 200 is
// not success: only Clean is a clean pass.
enum class Outcome {
  Clean,
  // transport / protocol
  ConnectRefused,     // TCP connect refused or host unreachable
  ConnectTimeout,     // no TCP connection within the connect timeout
  Loading,            // runtime answered 503 while loading the model
  Http4xx,            // request rejected (includes 404 of a missing route)
  Http5xx,            // server error status
  ContextExceeded,    // runtime refused the prompt as longer than its context
  NoBody,             // HTTP 200 and then no body / no SSE event at all
  ConnectionReset,    // connection closed or reset before any status line (refused or dropped, not a hang)
  NoTerminal,         // stream ended without data: [DONE]
  StreamError,        // an error object arrived inside the stream
  Stalled,            // no content event for the stall timeout (keep-alives don't count)
  Timeout,            // wall timeout hit
  QueueTimeout,       // the wall timeout hit while the request still waited in the runtime's queue (no first byte)
  Truncated,          // response-size cap hit
  MalformedResponse,  // body is not the JSON / SSE shape the API promises
  MissingFinishReason,
  MissingUsage,
  ServerTokenCap,  // finish_reason "length" though soakd sent no max_tokens: the runtime's own cap cut it
  // content
  IdentityMismatch,  // response `model` (or /v1/models) differs from the canonical id
  IdentityUnproven,  // the runtime only echoes the requested model: nothing proves which weights serve (never a pass)
  MissingMarker,
  EmptyAnswer,      // a probe that expects text got no answer content (reasoning alone is not an answer)
  LeakedMarkup,     // answer content carries reasoning markup, chat-template tokens, U+FFFD or control characters
  InvalidJson,      // strict-JSON probe: not JSON, or JSON violating the schema
  InvalidToolCall,  // no tool call, wrong name, arguments not valid JSON / schema
  EmptyToolArgs,    // tool call with `{}` arguments where an object was required
  MissingToolCall,  // an agent turn that needed a tool got an answer without a call
  Repetition,       // degenerate looping output
  StaleSlot,        // after a cancel the runtime did not free the slot in time
  SerializedBurst,  // burst requests served strictly one after another (FIFO)
  // soakd's own (never count against the candidate)
  CancelledByDaemon,
  HarnessError,
};
std::string_view to_string(Outcome o);
std::optional<Outcome> parse_outcome(std::string_view s);
std::string outcome_names();

enum class OutcomeCategory { Clean, CandidateFailure, Harness };
OutcomeCategory category_of(Outcome o);

// ---------------------------------------------------------------- probes
enum class ProbeKind {
  Health,
  Identity,
  Marker,
  Stream,
  StrictJson,
  ToolCall,
  LongContext,
  SharedPrefix,
  Burst,
  Cancel,
  Thinking,
  Repetition,
  Embeddings,
  Rerank,
  Scrape,
  Agent,
  Build,
  Capacity,     // N long prompts of one size at once (docs/DESIGN.md §3.9)
  Equivalence,  // the golden set's greedy answers, compared across builds (docs/DESIGN.md §3.13)
};
std::string_view to_string(ProbeKind k);
std::optional<ProbeKind> parse_probe_kind(std::string_view s);
std::string probe_kind_names();

// What a candidate serves (candidate key "kind"): chat completions, or one of
// the pooling routes. A pooling candidate is never sent a chat probe; its
// stages run the pooling probes instead (schedules/plan.h).
enum class WorkloadKind { Chat, Embedding, Rerank };
std::string_view to_string(WorkloadKind k);
std::optional<WorkloadKind> parse_workload_kind(std::string_view s);
std::string workload_kind_names();

enum class CacheState { None, Fresh, Repeat, SharedPrefix };
std::string_view to_string(CacheState c);
std::optional<CacheState> parse_cache_state(std::string_view s);
std::string cache_state_names();

// ---------------------------------------------------------------- stages
enum class StageKind { Smoke, Canary, Gate, Soak };
std::string_view to_string(StageKind k);
std::optional<StageKind> parse_stage_kind(std::string_view s);
std::string stage_kind_names();
inline constexpr StageKind kAllStages[] = {StageKind::Smoke, StageKind::Canary, StageKind::Gate, StageKind::Soak};

enum class StageState { Pending, Running, Passed, Failed, Hold, Inconclusive, Aborted, Blocked };
std::string_view to_string(StageState s);
std::optional<StageState> parse_stage_state(std::string_view s);
std::string stage_state_names();

enum class VerdictState { Running, Promoted, Rejected, Hold, Inconclusive, Blocked };
std::string_view to_string(VerdictState v);
std::optional<VerdictState> parse_verdict_state(std::string_view s);
std::string verdict_state_names();

// ---------------------------------------------------------------- locators
struct HostInfo {
  std::string hostname;
  std::string hw_model;  // e.g. "Mac15,14" or the Linux DMI product name
  int64_t mem_bytes = 0;
  std::string os_version;
};

struct Sampling {
  double temperature = 0.6;
  double top_p = 0.95;
  int top_k = 20;
  std::string to_json() const;  // canonical compact JSON, stored with every row
};

// ---------------------------------------------------------------- rows
// One probe attempt, as stored. Times are microseconds from request start
// (client side, monotonic clock); nullopt = the point was never reached.
struct ProbeResult {
  int64_t id = 0;  // assigned by the store
  int64_t candidate_id = 0;
  int64_t host_id = 0;
  std::optional<int64_t> stage_id;
  int64_t started_wall_ms = 0;
  ProbeKind kind = ProbeKind::Health;
  std::string task;                    // scheduled task that ran it ("functional", "agent", ...; "" for one-off probes)
  std::string workload_id;             // e.g. "long_context/32768/fresh"; never pools different workloads
  std::string fixture_hash;            // hash of the prompt fixture (not the prompt)
  std::optional<int64_t> size_tokens;  // target prompt size for sized workloads
  CacheState cache_state = CacheState::None;
  std::string sampling_json;
  std::optional<bool> thinking;      // enable_thinking as sent (nullopt: not sent)
  int client_concurrency = 1;        // requests in flight from soakd for this workload
  std::optional<int> runtime_slots;  // runtime's parallel slots (config or /props)
  std::optional<int64_t> group_id;   // burst / A-B slot grouping

  Outcome outcome = Outcome::HarnessError;
  std::optional<int> http_status;
  std::string detail;  // short human-readable reason for non-clean outcomes

  // client timings (µs from request start)
  std::optional<int64_t> t_connect_us, t_first_byte_us, t_first_event_us, t_first_token_us, t_last_token_us,
      t_terminal_us, t_done_us;
  std::optional<int64_t> itl_p50_us, itl_p95_us, itl_max_us;
  std::optional<double> client_decode_tps;  // (tokens-1) / (last - first token)
  bool timing_artifact = false;             // first output and finish implausibly close
  // Not stored: set when a judgment reads the row, if it overlapped another
  // candidate's heavy work on the host (judges/overlap.h); out of comparisons.
  bool overlapped_heavy = false;

  // tokens
  std::optional<int64_t> prompt_tokens, completion_tokens, reasoning_tokens;
  int64_t content_events = 0;  // content-bearing SSE events seen
  int64_t reasoning_events = 0;

  // server-reported (llama.cpp `timings`, oMLX usage extras, ...)
  std::optional<int64_t> server_prompt_n, server_cache_n, server_predicted_n;
  std::optional<double> server_prompt_ms, server_prompt_tps, server_predicted_ms, server_predicted_tps, server_ttft_ms;
  std::optional<int64_t> server_draft_n, server_draft_accepted;
  // oMLX usage.model_load_duration: the request waited for a cold model load
  // (its own column, and the row is kept out of TTFT and prefill comparisons).
  std::optional<double> server_load_ms;
  // The runtime's queue when the row was taken (scrape rows; identity rows of
  // runtimes whose served-state route says it): requests running / waiting
  // (llama.cpp requests_processing / requests_deferred, vLLM num_requests_*,
  // Rapid-MLX requests_*, oMLX /api/status active_requests / waiting_requests).
  std::optional<int64_t> server_running, server_waiting;
  // How long the request waited in the runtime's own queue (µs from request
  // start to when it could have left it), for a request whose first-content
  // budget ran out while the runtime was busy (docs/DESIGN.md §2.2); nullopt:
  // it was never found queued.
  std::optional<int64_t> queue_wait_us;

  std::string finish_reason;
  std::string response_model;
  int64_t bytes_received = 0;
  std::string body_hash;   // hash of the response body (bodies are not stored)
  std::string excerpt;     // short excerpt, on failure only
  std::string extra_json;  // probe-specific figures (burst spread, reuse ratio, ...)
  // The golden answer this row brought (kind equivalence, docs/DESIGN.md §3.13):
  // the store writes it to golden_answers with the row's candidate, stage and
  // time, not into this row. Held by pointer: a week of probe rows read for a
  // judgment is tens of thousands of them, and the answer is on a few dozen.
  std::shared_ptr<const GoldenAnswerRow> golden;
};

// Thermal pressure on one scale for both platforms: the values of macOS's
// "com.apple.system.thermalpressurelevel" notification state, as
// libkern/OSThermalNotification.h names them (platform/thermal.h reads them,
// and maps Linux's thermal zones onto them). Stored as the number.
enum class ThermalLevel { Nominal = 0, Moderate = 1, Heavy = 2, Trapping = 3, Sleeping = 4 };
std::string_view to_string(ThermalLevel t);
std::optional<ThermalLevel> parse_thermal_level(std::string_view s);
// The level a stored or notified number names (nullopt: not one of 0..4).
std::optional<ThermalLevel> thermal_level_of(int64_t value);

struct HostSample {
  int64_t id = 0;
  int64_t host_id = 0;
  int64_t wall_ms = 0;
  std::optional<int64_t> free_bytes, active_bytes, inactive_bytes, wired_bytes, compressed_bytes, available_bytes,
      total_bytes;
  std::optional<int64_t> swap_used_bytes, swap_total_bytes;
  std::optional<int64_t> pageins, pageouts, swapins, swapouts;  // cumulative counters
  std::optional<int> pressure_level;                            // macOS 1/2/4 normal/warn/critical
  std::optional<int> memorystatus_level;                        // macOS percent free
  std::optional<double> psi_some_avg10, psi_full_avg10;         // Linux PSI
  std::optional<int64_t> psi_some_total_us, psi_full_total_us;
  std::optional<int> thermal_level;  // ThermalLevel's number; nullopt: not read (or a store before schema 6)
  std::string error;                 // sampling error(s); empty when all calls succeeded
};

struct ProcessSample {
  int64_t id = 0;
  int64_t host_id = 0;
  std::optional<int64_t> candidate_id;
  int64_t wall_ms = 0;
  int pid = 0;
  std::string name;
  std::optional<int64_t> start_time;  // process start (for restart detection)
  std::optional<int64_t> footprint_bytes, resident_bytes, swap_bytes, pss_bytes;
  std::string error;
  // The pid names no process (it ended, or is a zombie waiting to be reaped),
  // whether that was seen before or while its files were read. Not stored:
  // the error text says so in the row.
  bool gone = false;
};

// What an event row records. A closed vocabulary: a stored kind that does not
// parse is an error when read, never a default.
enum class EventKind {
  DaemonStart,
  DaemonStop,
  ConfigReload,  // the daemon's own life
  BuildChange,
  Control,
  StageExtended,  // campaigns
  Gap,
  ClockStep,  // time not covered (sleep, stall, downtime), wall clock steps
  GuardTrip,  // memory guard
  ProcessRestart,
  ProcessGone,
  DuplicateEngine,  // the candidate's process
  MemoryBudget,     // the candidate's footprint went above its memory_budget
  HeavyWait,        // a heavy task held for the host began or ended a wait (campaigns)
  Notify,           // the notify command ran for a verdict: its outcome (daemon/notifier.h)
  // Nothing of the candidate's inference requests was served for longer than
  // the liveness bound while some were outstanding (campaigns/liveness.h);
  // its detail names how many waited, since when and the last time anything
  // was served. A hard failure of the stage it falls in (judges/liveness.cc).
  Unserved,
};
std::string_view to_string(EventKind k);
std::optional<EventKind> parse_event_kind(std::string_view s);
std::string event_kind_names();

struct Event {
  int64_t id = 0;
  int64_t wall_ms = 0;
  std::optional<int64_t> host_id;
  std::optional<int64_t> candidate_id;
  EventKind kind = EventKind::Gap;
  std::string detail_json;  // object; never contains secrets
  std::optional<int64_t> duration_ms;
};

// The build of a candidate whose runtime would not say (registered so that its
// rows have a candidate to belong to; a later readable build is a new row).
inline constexpr std::string_view kUnknownBuild = "unknown";

// A candidate as registered in the store: one model x runtime x build on one host.
struct CandidateRow {
  int64_t id = 0;
  int64_t host_id = 0;
  std::string name;   // config name; a new build keeps the name, gets a new row
  std::string model;  // canonical model id
  RuntimeKind runtime = RuntimeKind::OpenAI;
  std::string build;  // e.g. "b9928-81ff7abe5"; kUnknownBuild until read
  std::string base_url;
  int64_t first_seen_ms = 0;
  int64_t last_seen_ms = 0;
  std::optional<int64_t> baseline_id;  // candidate row judged against
  // What the runtime serves with (probes/served_state.h LaunchFingerprint JSON;
  // empty: not known). Part of the row's identity: a change is a new row.
  std::string fingerprint;
};

// How far a build's context reaches (docs/DESIGN.md §3.9): the largest
// configured long-context size it served clean and fresh in a canary, beside
// the runtime's own per-slot context and how that was known. One per build.
struct ContextReach {
  int64_t id = 0;  // assigned by the store
  int64_t candidate_id = 0;
  std::optional<int64_t> stage_id;
  int64_t wall_ms = 0;
  int64_t reach_tokens = 0;       // largest configured size served clean fresh (0: none)
  int64_t configured_tokens = 0;  // largest configured size
  std::optional<int64_t> runtime_ctx_tokens;
  std::string
      runtime_ctx_source;  // "/props n_ctx", "/slots n_ctx", "/tokenize max_model_len", "error n_ctx", "error text"
};

struct StageRow {
  int64_t id = 0;
  int64_t candidate_id = 0;
  StageKind kind = StageKind::Smoke;
  StageState state = StageState::Pending;
  int64_t started_ms = 0;   // wall, when the stage began (kept across restarts)
  int64_t length_ms = 0;    // nominal length
  int64_t deadline_ms = 0;  // started + length + grace: the stage ends by then, whatever happens
  std::optional<int64_t> ended_ms;
  std::string reason;
};

// What one metric of a verdict concluded.
enum class MetricResult { Pass, Fail, Marginal, Insufficient };
std::string_view to_string(MetricResult r);
std::optional<MetricResult> parse_metric_result(std::string_view s);
std::string metric_result_names();

// Per-metric evidence inside a verdict (docs/DESIGN.md §3.8).
struct MetricEvidence {
  std::string metric;  // e.g. "ttft_ms/long_context/32768/fresh"
  int64_t n = 0;       // candidate sample size
  int64_t n_baseline = 0;
  double estimate = 0;  // candidate statistic (median, ratio, slope, ...)
  double baseline = 0;
  double lo = 0, hi = 0;  // interval for the estimate or effect
  double threshold = 0;
  double p_value = 1;
  MetricResult result = MetricResult::Insufficient;
  std::string reason;
};

// The highest row id of each measured table at one moment (0 when empty): the
// bounds a judgment keeps so a later read selects exactly the rows it saw.
struct RowMaxIds {
  int64_t probe = 0, host_sample = 0, process_sample = 0, event = 0;
  int64_t golden = 0;  // golden_answers
};

// A decisive rule a verdict could not decide for want of evidence, and the
// probe kinds more of whose rows would give it (judges/evidence.cc).
struct EvidenceGap {
  std::string rule;
  std::vector<ProbeKind> kinds;
  bool operator==(const EvidenceGap&) const = default;
};

struct VerdictRow {
  int64_t id = 0;
  int64_t candidate_id = 0;
  std::optional<int64_t> stage_id;
  int64_t wall_ms = 0;
  VerdictState state = VerdictState::Running;
  std::string stage;  // stage kind name the verdict concerns
  std::string reason;
  std::string judge_version;
  std::string config_hash;
  int64_t evidence_first_id = 0;  // probe_results id range judged
  int64_t evidence_last_id = 0;
  std::optional<int64_t> baseline_id;
  std::string baseline_mode;  // "interleaved" | "history" | "none"
  std::vector<MetricEvidence> metrics;
  std::string judge_input_json;  // what the judge was given besides rows (rules, window, coverage): for recompute
  bool is_override = false;
  std::string who, why;  // for overrides
  // Not stored: set by the judge when the verdict is inconclusive for one
  // reason only, decisive rules short of their evidence; a stage that can
  // still run on and has more of that work coming does (docs/DESIGN.md §3.2).
  std::vector<EvidenceGap> awaiting_evidence;
};

enum class ControlAction { Start, Abort, Promote };
std::string_view to_string(ControlAction a);
std::optional<ControlAction> parse_control_action(std::string_view s);
std::string control_action_names();

// What became of a runtime soakd launched (runtime_launches.state).
enum class LaunchState {
  Running,        // up (or starting); soakd watches it
  LeftRunning,    // soakd stopped and left it up (keep_running): the next soakd adopts it
  Exited,         // ended on its own: exit status or signal recorded
  Stopped,        // soakd stopped it (campaign settled, removed, soakd stopping, not ready in time, new executable)
  OrphanStopped,  // found running after a soakd crash, and stopped before launching again
  Gone,           // found gone when soakd started again (it ended while soakd was down)
};
std::string_view to_string(LaunchState s);
std::optional<LaunchState> parse_launch_state(std::string_view s);
std::string launch_state_names();

// One start of a managed candidate's runtime (docs/DESIGN.md §4.8): what was
// run, the process it became (pid + start time: how soakd recognises its own
// child after a crash), and how it ended.
struct RuntimeLaunch {
  int64_t id = 0;
  int64_t host_id = 0;
  std::string name;                     // candidate config name
  std::optional<int64_t> candidate_id;  // the build it served, once read
  int pid = 0;
  std::optional<int64_t> start_time;  // the process's start time as the sampler reads it
  std::string executable;             // resolved path (symlinks followed)
  int64_t exe_size = 0;
  int64_t exe_mtime_ms = 0;
  std::string exe_hash;   // content hash of the executable
  std::string argv_json;  // argv, secrets as {"from_env": NAME}
  int64_t started_ms = 0;
  std::optional<int64_t> ready_ms;  // health answered ready
  LaunchState state = LaunchState::Running;
  std::optional<int64_t> ended_ms;
  std::optional<int> exit_status;  // exited on its own with this status
  std::optional<int> term_signal;  // ... or by this signal
  std::string log_tail;            // last lines of its log when it ended
  std::string detail;              // why it was stopped, how it was found, ...
};

// A request from soakctl to the daemon, passed through the store (no socket).
struct ControlRequest {
  int64_t id = 0;
  int64_t wall_ms = 0;
  std::string candidate;  // config name
  std::optional<int64_t> candidate_id;
  ControlAction action = ControlAction::Start;
  bool is_override = false;
  std::string who, why;
  std::optional<int64_t> handled_ms;
  std::string result;
};

}  // namespace soak
