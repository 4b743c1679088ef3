// check-config's rule for the capacity check (docs/DESIGN.md §2.2, §2.4): the
// wall timeout must not cut the first-token budget of the last member of the
// largest capacity entry, as it must not cut the largest long-context size's.
#include <sstream>

#include "core/capacity_budget.h"
#include "core/config_schema.h"
#include "core/duration.h"

namespace soak::schema {

void check_capacity_budget(ReadContext& ctx, const std::string& path, const CampaignSettings& s,
                           std::optional<int> slots) {
  const Limits& l = s.limits;
  if (l.wall_timeout_ms <= 0 || l.stall_timeout_ms > l.wall_timeout_ms) return;  // check_campaign says so
  const std::vector<CapacityEntry> entries = capacity_entries(s, slots);
  // Slots not set: the runtime reports them (/props); until then each entry is
  // taken as one round, so only a wall inside a single prefill is refused here.
  auto slots_for = [&](const CapacityEntry& e) { return slots ? slots : std::optional<int>(e.concurrency); };
  const CapacityEntry* worst = nullptr;
  int64_t budget_ms = 0;
  for (const auto& e : entries) {
    const int64_t b = capacity_member_budget_ms(e, slots_for(e), l);
    if (!worst || b > budget_ms) {
      worst = &e;
      budget_ms = b;
    }
  }
  if (!worst) return;
  budget_ms = (budget_ms + kSecond - 1) / kSecond * kSecond;  // whole seconds: the figure is shown
  if (budget_ms < l.wall_timeout_ms) return;
  const int64_t rounds = capacity_prefill_rounds(worst->concurrency, slots_for(*worst));
  std::ostringstream floor;
  floor << l.prefill_floor_tps;
  const std::string slots_said = slots ? std::to_string(*slots) + " slot(s)"
                                       : std::to_string(worst->concurrency) +
                                             " slot(s) at best: `slots` is not set, the runtime's own count decides";
  ctx.err(join_path(path, "limits.wall_timeout"),
          "is " + format_duration(l.wall_timeout_ms) + ", within the first-token budget of the last member of the " +
              std::to_string(worst->size) + " x " + std::to_string(worst->concurrency) +
              " capacity check: stall_timeout " + format_duration(l.stall_timeout_ms) + " + " + std::to_string(rounds) +
              " prefill(s) of " + std::to_string(worst->size) + " tokens at " + floor.str() + " tok/s (" +
              std::to_string(worst->concurrency) + " members on " + slots_said + ") = " + format_duration(budget_ms) +
              "; raise wall_timeout above that with time to answer, lower the entry's concurrency, or raise "
              "prefill_floor_tps",
          "\"" + format_duration(budget_ms + 5 * kMinute) + "\"");
}

}  // namespace soak::schema
