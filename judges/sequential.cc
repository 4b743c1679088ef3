// The sequential failure test (judges/sequential.h, docs/DESIGN.md §3.12):
// the e-process arithmetic in log space, the measures a stage watches and
// their metric rows.
#include "judges/sequential.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <tuple>

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

double log_e_value(int64_t n, int64_t k, double p0, double a, double b) {
  const auto kf = static_cast<double>(k), sf = static_cast<double>(n - k);
  return log_upper_beta(a + kf, b + sf, p0) - log_upper_beta(a, b, p0) - kf * std::log(p0) - sf * std::log1p(-p0);
}

double log_e_value(int64_t n, int64_t k, double p0) {
  return log_e_value(n, k, p0, kSequentialPriorFailures, kSequentialPriorSuccesses);
}

double beta_upper_quantile(double a, double b, double tail) {
  if (!(tail > 0)) return 1;
  if (tail >= 1) return 0;
  const double log_tail = std::log(tail), whole = log_beta(a, b);
  double lo = 0, hi = 1;  // P(X > lo) > tail >= P(X > hi)
  for (int i = 0; i < 100 && hi - lo > 1e-12; ++i) {
    const double mid = (lo + hi) / 2;
    if (log_upper_beta(a, b, mid) - whole > log_tail)
      lo = mid;
    else
      hi = mid;
  }
  return hi;
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

// ---- send order ------------------------------------------------------------------
// The rows in the order they were sent, cut into the batches a look waits for:
// rows sent in the same millisecond, and each burst or capacity group whole at
// its first member's send time (its members are released in one loop pass, but
// a real clock read per request may tick between them).
using Batch = std::vector<const ProbeResult*>;

bool group_member(const ProbeResult& r) {
  return (r.kind == ProbeKind::Burst || r.kind == ProbeKind::Capacity) && r.group_id && !is_group_summary(r);
}

std::vector<Batch> send_batches(const std::vector<const ProbeResult*>& rows) {
  using GroupKey = std::tuple<int64_t, std::string_view, std::string_view, ProbeKind>;
  std::map<GroupKey, int64_t> first_sent;
  for (const ProbeResult* r : rows)
    if (group_member(*r)) {
      const GroupKey key{*r->group_id, r->task, r->workload_id, r->kind};
      auto [it, fresh] = first_sent.emplace(key, r->started_wall_ms);
      if (!fresh) it->second = std::min(it->second, r->started_wall_ms);
    }
  std::vector<std::pair<int64_t, const ProbeResult*>> timed;
  timed.reserve(rows.size());
  for (const ProbeResult* r : rows)
    timed.emplace_back(
        group_member(*r) ? first_sent.at({*r->group_id, r->task, r->workload_id, r->kind}) : r->started_wall_ms, r);
  std::stable_sort(timed.begin(), timed.end(), [](const auto& x, const auto& y) {
    return x.first != y.first ? x.first < y.first : x.second->id < y.second->id;
  });
  std::vector<Batch> out;
  std::optional<int64_t> at;
  for (const auto& [t, r] : timed) {
    if (!at || *at != t) out.emplace_back();
    at = t;
    out.back().push_back(r);
  }
  return out;
}

// One look's increments: attempts and failures since the last, and the last row.
struct Step {
  int64_t n = 0, k = 0, row_id = 0;
};

// The e-process over a measure's looks.
void walk(SequentialMeasure& m, const std::vector<Step>& steps, double prior_a, double prior_b) {
  SequentialPoint at;
  for (const Step& s : steps) {
    at.n += s.n;
    at.k += s.k;
    if (s.row_id) at.row_id = s.row_id;
    if (s.k == 0) continue;  // E only fell: nothing to look at
    at.log_e = sequential::log_e_value(at.n, at.k, m.budget, prior_a, prior_b);
    if (at.log_e > m.peak.log_e) m.peak = at;
    if (m.stop) continue;
    m.path.push_back(at);
    if (at.log_e >= m.log_boundary()) m.stop = at;
  }
  at.log_e = sequential::log_e_value(at.n, at.k, m.budget, prior_a, prior_b);
  m.last = at;
}

// ---- the failure ratios ----------------------------------------------------------
enum class Counted { Pooled, Http5xx, Task, ToolCalls };
struct Watched {
  Counted counted;
  TaskKind task = TaskKind::Functional;  // Counted::Task
  int64_t band = 0;                      // Counted::ToolCalls: the band's index
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

// The canary's tasks its interleaved baseline repeats (schedules'
// interleaves(), less the scrape, which sends no completion).
bool shadowed_task(std::string_view task) {
  for (TaskKind t : {TaskKind::Functional, TaskKind::LongContext, TaskKind::Burst, TaskKind::Capacity})
    if (task == to_string(t)) return true;
  return false;
}

double budget_of(const JudgeRecipe& r) {
  return r.stage == StageKind::Canary ? r.judge.max_failure_ratio : r.gate.max_failure_ratio;
}

struct Rules {
  std::vector<ProbeKind> canary_pooled;  // canary_pooled_kinds(), once per evidence() call
  int64_t band_width = 0, bands = 0;     // the tool-call bands (0: none watched)
};

int64_t band_index(const Rules& rules, const ProbeResult& r) {
  const int64_t lo = std::max<int64_t>(0, r.size_tokens.value_or(0));
  return std::min(lo / rules.band_width, rules.bands - 1);
}

bool attempt_of(const Context& c, const Rules& rules, const Watched& w, const ProbeResult& r) {
  if (!is_completion(r) || is_harness(r)) return false;
  switch (w.counted) {
    case Counted::Http5xx: return true;
    case Counted::Pooled:
      if (c.in.recipe.stage != StageKind::Canary) return true;
      return !refused_long_prompt(r) &&
             std::find(rules.canary_pooled.begin(), rules.canary_pooled.end(), r.kind) != rules.canary_pooled.end();
    case Counted::Task: return r.task == to_string(w.task) && !refused_long_prompt(r);
    // Which turns require a call is the schedule's (every agent.tool_every-th),
    // never the outcome's: a malformed call on a turn that asked for none stays
    // the band rule's (judges/session.cc).
    // A turn whose leaked markup decided the row had its call judged by nothing (judges/session.cc).
    case Counted::ToolCalls:
      return band_index(rules, r) == w.band && r.outcome != Outcome::LeakedMarkup &&
             requires_tool_call(r);  // the cheap tests first
  }
  return false;
}

bool failure_of(const Watched& w, const ProbeResult& r) {
  switch (w.counted) {
    case Counted::Http5xx: return r.outcome == Outcome::Http5xx;
    case Counted::ToolCalls: return is_tool_failure(r.outcome);
    default: return counts_against(r);
  }
}

// "30K-40K" for band 3 of width 10000 (probes/session.h band_label's form).
std::string band_name(int64_t index, int64_t width) {
  auto k = [](int64_t v) { return v == 0 ? std::string("0") : v % 1000 == 0 ? num(v / 1000) + "K" : num(v); };
  return k(index * width) + "-" + k((index + 1) * width);
}

std::string name_of(const Rules& rules, const Watched& w) {
  switch (w.counted) {
    case Counted::Pooled: return "pooled";
    case Counted::Http5xx: return "http_5xx";
    case Counted::Task: return "task/" + std::string(to_string(w.task));
    case Counted::ToolCalls: return "tool_calls/" + band_name(w.band, rules.band_width);
  }
  return "pooled";
}

std::vector<Watched> watched(const JudgeRecipe& r, const Rules& rules) {
  std::vector<Watched> out;
  if (r.stage == StageKind::Smoke) return out;
  out.push_back({Counted::Pooled});
  out.push_back({Counted::Http5xx});
  for (TaskKind t : watched_tasks(r.stage))
    if (!probe_kinds_for(t, r.workload).empty()) out.push_back({Counted::Task, t});
  for (int64_t b = 0; b < rules.bands; ++b) out.push_back({Counted::ToolCalls, TaskKind::Agent, b});
  return out;
}

// The agent session's bands, when the stage's traffic holds sessions.
Rules rules_of(const JudgeRecipe& r) {
  Rules rules{canary_pooled_kinds(r.workload)};
  const TaskKind traffic = r.stage == StageKind::Gate ? TaskKind::Agent : TaskKind::SoakTraffic;
  const auto kinds = probe_kinds_for(traffic, r.workload);
  const bool sessions = (r.stage == StageKind::Gate || r.stage == StageKind::Soak) &&
                        std::find(kinds.begin(), kinds.end(), ProbeKind::Agent) != kinds.end();
  if (sessions && r.agent.band_tokens > 0 && r.judge.max_invalid_ratio > 0 && r.judge.max_invalid_ratio < 1) {
    rules.band_width = r.agent.band_tokens;
    const int64_t ceiling = std::max(r.agent.context_ceiling_tokens, r.agent.band_tokens);
    rules.bands = (ceiling + rules.band_width - 1) / rules.band_width;
  }
  return rules;
}

// ---- latency_slo -------------------------------------------------------------------
const PerfMetric& slo_figure(ProbeKind k) {
  return k == ProbeKind::Embeddings || k == ProbeKind::Rerank ? kWall : kTtft;
}

bool slo_timed(const ProbeResult& r) { return is_completion(r) && perf_judged(r.kind); }

SequentialMeasure latency_slo(const Context& c, const std::vector<Batch>& batches, double share) {
  SequentialMeasure m;
  m.name = "latency_slo";
  m.alpha = share / 2;
  m.estimate_alpha = share / 2;
  m.budget = kSloMinBudget;
  m.basis = "no history baseline: nothing to compare with";
  std::map<Locator, double> threshold;
  std::set<const ProbeResult*> cool;
  if (c.in.recipe.baseline_mode == BaselineMode::History) {
    const CoolRows rows = cool_rows(c);
    std::map<Locator, std::vector<double>> values;
    std::map<Locator, std::vector<const ProbeResult*>> pool;
    for (const ProbeResult* r : rows.base.rows)
      if (slo_timed(*r))
        if (auto v = client_figure(slo_figure(r->kind), *r)) {
          values[locator_of(*r)].push_back(*v);
          pool[locator_of(*r)].push_back(r);
        }
    const JudgeRules& rules = c.in.recipe.judge;
    int64_t smallest = 0, pools = 0;
    for (auto& [loc, v] : values) {
      const auto n = static_cast<int64_t>(v.size());
      if (n < kSloMinBaseline) continue;
      std::sort(v.begin(), v.end());
      // Nearest rank: the j-th smallest, j = ceil(0.95 n).
      const auto j = static_cast<int64_t>(std::ceil(kSloQuantile * static_cast<double>(n) - 1e-9));
      const double p95 = v[static_cast<size_t>(std::clamp<int64_t>(j, 1, n) - 1)];
      // Slower than it by what the comparisons need to reject a shift (the
      // effect floor, the history's own stage-to-stage spread when larger,
      // and the hold band): an early rejection never outruns a marginal one.
      double floor = rules.effect_floor;
      const StageSpread sp = stage_spread(slo_figure(loc.kind), pool[loc], rules.min_samples);
      if (sp.stages >= 2) floor = std::max(floor, sp.fraction);
      threshold[loc] = p95 * (1 + std::max(0.0, floor) + std::max(0.0, rules.hold_band));
      smallest = smallest ? std::min(smallest, n) : n;
      ++pools;
    }
    if (pools) {
      const auto j = static_cast<int64_t>(std::ceil(kSloQuantile * static_cast<double>(smallest) - 1e-9));
      const double bound = sequential::beta_upper_quantile(static_cast<double>(smallest - j + 1),
                                                           static_cast<double>(j), m.estimate_alpha / pools);
      m.budget = std::max(kSloMinBudget, bound);
      m.basis = format(
          "rows slower than the baseline's p95 + floor + hold band in %lld pool(s) (fewest %lld baseline values)",
          static_cast<long long>(pools), static_cast<long long>(smallest));
    } else {
      m.basis = format("no pool has %lld baseline values", static_cast<long long>(kSloMinBaseline));
    }
    cool.insert(rows.cand.rows.begin(), rows.cand.rows.end());
  }
  std::vector<Step> steps;
  for (const Batch& b : batches) {
    Step s;
    for (const ProbeResult* r : b) {
      if (threshold.empty() || !slo_timed(*r) || !cool.count(r)) continue;
      auto it = threshold.find(locator_of(*r));
      if (it == threshold.end()) continue;
      auto v = client_figure(slo_figure(r->kind), *r);
      if (!v) continue;
      ++s.n;
      s.row_id = r->id;
      if (*v > it->second) ++s.k;
    }
    if (s.n) steps.push_back(s);
  }
  walk(m, steps, kSequentialPriorFailures, kSequentialPriorSuccesses);
  return m;
}

// ---- paired ------------------------------------------------------------------------
// One task run: the rows sharing a task and a group id (else a row alone).
struct Run {
  std::string_view task;
  int64_t start = 0, first_id = 0, last_id = 0;
  int64_t attempts = 0, failures = 0;
};

std::vector<Run> runs_of(const std::vector<const ProbeResult*>& rows) {
  std::map<std::pair<std::string_view, int64_t>, Run> runs;
  for (const ProbeResult* r : rows) {
    if (!shadowed_task(r->task) || !is_completion(*r) || is_harness(*r) || refused_long_prompt(*r)) continue;
    const int64_t key = r->group_id ? *r->group_id : -r->id;
    auto [it, fresh] = runs.try_emplace({r->task, key});
    Run& run = it->second;
    if (fresh || r->started_wall_ms < run.start) run.start = r->started_wall_ms;
    if (fresh || r->id < run.first_id) run.first_id = r->id;
    run.task = r->task;
    run.last_id = std::max(run.last_id, r->id);
    ++run.attempts;
    if (counts_against(*r)) ++run.failures;
  }
  std::vector<Run> out;
  for (auto& [key, run] : runs) out.push_back(run);
  std::sort(out.begin(), out.end(), [](const Run& x, const Run& y) {
    return x.start != y.start ? x.start < y.start : x.first_id < y.first_id;
  });
  return out;
}

SequentialMeasure paired(const Context& c, double share) {
  SequentialMeasure m;
  m.name = "paired";
  m.alpha = share;
  m.budget = kPairedShare;
  int64_t pairs = 0;
  std::vector<Step> steps;
  if (c.in.recipe.baseline_mode == BaselineMode::Interleaved) {
    const auto cand = runs_of(c.cand), base = runs_of(c.base);
    std::vector<bool> taken(cand.size(), false);
    for (const Run& b : base) {  // in the order the baseline ran them
      // The candidate's run this one repeats: its latest of the task started before.
      std::optional<size_t> partner;
      for (size_t i = 0; i < cand.size() && cand[i].start <= b.start; ++i)
        if (cand[i].task == b.task) partner = i;
      if (!partner || taken[*partner]) continue;
      taken[*partner] = true;
      const Run& a = cand[*partner];
      if (a.attempts != b.attempts) continue;  // a run cut short: ρ would not be 1/2
      ++pairs;
      steps.push_back({a.failures + b.failures, a.failures, a.last_id});
    }
    m.basis = format("failures in %lld paired run(s), counted as the candidate's", static_cast<long long>(pairs));
  } else {
    m.basis = "no interleaved baseline: nothing to pair";
  }
  walk(m, steps, kPairedPriorFailures, kPairedPriorSuccesses);
  return m;
}

}  // namespace

std::vector<SequentialMeasure> evidence(const Context& c) {
  const JudgeRecipe& r = c.in.recipe;
  const double budget = budget_of(r);
  const Rules rules = rules_of(r);
  const auto list = watched(r, rules);
  std::vector<SequentialMeasure> out;
  if (list.empty() || !(budget > 0 && budget < 1) || !(r.judge.alpha > 0 && r.judge.alpha < 1)) return out;
  // The α split: one share per failure ratio, one for the tool-call bands
  // together, one for latency_slo and one for paired where they apply.
  const bool baseline = r.baseline_id.has_value();
  const bool pairs = baseline && r.stage == StageKind::Canary;
  const auto ratios = static_cast<int64_t>(list.size()) - rules.bands;
  const int64_t shares = ratios + (rules.bands ? 1 : 0) + (baseline ? 1 : 0) + (pairs ? 1 : 0);
  const double share = r.judge.alpha / static_cast<double>(shares);
  const auto batches = send_batches(c.cand);
  for (const Watched& w : list) {
    SequentialMeasure m;
    m.name = name_of(rules, w);
    if (w.counted == Counted::ToolCalls) {
      m.budget = r.judge.max_invalid_ratio;
      m.alpha = share / static_cast<double>(rules.bands);
    } else {
      m.budget = budget;
      m.alpha = share;
    }
    std::vector<Step> steps;
    for (const Batch& b : batches) {
      Step s;
      for (const ProbeResult* row : b) {
        if (!attempt_of(c, rules, w, *row)) continue;
        ++s.n;
        s.row_id = row->id;
        if (failure_of(w, *row)) ++s.k;
      }
      if (s.n) steps.push_back(s);
    }
    walk(m, steps, kSequentialPriorFailures, kSequentialPriorSuccesses);
    out.push_back(std::move(m));
  }
  if (baseline) out.push_back(latency_slo(c, batches, share));
  if (pairs) out.push_back(paired(c, share));
  return out;
}

void judge_sequential(const Context& c, Judgement& j) {
  for (const SequentialMeasure& s : evidence(c)) {
    const SequentialPoint& at = s.stop ? *s.stop : s.last;
    const double ratio = at.n ? static_cast<double>(at.k) / static_cast<double>(at.n) : 0.0;
    const auto k = static_cast<long long>(at.k), n = static_cast<long long>(at.n);
    std::string reason;
    if (s.name == "paired")
      reason = format("%lld of %lld failures in paired runs were the candidate's (%.2f%%), its share %.2f%%: ", k, n,
                      ratio * 100, s.budget * 100);
    else if (s.name == "latency_slo")
      reason = format("%lld of %lld timed rows slower than the baseline's p95 + margin (%.2f%%), budget %.2f%%: ", k, n,
                      ratio * 100, s.budget * 100);
    else if (s.name.rfind("tool_calls/", 0) == 0)
      reason =
          format("%lld of %lld tool-call turns failed (%.2f%%), budget %.2f%%: ", k, n, ratio * 100, s.budget * 100);
    else
      reason = format("%lld of %lld failed (%.2f%%), budget %.2f%%: ", k, n, ratio * 100, s.budget * 100);
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
