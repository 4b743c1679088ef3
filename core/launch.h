// A managed candidate's `launch` block: how soakd starts the runtime it tests
// (docs/DESIGN.md §4.8). The argv is run without a shell; the environment is
// a minimal inherited set plus the block's own entries. Secrets are never
// written in the config: an argv element or an environment value may name one
// of soakd's own environment variables instead ({"from_env": "NAME"}), read
// only when the process is spawned, and stored and shown as ${NAME}.
//
// Also here, pure over the block: the port its argv tells the runtime to
// listen on (checked against base_url) and the argv as stored and shown. The
// warnings about flags a runtime needs for soak testing are each runtime's
// own (probes/runtimes/, Runtime::launch_warnings).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/duration.h"
#include "core/types.h"

namespace soak {

inline constexpr int64_t kDefaultReadyTimeoutMs = 10 * kMinute;  // a large model may load for minutes
inline constexpr int64_t kDefaultStopTimeoutMs = 30 * kSecond;   // SIGTERM, then SIGKILL after this

// One argv element or environment value: literal text, or the value of one
// of soakd's environment variables, by NAME.
struct LaunchValue {
  std::string text;      // literal (empty when from_env is set)
  std::string from_env;  // NAME of soakd's environment variable holding the value
  bool operator==(const LaunchValue&) const = default;
};

// Whether the runtime stays up when its campaign settles and when soakd stops
// (then the next soakd adopts it, so a stage survives a soakd restart).
enum class KeepRunning { No, Yes };

struct LaunchSpec {
  std::vector<LaunchValue> argv;           // argv[0]: literal; a path (made absolute) or a name looked up in PATH
  std::map<std::string, LaunchValue> env;  // added to the inherited minimal set
  std::string cwd;                         // absolute; empty: soakd's working directory
  int64_t ready_timeout_ms = kDefaultReadyTimeoutMs;
  int64_t stop_timeout_ms = kDefaultStopTimeoutMs;
  KeepRunning keep_running = KeepRunning::No;
  bool operator==(const LaunchSpec&) const = default;
};

// The variables a spawned runtime inherits from soakd; everything else it
// gets comes from the launch block.
inline constexpr std::string_view kInheritedEnv[] = {"PATH", "HOME",   "USER",     "LOGNAME", "SHELL",
                                                     "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR",  "TZ"};

// An option or variable name that says it holds a secret: its last word
// (split at '-', '_', '.') is key, token, secret, password, passwd or apikey
// ("--api-key", "HF_TOKEN"; not "--keep", "TOKENIZERS_PARALLELISM",
// "--token-interval-ms", nor a file option such as "--ssl-key-file").
bool names_a_secret(std::string_view name);

// The argv as the runtime will see it, as far as the config says: literals as
// written, from_env values empty (unknown until spawn, and a secret).
std::vector<std::string> literal_argv(const LaunchSpec& s);
// The argv as stored and shown: literals as written, from_env values as "${NAME}".
std::vector<std::string> display_argv(const LaunchSpec& s);
// The same as JSON, secrets as {"from_env": "NAME"} (runtime_launches.argv).
std::string argv_json(const LaunchSpec& s);

// A port the launch block tells the runtime to listen on, and the flag that said so.
struct ArgvPort {
  uint16_t port = 0;
  std::string flag;  // e.g. "--port 8081", "--host 127.0.0.1:8081", "env LLAMA_ARG_PORT"
};
// Every port given literally: --port N / --port=N, -p N (not llama.cpp, where
// -p is the prompt), --host H:P, and the environment's
// LLAMA_ARG_PORT and OLLAMA_HOST.
std::vector<ArgvPort> argv_ports(const LaunchSpec& s, RuntimeKind runtime);
// The launch block with every port argv_ports() finds set to `port` (a
// HOST:PORT keeps its host): the same runtime, listening elsewhere.
LaunchSpec with_port(const LaunchSpec& s, RuntimeKind runtime, uint16_t port);
// The base URL with its port set to `port` (scheme, host and path kept).
std::string url_with_port(const std::string& base_url, uint16_t port);

// argv[0]'s file name when it is an interpreter or a package launcher
// (python3.12, uv, uvx, pipx, env, sh, node, ...): the program that runs is
// then the same across builds, and a build lives in what it loads.
std::optional<std::string> launch_interpreter(const LaunchSpec& s);

// The previous promoted build's runtime, started beside a managed candidate's
// canary (ab "interleaved", docs/DESIGN.md §4.8), goes by the candidate's name
// and this suffix: no candidate name can hold '@' (core/config_schema.cc), so
// its launch records, log file and probe state never mix with a candidate's.
inline constexpr std::string_view kPreviousRuntimeSuffix = "@previous";
std::string previous_runtime_name(const std::string& name);

}  // namespace soak
