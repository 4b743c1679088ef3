#include "probes/served_state.h"

#include <algorithm>
#include <charconv>
#include <initializer_list>

#include <nlohmann/json.hpp>

#include "probes/json_fields.h"
#include "probes/prometheus.h"
#include "probes/text_util.h"

namespace soak::probes {
namespace {

using jsonf::json;
using ojson = nlohmann::ordered_json;

constexpr size_t kMaxShownIds = 5;

json parse_object(std::string_view body) {
  json j = jsonf::parse(text::trim(body));
  return j.is_object() ? j : json();
}

void add_loaded(ServedState& s, const std::string& id) {
  if (id.empty()) return;
  for (const auto& x : s.loaded)
    if (x == id) return;
  s.loaded.push_back(id);
}

void add_source(LaunchFingerprint& f, std::string_view path) {
  if (!f.source.empty()) f.source += " + ";
  f.source += path;
}

std::string listed(const std::vector<std::string>& ids) {
  if (ids.empty()) return "none";
  std::string out;
  for (size_t i = 0; i < ids.size() && i < kMaxShownIds; ++i) out += (i ? ", " : "") + text::excerpt(ids[i], 80);
  if (ids.size() > kMaxShownIds) out += ", ...";
  return out;
}

// llama.cpp tools/server/server-context.cpp get_props: model_path, model_alias,
// total_slots, default_generation_settings.n_ctx (per slot). Its params.n_predict
// is the sampling default, not -n (a server started with -n 64 still shows -1),
// so the max-tokens default is left unknown.
Status read_llama_props(std::string_view body, ServedState& s) {
  auto p = parse_llamacpp_props(body);
  if (!p) return p.error();
  s.proof = IdentityProof::ServedName;
  add_loaded(s, p->model_alias);
  add_loaded(s, p->model_path);
  LaunchFingerprint& f = s.fingerprint;
  f.model = p->model_path.empty() ? p->model_alias : p->model_path;
  if (p->total_slots) f.slots = *p->total_slots;
  f.ctx_per_slot = p->n_ctx;
  if (f.ctx_per_slot && f.slots) f.ctx_total = *f.ctx_per_slot * *f.slots;
  return Status::Ok();
}

// server-context.cpp slots: each slot's `speculative` says a draft model (or
// another speculative mode) is attached.
Status read_llama_slots(std::string_view body, ServedState& s) {
  json j = jsonf::parse(text::trim(body));
  if (!j.is_array()) return make_error("/slots answer is not a JSON array");
  bool any = false, seen = false;
  for (const auto& slot : j) {
    if (auto sp = jsonf::get_bool(slot, "speculative")) {
      seen = true;
      any = any || *sp;
    }
    if (!s.fingerprint.ctx_per_slot) s.fingerprint.ctx_per_slot = jsonf::get_int(slot, "n_ctx");
  }
  if (seen) s.fingerprint.speculative = any;
  if (!s.fingerprint.slots) s.fingerprint.slots = static_cast<int64_t>(j.size());
  return Status::Ok();
}

// vllm/entrypoints/openai/protocol.py ModelCard: id (served name), root (the
// model path or repo), max_model_len.
Status read_vllm_models(std::string_view body, ServedState& s) {
  json j = parse_object(body);
  const json* data = jsonf::member(j, "data");
  if (!data || !data->is_array()) return make_error("/v1/models has no data[]");
  s.proof = IdentityProof::ServedName;
  for (const auto& m : *data) {
    auto id = jsonf::get_string(m, "id");
    if (!id) continue;
    add_loaded(s, *id);
    if (s.fingerprint.model.empty()) {
      s.fingerprint.model = jsonf::get_string(m, "root").value_or(*id);
      s.fingerprint.ctx_per_slot = jsonf::get_int(m, "max_model_len");
    }
  }
  return Status::Ok();
}

// ollama server/routes.go PsHandler -> api.ProcessResponse{models: [
// {name, model, size, digest, details, expires_at, size_vram, context_length}]}.
Status read_ollama_ps(std::string_view body, std::string_view config_model, ServedState& s) {
  json j = parse_object(body);
  const json* models = jsonf::member(j, "models");
  if (!models || !models->is_array()) return make_error("/api/ps has no models[]");
  s.proof = IdentityProof::ServedDigest;
  for (const auto& m : *models) {
    std::string name = jsonf::get_string(m, "name").value_or("");
    std::string model = jsonf::get_string(m, "model").value_or("");
    add_loaded(s, name);
    add_loaded(s, model);
    if (name != config_model && model != config_model) continue;
    s.served_digest = jsonf::get_string(m, "digest").value_or("");
    s.fingerprint.model = s.served_digest;
    s.fingerprint.ctx_per_slot = jsonf::get_int(m, "context_length");
  }
  return Status::Ok();
}

// LM Studio REST v0 (lmstudio docs 1_developer/2_rest/endpoints.mdx) GET
// /api/v0/models: data[] {id, type, arch, quantization, state
// ("loaded" | "not-loaded"), max_context_length, loaded_context_length}.
Status read_lmstudio_models(std::string_view body, ServedState& s) {
  json j = parse_object(body);
  const json* data = jsonf::member(j, "data");
  if (!data || !data->is_array()) return make_error("/api/v0/models has no data[]");
  s.proof = IdentityProof::LoadedState;
  for (const auto& m : *data) {
    if (jsonf::get_string(m, "state").value_or("") != "loaded") continue;
    auto id = jsonf::get_string(m, "id");
    if (!id) continue;
    add_loaded(s, *id);
    if (!s.fingerprint.model.empty()) continue;
    s.fingerprint.model = *id;
    if (auto q = jsonf::get_string(m, "quantization")) s.fingerprint.model += " " + *q;
    s.fingerprint.ctx_per_slot = jsonf::get_int(m, "loaded_context_length");
  }
  return Status::Ok();
}

// LM Studio REST v1 (lmstudio docs 1_developer/2_rest/list.mdx, LM Studio
// 0.4+) GET /api/v1/models: models[] {key, loaded_instances[] {id, config
// {context_length, parallel (newer builds; absent for embedding models),
// eval_batch_size, flash_attention, ...}}}. The instance serving the config
// model (its key, or an instance id like "key:2") gives the slots; context
// stays v0's loaded_context_length when that was read. An LM Studio before
// 0.4 has no such route and, as for every route it lacks, answers 200
// {"error":"Unexpected endpoint or method. (GET ...)"}: its fields stay
// unknown, never a malformed identity answer.
Status read_lmstudio_v1_models(std::string_view body, std::string_view config_model, ServedState& s) {
  json j = parse_object(body);
  const json* models = jsonf::member(j, "models");
  if (!models || !models->is_array()) return Status::Ok();
  for (const auto& m : *models) {
    const json* instances = jsonf::member(m, "loaded_instances");
    if (!instances || !instances->is_array()) continue;
    const bool ours = jsonf::get_string(m, "key").value_or("") == config_model;
    for (const auto& i : *instances) {
      if (!ours && jsonf::get_string(i, "id").value_or("") != config_model) continue;
      const json* cfg = jsonf::member(i, "config");
      if (!cfg) continue;
      if (auto p = jsonf::get_int(*cfg, "parallel")) s.fingerprint.slots = *p;
      if (!s.fingerprint.ctx_per_slot) s.fingerprint.ctx_per_slot = jsonf::get_int(*cfg, "context_length");
      return Status::Ok();
    }
  }
  return Status::Ok();
}

// vllm/v1/metrics/loggers.py PrometheusStatLogger.log_metrics_info: the info
// gauge vllm:cache_config_info (value 1, one series per engine), its labels
// CacheConfig.metrics_info(), every field as a string: cache_dtype ("auto" is
// the model's own dtype) is the KV cache type. A build without it: unknown.
Status read_vllm_metrics(std::string_view body, ServedState& s) {
  PromText prom = parse_prometheus_text(body);
  if (const PromSample* info = prom.find("vllm:cache_config_info"))
    if (const std::string* d = info->label("cache_dtype")) s.fingerprint.kv_cache_type = *d;
  return Status::Ok();
}

// Rapid-MLX vllm_mlx/routes/metrics.py: rapid_mlx_build_info{version,model} 1
// always; rapid_mlx_kv_cache_dtype{dtype} 1 for the active dtype;
// rapid_mlx_requests_running / _waiting gauges.
Status read_rapid_metrics(std::string_view body, ServedState& s) {
  PromText prom = parse_prometheus_text(body);
  const PromSample* info = prom.find("rapid_mlx_build_info");
  if (!info) return make_error("/metrics has no rapid_mlx_build_info");
  s.proof = IdentityProof::LoadedState;
  if (const std::string* m = info->label("model")) {
    add_loaded(s, *m);
    s.fingerprint.model = *m;
  }
  for (const auto& x : prom.samples)
    if (x.name == "rapid_mlx_kv_cache_dtype" && x.value == 1)
      if (const std::string* d = x.label("dtype")) s.fingerprint.kv_cache_type = *d;
  if (auto v = prom.value("rapid_mlx_requests_running")) s.running = static_cast<int64_t>(*v);
  if (auto v = prom.value("rapid_mlx_requests_waiting")) s.waiting = static_cast<int64_t>(*v);
  return Status::Ok();
}

// oMLX omlx/server.py server_status() GET /api/status: loaded_models (the
// engine pool's get_loaded_model_ids(): real model ids, not the aliases
// /v1/models shows), active_requests, waiting_requests. Its /v1/models lists
// every discovered model, loaded or not, so it proves nothing. A build
// without loaded_models leaves identity an echo.
Status read_omlx_status(std::string_view body, std::string_view config_model, ServedState& s) {
  auto st = parse_omlx_status(body);
  if (!st) return st.error();
  s.running = st->active_requests;
  s.waiting = st->waiting_requests;
  if (!st->loaded_models) {
    s.proof = IdentityProof::EchoOnly;
    s.unproven_reason = "this oMLX's /api/status has no loaded_models";
    return Status::Ok();
  }
  s.proof = IdentityProof::LoadedState;
  for (const auto& id : *st->loaded_models) {
    add_loaded(s, id);
    if (id == config_model) s.fingerprint.model = id;
  }
  return Status::Ok();
}

std::optional<int64_t> to_int(std::string_view v) {
  int64_t n = 0;
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (ec != std::errc() || end != v.data() + v.size()) return std::nullopt;
  return n;
}

}  // namespace

std::string_view to_string(IdentityProof p) {
  switch (p) {
    case IdentityProof::ServedDigest: return "served digest";
    case IdentityProof::ServedName: return "served name";
    case IdentityProof::LoadedState: return "loaded state";
    case IdentityProof::ProcessArgv: return "runtime argv";
    case IdentityProof::EchoOnly: return "echo only";
  }
  return "?";
}

std::string LaunchFingerprint::to_json() const {
  if (empty() && !speculative && !max_tokens_default) return "";
  ojson j = ojson::object();
  if (!model.empty()) j["model"] = model;
  if (ctx_per_slot) j["ctx_per_slot"] = *ctx_per_slot;
  if (ctx_total) j["ctx_total"] = *ctx_total;
  if (slots) j["slots"] = *slots;
  if (!kv_cache_type.empty()) j["kv_cache_type"] = kv_cache_type;
  if (speculative) j["speculative"] = *speculative;
  if (max_tokens_default) j["max_tokens_default"] = *max_tokens_default;
  return j.dump();
}

std::string LaunchFingerprint::summary() const {
  std::string out;
  auto add = [&](const std::string& s) { out += (out.empty() ? "" : ", ") + s; };
  if (ctx_per_slot) {
    std::string c = "ctx " + std::to_string(*ctx_per_slot) + "/slot";
    if (ctx_total) c += " (" + std::to_string(*ctx_total) + " total)";
    add(c);
  }
  if (slots) add(std::to_string(*slots) + " slot" + (*slots == 1 ? "" : "s"));
  if (!kv_cache_type.empty()) add("kv " + kv_cache_type);
  if (speculative) add(*speculative ? "speculative" : "no draft");
  if (max_tokens_default) add("max_tokens default " + (*max_tokens_default < 0 ? std::string("unlimited")
                                                                               : std::to_string(*max_tokens_default)));
  if (!model.empty()) add("model " + text::excerpt(model, 80));
  return out.empty() ? "not exposed" : out;
}

FingerprintComparison compare_fingerprints(const LaunchFingerprint& was, const LaunchFingerprint& now) {
  FingerprintComparison c;
  c.merged = was;
  auto text = [&](const std::string& a, const std::string& b, std::string& into) {
    if (!a.empty() && !b.empty() && a != b) c.changed = true;
    if (into.empty()) into = b;
  };
  auto value = [&](const auto& a, const auto& b, auto& into) {
    if (a && b && *a != *b) c.changed = true;
    if (!into) into = b;
  };
  text(was.model, now.model, c.merged.model);
  text(was.kv_cache_type, now.kv_cache_type, c.merged.kv_cache_type);
  value(was.ctx_per_slot, now.ctx_per_slot, c.merged.ctx_per_slot);
  value(was.ctx_total, now.ctx_total, c.merged.ctx_total);
  value(was.slots, now.slots, c.merged.slots);
  value(was.speculative, now.speculative, c.merged.speculative);
  value(was.max_tokens_default, now.max_tokens_default, c.merged.max_tokens_default);
  if (c.changed) c.merged = now;
  return c;
}

Result<LaunchFingerprint> parse_fingerprint_json(std::string_view text) {
  LaunchFingerprint f;
  if (text::trim(text).empty()) return f;
  json j = parse_object(text);
  if (j.is_null()) return make_error("launch fingerprint is not a JSON object: " + text::excerpt(text, 80));
  f.model = jsonf::get_string(j, "model").value_or("");
  f.ctx_per_slot = jsonf::get_int(j, "ctx_per_slot");
  f.ctx_total = jsonf::get_int(j, "ctx_total");
  f.slots = jsonf::get_int(j, "slots");
  f.kv_cache_type = jsonf::get_string(j, "kv_cache_type").value_or("");
  f.speculative = jsonf::get_bool(j, "speculative");
  f.max_tokens_default = jsonf::get_int(j, "max_tokens_default");
  return f;
}

std::vector<HttpRoute> served_routes(RuntimeKind kind) {
  switch (kind) {
    case RuntimeKind::LlamaCpp: return {{"GET", "/props"}, {"GET", "/slots"}};
    case RuntimeKind::Vllm: return {{"GET", "/v1/models"}, {"GET", "/metrics"}};
    case RuntimeKind::Ollama: return {{"GET", "/api/ps"}};
    case RuntimeKind::LmStudio: return {{"GET", "/api/v0/models"}, {"GET", "/api/v1/models"}};
    case RuntimeKind::RapidMlx: return {{"GET", "/metrics"}};
    case RuntimeKind::Omlx: return {{"GET", "/api/status"}};
    case RuntimeKind::MlxLm:   // its argv (mlx_lm_served_from_argv)
    case RuntimeKind::OpenAI: return {};
  }
  return {};
}

Status read_served_answer(RuntimeKind kind, std::string_view path, std::string_view body,
                          std::string_view config_model, ServedState& into) {
  Status st = Status::Ok();
  switch (kind) {
    case RuntimeKind::LlamaCpp:
      st = path == "/slots" ? read_llama_slots(body, into) : read_llama_props(body, into);
      break;
    case RuntimeKind::Vllm: st = path == "/metrics" ? read_vllm_metrics(body, into) : read_vllm_models(body, into); break;
    case RuntimeKind::Ollama: st = read_ollama_ps(body, config_model, into); break;
    case RuntimeKind::LmStudio:
      st = path == "/api/v1/models" ? read_lmstudio_v1_models(body, config_model, into) : read_lmstudio_models(body, into);
      break;
    case RuntimeKind::RapidMlx: st = read_rapid_metrics(body, into); break;
    case RuntimeKind::Omlx: st = read_omlx_status(body, config_model, into); break;
    case RuntimeKind::MlxLm:
    case RuntimeKind::OpenAI: return make_error(std::string(to_string(kind)) + " has no served-state route");
  }
  if (st.ok()) add_source(into.fingerprint, path);
  return st;
}

namespace {

// argv[i]'s value when it is `flag value` or `flag=value`.
std::optional<std::string> flag_value(const std::vector<std::string>& argv, size_t i, std::string_view flag) {
  std::string_view a = argv[i];
  if (a == flag) return i + 1 < argv.size() ? std::optional<std::string>(argv[i + 1]) : std::nullopt;
  if (a.size() > flag.size() && a.substr(0, flag.size()) == flag && a[flag.size()] == '=')
    return std::string(a.substr(flag.size() + 1));
  return std::nullopt;
}

std::optional<std::string> any_flag_value(const std::vector<std::string>& argv, size_t i,
                                          std::initializer_list<std::string_view> flags) {
  for (std::string_view f : flags)
    if (auto v = flag_value(argv, i, f)) return v;
  return std::nullopt;
}

}  // namespace

void add_llama_argv(const std::vector<std::string>& given, LaunchFingerprint& f) {
  if (given.empty()) return;
  // common/arg.cpp: {"-ctk", "--cache-type-k"}, {"-ctv", "--cache-type-v"},
  // {"-n", "--predict", "--n-predict"}; the last occurrence wins, and a "--"
  // option may be spelt with '_' for '-' (upstream normalises it too).
  std::vector<std::string> argv = given;
  for (auto& a : argv)
    if (a.rfind("--", 0) == 0) std::replace(a.begin(), a.end(), '_', '-');
  std::optional<std::string> k, v, n;
  for (size_t i = 0; i < argv.size(); ++i) {
    if (auto x = any_flag_value(argv, i, {"-ctk", "--cache-type-k"})) k = x;
    if (auto x = any_flag_value(argv, i, {"-ctv", "--cache-type-v"})) v = x;
    if (auto x = any_flag_value(argv, i, {"-n", "--predict", "--n-predict"})) n = x;
  }
  // Not given: upstream's default (common/common.h cache_type_k/v
  // GGML_TYPE_F16, n_predict -1), so that dropping a flag is a change of
  // launch. An empty value is a launch value taken from soakd's environment
  // (not shown): unknown.
  const std::string kk = k.value_or("f16"), vv = v.value_or("f16");
  if (!kk.empty() && !vv.empty()) f.kv_cache_type = kk == vv ? kk : "k=" + kk + " v=" + vv;
  if (!n) f.max_tokens_default = -1;
  else if (auto x = to_int(*n)) f.max_tokens_default = *x;
  add_source(f, "argv");
}

RuntimeArgv runtime_argv_of(const CandidateConfig& c, const RuntimeArgvReader& reader) {
  RuntimeArgv a;
  if (c.launch) {
    a.argv = launch_argv_of(c);
    return a;
  }
  if (reader) a = reader(c);
  else a.error = "this soakd cannot discover runtime processes";
  if (a.error.empty() && a.argv.empty()) a.error = "its process's argv is empty (not visible to this user?)";
  return a;
}

ServedState mlx_lm_served_from_argv(const std::vector<std::string>& argv) {
  // mlx_lm/server.py main(): --model, --draft-model, --max-tokens (default 512).
  ServedState s;
  LaunchFingerprint& f = s.fingerprint;
  f.speculative = false;
  for (size_t i = 0; i < argv.size(); ++i) {
    if (auto v = flag_value(argv, i, "--model")) f.model = *v;
    if (auto v = flag_value(argv, i, "--draft-model")) f.speculative = !v->empty();
    if (auto v = flag_value(argv, i, "--max-tokens")) f.max_tokens_default = to_int(*v);
  }
  if (!f.max_tokens_default) f.max_tokens_default = kMlxLmDefaultMaxTokens;
  f.source = "argv";
  if (!f.model.empty()) {
    s.proof = IdentityProof::ProcessArgv;
    add_loaded(s, f.model);
  }
  return s;
}

std::vector<std::string> launch_argv_of(const CandidateConfig& c) {
  std::vector<std::string> out;
  if (!c.launch) return out;
  for (const auto& v : c.launch->argv) out.push_back(v.from_env.empty() ? v.text : std::string());
  return out;
}

ServedState mlx_lm_served(const CandidateConfig& c, const RuntimeArgvReader& reader) {
  if (c.launch) {
    ServedState s = mlx_lm_served_from_argv(launch_argv_of(c));
    s.fingerprint.source = "launch argv";
    if (s.proof == IdentityProof::EchoOnly) s.unproven_reason = "its launch argv has no --model";
    return s;
  }
  RuntimeArgv a = runtime_argv_of(c, reader);
  if (!a.error.empty()) {
    ServedState s;
    s.unproven_reason = "its argv could not be read: " + a.error;
    return s;
  }
  ServedState s = mlx_lm_served_from_argv(a.argv);
  s.fingerprint.source = "argv of " + (a.source.empty() ? std::string("its process") : a.source);
  if (s.proof == IdentityProof::EchoOnly) s.unproven_reason = "its process's argv has no --model";
  return s;
}

Verdict judge_served(const ServedState& s, std::string_view config_model, std::string_view expected_model) {
  const std::string how = std::string(to_string(s.proof));
  if (s.proof == IdentityProof::EchoOnly) {
    std::string d =
        "identity: echo only - the runtime's answers repeat the requested model and nothing it exposes names "
        "the loaded weights";
    if (!s.unproven_reason.empty()) d += " (" + s.unproven_reason + ")";
    return {Outcome::IdentityUnproven, d};
  }
  bool found = false;
  for (const auto& id : s.loaded) found = found || id == config_model;
  if (s.proof == IdentityProof::ProcessArgv && !found) {
    return {Outcome::IdentityMismatch,
            "config model '" + text::excerpt(config_model, 100) + "' is not the runtime's --model '" +
                text::excerpt(s.fingerprint.model, 100) +
                "': MLX-LM would load other weights for that request string; set the config model to the --model value"};
  }
  if (!found) {
    return {Outcome::IdentityMismatch, "'" + text::excerpt(config_model, 100) + "' is not what the runtime serves (" +
                                           how + " from " + s.fingerprint.source + "; loaded: " + listed(s.loaded) + ")"};
  }
  if (!expected_model.empty() && s.fingerprint.model != expected_model) {
    return {Outcome::IdentityMismatch, "weights changed since this build was registered: " + how + " was '" +
                                           text::excerpt(expected_model, 100) + "', now '" +
                                           text::excerpt(s.fingerprint.model, 100) + "'"};
  }
  std::string detail = "identity: " + how + " (" + s.fingerprint.source;
  if (!s.served_digest.empty()) detail += " digest " + text::excerpt(s.served_digest, 24);
  return {Outcome::Clean, detail + ")"};
}

}  // namespace soak::probes
