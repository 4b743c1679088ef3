// Stage rules (smoke, gate, coverage, how the stage ended) and the assembly of
// findings into one VerdictRow. See judge.h for the order of decisions.
#include "judges/judge.h"

#include <algorithm>
#include <cmath>
#include <map>

#include <nlohmann/json.hpp>

#include "core/burst_serial.h"
#include "judges/internal.h"
#include "judges/stats.h"

namespace soak {

std::string_view to_string(BaselineMode m) {
  switch (m) {
    case BaselineMode::None: return "none";
    case BaselineMode::Interleaved: return "interleaved";
    case BaselineMode::History: return "history";
  }
  return "none";
}

bool is_unreachable(Outcome o) {
  return o == Outcome::ConnectRefused || o == Outcome::ConnectTimeout || o == Outcome::Loading;
}

bool perf_judged(ProbeKind k) {
  switch (k) {
    case ProbeKind::Health:
    case ProbeKind::Scrape:
    case ProbeKind::Build:
    case ProbeKind::Cancel: return false;
    default: return true;
  }
}

namespace judge_detail {
namespace {

// A verdict's reason quotes this many findings of the deciding severity.
constexpr size_t kMaxReasons = 2;

struct Counts {
  int64_t attempts = 0;  // rows that count (harness rows excluded)
  int64_t clean = 0;
  int64_t failures = 0;
  int64_t harness = 0;
};
Counts count(const std::vector<const ProbeResult*>& rows) {
  Counts k;
  for (const ProbeResult* r : rows) {
    if (is_harness(*r)) {
      ++k.harness;
      continue;
    }
    ++k.attempts;
    if (is_clean(*r)) ++k.clean;
    if (counts_against(*r)) ++k.failures;
  }
  return k;
}

// The completions among `rows` whose kind `pooled` accepts (all when null).
std::vector<const ProbeResult*> completions(const std::vector<const ProbeResult*>& rows,
                                            const std::vector<ProbeKind>* pooled = nullptr) {
  std::vector<const ProbeResult*> out;
  for (const ProbeResult* r : rows) {
    if (!is_completion(*r)) continue;
    if (pooled && std::find(pooled->begin(), pooled->end(), r->kind) == pooled->end()) continue;
    out.push_back(r);
  }
  return out;
}

double coverage_of(const JudgeInput& in) {
  if (in.recipe.slots_planned <= 0) return 0;
  return static_cast<double>(in.recipe.slots_run) / static_cast<double>(in.recipe.slots_planned);
}

void blocked(const Context& c, Judgement& j) {
  const Counts k = count(c.cand);
  if (k.attempts == 0) {
    j.find(Severity::Inconclusive, "no probe results from the candidate");
    return;
  }
  if (k.clean > 0) return;
  for (const ProbeResult* r : c.cand)
    if (!is_harness(*r) && !is_unreachable(r->outcome)) return;
  auto m = metric("blocked", MetricResult::Fail,
                  format("no clean response; all %lld attempts were connect failures or loading",
                         static_cast<long long>(k.attempts)));
  m.n = k.attempts;
  j.find(Severity::Blocked, "unreachable: " + m.reason);
  j.add(std::move(m));
}

void stage_end(const Context& c, Judgement& j) {
  switch (c.in.recipe.end) {
    case StageEnd::Completed: return;
    case StageEnd::Stopped: j.find(Severity::Inconclusive, "the stage was stopped before its end"); return;
    case StageEnd::TimedOut:
      j.find(Severity::Inconclusive, "the stage reached its deadline without completing");
      return;
  }
}

void coverage(const Context& c, Judgement& j) {
  const double cov = coverage_of(c.in);
  const double min = c.in.recipe.gate.min_coverage;
  const bool enough = c.in.recipe.slots_planned > 0 && cov >= min;
  auto m = metric(
      "coverage", enough ? MetricResult::Pass : MetricResult::Insufficient,
      format("%lld of %lld planned slots ran (%.1f%%), need %.1f%%", static_cast<long long>(c.in.recipe.slots_run),
             static_cast<long long>(c.in.recipe.slots_planned), cov * 100, min * 100));
  m.n = c.in.recipe.slots_run;
  set_numbers(m, cov, 0, 0, 0, min, 1);
  if (!enough) j.find(Severity::Inconclusive, "coverage gap: " + m.reason);
  j.add(std::move(m));
}

// Smoke passes when every probe it ran was clean and every required kind was
// seen clean at least once.
void smoke(const Context& c, Judgement& j) {
  std::map<ProbeKind, std::vector<const ProbeResult*>> by_kind;
  for (ProbeKind k : c.in.smoke_required) by_kind[k];
  for (const ProbeResult* r : c.cand) by_kind[r->kind].push_back(r);
  for (const auto& [kind, rows] : by_kind) {
    const Counts k = count(rows);
    const bool required =
        std::find(c.in.smoke_required.begin(), c.in.smoke_required.end(), kind) != c.in.smoke_required.end();
    const std::string name = "smoke/" + std::string(to_string(kind));
    auto m = metric(name, MetricResult::Pass, "");
    m.n = k.attempts;
    set_numbers(m, static_cast<double>(k.clean), 0, 0, 0, static_cast<double>(k.attempts), 1);
    if (k.failures > 0) {
      const auto first =
          std::find_if(rows.begin(), rows.end(), [](const ProbeResult* r) { return counts_against(*r); });
      m.result = MetricResult::Fail;
      m.reason = format("%lld of %lld not clean, first %s (row %lld)", static_cast<long long>(k.failures),
                        static_cast<long long>(k.attempts), std::string(to_string((*first)->outcome)).c_str(),
                        static_cast<long long>((*first)->id));
      if (!(*first)->detail.empty()) m.reason += ": " + (*first)->detail;
      j.find(Severity::Failure, name + ": " + m.reason);
    } else if (const auto unproven =
                   std::count_if(rows.begin(), rows.end(),
                                 [](const ProbeResult* r) { return r->outcome == Outcome::IdentityUnproven; });
               unproven > 0) {
      // Ran, and nothing proves which weights serve: a hold (judges/hard.cc).
      m.result = MetricResult::Marginal;
      m.reason = format("%lld of %lld clean, %lld identity unproven (held)", static_cast<long long>(k.clean),
                        static_cast<long long>(k.attempts), static_cast<long long>(unproven));
    } else if (k.clean == 0 && required) {
      m.result = MetricResult::Insufficient;
      m.reason = "required, never ran";
      j.find(Severity::Inconclusive, name + ": " + m.reason);
    } else {
      m.reason = format("%lld of %lld clean", static_cast<long long>(k.clean), static_cast<long long>(k.attempts));
    }
    j.add(std::move(m));
  }
}

// How a failure ratio fails: the gate and soak on the plain ratio at or over
// their tolerance; the canary on the lower bound of its interval (below).
enum class RatioRule { PointEstimate, LowerBound };

// What a passing failure ratio over `n` attempts can see: a runtime failing
// at rate p shows no failure in n attempts with probability (1 - p)^n, so the
// smallest rate that shows at least one failure half the time is
// 1 - 0.5^(1/n) (about 0.69 / n), and the rule cannot tell rates under its
// tolerance apart from it.
std::string ratio_sees(int64_t n, double max) {
  const double p = n > 0 ? 1 - std::pow(0.5, 1.0 / static_cast<double>(n)) : 1;
  return format(
      "a failure rate of %s or more (it shows a failure at least half the time on %lld completions; "
      "tolerance %s)",
      pct(std::max(p, 0.0)).substr(1).c_str(), static_cast<long long>(n), pct(max).substr(1).c_str());
}

void ratio_metric(const Context& c, Judgement& j, const Counts& k, const std::string& name, double max,
                  const char* none, RatioRule rule, std::vector<ProbeKind> kinds) {
  j.need({name, k.attempts, c.in.recipe.judge.min_samples, "completions", std::move(kinds), ratio_sees(k.attempts, max),
          0});
  auto m = metric(name, MetricResult::Pass, "");
  m.n = k.attempts;
  if (k.attempts == 0) {
    m.result = MetricResult::Insufficient;
    m.reason = none;
    set_numbers(m, 0, 0, 0, 1, max, 1);
    j.add(std::move(m));
    return;
  }
  const double ratio = static_cast<double>(k.failures) / static_cast<double>(k.attempts);
  const auto ci = stats::wilson_interval(k.failures, k.attempts, c.confidence());
  const bool fail = rule == RatioRule::PointEstimate ? ratio >= max : ci.lo > max;
  m.result = fail ? MetricResult::Fail : MetricResult::Pass;
  if (rule == RatioRule::PointEstimate)
    m.reason = format("%lld of %lld completions failed (%.2f%%), must stay under %.2f%%",
                      static_cast<long long>(k.failures), static_cast<long long>(k.attempts), ratio * 100, max * 100);
  else
    m.reason = format(
        "%lld of %lld functional, long-context, burst and capacity completions failed (%.2f%%, %.0f%% "
        "interval %.2f%%..%.2f%%); fails when the lower bound is above %.2f%%",
        static_cast<long long>(k.failures), static_cast<long long>(k.attempts), ratio * 100, c.confidence() * 100,
        ci.lo * 100, ci.hi * 100, max * 100);
  set_numbers(m, ratio, 0, ci.lo, ci.hi, max, 1);
  if (fail) j.find(Severity::Failure, "failure ratio: " + m.reason);
  j.add(std::move(m));
}

void failure_ratio(const Context& c, Judgement& j) {
  // The stage's own traffic brings more of it (its end-of-stage runs aside).
  const auto traffic = c.in.recipe.stage == StageKind::Gate
                           ? probe_kinds_for(TaskKind::Agent, c.in.recipe.workload)
                           : probe_kinds_for(TaskKind::SoakTraffic, c.in.recipe.workload);
  ratio_metric(c, j, count(completions(c.cand)), "failure_ratio", c.in.recipe.gate.max_failure_ratio, "no attempts",
               RatioRule::PointEstimate, traffic);
}

// The canary's pooled rule (docs/DESIGN.md §3.9). A canary sees a hundred or
// so completions, where one transient already puts the point estimate over a
// 1 % tolerance; it fails only when the lower bound of the failure rate's
// Wilson interval (at 1 - alpha) is above the tolerance, i.e. when the rows
// show the runtime failing more often than tolerated, not merely once.
// 1 in 8 with HTTP 500 rejects from 8 completions on; 1 in 100 never does.
void canary_failure_ratio(const Context& c, Judgement& j) {
  const std::vector<ProbeKind> pooled = canary_pooled_kinds(c.in.recipe.workload);
  std::vector<const ProbeResult*> rows;
  for (const ProbeResult* r : completions(c.cand, &pooled))
    if (!refused_long_prompt(*r)) rows.push_back(r);
  ratio_metric(c, j, count(rows), "failure_ratio/pooled", c.in.recipe.judge.max_failure_ratio,
               "no functional, long-context, burst or capacity completions", RatioRule::LowerBound, pooled);
}

// The gate counts completed (clean) agent requests. Too few with full coverage
// of a completed stage means the runtime could not keep up: a failure. Too few
// otherwise means the evidence is short: inconclusive.
void gate_completed(const Context& c, Judgement& j) {
  // A pooling candidate's gate traffic is its pooling requests.
  const auto traffic = probe_kinds_for(TaskKind::Agent, c.in.recipe.workload);
  const char* what = c.in.recipe.workload == WorkloadKind::Chat ? "agent" : "pooling";
  int64_t completed = 0;
  for (const ProbeResult* r : c.cand)
    if (std::find(traffic.begin(), traffic.end(), r->kind) != traffic.end() && is_clean(*r)) ++completed;
  const int64_t need = c.in.recipe.gate.min_completed;
  j.need({"gate_completed", completed, need, std::string("completed ") + what + " requests", traffic, "", 0});
  auto m = metric("gate_completed", MetricResult::Pass, "");
  m.n = completed;
  set_numbers(m, static_cast<double>(completed), 0, 0, 0, static_cast<double>(need), 1);
  const std::string text = format("%lld completed %s requests, need %lld", static_cast<long long>(completed), what,
                                  static_cast<long long>(need));
  if (completed >= need) {
    m.reason = text;
  } else if (c.in.recipe.end == StageEnd::Completed && coverage_of(c.in) >= c.in.recipe.gate.min_coverage) {
    m.result = MetricResult::Fail;
    m.reason = "too few with full coverage: " + text;
    j.find(Severity::Failure, "gate: " + m.reason);
  } else {
    // Short: its evidence row says so, and the gate may run on for it.
    m.result = MetricResult::Insufficient;
    m.reason = text;
  }
  j.add(std::move(m));
}

// A burst summary's queue figures as the probe stored them (probes/engine_rows.h
// BurstSummary::to_json); nullopt when the row has none (the probe's outcome
// then stands alone). Slots: the summary's, else the row's.
struct StoredBurst {
  BurstQueueFigures figures;
  std::optional<int> slots;
};
std::optional<StoredBurst> stored_burst(const ProbeResult& r) {
  const auto j = nlohmann::json::parse(r.extra_json, nullptr, false);
  if (!j.is_object() || !j.contains("n") || !j["n"].is_number_integer()) return std::nullopt;
  StoredBurst b;
  const auto number = [&](const char* key) -> std::optional<double> {
    if (auto it = j.find(key); it != j.end() && it->is_number()) return it->get<double>();
    return std::nullopt;
  };
  b.figures.n = j["n"].get<int>();
  if (auto it = j.find("answered"); it != j.end() && it->is_number_integer()) b.figures.answered = it->get<int>();
  if (auto it = j.find("serialized"); it != j.end() && it->is_boolean()) b.figures.stored_serialized = it->get<bool>();
  if (auto it = j.find("peak_decoding"); it != j.end() && it->is_number()) b.figures.peak_decoding = it->get<int>();
  b.figures.service_ms = number("service_ms");
  b.figures.queue_span_ms = number("queue_span_ms");
  b.figures.queue_ratio = number("queue_ratio");
  if (auto it = j.find("runtime_slots"); it != j.end() && it->is_number_integer()) {
    b.slots = it->get<int>();
  } else if (r.runtime_slots) {
    b.slots = static_cast<int>(*r.runtime_slots);
  }
  return b;
}

// A burst served one at a time by a runtime with more than one slot, with an
// effect a user would feel: each place in the queue adds at least
// judge.serial_min_share of one answer's service time and
// judge.serial_min_effect_ms to the time to first token (core/burst_serial.h;
// one slot is the expected FIFO, docs/DESIGN.md §3.9). Judged from the
// summaries' stored figures with the recipe's floors, so explain recomputes
// it; a summary without figures keeps the probe's own outcome. Summary rows
// are not attempts, so this is their rule.
void burst_serialization(const Context& c, Judgement& j) {
  const SerialFloors floors{c.in.recipe.judge.serial_min_share, c.in.recipe.judge.serial_min_effect_ms};
  std::vector<int64_t> serial_ids, under_ids;
  std::string first_serial;
  std::optional<double> most_under;  // the largest rise per place among those under the floor
  int64_t summaries = 0;
  for (const ProbeResult* r : c.cand) {
    if (r->kind != ProbeKind::Burst || !is_group_summary(*r)) continue;
    ++summaries;
    const auto b = stored_burst(*r);
    if (!b) {
      if (r->outcome != Outcome::SerializedBurst) continue;
      serial_ids.push_back(r->id);
      if (first_serial.empty()) first_serial = r->workload_id + ": " + r->detail + " (no queue figures stored)";
      continue;
    }
    if (!b->slots || *b->slots <= 1) continue;  // one slot: the expected FIFO; none known: nothing to reject on
    const SerialCall call = read_serial(b->figures, floors);
    const std::string what = format("%s: %d requests served one at a time on a runtime with %d slots (",
                                    r->workload_id.c_str(), b->figures.n, *b->slots) +
                             describe_rise(call, b->figures) + ")";
    if (call.reading == SerialReading::Serial) {
      serial_ids.push_back(r->id);
      if (first_serial.empty()) first_serial = what;
    } else if (call.reading == SerialReading::UnderFloor) {
      under_ids.push_back(r->id);
      if (call.rise_ms && (!most_under || *call.rise_ms > *most_under)) most_under = call.rise_ms;
    }
  }
  if (summaries == 0) return;
  const bool fails = !serial_ids.empty();
  auto m = metric("burst_serialization", fails ? MetricResult::Fail : MetricResult::Pass,
                  format("%zu of %lld bursts served one at a time on a multi-slot runtime", serial_ids.size(),
                         static_cast<long long>(summaries)));
  m.n = summaries;
  set_numbers(m, static_cast<double>(serial_ids.size()), 0, 0, 0, static_cast<double>(floors.min_effect_ms), 1);
  if (fails) m.reason += " (rows " + id_list(serial_ids) + "): " + first_serial;
  if (!under_ids.empty())
    m.reason += format(
        "; %zu more were, but their time to first token rose by at most %s ms per place in the queue "
        "(rows %s), under the floor: an effect nobody would feel",
        under_ids.size(), most_under ? format("%.1f", *most_under).c_str() : "an unrecorded",
        id_list(under_ids).c_str());
  m.reason += "; " + describe_floors(floors);
  if (fails) j.find(Severity::Failure, "burst: " + m.reason);
  j.add(std::move(m));
}

// What a duplicate_engine event names: "llama.cpp pid 4242".
std::string engine_named(const Event& e) {
  auto d = nlohmann::json::parse(e.detail_json, nullptr, false);
  if (d.is_discarded() || !d.is_object()) return "an engine";
  auto rt = d.find("runtime");
  std::string s = rt != d.end() && rt->is_string() ? rt->get<std::string>() : std::string("an engine");
  if (auto it = d.find("pid"); it != d.end() && it->is_number_integer())
    s += " pid " + std::to_string(it->get<int64_t>());
  return s;
}

// SOLO (docs/DESIGN.md §3.9; the field reports require it): figures taken
// while another inference engine was resident on the host say nothing about
// the candidate alone, so the stage is inconclusive, naming the engine. A
// candidate that is meant to run beside others says allow_coexisting: true.
void solo(const Context& c, Judgement& j) {
  const auto dups = events_of(c, EventKind::DuplicateEngine, EventScope::Candidate);
  std::vector<int64_t> ids;
  std::vector<std::string> engines;
  for (const Event* e : dups) {
    ids.push_back(e->id);
    std::string name = engine_named(*e);
    if (std::find(engines.begin(), engines.end(), name) == engines.end()) engines.push_back(std::move(name));
  }
  std::string named;
  for (size_t i = 0; i < engines.size() && i < kMaxReasons; ++i) named += (i ? ", " : "") + engines[i];
  if (engines.size() > kMaxReasons) named += format(" and %zu more", engines.size() - kMaxReasons);
  auto d = metric(std::string(to_string(EventKind::DuplicateEngine)), MetricResult::Pass, "none");
  d.n = static_cast<int64_t>(dups.size());
  set_numbers(d, static_cast<double>(dups.size()), 0, 0, 0, 0, 1);
  if (!dups.empty() && c.in.recipe.allow_coexisting) {
    d.reason = format("another inference engine was resident (%s; events %s); allowed by allow_coexisting",
                      named.c_str(), id_list(ids).c_str());
  } else if (!dups.empty()) {
    d.result = MetricResult::Insufficient;
    d.reason = format(
        "another inference engine was resident during the stage (%s; events %s): not a SOLO run; "
        "set allow_coexisting: true on the candidate to judge it beside others",
        named.c_str(), id_list(ids).c_str());
    j.find(Severity::Inconclusive, "solo: " + d.reason);
  }
  j.add(std::move(d));
}

void reports(const Context& c, Judgement& j) {
  std::map<Outcome, int64_t> harness;
  int64_t artifacts = 0;
  for (const ProbeResult* r : c.cand) {
    if (is_harness(*r)) ++harness[r->outcome];
    if (r->timing_artifact) ++artifacts;
  }
  int64_t total = 0;
  std::string by_class;
  for (const auto& [o, n] : harness) {
    total += n;
    by_class +=
        format("%s%s %lld", by_class.empty() ? "" : ", ", std::string(to_string(o)).c_str(), static_cast<long long>(n));
  }
  auto h = metric("harness_errors", MetricResult::Pass,
                  total ? "not counted against the candidate: " + by_class : std::string("none"));
  h.n = total;
  set_numbers(h, static_cast<double>(total), 0, 0, 0, 0, 1);
  j.add(std::move(h));
  solo(c, j);
  auto t = metric("timing_artifacts", MetricResult::Pass,
                  format("%lld row(s) with first output and finish implausibly close, excluded from rates",
                         static_cast<long long>(artifacts)));
  t.n = artifacts;
  set_numbers(t, static_cast<double>(artifacts), 0, 0, 0, 0, 1);
  j.add(std::move(t));
}

VerdictState state_of(Severity s) {
  switch (s) {
    case Severity::HardFailure:
    case Severity::Failure: return VerdictState::Rejected;
    case Severity::Blocked: return VerdictState::Blocked;
    case Severity::LaunchHold: return VerdictState::Hold;
    case Severity::Inconclusive: return VerdictState::Inconclusive;
    case Severity::Hold: return VerdictState::Hold;
  }
  return VerdictState::Inconclusive;
}

// "passed on 9 decisive rules with their evidence (...); 56 checks pass, 82
// had too few samples": the rules a promotion rests on first, then the
// per-locator checks, thin ones among them, whose pooled rules decided.
std::string passed_summary(const Context& c, const Judgement& j) {
  int64_t pass = 0, insufficient = 0;
  for (const auto& m : j.metrics) {
    if (m.metric.rfind("evidence/", 0) == 0) continue;
    if (m.result == MetricResult::Pass) ++pass;
    if (m.result == MetricResult::Insufficient) ++insufficient;
  }
  std::string s = "passed";
  std::vector<std::string> decisive;
  for (const EvidenceNeed& n : j.needs)
    if (n.decisive) decisive.push_back(n.rule);
  if (!decisive.empty()) {
    s += format(" on %zu decisive rule%s with their evidence (", decisive.size(), decisive.size() == 1 ? "" : "s");
    for (size_t i = 0; i < decisive.size() && i < 4; ++i) s += (i ? ", " : "") + decisive[i];
    if (decisive.size() > 4) s += format(" and %zu more", decisive.size() - 4);
    s += ")";
  }
  s += format(": %lld checks pass, %lld had too few samples", static_cast<long long>(pass),
              static_cast<long long>(insufficient));
  if (c.in.recipe.stage == StageKind::Canary)
    s += format("; baseline %s", std::string(to_string(c.in.recipe.baseline_mode)).c_str());
  return s;
}

VerdictRow assemble(const Context& c, Judgement&& j) {
  const JudgeInput& in = c.in;
  VerdictRow v;
  v.candidate_id = in.recipe.candidate_id;
  v.stage_id = in.recipe.stage_id;
  v.wall_ms = in.recipe.now_ms;
  v.stage = std::string(to_string(in.recipe.stage));
  v.judge_version = std::string(kJudgeVersion);
  v.config_hash = in.recipe.config_hash;
  v.baseline_id = in.recipe.baseline_id;
  v.baseline_mode = std::string(to_string(in.recipe.baseline_mode));
  for (const ProbeResult* r : c.cand) {
    v.evidence_first_id = v.evidence_first_id ? std::min(v.evidence_first_id, r->id) : r->id;
    v.evidence_last_id = std::max(v.evidence_last_id, r->id);
  }

  std::optional<Severity> decisive;
  for (const auto& f : j.findings)
    if (!decisive || f.severity < *decisive) decisive = f.severity;
  if (!decisive) {
    v.state = VerdictState::Promoted;
    v.reason = v.stage + " " + passed_summary(c, j);
  } else {
    v.state = state_of(*decisive);
    std::vector<const Finding*> chosen;
    for (const auto& f : j.findings)
      if (f.severity == *decisive) chosen.push_back(&f);
    std::string reason = v.stage + " " + std::string(to_string(v.state)) + ": ";
    if (*decisive == Severity::HardFailure) reason += "hard failure, ";
    for (size_t i = 0; i < chosen.size() && i < kMaxReasons; ++i) reason += (i ? "; " : "") + chosen[i]->reason;
    if (chosen.size() > kMaxReasons)
      reason += format(" (and %zu more; soakctl explain lists them)", chosen.size() - kMaxReasons);
    v.reason = std::move(reason);
    // Inconclusive for want of evidence alone: the rules a stage that runs on
    // would give more of (campaigns decide whether it can).
    if (*decisive == Severity::Inconclusive &&
        std::all_of(chosen.begin(), chosen.end(), [](const Finding* f) { return f->gap.has_value(); }))
      for (const Finding* f : chosen) v.awaiting_evidence.push_back(*f->gap);
  }
  // ab "interleaved" that fell back to history says why, whatever the verdict.
  if (in.recipe.stage == StageKind::Canary && !in.recipe.baseline_note.empty() &&
      in.recipe.baseline_mode != BaselineMode::Interleaved)
    v.reason += "; " + in.recipe.baseline_note;
  v.metrics = std::move(j.metrics);
  return v;
}

}  // namespace
}  // namespace judge_detail

VerdictRow judge_stage(const JudgeInput& in) {
  using namespace judge_detail;
  const Context c(in);
  Judgement j;
  judge_hard(c, j);
  judge_launch_cap(c, j);
  blocked(c, j);
  stage_end(c, j);
  coverage(c, j);
  judge_heavy_work(c, j);
  switch (in.recipe.stage) {
    case StageKind::Smoke: smoke(c, j); break;
    case StageKind::Canary:
      canary_failure_ratio(c, j);
      judge_long_context(c, j);
      judge_capacity(c, j);
      judge_prefix_reuse(c, j);
      judge_pooling_rps(c, j);
      judge_equivalence(c, j);
      break;
    case StageKind::Gate:
      gate_completed(c, j);
      failure_ratio(c, j);
      judge_rounds(c, j);
      judge_session(c, j);
      break;
    case StageKind::Soak:
      failure_ratio(c, j);
      judge_rounds(c, j);
      judge_session(c, j);
      judge_equivalence(c, j);
      break;
  }
  judge_answers(c, j);
  judge_floors(c, j);
  burst_serialization(c, j);
  judge_compare(c, j);
  judge_self(c, j);
  judge_trends(c, j);
  judge_evidence(c, j);
  reports(c, j);
  return assemble(c, std::move(j));
}

std::vector<EvidenceProgress> evidence_progress(const JudgeInput& in) {
  using namespace judge_detail;
  const Context c(in);
  Judgement j;
  std::vector<EvidenceProgress> out;
  switch (in.recipe.stage) {
    case StageKind::Smoke: return out;
    case StageKind::Canary: canary_failure_ratio(c, j); break;
    case StageKind::Gate:
      gate_completed(c, j);
      failure_ratio(c, j);
      break;
    case StageKind::Soak:
      failure_ratio(c, j);
      judge_drift_evidence(c, j);
      break;
  }
  for (const EvidenceNeed& n : j.needs)
    if (n.decisive) out.push_back({n.rule, n.had, n.needed, n.unit});
  return out;
}

std::optional<VerdictRow> judge_hard_failures(const JudgeInput& in) {
  using namespace judge_detail;
  const Context c(in);
  Judgement j;
  judge_hard(c, j);
  // Only what rejects ends a stage early; a hold (identity_unproven) is
  // stated when the stage ends.
  if (std::none_of(j.findings.begin(), j.findings.end(),
                   [](const Finding& f) { return f.severity == Severity::HardFailure; }))
    return std::nullopt;
  return assemble(c, std::move(j));
}

std::optional<VerdictRow> judge_launch_hold(const JudgeInput& in) {
  using namespace judge_detail;
  const Context c(in);
  Judgement j;
  judge_launch_cap(c, j);
  if (std::none_of(j.findings.begin(), j.findings.end(),
                   [](const Finding& f) { return f.severity == Severity::LaunchHold; }))
    return std::nullopt;
  return judge_stage(in);  // the whole verdict, as soakctl explain recomputes it
}

}  // namespace soak
