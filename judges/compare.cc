// Candidate versus baseline, one locator at a time (canary; docs/DESIGN.md §3.5).
//
// Central figures: Mann–Whitney U on the raw samples, the size of the change
// taken from the Hodges–Lehmann shift relative to the baseline median. A
// significant change smaller than the effect floor is not a regression (with
// thousands of samples everything is significant); between the floor and
// floor + hold band a person decides. Tails: the candidate's p95/p99 (p5/p1
// for throughput) against the baseline's, significant when the candidate has
// more samples beyond the baseline's quantile than the baseline itself
// (Fisher). Error rates: Fisher, one-sided "candidate worse".
#include <algorithm>
#include <cmath>

#include "judges/internal.h"
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

struct Pair {
  const std::vector<double>& cand;
  const std::vector<double>& base;
};

std::string sizes(int64_t n_c, int64_t n_b) {
  return format("n=%lld candidate, %lld baseline", static_cast<long long>(n_c), static_cast<long long>(n_b));
}

class PoolJudge {
 public:
  PoolJudge(const Context& c, Judgement& j, const Locator& loc, const std::vector<const ProbeResult*>& cand,
            const std::vector<const ProbeResult*>& base)
      : c_(c), j_(j), loc_(loc), label_(locator_label(loc)), cand_(cand), base_(base) {}

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
        for (const auto& t : kTails) tail(*pm, t, {ex.values[0], ex.values[1]});
      }
    }
    acceptance_row();
    error_rate();
    return comparable_;
  }

 private:
  std::string name(std::string_view metric_name, std::string_view suffix = {}) const {
    return std::string(metric_name) + std::string(suffix) + "/" + label_;
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
    if (n_c < min_n || n_b < min_n) return insufficient(format("need %d on each side", min_n));
    if (bm == 0) return insufficient("baseline median is 0");

    const auto& rules = c_.in.recipe.judge;
    const auto mw = stats::mann_whitney(v.cand, v.base, c_.confidence());
    const double scale = std::fabs(bm);
    const double sign = pm.better == Better::Lower ? 1.0 : -1.0;
    const double worse = sign * mw.shift / scale;  // > 0: the candidate is worse
    const bool significant = mw.p_value < rules.alpha;

    MetricResult result = MetricResult::Pass;
    std::string verdict;
    if (significant && worse > rules.effect_floor + rules.hold_band) {
      result = MetricResult::Fail;
      verdict = format("regression beyond effect floor %s + hold band %s", pct(rules.effect_floor).c_str(),
                       pct(rules.hold_band).c_str());
    } else if (significant && worse > rules.effect_floor) {
      result = MetricResult::Marginal;
      verdict = format("marginal regression between effect floor %s and %s", pct(rules.effect_floor).c_str(),
                       pct(rules.effect_floor + rules.hold_band).c_str());
    } else if (significant && worse > 0) {
      verdict = "significant but within the effect floor " + pct(rules.effect_floor);
    } else if (significant) {
      verdict = "significantly better";
    } else {
      verdict = "no significant change";
    }
    if (result != MetricResult::Pass && pm.figure != Figure::Ttft && !acceptance_.empty())
      verdict += " despite " + acceptance_;

    std::string reason = format("median %s vs %s baseline, shift %s [%s, %s], %s (%s), %s; source %s", num(cm).c_str(),
                                num(bm).c_str(), pct(mw.shift / scale).c_str(), pct(mw.shift_lo / scale).c_str(),
                                pct(mw.shift_hi / scale).c_str(), pval(mw.p_value).c_str(),
                                mw.exact ? "exact" : "normal", sizes(n_c, n_b).c_str(), std::string(source).c_str());
    auto m = metric(name(pm.name), result, verdict + ": " + reason);
    m.n = n_c;
    m.n_baseline = n_b;
    set_numbers(m, cm, bm, mw.shift_lo / scale, mw.shift_hi / scale, rules.effect_floor, mw.p_value);
    // The verdict's reason gets the short form; the metric row keeps it all.
    std::string brief =
        format("%s %s %s vs baseline (median %s vs %s)", std::string(pm.name).c_str(), short_workload().c_str(),
               pct(mw.shift / scale).c_str(), num(cm).c_str(), num(bm).c_str());
    if (result != MetricResult::Pass && pm.figure != Figure::Ttft && !acceptance_.empty())
      brief += " despite " + acceptance_;
    if (result == MetricResult::Fail) j_.find(Severity::Failure, brief);
    if (result == MetricResult::Marginal) j_.find(Severity::Hold, "marginal: " + brief);
    j_.add(std::move(m));
    return true;
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
    const bool regression = bq != 0 && worse > rules.tail_tolerance && p < rules.alpha;
    std::string reason = format(
        "%s vs %s baseline (%s worse, tolerance %s); beyond the baseline's quantile: %lld of "
        "%lld candidate vs %lld of %lld baseline, %s",
        num(cq).c_str(), num(bq).c_str(), pct(worse).c_str(), pct(rules.tail_tolerance).c_str(),
        static_cast<long long>(k_c), static_cast<long long>(n_c), static_cast<long long>(k_b),
        static_cast<long long>(n_b), pval(p).c_str());
    m.result = (regression ? MetricResult::Marginal : MetricResult::Pass);
    m.reason = (regression ? "tail regression: " : "") + reason;
    set_numbers(m, cq, bq, ci.lo, ci.hi, rules.tail_tolerance, p);
    if (regression)
      j_.find(Severity::Hold,
              format("tail: %s %s %s worse than baseline (%s vs %s)", m.metric.substr(0, m.metric.find('/')).c_str(),
                     short_workload().c_str(), pct(worse).c_str(), num(cq).c_str(), num(bq).c_str()));
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
    const bool fail = p < rules.alpha;
    m.result = (fail ? MetricResult::Fail : MetricResult::Pass);
    m.reason = (fail ? "error rate higher than baseline: " : "") + counts + ", " + pval(p) + " (Fisher, one-sided)";
    set_numbers(m, rc, rb, ci.lo, ci.hi, rules.alpha, p);
    if (fail) j_.find(Severity::Failure, "error rate " + short_workload() + " higher than baseline: " + counts);
    j_.add(std::move(m));
  }

  const Context& c_;
  Judgement& j_;
  const Locator& loc_;
  const std::string label_;
  const std::vector<const ProbeResult*>& cand_;
  const std::vector<const ProbeResult*>& base_;
  Drafts cand_drafts_;
  std::string acceptance_;
  int comparable_ = 0;
};

}  // namespace

void judge_compare(const Context& c, Judgement& j) {
  if (c.in.recipe.stage != StageKind::Canary) return;
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
  const Pools cand = pool_rows(c.cand), base = pool_rows(c.base);
  const std::vector<const ProbeResult*> none;
  int comparable = 0;
  for (const auto& [loc, rows] : cand) {
    auto it = base.find(loc);
    comparable += PoolJudge(c, j, loc, rows, it == base.end() ? none : it->second).run();
  }
  if (comparable == 0)
    j.find(Severity::Inconclusive, format("no baseline data with the same locator and at least %d samples on each side",
                                          c.in.recipe.judge.min_samples));
}

}  // namespace soak::judge_detail
