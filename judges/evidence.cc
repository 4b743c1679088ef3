// A promotion names its evidence (docs/DESIGN.md §3.2): every decisive rule
// states how much it had against what it needs (Judgement::need), and here
// each becomes an `evidence/<rule>` metric row — decided, with what a pass on
// it can see, or short, with what it had and needed — and a rule short of it
// an inconclusive finding that names it. A stage is never promoted on the
// rules that happened to have data while the others drop out unseen.
//
// Row fields: n what the rule had, threshold what it needs, estimate the
// smallest effect a pass on it can see (a fraction; 0 when the rule states
// none), baseline 1 for a decisive rule (0: a check beside them), result
// pass (decided) or insufficient (short).
#include <algorithm>

#include "judges/internal.h"

namespace soak::judge_detail {

void judge_evidence(const Context& c, Judgement& j) {
  (void)c;
  // One row per rule, in the order the rules stated them; a rule stated twice
  // (never by design) keeps its first statement.
  std::vector<std::string> seen;
  for (const EvidenceNeed& n : j.needs) {
    if (std::find(seen.begin(), seen.end(), n.rule) != seen.end()) continue;
    seen.push_back(n.rule);
    const bool decided = !n.short_of_it();
    std::string reason =
        decided ? format("decided on %lld %s (needs %lld)", static_cast<long long>(n.had), n.unit.c_str(),
                         static_cast<long long>(n.needed))
                : format("%s: %lld %s, needs %lld", n.decisive ? "short" : "could not decide (not decisive)",
                         static_cast<long long>(n.had), n.unit.c_str(), static_cast<long long>(n.needed));
    if (decided && !n.sees.empty()) reason += "; a pass sees " + n.sees;
    auto m = metric("evidence/" + n.rule, decided ? MetricResult::Pass : MetricResult::Insufficient, reason);
    m.n = n.had;
    set_numbers(m, n.sees_effect, n.decisive ? 1 : 0, 0, 0, static_cast<double>(n.needed), 1);
    j.add(std::move(m));
    if (!decided && n.decisive)
      j.findings.push_back({Severity::Inconclusive,
                            format("evidence short: %s had %lld %s, needs %lld", n.rule.c_str(),
                                   static_cast<long long>(n.had), n.unit.c_str(), static_cast<long long>(n.needed)),
                            EvidenceGap{n.rule, n.kinds}});
  }
}

}  // namespace soak::judge_detail
