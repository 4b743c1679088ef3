// Hard failures of a managed runtime (docs/DESIGN.md §4.8, §3.4): the runtime
// soakd launched ended during the stage, or the candidate's footprint went
// above its memory budget. Each adds its metric row only when it applies (a
// managed candidate, a configured budget), so other verdicts keep their shape.
#include <nlohmann/json.hpp>

#include "core/byte_size.h"
#include "core/log_text.h"
#include "judges/internal.h"

namespace soak::judge_detail {

namespace {

// Reasons quote the end of the runtime's log, at most this much.
constexpr size_t kMaxTailInReason = 400;

// "pid 4242 killed by SIGKILL (signal 9); log tail: ...", from the event's detail.
std::string describe_exit(const Event& e) {
  const auto d = nlohmann::json::parse(e.detail_json, nullptr, false);
  if (!d.is_object()) return "event " + std::to_string(e.id);
  std::string s;
  if (d.contains("pid") && d["pid"].is_number_integer()) s = "pid " + std::to_string(d["pid"].get<int64_t>()) + " ";
  s += d.contains("exit") && d["exit"].is_string() ? d["exit"].get<std::string>()
                                                   : std::string("gone (exit status unknown)");
  if (d.contains("log_tail") && d["log_tail"].is_string() && !d["log_tail"].get<std::string>().empty())
    s += "; log tail: " + log_tail_line(d["log_tail"].get<std::string>(), kMaxTailInReason, "|");
  return s;
}

void runtime_exits(const Context& c, Judgement& j) {
  const auto events = events_of(c, EventKind::ProcessGone, EventScope::Candidate);
  std::vector<int64_t> ids;
  for (const Event* e : events) ids.push_back(e->id);
  const auto n = static_cast<int64_t>(ids.size());
  const std::string reason = n ? format("%lld exit(s) (events %s): ", static_cast<long long>(n), id_list(ids).c_str()) +
                                     describe_exit(*events.front())
                               : std::string("the runtime soakd launched ran through the stage");
  auto m = metric("hard/runtime_exit", n ? MetricResult::Fail : MetricResult::Pass, reason);
  m.n = n;
  set_numbers(m, static_cast<double>(n), 0, 0, 0, 0, 1);
  j.add(std::move(m));
  if (n) j.find(Severity::HardFailure, "runtime_exit (the managed runtime ended during the stage): " + reason);
}

void memory_budget(const Context& c, Judgement& j) {
  const int64_t budget = *c.in.recipe.memory_budget_bytes;
  std::vector<int64_t> over;
  int64_t peak = 0, peak_id = 0, seen = 0;
  for (const auto& s : c.in.process_samples) {
    if (!s.candidate_id || *s.candidate_id != c.in.recipe.candidate_id || !s.footprint_bytes) continue;
    ++seen;
    if (*s.footprint_bytes > peak || (*s.footprint_bytes == peak && s.id < peak_id)) {
      peak = *s.footprint_bytes;
      peak_id = s.id;
    }
    if (*s.footprint_bytes > budget) over.push_back(s.id);
  }
  const auto n = static_cast<int64_t>(over.size());
  std::string reason = n ? format("%lld of %lld samples above the budget %s (samples %s), peak %s at sample %lld",
                                  static_cast<long long>(n), static_cast<long long>(seen), format_bytes(budget).c_str(),
                                  id_list(over).c_str(), format_bytes(peak).c_str(), static_cast<long long>(peak_id))
                         : format("peak %s in %lld samples, budget %s", format_bytes(peak).c_str(),
                                  static_cast<long long>(seen), format_bytes(budget).c_str());
  auto m = metric("hard/memory_budget", n ? MetricResult::Fail : MetricResult::Pass, reason);
  m.n = seen;
  set_numbers(m, static_cast<double>(peak), 0, 0, 0, static_cast<double>(budget), 1);
  j.add(std::move(m));
  if (n) j.find(Severity::HardFailure, "memory_budget (footprint above the candidate's budget): " + reason);
}

}  // namespace

void judge_runtime(const Context& c, Judgement& j) {
  if (c.in.recipe.supervision == Supervision::Managed) runtime_exits(c, j);
  if (c.in.recipe.memory_budget_bytes) memory_budget(c, j);
}

}  // namespace soak::judge_detail
