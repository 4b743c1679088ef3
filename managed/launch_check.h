// What `soakd check-config` checks of managed candidates beyond the file
// itself (docs/DESIGN.md §4.8), on this machine: argv[0] must resolve to an
// executable (a name in PATH, or a path); a value taken from soakd's
// environment ({"from_env": NAME}) should be set; flags the runtime needs
// for soak testing (the runtime's entry, probes/runtimes/ launch_warnings);
// and whether launchd's ExitTimeOut leaves room for the largest
// stop_timeout. The port in the argv against base_url is a rule of the file
// (parse_config rejects it).
//
// Errors fail the check; warnings are printed and do not. `soakd run` logs
// both and starts: a candidate whose runtime cannot start is blocked, with
// the reason. Thread-agnostic; reads the filesystem (PATH lookup).
#pragma once

#include <string>
#include <vector>

#include "core/config.h"
#include "probes/engine.h"

namespace soak {

struct LaunchFindings {
  std::vector<std::string> errors;    // "FILE: candidates[0].launch.argv[0]: ..."
  std::vector<std::string> warnings;  // "FILE: candidates[0].launch: warning: ..."
};

LaunchFindings check_launches(const Config& cfg, const probes::EnvReader& env);

}  // namespace soak
