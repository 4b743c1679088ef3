// Heavy work a stage planned and had to wait for (docs/DESIGN.md §3.7): the
// campaign track records, per heavy task that waited for the host's heavy
// gate, how often and how long, and the judge names a task that never ran
// instead of judging its absence as "0 of 0".
#pragma once

#include <cstdint>
#include <string>

namespace soak {

struct HeavyWait {
  std::string task;        // task kind ("long_context", "burst", "capacity", "prefix_reuse")
  int64_t planned = 0;     // runs the stage's nominal length plans
  int64_t runs = 0;        // runs it had
  int64_t waits = 0;       // times it was held back for another candidate's heavy work
  int64_t waited_ms = 0;   // how long it was held in all (a wait still on at judgment included)
  int64_t longest_ms = 0;  // its longest wait
  bool operator==(const HeavyWait&) const = default;
};

}  // namespace soak
