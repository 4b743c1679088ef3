// Ollama (ollama/ollama, read at server/routes.go, openai/openai.go,
// middleware/openai.go, envconfig/config.go, cmd/cmd.go): everything soakd
// knows about it.
#include "probes/json_fields.h"
#include "probes/runtimes/runtime.h"
#include "probes/text_util.h"

namespace soak::probes {
namespace {

using jsonf::json;

constexpr HttpRoute kVersion{"GET",
                             "/api/version"};  // {"version": "0.12.6"} (docs.ollama.com api-reference/get-version)

// GET / answers 200 "Ollama is running" (ollama/ollama#1378, #2725).
HealthVerdict read_health(int http_status, std::string_view body) {
  if (http_status < 200 || http_status >= 300) return health_not_ok(http_status, body);
  if (text::contains_ci(body, "Ollama is running")) return {HealthState::Up, "Ollama is running"};
  return {HealthState::Down, "GET / answered but not as Ollama: " + text::excerpt(text::trim(body), 60)};
}

Result<std::string> read_build(std::string_view body) { return version_member(body, kVersion.path); }

// ---------------------------------------------------------------- identity and the launch fingerprint

// openai/openai.go: the answer's model is the request's (an echo); the
// loaded weights' digest is in /api/ps. server/routes.go PsHandler ->
// api.ProcessResponse{models: [{name, model, size, digest, details,
// expires_at, size_vram, context_length}]}.
Status read_served_ps(std::string_view body, std::string_view config_model, ServedState& s) {
  const json j = jsonf::parse_object(body);
  const json* models = jsonf::array_member(j, "models");
  if (!models) return make_error("/api/ps has no models[]");
  s.proof = IdentityProof::ServedDigest;
  for (const auto& m : *models) {
    std::string name = jsonf::get_string(m, "name").value_or("");
    std::string model = jsonf::get_string(m, "model").value_or("");
    s.add_loaded(name);
    s.add_loaded(model);
    if (name != config_model && model != config_model) continue;
    s.served_digest = jsonf::get_string(m, "digest").value_or("");
    s.fingerprint.model = s.served_digest;
    s.fingerprint.ctx_per_slot = jsonf::get_int(m, "context_length");
  }
  return Status::Ok();
}

constexpr ServedRoute kServed[] = {{{"GET", "/api/ps"}, read_served_ps}};

std::string lift_cap(int64_t tokens, std::optional<int64_t>, std::optional<int64_t>) {
  return "Ollama stopped the answer at " + std::to_string(tokens) +
         " tokens: the model's num_predict caps it; set PARAMETER num_predict -1 in its Modelfile";
}

// ---------------------------------------------------------------- processes

// cmd/cmd.go: `ollama serve`, and the `ollama runner` it starts per loaded
// model; older releases ran a separate ollama_llama_server binary. `ollama
// run` and the other subcommands are clients.
constexpr std::string_view kPrograms[] = {"ollama serve", "ollama runner", "ollama_llama_server*"};

}  // namespace

extern constinit const Runtime kOllamaRuntime;
constinit const Runtime kOllamaRuntime{
    .kind = RuntimeKind::Ollama,
    .notes = "/api/ps gives size_vram and context_length; OLLAMA_NUM_PARALLEL sets the slots",
    .default_port = 11434,  // envconfig/config.go Host(): OLLAMA_HOST, default 127.0.0.1:11434
    .health = {"GET", "/"},
    .models = {"GET", "/v1/models"},
    .build = kVersion,
    .read_health = read_health,
    .build_ask = BuildAsk::Route,
    .read_build = read_build,
    .identity = IdentityEvidence::EchoesRequest,
    .served = kServed,
    .lift_cap = lift_cap,
    // No tool_choice (docs/DESIGN.md §7.1). openai/openai.go
    // ChatCompletionRequest has reasoning_effort ("none" is thinking off) and
    // neither chat_template_kwargs nor top_k.
    .dialect = {.tool_choice = ToolChoice::Unsupported,
                .thinking_switch = ThinkingSwitch::ReasoningEffort,
                .top_k = TopK::Dropped},
    .processes = {.programs = kPrograms},
};

}  // namespace soak::probes
