#include "campaigns/liveness.h"

#include <algorithm>

#include <nlohmann/json.hpp>

namespace soak {

int64_t unserved_for_ms(const probes::ServingState& s) {
  if (s.outstanding <= 0) return 0;
  return s.served_age_ms ? std::min(*s.served_age_ms, s.oldest_age_ms) : s.oldest_age_ms;
}

int64_t liveness_bound_ms(const probes::ServingState& s, int64_t unserved_timeout_ms, bool ending) {
  return ending ? s.silent_budget_ms : std::max(unserved_timeout_ms, s.silent_budget_ms);
}

std::optional<Unserved> check_liveness(const probes::ServingState& s, int64_t unserved_timeout_ms, bool ending,
                                       int64_t now_ms) {
  if (s.outstanding <= 0) return std::nullopt;
  const int64_t bound = liveness_bound_ms(s, unserved_timeout_ms, ending);
  const int64_t unserved = unserved_for_ms(s);
  if (bound <= 0 || unserved <= bound) return std::nullopt;
  Unserved u;
  u.outstanding = s.outstanding;
  u.queued = s.queued;
  u.oldest_sent_ms = now_ms - s.oldest_age_ms;
  u.unserved_ms = unserved;
  if (s.served_age_ms) u.last_served_ms = now_ms - *s.served_age_ms;
  u.bound_ms = bound;
  u.bound = !ending && unserved_timeout_ms >= s.silent_budget_ms ? "limits.unserved_timeout"
                                                                 : "stall timeout + prefill allowance";
  return u;
}

std::optional<int64_t> liveness_due_ms(const probes::ServingState& s, int64_t unserved_timeout_ms, bool ending,
                                       int64_t now_ms) {
  if (s.outstanding <= 0) return std::nullopt;
  const int64_t bound = liveness_bound_ms(s, unserved_timeout_ms, ending);
  if (bound <= 0) return std::nullopt;
  return now_ms + std::max<int64_t>(0, bound - unserved_for_ms(s)) + 1;
}

std::string unserved_detail(const Unserved& u, StageKind stage, int64_t stage_id) {
  nlohmann::ordered_json d;
  d["outstanding"] = u.outstanding;
  d["queued"] = u.queued;
  d["oldest_sent_ms"] = u.oldest_sent_ms;
  d["unserved_ms"] = u.unserved_ms;
  d["last_served_ms"] = u.last_served_ms ? nlohmann::ordered_json(*u.last_served_ms) : nlohmann::ordered_json();
  d["bound_ms"] = u.bound_ms;
  d["bound"] = u.bound;
  d["stage"] = to_string(stage);
  d["stage_id"] = stage_id;
  return d.dump();
}

}  // namespace soak
