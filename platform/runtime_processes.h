// Recognising inference engines among processes, and finding the process that
// serves a candidate. Pure over ProcessInfo lists, except
// locate_candidate_process(), which asks a Sampler.
//
// Threading: callers' thread (the daemon's loop). Failure: values, no throws.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/config.h"
#include "core/types.h"
#include "platform/sampler.h"

namespace soak {

// Listing every process costs milliseconds (see README.md): the duplicate
// engine check runs at this cadence, not at every 5 s sample.
inline constexpr int64_t kDefaultEngineScanEveryMs = 60'000;

struct EngineProcess {
  ProcessInfo process;
  RuntimeKind kind = RuntimeKind::OpenAI;
};

// Which engine a process is, from its name, executable and argv:
//   llama-server                          -> llama.cpp
//   mlx_lm.server, python -m mlx_lm.server, mlx_lm server, python -m mlx_lm server -> mlx-lm
//   omlx (script or -m omlx)              -> omlx
//   vllm serve, python -m vllm.entrypoints.openai.api_server -> vllm
//   rapid-mlx, vllm-mlx                   -> rapid-mlx
//   ollama serve / ollama runner, ollama_llama_server -> ollama
//   LM Studio (the app and its helpers)   -> lm-studio
// Clients of the same tools (`ollama run`, `lms`, `vllm bench`) are not engines.
std::optional<RuntimeKind> identify_engine(const ProcessInfo& p);

std::vector<EngineProcess> find_engines(const std::vector<ProcessInfo>& processes);

// Engines that do not belong to the candidate's process tree (the candidate's
// process, its ancestors and its descendants: an Ollama runner under `ollama
// serve`, LM Studio's helpers). These are the duplicates the memory guard
// flags: a second engine on the same GPU collapses both. With no candidate
// pid, every engine counts.
std::vector<EngineProcess> other_engines(const std::vector<ProcessInfo>& processes,
                                         std::optional<int> candidate_pid);

// A process's command line for display and event details: at most
// `max_chars` (then "..."), with the values of secret-looking options
// (--api-key X, --hf-token=X, ...) masked as "***". Events never hold secrets.
std::string display_command(const ProcessInfo& p, size_t max_chars);

// The TCP port of a base URL when its host is this machine (loopback,
// "localhost", or the unspecified address); nullopt for remote hosts, where a
// local listener on the same port would be somebody else.
std::optional<uint16_t> local_port_of(std::string_view base_url);

enum class PidSource { Config, Port, Name, Runtime, NotFound };
std::string_view to_string(PidSource s);

struct LocatedProcess {
  std::optional<int> pid;
  PidSource source = PidSource::NotFound;
  std::string detail;  // how it was found, or why not
};

// pid from the config; else the process listening on the base URL's local
// port; else the configured process_name (name, executable or argv[0]
// basename); else the one running engine of the candidate's runtime kind (two
// or more: ambiguous, not found).
LocatedProcess locate_candidate_process(Sampler& sampler, const CandidateConfig& c);

// The command line of the process serving a candidate (located as above):
// what an MLX-LM runtime soakd did not launch serves is only in its argv.
struct CandidateArgv {
  std::vector<std::string> argv;
  std::string found;  // how the process was found (LocatedProcess::detail)
  std::string error;  // non-empty: argv unknown, and why
};
CandidateArgv read_candidate_argv(Sampler& sampler, const CandidateConfig& c);

// The pure last two steps of locate_candidate_process, over a process list.
LocatedProcess locate_by_name(const std::vector<ProcessInfo>& processes, std::string_view name);
LocatedProcess locate_by_runtime(const std::vector<ProcessInfo>& processes, RuntimeKind kind);

}  // namespace soak
