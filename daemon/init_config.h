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
};
using InitAnswers = std::map<std::string, InitAnswer>;  // by path

// Every GET path recognition reads for the runtimes of `table`, each once:
// each entry's build route (when it is a GET route), served-state routes,
// health route and model list.
std::vector<std::string> init_paths(probes::RuntimeTable table);

struct Recognition {
  const probes::Runtime* runtime = nullptr;
  std::string how;  // "GET /props names its build b9430-..." and the like
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
// In every case the entry's model list must have answered 2xx; nullopt when
// none did (nothing OpenAI-compatible answers there).
std::optional<Recognition> recognise_runtime(probes::RuntimeTable table, const InitAnswers& answers);

// The model list (`rt.models`) and what the runtime says is loaded (its
// served-state routes), from the same answers.
struct ServedModels {
  std::vector<std::string> listed;
  std::vector<std::string> loaded;
};
ServedModels served_models(const probes::Runtime& rt, const InitAnswers& answers);
// The model a candidate takes: the first loaded one that is listed, else the
// first loaded, else the first listed; empty when there is none.
std::string pick_model(const ServedModels& m);

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
  std::optional<int64_t> server_cap;  // tokens when a request sends no max_tokens; -1 none; nullopt unknown
  std::string launch_summary;         // LaunchFingerprint::summary(); empty: nothing exposed
  std::vector<std::string> warnings;  // anything else it could not learn
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
