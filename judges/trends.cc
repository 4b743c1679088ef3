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
  // Process samples come with time, not with probe rows: no kinds.
  j.need({"footprint",
          static_cast<int64_t>(x.size()),
          static_cast<int64_t>(min_n),
          format("blocks of process samples (%zu samples)", s.size()),
          {},
          format("a footprint slope over %s MB/h (soak.max_footprint_slope_mb_per_h)",
                 num(rules.max_footprint_slope_mb_per_h).c_str()),
          0});
  if (x.size() < min_n) {
    slope.result = MetricResult::Insufficient;
    slope.reason = format("%zu process samples in %zu blocks, need %zu blocks", s.size(), x.size(), min_n);
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

// Drift of one figure, decode rate, and TTFT and wall time, which still judge a
// runtime whose answers arrive in one chunk (Ollama's whole tool calls: timing
// artifacts for rates, real times to first token and to done). One bound for
// all three, soak.max_decode_drift (15 %, the seeds' between-session spread,
// S4:183).
struct DriftFigure {
  const PerfMetric* metric;
  std::string_view name;
  std::string_view unit;
  std::string_view worse;  // what a failing drift did
};
constexpr DriftFigure kDriftFigures[] = {{&kDecodeTps, "decode_drift", "tok/s", "decode rate drifted down"},
                                         {&kTtft, "ttft_drift", "ms", "time to first token drifted up"},
                                         {&kWall, "wall_drift", "ms", "wall time drifted up"}};

// A locator's rows with the figure, in the order they were sent, and the size
// of its first and last quarters: a quarter of *its* rows, so a slowdown that
// starts a third of the way in is in its last quarter whenever the rows after
// it are (a quarter of the stage's time held none when the last part of the
// stage was the golden set's end run). Two rows or three give a quarter of
// one, which only the pooled rule reads.
struct LocatorSeries {
  Locator loc;
  std::vector<std::pair<const ProbeResult*, double>> rows;
  std::string_view source;
  size_t quarter() const { return rows.size() < 2 ? 0 : std::max<size_t>(1, rows.size() / 4); }
  std::vector<double> first() const {
    std::vector<double> v;
    for (size_t i = 0; i < quarter(); ++i) v.push_back(rows[i].second);
    return v;
  }
  std::vector<double> last() const {
    std::vector<double> v;
    for (size_t i = rows.size() - quarter(); i < rows.size(); ++i) v.push_back(rows[i].second);
    return v;
  }
};

// A locator whose prompts differ in size (an agent session's context band
// holds turns from its low end to its high end, and a session passes through
// it in a few turns) mixes cheap and dear rows; in send order its first
// quarter can be one session's low end and its last another's high end, which
// reads as drift on a healthy runtime (seen in the campaign simulation: +25 %
// TTFT over 20 rows). So each value is brought to the locator's median prompt
// size along the locator's own size curve: a Theil–Sen fit of log value on log
// prompt tokens over at most kSizeBins bin medians, its slope within
// [-kMaxSizeSlope, kMaxSizeSlope]. A slowdown that starts at some time hits
// every size alike and stays; locators of one size are left as they are.
constexpr size_t kSizeBins = 40;
constexpr double kMaxSizeSlope = 2.0;
constexpr double kMinSizeSpread = 1.1;  // largest / smallest prompt: below it, one size

void adjust_for_size(std::vector<std::pair<const ProbeResult*, double>>& rows) {
  std::vector<std::pair<double, double>> pts;  // log prompt tokens, log value
  for (const auto& [r, v] : rows)
    if (r->prompt_tokens && *r->prompt_tokens > 0 && v > 0)
      pts.emplace_back(std::log(static_cast<double>(*r->prompt_tokens)), std::log(v));
  if (pts.size() < 4 || pts.size() != rows.size()) return;
  std::sort(pts.begin(), pts.end());
  if (pts.back().first - pts.front().first < std::log(kMinSizeSpread)) return;
  std::vector<double> x, y;
  const size_t bins = std::min(kSizeBins, pts.size());
  for (size_t b = 0; b < bins; ++b) {
    const size_t lo = b * pts.size() / bins, hi = (b + 1) * pts.size() / bins;
    std::vector<double> xs, ys;
    for (size_t i = lo; i < hi; ++i) xs.push_back(pts[i].first), ys.push_back(pts[i].second);
    x.push_back(stats::median(std::move(xs)));
    y.push_back(stats::median(std::move(ys)));
  }
  const double slope = std::clamp(stats::theil_sen(x, y, 0.95).slope, -kMaxSizeSlope, kMaxSizeSlope);
  std::vector<double> sizes;
  for (const auto& p : pts) sizes.push_back(p.first);
  const double centre = stats::median(std::move(sizes));
  for (auto& [r, v] : rows) v *= std::exp(-slope * (std::log(static_cast<double>(*r->prompt_tokens)) - centre));
}

// The stage's timed rows per locator, end-of-stage runs left out (the golden
// set's: its answers are compared, not its speed, and it runs last).
std::vector<LocatorSeries> drift_series(const Context& c, const PerfMetric& m) {
  std::vector<LocatorSeries> out;
  for (const auto& [loc, rows] : pool_rows(measured_rows(c.cand))) {
    if (!perf_judged(loc.kind)) continue;
    RowFigures f = figures_of(m, rows);
    if (f.rows.empty()) continue;
    adjust_for_size(f.rows);
    out.push_back({loc, std::move(f.rows), f.source});
  }
  return out;
}

void drift_row(const Context& c, Judgement& j, const DriftFigure& d, const LocatorSeries& s) {
  const auto& rules = c.in.recipe.soak;
  std::vector<double> f = s.first(), l = s.last();
  auto m = metric(std::string(d.name) + "/" + locator_label(s.loc), MetricResult::Pass, "");
  m.n = static_cast<int64_t>(l.size());
  m.n_baseline = static_cast<int64_t>(f.size());
  const double fm = stats::median(f), lm = stats::median(l);
  const auto min_n = static_cast<size_t>(c.in.recipe.judge.min_samples);
  if (f.size() < min_n || l.size() < min_n || fm <= 0) {
    m.result = MetricResult::Insufficient;
    m.reason = format(
        "%zu rows in all: %zu in its first quarter, %zu in its last, need %zu each (pooled with the "
        "other locators in %s/pooled)",
        s.rows.size(), f.size(), l.size(), min_n, std::string(d.name).c_str());
    set_numbers(m, lm, fm, 0, 0, rules.max_decode_drift, 1);
    j.add(std::move(m));
    return;
  }
  const auto mw = stats::mann_whitney(l, f, c.confidence());
  const double sign = d.metric->better == Better::Higher ? -1.0 : 1.0;
  const double drift = sign * mw.shift / fm;  // > 0: the figure got worse
  const bool latency = d.metric->better == Better::Lower;
  const bool under_ms = latency && sign * mw.shift < static_cast<double>(c.in.recipe.judge.min_effect_ms);
  const bool fail = mw.p_value < c.in.recipe.judge.alpha && drift > rules.max_decode_drift && !under_ms;
  std::string reason = format(
      "its last quarter %s %s vs its first %s, shift %s [%s, %s], %s, limit %s (soak.max_decode_drift); n=%zu last, "
      "%zu first of %zu rows in send order; source %s",
      num(lm).c_str(), std::string(d.unit).c_str(), num(fm).c_str(), pct(mw.shift / fm).c_str(),
      pct(mw.shift_lo / fm).c_str(), pct(mw.shift_hi / fm).c_str(), pval(mw.p_value).c_str(),
      pct(sign * rules.max_decode_drift).c_str(), l.size(), f.size(), s.rows.size(), std::string(s.source).c_str());
  if (under_ms && drift > rules.max_decode_drift && mw.p_value < c.in.recipe.judge.alpha)
    reason += format("; %s ms worse, under the absolute floor %lld ms (judge.min_effect_ms)", num(mw.shift).c_str(),
                     static_cast<long long>(c.in.recipe.judge.min_effect_ms));
  m.result = (fail ? MetricResult::Fail : MetricResult::Pass);
  m.reason = (fail ? std::string(d.worse) + ": " : std::string()) + reason;
  set_numbers(m, lm, fm, mw.shift_lo / fm, mw.shift_hi / fm, rules.max_decode_drift, mw.p_value);
  if (fail) j.find(Severity::Failure, m.metric + ": " + m.reason);
  j.add(std::move(m));
}

// The same drift pooled over every locator (`<figure>/pooled`): each row of a
// locator's first and last quarters as its ratio to that locator's first-quarter
// median, one rank test over all of them, so thin locators add up (a band of
// the agent session that appears at one phase of each session, a long-context
// size run every 6 h). This is the soak's decisive drift rule: it needs
// judge.min_samples rows in each of its pooled quarters, and its reason names
// where the rows split best (judges/pooled.cc change_span).
void pooled_drift(const Context& c, Judgement& j, const DriftFigure& d, const std::vector<LocatorSeries>& series) {
  const auto& rules = c.in.recipe.soak;
  const int64_t min_effect_ms = c.in.recipe.judge.min_effect_ms;
  const bool latency = d.metric->better == Better::Lower;
  std::vector<LocatorValues> locs;
  std::vector<TimedRatio> pts;
  std::vector<ProbeKind> kinds;
  for (const LocatorSeries& s : series) {
    if (std::find(kinds.begin(), kinds.end(), s.loc.kind) == kinds.end()) kinds.push_back(s.loc.kind);
    if (s.quarter() == 0) continue;
    std::vector<double> first = s.first();
    locs.push_back({first, s.last()});
    const double ref = stats::median(std::move(first));
    if (!(ref > 0)) continue;
    for (const auto& [r, v] : s.rows)
      if (v > 0) pts.push_back({r->started_wall_ms, r->id, std::log(v / ref)});
  }
  const Pooled p = pooled_change(d.metric->better, latency, locs, c.in.recipe.judge.alpha);
  const std::string name = std::string(d.name) + "/pooled";
  const int64_t had = std::min(p.n_ref, p.n_test);
  const double sees = std::max(p.sees, rules.max_decode_drift);
  j.need({std::string(d.name), had, c.in.recipe.judge.min_samples,
          format("rows in the pooled first and last quarters (%d locators)", p.locators), kinds,
          format("a drift of %s or more (soak.max_decode_drift %s; alpha %s on these rows)", pct(sees).c_str(),
                 pct(rules.max_decode_drift).c_str(), num(c.in.recipe.judge.alpha).c_str()),
          sees});
  if (p.n_ref == 0 || p.n_test == 0) return;  // the evidence row says it is short
  auto m = metric(name, MetricResult::Pass, "");
  m.n = p.n_test;
  m.n_baseline = p.n_ref;
  set_numbers(m, p.estimate, 0, p.lo, p.hi, rules.max_decode_drift, p.p_value);
  std::string reason = format(
      "%lld rows of %d locators' last quarters against %lld of their first quarters, each as its ratio to its "
      "locator's first-quarter median: %s worse (%s at the interval's end nearest no change), %s, limit %s "
      "(soak.max_decode_drift)",
      static_cast<long long>(p.n_test), p.locators, static_cast<long long>(p.n_ref), pct(p.estimate).c_str(),
      pct(p.worse).c_str(), pval(p.p_value).c_str(), pct(rules.max_decode_drift).c_str());
  if (latency) reason += format("; median rise %s ms", num(p.ms_rise).c_str());
  const bool significant = p.p_value < c.in.recipe.judge.alpha;
  const bool under_ms = latency && p.ms_rise < static_cast<double>(min_effect_ms);
  const bool fail = significant && p.worse > rules.max_decode_drift && !under_ms;
  if (significant && p.worse > rules.max_decode_drift && under_ms)
    reason += format(", under the absolute floor %lld ms (judge.min_effect_ms)", static_cast<long long>(min_effect_ms));
  // Where it changed: named whenever the drift is significant, so a slowdown
  // under the floor still says when it began.
  if (significant && !c.cand.empty()) {
    const std::string where = describe_span(change_span(std::move(pts)), c.cand.front()->started_wall_ms,
                                            "their locators' first-quarter medians");
    if (!where.empty()) reason += "; " + where;
  }
  if (fail) {
    m.result = MetricResult::Fail;
    reason = std::string(d.worse) + ": " + reason;
    j.find(Severity::Failure, name + ": " + reason);
  }
  m.reason = reason;
  j.add(std::move(m));
}

void drift(const Context& c, Judgement& j) {
  for (const DriftFigure& d : kDriftFigures) {
    const std::vector<LocatorSeries> series = drift_series(c, *d.metric);
    if (series.empty()) continue;  // no row of the stage has this figure (a pooling candidate's decode)
    for (const LocatorSeries& s : series) drift_row(c, j, d, s);
    pooled_drift(c, j, d, series);
  }
}

// Completed requests, the first quarter of the stage's attempts in the order
// they were sent against its last quarter (its end-of-stage runs left out).
void completion_rate(const Context& c, Judgement& j) {
  std::vector<const ProbeResult*> attempts;
  for (const ProbeResult* r : measured_rows(c.cand))
    if (is_completion(*r) && !is_harness(*r)) attempts.push_back(r);
  const size_t q = attempts.size() / 4;
  int64_t ok_f = 0, ok_l = 0, ok_all = 0;
  for (size_t i = 0; i < attempts.size(); ++i) {
    const bool ok = is_clean(*attempts[i]);
    ok_all += ok;
    if (i < q) ok_f += ok;
    if (i >= attempts.size() - q) ok_l += ok;
  }
  const auto n = static_cast<int64_t>(q);
  const double hours =
      c.cand.empty()
          ? 1.0
          : std::max(1.0, static_cast<double>(c.cand.back()->started_wall_ms - c.cand.front()->started_wall_ms)) /
                kMsPerHour;
  const int min_n = c.in.recipe.judge.min_samples;
  j.need({"completion_rate", n, min_n, "attempts in each of the first and last quarters",
          probe_kinds_for(TaskKind::SoakTraffic, c.in.recipe.workload), "", 0});
  auto m = metric("completion_rate", MetricResult::Pass, "");
  m.n = n;
  m.n_baseline = n;
  const double rl = n ? static_cast<double>(ok_l) / static_cast<double>(n) : 0;
  const double rf = n ? static_cast<double>(ok_f) / static_cast<double>(n) : 0;
  const auto ci = stats::wilson_interval(ok_l, n, c.confidence());
  std::string counts = format(
      "%lld of %lld completed in the last quarter of the attempts vs %lld of %lld in the first; %s completed/h "
      "over the stage",
      static_cast<long long>(ok_l), static_cast<long long>(n), static_cast<long long>(ok_f), static_cast<long long>(n),
      num(static_cast<double>(ok_all) / hours).c_str());
  if (n < min_n) {
    m.result = MetricResult::Insufficient;
    m.reason = counts + format("; need %d attempts in each", min_n);
    set_numbers(m, rl, rf, ci.lo, ci.hi, c.in.recipe.judge.alpha, 1);
    j.add(std::move(m));
    return;
  }
  const double p = stats::fisher_exact(n - ok_l, ok_l, n - ok_f, ok_f, stats::Alternative::Greater);
  // A fall a user would feel: more than the stage's failure tolerance
  // (gate.max_failure_ratio) in completed share.
  const double tolerance = c.in.recipe.gate.max_failure_ratio;
  const bool felt = rf - rl > tolerance;
  const bool fail = p < c.in.recipe.judge.alpha && felt;
  m.result = (fail ? MetricResult::Fail : MetricResult::Pass);
  m.reason = (fail ? "completion rate fell: " : "") + counts + ", " + pval(p) + " (Fisher, one-sided)" +
             format("; falls of %s points or less are none (gate.max_failure_ratio)", num(tolerance * 100).c_str());
  set_numbers(m, rl, rf, ci.lo, ci.hi, c.in.recipe.judge.alpha, p);
  if (fail) j.find(Severity::Failure, m.metric + ": " + m.reason);
  j.add(std::move(m));
}

}  // namespace

void judge_drift_evidence(const Context& c, Judgement& j) {
  drift(c, j);
  completion_rate(c, j);
}

void judge_trends(const Context& c, Judgement& j) {
  if (c.in.recipe.stage == StageKind::Canary || c.in.recipe.stage == StageKind::Gate) {
    swap_growth(c, j, "stage_swap_growth_mb", "swap used since the stage start");
    stage_swapouts(c, j);
  }
  if (c.in.recipe.stage != StageKind::Soak) return;
  stage_swapouts(c, j);
  footprint(c, j);
  swap_growth(c, j, "swap_growth_mb", "swap used");
  drift(c, j);
  completion_rate(c, j);
}

}  // namespace soak::judge_detail
