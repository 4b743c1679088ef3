// What soakd knows about one local LLM runtime (docs/DESIGN.md §7), as one
// constant entry: its routes, how to read its health, build and served-state
// answers, its identity proof and launch fingerprint, its Prometheus series,
// its server-side token cap and how to lift it, its tokenize request, its
// request dialect, how its processes look, what its launch argv needs, its
// default port and its notes. Each runtime's entry lives in its own file of
// this folder (llama_cpp.cc, mlx_lm.cc, ...), beside the upstream source line
// each fact comes from, and probes/runtimes/catalog.h is the one table of
// them; everything else asks a candidate's entry and never names a runtime.
//
// Adding an OpenAI-compatible runtime: one file here defining its entry, and
// one line in the table (catalog.cc). A config names a runtime by its
// RuntimeKind, so production also needs the kind and its name in core/types
// (kRuntimes); tests/integration/probe_new_runtime_test.cc shows the rest is
// the entry alone.
//
// Entries are constants with static storage, built at compile time
// (constinit), read from any thread, and live for the whole program. The
// functions they point to are pure and never throw: a body that is not the
// documented shape is an Error or an absent value. A null function pointer
// means the runtime has no such thing, as the comment beside it says.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/config.h"
#include "core/launch.h"
#include "core/result.h"
#include "core/types.h"
#include "probes/openai_chat.h"
#include "probes/probe_types.h"
#include "probes/requests.h"
#include "probes/runtime_metrics.h"
#include "probes/served_state.h"
#include "probes/server_cap.h"
#include "probes/tokenize.h"

namespace soak::probes {

// ---------------------------------------------------------------- health

enum class HealthState {
  Up,        // serving
  Loading,   // alive, model not ready yet (llama.cpp 503 "Loading model", Rapid-MLX /healthz ready false)
  Draining,  // alive, refusing new work (Rapid-MLX /healthz 503 "draining")
  Down,      // anything else: dead engine, unexpected status
};
std::string_view to_string(HealthState s);

struct HealthVerdict {
  HealthState state = HealthState::Down;
  std::string detail;
};

// The plain reading of a health answer: any 2xx is up ("HTTP 200"); anything
// else is read by health_not_ok().
HealthVerdict read_health_plain(int http_status, std::string_view body);
// The same, with the answer's own `status` member as the detail of a 2xx
// ({"status":"ok"}, {"status":"healthy"}).
HealthVerdict read_health_status_member(int http_status, std::string_view body);
// A health answer that is not 2xx: a 503 whose error says "loading" is
// Loading, one whose body says "draining" is Draining; then `on_503`, when
// given, reads a 503 in the runtime's own words (nullopt: not its case); the
// rest is Down. The detail is "HTTP <status>: <the error's message>".
using Health503Reader = std::optional<HealthVerdict> (*)(std::string_view message, const std::string& detail);
HealthVerdict health_not_ok(int http_status, std::string_view body, Health503Reader on_503 = nullptr);

// ---------------------------------------------------------------- build identity

// How a runtime's build identity is asked for over HTTP.
enum class BuildAsk {
  None,        // nothing over HTTP: a configured command or a fixed string
  Route,       // the answer of Runtime::build names it
  ChatAnswer,  // only a chat answer names it: a short one is asked for at Runtime::build (else the chat route)
};

// The first non-empty line of a version command's output, trimmed.
Result<std::string> build_from_first_line(std::string_view output);
// The `version` member of a JSON answer of `route` (vLLM /version, Ollama /api/version).
Result<std::string> version_member(std::string_view body, std::string_view route);

// ---------------------------------------------------------------- server state

// Server properties (llama.cpp /props).
struct ServerProps {
  std::string build_info;
  std::string model_alias;
  std::string model_path;
  std::optional<int> total_slots;
  std::optional<int64_t> n_ctx;  // per slot
  std::optional<bool> is_sleeping;
  // The special tokens the model's chat template names, and its BOS / EOS:
  // none of them belongs in an answer's content (probes/answer_check.h).
  std::vector<std::string> template_tokens;
};

// The special tokens a chat template's text names: every `<|name|>` (and
// DeepSeek's full-width `<｜name｜>`) it holds, in order of first appearance,
// each once, at most kMaxTemplateTokens. The name is 1 to 48 bytes with no
// blank, quote, bracket, brace, bar, plus or backslash in it, so Jinja that
// builds a token from parts ('<|' + role + '|>') gives none. Tag-like text
// such as <tool_call> or <tools> is left alone: a template writes it as
// ordinary text too.
std::vector<std::string> special_tokens_in_template(std::string_view template_text);
// Whether `token` (a BOS / EOS as a runtime spells it) looks like a special
// token worth looking for in answers: 3 to 64 bytes, no blank, `<...>` or `[...]`.
bool looks_special(std::string_view token);
inline constexpr size_t kMaxTemplateTokens = 64;

// Per-slot state (llama.cpp /slots).
struct SlotState {
  int id = 0;
  bool is_processing = false;
  std::optional<int64_t> n_ctx;
  std::optional<int64_t> id_task;
  std::optional<int64_t> n_decoded;  // of the slot's current or last task (stale after it ends)
};

struct SlotSummary {
  int total = 0;
  int busy = 0;
  bool all_idle() const { return busy == 0; }
};
SlotSummary summarize_slots(const std::vector<SlotState>& slots);

// A JSON status route the scrape reads (oMLX /api/status).
struct ServerStatus {
  std::string version;
  std::optional<int64_t> active_requests, waiting_requests, models_loaded, models_loading;
  // The ids of the loaded models; nullopt: a build that does not say.
  std::optional<std::vector<std::string>> loaded_models;
};

// One route of what a runtime says it serves, and how its answer is read
// into a ServedState (`config_model` picks the entry of the candidate's model).
struct ServedRoute {
  HttpRoute route{};
  Status (*read)(std::string_view body, std::string_view config_model, ServedState& into) = nullptr;
};

// Folds the answer of the served-state route at `path` into `into` and notes
// the route in the fingerprint's source. An error when the runtime has no
// such route, or the answer is not its documented shape.
Status read_served_answer(const Runtime& rt, std::string_view path, std::string_view body,
                          std::string_view config_model, ServedState& into);

// ---------------------------------------------------------------- processes

// How a runtime's server processes show in a process list, for soakd to find
// the one serving a candidate and to flag a second engine beside it. Each
// name may end in '*' (a prefix) and may be followed by a space and the
// subcommand that must come first after it ("vllm serve"). Matched by
// platform/runtime_processes.h, which the composition root hands these
// through (daemon/wiring.h runtime_signatures()).
struct ProcessNames {
  std::span<const std::string_view> programs{};  // argv[0], the executable, or a Python script
  std::span<const std::string_view> modules{};   // Python run as `-m <module>`
  std::string_view app{};                        // a desktop app: its process name, or any process inside "/<app>.app/"
};

// ---------------------------------------------------------------- the entry

std::vector<std::string> no_launch_warnings(const LaunchSpec& launch);

struct Runtime {
  RuntimeKind kind = RuntimeKind::OpenAI;
  std::string_view notes{};                // one line for the README table and `soakd probe`
  std::optional<uint16_t> default_port{};  // where it listens unless told otherwise

  // Routes. Absent: the runtime has none (or soakd does not use it).
  HttpRoute health = {"GET", "/v1/models"};
  HttpRoute models = {"GET", "/v1/models"};  // identity: the model list
  std::optional<HttpRoute> build{};
  std::optional<HttpRoute> props{};     // server properties: slots, per-slot context
  std::optional<HttpRoute> slots{};     // per-slot state
  std::optional<HttpRoute> metrics{};   // Prometheus text
  std::optional<HttpRoute> status{};    // a JSON status the scrape reads
  std::optional<HttpRoute> tokenize{};  // exact prompt sizing; absent: the fixture's estimate

  // Health: its answer at `health`. Connection failures never get here (the
  // transport reports them); every status that did arrive is judged.
  HealthVerdict (*read_health)(int http_status, std::string_view body) = read_health_plain;
  // Non-empty: the runtime refuses connections while it starts, and a refusal
  // streak shorter than EngineOptions::startup_grace_ms is loading; the
  // words end the row's detail ("connection refused 12 s into <these>").
  std::string_view refuses_while_starting{};

  // Build identity.
  BuildAsk build_ask = BuildAsk::None;
  Result<std::string> (*read_build)(std::string_view body) = nullptr;  // the answer at `build`
  // The build in a version command's output; nullptr, or an error: its first line.
  Result<std::string> (*read_version_output)(std::string_view output) = nullptr;
  // The model the build answer names, when it names one.
  std::optional<std::string> (*build_model)(std::string_view body) = nullptr;

  // Readers of `props`, `slots` and `status` (each set where its route is).
  Result<ServerProps> (*read_props)(std::string_view body) = nullptr;
  Result<std::vector<SlotState>> (*read_slots)(std::string_view body) = nullptr;
  Result<ServerStatus> (*read_status)(std::string_view body) = nullptr;

  // Identity (docs/DESIGN.md §7.2): what an answer's `model` says, then what
  // proves it: the served-state routes in order (the first is the evidence),
  // or the runtime's own argv, judged before any request could make it load
  // other weights. `unproven_reason` of an argv without the model follows
  // "its launch argv" / "its process's argv" in the row's detail.
  IdentityEvidence identity = IdentityEvidence::ResponseModel;
  std::span<const ServedRoute> served{};
  ServedState (*served_from_argv)(const std::vector<std::string>& argv) = nullptr;
  // What only the argv says, folded into the launch fingerprint (an empty
  // argv, not readable, adds nothing).
  void (*fingerprint_from_argv)(const std::vector<std::string>& argv, LaunchFingerprint& into) = nullptr;

  // Prometheus: the series soakd reads, and the ones the scrape stores (full
  // names, in the order its row lists them).
  PromSeries series{};
  std::span<const std::string_view> key_metrics{};

  // Server-side cap when a request omits max_tokens (nullopt: none by
  // default, or not known), and how to lift one that cut an answer
  // (probes/server_cap.h; nullptr: soakd's generic advice).
  std::optional<int> default_max_tokens{};
  LiftCap lift_cap = nullptr;

  // Tokenize: the request body for `tokenize`, and the count in its answer.
  std::string (*tokenize_body)(std::string_view model, std::string_view text) = nullptr;
  Result<int64_t> (*tokenize_count)(std::string_view body) = count_of_tokens;

  // Reasoning (`reasoning` or `reasoning_content`), usage (asked for with
  // stream_options.include_usage on every runtime) and keep-alives (comments
  // or oMLX's "model":"keepalive" chunks) are read the same way for every
  // runtime (probes/openai_chat.h), so they are not in the dialect.
  RequestDialect dialect{};

  // Its server processes, and the warnings about a launch block whose argv
  // lacks a flag a soak needs (soakd check-config, daemon/launch_check.cc).
  ProcessNames processes{};
  std::vector<std::string> (*launch_warnings)(const LaunchSpec& launch) = no_launch_warnings;
  // The flags a launch block's environment sets for the runtime, as argv
  // (llama-server's LLAMA_ARG_*): read before the argv's own, which win
  // (probes/served_state.h launch_argv_of). nullptr: the runtime reads none.
  std::vector<std::string> (*argv_from_env)(const LaunchSpec& launch) = nullptr;
};

// The build string in the answer of `rt.build` (for BuildAsk::ChatAnswer:
// any chat completion answer body); an error naming the runtime when it
// reports none over HTTP.
Result<std::string> parse_build(const Runtime& rt, std::string_view body);

// The runtime's served state from the argv it runs with (rt.served_from_argv):
// the launch argv when soakd launched it, else the discovered process's
// (`reader`). When the argv cannot be read the state is echo only, with why.
ServedState served_by_argv(const Runtime& rt, const CandidateConfig& c, const RuntimeArgvReader& reader);

}  // namespace soak::probes
