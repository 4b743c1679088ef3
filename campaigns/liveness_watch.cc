// Campaigns: the liveness rule on every tick of a running stage
// (campaigns/liveness.h): the candidate's inference requests in flight, read
// from the runner; past the bound, one `unserved` event per stage, then the
// stage's hard failures, which the judge decides on that event.
#include "campaigns/campaigns.h"
#include "campaigns/liveness.h"
#include "core/duration.h"

namespace soak {

namespace {
bool ending(const Track& t, int64_t now) { return now >= t.stage->started_ms + t.stage->length_ms; }
}  // namespace

void Campaigns::watch_liveness(Track& t, int64_t now) {
  if (t.phase != Phase::Staged || !t.stage || !t.row || frozen_) return;
  const auto finding =
      check_liveness(runner_.serving(t.name), t.cfg->settings.limits.unserved_timeout_ms, ending(t, now), now);
  if (!finding) return;
  auto noted = unserved_noted_.find(t.name);
  if (noted == unserved_noted_.end() || noted->second != t.stage->id) {
    unserved_noted_[t.name] = t.stage->id;
    write_event(EventKind::Unserved, t.row->id, unserved_detail(*finding, t.stage->kind, t.stage->id), now,
                finding->unserved_ms);
    d_.log->warn("{}: {}: nothing served for {} while {} request(s) were outstanding (bound {}, {})", t.name,
                 to_string(t.stage->kind), format_duration(finding->unserved_ms), finding->outstanding,
                 format_duration(finding->bound_ms), finding->bound);
  }
  check_hard_failures(t, now);
}

std::optional<int64_t> Campaigns::liveness_wake(const Track& t, int64_t now) const {
  if (t.phase != Phase::Staged || !t.stage || frozen_) return std::nullopt;
  return liveness_due_ms(runner_.serving(t.name), t.cfg->settings.limits.unserved_timeout_ms, ending(t, now), now);
}

}  // namespace soak
