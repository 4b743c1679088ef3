// Soak trends (docs/DESIGN.md §3.6): footprint growth, swap growth, decode-rate
// drift and the completed-request rate over the stage; swap growth and
// swapouts from the stage start in the canary and the gate too (§3.9).
//
// Footprint: the candidate's processes summed per sample time. Samples every
// few seconds are strongly autocorrelated, so the trend is fitted on block
// medians (kTrendBlocks blocks over the stage): a Theil–Sen slope in MB/h with
// Sen's interval, failing when even the interval's lower end exceeds the bound
// (marginal when only the estimate does). Growth compares the final tenth of
// the stage with the initial tenth: it fails only when three quarters of the
// final samples are above the allowed growth, so a spike never counts.
// Row fields: footprint_slope_mb_per_h (estimate slope, lo/hi Sen interval,
// threshold bound); footprint_growth (estimate median growth, baseline initial
// MB, lo/hi growth at the final window's p25/p75, threshold max growth);
// swap_growth_mb likewise in MB; decode_drift (estimate last-quarter median,
// baseline first-quarter median, lo/hi the shift interval as a fraction,
// threshold max drift, p Mann–Whitney); completion_rate (estimate last-quarter
// ratio, baseline first-quarter ratio, lo/hi Wilson, p Fisher one-sided).
#include <algorithm>
#include <cmath>
#include <map>

#include "judges/internal.h"
#include "judges/stats.h"

namespace soak::judge_detail {

namespace {

constexpr int64_t kTrendBlocks = 168;        // an hour each over the default 7-day soak
constexpr double kEdgeFraction = 0.10;       // initial / final window for growth
constexpr double kQuarter = 0.25;            // first / last part for drift and completion rate
constexpr double kSustainedQuantile = 0.25;  // growth must hold for 3/4 of the final window
constexpr double kMB = 1e6;
constexpr double kMiB = 1024.0 * 1024.0;
constexpr double kLatestPart = 1.0 / 3;  // the stage's latest part, judged on its own for persistence
constexpr double kPersistShare = 0.5;    // ... which must still grow at half the whole stage's slope
constexpr double kMsPerHour = 3'600'000.0;

using Point = TrendPoint;
using Series = std::vector<Point>;  // sorted by time

std::vector<double> values_between(const Series& s, int64_t from, int64_t to) {
  std::vector<double> out;
  for (const auto& p : s)
    if (p.t >= from && p.t <= to) out.push_back(p.v);
  std::sort(out.begin(), out.end());
  return out;
}

struct Windows {
  std::vector<double> first, last;  // sorted
};
Windows edge_windows(const Series& s, double fraction) {
  const int64_t t0 = s.front().t, t1 = s.back().t;
  const auto w = static_cast<int64_t>(std::floor(static_cast<double>(t1 - t0) * fraction));
  return {values_between(s, t0, t0 + w), values_between(s, t1 - w, t1)};
}

}  // namespace

// Shared with judges/views.cc: what a report draws is what the judge fitted.
// Block medians: x in hours since the first sample, y the block's median.
void block_medians(const Series& s, std::vector<double>& x, std::vector<double>& y) {
  const int64_t t0 = s.front().t, span = std::max<int64_t>(1, s.back().t - t0);
  std::map<int64_t, std::vector<double>> blocks;
  for (const auto& p : s) {
    int64_t b = std::min<int64_t>(kTrendBlocks - 1, (p.t - t0) * kTrendBlocks / span);
    blocks[b].push_back(p.v);
  }
  for (auto& [b, vals] : blocks) {
    const double centre_ms = (static_cast<double>(b) + 0.5) * static_cast<double>(span) / kTrendBlocks;
    x.push_back(centre_ms / kMsPerHour);
    y.push_back(stats::median(std::move(vals)));
  }
}

Series footprint_series(const JudgeInput& in, std::string_view& source) {
  bool any_footprint = false;
  for (const auto& s : in.process_samples)
    if (s.candidate_id && *s.candidate_id == in.recipe.candidate_id && s.footprint_bytes) any_footprint = true;
  source = any_footprint ? "footprint" : "resident";
  // The candidate's processes summed per sample time, in integers so the sum
  // does not depend on the order the samples arrive in.
  std::map<int64_t, int64_t> by_time;
  for (const auto& s : in.process_samples) {
    if (!s.candidate_id || *s.candidate_id != in.recipe.candidate_id) continue;
    const auto bytes = any_footprint ? s.footprint_bytes : s.resident_bytes;
    if (bytes) by_time[s.wall_ms] += *bytes;
  }
  Series out;
  for (const auto& [t, v] : by_time) out.push_back({t, static_cast<double>(v) / kMB});
  return out;
}

namespace {

// Growth of the final window over the initial one, as a fraction (relative) or
// in the series' unit (absolute).
enum class GrowthUnit { Relative, Absolute };

// Whether footprint growth persists into the stage's latest part (its last
// third on its own), and the runtime's own cache cap: a cache that fills and
// then holds is not a leak (docs/DESIGN.md §3.6).
struct Plateau {
  bool persists = true;
  std::string text;              // "last third on its own +2.1 MB/h over 56 blocks"
  std::optional<double> cap_mb;  // the prompt-cache cap in MB (nullopt: none known, or unlimited)
  std::string cap_text;          // "llama-server's prompt-cache cap 8192 MiB (--cache-ram)"
};

void growth_row(const Context& c, Judgement& j, const Series& s, std::string name, std::string_view what,
                GrowthUnit unit, double threshold, std::string_view limit_text, Severity on_fail,
                const Plateau* plateau = nullptr) {
  const auto w = edge_windows(s, kEdgeFraction);
  auto m = metric(std::move(name), MetricResult::Pass, "");
  m.n = static_cast<int64_t>(s.size());
  const auto min_n = static_cast<size_t>(c.in.recipe.judge.min_samples);
  if (w.first.size() < min_n || w.last.size() < min_n) {
    m.result = MetricResult::Insufficient;
    m.reason = format("%zu samples in the initial and %zu in the final tenth, need %zu each", w.first.size(),
                      w.last.size(), min_n);
    j.add(std::move(m));
    return;
  }
  const double initial = stats::quantile_sorted(w.first, 0.5);
  auto growth = [&](double q) {
    const double v = stats::quantile_sorted(w.last, q);
    return unit == GrowthUnit::Relative ? stats::relative_change(v, initial) : v - initial;
  };
  const double mid = growth(0.5), sustained = growth(kSustainedQuantile), high = growth(1 - kSustainedQuantile);
  auto show = [&](double g) {
    return unit == GrowthUnit::Relative ? pct(g) : format("%s%s MB", g < 0 ? "" : "+", num(g).c_str());
  };
  std::string reason = format("%s %s MB initially; final tenth %s (p25 %s, p75 %s), limit %s",
                              std::string(what).c_str(), num(initial).c_str(), show(mid).c_str(),
                              show(sustained).c_str(), show(high).c_str(), std::string(limit_text).c_str());
  // A footprint that grew and then held: past the cache cap (plus the
  // ordinary growth allowance) it fails however flat it is now; under it, or
  // with no cap known, growth that stopped before the last third is a plateau.
  const double grown = stats::quantile_sorted(w.last, kSustainedQuantile) - initial;  // in the series' unit
  const double allowed_mb = plateau && plateau->cap_mb ? *plateau->cap_mb + threshold * initial : 0;
  if (plateau && plateau->cap_mb && sustained > threshold && grown > allowed_mb) {
    m.result = MetricResult::Fail;
    reason = format("grew %s MB, past %s plus the %s growth allowance (%s MB in all): ", num(grown).c_str(),
                    plateau->cap_text.c_str(), pct(threshold).c_str(), num(allowed_mb).c_str()) +
             reason + "; " + plateau->text;
    j.find(on_fail, m.metric + ": " + reason);
  } else if (plateau && sustained > threshold && !plateau->persists) {
    reason = "plateau, not a leak: grew and then held; " + reason + "; " + plateau->text +
             (plateau->cap_mb ? format("; %s MB under %s", num(grown).c_str(), plateau->cap_text.c_str())
                              : std::string("; no cache cap known"));
  } else if (sustained > threshold) {
    m.result = MetricResult::Fail;
    reason = "sustained growth: " + reason + (plateau ? "; " + plateau->text : std::string());
    j.find(on_fail, m.metric + ": " + reason);
  } else if (mid > threshold) {
    m.result = MetricResult::Marginal;
    reason = "growth above the limit in part of the final window: " + reason;
    j.find(Severity::Hold, m.metric + ": " + reason);
  }
  m.reason = reason;
  set_numbers(m, mid, initial, sustained, high, threshold, 1);
  j.add(std::move(m));
}

// Growth persists when the stage's last third on its own still rises at half
// the whole stage's rate or more: a steady leak does (about the same slope
// throughout); a cache that filled and then held does not (about 0). The
// whole stage's rate is the larger of its Theil-Sen slope and its first to
// last block's: a cache filled in a short step early on and held for the rest
// leaves most pairs of blocks flat and a Theil-Sen slope of 0, which is no
// rate to measure persistence against (through soakd against the fake
// runtime, such a plateau was rejected as sustained growth).
Plateau plateau_of(const Context& c, const std::vector<double>& x, const std::vector<double>& y,
                   const stats::TheilSen& whole) {
  Plateau p;
  const double from = x.back() * (1 - kLatestPart);
  std::vector<double> lx, ly;
  for (size_t i = 0; i < x.size(); ++i)
    if (x[i] >= from) lx.push_back(x[i]), ly.push_back(y[i]);
  const auto late = stats::theil_sen(lx, ly, c.confidence());
  const double span_h = x.back() - x.front();
  const double end_to_end = span_h > 0 ? (y.back() - y.front()) / span_h : 0;
  const double rate = std::max(whole.slope, end_to_end);
  // Too few blocks in the last third to tell: growth counts as persisting.
  const bool too_few = lx.size() < static_cast<size_t>(c.in.recipe.judge.min_samples);
  p.persists = too_few || rate <= 0 || late.slope >= kPersistShare * rate;
  p.text = format(
      "last third on its own %s MB/h over %zu blocks (%s: growth persists at %.0f%% of the whole "
      "stage's %s MB/h or more)",
      num(late.slope).c_str(), lx.size(), p.persists ? "persists" : "held", kPersistShare * 100, num(rate).c_str());
  if (const auto cap = c.in.recipe.cache_cap_mib; cap && *cap >= 0) {
    p.cap_mb = static_cast<double>(*cap) * kMiB / kMB;
    p.cap_text = format("the runtime's prompt-cache cap %lld MiB (launch fingerprint, llama-server --cache-ram)",
                        static_cast<long long>(*cap));
  }
  return p;
}

void footprint(const Context& c, Judgement& j) {
  std::string_view source;
  const Series s = footprint_series(c.in, source);
  const auto& rules = c.in.recipe.soak;
  const auto min_n = static_cast<size_t>(c.in.recipe.judge.min_samples);
  std::vector<double> x, y;
  if (!s.empty()) block_medians(s, x, y);
  auto slope = metric("footprint_slope_mb_per_h", MetricResult::Pass, "");
  slope.n = static_cast<int64_t>(s.size());
  if (x.size() < min_n) {
    slope.result = MetricResult::Insufficient;
    slope.reason = format("%zu process samples in %zu blocks, need %zu blocks", s.size(), x.size(), min_n);
    j.find(Severity::Inconclusive, "no footprint trend: " + slope.reason);
    j.add(std::move(slope));
    return;
  }
  const auto ts = stats::theil_sen(x, y, c.confidence());
  const Plateau plateau = plateau_of(c, x, y, ts);
  std::string reason = format(
      "Theil-Sen %s MB/h [%s, %s] over %zu block medians of %zu %s samples, bound %s MB/h "
      "(soak.max_footprint_slope_mb_per_h); %s",
      num(ts.slope).c_str(), num(ts.lo).c_str(), num(ts.hi).c_str(), x.size(), s.size(), std::string(source).c_str(),
      num(rules.max_footprint_slope_mb_per_h).c_str(), plateau.text.c_str());
  if (ts.lo > rules.max_footprint_slope_mb_per_h && !plateau.persists) {
    reason = "plateau, not a leak: the growth stopped before the last third; " + reason;
  } else if (ts.lo > rules.max_footprint_slope_mb_per_h) {
    slope.result = MetricResult::Fail;
    reason = "footprint grows: " + reason;
    j.find(Severity::Failure, slope.metric + ": " + reason);
  } else if (ts.slope > rules.max_footprint_slope_mb_per_h && plateau.persists) {
    slope.result = MetricResult::Marginal;
    reason = "slope above the bound, interval reaches below it: " + reason;
    j.find(Severity::Hold, slope.metric + ": " + reason);
  }
  slope.reason = reason;
  set_numbers(slope, ts.slope, 0, ts.lo, ts.hi, rules.max_footprint_slope_mb_per_h, 1);
  j.add(std::move(slope));
  growth_row(c, j, s, "footprint_growth", source, GrowthUnit::Relative, rules.max_footprint_growth,
             pct(rules.max_footprint_growth) + " (soak.max_footprint_growth)", Severity::Failure, &plateau);
}

// The candidate host's samples by (wall_ms, id).
std::vector<const HostSample*> host_series(const Context& c) {
  std::vector<const HostSample*> samples;
  for (const auto& h : c.in.host_samples)
    if (h.host_id == c.in.recipe.host_id) samples.push_back(&h);
  std::sort(samples.begin(), samples.end(), [](const HostSample* a, const HostSample* b) {
    return a->wall_ms != b->wall_ms ? a->wall_ms < b->wall_ms : a->id < b->id;
  });
  return samples;
}

// Swap used, growing: the soak's over its week (`swap_growth_mb`), and in the
// canary and gate over the whole stage from its start (`stage_swap_growth_mb`),
// with the guard's threshold (the guard itself only sees a 10-minute window, so
// growth creeping over 2 h or 24 h would pass it). One sustained-growth test.
void swap_growth(const Context& c, Judgement& j, const std::string& name, const std::string& what) {
  Series s;
  for (const HostSample* h : host_series(c))
    if (h->swap_used_bytes) s.push_back({h->wall_ms, static_cast<double>(*h->swap_used_bytes) / kMB});
  const double limit_mb = static_cast<double>(c.in.recipe.guard.swap_growth_bytes) / kMB;
  if (s.empty()) {
    auto m = metric(name, MetricResult::Insufficient, "no host samples with swap figures");
    set_numbers(m, 0, 0, 0, 0, limit_mb, 1);
    j.add(std::move(m));
    return;
  }
  growth_row(c, j, s, name, what, GrowthUnit::Absolute, limit_mb, num(limit_mb) + " MB", Severity::Failure);
}

// Every stage but smoke: swapouts over the whole stage (the counter's
// increments summed, so a reset of the counter never reads as a drop) against
// the guard's threshold.
void stage_swapouts(const Context& c, Judgement& j) {
  const int64_t limit = c.in.recipe.guard.swapouts_growth;
  int64_t total = 0, n = 0;
  std::optional<int64_t> last;
  for (const HostSample* h : host_series(c)) {
    if (!h->swapouts) continue;
    ++n;
    if (last && *h->swapouts > *last) total += *h->swapouts - *last;
    last = h->swapouts;
  }
  auto m = metric("stage_swapouts", MetricResult::Pass, "");
  m.n = n;
  set_numbers(m, static_cast<double>(total), 0, 0, 0, static_cast<double>(limit), 1);
  if (n < 2) {
    m.result = MetricResult::Insufficient;
    m.reason = "fewer than two host samples with a swapout counter";
  } else {
    m.reason = format("%lld swapouts since the stage start over %lld samples, limit %lld",
                      static_cast<long long>(total), static_cast<long long>(n), static_cast<long long>(limit));
    if (total > limit) {
      m.result = MetricResult::Fail;
      j.find(Severity::Failure, "stage_swapouts: " + m.reason);
    }
  }
  j.add(std::move(m));
}

struct Quarters {
  int64_t first_end, last_start;
};
Quarters quarters(const Context& c) {
  const int64_t t0 = c.cand.front()->started_wall_ms, t1 = c.cand.back()->started_wall_ms;
  const auto w = static_cast<int64_t>(std::floor(static_cast<double>(t1 - t0) * kQuarter));
  return {t0 + w, t1 - w};
}

// Drift of one figure per locator, last quarter against the first: decode
// rate, and TTFT and wall time, which still judge a runtime whose answers
// arrive in one chunk (Ollama's whole tool calls: timing artifacts for rates,
// real times to first token and to done). One bound for all three,
// soak.max_decode_drift (15 %, the seeds' between-session spread, S4:183).
struct DriftFigure {
  const PerfMetric* metric;
  std::string_view name;
  std::string_view unit;
  std::string_view worse;  // what a failing drift did
};
constexpr DriftFigure kDriftFigures[] = {{&kDecodeTps, "decode_drift", "tok/s", "decode rate drifted down"},
                                         {&kTtft, "ttft_drift", "ms", "time to first token drifted up"},
                                         {&kWall, "wall_drift", "ms", "wall time drifted up"}};

void drift_row(const Context& c, Judgement& j, const Locator& loc, const DriftFigure& d,
               const std::vector<const ProbeResult*>& first, const std::vector<const ProbeResult*>& last) {
  const auto& rules = c.in.recipe.soak;
  Extracted ex = extract(*d.metric, {&first, &last});
  if (ex.values[0].empty() && ex.values[1].empty()) return;
  const auto& f = ex.values[0];
  const auto& l = ex.values[1];
  auto m = metric(std::string(d.name) + "/" + locator_label(loc), MetricResult::Pass, "");
  m.n = static_cast<int64_t>(l.size());
  m.n_baseline = static_cast<int64_t>(f.size());
  const double fm = stats::median(f), lm = stats::median(l);
  const auto min_n = static_cast<size_t>(c.in.recipe.judge.min_samples);
  if (f.size() < min_n || l.size() < min_n || fm <= 0) {
    m.result = MetricResult::Insufficient;
    m.reason = format("%zu samples in the first quarter, %zu in the last, need %zu each", f.size(), l.size(), min_n);
    set_numbers(m, lm, fm, 0, 0, rules.max_decode_drift, 1);
    j.add(std::move(m));
    return;
  }
  const auto mw = stats::mann_whitney(l, f, c.confidence());
  const double sign = d.metric->better == Better::Higher ? -1.0 : 1.0;
  const double drift = sign * mw.shift / fm;  // > 0: the figure got worse
  const bool fail = mw.p_value < c.in.recipe.judge.alpha && drift > rules.max_decode_drift;
  std::string reason = format(
      "last quarter %s %s vs first %s, shift %s [%s, %s], %s, limit %s (soak.max_decode_drift); n=%zu last, %zu "
      "first; source %s",
      num(lm).c_str(), std::string(d.unit).c_str(), num(fm).c_str(), pct(mw.shift / fm).c_str(),
      pct(mw.shift_lo / fm).c_str(), pct(mw.shift_hi / fm).c_str(), pval(mw.p_value).c_str(),
      pct(sign * rules.max_decode_drift).c_str(), l.size(), f.size(), std::string(ex.source).c_str());
  m.result = (fail ? MetricResult::Fail : MetricResult::Pass);
  m.reason = (fail ? std::string(d.worse) + ": " : std::string()) + reason;
  set_numbers(m, lm, fm, mw.shift_lo / fm, mw.shift_hi / fm, rules.max_decode_drift, mw.p_value);
  if (fail) j.find(Severity::Failure, m.metric + ": " + m.reason);
  j.add(std::move(m));
}

void drift(const Context& c, Judgement& j, const Quarters& q) {
  for (const auto& [loc, rows] : pool_rows(c.cand)) {
    if (!perf_judged(loc.kind)) continue;
    std::vector<const ProbeResult*> first, last;
    for (const ProbeResult* r : rows) {
      if (r->started_wall_ms <= q.first_end) first.push_back(r);
      if (r->started_wall_ms >= q.last_start) last.push_back(r);
    }
    for (const DriftFigure& d : kDriftFigures) drift_row(c, j, loc, d, first, last);
  }
}

void completion_rate(const Context& c, Judgement& j, const Quarters& q) {
  int64_t n_f = 0, ok_f = 0, n_l = 0, ok_l = 0, ok_all = 0;
  for (const ProbeResult* r : c.cand) {
    if (is_harness(*r)) continue;
    const bool ok = is_clean(*r);
    ok_all += ok;
    if (r->started_wall_ms <= q.first_end) n_f++, ok_f += ok;
    if (r->started_wall_ms >= q.last_start) n_l++, ok_l += ok;
  }
  const double hours =
      std::max(1.0, static_cast<double>(c.cand.back()->started_wall_ms - c.cand.front()->started_wall_ms)) / kMsPerHour;
  auto m = metric("completion_rate", MetricResult::Pass, "");
  m.n = n_l;
  m.n_baseline = n_f;
  const double rl = n_l ? static_cast<double>(ok_l) / static_cast<double>(n_l) : 0;
  const double rf = n_f ? static_cast<double>(ok_f) / static_cast<double>(n_f) : 0;
  const auto ci = stats::wilson_interval(ok_l, n_l, c.confidence());
  std::string counts = format(
      "%lld of %lld completed in the last quarter vs %lld of %lld in the first; %s completed/h "
      "over the stage",
      static_cast<long long>(ok_l), static_cast<long long>(n_l), static_cast<long long>(ok_f),
      static_cast<long long>(n_f), num(static_cast<double>(ok_all) / hours).c_str());
  const int min_n = c.in.recipe.judge.min_samples;
  if (n_f < min_n || n_l < min_n) {
    m.result = MetricResult::Insufficient;
    m.reason = counts + format("; need %d attempts in each", min_n);
    set_numbers(m, rl, rf, ci.lo, ci.hi, c.in.recipe.judge.alpha, 1);
    j.add(std::move(m));
    return;
  }
  const double p = stats::fisher_exact(n_l - ok_l, ok_l, n_f - ok_f, ok_f, stats::Alternative::Greater);
  const bool fail = p < c.in.recipe.judge.alpha;
  m.result = (fail ? MetricResult::Fail : MetricResult::Pass);
  m.reason = (fail ? "completion rate fell: " : "") + counts + ", " + pval(p) + " (Fisher, one-sided)";
  set_numbers(m, rl, rf, ci.lo, ci.hi, c.in.recipe.judge.alpha, p);
  if (fail) j.find(Severity::Failure, m.metric + ": " + m.reason);
  j.add(std::move(m));
}

}  // namespace

void judge_trends(const Context& c, Judgement& j) {
  if (c.in.recipe.stage == StageKind::Canary || c.in.recipe.stage == StageKind::Gate) {
    swap_growth(c, j, "stage_swap_growth_mb", "swap used since the stage start");
    stage_swapouts(c, j);
  }
  if (c.in.recipe.stage != StageKind::Soak) return;
  stage_swapouts(c, j);
  footprint(c, j);
  swap_growth(c, j, "swap_growth_mb", "swap used");
  if (c.cand.empty()) return;
  const Quarters q = quarters(c);
  drift(c, j, q);
  completion_rate(c, j, q);
}

}  // namespace soak::judge_detail
