#include "detectors/memory_guard.h"

#include <nlohmann/json.hpp>

#include "platform/darwin_figures.h"

namespace soak {
namespace {

struct Growth {
  int64_t amount = 0;
  int64_t since_ms = 0;
};

// Rise of the latest value over the lowest value earlier in the window.
template <class Window, class Get>
std::optional<Growth> growth(const Window& window, Get get) {
  if (window.empty() || !get(window.back())) return std::nullopt;
  int64_t latest = *get(window.back());
  std::optional<Growth> best;
  for (const auto& p : window) {
    auto v = get(p);
    if (!v) continue;
    if (!best || latest - *v > best->amount) best = Growth{latest - *v, p.wall_ms};
  }
  return best;
}

Event trip_event(const HostSample& s, GuardRule rule, nlohmann::json detail, std::optional<int64_t> duration_ms) {
  detail["rule"] = std::string(to_string(rule));
  Event e;
  e.wall_ms = s.wall_ms;
  if (s.host_id != 0) e.host_id = s.host_id;
  e.kind = EventKind::GuardTrip;
  e.detail_json = detail.dump();
  e.duration_ms = duration_ms;
  return e;
}

}  // namespace

std::string_view to_string(GuardRule r) {
  switch (r) {
    case GuardRule::SwapGrowth: return "swap_growth";
    case GuardRule::SwapoutsGrowth: return "swapouts_growth";
    case GuardRule::PressureCritical: return "pressure_critical";
  }
  return "unknown";
}

MemoryGuard::MemoryGuard(GuardRules rules) : rules_(rules) {}

void MemoryGuard::reset() {
  window_.clear();
  active_[0] = active_[1] = active_[2] = false;
}

void MemoryGuard::evict(int64_t now_ms) {
  while (!window_.empty() && window_.front().wall_ms < now_ms - rules_.window_ms) window_.pop_front();
  while (window_.size() > kMaxGuardWindowPoints) window_.pop_front();
}

std::vector<Event> MemoryGuard::observe(const HostSample& s) {
  std::vector<Event> out;
  if (!window_.empty()) {
    const Point& last = window_.back();
    bool wall_went_back = s.wall_ms < last.wall_ms;
    // A counter that fell means a reboot: growth across it means nothing.
    bool counter_reset = s.swapouts && last.swapouts && *s.swapouts < *last.swapouts;
    if (wall_went_back || counter_reset) window_.clear();
  }
  window_.push_back(Point{s.wall_ms, s.swap_used_bytes, s.swapouts});
  evict(s.wall_ms);

  auto check = [&](GuardRule rule, std::optional<Growth> g, int64_t threshold, const char* unit) {
    bool& active = active_[static_cast<size_t>(rule)];
    bool now = g && g->amount > threshold;
    if (now && !active) {
      nlohmann::json d{{"growth", g->amount},
                       {"threshold", threshold},
                       {"unit", unit},
                       {"window_ms", rules_.window_ms},
                       {"since_ms", g->since_ms}};
      out.push_back(trip_event(s, rule, std::move(d), s.wall_ms - g->since_ms));
    }
    active = now;
  };
  check(GuardRule::SwapGrowth, growth(window_, [](const Point& p) { return p.swap_used; }), rules_.swap_growth_bytes,
        "bytes");
  check(GuardRule::SwapoutsGrowth, growth(window_, [](const Point& p) { return p.swapouts; }), rules_.swapouts_growth,
        "pages");

  bool& critical = active_[static_cast<size_t>(GuardRule::PressureCritical)];
  bool now_critical = rules_.pressure_critical_trips && s.pressure_level == darwin::kPressureCritical;
  if (now_critical && !critical) {
    out.push_back(trip_event(s, GuardRule::PressureCritical,
                             nlohmann::json{{"level", *s.pressure_level}, {"threshold", darwin::kPressureCritical}},
                             std::nullopt));
  }
  critical = now_critical;
  return out;
}

}  // namespace soak
