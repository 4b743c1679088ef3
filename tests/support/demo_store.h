// A store like the demo's (scripts/demo.sh), built in virtual time with the
// campaign simulation instead of three fake runtimes and three minutes: whole
// campaigns at stretched cadences (a week is a few thousand rows per
// candidate), host samples every five minutes with some memory pressure, a
// host-wide gap and a control event. Candidates:
//   llama-b9430  healthy: promoted after a 7-day soak (the baseline)
//   llama-b9502  baseline llama-b9430, decode 10x slower at 95 % acceptance: rejected in the canary
//   omlx-35b     agent streams stall after HTTP 200: rejected in the gate (hung stream)
//   mlx-leak     footprint grows through the soak: rejected in the soak (the trend)
// For the report, metrics and promtool tests.
#pragma once

#include <cstdint>
#include <string>

#include "core/result.h"

namespace soak {

struct DemoStore {
  std::string path;      // the store file
  int64_t start_ms = 0;  // virtual time the campaigns began
  int64_t end_ms = 0;    // virtual time when every candidate had its final verdict
};

// Writes <dir>/soakd.db. Takes about a second (Debug build).
Result<DemoStore> build_demo_store(const std::string& dir);

}  // namespace soak
