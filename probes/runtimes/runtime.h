// Runtime adapters: what each local LLM runtime exposes (docs/DESIGN.md §7), as data
// plus pure parse functions for its answers. The probe runner asks
// runtime_traits(kind) which routes to call and how to read them; nothing here
// does I/O. Each fact below was checked against the runtime's current source or
// documentation; the comment beside it names where.
//
// Thread-agnostic. Traits are static, immutable and live for the whole program.
// Parse functions never throw: a body that is not the documented shape yields
// an Error (Result) or an empty/absent value.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "core/types.h"
#include "probes/openai_chat.h"
#include "probes/prometheus.h"

namespace soak::probes {

struct HttpRoute {
  std::string_view method;  // "GET" | "POST"
  std::string_view path;    // appended to the candidate's base URL
};

enum class HealthState {
  Up,        // serving
  Loading,   // alive, model not ready yet (llama.cpp 503 "Loading model", Rapid-MLX /health/ready 503)
  Draining,  // alive, refusing new work (Rapid-MLX /healthz 503 "draining")
  Down,      // anything else: dead engine, unexpected status
};
std::string_view to_string(HealthState s);

struct HealthVerdict {
  HealthState state = HealthState::Down;
  std::string detail;
};

// Where the build identity comes from.
enum class BuildSourceKind {
  LlamaCppProps,      // GET /props `build_info` ("b<N>-<commit>")
  VersionJson,        // GET /version {"version": ...} (vLLM) or /api/version (Ollama)
  OmlxStatus,         // GET /api/status `version`
  MetricsBuildInfo,   // GET /metrics rapid_mlx_build_info{version=...}
  LmStudioRuntime,    // `runtime{name,version}` in /api/v0/chat/completions answers
  SystemFingerprint,  // `system_fingerprint` of any chat answer (mlx-lm); else a configured command
  None,               // nothing over HTTP: a configured command or a fixed string
};

enum class ToolChoice { Supported, Unsupported };
// How a runtime reports prefill progress on a stream before the first token
// (probes/prefill_progress.h): the stall clock counts a report that read
// further as progress (docs/DESIGN.md §2.2).
enum class PrefillReports {
  None,
  KeepaliveComments,     // MLX-LM `: keepalive <processed>/<total>`, unasked
  PromptProgressChunks,  // llama.cpp `prompt_progress` chunks, when the request sets "return_progress": true
};

// How a runtime takes the thinking switch and sampling (its request dialect).
enum class ThinkingSwitch {
  ChatTemplateKwargs,  // chat_template_kwargs.enable_thinking (llama.cpp, vLLM, MLX-LM, oMLX, Rapid-MLX, LM Studio)
  ReasoningEffort,     // reasoning_effort "none" turns it off (Ollama openai/openai.go; no chat_template_kwargs)
};
enum class TopK {
  Sent,
  Dropped,  // not a field of the runtime's OpenAI request: not sent, recorded as not applied
};

struct RuntimeTraits {
  RuntimeKind kind = RuntimeKind::OpenAI;
  HttpRoute health;
  HttpRoute models;                       // identity: the model list route
  // Where chat probes POST: the OpenAI route, or the runtime's own where only
  // that one reports its figures (LM Studio /api/v0: `stats`).
  std::string_view chat_path = "/v1/chat/completions";
  std::optional<HttpRoute> build;         // nullopt: not over HTTP (see build_source)
  BuildSourceKind build_source = BuildSourceKind::None;
  std::optional<HttpRoute> props;         // server properties (llama.cpp /props: total_slots, n_ctx)
  std::optional<HttpRoute> slots;         // per-slot state (llama.cpp /slots)
  std::optional<HttpRoute> metrics;       // Prometheus text
  std::optional<HttpRoute> status;        // a JSON status the scrape reads (oMLX /api/status: queue, loaded models)
  std::span<const std::string_view> key_metrics;  // the series soakd scrapes and stores (full names)
  std::optional<HttpRoute> tokenize;      // exact prompt sizing; nullopt: estimate only
  // Reasoning (`reasoning` or `reasoning_content`), usage (asked for with
  // stream_options.include_usage on every runtime) and keep-alives (comments or
  // oMLX's "model":"keepalive" chunks) are read the same way for every runtime
  // (probes/openai_chat.h), so they are not traits.
  IdentityEvidence identity = IdentityEvidence::ResponseModel;  // what an answer's `model` says; proof: probes/served_state.h
  PrefillReports prefill_reports = PrefillReports::None;
  ToolChoice tool_choice = ToolChoice::Supported;
  ThinkingSwitch thinking_switch = ThinkingSwitch::ChatTemplateKwargs;
  TopK top_k = TopK::Sent;
  // Server-side cap when a request omits max_tokens (nullopt: none by default,
  // or not known); how to lift one that cut an answer: probes/server_cap.h.
  std::optional<int> default_max_tokens;
  std::string_view notes;                 // one line for the README table and `soakd probe`
};

const RuntimeTraits& runtime_traits(RuntimeKind kind);

// ---------------------------------------------------------------- health

// Reads the answer of traits.health for `kind`. Connection failures never get
// here (the transport reports them); every status that did arrive is judged.
HealthVerdict interpret_health(RuntimeKind kind, int http_status, std::string_view body);

// ---------------------------------------------------------------- build identity

struct LlamaBuild {
  int64_t number = 0;  // b<N>
  std::string commit;  // short hash, may be empty for distro builds ("b8681-Debian" keeps "Debian")
  std::string text() const;  // "b<N>-<commit>" (or "b<N>")
};
// "b9928-81ff7abe5" (/props build_info, system_fingerprint).
std::optional<LlamaBuild> parse_llamacpp_build_info(std::string_view s);
// `llama-server --version` output: "version: 9928 (81ff7abe5)".
Result<LlamaBuild> parse_llama_server_version(std::string_view output);

// The build string a runtime reports, read from the answer of traits.build (for
// LmStudioRuntime and SystemFingerprint: any chat completion answer body).
Result<std::string> parse_build(RuntimeKind kind, std::string_view body);

// mlx-lm server.py get_system_fingerprint(): "<mlx-lm>-<mlx>-<platform>-<gpu arch>".
struct MlxFingerprint {
  std::string mlx_lm;
  std::string mlx;
  std::string text() const;  // "mlx-lm <v> mlx <v>"
};
std::optional<MlxFingerprint> parse_mlx_fingerprint(std::string_view fingerprint);

// ---------------------------------------------------------------- server state

struct LlamaProps {
  std::string build_info;
  std::string model_alias;
  std::string model_path;
  std::optional<int> total_slots;
  std::optional<int64_t> n_ctx;  // per slot (default_generation_settings.n_ctx)
  std::optional<bool> is_sleeping;
};
Result<LlamaProps> parse_llamacpp_props(std::string_view body);

struct SlotState {
  int id = 0;
  bool is_processing = false;
  std::optional<int64_t> n_ctx;
  std::optional<int64_t> id_task;
  std::optional<int64_t> n_decoded;  // next_token[0].n_decoded (stale after the task ends)
};
Result<std::vector<SlotState>> parse_llamacpp_slots(std::string_view body);

struct SlotSummary {
  int total = 0;
  int busy = 0;
  bool all_idle() const { return busy == 0; }
};
SlotSummary summarize_slots(const std::vector<SlotState>& slots);

struct OmlxStatus {
  std::string version;
  std::optional<int64_t> active_requests, waiting_requests, models_loaded, models_loading;
  // engine_pool.get_loaded_model_ids(); nullopt: an oMLX build without the key.
  std::optional<std::vector<std::string>> loaded_models;
};
Result<OmlxStatus> parse_omlx_status(std::string_view body);

// Model ids from a model list answer: OpenAI `data[].id` (+ llama.cpp `aliases`),
// Ollama /api/tags `models[].name`, LM Studio /api/v0/models `data[].id`.
std::vector<std::string> parse_model_ids(std::string_view body);

// The identity probe's judgement of a model list: Clean when the canonical id is
// listed, IdentityMismatch otherwise (with what was listed).
Verdict check_model_list(const std::vector<std::string>& ids, std::string_view canonical_model);

// ---------------------------------------------------------------- tokenize

// Request body for traits.tokenize: llama.cpp {"content": text}, vLLM
// {"model": m, "prompt": text}. Empty when the runtime has no tokenize route.
std::string tokenize_request_body(RuntimeKind kind, std::string_view model, std::string_view text);
// What a tokenize answer says: llama.cpp `tokens` (its length), vLLM `count`
// and `max_model_len` beside it. Read as the text streams by, without building
// the answer's tree: a 131K-token answer holds 131K numbers.
struct TokenizeAnswer {
  std::optional<int64_t> count;          // `count`
  std::optional<int64_t> tokens;         // length of `tokens`
  std::optional<int64_t> max_model_len;  // vLLM
};
std::optional<TokenizeAnswer> parse_tokenize_answer(std::string_view body);
// Token count from its answer: vLLM `count`, else the `tokens` array length.
Result<int64_t> parse_tokenize_count(RuntimeKind kind, std::string_view body);

}  // namespace soak::probes
