// Liveness (docs/DESIGN.md §3.4, "unserved"): the campaign stores an
// `unserved` event when nothing of the candidate's inference requests was
// served for longer than the liveness bound while some were outstanding
// (campaigns/liveness.h). Any such event in the stage is a hard failure: a
// runtime that stops serving while its health routes still answer is
// rejected in the stage where it stopped. The reason names how long nothing
// was served, how many requests waited and since when, and whether the
// runtime's health and scrape routes still answered meanwhile (its rows in
// the stage). No metric row when there is no event: verdicts judged before
// the rule recompute as they were (soakctl explain).
#include <nlohmann/json.hpp>

#include "judges/internal.h"

namespace soak::judge_detail {

namespace {

// "4m 10s", "5m", "8.2s", "350ms": how long, for a reason.
std::string span(int64_t ms) {
  if (ms < 1000) return format("%lldms", static_cast<long long>(ms));
  if (ms < 60'000) return format("%.1fs", static_cast<double>(ms) / 1000);
  const int64_t s = (ms + 500) / 1000;
  if (s < 3600) {
    if (s % 60 == 0) return format("%lldm", static_cast<long long>(s / 60));
    return format("%lldm %llds", static_cast<long long>(s / 60), static_cast<long long>(s % 60));
  }
  if (s / 60 % 60 == 0) return format("%lldh", static_cast<long long>(s / 3600));
  return format("%lldh %lldm", static_cast<long long>(s / 3600), static_cast<long long>(s / 60 % 60));
}

int64_t get(const nlohmann::json& j, const char* key, int64_t fallback = 0) {
  auto it = j.find(key);
  return it != j.end() && it->is_number_integer() ? it->get<int64_t>() : fallback;
}

}  // namespace

void judge_unserved(const Context& c, Judgement& j) {
  const auto events = events_of(c, EventKind::Unserved, EventScope::Candidate);
  if (events.empty()) return;
  const Event& e = *events.front();
  const auto d = nlohmann::json::parse(e.detail_json, nullptr, false);
  const nlohmann::json detail = d.is_object() ? d : nlohmann::json::object();
  const int64_t outstanding = get(detail, "outstanding");
  const int64_t queued = get(detail, "queued");
  const int64_t unserved = get(detail, "unserved_ms", e.duration_ms.value_or(0));
  const int64_t oldest = get(detail, "oldest_sent_ms", e.wall_ms);
  const int64_t bound = get(detail, "bound_ms");
  const auto last = detail.find("last_served_ms");
  const bool served_before = last != detail.end() && last->is_number_integer();
  const int64_t since = e.wall_ms - unserved;

  std::string reason =
      format("nothing served for %s while %lld request%s waited (oldest sent %s ago)", span(unserved).c_str(),
             static_cast<long long>(outstanding), outstanding == 1 ? "" : "s", span(e.wall_ms - oldest).c_str());
  if (queued > 0) reason += format(", %lld held in the runtime's queue", static_cast<long long>(queued));
  if (!served_before) reason += "; nothing of its requests was ever served";
  // What still answered meanwhile: the runtime was up, not serving.
  int64_t health = 0, scrape = 0;
  for (const ProbeResult* r : c.cand) {
    if (r->outcome != Outcome::Clean || r->started_wall_ms < since || r->started_wall_ms > e.wall_ms) continue;
    if (r->kind == ProbeKind::Health) ++health;
    if (r->kind == ProbeKind::Scrape) ++scrape;
  }
  if (health > 0 && scrape > 0)
    reason += "; /health and its scrape still answered";
  else if (health > 0)
    reason += "; /health still answered";
  else if (scrape > 0)
    reason += "; its scrape routes still answered";
  reason += format(" (bound %s, %s; event %lld)", span(bound).c_str(),
                   detail.value("bound", std::string("the liveness bound")).c_str(), static_cast<long long>(e.id));

  auto m = metric("hard/unserved", MetricResult::Fail, reason);
  m.n = static_cast<int64_t>(events.size());
  set_numbers(m, static_cast<double>(unserved), 0, 0, 0, static_cast<double>(bound), 1);
  j.add(std::move(m));
  j.find(Severity::HardFailure, "unserved: " + reason);
}

}  // namespace soak::judge_detail
