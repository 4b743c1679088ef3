// The vLLM, Rapid-MLX and LM Studio flavours: their routes and the shapes of
// what they say they serve. Each shape names the upstream file its keys were
// checked against (tests/fake_runtime/README.md lists the flavours).
#include <algorithm>
#include <cstdio>

#include "tests/fake_runtime/responder.h"

namespace soak::fake {
namespace {

constexpr const char* kVllmVersion = "0.11.0";
constexpr const char* kLmStudioRuntime = "llama.cpp-mac-arm64-apple-metal-advsimd";
constexpr const char* kLmStudioRuntimeVersion = "1.52.0";

std::string gauge(const std::string& name, const std::string& help, const std::string& labels, double v) {
  char num[64];
  std::snprintf(num, sizeof num, "%.17g", v);
  return "# HELP " + name + " " + help + "\n# TYPE " + name + " gauge\n" + name + labels + " " + num + "\n";
}

std::string counter(const std::string& name, const std::string& help, const std::string& labels, uint64_t v) {
  return "# HELP " + name + " " + help + "\n# TYPE " + name + " counter\n" + name + labels + " " + std::to_string(v) +
         "\n";
}

}  // namespace

// vllm/entrypoints/openai/protocol.py ModelCard / ModelPermission; the served
// name is `id`, the weights' path or repo `root`.
ojson vllm_models_body(const ServerView& v) {
  ojson perm;
  perm["id"] = "modelperm-fake";
  perm["object"] = "model_permission";
  perm["created"] = v.started_unix;
  perm["allow_create_engine"] = false;
  perm["allow_sampling"] = true;
  perm["allow_logprobs"] = true;
  perm["allow_search_indices"] = false;
  perm["allow_view"] = true;
  perm["allow_fine_tuning"] = false;
  perm["organization"] = "*";
  perm["group"] = nullptr;
  perm["is_blocking"] = false;
  ojson card;
  card["id"] = v.model;
  card["object"] = "model";
  card["created"] = v.started_unix;
  card["owned_by"] = "vllm";
  card["root"] = "/models/" + v.model;
  card["parent"] = nullptr;
  card["max_model_len"] = v.ctx_per_slot;
  card["permission"] = ojson::array({perm});
  return ojson{{"object", "list"}, {"data", ojson::array({card})}};
}

// Rapid-MLX vllm_mlx/routes/metrics.py _render_prometheus: build info always;
// kv_cache_dtype one series per dtype; request gauges; the disconnect-cancel counter.
std::string rapid_metrics_text(const ServerView& v) {
  std::string out = gauge("rapid_mlx_build_info", "Build info as constant 1 (version/model carried in labels).",
                          "{version=\"" + v.build + "\",model=\"" + v.model + "\"}", 1);
  out += "# HELP rapid_mlx_kv_cache_dtype Effective KV cache dtype.\n# TYPE rapid_mlx_kv_cache_dtype gauge\n";
  for (const char* d : {"bf16", "int8", "int4"})
    out += std::string("rapid_mlx_kv_cache_dtype{dtype=\"") + d + "\"} " + (v.kv_cache_type == d ? "1" : "0") + "\n";
  out += gauge("rapid_mlx_requests_running", "Requests currently in the running batch.", "", v.active_requests);
  out += gauge("rapid_mlx_requests_waiting", "Requests queued and waiting for a batch slot.", "", v.waiting_requests);
  out +=
      "# HELP rapid_mlx_requests_cancelled_via_disconnect_total Subset attributed to client disconnect.\n"
      "# TYPE rapid_mlx_requests_cancelled_via_disconnect_total counter\n"
      "rapid_mlx_requests_cancelled_via_disconnect_total " +
      std::to_string(v.cancelled_via_disconnect) + "\n";
  if (v.speculative) {
    // _render_spec_decode_mtp_counters: chain MTP, one drafted token per attempt.
    const std::string l = "{family=\"qwen3.5\",method=\"mtp\"}";
    out += counter("rapid_mlx_spec_decode_attempts_total", "Number of MTP draft proposals.", l, v.draft_tokens_total);
    out += counter("rapid_mlx_spec_decode_accepts_total", "Subset of attempts the verify pass accepted.", l,
                   v.accepted_tokens_total);
  }
  return out;
}

// vllm_mlx/routes/health.py health_ready: {"ready": true, "model"} (503
// {"detail": "model loading"} is the route's HTTPException, sent by the engine).
ojson rapid_health_ready_body(const ServerView& v) { return ojson{{"ready", true}, {"model", v.model}}; }

// vllm_mlx/routes/health.py healthz: the same keys whether healthy or draining.
ojson rapid_healthz_body(const ServerView& v) {
  ojson j;
  j["status"] = v.draining ? "draining" : "healthy";
  j["ready"] = !v.draining;
  j["model_loaded"] = true;
  j["model_name"] = v.model;
  return j;
}

// LM Studio REST v0 (lmstudio docs 1_developer/2_rest/endpoints.mdx) GET /api/v0/models.
ojson lmstudio_v0_models_body(const ServerView& v) {
  ojson m;
  m["id"] = v.model;
  m["object"] = "model";
  m["type"] = "llm";
  m["publisher"] = "lmstudio-community";
  m["arch"] = "qwen3moe";
  m["compatibility_type"] = "gguf";
  m["quantization"] = "Q4_K_M";
  m["state"] = "loaded";
  m["max_context_length"] = 262144;
  m["loaded_context_length"] = v.ctx_per_slot;
  ojson other = m;
  other["id"] = "text-embedding-nomic-embed-text-v1.5";
  other["type"] = "embeddings";
  other["state"] = "not-loaded";
  other.erase("loaded_context_length");
  return ojson{{"object", "list"}, {"data", ojson::array({m, other})}};
}

// LM Studio REST v1 (lmstudio docs 1_developer/2_rest/list.mdx) GET /api/v1/models:
// models[] with loaded_instances[].config (parallel: newer builds only).
ojson lmstudio_v1_models_body(const ServerView& v) {
  ojson config;
  config["context_length"] = v.ctx_per_slot;
  config["eval_batch_size"] = 512;
  config["parallel"] = v.slots;
  config["flash_attention"] = true;
  config["offload_kv_cache_to_gpu"] = true;
  ojson m;
  m["type"] = "llm";
  m["publisher"] = "lmstudio-community";
  m["key"] = v.model;
  m["display_name"] = "Qwen3.6 35B A3B";
  m["architecture"] = "qwen3moe";
  m["quantization"] = ojson{{"name", "Q4_K_M"}, {"bits_per_weight", 4}};
  m["size_bytes"] = 21000000000LL;
  m["params_string"] = "35B";
  m["loaded_instances"] = ojson::array({ojson{{"id", v.model}, {"config", config}}});
  m["max_context_length"] = 262144;
  m["format"] = "gguf";
  ojson other;
  other["type"] = "embedding";
  other["publisher"] = "nomic-ai";
  other["key"] = "text-embedding-nomic-embed-text-v1.5";
  other["display_name"] = "Nomic Embed Text v1.5";
  other["quantization"] = ojson{{"name", "Q4_K_M"}, {"bits_per_weight", 4}};
  other["size_bytes"] = 84000000LL;
  other["params_string"] = nullptr;
  other["loaded_instances"] = ojson::array();
  other["max_context_length"] = 2048;
  other["format"] = "gguf";
  return ojson{{"models", ojson::array({m, other})}};
}

// The same page, POST /api/v0/chat/completions: stats, model_info, runtime.
void lmstudio_v0_extras(ojson& answer, const ServerView& v, const GenTimings& t) {
  ojson stats;
  stats["tokens_per_second"] = t.predicted_ms > 0 ? 1e3 * t.predicted_n / t.predicted_ms : 0.0;
  stats["time_to_first_token"] = t.ttft_s;
  stats["generation_time"] = t.predicted_ms / 1e3;
  stats["stop_reason"] = "eosFound";
  answer["stats"] = stats;
  answer["model_info"] =
      ojson{{"arch", "qwen3moe"}, {"quant", "Q4_K_M"}, {"format", "gguf"}, {"context_length", v.ctx_per_slot}};
  answer["runtime"] = ojson{
      {"name", kLmStudioRuntime}, {"version", kLmStudioRuntimeVersion}, {"supported_formats", ojson::array({"gguf"})}};
}

void Responder::handle_vllm(const HttpRequest& req, const std::shared_ptr<Connection>& c, Persist p) {
  const bool get = req.method == "GET", post = req.method == "POST";
  // vllm/entrypoints/serve/instrumentator/health.py: 200, empty body.
  if (get && req.path == "/health") return c->respond(200, response_headers(cfg_.flavour, BodyKind::Json, p), "", p);
  if (get && req.path == "/version") return reply_json(c, 200, ojson{{"version", kVllmVersion}}, p);
  if (get && req.path == "/v1/models") return reply_json(c, 200, models_body(cfg_.flavour, server_view()), p);
  if (get && req.path == "/metrics") {
    ServerView v = server_view();
    std::string body = gauge("vllm:num_requests_running", "Number of requests in model execution batches.",
                             "{model_name=\"" + v.model + "\"}", v.active_requests) +
                       gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed.",
                             "{model_name=\"" + v.model + "\"}", v.waiting_requests) +
                       // vllm/v1/metrics/loggers.py log_metrics_info: an info gauge (1) whose
                       // labels are CacheConfig.metrics_info() (every field as a string) and engine.
                       gauge("vllm:cache_config_info", "Information of the LLMEngine CacheConfig",
                             "{block_size=\"16\",cache_dtype=\"" + v.kv_cache_type +
                                 "\",enable_prefix_caching=\"True\",engine=\"0\",gpu_memory_utilization=\"0.9\","
                                 "num_gpu_blocks=\"2048\"}",
                             1);
    if (v.speculative) {
      // vllm/v1/spec_decode/metrics.py SpecDecodingProm (counters, one per engine).
      const std::string l = "{engine=\"0\",model_name=\"" + v.model + "\"}";
      body += counter("vllm:spec_decode_num_drafts_total", "Number of spec decoding drafts.", l, v.drafts_total) +
              counter("vllm:spec_decode_num_draft_tokens_total", "Number of draft tokens.", l, v.draft_tokens_total) +
              counter("vllm:spec_decode_num_accepted_tokens_total", "Number of accepted tokens.", l,
                      v.accepted_tokens_total);
    }
    return c->respond(200, response_headers(cfg_.flavour, BodyKind::Text, p), body, p);
  }
  if (post && req.path == "/v1/chat/completions") return chat(req, c, p);
  not_found(c, p);
}

void Responder::handle_rapid(const HttpRequest& req, const std::shared_ptr<Connection>& c, Persist p) {
  const bool get = req.method == "GET", post = req.method == "POST";
  if (get && req.path == "/health/ready") {
    // On SIGTERM the lifespan sets ready=False before draining: this route
    // then says "model loading"; only /healthz tells the two apart.
    if (loading() || draining_) return reply_json(c, 503, ojson{{"detail", "model loading"}}, p);
    return reply_json(c, 200, rapid_health_ready_body(server_view()), p);
  }
  if (get && req.path == "/healthz") {
    ServerView v = server_view();
    if (loading()) {
      ojson j = rapid_healthz_body(v);
      j["ready"] = false;
      return reply_json(c, 200, j, p);
    }
    return reply_json(c, draining_ ? 503 : 200, rapid_healthz_body(v), p);
  }
  if (get && req.path == "/metrics")
    return c->respond(200, response_headers(cfg_.flavour, BodyKind::Text, p), rapid_metrics_text(server_view()), p);
  if (get && req.path == "/v1/models") return reply_json(c, 200, models_body(cfg_.flavour, server_view()), p);
  if (post && req.path == "/v1/chat/completions") return chat(req, c, p);
  not_found(c, p);
}

void Responder::handle_lmstudio(const HttpRequest& req, const std::shared_ptr<Connection>& c, Persist p) {
  const bool get = req.method == "GET", post = req.method == "POST";
  if (get && req.path == "/v1/models") return reply_json(c, 200, models_body(cfg_.flavour, server_view()), p);
  if (get && req.path == "/api/v0/models") return reply_json(c, 200, lmstudio_v0_models_body(server_view()), p);
  if (get && req.path == "/api/v1/models") return reply_json(c, 200, lmstudio_v1_models_body(server_view()), p);
  if (post && (req.path == "/v1/chat/completions" || req.path == "/api/v0/chat/completions")) return chat(req, c, p);
  not_found(c, p);
}

}  // namespace soak::fake
