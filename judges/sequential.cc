// The sequential failure test (judges/sequential.h, docs/DESIGN.md §3.12):
// the e-process arithmetic in log space, the measures a stage watches and
// their metric rows.
#include "judges/sequential.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "judges/internal.h"

namespace soak {

namespace sequential {
namespace {

// The continued fraction of the incomplete Beta function converges in
// O(sqrt(max(a, b))) steps; this bounds it far above what n = 10^7 needs.
constexpr int kMaxFractionSteps = 200'000;
constexpr double kFractionEpsilon = 1e-15;
constexpr double kTiny = 1e-300;

double log_beta(double a, double b) { return std::lgamma(a) + std::lgamma(b) - std::lgamma(a + b); }

// The continued fraction of I_x(a, b) (modified Lentz), for x < (a+1)/(a+b+2).
double fraction(double a, double b, double x) {
  const double qab = a + b, qap = a + 1, qam = a - 1;
  double c = 1, d = 1 - qab * x / qap;
  if (std::fabs(d) < kTiny) d = kTiny;
  d = 1 / d;
  double h = d;
  for (int m = 1; m <= kMaxFractionSteps; ++m) {
    const double m2 = 2.0 * m;
    double aa = m * (b - m) * x / ((qam + m2) * (a + m2));
    d = 1 + aa * d;
    if (std::fabs(d) < kTiny) d = kTiny;
    c = 1 + aa / c;
    if (std::fabs(c) < kTiny) c = kTiny;
    d = 1 / d;
    h *= d * c;
    aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
    d = 1 + aa * d;
    if (std::fabs(d) < kTiny) d = kTiny;
    c = 1 + aa / c;
    if (std::fabs(c) < kTiny) c = kTiny;
    d = 1 / d;
    const double del = d * c;
    h *= del;
    if (std::fabs(del - 1) < kFractionEpsilon) break;
  }
  return h;
}

}  // namespace

double log_upper_beta(double a, double b, double x0) {
  if (x0 <= 0) return log_beta(a, b);
  const double y = 1 - x0;
  // ∫_{x0}^1 = B(a, b) I_y(b, a). Where the fraction converges for I_y(b, a)
  // the front factor's B(b, a) cancels against B(a, b): no subtraction at all.
  if (y < (b + 1) / (a + b + 2)) return b * std::log(y) + a * std::log(x0) + std::log(fraction(b, a, y)) - std::log(b);
  // Otherwise the tail is most of the whole: B(a, b) (1 - I_x0(a, b)), with
  // I_x0(a, b) small.
  const double log_lower =
      a * std::log(x0) + b * std::log(y) - log_beta(a, b) + std::log(fraction(a, b, x0)) - std::log(a);
  return log_beta(a, b) + std::log1p(-std::exp(std::min(log_lower, 0.0)));
}

double log_e_value(int64_t n, int64_t k, double p0) {
  const double a = kSequentialPriorFailures, b = kSequentialPriorSuccesses;
  const auto kf = static_cast<double>(k), sf = static_cast<double>(n - k);
  return log_upper_beta(a + kf, b + sf, p0) - log_upper_beta(a, b, p0) - kf * std::log(p0) - sf * std::log1p(-p0);
}

}  // namespace sequential

double SequentialMeasure::log_boundary() const { return -std::log(alpha); }

double SequentialMeasure::fraction() const {
  const double e = stop ? stop->log_e : last.log_e;
  return std::clamp(e / log_boundary(), 0.0, 1.0);
}

std::string describe(const SequentialPoint& p) {
  return judge_detail::format("E=%s (n=%lld, k=%lld)", judge_detail::num(std::exp(std::min(p.log_e, 700.0))).c_str(),
                              static_cast<long long>(p.n), static_cast<long long>(p.k));
}

namespace judge_detail {
namespace {

// What one measure counts: which rows are its attempts, which of them failures.
enum class Counted { Pooled, Http5xx, Task };
struct Watched {
  Counted counted;
  TaskKind task = TaskKind::Functional;  // for Counted::Task
};

// The tasks whose rows each stage watches one by one, besides the pooled
// ratio and the 5xx ratio. A fixed list per stage, so the α split is known
// before the first row; a task the plan does not run just stays at n = 0.
std::vector<TaskKind> watched_tasks(StageKind s) {
  switch (s) {
    case StageKind::Smoke: return {};
    case StageKind::Canary:
      return {TaskKind::Functional, TaskKind::LongContext, TaskKind::Burst, TaskKind::Capacity, TaskKind::PrefixReuse};
    case StageKind::Gate: return {TaskKind::Agent, TaskKind::LongContext};
    case StageKind::Soak: return {TaskKind::SoakTraffic, TaskKind::LongContext, TaskKind::Burst, TaskKind::Capacity};
  }
  return {};
}

double budget_of(const JudgeRecipe& r) {
  return r.stage == StageKind::Canary ? r.judge.max_failure_ratio : r.gate.max_failure_ratio;
}

struct Rules {
  std::vector<ProbeKind> canary_pooled;  // canary_pooled_kinds(), once per evidence() call
};

bool attempt_of(const Context& c, const Rules& rules, const Watched& w, const ProbeResult& r) {
  if (!is_completion(r) || is_harness(r)) return false;
  switch (w.counted) {
    case Counted::Http5xx: return true;
    case Counted::Pooled:
      if (c.in.recipe.stage != StageKind::Canary) return true;
      return !refused_long_prompt(r) &&
             std::find(rules.canary_pooled.begin(), rules.canary_pooled.end(), r.kind) != rules.canary_pooled.end();
    case Counted::Task: return r.task == to_string(w.task) && !refused_long_prompt(r);
  }
  return false;
}

bool failure_of(const Watched& w, const ProbeResult& r) {
  return w.counted == Counted::Http5xx ? r.outcome == Outcome::Http5xx : counts_against(r);
}

std::string name_of(const Watched& w) {
  switch (w.counted) {
    case Counted::Pooled: return "pooled";
    case Counted::Http5xx: return "http_5xx";
    case Counted::Task: return "task/" + std::string(to_string(w.task));
  }
  return "pooled";
}

std::vector<Watched> watched(const JudgeRecipe& r) {
  std::vector<Watched> out;
  if (r.stage == StageKind::Smoke) return out;
  out.push_back({Counted::Pooled});
  out.push_back({Counted::Http5xx});
  for (TaskKind t : watched_tasks(r.stage))
    if (!probe_kinds_for(t, r.workload).empty()) out.push_back({Counted::Task, t});
  return out;
}

SequentialMeasure run(const Context& c, const Rules& rules, const Watched& w, double budget, double alpha) {
  SequentialMeasure m;
  m.name = name_of(w);
  m.budget = budget;
  m.alpha = alpha;
  SequentialPoint at;
  bool rose = false;  // a failure came in since the last look
  auto look = [&] {
    if (!rose) return;
    rose = false;
    at.log_e = sequential::log_e_value(at.n, at.k, budget);
    if (at.log_e > m.peak.log_e) m.peak = at;
    if (m.stop) return;
    m.path.push_back(at);
    if (at.log_e >= m.log_boundary()) m.stop = at;
  };
  std::optional<int64_t> batch_ms;
  for (const ProbeResult* r : c.cand) {
    if (!attempt_of(c, rules, w, *r)) continue;
    if (batch_ms && *batch_ms != r->started_wall_ms) look();  // the batch sent at *batch_ms is all in
    batch_ms = r->started_wall_ms;
    ++at.n;
    at.row_id = r->id;
    if (failure_of(w, *r)) {
      ++at.k;
      rose = true;
    }
  }
  look();
  at.log_e = sequential::log_e_value(at.n, at.k, budget);
  m.last = at;
  return m;
}

}  // namespace

std::vector<SequentialMeasure> evidence(const Context& c) {
  const JudgeRecipe& r = c.in.recipe;
  const double budget = budget_of(r);
  const auto list = watched(r);
  std::vector<SequentialMeasure> out;
  if (list.empty() || !(budget > 0 && budget < 1) || !(r.judge.alpha > 0 && r.judge.alpha < 1)) return out;
  const Rules rules{canary_pooled_kinds(r.workload)};
  const double share = r.judge.alpha / static_cast<double>(list.size());
  for (const Watched& w : list) out.push_back(run(c, rules, w, budget, share));
  return out;
}

void judge_sequential(const Context& c, Judgement& j) {
  for (const SequentialMeasure& s : evidence(c)) {
    const SequentialPoint& at = s.stop ? *s.stop : s.last;
    const double ratio = at.n ? static_cast<double>(at.k) / static_cast<double>(at.n) : 0.0;
    std::string reason = format("%lld of %lld failed (%.2f%%), budget %.2f%%: ", static_cast<long long>(at.k),
                                static_cast<long long>(at.n), ratio * 100, s.budget * 100);
    const std::string boundary = "1/alpha=" + num(1 / s.alpha);
    if (s.stop)
      reason += format("e-value %s reached %s at row %lld", describe(at).c_str(), boundary.c_str(),
                       static_cast<long long>(at.row_id));
    else
      reason += format("e-value %s, highest %s, boundary %s (%.0f%% of it)", num(std::exp(at.log_e)).c_str(),
                       describe(s.peak).c_str(), boundary.c_str(), s.fraction() * 100);
    auto m = metric("sequential/" + s.name, s.stop ? MetricResult::Fail : MetricResult::Pass, reason);
    m.n = at.n;
    set_numbers(m, ratio, s.budget, at.log_e, s.peak.log_e, s.log_boundary(), std::min(1.0, std::exp(-s.peak.log_e)));
    j.add(std::move(m));
    if (s.stop) j.find(Severity::HardFailure, "sequential " + s.name + ": " + reason);
  }
}

}  // namespace judge_detail

std::vector<SequentialMeasure> sequential_evidence(const JudgeInput& in) {
  return judge_detail::evidence(judge_detail::Context(in));
}

}  // namespace soak
