// MLX-LM's mlx_lm.server (ml-explore/mlx-lm, read at v0.32.0
// mlx_lm/server.py): everything soakd knows about it.
#include "probes/json_fields.h"
#include "probes/runtimes/argv.h"
#include "probes/runtimes/runtime.h"
#include "probes/server_cap.h"
#include "probes/text_util.h"

namespace soak::probes {
namespace {

using jsonf::json;

// mlx_lm/server.py main(): --max-tokens defaults to 512, and it applies to
// every request that sends no max_tokens of its own.
constexpr int kDefaultMaxTokens = 512;

// ---------------------------------------------------------------- build identity

// No version route; get_system_fingerprint() = "<mlx-lm>-<mlx>-<platform>-<gpu arch>",
// in every answer's system_fingerprint.
Result<std::string> read_build(std::string_view body) {
  auto fp = jsonf::get_string(jsonf::parse_object(body), "system_fingerprint");
  if (!fp) return make_error("answer has no system_fingerprint");
  const std::string_view f = text::trim(*fp);
  const size_t a = f.find('-');
  const size_t b = a == std::string_view::npos ? a : f.find('-', a + 1);
  const std::string_view mlx_lm = f.substr(0, a);
  const std::string_view mlx =
      a == std::string_view::npos ? std::string_view() : f.substr(a + 1, b == std::string_view::npos ? b : b - a - 1);
  auto versionish = [](std::string_view v) { return !v.empty() && v.front() >= '0' && v.front() <= '9'; };
  if (a == std::string_view::npos || !versionish(mlx_lm) || !versionish(mlx))
    return make_error("system_fingerprint is not <mlx-lm>-<mlx>-...: " + text::excerpt(*fp, 80));
  return "mlx-lm " + std::string(mlx_lm) + " mlx " + std::string(mlx);
}

// ---------------------------------------------------------------- identity and the launch fingerprint

// "model": self.requested_model, and the request picks the model: only
// "default_model" (or the --model id) is what was started, any other cached
// id is loaded from the Hugging Face cache (handle_models_request lists the
// cache, not what is loaded). So what it serves is its own argv: main()
// --model, --draft-model, --max-tokens (default 512).
ServedState served_from_argv(const std::vector<std::string>& args) {
  ServedState s;
  LaunchFingerprint& f = s.fingerprint;
  f.speculative = false;
  for (size_t i = 0; i < args.size(); ++i) {
    if (auto v = argv::flag_value(args, i, "--model")) f.model = *v;
    if (auto v = argv::flag_value(args, i, "--draft-model")) f.speculative = !v->empty();
    if (auto v = argv::flag_value(args, i, "--max-tokens")) f.max_tokens_default = argv::to_int(*v);
  }
  if (!f.max_tokens_default) f.max_tokens_default = kDefaultMaxTokens;
  f.source = "argv";
  if (f.model.empty()) {
    s.unproven_reason = "has no --model";
    return s;
  }
  s.proof = IdentityProof::ProcessArgv;
  s.add_loaded(f.model);
  return s;
}

// ---------------------------------------------------------------- server cap

// max_tokens = the request's, else cli_args.max_tokens (--max-tokens, default
// 512): the default, or a value it was started with.
std::string lift_cap(int64_t tokens, std::optional<int64_t>, std::optional<int64_t>) {
  const std::string suggested = std::to_string(kSuggestedServerMaxTokens);
  if (tokens == kDefaultMaxTokens)
    return "MLX-LM caps answers at " + std::to_string(tokens) + " tokens: start mlx_lm.server with --max-tokens " +
           suggested;
  return "mlx_lm.server was started with --max-tokens " + std::to_string(tokens) + ": start it with --max-tokens " +
         (tokens < kSuggestedServerMaxTokens ? suggested : "above " + std::to_string(tokens));
}

// ---------------------------------------------------------------- processes and launches

// setup.py console_scripts "mlx_lm.server = mlx_lm.server:main";
// mlx_lm/__main__.py runs `mlx_lm <subcommand>`, "server" among them.
constexpr std::string_view kNames[] = {"mlx_lm.server", "mlx_lm server"};

std::vector<std::string> launch_warnings(const LaunchSpec& s) {
  const auto args = literal_argv(s);
  if (args.empty() || argv::has_option(args, {"--max-tokens"})) return {};
  return {"MLX-LM caps every answer at " + std::to_string(kDefaultMaxTokens) +
          " tokens unless started with --max-tokens; long-context and agent probes would end as truncated (add e.g. "
          "\"--max-tokens\", \"32768\")"};
}

}  // namespace

extern constinit const Runtime kMlxLmRuntime;
constinit const Runtime kMlxLmRuntime{
    .kind = RuntimeKind::MlxLm,
    .notes = "no metrics, slots or tokenize; build from system_fingerprint or a configured command",
    .default_port = 8080,  // main(): --port, default 8080
    // handle_health_check: always 200 {"status": "ok"}; there is no loading
    // state to see.
    .health = {"GET", "/health"},
    .models = {"GET", "/v1/models"},
    .read_health = read_health_status_member,
    .build_ask = BuildAsk::ChatAnswer,
    .read_build = read_build,
    // Reasoning in choice["reasoning"]; usage only with stream_options.include_usage.
    .identity = IdentityEvidence::EchoesRequest,
    .served_from_argv = served_from_argv,
    .default_max_tokens = kDefaultMaxTokens,
    .lift_cap = lift_cap,
    // handle_completion keepalive_callback: `: keepalive <processed>/<total>`
    // per prefill step.
    .dialect = {.prefill_reports = PrefillReports::KeepaliveComments},
    .processes = {.programs = kNames, .modules = kNames},
    .launch_warnings = launch_warnings,
};

}  // namespace soak::probes
