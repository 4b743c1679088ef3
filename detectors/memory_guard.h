// The memory guard (docs/DESIGN.md §2.10): over a sliding window of host samples,
// swap growth above rules.swap_growth_bytes, swapouts growth above
// rules.swapouts_growth, or the kernel's pressure level reaching critical,
// trips the guard. Each trip is one "guard_trip" Event (JSON detail: rule,
// observed growth or level, threshold, window); a rule that stays tripped is
// not reported again until it has cleared, so a week-long swap storm is one
// event per episode, not one per sample.
//
// Pure logic over samples: time is each sample's wall_ms, nothing reads a
// clock. Memory is bounded: the window holds at most kMaxGuardWindowPoints.
// Threading: one instance per host, used from the daemon's loop thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <vector>

#include "core/config.h"
#include "core/types.h"

namespace soak {

// 10 min at one sample per second; far more than the default 5 s cadence needs.
inline constexpr size_t kMaxGuardWindowPoints = 600;

enum class GuardRule { SwapGrowth, SwapoutsGrowth, PressureCritical };
std::string_view to_string(GuardRule r);

class MemoryGuard {
 public:
  explicit MemoryGuard(GuardRules rules);
  const GuardRules& rules() const { return rules_; }

  // Feed host samples in time order. Returns the trips that begin with this sample.
  std::vector<Event> observe(const HostSample& s);

  // Whether any rule is tripped as of the last sample.
  bool tripped() const { return active_[0] || active_[1] || active_[2]; }
  bool tripped(GuardRule r) const { return active_[static_cast<size_t>(r)]; }

  void reset();

 private:
  struct Point {
    int64_t wall_ms;
    std::optional<int64_t> swap_used;
    std::optional<int64_t> swapouts;
  };
  void evict(int64_t now_ms);

  GuardRules rules_;
  std::deque<Point> window_;
  bool active_[3] = {false, false, false};
};

}  // namespace soak
