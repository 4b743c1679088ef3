// Recognising inference engines among processes, and finding the process that
// serves a candidate. Which runtime a process is comes from the runtime
// signatures the composition root hands down (RuntimeSignature in
// platform/sampler.h, built from the runtimes' entries in probes/runtimes/):
// this file holds only the matching mechanics, and names no runtime. Pure
// over ProcessInfo lists, except locate_candidate_process() and
// read_candidate_argv(), which ask a Sampler (and use its signatures).
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

// Which engine a process is, from its name, executable and argv: the first
// signature whose app it belongs to (the app's process, or anything inside
// its bundle: an app's helpers are its engines); else the first whose program
// or module it runs. The program is argv[0]'s basename (the executable's, or
// the kernel's name, when argv is hidden); for a Python interpreter it is the
// script after the interpreter's options, or the module after `-m`, which
// only module names match. A subcommand in a name must be the first argument
// after the program, so the same tool's clients (`ollama run`, `vllm bench`)
// are not engines.
std::optional<RuntimeKind> identify_engine(const ProcessInfo& p, RuntimeSignatures runtimes);

std::vector<EngineProcess> find_engines(const std::vector<ProcessInfo>& processes, RuntimeSignatures runtimes);

// Engines that do not belong to the candidate's process tree (the candidate's
// process, its ancestors and its descendants: an Ollama runner under `ollama
// serve`, LM Studio's helpers). These are the duplicates the memory guard
// flags: a second engine on the same GPU collapses both. With no candidate
// pid, every engine counts.
std::vector<EngineProcess> other_engines(const std::vector<ProcessInfo>& processes, std::optional<int> candidate_pid,
                                         RuntimeSignatures runtimes);

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
// basename); else the one running engine of the candidate's runtime kind, as
// the sampler's signatures recognise it (two or more: ambiguous, not found;
// a runtime without a signature: not found).
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
LocatedProcess locate_by_runtime(const std::vector<ProcessInfo>& processes, RuntimeKind kind,
                                 RuntimeSignatures runtimes);

}  // namespace soak
