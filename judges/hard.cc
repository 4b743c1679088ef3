// Hard failures: any one rejects the candidate at once, whatever else the rows
// say (docs/DESIGN.md §3.4). Every class gets a metric row, so a
// verdict also shows what was checked and found clean.
#include <algorithm>
#include <map>
#include <utility>

#include "judges/internal.h"
#include "judges/stats.h"

namespace soak::judge_detail {

namespace {

// Reasons quote at most this much of a row's detail or an event's JSON.
constexpr size_t kMaxQuoted = 160;

std::string quoted(const std::string& s) {
  if (s.empty() || s == "{}") return {};
  return ": " + (s.size() > kMaxQuoted ? s.substr(0, kMaxQuoted) + "..." : s);
}

// Whether a class shows a metric row when none of its rows were seen.
// Every class does, except one added after stores were written: rows stored
// before its outcome existed cannot carry it, and a clean row of it would make
// every verdict judged before recompute differently (soakctl explain).
enum class CleanRow { Shown, Omitted };

struct RowClass {
  std::string_view name;
  std::vector<Outcome> outcomes;
  CleanRow clean_row = CleanRow::Shown;
  // HardFailure rejects; Hold keeps the candidate from promotion with the
  // reason, without calling it broken.
  Severity severity = Severity::HardFailure;
};

// Any single row of these classes is a hard failure.
const std::vector<RowClass>& row_classes() {
  static const std::vector<RowClass> k{
      {"hung_stream", {Outcome::NoBody, Outcome::Stalled}},
      {"no_terminal", {Outcome::NoTerminal}},
      // Refused or dropped before a status line: the runtime shed the request
      // (a burst past what it admits), which an operator must not read as a hang.
      {"connection_reset", {Outcome::ConnectionReset}, CleanRow::Omitted},
      {"identity_mismatch", {Outcome::IdentityMismatch}},
      // A runtime whose answers only echo the requested model proves nothing
      // about the weights (docs/DESIGN.md §7.2): never a pass. Nothing shows
      // the candidate broken either (an oMLX without loaded_models, an MLX-LM
      // whose argv this user cannot read): it is held, the row's detail
      // saying what would prove it.
      {"identity_unproven", {Outcome::IdentityUnproven}, CleanRow::Omitted, Severity::Hold},
      {"stale_slot", {Outcome::StaleSlot}},
      // A runtime that cuts an answer with its own default (MLX-LM's 512, llama-server's
      // -n) cuts every long answer the same way: one row shows how it was started, and
      // the rest of its figures (answer length, decode rate) are shaped by the cap
      // (docs/DESIGN.md §2.2). The row's detail says how to lift it.
      {"server_token_cap", {Outcome::ServerTokenCap}, CleanRow::Omitted},
  };
  return k;
}

// These are tolerated up to JudgeRules::max_invalid_ratio of the rows that
// ask for structured output.
const std::vector<RowClass>& ratio_classes() {
  static const std::vector<RowClass> k{
      {"invalid_json", {Outcome::InvalidJson}},
      {"invalid_tool_call", {Outcome::InvalidToolCall}},
      {"empty_tool_args", {Outcome::EmptyToolArgs}},
  };
  return k;
}

bool asks_structured_output(ProbeKind k) {
  return k == ProbeKind::StrictJson || k == ProbeKind::ToolCall || k == ProbeKind::Agent;
}

bool in_class(const RowClass& c, Outcome o) {
  return std::find(c.outcomes.begin(), c.outcomes.end(), o) != c.outcomes.end();
}

std::string hard_name(std::string_view cls) { return "hard/" + std::string(cls); }

void row_class(const Context& c, const RowClass& cls, Judgement& j) {
  std::vector<int64_t> ids;
  const ProbeResult* first = nullptr;
  for (const ProbeResult* r : c.cand)
    if (in_class(cls, r->outcome)) {
      ids.push_back(r->id);
      if (!first) first = r;
    }
  const auto n = static_cast<int64_t>(ids.size());
  if (!first) {
    if (cls.clean_row == CleanRow::Omitted) return;
    auto m = metric(hard_name(cls.name), MetricResult::Pass, format("none in %zu rows", c.cand.size()));
    j.add(std::move(m));
    return;
  }
  std::string reason = format("%lld row(s) (%s), first %s at probe %s", static_cast<long long>(n), id_list(ids).c_str(),
                              std::string(to_string(first->outcome)).c_str(), first->workload_id.c_str()) +
                       quoted(first->detail);
  const bool held = cls.severity == Severity::Hold;
  auto m = metric(hard_name(cls.name), held ? MetricResult::Marginal : MetricResult::Fail, reason);
  m.n = n;
  set_numbers(m, static_cast<double>(n), 0, 0, 0, 0, 1);
  j.add(std::move(m));
  j.find(cls.severity, std::string(cls.name) + (held ? " (held, not promoted): " : ": ") + reason);
}

void ratio_class(const Context& c, const RowClass& cls, Judgement& j) {
  int64_t attempts = 0;
  std::vector<int64_t> ids;
  const ProbeResult* first = nullptr;
  for (const ProbeResult* r : c.cand) {
    const bool hit = in_class(cls, r->outcome);
    // Agent-session turns are counted by context band instead (judges/session.cc);
    // leaked markup decided its row before the structure was judged (markup_class).
    if (is_harness(*r) || is_session_row(*r) || r->outcome == Outcome::LeakedMarkup ||
        !(hit || asks_structured_output(r->kind)))
      continue;
    ++attempts;
    if (hit) {
      ids.push_back(r->id);
      if (!first) first = r;
    }
  }
  const auto bad = static_cast<int64_t>(ids.size());
  const double ratio = attempts ? static_cast<double>(bad) / static_cast<double>(attempts) : 0.0;
  const double tolerance = c.in.recipe.judge.max_invalid_ratio;
  const bool fail = bad > 0 && ratio > tolerance;
  std::string reason =
      format("%lld of %lld structured-output rows (%.1f%%), tolerance %.1f%%", static_cast<long long>(bad),
             static_cast<long long>(attempts), ratio * 100, tolerance * 100);
  if (first) reason += "; rows " + id_list(ids) + quoted(first->detail);
  auto m = metric(hard_name(cls.name), fail ? MetricResult::Fail : MetricResult::Pass, reason);
  m.n = attempts;
  auto ci = stats::wilson_interval(bad, attempts, c.confidence());
  set_numbers(m, ratio, 0, ci.lo, ci.hi, tolerance, 1);
  j.add(std::move(m));
  if (fail) j.find(Severity::HardFailure, std::string(cls.name) + " beyond tolerance: " + reason);
}

// Answers read for leaked markup (probes/answer_check.h): the contract passed
// and answer output (content or a tool call) arrived, so the answer was read.
// The cancel probe's stream is cut on purpose and never read.
bool answer_read(const ProbeResult& r) {
  if (r.outcome == Outcome::LeakedMarkup) return true;
  if (is_harness(r) || !is_completion(r) || r.kind == ProbeKind::Cancel || r.content_events <= 0) return false;
  switch (r.outcome) {
    case Outcome::Clean:
    case Outcome::MissingMarker:
    case Outcome::EmptyAnswer:
    case Outcome::InvalidJson:
    case Outcome::InvalidToolCall:
    case Outcome::EmptyToolArgs:
    case Outcome::MissingToolCall:
    case Outcome::Repetition:
    case Outcome::ServerTokenCap: return true;
    default: return false;
  }
}

// Answer hygiene (docs/DESIGN.md §2.1, §3.4): content that carried reasoning
// markup, a harmony header, a chat-template token, U+FFFD or a control
// character. One such answer breaks the client that reads it; a reasoning
// parser or template that changed breaks all of them, and every stage's
// traffic shows it. Tolerated as structured output is, up to
// judge.max_invalid_ratio of the answers read, so a canary whose every answer
// leaks is rejected at its first check. The reason quotes the first row's
// detail and excerpt. Shown only once a row of it was seen (CleanRow::Omitted:
// stores written before the outcome existed cannot carry it).
void markup_class(const Context& c, Judgement& j) {
  int64_t attempts = 0;
  std::vector<int64_t> ids;
  const ProbeResult* first = nullptr;
  for (const ProbeResult* r : c.cand) {
    if (!answer_read(*r)) continue;
    ++attempts;
    if (r->outcome != Outcome::LeakedMarkup) continue;
    ids.push_back(r->id);
    if (!first) first = r;
  }
  if (!first) return;
  const auto bad = static_cast<int64_t>(ids.size());
  const double ratio = static_cast<double>(bad) / static_cast<double>(attempts);
  const double tolerance = c.in.recipe.judge.max_invalid_ratio;
  const bool fail = ratio > tolerance;
  std::string reason =
      format("%lld of %lld answers carried markup (%.1f%%), tolerance %.1f%%; rows %s, first %s row %lld",
             static_cast<long long>(bad), static_cast<long long>(attempts), ratio * 100, tolerance * 100,
             id_list(ids).c_str(), std::string(to_string(first->kind)).c_str(), static_cast<long long>(first->id)) +
      quoted(first->detail);
  if (!first->excerpt.empty()) reason += "; excerpt" + quoted(first->excerpt);
  auto m = metric(hard_name("leaked_markup"), fail ? MetricResult::Fail : MetricResult::Pass, reason);
  m.n = attempts;
  auto ci = stats::wilson_interval(bad, attempts, c.confidence());
  set_numbers(m, ratio, 0, ci.lo, ci.hi, tolerance, 1);
  j.add(std::move(m));
  if (fail) j.find(Severity::HardFailure, "leaked_markup beyond tolerance: " + reason);
}

// A process identity (pid, start time) of the candidate that appears after
// another one of the same name was last seen replaced it: the runtime was
// restarted, even when nobody wrote an event for it. Processes that live side
// by side (a server and its runner) overlap in time and are never counted.
std::vector<int64_t> sampled_restarts(const Context& c) {
  struct Life {
    int64_t first_ms = 0, first_id = 0, last_ms = 0;
  };
  using Identity = std::pair<int, int64_t>;
  std::map<std::string, std::map<Identity, Life>> by_name;
  for (const auto& s : c.in.process_samples) {
    if (!s.candidate_id || *s.candidate_id != c.in.recipe.candidate_id || s.pid <= 0) continue;
    auto [it, fresh] =
        by_name[s.name].try_emplace(Identity{s.pid, s.start_time.value_or(-1)}, Life{s.wall_ms, s.id, s.wall_ms});
    Life& life = it->second;
    if (fresh) continue;
    if (s.wall_ms < life.first_ms || (s.wall_ms == life.first_ms && s.id < life.first_id))
      life.first_ms = s.wall_ms, life.first_id = s.id;
    life.last_ms = std::max(life.last_ms, s.wall_ms);
  }
  std::vector<int64_t> ids;
  for (const auto& [name, lives] : by_name)
    for (const auto& [id_b, b] : lives)
      for (const auto& [id_a, a] : lives)
        if (id_a != id_b && a.last_ms < b.first_ms) {
          ids.push_back(b.first_id);
          break;
        }
  std::sort(ids.begin(), ids.end());
  return ids;
}

void restarts(const Context& c, Judgement& j) {
  const auto events = events_of(c, EventKind::ProcessRestart, EventScope::Candidate);
  const auto sampled = sampled_restarts(c);
  std::vector<int64_t> event_ids;
  for (const Event* e : events) event_ids.push_back(e->id);
  const auto n = static_cast<int64_t>(event_ids.size() + sampled.size());
  std::string reason;
  if (n == 0) {
    reason =
        format("no restart event, no pid or start-time change in %zu process samples", c.in.process_samples.size());
  } else {
    std::vector<std::string> parts;
    if (!events.empty())
      parts.push_back(format("%zu restart event(s) (events %s)", events.size(), id_list(event_ids).c_str()) +
                      quoted(events.front()->detail_json));
    if (!sampled.empty())
      parts.push_back(format("%zu pid/start-time change(s) at samples %s", sampled.size(), id_list(sampled).c_str()));
    for (const auto& p : parts) reason += (reason.empty() ? "" : "; ") + p;
  }
  auto m = metric(hard_name(to_string(EventKind::ProcessRestart)), n ? MetricResult::Fail : MetricResult::Pass, reason);
  m.n = n;
  set_numbers(m, static_cast<double>(n), 0, 0, 0, 0, 1);
  j.add(std::move(m));
  if (n) j.find(Severity::HardFailure, "process_restart (crash/restart): " + reason);
}

void guard_trips(const Context& c, Judgement& j) {
  const auto events = events_of(c, EventKind::GuardTrip, EventScope::CandidateOrHost);
  std::vector<int64_t> ids;
  for (const Event* e : events) ids.push_back(e->id);
  const auto n = static_cast<int64_t>(ids.size());
  std::string reason = n ? format("%lld trip(s) (events %s)", static_cast<long long>(n), id_list(ids).c_str()) +
                               quoted(events.front()->detail_json)
                         : std::string("memory guard quiet");
  auto m = metric(hard_name(to_string(EventKind::GuardTrip)), n ? MetricResult::Fail : MetricResult::Pass, reason);
  m.n = n;
  set_numbers(m, static_cast<double>(n), 0, 0, 0, 0, 1);
  j.add(std::move(m));
  if (n) j.find(Severity::HardFailure, "guard_trip (memory guard): " + reason);
}

}  // namespace

void judge_hard(const Context& c, Judgement& j) {
  // First: its findings name the context band and the turn, which say more
  // than the 5xx run that the same rows also trip.
  judge_session_hard(c, j);
  for (const auto& cls : row_classes()) row_class(c, cls, j);
  // Before the sequential test: the markup names what the failure ratios that
  // the same rows raise only count.
  markup_class(c, j);
  // The 5xx ratio is one of its measures: runs of 5xx are no rule of their own.
  judge_sequential(c, j);
  restarts(c, j);
  guard_trips(c, j);
  for (const auto& cls : ratio_classes()) ratio_class(c, cls, j);
  judge_runtime(c, j);
  judge_unserved(c, j);
}

}  // namespace soak::judge_detail
