// Command line and JSON configuration of the standalone soak-fake-runtime
// program. Pure parsing: strings in, ListenerConfigs or an error message out.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "tests/fake_runtime/scenario.h"

namespace soak::fake {

struct CliOptions {
  std::vector<ListenerConfig> listeners;
  std::string config_path;  // --config FILE: re-read on SIGHUP (build and scenario)
  bool help = false;
};

Result<CliOptions> parse_cli(const std::vector<std::string>& args);

// {"defaults": {knobs...}, "listeners": [{"host","port","flavour","scenario", knobs...}]}
// Knob keys are the --option names with '_' for '-', e.g. "token_interval_ms".
Result<std::vector<ListenerConfig>> parse_config_json(std::string_view text);
Result<std::vector<ListenerConfig>> load_config_file(const std::string& path);

std::string usage_text();

}  // namespace soak::fake
