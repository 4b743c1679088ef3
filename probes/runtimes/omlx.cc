// oMLX (jundot/omlx, read at v0.3.9.dev1: omlx/server.py, engine_pool.py,
// exceptions.py, settings.py): everything soakd knows about it.
#include "probes/json_fields.h"
#include "probes/runtimes/runtime.h"

namespace soak::probes {
namespace {

using jsonf::json;

// SamplingDefaults.max_tokens: what applies when a request sends none, unless
// the model's settings change it.
constexpr int kDefaultMaxTokens = 32768;

// ---------------------------------------------------------------- status

// omlx/server.py server_status() GET /api/status {"status":"ok", "version",
// "models_loaded", "models_loading", "active_requests", "waiting_requests",
// "loaded_models"} (needs the API key when one is set). loaded_models is the
// engine pool's get_loaded_model_ids(): real model ids, not the aliases
// /v1/models shows; nullopt for a build without the key.
Result<ServerStatus> read_status(std::string_view body) {
  json j = jsonf::parse_object(body);
  auto version = jsonf::get_string(j, "version");
  if (!version || version->empty()) return make_error("/api/status has no version");
  ServerStatus s;
  s.version = *version;
  s.active_requests = jsonf::get_int(j, "active_requests");
  s.waiting_requests = jsonf::get_int(j, "waiting_requests");
  s.models_loaded = jsonf::get_int(j, "models_loaded");
  s.models_loading = jsonf::get_int(j, "models_loading");
  if (const json* l = jsonf::array_member(j, "loaded_models")) {
    s.loaded_models.emplace();
    for (const auto& id : *l)
      if (id.is_string()) s.loaded_models->push_back(id.get<std::string>());
  }
  return s;
}

Result<std::string> read_build(std::string_view body) {
  auto st = read_status(body);
  if (!st) return st.error();
  return st->version;
}

// ---------------------------------------------------------------- identity

// Its /v1/models lists every discovered model, loaded or not, so it proves
// nothing; /api/status loaded_models does. A build without loaded_models
// leaves identity an echo.
Status read_served_status(std::string_view body, std::string_view config_model, ServedState& s) {
  auto st = read_status(body);
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
    s.add_loaded(id);
    if (id == config_model) s.fingerprint.model = id;
  }
  return Status::Ok();
}

constexpr ServedRoute kServed[] = {{{"GET", "/api/status"}, read_served_status}};

// ---------------------------------------------------------------- server cap

std::string lift_cap(int64_t tokens, std::optional<int64_t>, std::optional<int64_t>) {
  return "oMLX caps answers at its max_tokens setting (" + std::to_string(kDefaultMaxTokens) +
         " unless changed; this one stopped at " + std::to_string(tokens) +
         "): raise max_tokens in oMLX's model settings";
}

// ---------------------------------------------------------------- processes

// The `omlx` command (omlx/cli.py: omlx serve), or Python running the
// package or one of its modules.
constexpr std::string_view kPrograms[] = {"omlx"};
constexpr std::string_view kModules[] = {"omlx", "omlx.*"};

}  // namespace

extern constinit const Runtime kOmlxRuntime;
constinit const Runtime kOmlxRuntime{
    .kind = RuntimeKind::Omlx,
    .notes = "non-stream answers are preceded by keep-alive spaces; 409 while a model loads; errors then [DONE]",
    .default_port = 8000,  // settings.py ServerSettings: port 8000
    // /health {"status":"healthy", default_model, engine_pool, mcp}; requests
    // get 409 "Model '...' is already being loaded" while a model loads.
    .health = {"GET", "/health"},
    .models = {"GET", "/v1/models"},  // ids are the model alias when one is set
    .build = HttpRoute{"GET", "/api/status"},
    .status = HttpRoute{"GET", "/api/status"},  // active_requests, waiting_requests, loaded_models
    .read_health = read_health_status_member,
    .build_ask = BuildAsk::Route,
    .read_build = read_build,
    .read_status = read_status,
    // Chunks carry model=request.model. Usage chunk only when requested; it
    // adds time_to_first_token (s), prompt_tokens_per_second (cached tokens
    // included) and generation_tokens_per_second. Keep-alive chunks
    // ("model":"keepalive", empty content) at once and every 10 s by default;
    // `: keep-alive` comments only in the legacy mode (docs/DESIGN.md §7.3).
    .identity = IdentityEvidence::EchoesRequest,
    .served = kServed,
    .default_max_tokens = kDefaultMaxTokens,
    .lift_cap = lift_cap,
    // No logprobs on its chat answers (omlx#1549): the golden set is compared on text.
    .dialect = {.logprobs = Logprobs::None},
    .processes = {.programs = kPrograms, .modules = kModules},
};

}  // namespace soak::probes
