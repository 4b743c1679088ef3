#include "tests/fake_runtime/shapes.h"

#include <cstdio>

#include "core/hash.h"

namespace soak::fake {
namespace {

constexpr const char* kMlxServerHeader = "BaseHTTP/0.6 Python/3.12.8";
constexpr const char* kChatTemplate =
    "{%- for message in messages %}{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>' + "
    "'\\n' }}{%- endfor %}{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}";
constexpr int64_t kModelParams = 35'000'000'000;
constexpr int64_t kModelBytes = 20'000'000'000;

double per_token_ms(double ms, int n) { return n > 0 ? ms / n : 0.0; }
double per_second(double ms, int n) { return ms > 0 ? 1e3 * n / ms : 0.0; }

ojson timings_json(const GenTimings& t) {
  ojson j;
  j["cache_n"] = t.cache_n;
  j["prompt_n"] = t.prompt_n;
  j["prompt_ms"] = t.prompt_ms;
  j["prompt_per_token_ms"] = per_token_ms(t.prompt_ms, t.prompt_n);
  j["prompt_per_second"] = per_second(t.prompt_ms, t.prompt_n);
  j["predicted_n"] = t.predicted_n;
  j["predicted_ms"] = t.predicted_ms;
  j["predicted_per_token_ms"] = per_token_ms(t.predicted_ms, t.predicted_n);
  j["predicted_per_second"] = per_second(t.predicted_ms, t.predicted_n);
  if (t.draft_n > 0) {
    j["draft_n"] = t.draft_n;
    j["draft_n_accepted"] = t.draft_n_accepted;
  }
  return j;
}

ojson usage_json(Flavour f, const GenTimings& t) {
  ojson u;
  int64_t prompt = usage_prompt_tokens(t);
  u["completion_tokens"] = t.predicted_n;
  u["prompt_tokens"] = prompt;
  u["total_tokens"] = prompt + t.predicted_n;
  u["prompt_tokens_details"] = ojson{{"cached_tokens", t.cache_n}};
  if (f == Flavour::Omlx) {
    u["time_to_first_token"] = t.ttft_s;
    u["total_time"] = t.total_s;
    u["prompt_eval_duration"] = t.prompt_ms / 1e3;
    u["generation_duration"] = t.predicted_ms / 1e3;
    u["prompt_tokens_per_second"] = per_second(t.prompt_ms, t.prompt_n);
    u["generation_tokens_per_second"] = per_second(t.predicted_ms, t.predicted_n);
    if (t.load_s > 0) u["model_load_duration"] = t.load_s;
  }
  return u;
}

// The envelope of one chunk, keys in each server's order.
ojson envelope(Flavour f, const ChatIds& ids, ojson choices, const char* object = "chat.completion.chunk") {
  ojson j;
  switch (f) {
    case Flavour::LlamaCpp:
      j["choices"] = std::move(choices);
      j["created"] = ids.created;
      j["id"] = ids.id;
      j["model"] = ids.model;
      j["system_fingerprint"] = ids.fingerprint;
      j["object"] = object;
      break;
    case Flavour::MlxLm:
      j["id"] = ids.id;
      j["system_fingerprint"] = ids.fingerprint;
      j["object"] = object;
      j["model"] = ids.model;
      j["created"] = ids.created;
      j["choices"] = std::move(choices);
      break;
    case Flavour::Omlx:
    case Flavour::Ollama:
    case Flavour::Vllm:
    case Flavour::RapidMlx:
    case Flavour::LmStudio:
      j["id"] = ids.id;
      j["object"] = object;
      j["created"] = ids.created;
      j["model"] = ids.model;
      if (f == Flavour::Ollama) j["system_fingerprint"] = ids.fingerprint;
      j["choices"] = std::move(choices);
      break;
  }
  return j;
}

ojson one_choice(Flavour f, ojson delta, const ojson& finish_reason) {
  ojson c;
  if (f == Flavour::LlamaCpp) {
    c["finish_reason"] = finish_reason;
    c["index"] = 0;
    c["delta"] = std::move(delta);
  } else {
    c["index"] = 0;
    c["delta"] = std::move(delta);
    c["finish_reason"] = finish_reason;
  }
  return ojson::array({c});
}

const char* reasoning_key(Flavour f) {
  return (f == Flavour::MlxLm || f == Flavour::Ollama || f == Flavour::Vllm) ? "reasoning" : "reasoning_content";
}

}  // namespace

Headers response_headers(Flavour f, BodyKind kind, Persist persist) {
  const char* ctype = kind == BodyKind::Json          ? "application/json; charset=utf-8"
                      : kind == BodyKind::EventStream ? "text/event-stream"
                                                      : "text/plain; charset=utf-8";
  Headers h;
  switch (f) {
    case Flavour::LlamaCpp:
      if (persist == Persist::Close) {
        h.emplace_back("Connection", "close");
      } else {
        h.emplace_back("Keep-Alive", "timeout=5, max=100");
      }
      h.emplace_back("Content-Type", kind == BodyKind::Text ? "text/plain; version=0.0.4" : ctype);
      h.emplace_back("Responder", "llama.cpp");
      h.emplace_back("Access-Control-Allow-Origin", "");
      if (kind == BodyKind::EventStream) h.emplace_back("X-Accel-Buffering", "no");
      break;
    case Flavour::MlxLm:
      h.emplace_back("Responder", kMlxServerHeader);
      h.emplace_back("Content-type", kind == BodyKind::Json ? "application/json" : ctype);
      h.emplace_back("Access-Control-Allow-Origin", "*");
      if (kind == BodyKind::EventStream) h.emplace_back("Cache-Control", "no-cache");
      if (persist == Persist::Close) h.emplace_back("Connection", "close");
      break;
    case Flavour::Omlx:
      h.emplace_back("server", "uvicorn");
      h.emplace_back("content-type", kind == BodyKind::EventStream ? "text/event-stream; charset=utf-8" : ctype);
      if (persist == Persist::Close) h.emplace_back("connection", "close");
      break;
    case Flavour::Vllm:
    case Flavour::RapidMlx:
      h.emplace_back("server", "uvicorn");
      h.emplace_back("content-type", kind == BodyKind::EventStream ? "text/event-stream; charset=utf-8" : ctype);
      if (persist == Persist::Close) h.emplace_back("connection", "close");
      break;
    case Flavour::Ollama:
    case Flavour::LmStudio:
      h.emplace_back("Content-Type", ctype);
      if (persist == Persist::Close) h.emplace_back("Connection", "close");
      break;
  }
  return h;
}

std::string build_info(const std::string& build) {
  if (build.find('-') != std::string::npos) return build;
  return build + "-" + hash_hex(build).substr(0, 9);
}

int64_t usage_prompt_tokens(const GenTimings& t) { return static_cast<int64_t>(t.cache_n) + t.prompt_n; }

std::optional<ojson> chunk_role(Flavour f, const ChatIds& ids) {
  if (f == Flavour::MlxLm) return std::nullopt;
  ojson delta;
  delta["role"] = "assistant";
  delta["content"] = f == Flavour::LlamaCpp ? ojson(nullptr) : ojson("");
  return envelope(f, ids, one_choice(f, std::move(delta), nullptr));
}

ojson chunk_piece(Flavour f, const ChatIds& ids, const Piece& piece, const ToolCallOut* opening_tool) {
  ojson delta;
  if (f != Flavour::LlamaCpp) delta["role"] = "assistant";
  switch (piece.kind) {
    case PieceKind::Reasoning: delta[reasoning_key(f)] = piece.text; break;
    case PieceKind::Content: delta["content"] = piece.text; break;
    case PieceKind::ToolArgs: {
      ojson call;
      call["index"] = 0;
      if (opening_tool) {
        call["id"] = opening_tool->id;
        call["type"] = "function";
        call["function"] = ojson{{"name", opening_tool->name}, {"arguments", piece.text}};
      } else {
        call["function"] = ojson{{"arguments", piece.text}};
      }
      delta["tool_calls"] = ojson::array({call});
      break;
    }
  }
  return envelope(f, ids, one_choice(f, std::move(delta), nullptr));
}

ojson chunk_finish(Flavour f, const ChatIds& ids, const std::string& finish_reason, const GenTimings* timings) {
  ojson delta = ojson::object();
  if (f == Flavour::MlxLm) delta["role"] = "assistant";
  ojson j = envelope(f, ids, one_choice(f, std::move(delta), finish_reason));
  if (timings && f == Flavour::LlamaCpp) j["timings"] = timings_json(*timings);
  return j;
}

ojson chunk_prompt_progress(const ChatIds& ids, int total, int cache, int processed, int64_t time_ms) {
  ojson j = *chunk_role(Flavour::LlamaCpp, ids);
  j["prompt_progress"] = ojson{{"total", total}, {"cache", cache}, {"processed", processed}, {"time_ms", time_ms}};
  return j;
}

ojson chunk_usage(Flavour f, const ChatIds& ids, const GenTimings& t) {
  // mlx-lm labels its usage chunk "chat.completion" (server.py completion_usage_response).
  ojson j = envelope(f, ids, ojson::array(), f == Flavour::MlxLm ? "chat.completion" : "chat.completion.chunk");
  j["usage"] = usage_json(f, t);
  if (f == Flavour::LlamaCpp) j["timings"] = timings_json(t);
  return j;
}

ojson omlx_keepalive_chunk(const std::string& id) {
  ojson j;
  j["id"] = id;
  j["object"] = "chat.completion.chunk";
  j["created"] = 0;
  j["model"] = "keepalive";
  ojson delta;
  delta["role"] = "assistant";
  delta["content"] = "";
  ojson c;
  c["index"] = 0;
  c["delta"] = std::move(delta);
  c["finish_reason"] = nullptr;
  j["choices"] = ojson::array({c});
  return j;
}

std::string keepalive_comment(Flavour f, int processed, int total) {
  if (f == Flavour::MlxLm) return ": keepalive " + std::to_string(processed) + "/" + std::to_string(total) + "\n\n";
  return ": ping\n\n";
}

ojson completion_body(Flavour f, const ChatIds& ids, const CompletionOut& out, const GenTimings& t) {
  ojson message;
  message["role"] = "assistant";
  if (out.tool && f == Flavour::LlamaCpp) {
    message["content"] = "";
  } else if (out.content.empty()) {
    message["content"] = nullptr;
  } else {
    message["content"] = out.content;
  }
  if (!out.reasoning.empty()) message[reasoning_key(f)] = out.reasoning;
  if (out.tool) {
    ojson call;
    call["type"] = "function";
    call["function"] = ojson{{"name", out.tool->name}, {"arguments", out.tool->arguments}};
    call["id"] = out.tool->id;
    message["tool_calls"] = ojson::array({call});
  }
  ojson choice;
  if (f == Flavour::LlamaCpp) {
    choice["finish_reason"] = out.finish_reason;
    choice["index"] = 0;
    choice["message"] = std::move(message);
  } else {
    choice["index"] = 0;
    choice["message"] = std::move(message);
    choice["finish_reason"] = out.finish_reason;
  }
  if (out.logprobs) choice["logprobs"] = *out.logprobs;
  ojson j;
  if (f == Flavour::LlamaCpp) {
    j["choices"] = ojson::array({choice});
    j["created"] = ids.created;
    j["model"] = ids.model;
    j["system_fingerprint"] = ids.fingerprint;
    j["object"] = "chat.completion";
    j["usage"] = usage_json(f, t);
    j["id"] = ids.id;
    j["timings"] = timings_json(t);
    return j;
  }
  j = envelope(f, ids, ojson::array({choice}), "chat.completion");
  j["usage"] = usage_json(f, t);
  return j;
}

ojson error_body(Flavour f, int code, const std::string& message, const std::string& type) {
  ojson e;
  if (f == Flavour::LlamaCpp) {
    e["code"] = code;
    e["message"] = message;
    e["type"] = type;
  } else {
    e["message"] = message;
    e["type"] = type;
    e["param"] = nullptr;
    e["code"] = code;
  }
  return ojson{{"error", e}};
}

ojson models_body(Flavour f, const ServerView& v) {
  ojson entry;
  entry["id"] = v.model;
  switch (f) {
    case Flavour::LlamaCpp: {
      entry["aliases"] = ojson::array({v.model});
      entry["tags"] = ojson::array();
      entry["object"] = "model";
      entry["created"] = v.started_unix;
      entry["owned_by"] = "llamacpp";
      entry["meta"] =
          ojson{{"vocab_type", 2}, {"n_vocab", kFakeVocabSize}, {"n_ctx", v.ctx_per_slot}, {"n_ctx_train", 262144},
                {"n_embd", 2048},  {"n_params", kModelParams},  {"size", kModelBytes},     {"ftype", "Q4_K - Medium"}};
      ojson legacy;
      legacy["name"] = v.model;
      legacy["model"] = v.model;
      legacy["modified_at"] = "";
      legacy["size"] = "";
      legacy["digest"] = "";
      legacy["type"] = "model";
      legacy["description"] = "";
      legacy["tags"] = ojson::array({""});
      legacy["capabilities"] = ojson::array({"completion"});
      legacy["parameters"] = "";
      legacy["details"] =
          ojson{{"parent_model", ""},   {"format", "gguf"},        {"family", ""}, {"families", ojson::array({""})},
                {"parameter_size", ""}, {"quantization_level", ""}};
      ojson j;
      j["models"] = ojson::array({legacy});
      j["object"] = "list";
      j["data"] = ojson::array({entry});
      return j;
    }
    case Flavour::MlxLm:
      entry["object"] = "model";
      entry["created"] = v.started_unix;
      break;
    case Flavour::Omlx:
      entry["object"] = "model";
      entry["created"] = v.started_unix;
      entry["owned_by"] = "omlx";
      break;
    case Flavour::Ollama:
      entry["object"] = "model";
      entry["created"] = v.started_unix;
      entry["owned_by"] = "library";
      break;
    case Flavour::Vllm: return vllm_models_body(v);
    case Flavour::RapidMlx:
      entry["object"] = "model";
      entry["created"] = v.started_unix;
      entry["owned_by"] = "rapid-mlx";
      break;
    case Flavour::LmStudio:
      entry["object"] = "model";
      entry["owned_by"] = "organization_owner";
      break;
  }
  return ojson{{"object", "list"}, {"data", ojson::array({entry})}};
}

ojson props_body(const ServerView& v) {
  ojson params;
  params["seed"] = 4294967295u;
  params["temperature"] = 0.8;
  params["top_k"] = 40;
  params["top_p"] = 0.95;
  params["min_p"] = 0.05;
  params["max_tokens"] = -1;
  params["n_predict"] = -1;
  params["stream"] = false;
  params["chat_format"] = "Content-only";
  params["reasoning_format"] = "deepseek";
  params["speculative.types"] = v.speculative ? "draft" : "none";
  ojson j;
  j["default_generation_settings"] = ojson{{"params", params}, {"n_ctx", v.ctx_per_slot}};
  j["total_slots"] = v.slots;
  j["model_alias"] = v.model;
  j["model_ftype"] = "Q4_K - Medium";
  j["model_path"] = v.model;
  j["modalities"] = ojson{{"vision", false}, {"video", false}, {"audio", false}};
  j["endpoint_slots"] = true;
  j["endpoint_props"] = false;
  j["endpoint_metrics"] = true;
  j["ui"] = true;
  j["chat_template"] = kChatTemplate;
  j["bos_token"] = "<|endoftext|>";
  j["eos_token"] = v.eos_token;
  j["build_info"] = build_info(v.build);
  j["is_sleeping"] = false;
  return j;
}

ojson health_body(Flavour f, bool loading, const ServerView& v) {
  if (f == Flavour::Omlx) {
    ojson j;
    j["status"] = loading ? "loading" : "healthy";
    j["default_model"] = v.model;
    j["engine_pool"] = ojson{{"model_count", 1}, {"loaded_count", loading ? 0 : 1}};
    j["mcp"] = nullptr;
    return j;
  }
  if (loading && f == Flavour::LlamaCpp) {
    ojson e;
    e["message"] = "Loading model";
    e["type"] = "unavailable_error";
    e["code"] = 503;
    return ojson{{"error", e}};
  }
  return ojson{{"status", "ok"}};
}

ojson omlx_status_body(const ServerView& v) {
  ojson j;
  j["status"] = "ok";
  j["version"] = v.build;
  j["uptime_seconds"] = v.uptime_s;
  j["models_loaded"] = v.loaded_models.size();
  j["models_loading"] = 0;
  j["default_model"] = v.model;
  j["loaded_models"] = v.loaded_models;
  j["total_requests"] = v.total_requests;
  j["active_requests"] = v.active_requests;
  j["waiting_requests"] = v.waiting_requests;
  j["total_prompt_tokens"] = v.total_prompt_tokens;
  j["total_completion_tokens"] = v.total_completion_tokens;
  return j;
}

ojson ollama_version_body(const ServerView& v) { return ojson{{"version", v.build}}; }

ojson ollama_ps_body(const ServerView& v) {
  ojson m;
  m["name"] = v.model;
  m["model"] = v.model;
  m["size"] = kModelBytes;
  m["digest"] = v.digest.empty() ? hash_hex(v.model) : v.digest;
  m["details"] = ojson{{"parent_model", ""},      {"format", "gguf"},
                       {"family", "qwen3moe"},    {"families", ojson::array({"qwen3moe"})},
                       {"parameter_size", "35B"}, {"quantization_level", "Q4_K_M"}};
  m["expires_at"] = "2099-01-01T00:00:00Z";
  m["size_vram"] = kModelBytes;
  m["context_length"] = v.ctx_per_slot;
  return ojson{{"models", ojson::array({m})}};
}

ojson slots_body(const std::vector<SlotView>& slots) {
  ojson arr = ojson::array();
  for (const auto& s : slots) {
    ojson j;
    j["id"] = s.id;
    j["n_ctx"] = s.n_ctx;
    j["speculative"] = s.speculative;
    j["is_processing"] = s.is_processing;
    if (s.has_task) {
      j["id_task"] = s.id_task;
      j["n_prompt_tokens"] = s.n_prompt_tokens;
      j["n_prompt_tokens_processed"] = s.n_prompt_tokens_processed;
      j["n_prompt_tokens_cache"] = s.n_prompt_tokens_cache;
      j["params"] = ojson{{"max_tokens", s.max_tokens}, {"n_predict", s.max_tokens}, {"stream", s.stream}};
      ojson next;
      next["has_next_token"] = s.is_processing;
      next["has_new_line"] = false;
      next["n_remain"] = s.n_remain;
      next["n_decoded"] = s.n_decoded;
      j["next_token"] = ojson::array({next});
    }
    arr.push_back(std::move(j));
  }
  return arr;
}

std::string metrics_text(const MetricsView& m) {
  std::string out;
  auto metric = [&](const char* name, const char* help, const char* type, const std::string& value) {
    out += std::string("# HELP llamacpp:") + name + " " + help + "\n";
    out += std::string("# TYPE llamacpp:") + name + " " + type + "\n";
    out += std::string("llamacpp:") + name + " " + value + "\n";
  };
  auto num = [](double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%g", v);
    return std::string(buf);
  };
  double prompt_tps = m.prompt_seconds_total > 0 ? m.prompt_tokens_total / m.prompt_seconds_total : 0;
  double gen_tps =
      m.tokens_predicted_seconds_total > 0 ? m.tokens_predicted_total / m.tokens_predicted_seconds_total : 0;
  double busy = m.n_decode_total > 0 ? static_cast<double>(m.busy_slot_decodes) / m.n_decode_total : 0;
  metric("prompt_tokens_total", "Number of prompt tokens processed.", "counter", std::to_string(m.prompt_tokens_total));
  metric("prompt_seconds_total", "Prompt process time", "counter", num(m.prompt_seconds_total));
  metric("tokens_predicted_total", "Number of generation tokens processed.", "counter",
         std::to_string(m.tokens_predicted_total));
  metric("tokens_predicted_seconds_total", "Predict process time", "counter", num(m.tokens_predicted_seconds_total));
  metric("n_decode_total", "Total number of llama_decode() calls", "counter", std::to_string(m.n_decode_total));
  metric("n_tokens_max", "Largest observed n_tokens.", "counter", std::to_string(m.n_tokens_max));
  metric("prompt_tokens_seconds", "Average prompt throughput in tokens/s.", "gauge", num(prompt_tps));
  metric("predicted_tokens_seconds", "Average generation throughput in tokens/s.", "gauge", num(gen_tps));
  metric("requests_processing", "Number of requests processing.", "gauge", std::to_string(m.requests_processing));
  metric("requests_deferred", "Number of requests deferred.", "gauge", std::to_string(m.requests_deferred));
  metric("n_busy_slots_per_decode", "Average number of busy slots per llama_decode() call", "gauge", num(busy));
  return out;
}

}  // namespace soak::fake
