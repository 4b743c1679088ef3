// What the answers say, over the stage (docs/DESIGN.md §3.9, §3.5): loops in every
// stage's traffic, and completion length against the baseline's.
//
// Loops. The probes run the repetition detector on every answer (agent turns
// and soak traffic included, probes/answer_check.h), so a looping answer is a
// `repetition` row wherever it happens. One such row is counted like any
// failure; two in one stage are not chance but the long-session loops the seeds
// warn of (S0:85: "27B long repeated output"; S1:214: "tool/repetition
// problems"), and reject whatever the failure ratio says: a week of agent
// traffic is ~10,000 turns, where the 1 % ratio would let a hundred loops pass.
//
// Early stop. A build whose answers stop early is faster and passes every
// speed comparison. The seeds' quality gate (S4:271): "early_stop: runs whose
// median completion is under 0.5x, two or more". Per locator (§2.8) the
// baseline's median completion tokens over its clean answers is the
// reference; a run is one task slot (the rows sharing a group id, else one
// row). The candidate fails when its own median is under half the
// baseline's and at least two of its runs are, so one short answer among
// ordinary ones never rejects. Both sides need kEarlyStopRuns runs.
#include <algorithm>
#include <map>

#include "judges/internal.h"
#include "judges/stats.h"

namespace soak::judge_detail {

namespace {

// S4:271: under half the baseline's median completion, in two runs or more.
constexpr double kEarlyStopFraction = 0.5;
constexpr int64_t kEarlyStopRuns = 2;
// Two looping answers in one stage reject (one is counted as any failure).
constexpr int64_t kLoopsReject = 2;

bool answers_text(ProbeKind k) {
  switch (k) {
    case ProbeKind::Identity:
    case ProbeKind::Marker:
    case ProbeKind::Stream:
    case ProbeKind::StrictJson:
    case ProbeKind::ToolCall:
    case ProbeKind::LongContext:
    case ProbeKind::SharedPrefix:
    case ProbeKind::Burst:
    case ProbeKind::Thinking:
    case ProbeKind::Repetition:
    case ProbeKind::Agent:
    case ProbeKind::Capacity: return true;
    default: return false;  // health, scrape, build, cancel (cut on purpose), pooling routes
  }
}

// Completion tokens of the clean answers of a pool.
std::vector<double> completions_of(const std::vector<const ProbeResult*>& rows) {
  std::vector<double> out;
  for (const ProbeResult* r : rows)
    if (is_clean(*r) && r->completion_tokens && *r->completion_tokens > 0)
      out.push_back(static_cast<double>(*r->completion_tokens));
  return out;
}

// The medians of a pool's runs: rows that share a group id are one run (a
// burst, an interleaved slot); a row without one is a run of its own.
std::vector<double> run_medians(const std::vector<const ProbeResult*>& rows) {
  std::map<std::pair<int, int64_t>, std::vector<double>> runs;
  for (const ProbeResult* r : rows) {
    if (!is_clean(*r) || !r->completion_tokens || *r->completion_tokens <= 0) continue;
    const auto key = r->group_id ? std::make_pair(0, *r->group_id) : std::make_pair(1, r->id);
    runs[key].push_back(static_cast<double>(*r->completion_tokens));
  }
  std::vector<double> out;
  for (auto& [key, v] : runs) out.push_back(stats::median(std::move(v)));
  return out;
}

std::vector<const ProbeResult*> answer_rows(const std::vector<const ProbeResult*>& rows) {
  std::vector<const ProbeResult*> out;
  for (const ProbeResult* r : rows)
    if (answers_text(r->kind) && !is_group_summary(*r) && !is_harness(*r)) out.push_back(r);
  return out;
}

void judge_loops(const Context& c, Judgement& j, const std::vector<const ProbeResult*>& answers) {
  std::vector<int64_t> ids;
  const ProbeResult* first = nullptr;
  for (const ProbeResult* r : answers) {
    if (r->outcome != Outcome::Repetition) continue;
    ids.push_back(r->id);
    if (!first) first = r;
  }
  const auto loops = static_cast<int64_t>(ids.size());
  auto m = metric("answers/loops", MetricResult::Pass,
                  format("%lld of %zu answers ended in a loop; %lld in one stage reject (S0:85, S1:214)",
                         static_cast<long long>(loops), answers.size(), static_cast<long long>(kLoopsReject)));
  m.n = static_cast<int64_t>(answers.size());
  set_numbers(m, static_cast<double>(loops), 0, 0, 0, static_cast<double>(kLoopsReject), 1);
  if (first) {
    m.reason +=
        format(" (rows %s; first %s row %lld: %s)", id_list(ids).c_str(), std::string(to_string(first->kind)).c_str(),
               static_cast<long long>(first->id), first->detail.c_str());
  }
  if (loops >= kLoopsReject && c.in.recipe.stage != StageKind::Smoke) {
    m.result = MetricResult::Fail;
    j.find(Severity::Failure, "answers loop: " + m.reason);
  }
  j.add(std::move(m));
}

void judge_completion_length(const Context& c, Judgement& j) {
  if (c.base.empty()) return;
  const Pools cand = pool_rows(answer_rows(c.cand));
  const Pools base = pool_rows(answer_rows(c.base));
  int64_t compared = 0, short_pools = 0;
  for (const auto& [loc, rows] : cand) {
    auto b = base.find(loc);
    if (b == base.end()) continue;
    const auto base_runs = run_medians(b->second);
    const auto cand_runs = run_medians(rows);
    if (static_cast<int64_t>(base_runs.size()) < kEarlyStopRuns ||
        static_cast<int64_t>(cand_runs.size()) < kEarlyStopRuns)
      continue;
    ++compared;
    const auto cand_values = completions_of(rows);
    const auto base_values = completions_of(b->second);
    const double base_median = stats::median(base_values);
    const double cand_median = stats::median(cand_values);
    const double limit = kEarlyStopFraction * base_median;
    const auto short_runs = std::count_if(cand_runs.begin(), cand_runs.end(), [&](double v) { return v < limit; });
    if (!(cand_median < limit && short_runs >= kEarlyStopRuns)) continue;
    ++short_pools;
    auto m = metric(
        "completion_length/" + locator_label(loc), MetricResult::Fail,
        format("median completion %s tokens against the baseline's %s (%.2fx) over %zu answers, %lld of %zu runs "
               "under half; answers stop early when the median completion is under %.1fx the baseline's in %lld "
               "runs (S4:271)",
               num(cand_median).c_str(), num(base_median).c_str(), base_median > 0 ? cand_median / base_median : 0.0,
               cand_values.size(), static_cast<long long>(short_runs), cand_runs.size(), kEarlyStopFraction,
               static_cast<long long>(kEarlyStopRuns)));
    m.n = static_cast<int64_t>(cand_values.size());
    m.n_baseline = static_cast<int64_t>(base_values.size());
    set_numbers(m, cand_median, base_median, 0, 0, kEarlyStopFraction, 1);
    j.find(Severity::Failure, "answers stop early: " + std::string(loc.workload_id) + ": " + m.reason);
    j.add(std::move(m));
  }
  auto m = metric("completion_length",
                  short_pools ? MetricResult::Fail
                  : compared  ? MetricResult::Pass
                              : MetricResult::Insufficient,
                  format("%lld of %lld workloads compared with the baseline answer under half its median completion "
                         "(S4:271); each side needs %lld runs",
                         static_cast<long long>(short_pools), static_cast<long long>(compared),
                         static_cast<long long>(kEarlyStopRuns)));
  m.n = compared;
  set_numbers(m, static_cast<double>(short_pools), 0, 0, 0, kEarlyStopFraction, 1);
  j.add(std::move(m));
}

}  // namespace

void judge_answers(const Context& c, Judgement& j) {
  const auto answers = answer_rows(c.cand);
  if (answers.empty()) return;
  judge_loops(c, j, answers);
  judge_completion_length(c, j);
}

}  // namespace soak::judge_detail
