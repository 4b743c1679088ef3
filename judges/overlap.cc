#include "judges/overlap.h"

#include <algorithm>
#include <utility>

namespace soak {
namespace {

constexpr int64_t kUsPerMs = 1'000;

// [start, end] in wall ms; a row with no end time covers its start only.
std::pair<int64_t, int64_t> span_of(const ProbeResult& r) {
  return {r.started_wall_ms, r.started_wall_ms + std::max<int64_t>(0, r.t_done_us.value_or(0) / kUsPerMs)};
}

}  // namespace

bool is_heavy_kind(ProbeKind k) {
  switch (k) {
    case ProbeKind::LongContext:
    case ProbeKind::Burst:
    case ProbeKind::Capacity:
    case ProbeKind::SharedPrefix: return true;
    default: return false;
  }
}

int64_t mark_overlapped_heavy(std::vector<ProbeResult>& rows, const std::vector<ProbeResult>& others) {
  std::vector<std::pair<int64_t, std::pair<int64_t, int64_t>>> heavy;  // candidate, span
  for (const auto& o : others)
    if (is_heavy_kind(o.kind)) heavy.push_back({o.candidate_id, span_of(o)});
  int64_t marked = 0;
  for (auto& r : rows) {
    const auto [from, to] = span_of(r);
    for (const auto& [cand, s] : heavy) {
      if (cand == r.candidate_id || s.second < from || to < s.first) continue;
      r.overlapped_heavy = true;
      ++marked;
      break;
    }
  }
  return marked;
}

}  // namespace soak
