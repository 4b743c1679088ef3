// The types the probe engine and its steps share: the engine's options and
// constants, how a run is asked for (RunSpec) and how its rows leave (RowSink),
// what a build read answers (BuildIdentity), and the seams the composition
// root fills (EnvReader, RuntimeArgvReader). Here rather than in
// probes/engine.h so that the steps, the exchange and the served-state
// readers, which the engine includes, never include the engine back.
//
// Plain data and std::function seams; thread-agnostic.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/config.h"
#include "core/types.h"
#include "probes/prompts.h"

namespace soak::probes {

// A route of a runtime's HTTP API.
struct HttpRoute {
  std::string_view method;  // "GET" | "POST"
  std::string_view path;    // appended to the candidate's base URL
};

// What soakd knows about one runtime (probes/runtimes/runtime.h) and a table
// of them (probes/runtimes/catalog.h): entries are constants that live for
// the whole program.
struct Runtime;
using RuntimeTable = std::span<const Runtime* const>;

inline constexpr int kDefaultCancelCutTokens = 4;           // output events before the cancel probe cuts
inline constexpr int64_t kDefaultSlotFreeBoundMs = 10'000;  // a cut request's slot must be free by then
inline constexpr int64_t kDefaultSlotPollMs = 100;          // /slots polling interval after a cut
inline constexpr int kSharedPrefixTurns = 3;                // turns after the cold one
inline constexpr int kMaxSizingRounds = 4;                  // /tokenize measurements per fixture size
inline constexpr int64_t kDefaultVersionCommandTimeoutMs = 10'000;
// A runtime that refuses connections while it starts (vLLM binds its API
// port only once its engine is up, Runtime::refuses_while_starting): a
// refusal streak this short reads as loading (health rows).
inline constexpr int64_t kDefaultStartupGraceMs = 5 * 60'000;

using EnvReader = std::function<std::optional<std::string>(const std::string& name)>;
// getenv().
EnvReader process_env();

// The command line of the process serving a candidate that soakd did not
// launch (found by its port, pid or name: platform/runtime_processes.h), for runtimes
// whose argv is the only place that says what they serve (MLX-LM's --model).
// `error` says why it could not be read (not found, another user's process).
struct RuntimeArgv {
  std::vector<std::string> argv;
  std::string source;  // how the process was found, e.g. "pid 4242 listening on port 8080"
  std::string error;   // non-empty: argv unknown, and why
};
using RuntimeArgvReader = std::function<RuntimeArgv(const CandidateConfig& c)>;

struct EngineOptions {
  // Fresh-prompt nonces. 0: seeded from the clock when the engine is built, so
  // a restarted daemon never re-sends a nonce a runtime may still have cached.
  uint64_t nonce_seed = 0;
  uint64_t fixture_seed = kDefaultFixtureSeed;
  int cancel_cut_tokens = kDefaultCancelCutTokens;
  int64_t slot_free_bound_ms = kDefaultSlotFreeBoundMs;
  int64_t slot_poll_ms = kDefaultSlotPollMs;
  int64_t version_command_timeout_ms = kDefaultVersionCommandTimeoutMs;
  int64_t startup_grace_ms = kDefaultStartupGraceMs;
  EnvReader env;  // empty: process_env()
  // The daemon's process discovery (daemon/wiring.cc). Empty: the argv of a
  // runtime soakd did not launch is unknown, and the row says so.
  RuntimeArgvReader runtime_argv;
  // The runtimes candidates are resolved in (probes/runtimes/catalog.h). Empty:
  // the built-in table. A caller's table must outlive the engine.
  RuntimeTable runtimes;
};

// What a runtime said about itself when asked for its build (read_build()).
struct BuildIdentity {
  std::string build;                 // e.g. "b9928-81ff7abe5"
  std::optional<std::string> model;  // the model it serves, when it says
  // What it serves with (probes/served_state.h LaunchFingerprint::to_json;
  // empty: nothing exposed). A change is treated like a build change.
  std::string fingerprint;
};

using RunId = uint64_t;
using RowSink = std::function<void(ProbeResult)>;

// A candidate's inference (chat) requests in flight now, as the liveness rule
// reads them (campaigns/liveness.h): ages are milliseconds before now.
struct ServingState {
  int64_t outstanding = 0;    // sent, not ended
  int64_t queued = 0;         // of them, held in the runtime's queue
  int64_t oldest_age_ms = 0;  // the oldest of them was sent this long ago
  // Since any of its inference requests was last served (first byte, prefill
  // progress, content, a whole answer, or the runtime's queue moving while it
  // waited); nullopt: none ever was.
  std::optional<int64_t> served_age_ms;
  // The largest silent budget among them: stall timeout plus prefill allowance.
  int64_t silent_budget_ms = 0;
};

struct RunSpec {
  std::vector<ProbeKind> kinds;     // run one after another, in order
  std::optional<int64_t> group_id;  // set on every row (bursts group by it when given)
  // The launch fingerprint's model (file, digest or key) the candidate row was
  // registered with: the identity probe fails when the runtime now serves
  // other weights under the same name (probes/served_state.h). Empty: not known.
  std::string expect_model{};
};

}  // namespace soak::probes
