// Rapid-MLX (raullenchai/Rapid-MLX, package vllm_mlx: server.py,
// routes/health.py, routes/metrics.py, pyproject.toml): everything soakd
// knows about it.
#include "probes/json_fields.h"
#include "probes/prometheus.h"
#include "probes/runtimes/runtime.h"

namespace soak::probes {
namespace {

// vllm_mlx/routes/metrics.py: rapid_mlx_build_info{version,model} 1, always;
// rapid_mlx_kv_cache_dtype{dtype} 1 for the active dtype; the running batch
// and the waiting queue are gauges; spec_decode_attempts / accepts count
// chain MTP (one drafted token per attempt); requests_cancelled_via_disconnect
// counts the aborts it did for a client that left.
constexpr std::string_view kBuildInfo = "rapid_mlx_build_info";
constexpr PromSeries kSeries{
    .running = "rapid_mlx_requests_running",
    .waiting = "rapid_mlx_requests_waiting",
    .drafted = "rapid_mlx_spec_decode_attempts_total",
    .accepted = "rapid_mlx_spec_decode_accepts_total",
    .drafts = "rapid_mlx_spec_decode_attempts_total",
    .client_cancels = "rapid_mlx_requests_cancelled_via_disconnect_total",
};
constexpr std::string_view kKeyMetrics[] = {kBuildInfo, kSeries.running, kSeries.waiting};

// vllm_mlx/routes/health.py: /health/ready answers 503 {"detail":"model
// loading"} both while loading and after SIGTERM (ready is False then too);
// /healthz tells them apart: 200 {"ready": false} while loading, 503
// {"status": "draining"} while draining (read by health_not_ok).
HealthVerdict read_health(int http_status, std::string_view body) {
  if (http_status < 200 || http_status >= 300) return health_not_ok(http_status, body);
  if (jsonf::get_bool(jsonf::parse_object(body), "ready").value_or(true)) return {HealthState::Up, "ready"};
  return {HealthState::Loading, "ready is false"};
}

Result<std::string> read_build(std::string_view body) {
  PromText prom = parse_prometheus_text(body);
  const PromSample* s = prom.find(kBuildInfo);
  const std::string* v = s ? s->label("version") : nullptr;
  if (!v || v->empty()) return make_error("no " + std::string(kBuildInfo) + "{version} in /metrics");
  return *v;
}

// ---------------------------------------------------------------- identity and the launch fingerprint

// The answer echoes the request's model (404 for unknown names:
// service/helpers.py _resolve_model_name); build_info's model says what is
// loaded.
Status read_served_metrics(std::string_view body, std::string_view, ServedState& s) {
  PromText prom = parse_prometheus_text(body);
  const PromSample* info = prom.find(kBuildInfo);
  if (!info) return make_error("/metrics has no " + std::string(kBuildInfo));
  s.proof = IdentityProof::LoadedState;
  if (const std::string* m = info->label("model")) {
    s.add_loaded(*m);
    s.fingerprint.model = *m;
  }
  for (const auto& x : prom.samples)
    if (x.name == "rapid_mlx_kv_cache_dtype" && x.value == 1)
      if (const std::string* d = x.label("dtype")) s.fingerprint.kv_cache_type = *d;
  if (auto v = prom.value(kSeries.running)) s.running = static_cast<int64_t>(*v);
  if (auto v = prom.value(kSeries.waiting)) s.waiting = static_cast<int64_t>(*v);
  return Status::Ok();
}

constexpr ServedRoute kServed[] = {{{"GET", "/metrics"}, read_served_metrics}};

std::string lift_cap(int64_t tokens, std::optional<int64_t>, std::optional<int64_t>) {
  return "Rapid-MLX stopped the answer at " + std::to_string(tokens) +
         " tokens with its server default: start it with a larger --max-tokens";
}

// ---------------------------------------------------------------- processes

// pyproject.toml [project.scripts]: rapid-mlx, and vllm-mlx from before the
// rename; Python running the vllm_mlx package (or a rapid_mlx one).
constexpr std::string_view kPrograms[] = {"rapid-mlx", "vllm-mlx"};
constexpr std::string_view kModules[] = {"vllm_mlx*", "rapid_mlx*"};

}  // namespace

extern constinit const Runtime kRapidMlxRuntime;
constinit const Runtime kRapidMlxRuntime{
    .kind = RuntimeKind::RapidMlx,
    .notes = "poll /healthz (loading vs draining), not /v1/models (which answers as soon as the app binds)",
    .default_port = 8000,  // vllm_mlx/cli.py serve: --port, default 8000
    .health = {"GET", "/healthz"},
    .models = {"GET", "/v1/models"},
    .build = HttpRoute{"GET", "/metrics"},
    .metrics = HttpRoute{"GET", "/metrics"},
    .read_health = read_health,
    .build_ask = BuildAsk::Route,
    .read_build = read_build,
    // reasoning_content (vllm_mlx/api/models.py); `: keepalive` every 20 s.
    .identity = IdentityEvidence::EchoesRequest,
    .served = kServed,
    .series = kSeries,
    .key_metrics = kKeyMetrics,
    .lift_cap = lift_cap,
    .processes = {.programs = kPrograms, .modules = kModules},
};

}  // namespace soak::probes
