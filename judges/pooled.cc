// One figure pooled over locators (docs/DESIGN.md §3.5, §3.6): each locator's
// values as ratios to its own reference median, one rank test over all of
// them, so that many thin locators add up to evidence none of them is alone;
// and the span of rows where a pooled series moved away from the rest (a
// change point), for a reason to name when and for how long.
//
// Ratios are taken in logs: a locator's rows of 5 ms and another's of 5 s
// meet on one scale, and a change by a factor is a shift. The decision uses
// the end of the Hodges–Lehmann interval nearest no change, never the
// estimate alone: a pooled test compares rows of many workloads, and a chance
// separation must not reject a healthy build.
#include <algorithm>
#include <cmath>

#include "judges/internal.h"
#include "judges/stats.h"

namespace soak::judge_detail {

namespace {

// log(x) for a positive value; nothing for a zero (a 0 ms first token cannot
// be a ratio) or a negative one.
std::optional<double> log_of(double v) {
  if (!(v > 0) || !std::isfinite(v)) return std::nullopt;
  return std::log(v);
}

// 1.4826 x the median absolute deviation: the normal scale of a sample that
// ignores a few wild values (the 1000x rows a change brought, a cold load).
double robust_sd(std::vector<double> v) {
  if (v.size() < 2) return 0;
  const double m = stats::median(v);
  for (double& x : v) x = std::fabs(x - m);
  return 1.4826 * stats::median(std::move(v));
}

// A change in logs as a fraction worse: for a time (lower is better) e^d - 1,
// for a rate (higher is better) 1 - e^d.
double worse_of(Better better, double d) { return better == Better::Lower ? std::expm1(d) : -std::expm1(d); }

}  // namespace

Pooled pooled_change(Better better, bool latency, const std::vector<LocatorValues>& locs, double alpha) {
  Pooled out;
  std::vector<double> ref, test, rise, centred;
  for (const LocatorValues& l : locs) {
    std::vector<double> r;
    for (double v : l.ref)
      if (log_of(v)) r.push_back(v);
    if (r.empty()) continue;
    const double med = stats::median(r);
    const auto lm = log_of(med);
    if (!lm) continue;
    bool any = false;
    for (double v : l.test)
      if (const auto lv = log_of(v)) {
        test.push_back(*lv - *lm);
        if (latency) rise.push_back(v - med);
        any = true;
      }
    if (!any) continue;
    ++out.locators;
    for (double v : r) {
      ref.push_back(*log_of(v) - *lm);
      centred.push_back(ref.back());
    }
  }
  out.n_ref = static_cast<int64_t>(ref.size());
  out.n_test = static_cast<int64_t>(test.size());
  if (ref.empty() || test.empty()) return out;
  const auto mw = stats::mann_whitney(test, ref, 1 - alpha);
  out.p_value = mw.p_value;
  out.estimate = worse_of(better, mw.shift);
  out.lo = std::expm1(mw.shift_lo);
  out.hi = std::expm1(mw.shift_hi);
  // The interval's end nearest no change, in the worse direction.
  const double near = better == Better::Lower ? std::max(0.0, mw.shift_lo) : std::min(0.0, mw.shift_hi);
  out.worse = worse_of(better, near);
  if (latency) out.ms_rise = stats::median(rise);
  // The shift a two-sided rank test at alpha tells from noise half the time on
  // samples this size and spread: z(1 - alpha/2) standard errors of a
  // difference in location, times sqrt(pi/3) for the rank test's efficiency
  // against the mean's on normal data.
  const double test_median = stats::median(test);
  for (double v : test) centred.push_back(v - test_median);
  const double sd = robust_sd(std::move(centred));
  const double se = sd * std::sqrt(1.0 / static_cast<double>(ref.size()) + 1.0 / static_cast<double>(test.size()));
  const double delta = stats::normal_quantile(1 - alpha / 2) * se * std::sqrt(M_PI / 3);
  out.sees = worse_of(better, better == Better::Lower ? delta : -delta);
  return out;
}

ChangeSpan change_span(std::vector<TimedRatio> pts) {
  ChangeSpan out;
  std::sort(pts.begin(), pts.end(),
            [](const TimedRatio& a, const TimedRatio& b) { return a.t_ms != b.t_ms ? a.t_ms < b.t_ms : a.id < b.id; });
  const auto n = static_cast<int64_t>(pts.size());
  if (n < 4) return out;
  // Blocks of consecutive rows keep the search at B^2 / 2 spans whatever the
  // stage's length (B = kChangeBlocks).
  constexpr int64_t kChangeBlocks = 100;
  const int64_t blocks = std::min(n, kChangeBlocks);
  std::vector<int64_t> start(blocks + 1);
  for (int64_t b = 0; b <= blocks; ++b) start[b] = b * n / blocks;
  std::vector<double> prefix(n + 1, 0);
  for (int64_t i = 0; i < n; ++i) prefix[i + 1] = prefix[i] + pts[i].log_ratio;
  // The span [a, b) of blocks whose mean differs most from the rest's, in
  // standard-error units of a difference of two means (binary segmentation's
  // statistic for one epidemic change, equal variances).
  double best = 0;
  int64_t best_a = 0, best_b = 0;
  for (int64_t a = 0; a < blocks; ++a)
    for (int64_t b = a + 1; b <= blocks; ++b) {
      const int64_t lo = start[a], hi = start[b], in = hi - lo, rest = n - in;
      if (in == 0 || rest == 0) continue;
      const double mean_in = (prefix[hi] - prefix[lo]) / static_cast<double>(in);
      const double mean_out = (prefix[n] - prefix[hi] + prefix[lo]) / static_cast<double>(rest);
      const double score = std::fabs(mean_in - mean_out) *
                           std::sqrt(static_cast<double>(in) * static_cast<double>(rest) / static_cast<double>(n));
      if (score > best) best = score, best_a = lo, best_b = hi;
    }
  if (best_b <= best_a) return out;
  // A span from the start is the same split as the rest from its end on:
  // name the part that moved away from the early rows.
  if (best_a == 0 && best_b < n) best_a = best_b, best_b = n;
  std::vector<double> in, rest;
  for (int64_t i = 0; i < n; ++i) (i >= best_a && i < best_b ? in : rest).push_back(pts[i].log_ratio);
  out.found = true;
  out.from_ms = pts[best_a].t_ms;
  out.to_ms = pts[best_b - 1].t_ms;
  out.to_end = best_b == n;
  out.from_start = best_a == 0;
  out.n_in = static_cast<int64_t>(in.size());
  out.n_out = static_cast<int64_t>(rest.size());
  out.ratio_in = std::exp(stats::median(std::move(in)));
  out.ratio_out = std::exp(stats::median(std::move(rest)));
  return out;
}

std::string describe_span(const ChangeSpan& s, int64_t stage_start_ms, std::string_view reference) {
  if (!s.found) return {};
  auto at = [&](int64_t t) { return format_duration(std::max<int64_t>(0, t - stage_start_ms)); };
  std::string where;
  if (s.from_start && s.to_end) return {};
  if (s.to_end)
    where = "from " + at(s.from_ms) + " into the stage to its end";
  else if (s.from_start)
    where = "from the stage's start to " + at(s.to_ms) + " into it";
  else
    where = "from " + at(s.from_ms) + " to " + at(s.to_ms) + " into the stage";
  return format("the rows split best %s (%s, %lld rows): x%s %s there against x%s in the other %lld", where.c_str(),
                format_duration(s.to_ms - s.from_ms).c_str(), static_cast<long long>(s.n_in), num(s.ratio_in).c_str(),
                std::string(reference).c_str(), num(s.ratio_out).c_str(), static_cast<long long>(s.n_out));
}

}  // namespace soak::judge_detail
