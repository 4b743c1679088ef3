// Wire shapes of each imitated runtime: response headers, chat chunks, full
// completions, errors, and the server endpoints (/v1/models, /props, /slots,
// /metrics, /health, oMLX /api/status, Ollama /api/*). Pure functions of plain
// values; key order follows the real servers (ordered_json) so a diff against
// tests/fixtures/llama-server reads line by line.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/fake_runtime/scenario.h"
#include "tests/fake_runtime/text_model.h"

namespace soak::fake {

using ojson = nlohmann::ordered_json;
using Headers = std::vector<std::pair<std::string, std::string>>;

enum class BodyKind { Json, EventStream, Text };
enum class Persist { KeepAlive, Close };

// Headers a flavour sends (without Content-Length / Transfer-Encoding, which the
// writer adds).
Headers response_headers(Flavour f, BodyKind kind, Persist persist);

// "b9430" -> "b9430-<9 hex>" (a stable fake commit); "b9430-81ff7abe5" stays as is.
std::string build_info(const std::string& build);

struct ChatIds {
  std::string id;           // chatcmpl-...
  int64_t created = 0;      // Unix seconds
  std::string model;        // the model string this response carries
  std::string fingerprint;  // system_fingerprint
};

struct GenTimings {
  int cache_n = 0;
  int prompt_n = 0;  // prompt tokens evaluated (not from cache)
  double prompt_ms = 0;
  int predicted_n = 0;
  double predicted_ms = 0;
  int draft_n = 0;  // speculative decoding: drafted tokens (0 = not speculative)
  int draft_n_accepted = 0;
  double ttft_s = 0;  // oMLX usage extras
  double total_s = 0;
  double load_s = 0;  // oMLX model_load_duration: the cold load this request waited for
};

struct ToolCallOut {
  std::string id;
  std::string name;
  std::string arguments;
};

// Stream chunks. `tool` is set on the first ToolArgs piece (it opens the call).
std::optional<ojson> chunk_role(Flavour f, const ChatIds& ids);  // none for mlx-lm
ojson chunk_piece(Flavour f, const ChatIds& ids, const Piece& piece, const ToolCallOut* opening_tool);
ojson chunk_finish(Flavour f, const ChatIds& ids, const std::string& finish_reason, const GenTimings* timings);
ojson chunk_usage(Flavour f, const ChatIds& ids, const GenTimings& t);
ojson omlx_keepalive_chunk(const std::string& id);
// llama.cpp's prefill report for a request with "return_progress": true
// (server-task.cpp to_json_oaicompat_chat with is_progress): a role-only delta
// plus prompt_progress {total, cache, processed, time_ms}.
ojson chunk_prompt_progress(const ChatIds& ids, int total, int cache, int processed, int64_t time_ms);
// The SSE comment a flavour uses as a keep-alive; `progress` feeds mlx-lm's "processed/total".
std::string keepalive_comment(Flavour f, int processed, int total);

struct CompletionOut {
  std::string reasoning;
  std::string content;
  std::optional<ToolCallOut> tool;
  std::string finish_reason;
  std::optional<ojson> logprobs;  // choices[0].logprobs, when the request asked and the flavour gives them
};
ojson completion_body(Flavour f, const ChatIds& ids, const CompletionOut& out, const GenTimings& t);

// {"error":{...}} as each flavour words it.
ojson error_body(Flavour f, int code, const std::string& message, const std::string& type);
int64_t usage_prompt_tokens(const GenTimings& t);

struct ServerView {
  std::string model;  // canonical id
  std::string build;  // as configured
  int slots = 1;
  int ctx_per_slot = 0;
  int64_t started_unix = 0;
  bool speculative = false;
  int active_requests = 0;
  int waiting_requests = 0;
  uint64_t total_requests = 0;
  uint64_t total_prompt_tokens = 0;
  uint64_t total_completion_tokens = 0;
  int64_t uptime_s = 0;
  std::string digest;                    // Ollama /api/ps (empty: derived from the model)
  std::string kv_cache_type;             // Rapid-MLX
  std::string eos_token = "<|im_end|>";  // llama.cpp /props eos_token (Knobs::eos_token)
  bool draining = false;                 // Rapid-MLX after SIGTERM
  uint64_t cancelled_via_disconnect = 0;
  std::vector<std::string> loaded_models;                                        // oMLX /api/status loaded_models
  uint64_t draft_tokens_total = 0, accepted_tokens_total = 0, drafts_total = 0;  // when speculative
};
ojson models_body(Flavour f, const ServerView& v);
ojson props_body(const ServerView& v);
ojson health_body(Flavour f, bool loading, const ServerView& v);
ojson omlx_status_body(const ServerView& v);
ojson ollama_version_body(const ServerView& v);
ojson ollama_ps_body(const ServerView& v);

// Flavours imitated for their served state (flavour_served.cc); each names
// the upstream file its keys were checked against.
ojson vllm_models_body(const ServerView& v);
std::string rapid_metrics_text(const ServerView& v);
ojson rapid_health_ready_body(const ServerView& v);
ojson rapid_healthz_body(const ServerView& v);
ojson lmstudio_v0_models_body(const ServerView& v);
// The v0 chat answer's extra objects: stats, model_info, runtime.
void lmstudio_v0_extras(ojson& answer, const ServerView& v, const GenTimings& t);

struct SlotView {
  int id = 0;
  int n_ctx = 0;
  bool speculative = false;
  bool is_processing = false;
  bool has_task = false;  // the slot has served (or is serving) a task
  uint64_t id_task = 0;
  int n_prompt_tokens = 0;
  int n_prompt_tokens_processed = 0;
  int n_prompt_tokens_cache = 0;
  int max_tokens = -1;
  bool stream = false;
  int n_decoded = 0;
  int n_remain = 0;
};
ojson slots_body(const std::vector<SlotView>& slots);

struct MetricsView {
  uint64_t prompt_tokens_total = 0;
  double prompt_seconds_total = 0;
  uint64_t tokens_predicted_total = 0;
  double tokens_predicted_seconds_total = 0;
  uint64_t n_decode_total = 0;
  uint64_t n_tokens_max = 0;
  int requests_processing = 0;
  int requests_deferred = 0;
  uint64_t busy_slot_decodes = 0;  // sum over decode calls of busy slots, for the average
  // Speculative decoding (the draft-slowdown scenario): drafted and accepted
  // tokens, and verify steps (drafts of up to kDraftTokensPerStep tokens).
  uint64_t draft_tokens_total = 0, accepted_tokens_total = 0, drafts_total = 0;
};
std::string metrics_text(const MetricsView& m);

}  // namespace soak::fake
