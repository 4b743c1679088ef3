// The judge's shared vocabulary: the prepared input, locators and pools,
// per-row figures and the text of reasons.
#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>

#include "core/hash.h"
#include "core/tasks.h"
#include "judges/internal.h"

namespace soak::judge_detail {

namespace {

// Labels show this many hex digits of a hash: enough to tell locators apart by eye.
constexpr size_t kLabelHashChars = 8;
constexpr size_t kMaxListedIds = 5;

std::vector<const ProbeResult*> time_ordered(const std::vector<ProbeResult>& rows) {
  std::vector<const ProbeResult*> out;
  out.reserve(rows.size());
  for (const auto& r : rows) out.push_back(&r);
  std::sort(out.begin(), out.end(), [](const ProbeResult* a, const ProbeResult* b) {
    if (a->started_wall_ms != b->started_wall_ms) return a->started_wall_ms < b->started_wall_ms;
    return a->id < b->id;
  });
  return out;
}

double finite_or_zero(double v) { return std::isfinite(v) ? v : 0.0; }

std::string short_hash(std::string_view s) { return s.empty() ? "-" : hash_hex(s).substr(0, kLabelHashChars); }

}  // namespace

Context::Context(const JudgeInput& input)
    : in(input),
      cand(time_ordered(input.candidate_rows)),
      base(time_ordered(input.baseline_rows)),
      own(time_ordered(input.own_rows)) {}

// ============================================================== text
std::string format(const char* fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  int n = std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  if (n < 0) return {};
  if (static_cast<size_t>(n) < sizeof buf) return std::string(buf, static_cast<size_t>(n));
  std::string out(static_cast<size_t>(n) + 1, '\0');
  va_start(ap, fmt);
  std::vsnprintf(out.data(), out.size(), fmt, ap);
  va_end(ap);
  out.resize(static_cast<size_t>(n));
  return out;
}

std::string pct(double fraction) { return format("%+.1f%%", finite_or_zero(fraction) * 100); }
std::string num(double v) {
  v = finite_or_zero(v);
  // Whole numbers of 5+ digits (bytes, MB, ms) read better in full than as 2e+04.
  if (std::fabs(v) >= 1e4 && std::fabs(v) < 1e15) return format("%.0f", v);
  return format("%.4g", v);
}
std::string pval(double p) { return format("p=%.2g", finite_or_zero(p)); }

std::string id_list(const std::vector<int64_t>& ids) {
  std::string out;
  for (size_t i = 0; i < ids.size() && i < kMaxListedIds; ++i) {
    if (i) out += ", ";
    out += std::to_string(ids[i]);
  }
  if (ids.size() > kMaxListedIds) out += format(" and %zu more", ids.size() - kMaxListedIds);
  return out;
}

MetricEvidence metric(std::string name, MetricResult result, std::string reason) {
  MetricEvidence m;
  m.metric = std::move(name);
  m.result = result;
  m.reason = std::move(reason);
  return m;
}

void set_numbers(MetricEvidence& m, double estimate, double baseline, double lo, double hi, double threshold,
                 double p_value) {
  m.estimate = finite_or_zero(estimate);
  m.baseline = finite_or_zero(baseline);
  m.lo = finite_or_zero(lo);
  m.hi = finite_or_zero(hi);
  m.threshold = finite_or_zero(threshold);
  m.p_value = std::isfinite(p_value) ? p_value : 1.0;
}

// ============================================================== events
std::vector<const Event*> events_of(const Context& c, EventKind kind, EventScope scope) {
  auto applies = [&](const Event& e) {
    if (e.candidate_id) return *e.candidate_id == c.in.recipe.candidate_id;
    if (scope == EventScope::Candidate) return false;
    return !e.host_id || *e.host_id == c.in.recipe.host_id;
  };
  std::vector<const Event*> out;
  for (const auto& e : c.in.events)
    if (e.kind == kind && applies(e)) out.push_back(&e);
  std::sort(out.begin(), out.end(), [](const Event* a, const Event* b) {
    return a->wall_ms != b->wall_ms ? a->wall_ms < b->wall_ms : a->id < b->id;
  });
  return out;
}

// ============================================================== locators
Locator locator_of(const ProbeResult& r) {
  Locator l;
  l.host_id = r.host_id;
  l.kind = r.kind;
  l.workload_id = r.workload_id;
  l.size_tokens = r.size_tokens;
  l.cache_state = r.cache_state;
  l.thinking = r.thinking;
  l.client_concurrency = r.client_concurrency;
  l.runtime_slots = r.runtime_slots;
  l.fixture_hash = r.fixture_hash;
  l.sampling_json = r.sampling_json;
  return l;
}

std::string locator_label(const Locator& l) {
  std::string s(l.workload_id.empty() ? to_string(l.kind) : l.workload_id);
  s += "{kind=";
  s += to_string(l.kind);
  s += ",cache=";
  s += to_string(l.cache_state);
  if (l.size_tokens) s += ",size=" + std::to_string(*l.size_tokens);
  s += ",thinking=";
  s += l.thinking ? (*l.thinking ? "on" : "off") : "unset";
  s += ",conc=" + std::to_string(l.client_concurrency);
  s += ",slots=" + (l.runtime_slots ? std::to_string(*l.runtime_slots) : std::string("?"));
  s += ",host=" + std::to_string(l.host_id);
  s += ",fixture=";
  s += l.fixture_hash.empty() ? std::string_view("-") : l.fixture_hash.substr(0, kLabelHashChars);
  s += ",sampling=" + short_hash(l.sampling_json);
  s += "}";
  return s;
}

std::vector<const ProbeResult*> measured_rows(const std::vector<const ProbeResult*>& rows) {
  static const std::string warmup(to_string(TaskKind::Warmup));
  std::vector<const ProbeResult*> out;
  for (const ProbeResult* r : rows)
    if (r->task != warmup && r->kind != ProbeKind::Equivalence) out.push_back(r);
  return out;
}

Pools pool_rows(const std::vector<const ProbeResult*>& rows) {
  Pools pools;
  for (const ProbeResult* r : rows) pools[locator_of(*r)].push_back(r);
  return pools;
}

// ============================================================== per-row figures
bool is_clean(const ProbeResult& r) { return r.outcome == Outcome::Clean; }
bool is_harness(const ProbeResult& r) { return category_of(r.outcome) == OutcomeCategory::Harness; }
// identity_unproven is judged by its own class as a hold (judges/hard.cc), not
// as a failed request in the ratios.
bool counts_against(const ProbeResult& r) {
  return category_of(r.outcome) == OutcomeCategory::CandidateFailure && r.outcome != Outcome::IdentityUnproven;
}

bool is_group_summary(const ProbeResult& r) {
  constexpr std::string_view kSummary = "/summary";
  const std::string& w = r.workload_id;
  return w.size() >= kSummary.size() && w.compare(w.size() - kSummary.size(), kSummary.size(), kSummary) == 0;
}

bool is_completion(const ProbeResult& r) {
  switch (r.kind) {
    case ProbeKind::Health:
    case ProbeKind::Scrape:
    case ProbeKind::Build: return false;
    default: return !is_group_summary(r);
  }
}

std::vector<ProbeKind> canary_pooled_kinds(WorkloadKind workload) {
  std::vector<ProbeKind> pooled;
  for (TaskKind t : {TaskKind::Functional, TaskKind::LongContext, TaskKind::Burst, TaskKind::Capacity})
    for (ProbeKind k : probe_kinds_for(t, workload)) pooled.push_back(k);
  return pooled;
}

bool refused_long_prompt(const ProbeResult& r) {
  return (r.kind == ProbeKind::LongContext || r.kind == ProbeKind::Capacity) && r.outcome == Outcome::ContextExceeded;
}

namespace {

bool eligible(const PerfMetric& m, const ProbeResult& r) {
  if (!is_clean(r) || !perf_judged(r.kind)) return false;
  if (m.fresh_only && r.cache_state != CacheState::Fresh) return false;
  if (m.rate && r.timing_artifact) return false;
  if (r.overlapped_heavy) return false;  // its timing measured another candidate's heavy work
  // A request that waited for a cold model load (oMLX model_load_duration)
  // measured the load, not the prefill: kept out of TTFT, prefill and wall.
  if (r.server_load_ms && *r.server_load_ms > 0 && m.figure != Figure::DecodeTps) return false;
  return true;
}

std::optional<double> server_value(const PerfMetric& m, const ProbeResult& r) {
  switch (m.figure) {
    case Figure::PromptTps: return r.server_prompt_tps;
    case Figure::DecodeTps: return r.server_predicted_tps;
    case Figure::Ttft:
    case Figure::Wall: break;
  }
  return std::nullopt;
}

std::optional<double> client_value(const PerfMetric& m, const ProbeResult& r) {
  auto ms = [](std::optional<int64_t> us) -> std::optional<double> {
    if (!us) return std::nullopt;
    return static_cast<double>(*us) / 1000.0;
  };
  switch (m.figure) {
    case Figure::Ttft: return ms(r.t_first_token_us);
    case Figure::Wall: return ms(r.t_done_us);
    case Figure::DecodeTps: return r.client_decode_tps;
    case Figure::PromptTps:
      // Client-side prompt rate: prompt tokens over the time to first token.
      if (!r.prompt_tokens || !r.t_first_token_us || *r.t_first_token_us <= 0) return std::nullopt;
      return static_cast<double>(*r.prompt_tokens) / (static_cast<double>(*r.t_first_token_us) / 1e6);
  }
  return std::nullopt;
}

bool usable(std::optional<double> v) { return v && std::isfinite(*v) && *v >= 0; }

}  // namespace

std::optional<double> client_figure(const PerfMetric& m, const ProbeResult& r) {
  if (!eligible(m, r)) return std::nullopt;
  auto v = client_value(m, r);
  return usable(v) ? v : std::nullopt;
}

Extracted extract(const PerfMetric& m, const std::vector<const std::vector<const ProbeResult*>*>& sets) {
  bool all_server = true, any_row = false;
  for (const auto* set : sets)
    for (const ProbeResult* r : *set) {
      if (!eligible(m, *r)) continue;
      any_row = true;
      if (!usable(server_value(m, *r))) all_server = false;
    }
  const bool server = any_row && all_server;
  Extracted out;
  out.source = server ? "server" : "client";
  for (const auto* set : sets) {
    std::vector<double> v;
    for (const ProbeResult* r : *set) {
      if (!eligible(m, *r)) continue;
      auto x = server ? server_value(m, *r) : client_value(m, *r);
      if (usable(x)) v.push_back(*x);
    }
    out.values.push_back(std::move(v));
  }
  return out;
}

RowFigures figures_of(const PerfMetric& m, const std::vector<const ProbeResult*>& rows) {
  std::vector<std::vector<const ProbeResult*>> one(rows.size());
  std::vector<const std::vector<const ProbeResult*>*> sets;
  for (size_t i = 0; i < rows.size(); ++i) {
    one[i] = {rows[i]};
    sets.push_back(&one[i]);
  }
  const Extracted e = extract(m, sets);
  RowFigures out;
  out.source = e.source;
  for (size_t i = 0; i < rows.size(); ++i)
    if (!e.values[i].empty()) out.rows.emplace_back(rows[i], e.values[i].front());
  return out;
}

}  // namespace soak::judge_detail
