// LM Studio (closed source: read from its documentation, lmstudio docs
// 1_developer/2_rest/ and 3_cli/): everything soakd knows about it.
#include "probes/json_fields.h"
#include "probes/runtimes/runtime.h"

namespace soak::probes {
namespace {

using jsonf::json;

// /api/v0/chat/completions answers carry runtime{name,version} and
// stats{tokens_per_second,time_to_first_token} (endpoints.mdx); GGUF runs on
// a llama.cpp engine, MLX on mlx-engine, and the runtime name says which.
Result<std::string> read_build(std::string_view body) {
  json j = jsonf::parse_object(body);
  const json* rt = jsonf::member(j, "runtime");
  auto name = rt ? jsonf::get_string(*rt, "name") : std::nullopt;
  auto ver = rt ? jsonf::get_string(*rt, "version") : std::nullopt;
  if (!name || !ver) return make_error("answer has no runtime{name,version}");
  return *name + "@" + *ver;
}

// ---------------------------------------------------------------- identity and the launch fingerprint

// REST v0 (endpoints.mdx) GET /api/v0/models: data[] {id, type, arch,
// quantization, state ("loaded" | "not-loaded"), max_context_length,
// loaded_context_length}. The answer's model is the model key.
Status read_served_v0_models(std::string_view body, std::string_view, ServedState& s) {
  const json j = jsonf::parse_object(body);
  const json* data = jsonf::array_member(j, "data");
  if (!data) return make_error("/api/v0/models has no data[]");
  s.proof = IdentityProof::LoadedState;
  for (const auto& m : *data) {
    if (jsonf::get_string(m, "state").value_or("") != "loaded") continue;
    auto id = jsonf::get_string(m, "id");
    if (!id) continue;
    s.add_loaded(*id);
    if (!s.fingerprint.model.empty()) continue;
    s.fingerprint.model = *id;
    if (auto q = jsonf::get_string(m, "quantization")) s.fingerprint.model += " " + *q;
    s.fingerprint.ctx_per_slot = jsonf::get_int(m, "loaded_context_length");
  }
  return Status::Ok();
}

// REST v1 (list.mdx, LM Studio 0.4+) GET /api/v1/models: models[] {key,
// loaded_instances[] {id, config {context_length, parallel (newer builds;
// absent for embedding models), eval_batch_size, flash_attention, ...}}}. The
// instance serving the config model (its key, or an instance id like
// "key:2") gives the slots; context stays v0's loaded_context_length when
// that was read. An LM Studio before 0.4 has no such route and, as for every
// route it lacks, answers 200 {"error":"Unexpected endpoint or method. (GET
// ...)"}: its fields stay unknown, never a malformed identity answer.
Status read_served_v1_models(std::string_view body, std::string_view config_model, ServedState& s) {
  const json j = jsonf::parse_object(body);
  const json* models = jsonf::array_member(j, "models");
  if (!models) return Status::Ok();
  for (const auto& m : *models) {
    const json* instances = jsonf::array_member(m, "loaded_instances");
    if (!instances) continue;
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

constexpr ServedRoute kServed[] = {{{"GET", "/api/v0/models"}, read_served_v0_models},
                                   {{"GET", "/api/v1/models"}, read_served_v1_models}};

std::string lift_cap(int64_t tokens, std::optional<int64_t>, std::optional<int64_t>) {
  return "LM Studio stopped the answer at " + std::to_string(tokens) +
         " tokens: turn off the model's response length limit in its settings";
}

}  // namespace

extern constinit const Runtime kLmStudioRuntime;
constinit const Runtime kLmStudioRuntime{
    .kind = RuntimeKind::LmStudio,
    .notes = "GGUF runs on a llama.cpp engine, MLX on mlx-engine: the runtime name says which",
    .default_port = 1234,  // 1_developer/2_rest: the server listens on localhost:1234 by default
    // Server health is `lms server status --json` (a command,
    // 3_cli/1_serve/server-status.md); over HTTP the model list answering is
    // the signal.
    .health = {"GET", "/v1/models"},
    .models = {"GET", "/v1/models"},
    .build = HttpRoute{"POST", "/api/v0/chat/completions"},
    .build_ask = BuildAsk::ChatAnswer,
    .read_build = read_build,
    .identity = IdentityEvidence::ResponseModel,
    .served = kServed,
    .lift_cap = lift_cap,
    // Its OpenAI route answers without `stats`; the v0 route takes the same
    // OpenAI request and adds stats{tokens_per_second, time_to_first_token,
    // generation_time, stop_reason}, model_info and runtime: chat probes use it.
    // No logprobs on its chat answers (lmstudio-ai/lms#60): the golden set is compared on text.
    .dialect = {.chat_path = "/api/v0/chat/completions", .logprobs = Logprobs::None},
    // The desktop app runs its engines inside helpers of its bundle.
    .processes = {.app = "LM Studio"},
};

}  // namespace soak::probes
