// Agent sessions, prefix reuse and pooling throughput (docs/DESIGN.md §3.10).
//
// Session rows are agent rows whose extra_json says which session and turn they
// were and the context they carried (probes/session.h). From them:
//   - tool calls by context band: a band whose tool-call failures
//     (missing_tool_call, invalid_tool_call, empty_tool_args) pass
//     JudgeRules::max_invalid_ratio is a hard failure naming the band, so a
//     runtime that fails only past 30K says so;
//   - HTTP 5xx with thinking on: when thinking turns fail with 5xx from some
//     turn on (at least JudgeRules::repeated_5xx of them, half or more of the
//     thinking turns from there) and thinking-off turns from that turn on fail
//     at less than half that rate, a hard failure naming the turn;
//   - recovery: turns after a malformed tool call that came back clean, at
//     least AgentSettings::min_recovery_ratio of them (a failure below);
//   - a summary of the sessions (count, turns, deepest context).
// The canary's prefix reuse (cold / warm / prefix 1-3, the seeds' rule reuse
// when median(prefix)/cold < 0.2) is judged against the baseline: reuse lost
// is a failure. A pooling candidate's bursts are judged on requests/s against
// the baseline's, as the central comparison is (effect floor, hold band).
#include <algorithm>
#include <charconv>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "judges/internal.h"
#include "judges/stats.h"

namespace soak::judge_detail {
namespace {

constexpr double kReuseRatio = 0.2;  // the seeds' rule (probes/engine_rows.h kPrefixReuseRatio)
constexpr double kThinking5xxShare = 0.5;

struct TurnRow {
  const ProbeResult* row = nullptr;
  int64_t session = 0, turn = 0, context_tokens = 0;
  int64_t band_lo = 0;
  std::string band;
  bool tool_required = false, recovery = false, thinking = false;
};

// The fields of a turn's extra_json, read without a JSON parser: the judge
// runs on every stored turn after every task of a running gate (the early
// hard-failure check), so a full parse per row per check would grow with the
// square of the gate's length. The writer is label_turn_row()
// (probes/session.cc): compact JSON, keys as below, numbers and booleans bare.
std::optional<std::string_view> raw_value(std::string_view json, std::string_view key) {
  // "key": found without building the quoted needle (no allocation a call).
  size_t at = json.find(key);
  while (at != std::string_view::npos &&
         (at == 0 || json[at - 1] != '"' || json.substr(at + key.size(), 2) != std::string_view("\":")))
    at = json.find(key, at + 1);
  if (at == std::string_view::npos) return std::nullopt;
  std::string_view v = json.substr(at + key.size() + 2);
  size_t end = 0;
  if (!v.empty() && v[0] == '"') {
    end = v.find('"', 1);
    return end == std::string_view::npos ? std::nullopt : std::optional(v.substr(1, end - 1));
  }
  while (end < v.size() && v[end] != ',' && v[end] != '}') ++end;
  return v.substr(0, end);
}

int64_t int_of(std::string_view json, std::string_view key) {
  auto v = raw_value(json, key);
  if (!v || v->empty()) return 0;
  int64_t n = 0;
  std::from_chars(v->data(), v->data() + v->size(), n);
  return n;
}

bool bool_of(std::string_view json, std::string_view key) { return raw_value(json, key) == "true"; }

std::vector<TurnRow> session_rows(const Context& c) {
  std::vector<TurnRow> out;
  for (const ProbeResult* r : c.cand) {
    if (!is_session_row(*r) || is_harness(*r)) continue;
    const std::string_view j = r->extra_json;
    if (!raw_value(j, "turn")) continue;
    TurnRow t;
    t.row = r;
    t.session = int_of(j, "session");
    t.turn = int_of(j, "turn");
    t.context_tokens = int_of(j, "context_tokens");
    t.band = std::string(raw_value(j, "band").value_or(""));
    t.band_lo = r->size_tokens.value_or(0);
    t.tool_required = bool_of(j, "tool_required");
    t.recovery = bool_of(j, "recovery");
    t.thinking = bool_of(j, "thinking");
    out.push_back(std::move(t));
  }
  return out;
}

bool tool_failure(Outcome o) {
  return o == Outcome::MissingToolCall || o == Outcome::InvalidToolCall || o == Outcome::EmptyToolArgs;
}

struct BandCount {
  std::string band;
  int64_t attempts = 0, bad = 0;
  std::map<Outcome, int64_t> classes;
  std::vector<int64_t> ids;
};

std::string classes_text(const BandCount& b) {
  std::string s;
  for (const auto& [o, n] : b.classes)
    s += format("%s%s %lld", s.empty() ? "" : ", ", std::string(to_string(o)).c_str(), static_cast<long long>(n));
  return s;
}

void tool_bands(const Context& c, const std::vector<TurnRow>& turns, Judgement& j) {
  std::map<int64_t, BandCount> bands;
  for (const TurnRow& t : turns) {
    const bool bad = tool_failure(t.row->outcome);
    if (!t.tool_required && !bad) continue;
    // Leaked markup decided the row before its call was judged
    // (probes/answer_check.h): neither a good nor a bad call here.
    if (t.row->outcome == Outcome::LeakedMarkup) continue;
    BandCount& b = bands[t.band_lo];
    b.band = t.band;
    ++b.attempts;
    if (bad) {
      ++b.bad;
      ++b.classes[t.row->outcome];
      b.ids.push_back(t.row->id);
    }
  }
  const double tol = c.in.recipe.judge.max_invalid_ratio;
  const int64_t need = c.in.recipe.judge.min_samples;
  std::vector<const BandCount*> failing;
  for (const auto& [lo, b] : bands) {
    const double ratio = static_cast<double>(b.bad) / static_cast<double>(b.attempts);
    // A band is judged from min_samples tool turns on: the first turn or two
    // of a new band say little alone.
    const bool fail = b.bad > 0 && ratio > tol && b.attempts >= need;
    const MetricResult result = fail                       ? MetricResult::Fail
                                : b.bad > 0 && ratio > tol ? MetricResult::Insufficient
                                                           : MetricResult::Pass;
    auto m = metric("session/tool_calls/" + b.band, result,
                    format("%lld of %lld tool turns failed (%.1f%%), tolerance %.1f%%", static_cast<long long>(b.bad),
                           static_cast<long long>(b.attempts), ratio * 100, tol * 100));
    if (b.bad) m.reason += " (" + classes_text(b) + "; rows " + id_list(b.ids) + ")";
    m.n = b.attempts;
    const auto ci = stats::wilson_interval(b.bad, b.attempts, c.confidence());
    set_numbers(m, ratio, 0, ci.lo, ci.hi, tol, 1);
    j.add(std::move(m));
    if (fail) failing.push_back(&b);
  }
  if (failing.empty()) return;
  // What the bands below the first failing one did: the "only past N" part.
  int64_t below = 0, below_bad = 0;
  for (const auto& [lo, b] : bands) {
    if (&b == failing.front()) break;
    below += b.attempts;
    below_bad += b.bad;
  }
  std::string reason = "tool calls fail from context band " + failing.front()->band + " on: ";
  for (size_t i = 0; i < failing.size(); ++i)
    reason += format("%s%s %lld of %lld (%s)", i ? ", " : "", failing[i]->band.c_str(),
                     static_cast<long long>(failing[i]->bad), static_cast<long long>(failing[i]->attempts),
                     classes_text(*failing[i]).c_str());
  reason +=
      below ? format("; below it %lld of %lld failed", static_cast<long long>(below_bad), static_cast<long long>(below))
            : std::string("; no shallower band was tried");
  j.find(Severity::HardFailure, reason);
}

void thinking_5xx(const Context& c, const std::vector<TurnRow>& turns, Judgement& j) {
  std::optional<int64_t> from;
  const ProbeResult* first = nullptr;
  int64_t on = 0, on_5xx = 0, off = 0, off_5xx = 0;
  for (const TurnRow& t : turns) {
    const bool e = t.row->outcome == Outcome::Http5xx;
    (t.thinking ? on : off) += 1;
    (t.thinking ? on_5xx : off_5xx) += e ? 1 : 0;
    if (t.thinking && e && (!from || t.turn < *from)) from = t.turn;
    if (t.thinking && e && !first) first = t.row;
  }
  // Thinking and thinking-off turns compared from the same turn on: a runtime
  // that fails every deep turn whatever the mode is not a thinking fault.
  int64_t later = 0, later_5xx = 0, off_later = 0, off_later_5xx = 0;
  for (const TurnRow& t : turns) {
    if (!from || t.turn < *from) continue;
    const bool e = t.row->outcome == Outcome::Http5xx;
    (t.thinking ? later : off_later) += 1;
    (t.thinking ? later_5xx : off_later_5xx) += e ? 1 : 0;
  }
  const double share = later ? static_cast<double>(later_5xx) / static_cast<double>(later) : 0;
  const double off_share = off_later ? static_cast<double>(off_later_5xx) / static_cast<double>(off_later) : 0;
  const bool fail = from && on_5xx >= std::max(1, c.in.recipe.judge.repeated_5xx) && share >= kThinking5xxShare &&
                    off_share < share / 2;
  std::string reason = format("%lld of %lld thinking turns and %lld of %lld thinking-off turns got HTTP 5xx",
                              static_cast<long long>(on_5xx), static_cast<long long>(on),
                              static_cast<long long>(off_5xx), static_cast<long long>(off));
  if (from)
    reason += format("; with thinking on from turn %lld: %lld of %lld turns from there (first row %lld)",
                     static_cast<long long>(*from), static_cast<long long>(later_5xx), static_cast<long long>(later),
                     static_cast<long long>(first->id));
  auto m = metric("session/thinking_5xx", fail ? MetricResult::Fail : MetricResult::Pass, reason);
  m.n = on;
  set_numbers(m, share, off_share, 0, 0, kThinking5xxShare, 1);
  j.add(std::move(m));
  if (fail)
    j.find(Severity::HardFailure,
           format("HTTP 5xx with thinking on from turn %lld of a session (%lld of %lld thinking turns from there; "
                  "%lld of %lld thinking-off turns from there)",
                  static_cast<long long>(*from), static_cast<long long>(later_5xx), static_cast<long long>(later),
                  static_cast<long long>(off_later_5xx), static_cast<long long>(off_later)));
}

void recovery(const Context& c, const std::vector<TurnRow>& turns, Judgement& j) {
  int64_t n = 0, ok = 0;
  for (const TurnRow& t : turns)
    if (t.recovery) {
      ++n;
      ok += is_clean(*t.row) ? 1 : 0;
    }
  const double min = c.in.recipe.agent.min_recovery_ratio;
  const double ratio = n ? static_cast<double>(ok) / static_cast<double>(n) : 1.0;
  auto m = metric("session/recovery", MetricResult::Pass, "");
  m.n = n;
  set_numbers(m, ratio, 0, 0, 0, min, 1);
  const std::string text = format("%lld of %lld turns after a malformed tool call came back clean, need %.0f%%",
                                  static_cast<long long>(ok), static_cast<long long>(n), min * 100);
  if (n == 0) {
    m.reason = "no malformed tool call to recover from";
  } else if (n < c.in.recipe.judge.min_samples) {
    m.result = MetricResult::Insufficient;
    m.reason = text;
  } else if (ratio < min) {
    m.result = MetricResult::Fail;
    m.reason = text;
    j.find(Severity::Failure, "recovery: " + text);
  } else {
    m.reason = text;
  }
  j.add(std::move(m));
}

void sessions_summary(const std::vector<TurnRow>& turns, Judgement& j) {
  std::set<int64_t> sessions, thinking;
  int64_t deepest = 0;
  std::string band;
  for (const TurnRow& t : turns) {
    sessions.insert(t.session);
    if (t.thinking) thinking.insert(t.session);
    if (t.context_tokens >= deepest) {
      deepest = t.context_tokens;
      band = t.band;
    }
  }
  auto m =
      metric("session/context", MetricResult::Pass,
             format("%zu session(s), %zu turns, deepest context %lld tokens (band %s); thinking on in %zu",
                    sessions.size(), turns.size(), static_cast<long long>(deepest), band.c_str(), thinking.size()));
  m.n = static_cast<int64_t>(turns.size());
  set_numbers(m, static_cast<double>(deepest), 0, 0, 0, 0, 1);
  j.add(std::move(m));
}

// Values of extra_json[key] over rows that `pick` accepts.
template <class Pick>
std::vector<double> extra_values(const std::vector<const ProbeResult*>& rows, const char* key, Pick pick) {
  std::vector<double> out;
  for (const ProbeResult* r : rows) {
    if (!pick(*r)) continue;
    auto j = nlohmann::json::parse(r->extra_json, nullptr, false);
    if (j.is_object() && j.contains(key) && j[key].is_number()) out.push_back(j[key].get<double>());
  }
  return out;
}

std::string reuse_text(const std::vector<double>& ratios) {
  if (ratios.empty()) return "no complete run";
  const double m = stats::median(ratios);
  return format("%s (median prefix/cold %s over %zu runs)", m < kReuseRatio ? "yes" : "no", num(m).c_str(),
                ratios.size());
}

}  // namespace

bool is_session_row(const ProbeResult& r) {
  return r.kind == ProbeKind::Agent && r.extra_json.find("\"session\"") != std::string::npos;
}

bool requires_tool_call(const ProbeResult& r) {
  return is_session_row(r) && raw_value(r.extra_json, "turn") && bool_of(r.extra_json, "tool_required");
}

bool is_tool_failure(Outcome o) { return tool_failure(o); }

void judge_session_hard(const Context& c, Judgement& j) {
  const auto turns = session_rows(c);
  if (turns.empty()) return;
  tool_bands(c, turns, j);
  thinking_5xx(c, turns, j);
}

void judge_session(const Context& c, Judgement& j) {
  const auto turns = session_rows(c);
  if (turns.empty()) return;
  recovery(c, turns, j);
  sessions_summary(turns, j);
}

void judge_prefix_reuse(const Context& c, Judgement& j) {
  auto pick = [](const ProbeResult& r) { return r.kind == ProbeKind::SharedPrefix; };
  const auto cand = extra_values(c.cand, "reuse_ratio", pick);
  const auto base = extra_values(c.base, "reuse_ratio", pick);
  if (cand.empty() && base.empty()) return;
  auto m = metric("prefix_reuse", MetricResult::Pass,
                  "reuse " + reuse_text(cand) + "; rule: reuse when below " + num(kReuseRatio) +
                      (base.empty() ? std::string("; no baseline runs") : "; baseline reuse " + reuse_text(base)));
  m.n = static_cast<int64_t>(cand.size());
  m.n_baseline = static_cast<int64_t>(base.size());
  const double est = cand.empty() ? 0 : stats::median(cand);
  const double bl = base.empty() ? 0 : stats::median(base);
  set_numbers(m, est, bl, 0, 0, kReuseRatio, 1);
  const bool enough = static_cast<int64_t>(cand.size()) >= c.in.recipe.judge.min_samples &&
                      static_cast<int64_t>(base.size()) >= c.in.recipe.judge.min_samples;
  if (!cand.empty() && !base.empty() && bl < kReuseRatio && est >= kReuseRatio) {
    if (enough) {
      m.result = MetricResult::Fail;
      j.find(Severity::Failure, "prefix reuse lost: " + m.reason);
    } else {
      m.result = MetricResult::Insufficient;
    }
  }
  j.add(std::move(m));
}

namespace {
// The summaries of burst workload `w` whose throughput counts: among
// `cool.rows` (past the warm-up) and with no member measured hot. A summary
// carries no timings of its own; its members (`w` without "/summary") are the
// rows of that workload stored since the previous summary. Both lists are in
// id order, `cool.rows` a part of `all`.
std::vector<const ProbeResult*> cool_bursts(const std::vector<const ProbeResult*>& all, const ThermalSplit& cool,
                                            std::string_view w) {
  constexpr std::string_view kSummary = "/summary";
  const std::string_view members = w.substr(0, w.size() - kSummary.size());
  const std::set<int64_t> hot(cool.hot_ids.begin(), cool.hot_ids.end());
  std::vector<const ProbeResult*> out;
  auto kept = cool.rows.begin();
  bool hot_member = false;
  for (const ProbeResult* r : all) {
    if (r->kind != ProbeKind::Burst) continue;
    if (r->workload_id == members) {
      hot_member = hot_member || hot.count(r->id) > 0;
    } else if (r->workload_id == w) {
      while (kept != cool.rows.end() && (*kept)->id < r->id) ++kept;
      if (!hot_member && kept != cool.rows.end() && *kept == r) out.push_back(r);
      hot_member = false;
    }
  }
  return out;
}
}  // namespace

void judge_pooling_rps(const Context& c, Judgement& j) {
  std::set<std::string_view> workloads;
  for (const ProbeResult* r : c.cand)
    if (r->kind == ProbeKind::Burst && is_group_summary(*r) && r->extra_json.find("\"rps\"") != std::string::npos)
      workloads.insert(r->workload_id);
  if (workloads.empty()) return;
  const JudgeRules& rules = c.in.recipe.judge;
  const CoolRows cool = cool_rows(c);
  for (std::string_view w : workloads) {
    auto pick = [w](const ProbeResult& r) { return r.kind == ProbeKind::Burst && r.workload_id == w; };
    const auto cand = extra_values(cool_bursts(c.cand, cool.cand, w), "rps", pick);
    const auto base = extra_values(cool_bursts(c.base, cool.base, w), "rps", pick);
    auto m = metric("rps/" + std::string(w), MetricResult::Pass, "");
    m.n = static_cast<int64_t>(cand.size());
    m.n_baseline = static_cast<int64_t>(base.size());
    const double est = cand.empty() ? 0 : stats::median(cand);
    const double bl = base.empty() ? 0 : stats::median(base);
    const double change = bl > 0 ? est / bl - 1 : 0;
    set_numbers(m, est, bl, change, change, rules.effect_floor, 1);
    m.reason = format("median %s requests/s over %zu bursts", num(est).c_str(), cand.size());
    if (static_cast<int64_t>(cand.size()) < rules.min_samples ||
        static_cast<int64_t>(base.size()) < rules.min_samples) {
      m.result = MetricResult::Insufficient;
      m.reason += format("; baseline %zu bursts, need %d a side", base.size(), rules.min_samples);
    } else {
      m.reason += format(", baseline %s (%s)", num(bl).c_str(), pct(change).c_str());
      if (change < -(rules.effect_floor + rules.hold_band)) {
        m.result = MetricResult::Fail;
        j.find(Severity::Failure, "throughput: " + m.reason);
      } else if (change < -rules.effect_floor) {
        m.result = MetricResult::Marginal;
        j.find(Severity::Hold, "throughput: " + m.reason);
      }
    }
    j.add(std::move(m));
  }
}

}  // namespace soak::judge_detail
