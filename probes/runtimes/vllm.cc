// vLLM (vllm-project/vllm, read at vllm/entrypoints/openai/ and serve/:
// health, basic routes, metrics): everything soakd knows about it.
#include "probes/json_fields.h"
#include "probes/prometheus.h"
#include "probes/runtimes/runtime.h"
#include "probes/transport/http_types.h"

namespace soak::probes {
namespace {

using jsonf::json;

constexpr HttpRoute kVersion{"GET", "/version"};  // {"version": "..."}

// vllm/entrypoints/serve/instrumentator/health.py: 200 with an empty body,
// 503 when the engine is dead (EngineDeadError).
HealthVerdict read_health(int http_status, std::string_view body) {
  if (is_2xx(http_status)) return read_health_plain(http_status, body);
  return health_not_ok(http_status, body, [](std::string_view, const std::string& detail) {
    return std::optional<HealthVerdict>({HealthState::Down, detail + " (engine dead)"});
  });
}

Result<std::string> read_build(std::string_view body) { return version_member(body, kVersion.path); }

// ---------------------------------------------------------------- identity and the launch fingerprint

// vllm/entrypoints/openai/protocol.py ModelCard: id (served name), root (the
// model path or repo), max_model_len.
Status read_served_models(std::string_view body, std::string_view, ServedState& s) {
  const json j = jsonf::parse_object(body);
  const json* data = jsonf::array_member(j, "data");
  if (!data) return make_error("/v1/models has no data[]");
  s.proof = IdentityProof::ServedName;
  for (const auto& m : *data) {
    auto id = jsonf::get_string(m, "id");
    if (!id) continue;
    s.add_loaded(*id);
    if (s.fingerprint.model.empty()) {
      s.fingerprint.model = jsonf::get_string(m, "root").value_or(*id);
      s.fingerprint.ctx_per_slot = jsonf::get_int(m, "max_model_len");
    }
  }
  return Status::Ok();
}

// vllm/v1/metrics/loggers.py PrometheusStatLogger.log_metrics_info: the info
// gauge vllm:cache_config_info (value 1, one series per engine), its labels
// CacheConfig.metrics_info(), every field as a string: cache_dtype ("auto" is
// the model's own dtype) is the KV cache type. A build without it: unknown.
Status read_served_metrics(std::string_view body, std::string_view, ServedState& s) {
  PromText prom = parse_prometheus_text(body);
  if (const PromSample* info = prom.find("vllm:cache_config_info"))
    if (const std::string* d = info->label("cache_dtype")) s.fingerprint.kv_cache_type = *d;
  return Status::Ok();
}

constexpr ServedRoute kServed[] = {{{"GET", "/v1/models"}, read_served_models},
                                   {{"GET", "/metrics"}, read_served_metrics}};

// ---------------------------------------------------------------- metrics

// vLLM production metrics (docs.vllm.ai usage/metrics): scheduler state, KV
// cache use (gpu_cache_usage_perc before v1 renamed it), token counters and
// speculative-decoding acceptance (mean acceptance length = 1 + accepted /
// drafts).
constexpr PromSeries kSeries{
    .running = "vllm:num_requests_running",
    .waiting = "vllm:num_requests_waiting",
    .drafted = "vllm:spec_decode_num_draft_tokens_total",
    .accepted = "vllm:spec_decode_num_accepted_tokens_total",
    .drafts = "vllm:spec_decode_num_drafts_total",
};
constexpr std::string_view kKeyMetrics[] = {
    kSeries.running,
    kSeries.waiting,
    "vllm:kv_cache_usage_perc",
    "vllm:gpu_cache_usage_perc",
    "vllm:prompt_tokens_total",
    "vllm:generation_tokens_total",
    kSeries.drafted,
    kSeries.accepted,
    kSeries.drafts,
};

// ---------------------------------------------------------------- server cap

// vllm/entrypoints/openai serving_chat.py: default_max_tokens = max_model_len - prompt,
// lowered by max_new_tokens from the model's generation_config.json (--generation-config auto).
std::string lift_cap(int64_t tokens, std::optional<int64_t>, std::optional<int64_t>) {
  return "vLLM stopped the answer at " + std::to_string(tokens) +
         " tokens: without max_tokens it allows --max-model-len minus the prompt, or the model's "
         "generation_config.json max_new_tokens: raise --max-model-len or start it with --generation-config vllm";
}

// ---------------------------------------------------------------- tokenize

// POST /tokenize {"model", "prompt"} -> {"count", "tokens", "max_model_len"}.
std::string tokenize_body(std::string_view model, std::string_view text) {
  json body;
  body["model"] = std::string(model);
  body["prompt"] = std::string(text);
  return jsonf::dump(body);
}

// ---------------------------------------------------------------- processes

// vllm/entrypoints/cli: `vllm serve`; the API server run as a module
// (python -m vllm.entrypoints.openai.api_server). `vllm bench` and the other
// subcommands are clients.
constexpr std::string_view kPrograms[] = {"vllm serve"};
constexpr std::string_view kModules[] = {"vllm.entrypoints*"};

}  // namespace

extern constinit const Runtime kVllmRuntime;
constinit const Runtime kVllmRuntime{
    .kind = RuntimeKind::Vllm,
    .notes = "spec_decode_* counters carry draft acceptance",
    .default_port = 8000,  // vllm/entrypoints/openai/cli_args.py: port 8000
    .health = {"GET", "/health"},
    .models = {"GET", "/v1/models"},
    .build = kVersion,
    .metrics = HttpRoute{"GET", "/metrics"},
    .tokenize = HttpRoute{"POST", "/tokenize"},
    .read_health = read_health,
    // While the engine starts the API server is not listening yet:
    // connections are refused.
    .refuses_while_starting = "vLLM's startup grace (it listens once its engine is up)",
    .build_ask = BuildAsk::Route,
    .read_build = read_build,
    // `reasoning` (`reasoning_content` in older releases); the answer's model
    // is the served model name.
    .identity = IdentityEvidence::ResponseModel,
    .served = kServed,
    .series = kSeries,
    .key_metrics = kKeyMetrics,
    .lift_cap = lift_cap,
    .tokenize_body = tokenize_body,
    .tokenize_count = count_field_or_tokens,
    .processes = {.programs = kPrograms, .modules = kModules},
};

}  // namespace soak::probes
