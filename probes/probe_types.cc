#include "probes/probe_types.h"

#include <cstdlib>

namespace soak::probes {

EnvReader process_env() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());
    if (!v) return std::nullopt;
    return std::string(v);
  };
}

}  // namespace soak::probes
