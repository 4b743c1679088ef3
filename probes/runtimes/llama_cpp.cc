#include "probes/runtimes/runtime.h"

#include <array>
#include <charconv>

#include "probes/json_fields.h"
#include "probes/text_util.h"

namespace soak::probes {
namespace {

using jsonf::json;

constexpr HttpRoute route_get(std::string_view path) { return HttpRoute{"GET", path}; }
constexpr HttpRoute route_post(std::string_view path) { return HttpRoute{"POST", path}; }

// llama.cpp tools/server: /metrics exists only with --metrics; names carry the
// `llamacpp:` prefix (see the get-metrics-*.http captures).
constexpr std::array<std::string_view, 8> kLlamaMetrics{
    "llamacpp:prompt_tokens_total",   "llamacpp:prompt_seconds_total",   "llamacpp:tokens_predicted_total",
    "llamacpp:tokens_predicted_seconds_total", "llamacpp:n_decode_total", "llamacpp:requests_processing",
    "llamacpp:requests_deferred",     "llamacpp:n_busy_slots_per_decode",
};
// vLLM production metrics (docs.vllm.ai usage/metrics): scheduler state, KV
// cache use (gpu_cache_usage_perc before v1 renamed it), token counters and
// speculative-decoding acceptance.
constexpr std::array<std::string_view, 9> kVllmMetrics{
    "vllm:num_requests_running",        "vllm:num_requests_waiting",
    "vllm:kv_cache_usage_perc",         "vllm:gpu_cache_usage_perc",
    "vllm:prompt_tokens_total",         "vllm:generation_tokens_total",
    "vllm:spec_decode_num_draft_tokens_total", "vllm:spec_decode_num_accepted_tokens_total",
    "vllm:spec_decode_num_drafts_total",
};
// Rapid-MLX vllm_mlx/routes/metrics.py: build info is always emitted; the
// running batch and the waiting queue are gauges.
constexpr std::array<std::string_view, 3> kRapidMetrics{"rapid_mlx_build_info", "rapid_mlx_requests_running",
                                                        "rapid_mlx_requests_waiting"};

RuntimeTraits llama_cpp() {
  RuntimeTraits t;
  t.kind = RuntimeKind::LlamaCpp;
  // tools/server: every route answers 503 {"error":{"message":"Loading model"}}
  // while loading (get-health-during-model-load.http), then /health is
  // {"status":"ok"}. /health and /v1/models stay public under --api-key;
  // /props, /slots and /metrics need the key.
  t.health = route_get("/health");
  t.models = route_get("/v1/models");
  t.build = route_get("/props");
  t.build_source = BuildSourceKind::LlamaCppProps;
  t.props = route_get("/props");
  // /slots: is_processing, n_ctx, next_token[0].n_decoded; `?fail_on_no_slot=1`
  // answers 503 "no slot available" when every slot is busy.
  t.slots = route_get("/slots");
  t.metrics = route_get("/metrics");
  t.key_metrics = kLlamaMetrics;
  t.tokenize = route_post("/tokenize");  // {"content": text} -> {"tokens": [...]}
  // Reasoning in reasoning_content (--reasoning-format `auto` by default);
  // usage chunk only when asked (the stream-no-usage capture has timings, no
  // usage); `:` pings every --sse-ping-interval (30 s) without a result.
  t.identity = IdentityEvidence::ResponseModel;  // first --alias, else the -hf repo, else the -m path as given
  // server-context.cpp: a stream with return_progress gets a prompt_progress chunk
  // when the slot starts and after each batch of the prompt.
  t.prefill_reports = PrefillReports::PromptProgressChunks;
  // -n / --n-predict: -1 (unlimited) by default; /props does not show it (get_props
  // builds its params from the sampling defaults only), so a cut answer's count does.
  t.notes = "timings per answer (draft_n/draft_n_accepted only when > 0); finish chunk, then usage chunk with choices []";
  return t;
}

RuntimeTraits mlx_lm() {
  RuntimeTraits t;
  t.kind = RuntimeKind::MlxLm;
  // mlx_lm/server.py handle_health_check: always 200 {"status": "ok"}; there is
  // no loading state to see.
  t.health = route_get("/health");
  // handle_models_request lists every model in the Hugging Face cache, so the
  // list proves what is available, not what is loaded.
  t.models = route_get("/v1/models");
  // No version route; get_system_fingerprint() = "<mlx-lm>-<mlx>-<platform>-<gpu arch>".
  t.build_source = BuildSourceKind::SystemFingerprint;
  // Reasoning in choice["reasoning"]; usage only with stream_options.include_usage.
  // "model": self.requested_model, and the request picks the model: only
  // "default_model" (or the --model id) is what was started, any other cached
  // id is loaded. Identity is proven from its argv (probes/served_state.h).
  t.identity = IdentityEvidence::EchoesRequest;
  t.prefill_reports = PrefillReports::KeepaliveComments;  // handle_completion keepalive_callback, per prefill step
  t.default_max_tokens = 512;                          // --max-tokens default 512
  t.notes = "no metrics, slots or tokenize; build from system_fingerprint or a configured command";
  return t;
}

RuntimeTraits omlx() {
  RuntimeTraits t;
  t.kind = RuntimeKind::Omlx;
  // omlx/server.py: /health {"status":"healthy", default_model, engine_pool, mcp};
  // /api/status {"status":"ok","version",...,"active_requests","waiting_requests"}
  // (needs the API key when one is set).
  t.health = route_get("/health");
  t.models = route_get("/v1/models");  // ids are the model alias when one is set
  t.build = route_get("/api/status");
  t.build_source = BuildSourceKind::OmlxStatus;
  t.status = route_get("/api/status");  // server_status(): active_requests, waiting_requests, loaded_models
  // Usage chunk only when requested; it adds time_to_first_token (s),
  // prompt_tokens_per_second (cached tokens included) and generation_tokens_per_second.
  t.identity = IdentityEvidence::EchoesRequest;  // chunks carry model=request.model; /api/status only counts models
  // Keep-alive chunks ("model":"keepalive", empty content) at once and every
  // 10 s by default; `: keep-alive` comments only in the legacy mode
  // (docs/DESIGN.md §7.3).
  t.default_max_tokens = 32768;  // SamplingDefaults.max_tokens unless settings change it
  t.notes = "non-stream answers are preceded by keep-alive spaces; 409 while a model loads; errors then [DONE]";
  return t;
}

RuntimeTraits vllm() {
  RuntimeTraits t;
  t.kind = RuntimeKind::Vllm;
  // vllm/entrypoints/serve/instrumentator/health.py: 200 with an empty body,
  // 503 when the engine is dead (EngineDeadError).
  t.health = route_get("/health");
  t.models = route_get("/v1/models");
  t.build = route_get("/version");  // {"version": "..."}
  t.build_source = BuildSourceKind::VersionJson;
  t.metrics = route_get("/metrics");
  t.key_metrics = kVllmMetrics;
  t.tokenize = route_post("/tokenize");  // {"model", "prompt"} -> {"count", "tokens", "max_model_len"}
  // `reasoning` (`reasoning_content` in older releases). While the engine
  // starts the API server is not listening yet: connections are refused.
  t.identity = IdentityEvidence::ResponseModel;  // the served model name
  t.notes = "spec_decode_* counters carry draft acceptance";
  return t;
}

RuntimeTraits rapid_mlx() {
  RuntimeTraits t;
  t.kind = RuntimeKind::RapidMlx;
  // vllm_mlx/routes/health.py: /health/ready answers 503 {"detail":"model
  // loading"} both while loading and after SIGTERM (ready is False then too);
  // /healthz tells them apart: 200 {"ready": false} while loading, 503
  // {"status": "draining"} while draining.
  t.health = route_get("/healthz");
  t.models = route_get("/v1/models");
  // vllm_mlx/routes/metrics.py: rapid_mlx_build_info{version,model} 1, always.
  t.build = route_get("/metrics");
  t.build_source = BuildSourceKind::MetricsBuildInfo;
  t.metrics = route_get("/metrics");
  t.key_metrics = kRapidMetrics;
  // reasoning_content (vllm_mlx/api/models.py); `: keepalive` every 20 s.
  t.identity = IdentityEvidence::EchoesRequest;  // service/helpers.py _resolve_model_name
  t.notes = "poll /healthz (loading vs draining), not /v1/models (which answers as soon as the app binds)";
  return t;
}

RuntimeTraits ollama() {
  RuntimeTraits t;
  t.kind = RuntimeKind::Ollama;
  // GET / answers 200 "Ollama is running" (ollama/ollama#1378, #2725).
  t.health = route_get("/");
  t.models = route_get("/v1/models");
  t.build = route_get("/api/version");  // {"version": "0.12.6"} (docs.ollama.com api-reference/get-version)
  t.build_source = BuildSourceKind::VersionJson;
  // openai/openai.go: the answer's model is the request's (an echo); the
  // loaded weights' digest is in /api/ps (probes/served_state.h).
  t.identity = IdentityEvidence::EchoesRequest;
  t.tool_choice = ToolChoice::Unsupported;       // docs/DESIGN.md §7.1
  // openai/openai.go ChatCompletionRequest has reasoning_effort ("none" is
  // thinking off) and neither chat_template_kwargs nor top_k.
  t.thinking_switch = ThinkingSwitch::ReasoningEffort;
  t.top_k = TopK::Dropped;
  t.notes = "/api/ps gives size_vram and context_length; OLLAMA_NUM_PARALLEL sets the slots";
  return t;
}

RuntimeTraits lm_studio() {
  RuntimeTraits t;
  t.kind = RuntimeKind::LmStudio;
  // Server health is `lms server status --json` (a command, lmstudio docs
  // 3_cli/1_serve/server-status.md); over HTTP the model list answering is the
  // signal.
  t.health = route_get("/v1/models");
  t.models = route_get("/v1/models");
  // /api/v0/chat/completions answers carry runtime{name,version} and
  // stats{tokens_per_second,time_to_first_token} (lmstudio docs 1_developer/2_rest/endpoints.mdx).
  t.build = route_post("/api/v0/chat/completions");
  t.build_source = BuildSourceKind::LmStudioRuntime;
  // Its OpenAI route answers without `stats`; the v0 route takes the same
  // OpenAI request and adds stats{tokens_per_second, time_to_first_token,
  // generation_time, stop_reason}, model_info and runtime: chat probes use it.
  t.chat_path = "/api/v0/chat/completions";
  t.identity = IdentityEvidence::ResponseModel;  // the model key; loaded state in /api/v0/models
  t.notes = "GGUF runs on a llama.cpp engine, MLX on mlx-engine: the runtime name says which";
  return t;
}

RuntimeTraits openai_generic() {
  RuntimeTraits t;
  t.kind = RuntimeKind::OpenAI;
  t.health = route_get("/v1/models");
  t.models = route_get("/v1/models");
  t.identity = IdentityEvidence::ResponseModel;
  t.notes = "plain OpenAI-compatible server: build from a configured command or a fixed string";
  return t;
}

json parse_object(std::string_view body) {
  json j = jsonf::parse(text::trim(body));
  return j.is_object() ? j : json();
}

}  // namespace

std::string_view to_string(HealthState s) {
  switch (s) {
    case HealthState::Up: return "up";
    case HealthState::Loading: return "loading";
    case HealthState::Draining: return "draining";
    case HealthState::Down: return "down";
  }
  return "?";
}

const RuntimeTraits& runtime_traits(RuntimeKind kind) {
  static const RuntimeTraits kLlama = llama_cpp(), kMlx = mlx_lm(), kOmlx = omlx(), kVllm = vllm(),
                             kRapid = rapid_mlx(), kOllama = ollama(), kLms = lm_studio(), kOpenAI = openai_generic();
  switch (kind) {
    case RuntimeKind::LlamaCpp: return kLlama;
    case RuntimeKind::MlxLm: return kMlx;
    case RuntimeKind::Omlx: return kOmlx;
    case RuntimeKind::Vllm: return kVllm;
    case RuntimeKind::RapidMlx: return kRapid;
    case RuntimeKind::Ollama: return kOllama;
    case RuntimeKind::LmStudio: return kLms;
    case RuntimeKind::OpenAI: return kOpenAI;
  }
  return kOpenAI;
}

// ---------------------------------------------------------------- health

HealthVerdict interpret_health(RuntimeKind kind, int http_status, std::string_view body) {
  const std::string status_text = "HTTP " + std::to_string(http_status);
  if (http_status >= 200 && http_status < 300) {
    json j = parse_object(body);
    switch (kind) {
      case RuntimeKind::Ollama:
        if (text::contains_ci(body, "Ollama is running")) return {HealthState::Up, "Ollama is running"};
        return {HealthState::Down, "GET / answered but not as Ollama: " + text::excerpt(text::trim(body), 60)};
      case RuntimeKind::RapidMlx:
        if (jsonf::get_bool(j, "ready").value_or(true)) return {HealthState::Up, "ready"};
        return {HealthState::Loading, "ready is false"};
      case RuntimeKind::Omlx:
      case RuntimeKind::LlamaCpp:
      case RuntimeKind::MlxLm: {
        std::string s = jsonf::get_string(j, "status").value_or("");
        return {HealthState::Up, s.empty() ? status_text : s};
      }
      default: return {HealthState::Up, status_text};
    }
  }
  ApiError e = parse_api_error(body);
  std::string detail = status_text + (e.message.empty() ? "" : ": " + text::excerpt(e.message, 120));
  if (http_status == 503) {
    if (text::contains_ci(e.message, "loading")) return {HealthState::Loading, detail};
    if (text::contains_ci(body, "draining")) return {HealthState::Draining, detail};
    // Older llama.cpp /health answered 503 "no slot available" when every slot
    // was busy: alive, just full.
    if (kind == RuntimeKind::LlamaCpp && text::contains_ci(e.message, "no slot available"))
      return {HealthState::Up, detail};
    if (kind == RuntimeKind::Vllm) return {HealthState::Down, detail + " (engine dead)"};
  }
  return {HealthState::Down, detail};
}

// ---------------------------------------------------------------- build identity

std::string LlamaBuild::text() const {
  std::string s = "b" + std::to_string(number);
  if (!commit.empty()) s += "-" + commit;
  return s;
}

std::optional<LlamaBuild> parse_llamacpp_build_info(std::string_view s) {
  s = text::trim(s);
  if (s.size() < 2 || s.front() != 'b') return std::nullopt;
  LlamaBuild b;
  const char* first = s.data() + 1;
  auto [end, ec] = std::from_chars(first, s.data() + s.size(), b.number);
  if (ec != std::errc() || end == first) return std::nullopt;
  std::string_view rest(end, static_cast<size_t>(s.data() + s.size() - end));
  if (!rest.empty()) {
    if (rest.front() != '-' || rest.size() == 1) return std::nullopt;
    b.commit = std::string(rest.substr(1));
  }
  return b;
}

Result<LlamaBuild> parse_llama_server_version(std::string_view output) {
  // The line may be preceded by backend registration logs; look for it anywhere.
  size_t at = output.find("version: ");
  if (at == std::string_view::npos) return make_error("no 'version: <N> (<commit>)' line in llama-server --version output");
  std::string_view rest = output.substr(at + 9);
  LlamaBuild b;
  auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), b.number);
  if (ec != std::errc() || end == rest.data()) return make_error("llama-server --version: build number is not a number");
  rest.remove_prefix(static_cast<size_t>(end - rest.data()));
  if (rest.size() >= 2 && rest[0] == ' ' && rest[1] == '(') {
    size_t close = rest.find(')');
    if (close == std::string_view::npos) return make_error("llama-server --version: unterminated commit");
    b.commit = std::string(rest.substr(2, close - 2));
  }
  return b;
}

std::string MlxFingerprint::text() const { return "mlx-lm " + mlx_lm + " mlx " + mlx; }

std::optional<MlxFingerprint> parse_mlx_fingerprint(std::string_view fp) {
  fp = text::trim(fp);
  size_t a = fp.find('-');
  if (a == std::string_view::npos) return std::nullopt;
  size_t b = fp.find('-', a + 1);
  std::string_view v1 = fp.substr(0, a);
  std::string_view v2 = fp.substr(a + 1, b == std::string_view::npos ? std::string_view::npos : b - a - 1);
  auto versionish = [](std::string_view v) { return !v.empty() && v.front() >= '0' && v.front() <= '9'; };
  if (!versionish(v1) || !versionish(v2)) return std::nullopt;
  return MlxFingerprint{std::string(v1), std::string(v2)};
}

Result<std::string> parse_build(RuntimeKind kind, std::string_view body) {
  const RuntimeTraits& t = runtime_traits(kind);
  switch (t.build_source) {
    case BuildSourceKind::LlamaCppProps: {
      auto props = parse_llamacpp_props(body);
      if (!props) return props.error();
      if (props->build_info.empty()) return make_error("/props has no build_info");
      return props->build_info;
    }
    case BuildSourceKind::VersionJson: {
      auto v = jsonf::get_string(parse_object(body), "version");
      if (!v || v->empty()) return make_error("no \"version\" in " + std::string(t.build->path) + " answer");
      return *v;
    }
    case BuildSourceKind::OmlxStatus: {
      auto st = parse_omlx_status(body);
      if (!st) return st.error();
      return st->version;
    }
    case BuildSourceKind::MetricsBuildInfo: {
      PromText prom = parse_prometheus_text(body);
      const PromSample* s = prom.find("rapid_mlx_build_info");
      const std::string* v = s ? s->label("version") : nullptr;
      if (!v || v->empty()) return make_error("no rapid_mlx_build_info{version} in /metrics");
      return *v;
    }
    case BuildSourceKind::LmStudioRuntime: {
      json j = parse_object(body);
      const json* rt = jsonf::member(j, "runtime");
      auto name = rt ? jsonf::get_string(*rt, "name") : std::nullopt;
      auto ver = rt ? jsonf::get_string(*rt, "version") : std::nullopt;
      if (!name || !ver) return make_error("answer has no runtime{name,version}");
      return *name + "@" + *ver;
    }
    case BuildSourceKind::SystemFingerprint: {
      auto fp = jsonf::get_string(parse_object(body), "system_fingerprint");
      if (!fp) return make_error("answer has no system_fingerprint");
      auto m = parse_mlx_fingerprint(*fp);
      if (!m) return make_error("system_fingerprint is not <mlx-lm>-<mlx>-...: " + text::excerpt(*fp, 80));
      return m->text();
    }
    case BuildSourceKind::None: break;
  }
  return make_error(std::string(to_string(kind)) + " reports no build over HTTP; configure a version command");
}

// ---------------------------------------------------------------- server state

Result<LlamaProps> parse_llamacpp_props(std::string_view body) {
  json j = parse_object(body);
  if (j.is_null()) return make_error("/props answer is not a JSON object");
  LlamaProps p;
  p.build_info = jsonf::get_string(j, "build_info").value_or("");
  p.model_alias = jsonf::get_string(j, "model_alias").value_or("");
  p.model_path = jsonf::get_string(j, "model_path").value_or("");
  if (auto n = jsonf::get_int(j, "total_slots")) p.total_slots = static_cast<int>(*n);
  if (const json* d = jsonf::member(j, "default_generation_settings")) p.n_ctx = jsonf::get_int(*d, "n_ctx");
  p.is_sleeping = jsonf::get_bool(j, "is_sleeping");
  return p;
}

Result<std::vector<SlotState>> parse_llamacpp_slots(std::string_view body) {
  json j = jsonf::parse(text::trim(body));
  if (!j.is_array()) return make_error("/slots answer is not a JSON array: " + text::excerpt(text::trim(body), 80));
  std::vector<SlotState> out;
  for (const auto& s : j) {
    if (!s.is_object()) return make_error("/slots element is not an object");
    auto id = jsonf::get_int(s, "id");
    auto busy = jsonf::get_bool(s, "is_processing");
    if (!id || !busy) return make_error("/slots element lacks id or is_processing");
    SlotState st;
    st.id = static_cast<int>(*id);
    st.is_processing = *busy;
    st.n_ctx = jsonf::get_int(s, "n_ctx");
    st.id_task = jsonf::get_int(s, "id_task");
    if (const json* nt = jsonf::member(s, "next_token"); nt && nt->is_array() && !nt->empty())
      st.n_decoded = jsonf::get_int((*nt)[0], "n_decoded");
    out.push_back(st);
  }
  return out;
}

SlotSummary summarize_slots(const std::vector<SlotState>& slots) {
  SlotSummary s;
  s.total = static_cast<int>(slots.size());
  for (const auto& x : slots) s.busy += x.is_processing ? 1 : 0;
  return s;
}

Result<OmlxStatus> parse_omlx_status(std::string_view body) {
  json j = parse_object(body);
  auto version = jsonf::get_string(j, "version");
  if (!version || version->empty()) return make_error("/api/status has no version");
  OmlxStatus s;
  s.version = *version;
  s.active_requests = jsonf::get_int(j, "active_requests");
  s.waiting_requests = jsonf::get_int(j, "waiting_requests");
  s.models_loaded = jsonf::get_int(j, "models_loaded");
  s.models_loading = jsonf::get_int(j, "models_loading");
  if (const json* l = jsonf::member(j, "loaded_models"); l && l->is_array()) {
    s.loaded_models.emplace();
    for (const auto& id : *l)
      if (id.is_string()) s.loaded_models->push_back(id.get<std::string>());
  }
  return s;
}

std::vector<std::string> parse_model_ids(std::string_view body) {
  json j = parse_object(body);
  std::vector<std::string> ids;
  auto add = [&](const std::string& s) {
    if (s.empty()) return;
    for (const auto& x : ids)
      if (x == s) return;
    ids.push_back(s);
  };
  if (const json* data = jsonf::member(j, "data"); data && data->is_array()) {
    for (const auto& m : *data) {
      if (auto id = jsonf::get_string(m, "id")) add(*id);
      if (const json* al = jsonf::member(m, "aliases"); al && al->is_array())
        for (const auto& a : *al)
          if (a.is_string()) add(a.get<std::string>());
    }
  }
  if (const json* models = jsonf::member(j, "models"); models && models->is_array()) {
    for (const auto& m : *models) {
      if (auto n = jsonf::get_string(m, "name")) add(*n);
      if (auto n = jsonf::get_string(m, "model")) add(*n);
    }
  }
  return ids;
}

Verdict check_model_list(const std::vector<std::string>& ids, std::string_view canonical_model) {
  for (const auto& id : ids)
    if (id == canonical_model) return {Outcome::Clean, ""};
  std::string listed;
  for (size_t i = 0; i < ids.size() && i < 5; ++i) listed += (i ? ", " : "") + text::excerpt(ids[i], 60);
  if (ids.size() > 5) listed += ", ...";
  return {Outcome::IdentityMismatch, "canonical id '" + text::excerpt(canonical_model, 100) +
                                         "' is not in the model list" + (ids.empty() ? " (empty)" : ": " + listed)};
}

// ---------------------------------------------------------------- tokenize

std::string tokenize_request_body(RuntimeKind kind, std::string_view model, std::string_view prompt) {
  json body;
  switch (kind) {
    case RuntimeKind::LlamaCpp: body["content"] = std::string(prompt); break;
    case RuntimeKind::Vllm:
      body["model"] = std::string(model);
      body["prompt"] = std::string(prompt);
      break;
    default: return {};
  }
  return jsonf::dump(body);
}

namespace {

// Top-level `count`, `max_model_len` and the length of `tokens` (whatever its
// elements are: ids, or {id, piece} objects with_pieces).
class TokenizeSax final : public nlohmann::json_sax<json> {
 public:
  TokenizeAnswer out;

  bool null() override { return value(); }
  bool boolean(bool) override { return value(); }
  bool number_integer(number_integer_t v) override { return number(v); }
  bool number_unsigned(number_unsigned_t v) override { return number(static_cast<int64_t>(v)); }
  bool number_float(number_float_t, const string_t&) override { return value(); }
  bool string(string_t&) override { return value(); }
  bool binary(binary_t&) override { return value(); }
  bool start_object(std::size_t) override { return open(); }
  bool end_object() override { return close(); }
  bool start_array(std::size_t) override {
    if (depth_ == 1 && key_ == "tokens") {
      in_tokens_ = true;
      out.tokens = 0;
    }
    return open();
  }
  bool end_array() override {
    if (depth_ == 2) in_tokens_ = false;
    return close();
  }
  bool key(string_t& k) override {
    if (depth_ == 1) key_ = k;
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override { return false; }

 private:
  bool open() {
    element();
    ++depth_;
    return true;
  }
  bool close() {
    --depth_;
    return true;
  }
  void element() {
    if (in_tokens_ && depth_ == 2) ++*out.tokens;
  }
  bool value() {
    element();
    return true;
  }
  bool number(int64_t v) {
    element();
    if (depth_ == 1 && key_ == "count") out.count = v;
    if (depth_ == 1 && key_ == "max_model_len") out.max_model_len = v;
    return true;
  }

  int depth_ = 0;
  bool in_tokens_ = false;
  std::string key_;
};

}  // namespace

std::optional<TokenizeAnswer> parse_tokenize_answer(std::string_view body) {
  TokenizeSax sax;
  const std::string_view t = text::trim(body);
  if (t.empty() || t.front() != '{') return std::nullopt;
  if (!json::sax_parse(t.begin(), t.end(), &sax, nlohmann::detail::input_format_t::json, true)) return std::nullopt;
  return sax.out;
}

Result<int64_t> parse_tokenize_count(RuntimeKind kind, std::string_view body) {
  auto a = parse_tokenize_answer(body);
  if (a && kind == RuntimeKind::Vllm && a->count) return *a->count;
  if (a && a->tokens) return *a->tokens;
  return make_error("tokenize answer has neither count nor tokens: " + text::excerpt(text::trim(body), 80));
}

}  // namespace soak::probes
