#include "judges/overlap.h"

#include <algorithm>
#include <climits>
#include <map>
#include <utility>

namespace soak {
namespace {

constexpr int64_t kUsPerMs = 1'000;

}  // namespace

std::pair<int64_t, int64_t> wall_span(const ProbeResult& r) {
  return {r.started_wall_ms, r.started_wall_ms + std::max<int64_t>(0, r.t_done_us.value_or(0) / kUsPerMs)};
}

bool is_heavy_kind(ProbeKind k) {
  return std::find(kHeavyProbeKinds.begin(), kHeavyProbeKinds.end(), k) != kHeavyProbeKinds.end();
}

int64_t mark_overlapped_heavy(std::vector<ProbeResult>& rows, const std::vector<ProbeResult>& others) {
  // Per candidate of `rows` (one, as judged): the other candidates' heavy
  // spans by start, each with the latest end among those starting no later,
  // so a row overlaps one iff the span starting last at or before its end
  // reaches its start: O((n + m) log m).
  struct Spans {
    std::vector<int64_t> starts;
    std::vector<int64_t> reach;  // max end over spans [0, i]
  };
  std::map<int64_t, Spans> by_candidate;
  for (const auto& r : rows) {
    if (by_candidate.count(r.candidate_id)) continue;
    std::vector<std::pair<int64_t, int64_t>> spans;
    for (const auto& o : others)
      if (is_heavy_kind(o.kind) && o.candidate_id != r.candidate_id) spans.push_back(wall_span(o));
    std::sort(spans.begin(), spans.end());
    Spans& s = by_candidate[r.candidate_id];
    int64_t reach = INT64_MIN;
    for (const auto& [from, to] : spans) {
      reach = std::max(reach, to);
      s.starts.push_back(from);
      s.reach.push_back(reach);
    }
  }
  int64_t marked = 0;
  for (auto& r : rows) {
    const auto [from, to] = wall_span(r);
    const Spans& s = by_candidate[r.candidate_id];
    const auto n = std::upper_bound(s.starts.begin(), s.starts.end(), to) - s.starts.begin();
    if (n == 0 || s.reach[static_cast<size_t>(n - 1)] < from) continue;
    r.overlapped_heavy = true;
    ++marked;
  }
  return marked;
}

}  // namespace soak
