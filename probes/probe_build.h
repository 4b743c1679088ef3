// Reading a candidate's build identity, per its BuildSpec and its runtime's
// entry: a fixed string; a version command (argv run WITHOUT a shell via
// uv_spawn, output of both streams read, killed at the time bound); or the
// entry's HTTP source (llama.cpp /props build_info, /version, /api/version,
// oMLX /api/status, Rapid-MLX build_info metric, LM Studio's runtime field,
// mlx-lm's system_fingerprint from a short answer).
//
// Ownership: the engine owns each BuildRead until its done fired and the
// engine's deferred continuation ran. Threading: loop thread only.
// Failure: every fault is an Error with the reason; nothing throws. `done`
// fires exactly once, never from inside start() or cancel().
#pragma once

#include <uv.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/result.h"
#include "core/types.h"
#include "probes/command.h"
#include "probes/engine_exchange.h"
#include "probes/probe_types.h"
#include "probes/runtimes/runtime.h"
#include "probes/served_state.h"

namespace soak::probes {

// The build string in a version command's output (stdout and stderr joined):
// what the runtime's entry reads in it (llama-server's "version: 9928
// (81ff7abe5)" becomes "b9928-81ff7abe5"), else its first non-empty line,
// trimmed.
Result<std::string> build_from_command_output(const Runtime& runtime, std::string_view output);

class BuildRead {
 public:
  using Done = std::function<void(Result<BuildIdentity>)>;
  BuildRead(EngineIo& io, const EngineOptions& opts, CandidateConfig cand, const Runtime& runtime, Done done);
  ~BuildRead();
  void start();
  void cancel();

 private:
  void finish(Result<BuildIdentity> r);
  void over_http();
  // Then what it serves with (probes/served_state.h), into got_.fingerprint.
  void with_fingerprint(BuildIdentity b);
  void next_served();

  EngineIo& io_;
  const EngineOptions& opts_;
  CandidateConfig cand_;
  const Runtime& rt_;
  Done done_;
  bool done_called_ = false;
  std::unique_ptr<Exchange> exchange_;
  std::unique_ptr<CommandRun> command_;
  BuildIdentity got_;
  std::span<const ServedRoute> routes_;
  size_t served_i_ = 0;
  ServedState served_;
  std::vector<std::unique_ptr<Exchange>> served_exchanges_;
};

}  // namespace soak::probes
