#include "managed/launch_check.h"

#include <optional>
#include <string>

#include "core/duration.h"
#include "core/service.h"
#include "managed/launcher.h"
#include "managed/runtime_identity.h"
#include "probes/runtimes/catalog.h"
#include "probes/served_state.h"
#include "probes/server_cap.h"

namespace soak {

namespace {

// The default output cap the argv gives (the launch fingerprint's reading of
// it) below limits.min_server_cap holds the candidate at smoke
// (docs/DESIGN.md §3.11): said before anything runs.
std::optional<std::string> cap_warning(const CandidateConfig& c) {
  if (c.kind != WorkloadKind::Chat || c.accept_server_cap) return std::nullopt;
  const probes::Runtime& rt = probes::builtin_runtime(c.runtime);
  const auto args = probes::launch_argv_of(c);
  probes::LaunchFingerprint fp;
  if (rt.served_from_argv) fp = rt.served_from_argv(args).fingerprint;
  if (rt.fingerprint_from_argv) rt.fingerprint_from_argv(args, fp);
  const int64_t min = c.settings.limits.min_server_cap;
  if (!fp.max_tokens_default || *fp.max_tokens_default < 0 || *fp.max_tokens_default >= min) return std::nullopt;
  const int64_t cap = *fp.max_tokens_default;
  return "it caps every answer at " + std::to_string(cap) + " tokens when a request names no limit, below " +
         "limits.min_server_cap " + std::to_string(min) + ": soakd will hold the candidate at smoke (" +
         probes::lift_server_cap(rt.lift_cap, cap, std::nullopt, std::nullopt) +
         "; or set \"accept_server_cap\": true)";
}

}  // namespace

LaunchFindings check_launches(const Config& cfg, const probes::EnvReader& env) {
  LaunchFindings f;
  int64_t largest_stop = 0;
  for (size_t i = 0; i < cfg.candidates.size(); ++i) {
    const CandidateConfig& c = cfg.candidates[i];
    if (!c.launch) continue;
    const std::string at = cfg.source_path + ": candidates[" + std::to_string(i) + "].launch";
    const LaunchSpec& s = *c.launch;
    largest_stop = std::max(largest_stop, s.stop_timeout_ms);
    if (auto exe = resolve_executable(s.argv.front().text, launch_path(s, env("PATH"))); !exe)
      f.errors.push_back(at + ".argv[0]: " + exe.message() +
                         " (e.g. the full path, \"/opt/homebrew/bin/llama-server\", or a name in PATH)");
    for (size_t k = 0; k < s.argv.size(); ++k)
      if (!s.argv[k].from_env.empty() && !env(s.argv[k].from_env))
        f.warnings.push_back(at + ".argv[" + std::to_string(k) + "]: warning: " + s.argv[k].from_env +
                             " is not set here; soakd's environment must have it when it starts the runtime");
    for (const auto& [name, v] : s.env)
      if (!v.from_env.empty() && !env(v.from_env))
        f.warnings.push_back(at + ".env." + name + ": warning: " + v.from_env +
                             " is not set here; soakd's environment must have it when it starts the runtime");
    for (const auto& w : probes::builtin_runtime(c.runtime).launch_warnings(s))
      f.warnings.push_back(at + ".argv: warning: " + w);
    if (auto w = cap_warning(c)) f.warnings.push_back(at + ".argv: warning: " + *w);
  }
  // What soakd's stop may take with its runtimes: as the supervisor counts it.
  if (largest_stop > 0 && kStopGraceMs + runtime_stop_budget_ms(largest_stop) >= kLaunchdExitTimeOutMs)
    f.warnings.push_back(
        cfg.source_path + ": warning: the largest launch.stop_timeout (" + format_duration(largest_stop) + ") plus " +
        format_duration(kAfterKillWaitMs) + " after SIGKILL plus soakd's " + format_duration(kStopGraceMs) +
        " graceful stop reaches launchd's ExitTimeOut (" + format_duration(kLaunchdExitTimeOutMs) +
        "): under launchd soakd may be killed before its runtimes stopped (the next start stops them); "
        "raise ExitTimeOut in the plist or lower stop_timeout");
  return f;
}

}  // namespace soak
