// What one fake listener is: which runtime it imitates (Flavour), which fault it
// injects (Scenario) and the knobs that pace it (Knobs). Plain values; the
// presets live in scenario_defaults() so a scenario name alone gives a listener
// that shows its fault quickly, and every knob can still be overridden.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace soak::fake {

enum class Flavour { LlamaCpp, MlxLm, Omlx, Ollama, Vllm, RapidMlx, LmStudio };
std::string_view to_string(Flavour f);
std::optional<Flavour> parse_flavour(std::string_view s);
std::string flavour_names();

enum class Scenario {
  Healthy,
  PrefillCost,           // prefill time grows with prompt length; prefix cache makes repeats fast
  FifoSerial,            // one slot: requests are served strictly one after another
  OkNoBody,              // HTTP 200 headers, then the connection closes with no body
  NoDone,                // a complete stream that never sends data: [DONE]
  StallMidStream,        // stops sending content after stall_after_tokens, holds the connection
  KeepalivesOnly,        // sends only keep-alives (comments / oMLX keepalive chunks), never content
  Burst5xx,              // every error_every-th inference request starts a run of error_run 500s
  ModelAlias,            // responses carry alias_model instead of the canonical id
  EmptyToolArgs,         // tool calls arrive with `{}` arguments
  InvalidJson,           // content under a json_schema response_format is not valid JSON
  RepetitionLoop,        // degenerate repeated output until the length cap
  StuckSlotAfterCancel,  // a client disconnect leaves its slot busy for stuck_slot_ms
  CrashAfterN,           // the (crash_after + 1)-th inference request kills the runtime
  DraftSlowdown,         // ~95 % draft acceptance while decode runs draft_slowdown times slower
  MemoryLeak,            // every inference request allocates and touches leak_mb_per_request MB
  Loading,               // 503 on every route for loading_ms after start
  LargePrompt5xx,   // prompts longer than fail_above_tokens get HTTP 500 (within the context: a fault, not a limit)
  DeepToolDrop,     // prompts longer than drop_tools_above_tokens get a text answer, never a tool call
  Thinking5xx,      // thinking-on requests from turn thinking_fail_turn of a conversation get HTTP 500
  UnstablePooling,  // embeddings differ on every request; every second rerank comes back in reverse order
  EmptyContent,     // answers with no content at all (finish_reason stop, usage), tool calls still made
  ReasoningOnly,    // the whole answer comes as reasoning (reasoning_content / reasoning), no content
  ResetOverSlots,   // a chat request that finds every slot busy is dropped before any status line
  MarkupLeak,       // answer content carries what Knobs::leak names (reasoning markup, a template token, U+FFFD)
  StopServing,      // inference requests accepted and never answered; health 200, every slot busy, the queue growing
};
std::string_view to_string(Scenario s);
std::optional<Scenario> parse_scenario(std::string_view s);
std::string scenario_names();

// What the markup-leak scenario writes into an answer's content (Knobs::leak):
// think: the reasoning inside <think>...</think> before the answer (empty
// when the request asked for none), a reasoning parser that stopped
// separating; im-end: <|im_end|> after the answer, an end-of-turn token
// written out (llama-server --special); harmony: gpt-oss's raw
// <|channel|>analysis<|message|>...<|end|><|start|>assistant<|channel|>final<|message|>
// headers; fffd: a U+FFFD in the middle of the answer, a detokenizer that
// split a character; eos: the end-of-sequence token /props names
// (Knobs::eos_token) after the answer, a token no fixed list holds when the
// knob names one of a model family of its own.
enum class Leak { Think, ImEnd, Harmony, Fffd, Eos };
std::string_view to_string(Leak l);
std::optional<Leak> parse_leak(std::string_view s);
std::string leak_names();

// Defaults, named so tests and --help quote the same numbers.
inline constexpr const char* kDefaultModel = "qwen3.6-35b-a3b";
inline constexpr const char* kDefaultBuild = "b9430";
inline constexpr int kDefaultSlots = 2;
inline constexpr int kDefaultCtxPerSlot = 262144;
inline constexpr int kDefaultReplyTokens = 32;
inline constexpr int kDefaultReasoningTokens = 12;
inline constexpr int kDefaultTokenIntervalMs = 5;
inline constexpr int kDefaultPrefillMsPer1k = 10;
inline constexpr int kPrefillScenarioMsPer1k = 250;
inline constexpr int kDefaultKeepaliveIntervalMs = 10000;
inline constexpr int kMlxLmServerMaxTokens = 512;  // mlx_lm.server --max-tokens default
inline constexpr int kMlxLmPrefillStepTokens = 2048;
inline constexpr int kDefaultStallAfterTokens = 4;
inline constexpr int kDefaultErrorEvery = 4;
inline constexpr int kDefaultErrorRun = 2;
inline constexpr int kDefaultStuckSlotMs = 60000;
inline constexpr int kDefaultCrashAfter = 3;
inline constexpr int kDefaultDraftSlowdown = 10;
inline constexpr double kDraftAcceptance = 0.95;
inline constexpr int kDraftTokensPerStep = 4;
inline constexpr int kDefaultLeakMbPerRequest = 16;
inline constexpr int kDefaultLoadingMs = 3000;
inline constexpr int kDefaultRepetitionTokens = 256;
inline constexpr int kDefaultFailAboveTokens = 4096;
inline constexpr int kDefaultDropToolsAboveTokens = 30000;
inline constexpr int kDefaultThinkingFailTurn = 5;
inline constexpr int kDefaultCacheRamMib = 8192;   // llama.cpp common/common.h cache_ram_mib
inline constexpr int kDefaultBackgroundMs = 9000;  // another client's answer: how long it holds its slot

struct Knobs {
  std::string model = kDefaultModel;  // canonical id reported by /v1/models and responses
  std::string alias_model;            // ModelAlias: the `model` string responses carry instead
  std::string build = kDefaultBuild;  // "b9430" or "b9430-81ff7abe5"; flavour decides where it shows
  int slots = kDefaultSlots;          // parallel slots (llama.cpp --parallel)
  int ctx_per_slot = kDefaultCtxPerSlot;
  int reply_tokens = kDefaultReplyTokens;          // natural answer length (finish_reason "stop")
  int reasoning_tokens = kDefaultReasoningTokens;  // thinking length when enable_thinking is true
  int server_max_tokens = 0;                       // cap when the request has no max_tokens (0 = none)
  int token_interval_ms = kDefaultTokenIntervalMs;
  int prefill_ms_per_1k = kDefaultPrefillMsPer1k;  // per 1000 prompt tokens not served from cache
  int keepalive_interval_ms = kDefaultKeepaliveIntervalMs;
  // llama.cpp / ollama: open the stream when the slot starts and send `:` pings
  // this often until the first token (llama-server --sse-ping-interval); 0 = off.
  int prefill_ping_ms = 0;
  int stall_after_tokens = kDefaultStallAfterTokens;
  int error_every = kDefaultErrorEvery;
  int error_run = kDefaultErrorRun;
  int stuck_slot_ms = kDefaultStuckSlotMs;
  int crash_after = kDefaultCrashAfter;
  int draft_slowdown = kDefaultDraftSlowdown;
  int leak_mb_per_request = kDefaultLeakMbPerRequest;
  // drift.h, any scenario, also set by POST /fake/control: prefill and token
  // pacing take slow_pct % of their time for prompts of at least
  // slow_from_tokens tokens (0: every prompt); the host prompt cache keeps
  // cache_fill_mib MiB more per inference request up to cache_ram_mib
  // (llama-server --cache-ram), then holds.
  int slow_pct = 100;
  int slow_from_tokens = 0;
  int cache_ram_mib = kDefaultCacheRamMib;
  int cache_fill_mib = 0;
  // drift.h FirstTokenDelay: every request a slot starts waits this long
  // before its prompt is read (0: none).
  int first_token_delay_ms = 0;
  int loading_ms = 0;  // 503 everywhere for this long after start (any scenario)
  int repetition_tokens = kDefaultRepetitionTokens;
  int fail_above_tokens = kDefaultFailAboveTokens;  // LargePrompt5xx
  // Ollama /api/ps digest of the loaded weights (empty: derived from the model
  // name); POST /fake/control {"digest": ...} is a re-pull under the same tag.
  std::string digest;
  // POST /fake/control {"failing_path": "/metrics"}: that GET route answers
  // 500 (a route timing out under load or blocked by a proxy); "" clears it.
  std::string failing_path;
  // Rapid-MLX rapid_mlx_kv_cache_dtype, vLLM cache_config_info{cache_dtype};
  // POST /fake/control {"kv_cache_type": ...} is a restart with another one.
  std::string kv_cache_type = "bf16";
  // oMLX: the model starts unloaded; the first request (and the first after
  // POST /fake/control {"unload": true}) waits this long before its stream
  // opens and reports it as usage.model_load_duration. 0: loaded from start.
  int cold_load_ms = 0;
  int drop_tools_above_tokens = kDefaultDropToolsAboveTokens;  // DeepToolDrop
  // Thinking5xx: the turn (1 = a conversation's first request, counted by the
  // assistant messages it carries) from which thinking requests fail.
  int thinking_fail_turn = kDefaultThinkingFailTurn;
  // llama.cpp flavour only: "" serves chat; "embedding" / "rerank" serve only
  // that pooling route, as llama-server --embedding / --reranking (pooling.cc).
  std::string pooling;
  // The golden set's answers and logprobs (tests/fake_runtime/logprobs.h):
  // "" or steady, changed, near-tie, no-logprobs, not-top1.
  std::string answers;
  // MarkupLeak: what leaks into content (Leak's names; "" is think).
  std::string leak;
  // llama.cpp /props eos_token ("" is the ChatML <|im_end|>); the eos leak writes it.
  std::string eos_token;
  // Another client's load, any scenario (also POST /fake/control): this many
  // of its requests kept in the runtime at all times, each holding a slot for
  // background_ms and then queueing again behind what waits (llama-server
  // serves its queue in order). They show in /slots and /metrics like any
  // request; soakd's requests wait behind them silently.
  int background_load = 0;
  int background_ms = kDefaultBackgroundMs;
};

// The knobs a scenario starts from on a given flavour (e.g. FifoSerial sets
// slots = 1, Loading sets loading_ms, mlx-lm caps requests without max_tokens).
Knobs scenario_defaults(Scenario s, Flavour f);

inline constexpr const char* kLoopbackHost = "127.0.0.1";

struct ListenerConfig {
  std::string host = kLoopbackHost;
  int port = 0;  // 0 = ephemeral
  Flavour flavour = Flavour::LlamaCpp;
  Scenario scenario = Scenario::Healthy;
  Knobs knobs;

  // A listener with the scenario's default knobs.
  static ListenerConfig make(Scenario s, Flavour f = Flavour::LlamaCpp) {
    ListenerConfig c;
    c.scenario = s;
    c.flavour = f;
    c.knobs = scenario_defaults(s, f);
    return c;
  }
};

// What a listener has seen, for tests and for GET /fake/stats. Counters only grow.
struct ListenerStats {
  int port = 0;
  std::string build;
  std::string scenario;
  uint64_t http_requests = 0;              // every parsed request, any route
  uint64_t inference_requests = 0;         // chat / embeddings / rerank requests that parsed
  uint64_t completed = 0;                  // inference responses finished normally
  uint64_t cancels_seen = 0;               // the client left before its response finished
  uint64_t errors_5xx = 0;                 // 5xx answers sent
  uint64_t loading_rejections = 0;         // 503 answers while loading
  uint64_t deferred_total = 0;             // requests that waited for a free slot
  uint64_t stuck_releases = 0;             // stuck slots that were finally freed
  int processing = 0;                      // busy slots now (stuck ones included)
  int deferred = 0;                        // requests waiting for a slot now
  int max_processing = 0;                  // high-water mark of `processing`
  int held = 0;                            // requests held open with no more content coming (stall, keep-alives only)
  uint64_t leaked_bytes = 0;               // MemoryLeak: bytes allocated and touched so far
  bool crashed = false;                    // CrashAfterN fired (in-process: the listener is gone)
  uint64_t model_loads = 0;                // mlx-lm: requests that named another model than --model (a reload)
  std::map<std::string, uint64_t> routes;  // "POST /v1/embeddings" -> requests seen, any answer
};

}  // namespace soak::fake
