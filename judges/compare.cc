// Candidate versus baseline, one locator at a time, in every stage after smoke
// (docs/DESIGN.md §3.5): the canary's probes, the gate's and the soak's agent
// turns per context band and long-context rounds per size.
//
// Central figures: Mann–Whitney U on the raw samples, the size of the change
// taken from the Hodges–Lehmann shift relative to the baseline median. A
// significant change smaller than the effect floor is not a regression (with
// thousands of samples everything is significant); between the floor and
// floor + hold band a person decides. Tails: the candidate's p95/p99 (p5/p1
// for throughput) against the baseline's, significant when the candidate has
// more samples beyond the baseline's quantile than the baseline itself
// (Fisher). Error rates: Fisher, one-sided "candidate worse".
//
// Fresh long-context prefill with fewer than min_samples a side (a canary runs
// each size about twice) is judged by the few-sample rule: every candidate
// sample worse than every baseline sample by judge.few_sample_factor. Against a
// history baseline the effect floor is at least the baseline's own
// stage-to-stage spread (judges/spread.cc); the reason says which was used.
//
// A canary warm-up's rows (core/tasks.h TaskKind::Warmup) never enter a
// comparison, on either side; then timed rows measured above nominal thermal
// pressure are left out on both sides (judges/thermal.cc).
#include <algorithm>
#include <climits>
#include <cmath>
#include <map>

#include "judges/internal.h"
#include "judges/overlap.h"
#include "judges/stats.h"

namespace soak::judge_detail {

namespace {

struct TailLevel {
  double q;                // quantile on the bad side, for lower-is-better figures
  std::string_view upper;  // suffix when high is bad
  std::string_view lower;  // suffix when low is bad
  bool always;             // emitted whenever the central figure was compared
};
constexpr TailLevel kTails[] = {{0.95, ".p95", ".p5", true}, {0.99, ".p99", ".p1", false}};

// A quantile needs about one baseline sample beyond it to be judged at all.
int64_t tail_min_samples(double q) { return static_cast<int64_t>(std::llround(1 / (1 - q))); }

// The few-sample rule needs at least this many samples a side.
constexpr int64_t kFewSamplesMin = 2;

struct Pair {
  const std::vector<double>& cand;
  const std::vector<double>& base;
};

std::string sizes(int64_t n_c, int64_t n_b) {
  return format("n=%lld candidate, %lld baseline", static_cast<long long>(n_c), static_cast<long long>(n_b));
}

// What the candidate's rows are compared with: the baseline (its rows named
// "<metric>/<locator>"), or the candidate's own earlier stages ("self/...").
struct Reference {
  std::string prefix;          // "" or "self/"
  std::string what;            // "baseline", "its own earlier stages"
  bool by_interval = false;    // decide on the interval's end nearest no change, not the estimate
  bool history_floor = false;  // the effect floor is at least a history baseline's own spread
  bool self = false;           // the candidate against itself: judge.self_factor is the floor, no tail rule
};

// The effect floor of a comparison with the candidate's own earlier stages:
// judge.self_factor times worse, as a fraction (a time 2x longer is +100 %, a
// rate 2x lower -50 %).
double self_floor(const JudgeRules& rules, Better better) {
  return better == Better::Lower ? rules.self_factor - 1 : 1 - 1 / rules.self_factor;
}

Reference baseline_reference(const Context& c) {
  // The canary decides on the shift's estimate; the gate and the soak on the
  // end of its interval nearest to no change: they compare every band and
  // long-context size, some on six rounds a side, and a chance separation
  // there must not hold a healthy build.
  return {"", "baseline", c.in.recipe.stage != StageKind::Canary, c.in.recipe.baseline_mode == BaselineMode::History};
}

// The candidate against itself is always judged on the interval's end: its
// earlier stages ran other work beside these rows (the canary's heavy probes,
// the gate's back-to-back turns).
const Reference kSelf{"self/", "its own earlier stages", true, false, true};

class PoolJudge {
 public:
  PoolJudge(const Context& c, Judgement& j, const Locator& loc, const std::vector<const ProbeResult*>& cand,
            const std::vector<const ProbeResult*>& base, const Reference& ref)
      : c_(c), j_(j), loc_(loc), label_(locator_label(loc)), cand_(cand), base_(base), ref_(ref) {}

  // Returns how many metrics had enough samples on both sides.
  int run() {
    acceptance_note();
    for (const PerfMetric* pm : kPerfMetrics) {
      if (!perf_judged(loc_.kind) || (pm->fresh_only && loc_.cache_state != CacheState::Fresh)) continue;
      Extracted ex = extract(*pm, {&cand_, &base_});
      if (ex.values[0].empty()) continue;  // this workload does not produce the figure
      std::sort(ex.values[0].begin(), ex.values[0].end());
      std::sort(ex.values[1].begin(), ex.values[1].end());
      if (central(*pm, {ex.values[0], ex.values[1]}, ex.source)) {
        ++comparable_;
        // A tail is a hold, and hours apart under other load a tail moves
        // on a healthy build: the candidate against itself has none.
        if (!ref_.self)
          for (const auto& t : kTails) tail(*pm, t, {ex.values[0], ex.values[1]});
      }
    }
    acceptance_row();
    error_rate();
    return comparable_;
  }

 private:
  std::string name(std::string_view metric_name, std::string_view suffix = {}) const {
    return ref_.prefix + std::string(metric_name) + std::string(suffix) + "/" + label_;
  }

  bool central(const PerfMetric& pm, Pair v, std::string_view source) {
    const auto n_c = static_cast<int64_t>(v.cand.size()), n_b = static_cast<int64_t>(v.base.size());
    const int min_n = c_.in.recipe.judge.min_samples;
    const double cm = stats::quantile_sorted(v.cand, 0.5), bm = stats::quantile_sorted(v.base, 0.5);
    auto insufficient = [&](std::string why) {
      auto m = metric(name(pm.name), MetricResult::Insufficient, sizes(n_c, n_b) + "; " + why);
      m.n = n_c;
      m.n_baseline = n_b;
      set_numbers(m, cm, bm, 0, 0, c_.in.recipe.judge.effect_floor, 1);
      j_.add(std::move(m));
      return false;
    };
    if (n_b == 0) return insufficient("no baseline rows with this locator");
    if (n_c < min_n || n_b < min_n) {
      if (few_sample_rule_applies(pm) && n_c >= kFewSamplesMin && n_b >= kFewSamplesMin) return few_samples(pm, v);
      return insufficient(format("need %d on each side", min_n));
    }
    if (bm == 0) return insufficient("baseline median is 0");

    const auto& rules = c_.in.recipe.judge;
    const auto mw = stats::mann_whitney(v.cand, v.base, c_.confidence());
    const double scale = std::fabs(bm);
    const double sign = pm.better == Better::Lower ? 1.0 : -1.0;
    // > 0: the candidate is worse. The canary decides on the shift's estimate;
    // the gate and the soak on the end of its interval nearest to no change:
    // they compare every band and long-context size, some on six rounds a
    // side, and a chance separation there must not hold a healthy build.
    const double estimate_worse = sign * mw.shift / scale;
    const double interval_worse = (sign > 0 ? mw.shift_lo : -mw.shift_hi) / scale;
    const bool by_interval = ref_.by_interval;
    const double worse = by_interval ? interval_worse : estimate_worse;
    const bool significant = mw.p_value < rules.alpha;
    const Floor fl = floor_for(pm);

    // A latency a few milliseconds longer is no regression, whatever its
    // ratio: a cached first token of 5 ms against 8 ms is scheduling noise.
    const double worse_ms = worse * scale;
    const bool under_ms_floor = pm.better == Better::Lower && worse_ms < static_cast<double>(rules.min_effect_ms);

    MetricResult result = MetricResult::Pass;
    std::string verdict;
    if (significant && worse > fl.value && under_ms_floor) {
      verdict = format("significant but %s ms worse, under the absolute floor %lld ms (judge.min_effect_ms)",
                       num(worse_ms).c_str(), static_cast<long long>(rules.min_effect_ms));
    } else if (significant && worse > fl.value + rules.hold_band) {
      result = MetricResult::Fail;
      verdict = format("regression beyond effect floor %s + hold band %s", pct(fl.value).c_str(),
                       pct(rules.hold_band).c_str());
    } else if (significant && worse > fl.value) {
      result = MetricResult::Marginal;
      verdict = format("marginal regression between effect floor %s and %s", pct(fl.value).c_str(),
                       pct(fl.value + rules.hold_band).c_str());
    } else if (significant && worse > 0) {
      verdict = "significant but within the effect floor " + pct(fl.value);
    } else if (significant) {
      verdict = "significantly better";
    } else {
      verdict = "no significant change";
    }
    if (result != MetricResult::Pass && pm.figure != Figure::Ttft && !acceptance_.empty())
      verdict += " despite " + acceptance_;

    std::string reason =
        format("median %s vs %s %s, shift %s [%s, %s], %s (%s), %s; source %s", num(cm).c_str(), num(bm).c_str(),
               ref_.what.c_str(), pct(mw.shift / scale).c_str(), pct(mw.shift_lo / scale).c_str(),
               pct(mw.shift_hi / scale).c_str(), pval(mw.p_value).c_str(), mw.exact ? "exact" : "normal",
               sizes(n_c, n_b).c_str(), std::string(source).c_str());
    reason += format("; threshold %s + hold band %s (judge.hold_band), floor from %s", pct(fl.value).c_str(),
                     pct(rules.hold_band).c_str(), fl.from.c_str());
    if (by_interval) reason += "; judged on the interval's end nearest to no change, " + pct(worse) + " worse";
    auto m = metric(name(pm.name), result, verdict + ": " + reason);
    m.n = n_c;
    m.n_baseline = n_b;
    set_numbers(m, cm, bm, mw.shift_lo / scale, mw.shift_hi / scale, fl.value, mw.p_value);
    // The verdict's reason gets the short form; the metric row keeps it all.
    std::string brief = format("%s%s %s %s vs %s (median %s vs %s)", ref_.prefix.c_str(), std::string(pm.name).c_str(),
                               short_workload().c_str(), pct(mw.shift / scale).c_str(), ref_.what.c_str(),
                               num(cm).c_str(), num(bm).c_str());
    if (result != MetricResult::Pass && pm.figure != Figure::Ttft && !acceptance_.empty())
      brief += " despite " + acceptance_;
    if (result != MetricResult::Pass)
      brief += format(", threshold %s from %s", pct(fl.value).c_str(), fl.short_from.c_str());
    if (result == MetricResult::Fail) j_.find(Severity::Failure, brief);
    if (result == MetricResult::Marginal) j_.find(Severity::Hold, "marginal: " + brief);
    j_.add(std::move(m));
    return true;
  }

  // The effect floor in force and where it came from: judge.effect_floor, or
  // against a history baseline the baseline's own stage-to-stage spread when
  // that is larger (docs/DESIGN.md §3.5): a comparison across sessions must
  // not blame the sessions' drift on the build.
  struct Floor {
    double value = 0;
    std::string from, short_from;
  };
  Floor floor_for(const PerfMetric& pm) const {
    const auto& rules = c_.in.recipe.judge;
    Floor f{rules.effect_floor, "judge.effect_floor", "judge.effect_floor"};
    if (ref_.self) {
      const double v = self_floor(rules, pm.better);
      const std::string from = format("judge.self_factor %sx", num(rules.self_factor).c_str());
      return {v, from, from};
    }
    if (!ref_.history_floor) return f;
    const StageSpread sp = stage_spread(pm, base_, rules.min_samples);
    if (sp.stages < 2) {
      f.from += format(" (history baseline: %d stored stage(s) with %d samples, too few to measure its own spread)",
                       sp.stages, rules.min_samples);
      return f;
    }
    const std::string measured =
        format("the baseline's own stage-to-stage spread %s (%d stored stages, medians %s to %s)",
               pct(sp.fraction).c_str(), sp.stages, num(sp.low).c_str(), num(sp.high).c_str());
    if (sp.fraction <= rules.effect_floor) {
      f.from += " (larger than " + measured + ")";
      return f;
    }
    f.value = sp.fraction;
    f.from = measured + ", larger than judge.effect_floor " + pct(rules.effect_floor);
    f.short_from = "the baseline's stage-to-stage spread";
    return f;
  }

  // Fresh long-context prefill is slow and heavy: a canary runs each size
  // about twice, under min_samples. The few-sample rule still catches a gross
  // regression there: every candidate sample worse than every baseline sample
  // by judge.few_sample_factor (the candidate's best against the baseline's
  // worst). Under the null both sides come from one distribution, so the rank
  // order alone happens with probability 1 / C(n_c + n_b, n_b) (1/6 at 2 + 2);
  // the factor is what keeps it from firing: with the seeds' +-15 % between
  // sessions (S4:183) two samples of one build 3x apart do not occur
  // (docs/DESIGN.md §3.5 gives the error rate). Smaller regressions are left to
  // the rank test once the gate and soak rounds give five a side.
  bool few_sample_rule_applies(const PerfMetric& pm) const {
    return loc_.kind == ProbeKind::LongContext && loc_.cache_state == CacheState::Fresh &&
           pm.figure != Figure::DecodeTps;
  }
  bool few_samples(const PerfMetric& pm, Pair v) {
    const auto& rules = c_.in.recipe.judge;
    const auto n_c = static_cast<int64_t>(v.cand.size()), n_b = static_cast<int64_t>(v.base.size());
    const double cm = stats::quantile_sorted(v.cand, 0.5), bm = stats::quantile_sorted(v.base, 0.5);
    // The candidate's best against the baseline's worst, as "times worse".
    const bool lower_better = pm.better == Better::Lower;
    const double cand_best = lower_better ? v.cand.front() : v.cand.back();
    const double base_worst = lower_better ? v.base.back() : v.base.front();
    double times = 0;
    if (lower_better && base_worst > 0) times = cand_best / base_worst;
    if (!lower_better && cand_best > 0) times = base_worst / cand_best;
    const double p_order = 1.0 / binomial(n_c + n_b, n_b);
    const double apart = lower_better ? cand_best - base_worst : 0;  // ms, for a latency
    const bool fail =
        times >= rules.few_sample_factor && (!lower_better || apart >= static_cast<double>(rules.min_effect_ms));
    std::string reason = format(
        "few-sample rule (under %d a side): the candidate's best %s is %sx the baseline's worst %s (median %s vs %s), "
        "rejects at %sx (judge.few_sample_factor); %s; rank order alone p=%s",
        rules.min_samples, num(cand_best).c_str(), num(times).c_str(), num(base_worst).c_str(), num(cm).c_str(),
        num(bm).c_str(), num(rules.few_sample_factor).c_str(), sizes(n_c, n_b).c_str(), num(p_order).c_str());
    auto m =
        metric(name(pm.name), fail ? MetricResult::Fail : MetricResult::Insufficient,
               fail ? "regression: " + reason : reason + "; smaller changes wait for the gate's and soak's rounds");
    m.n = n_c;
    m.n_baseline = n_b;
    set_numbers(m, cm, bm, times, times, rules.few_sample_factor, p_order);
    if (fail) {
      ++comparable_;
      j_.find(Severity::Failure,
              format("%s%s %s %sx %s on every sample (best %s vs worst %s, %lld vs %lld samples), "
                     "threshold %sx from judge.few_sample_factor",
                     ref_.prefix.c_str(), std::string(pm.name).c_str(), short_workload().c_str(), num(times).c_str(),
                     ref_.what.c_str(), num(cand_best).c_str(), num(base_worst).c_str(), static_cast<long long>(n_c),
                     static_cast<long long>(n_b), num(rules.few_sample_factor).c_str()));
    }
    j_.add(std::move(m));
    return false;  // no tail rows on so few samples
  }
  static double binomial(int64_t n, int64_t k) {
    double r = 1;
    for (int64_t i = 1; i <= k; ++i) r = r * static_cast<double>(n - k + i) / static_cast<double>(i);
    return r;
  }

  // "long_context/32768/fresh", "burst/4": enough to name the workload in a sentence.
  std::string short_workload() const {
    std::string w = loc_.workload_id.empty() ? std::string(to_string(loc_.kind)) : std::string(loc_.workload_id);
    if (loc_.client_concurrency > 1 && w.find(std::to_string(loc_.client_concurrency)) == std::string::npos)
      w += " x" + std::to_string(loc_.client_concurrency);
    return w;
  }

  void tail(const PerfMetric& pm, const TailLevel& level, Pair v) {
    const auto n_c = static_cast<int64_t>(v.cand.size()), n_b = static_cast<int64_t>(v.base.size());
    const int64_t min_n = tail_min_samples(level.q);
    if (!level.always && (n_c < min_n || n_b < min_n)) return;
    const bool high_bad = pm.better == Better::Lower;
    const double q = high_bad ? level.q : 1 - level.q;
    const double cq = stats::quantile_sorted(v.cand, q), bq = stats::quantile_sorted(v.base, q);
    auto m = metric(name(pm.name, high_bad ? level.upper : level.lower), MetricResult::Pass, "");
    m.n = n_c;
    m.n_baseline = n_b;
    const auto& rules = c_.in.recipe.judge;
    if (n_c < min_n || n_b < min_n) {
      m.result = MetricResult::Insufficient;
      m.reason = sizes(n_c, n_b) + format("; need %lld on each side for this quantile", static_cast<long long>(min_n));
      set_numbers(m, cq, bq, 0, 0, rules.tail_tolerance, 1);
      j_.add(std::move(m));
      return;
    }
    auto beyond = [&](const std::vector<double>& s) {
      return static_cast<int64_t>(
          std::count_if(s.begin(), s.end(), [&](double x) { return high_bad ? x > bq : x < bq; }));
    };
    const int64_t k_c = beyond(v.cand), k_b = beyond(v.base);
    const double p = stats::fisher_exact(k_c, n_c - k_c, k_b, n_b - k_b, stats::Alternative::Greater);
    const double worse = (high_bad ? 1.0 : -1.0) * stats::relative_change(cq, bq);
    const auto ci = stats::wilson_interval(k_c, n_c, c_.confidence());
    const bool under_ms_floor = high_bad && cq - bq < static_cast<double>(rules.min_effect_ms);
    const bool regression = bq != 0 && worse > rules.tail_tolerance && p < rules.alpha && !under_ms_floor;
    std::string reason = format(
        "%s vs %s baseline (%s worse, tolerance %s from judge.tail_tolerance); beyond the baseline's quantile: %lld of "
        "%lld candidate vs %lld of %lld baseline, %s",
        num(cq).c_str(), num(bq).c_str(), pct(worse).c_str(), pct(rules.tail_tolerance).c_str(),
        static_cast<long long>(k_c), static_cast<long long>(n_c), static_cast<long long>(k_b),
        static_cast<long long>(n_b), pval(p).c_str());
    if (!regression && under_ms_floor && worse > rules.tail_tolerance && p < rules.alpha)
      reason += format("; under the absolute floor %lld ms (judge.min_effect_ms)",
                       static_cast<long long>(rules.min_effect_ms));
    m.result = (regression ? MetricResult::Marginal : MetricResult::Pass);
    m.reason = (regression ? "tail regression: " : "") + reason;
    set_numbers(m, cq, bq, ci.lo, ci.hi, rules.tail_tolerance, p);
    if (regression)
      j_.find(
          Severity::Hold,
          format(
              "tail: %s%s %s %s worse than %s (%s vs %s)", ref_.prefix.c_str(),
              m.metric.substr(ref_.prefix.size(), m.metric.find('/', ref_.prefix.size()) - ref_.prefix.size()).c_str(),
              short_workload().c_str(), pct(worse).c_str(), ref_.what.c_str(), num(cq).c_str(), num(bq).c_str()));
    j_.add(std::move(m));
  }

  struct Drafts {
    int64_t rows = 0, drafted = 0, accepted = 0;
    double ratio() const { return drafted ? static_cast<double>(accepted) / static_cast<double>(drafted) : 0; }
  };
  static Drafts drafts(const std::vector<const ProbeResult*>& rows) {
    Drafts d;
    for (const ProbeResult* r : rows) {
      if (!is_clean(*r) || !r->server_draft_n || *r->server_draft_n <= 0) continue;
      ++d.rows;
      d.drafted += *r->server_draft_n;
      d.accepted += r->server_draft_accepted.value_or(0);
    }
    return d;
  }

  // Speculative decoding is judged by wall latency; acceptance is evidence
  // beside it and never excuses a slower figure.
  void acceptance_note() {
    cand_drafts_ = drafts(cand_);
    if (cand_drafts_.drafted > 0) acceptance_ = format("%.1f%% draft acceptance", cand_drafts_.ratio() * 100);
  }
  void acceptance_row() {
    if (cand_drafts_.drafted == 0) return;
    const Drafts b = drafts(base_);
    auto m = metric(name("draft_acceptance"), MetricResult::Pass,
                    format("%lld of %lld drafted tokens accepted (baseline %lld of %lld); recorded beside wall "
                           "latency, which is what speculative decoding is judged by",
                           static_cast<long long>(cand_drafts_.accepted), static_cast<long long>(cand_drafts_.drafted),
                           static_cast<long long>(b.accepted), static_cast<long long>(b.drafted)));
    m.n = cand_drafts_.rows;
    m.n_baseline = b.rows;
    set_numbers(m, cand_drafts_.ratio(), b.ratio(), 0, 0, 0, 1);
    j_.add(std::move(m));
  }

  void error_rate() {
    auto count = [](const std::vector<const ProbeResult*>& rows, int64_t& attempts, int64_t& failures) {
      for (const ProbeResult* r : rows) {
        if (is_harness(*r)) continue;
        ++attempts;
        if (counts_against(*r)) ++failures;
      }
    };
    int64_t n_c = 0, f_c = 0, n_b = 0, f_b = 0;
    count(cand_, n_c, f_c);
    count(base_, n_b, f_b);
    if (n_c == 0) return;
    const auto& rules = c_.in.recipe.judge;
    const double rc = static_cast<double>(f_c) / static_cast<double>(n_c);
    const double rb = n_b ? static_cast<double>(f_b) / static_cast<double>(n_b) : 0;
    const auto ci = stats::wilson_interval(f_c, n_c, c_.confidence());
    auto m = metric(name("error_rate"), MetricResult::Pass, "");
    m.n = n_c;
    m.n_baseline = n_b;
    std::string counts = format("%lld of %lld failed vs %lld of %lld baseline", static_cast<long long>(f_c),
                                static_cast<long long>(n_c), static_cast<long long>(f_b), static_cast<long long>(n_b));
    if (n_c < rules.min_samples || n_b < rules.min_samples) {
      m.result = MetricResult::Insufficient;
      m.reason = counts + format("; need %d attempts on each side", rules.min_samples);
      set_numbers(m, rc, rb, ci.lo, ci.hi, rules.alpha, 1);
      j_.add(std::move(m));
      return;
    }
    ++comparable_;
    const double p = stats::fisher_exact(f_c, n_c - f_c, f_b, n_b - f_b, stats::Alternative::Greater);
    // A rise a user would feel: at least the failures tolerated at all
    // (judge.max_failure_ratio, 1 point), so 1.1 % against 1.0 % over a week
    // of rows is no regression however significant.
    const bool felt = rc - rb > rules.max_failure_ratio;
    const bool fail = p < rules.alpha && felt;
    m.result = (fail ? MetricResult::Fail : MetricResult::Pass);
    m.reason = (fail ? "error rate higher than baseline: " : "") + counts + ", " + pval(p) +
               " (Fisher, one-sided; significant below judge.alpha " + num(rules.alpha) + ")" +
               format("; rises under %s points are no regression (judge.max_failure_ratio)",
                      num(rules.max_failure_ratio * 100).c_str());
    if (p < rules.alpha && !felt) m.reason += format(": %s points higher", num((rc - rb) * 100).c_str());
    set_numbers(m, rc, rb, ci.lo, ci.hi, rules.alpha, p);
    if (fail)
      j_.find(Severity::Failure,
              ref_.prefix + "error rate " + short_workload() + " higher than " + ref_.what + ": " + counts);
    j_.add(std::move(m));
  }

  const Context& c_;
  Judgement& j_;
  const Locator& loc_;
  const std::string label_;
  const std::vector<const ProbeResult*>& cand_;
  const std::vector<const ProbeResult*>& base_;
  const Reference& ref_;
  Drafts cand_drafts_;
  std::string acceptance_;
  int comparable_ = 0;
};

// The effect floor of a pooled comparison: judge.effect_floor, against a
// history baseline at least the largest stage-to-stage spread any of its
// locators measures (a pooled comparison must not blame on the build what one
// of its workloads drifted between sessions).
struct PooledFloor {
  double value = 0;
  std::string from;
};
PooledFloor pooled_floor(const Context& c, const PerfMetric& pm, const Pools& ref, const Reference& how) {
  const auto& rules = c.in.recipe.judge;
  PooledFloor f{rules.effect_floor, "judge.effect_floor"};
  if (how.self) return {self_floor(rules, pm.better), format("judge.self_factor %sx", num(rules.self_factor).c_str())};
  if (!how.history_floor) return f;
  for (const auto& [loc, rows] : ref) {
    const StageSpread sp = stage_spread(pm, rows, rules.min_samples);
    if (sp.stages >= 2 && sp.fraction > f.value)
      f = {sp.fraction, format("the history baseline's largest stage-to-stage spread %s (%s)", pct(sp.fraction).c_str(),
                               locator_label(loc).c_str())};
  }
  return f;
}

// One figure pooled over every locator both sides ran (`<figure>/pooled`,
// `self/<figure>/pooled`; judges/pooled.cc): each candidate row as its ratio to
// its locator's reference median against the reference rows' own ratios, so
// locators too thin to compare alone add up. A decisive rule: with a
// reference that ran the same work it needs judge.min_samples rows a side,
// and the stage is inconclusive without them. Decided on the interval's end
// nearest no change; a latency needs judge.min_effect_ms too.
int pooled_compare(const Context& c, Judgement& j, const Pools& cand, const Pools& ref, const Reference& how) {
  const auto& rules = c.in.recipe.judge;
  int decided = 0;
  for (const PerfMetric* pm : kPerfMetrics) {
    std::vector<LocatorValues> locs;
    std::vector<ProbeKind> kinds;
    for (const auto& [loc, rows] : cand) {
      if (!perf_judged(loc.kind) || (pm->fresh_only && loc.cache_state != CacheState::Fresh)) continue;
      auto it = ref.find(loc);
      if (it == ref.end()) continue;
      Extracted ex = extract(*pm, {&rows, &it->second});
      if (ex.values[0].empty() && ex.values[1].empty()) continue;
      if (std::find(kinds.begin(), kinds.end(), loc.kind) == kinds.end()) kinds.push_back(loc.kind);
      locs.push_back({std::move(ex.values[1]), std::move(ex.values[0])});
    }
    if (locs.empty()) continue;  // nothing both sides ran produces this figure
    const bool latency = pm->better == Better::Lower;
    const Pooled p = pooled_change(pm->better, latency, locs, rules.alpha);
    const PooledFloor fl = pooled_floor(c, *pm, ref, how);
    const std::string rule = how.prefix + std::string(pm->name);
    const double sees = std::max(p.sees, fl.value);
    // A canary runs each long-context size about twice: its fresh prompt rate
    // is the few-sample rule's to judge (gross regressions), and smaller ones
    // are the gate's rounds' to decide; there it is no decisive rule.
    // The candidate against itself is a check beside the stage's own rules,
    // not one a promotion rests on.
    EvidenceNeed need{
        rule,
        std::min(p.n_ref, p.n_test),
        rules.min_samples,
        format("rows a side pooled over %d locators with %s", p.locators, how.what.c_str()),
        kinds,
        format("a change of %s or more against %s (effect floor %s from %s; alpha %s on these rows)", pct(sees).c_str(),
               how.what.c_str(), pct(fl.value).c_str(), fl.from.c_str(), num(rules.alpha).c_str()),
        sees};
    need.decisive = how.prefix.empty() && !(c.in.recipe.stage == StageKind::Canary && pm->fresh_only);
    j.need(std::move(need));
    if (p.n_ref == 0 || p.n_test == 0) continue;
    if (std::min(p.n_ref, p.n_test) >= rules.min_samples) ++decided;
    const bool significant = p.p_value < rules.alpha;
    const bool under_ms = latency && p.ms_rise < static_cast<double>(rules.min_effect_ms);
    MetricResult result = MetricResult::Pass;
    if (significant && !under_ms && p.worse > fl.value + rules.hold_band)
      result = MetricResult::Fail;
    else if (significant && !under_ms && p.worse > fl.value)
      result = MetricResult::Marginal;
    std::string reason = format(
        "%lld candidate rows of %d locators against %lld of %s, each as its ratio to its locator's median there: "
        "%s worse (%s at the interval's end nearest no change), %s; threshold %s from %s + hold band %s",
        static_cast<long long>(p.n_test), p.locators, static_cast<long long>(p.n_ref), how.what.c_str(),
        pct(p.estimate).c_str(), pct(p.worse).c_str(), pval(p.p_value).c_str(), pct(fl.value).c_str(), fl.from.c_str(),
        pct(rules.hold_band).c_str());
    if (latency) reason += format("; median rise %s ms", num(p.ms_rise).c_str());
    if (significant && under_ms && p.worse > fl.value)
      reason += format(", under the absolute floor %lld ms (judge.min_effect_ms)",
                       static_cast<long long>(rules.min_effect_ms));
    auto m = metric(rule + "/pooled", result, reason);
    m.n = p.n_test;
    m.n_baseline = p.n_ref;
    set_numbers(m, p.estimate, 0, p.lo, p.hi, fl.value, p.p_value);
    const std::string brief =
        format("%s pooled over %d locators %s worse than %s (threshold %s from %s)", rule.c_str(), p.locators,
               pct(p.worse).c_str(), how.what.c_str(), pct(fl.value).c_str(), fl.from.c_str());
    if (result == MetricResult::Fail) j.find(Severity::Failure, brief);
    if (result == MetricResult::Marginal) j.find(Severity::Hold, "marginal: " + brief);
    j.add(std::move(m));
  }
  return decided;
}

// The gate and the soak: their agent turns per context band and long-context
// rounds per size against the baseline's own rows of the same locator (its
// gate and soak, interleaved or from history). They stand on their own rules
// first; a missing baseline or a locator the baseline never ran is noted, not
// inconclusive.
void compare_later_stage(const Context& c, const std::vector<const ProbeResult*>& cand_rows,
                         const std::vector<const ProbeResult*>& base_rows, Judgement& j) {
  if (!c.in.recipe.baseline_id) return;  // a first build: nothing to compare with
  const std::string stage(to_string(c.in.recipe.stage));
  if (c.in.recipe.baseline_mode == BaselineMode::None || c.base.empty()) {
    j.add(metric("baseline", MetricResult::Insufficient,
                 "the baseline has no stored rows to compare this " + stage + " with: judged on its own rules"));
    return;
  }
  const Pools cand = pool_rows(cand_rows), base = pool_rows(base_rows);
  const Reference how = baseline_reference(c);
  int compared = 0;
  for (const auto& [loc, rows] : cand) {
    if (!perf_judged(loc.kind)) continue;  // scrapes and health checks carry no figures
    auto it = base.find(loc);
    if (it == base.end()) continue;  // the baseline never ran this workload
    compared += PoolJudge(c, j, loc, rows, it->second, how).run();
  }
  compared += pooled_compare(c, j, cand, base, how);
  j.add(metric("baseline", compared ? MetricResult::Pass : MetricResult::Insufficient,
               format("%d comparison(s) with enough samples against the %s baseline's rows", compared,
                      std::string(to_string(c.in.recipe.baseline_mode)).c_str())));
}

}  // namespace

void judge_compare(const Context& c, Judgement& j) {
  const StageKind stage = c.in.recipe.stage;
  if (stage == StageKind::Smoke) return;
  const auto [cand_cool, base_cool] = cool_rows(c);
  judge_thermal(c, cand_cool, base_cool, j);
  if (stage != StageKind::Canary) {
    compare_later_stage(c, cand_cool.rows, base_cool.rows, j);
    return;
  }
  if (!c.in.recipe.baseline_note.empty()) j.add(metric("baseline/ab", MetricResult::Pass, c.in.recipe.baseline_note));
  if (!c.in.recipe.baseline_id && !c.in.recipe.missing_baseline.empty()) {
    j.find(Severity::Inconclusive, "the configured baseline '" + c.in.recipe.missing_baseline +
                                       "' has no build to compare with (not running and never recorded)");
    return;
  }
  if (!c.in.recipe.baseline_id) {
    // The first build of its kind: nothing was ever promoted to compare with.
    // The canary stands on the absolute rules (hard failures, memory guard,
    // coverage) and says so; every later build is compared with this one.
    j.add(metric("baseline", MetricResult::Pass,
                 "no baseline exists yet (first build of this candidate): judged on the "
                 "absolute rules only"));
    return;
  }
  if (c.in.recipe.baseline_mode == BaselineMode::None) {
    j.find(Severity::Inconclusive, "no baseline data: the baseline has no stored rows to compare with");
    return;
  }
  if (c.base.empty()) {
    j.find(Severity::Inconclusive, format("no baseline data (%s baseline had no rows)",
                                          std::string(to_string(c.in.recipe.baseline_mode)).c_str()));
    return;
  }
  const Pools cand = pool_rows(cand_cool.rows), base = pool_rows(base_cool.rows);
  const std::vector<const ProbeResult*> none;
  const Reference how = baseline_reference(c);
  int comparable = 0;
  for (const auto& [loc, rows] : cand) {
    auto it = base.find(loc);
    comparable += PoolJudge(c, j, loc, rows, it == base.end() ? none : it->second, how).run();
  }
  comparable += pooled_compare(c, j, cand, base, how);
  if (comparable == 0)
    j.find(Severity::Inconclusive, format("no baseline data with the same locator and at least %d samples on each side",
                                          c.in.recipe.judge.min_samples));
}

namespace {

// The rows that ran alone among the candidate's own requests: no other
// completion of it (another task's, or another group's: a burst's members
// overlap each other by design, as one unit) was in flight during their span.
// A canary's long-context prefill runs alone; the same prefill in the soak
// meets an agent turn now and then, and twice the time to first token there
// is the runtime sharing its slots, not the build getting slower.
std::vector<const ProbeResult*> run_alone(const std::vector<const ProbeResult*>& rows) {
  struct Unit {
    int64_t from, to;
    std::vector<const ProbeResult*> rows;
  };
  std::map<std::pair<int64_t, int64_t>, Unit> units;  // (group id, or -1 - row id) -> its rows' span
  for (const ProbeResult* r : rows) {
    if (!is_completion(*r)) continue;
    // Only a group released at once (a burst, a capacity check) is one unit;
    // an agent session's turns share a group id but run one after another.
    const bool released_together = r->kind == ProbeKind::Burst || r->kind == ProbeKind::Capacity;
    const auto key = released_together && r->group_id ? std::make_pair(*r->group_id, int64_t{0})
                                                      : std::make_pair(int64_t{-1}, r->id);
    const auto [from, to] = wall_span(*r);
    auto [it, fresh] = units.try_emplace(key, Unit{from, to, {}});
    it->second.from = std::min(it->second.from, from);
    it->second.to = std::max(it->second.to, to);
    it->second.rows.push_back(r);
  }
  std::vector<const Unit*> by_start;
  for (const auto& [k, u] : units) by_start.push_back(&u);
  std::sort(by_start.begin(), by_start.end(),
            [](const Unit* a, const Unit* b) { return a->from != b->from ? a->from < b->from : a->to < b->to; });
  std::vector<bool> met(by_start.size(), false);
  int64_t reach = INT64_MIN;
  size_t reach_of = 0;
  for (size_t i = 0; i < by_start.size(); ++i) {
    // Touching is not meeting: a turn sent as the one before it ended.
    if (i > 0 && reach > by_start[i]->from) met[i] = met[reach_of] = true;
    if (by_start[i]->to > reach) reach = by_start[i]->to, reach_of = i;
  }
  std::vector<const ProbeResult*> out;
  for (size_t i = 0; i < by_start.size(); ++i)
    if (!met[i]) out.insert(out.end(), by_start[i]->rows.begin(), by_start[i]->rows.end());
  std::sort(out.begin(), out.end(), [](const ProbeResult* a, const ProbeResult* b) {
    return a->started_wall_ms != b->started_wall_ms ? a->started_wall_ms < b->started_wall_ms : a->id < b->id;
  });
  return out;
}

}  // namespace

// The candidate against itself (docs/DESIGN.md §3.5): the gate's and the
// soak's rows of each locator against the same locator in the candidate's own
// earlier stages (its canary; for the soak its gate too), with the
// comparisons' tests and effect floor, so a first build with no baseline is
// still rejected when it gets far slower, or fails more, later in its own run.
// A locator its earlier stages never ran is left out; with none in common the
// rule does not apply (a metric row says so).
void judge_self(const Context& c, Judgement& j) {
  const StageKind stage = c.in.recipe.stage;
  if (stage != StageKind::Gate && stage != StageKind::Soak) return;
  if (c.in.recipe.own_stage_ids.empty()) return;  // a recipe stored before the rule
  // Like for like: rows that ran alone on both sides (run_alone), none
  // measured hot on this side.
  const auto cool = leave_out_hot(run_alone(measured_rows(c.cand)), c.in.host_samples, c.in.host_sample_before);
  const Pools cand = pool_rows(cool.rows), own = pool_rows(run_alone(measured_rows(c.own)));
  int compared = 0, common = 0;
  for (const auto& [loc, rows] : cand) {
    if (!perf_judged(loc.kind)) continue;
    auto it = own.find(loc);
    if (it == own.end()) continue;
    ++common;
    compared += PoolJudge(c, j, loc, rows, it->second, kSelf).run();
  }
  compared += pooled_compare(c, j, cand, own, kSelf);
  j.add(metric(
      "self", common ? MetricResult::Pass : MetricResult::Insufficient,
      common ? format("%d of %d locators compared with enough samples against the candidate's own earlier "
                      "stages (%zu rows)",
                      compared, common, c.own.size())
             : format("no locator of this stage ran in the candidate's own earlier stages (%zu rows)", c.own.size())));
}

}  // namespace soak::judge_detail
