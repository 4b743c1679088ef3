// `soakd init`'s pure parts: which runtime answers at a port (from the
// answers to a fixed set of GETs), and the commented starter config written
// from what the survey found (docs/DESIGN.md §4.12). The I/O — ports, HTTP,
// the build read — is daemon/init_cli.cc.
//
// Nothing here names a runtime: recognition reads each entry of the table it
// is given (probes/runtimes/), its build route, its served-state routes, its
// health route and its model list, with the entry's own readers.
//
// Pure; thread-agnostic; nothing throws.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/types.h"
#include "probes/probe_types.h"

namespace soak {

// At most this many ports are asked (the runtimes' default ports, the ports
// of the engines found, or --ports), each with at most one GET per path of
// init_paths() and one build read.
inline constexpr size_t kMaxInitPorts = 16;
inline constexpr int64_t kInitConnectTimeoutMs = 500;
inline constexpr int64_t kInitGetTimeoutMs = 3'000;
// The build read of a runtime that names its build only in a chat answer
// (a short one): a model that must load first takes longer than a GET.
inline constexpr int64_t kInitBuildTimeoutMs = 30'000;
inline constexpr int64_t kInitMaxBodyBytes = 1 << 20;

// One GET's answer. status 0: no HTTP answer at all (`error` says why).
struct InitAnswer {
  int status = 0;
  std::string body;
  std::string error;
  bool connected = false;  // status 0: a connection was made before it ended (the answer was slow)
};
using InitAnswers = std::map<std::string, InitAnswer>;  // by path

// Every GET path recognition reads for the runtimes of `table`, each once:
// each entry's build route (when it is a GET route), served-state routes,
// health route and model list.
std::vector<std::string> init_paths(probes::RuntimeTable table);

struct Recognition {
  const probes::Runtime* runtime = nullptr;
  std::string how;          // "GET /props names its build b9430-..." and the like
  bool key_needed = false;  // its model list answered 401/403: it wants an API key
};

// Which runtime of `table` gave `answers`, strongest evidence first:
//  1. an entry's build route (a GET) answered 2xx and its reader found a build
//     in it (the first such entry in table order);
//  2. else a served-state route of an entry (not its model list) answered 2xx
//     and its reader took it, and none of the entry's own routes answered
//     otherwise (a 2xx its reader refused, a 404: another server; a 401 or
//     403 says nothing);
//  3. else an entry's health route (not its model list) answered 2xx and read
//     as up, and none of its own routes answered otherwise: the weakest,
//     said so in `how`;
//  4. else the entry without a default port or build (the plain
//     OpenAI-compatible server) when its model list answered 2xx.
// In every case the entry's model list must have answered 2xx, or 401/403
// (`key_needed`: it wants an API key; step 4 then says so); nullopt when none
// did (nothing OpenAI-compatible answers there).
std::optional<Recognition> recognise_runtime(probes::RuntimeTable table, const InitAnswers& answers);

// A runtime still loading its model (llama.cpp answers 503 "Loading model" on
// every route meanwhile): the note for the port, "still loading (GET /health:
// HTTP 503: Loading model); run soakd init again when it is ready"; nullopt
// when no answer says so.
std::optional<std::string> loading_note(const InitAnswers& answers);
// The note for a port where no answer has a status: "nothing answered
// (connect_refused)", or, when a connection was made, that the answers took
// longer than the limit.
std::string unanswered_note(const InitAnswers& answers);

// The model list (`rt.models`) and what the runtime says is loaded (its
// served-state routes; for a runtime that tells what it serves only in its
// argv, `rt.served_from_argv` over `argv`, the process's, empty: not known).
struct ServedModels {
  std::vector<std::string> listed;
  std::vector<std::string> loaded;
  // The runtime serves whatever a request names, and its model list is not
  // what it serves (MLX-LM lists the Hugging Face cache): only a loaded model
  // may be picked, and a request naming another would load it.
  bool only_loaded = false;
  std::string unproven_reason;  // only_loaded with nothing loaded: why ("has no --model", "argv not read")
};
ServedModels served_models(const probes::Runtime& rt, const InitAnswers& answers,
                           const std::vector<std::string>& argv = {});
// The model a candidate takes: the first loaded one that is listed, else the
// first loaded, else (unless only_loaded) the first listed; empty when there
// is none.
std::string pick_model(const ServedModels& m);
// Whether init may ask `rt` for its build with `model`: a build told only in
// a chat answer is asked with a model the runtime says is loaded, never one
// the chat would make it load.
bool may_read_build(const probes::Runtime& rt, const ServedModels& m, const std::string& model);
// The runtime reads flags from its environment (rt.argv_from_env), which init
// does not read, and `argv` (empty: not known) leaves its cap on answers at
// the runtime's default: the cap may come from the environment.
bool cap_may_come_from_env(const probes::Runtime& rt, const std::vector<std::string>& argv);
// A build string that carries no version (llama.cpp built outside a git
// checkout: "b0-unknown"): every rebuild reads the same.
bool build_without_version(std::string_view build);

// One runtime the survey found, and what it said.
struct FoundRuntime {
  RuntimeKind kind = RuntimeKind::OpenAI;
  std::string base_url;  // http://127.0.0.1:PORT
  uint16_t port = 0;
  std::string how;  // how it was recognised (Recognition::how, or the process)
  ServedModels models;
  std::string model;  // pick_model()
  std::string build;  // empty: not read (build_error says why)
  std::string build_error;
  std::optional<int64_t> slots;
  std::optional<int64_t> server_cap;    // tokens when a request sends no max_tokens; -1 none; nullopt unknown
  bool server_cap_env_unread = false;   // cap_may_come_from_env(): a -1 is its command line's, not evidence
  std::optional<int64_t> ctx_per_slot;  // tokens, from the launch fingerprint
  bool key_needed = false;              // its model list wants an API key (Recognition::key_needed)
  std::string launch_summary;           // LaunchFingerprint::summary(); empty: nothing exposed
  std::vector<std::string> warnings;    // anything else it could not learn
};

struct InitSurvey {
  std::vector<FoundRuntime> found;
  // What was asked and not taken ("port 8000: nothing answered"), in order.
  std::vector<std::string> notes;
  std::string looked_at;  // "ports 8080, 11434 (--ports)"
  std::string store_path;
  std::string log_path;
};

// The starter config: JSON with // comments (core/config.h), one enabled
// candidate per runtime found, its facts and warnings as comments above it.
// With nothing found, one example per runtime of `table` that has a default
// port, each `"enabled": false` (a config must list a candidate; a disabled
// one is never scheduled), so that the file passes `soakd check-config` as
// written. Names are "<runtime>-<port>", made unique.
std::string render_init_config(const InitSurvey& survey, probes::RuntimeTable table);

}  // namespace soak
