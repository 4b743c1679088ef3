// The first-token budget of a capacity check's members (docs/DESIGN.md §2.2,
// §2.4). `concurrency` prompts released together on a runtime with `slots`
// slots: the last member's prompt is read after ceil(concurrency / slots)
// rounds of prefills, its own included, so its prefill allowance is that many
// single-prompt allowances. Slots not known count as one (every prompt waits
// for the ones before it). Pure; the capacity probe and check-config share it.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>

#include "core/config.h"
#include "core/limits.h"

namespace soak {

inline int64_t capacity_prefill_rounds(int concurrency, std::optional<int> slots) {
  const int64_t s = std::max(1, slots.value_or(1));
  const int64_t n = std::max(1, concurrency);
  return (n + s - 1) / s;
}

inline int64_t capacity_prefill_allowance_ms(const CapacityEntry& e, std::optional<int> slots, double floor_tps) {
  return prefill_allowance_ms(e.size, floor_tps) * capacity_prefill_rounds(e.concurrency, slots);
}

// The stall budget before the last member's first token: the stall timeout
// plus its allowance.
inline int64_t capacity_member_budget_ms(const CapacityEntry& e, std::optional<int> slots, const Limits& l) {
  return l.stall_timeout_ms + capacity_prefill_allowance_ms(e, slots, l.prefill_floor_tps);
}

}  // namespace soak
