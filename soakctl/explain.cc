// `soakctl explain`: recompute the latest judged verdict of a candidate from the
// stored rows (the recipe stored with it, campaigns/recipe_store.h) with today's
// rules and show every metric. A verdict judged by an older judge version is
// expected to differ: explain says the rules changed since and shows both. Only
// the same rules giving another result is a mismatch (exit 5).
//
// A stage of more rows than explain judges again at once (a soak's week: tens
// of thousands, with its baseline's as many again, half a second and more) is
// shown as the daemon judged it, from the same rows by the same function, and
// --recompute judges it again (docs/DESIGN.md §3.8).
#include "soakctl/common.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "campaigns/recipe_store.h"
#include "judges/sequential.h"
#include "probes/served_state.h"
#include "storage/evidence_json.h"

namespace soak::soakctl {

namespace {

std::string fmt_num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

// The most probe rows (a stage's and its baseline's) explain judges again
// unasked: about a tenth of a second (some 10 µs a row, store_bench measures
// it). A canary with its baseline's interleaved runs is well under it; one
// against a history baseline (the last build's week), a 24-hour gate at the
// default cadences (14,000 rows on the benchmark's store) and a soak's week
// (48,000 with its baseline's) are over it.
constexpr int64_t kRecomputeAtOnceRows = 8000;

// What a verdict rested on (judges/evidence.cc): its evidence/<rule> rows,
// the decisive rules that decided, those that could not, and the checks
// beside them.
struct EvidenceRule {
  std::string rule;
  int64_t had = 0, needed = 0;
  double sees = 0;
  bool decisive = true, decided = true;
  std::string reason;
};
std::vector<EvidenceRule> evidence_rules(const std::vector<MetricEvidence>& ms) {
  constexpr std::string_view kPrefix = "evidence/";
  std::vector<EvidenceRule> out;
  for (const auto& m : ms) {
    if (m.metric.rfind(kPrefix, 0) != 0) continue;
    out.push_back({m.metric.substr(kPrefix.size()), m.n, static_cast<int64_t>(std::llround(m.threshold)), m.estimate,
                   m.baseline != 0, m.result == MetricResult::Pass, m.reason});
  }
  return out;
}

json evidence_json(const std::vector<MetricEvidence>& ms) {
  json decided = json::array(), short_of = json::array(), beside = json::array();
  for (const auto& e : evidence_rules(ms)) {
    json r = {{"rule", e.rule}, {"had", e.had}, {"needed", e.needed}, {"reason", e.reason}};
    r["sees"] = e.sees > 0 ? json(e.sees) : json(nullptr);
    (!e.decisive ? beside : e.decided ? decided : short_of).push_back(std::move(r));
  }
  return {{"decided", decided}, {"could_not_decide", short_of}, {"beside", beside}};
}

void print_evidence(std::ostream& out, const std::vector<MetricEvidence>& ms) {
  const auto rules = evidence_rules(ms);
  if (rules.empty()) return;
  auto list = [&](const char* title, auto keep) {
    bool any = false;
    for (const auto& e : rules) {
      if (!keep(e)) continue;
      if (!any) out << title << "\n";
      any = true;
      out << "  " << e.rule << ": " << e.reason << "\n";
    }
  };
  out << "\n";
  list("decided by (each with the evidence it needs; what a pass on it sees):",
       [](const EvidenceRule& e) { return e.decisive && e.decided; });
  list("could not decide (short of evidence: the stage is not a pass):",
       [](const EvidenceRule& e) { return e.decisive && !e.decided; });
  list("checks beside them (reject on what they see; not what a promotion rests on):",
       [](const EvidenceRule& e) { return !e.decisive; });
  out << "\n";
}

// The last points of a measure's path that explain prints (the JSON has them all).
constexpr size_t kPathShown = 8;

json point_json(const SequentialPoint& p) { return {{"n", p.n}, {"k", p.k}, {"log_e", p.log_e}, {"row_id", p.row_id}}; }

json sequential_json(const std::vector<SequentialMeasure>& ms) {
  json arr = json::array();
  for (const auto& m : ms) {
    json path = json::array();
    for (const auto& p : m.path) path.push_back(point_json(p));
    arr.push_back({{"measure", m.name},
                   {"budget", m.budget},
                   {"alpha", m.alpha},
                   {"estimate_alpha", m.estimate_alpha},
                   {"basis", m.basis},
                   {"log_boundary", m.log_boundary()},
                   {"fraction", m.fraction()},
                   {"last", point_json(m.last)},
                   {"peak", point_json(m.peak)},
                   {"stop", m.stop ? point_json(*m.stop) : json(nullptr)},
                   {"path", path}});
  }
  return arr;
}

// Each watched measure's e-process (judges/sequential.h): where it stopped, or
// where it stands, and the path of (n, k, E) that led there.
void print_sequential(std::ostream& out, const std::vector<SequentialMeasure>& ms) {
  if (ms.empty()) return;
  out << "\nsequential test (reject when E >= 1/alpha; alpha split over " << ms.size() << " measures):\n";
  for (const auto& m : ms) {
    out << "  " << m.name << ", budget " << fmt_num(m.budget * 100) << "%, 1/alpha " << fmt_num(1 / m.alpha) << ": "
        << (m.stop ? "stopped at " + describe(*m.stop) + ", row " + std::to_string(m.stop->row_id)
                   : "now " + describe(m.last) + ", highest " + describe(m.peak) + ", " +
                         std::to_string(static_cast<int>(m.fraction() * 100)) + "% of the boundary")
        << "\n";
    if (!m.basis.empty()) out << "    " << m.basis << "\n";
    if (!m.stop || m.path.empty()) continue;
    out << "    path:";
    const size_t from = m.path.size() > kPathShown ? m.path.size() - kPathShown : 0;
    if (from) out << " ...";
    for (size_t i = from; i < m.path.size(); ++i) out << (i > from ? "," : "") << " " << describe(m.path[i]);
    out << "\n";
  }
}

// The probe rows a recompute reads: the stage's own and its baseline's, each
// counted from an index alone (what deciding whether to judge them again at
// once may cost). The baseline's are an estimate by id: an interleaved
// baseline's rows from the stage's first row on, a history baseline's before it
// (all of them, not only its 30-day lookback's). A canary's other candidates'
// heavy rows are left out: a few per hour, read through their own index.
struct JudgedRows {
  int64_t own = 0;
  int64_t baseline = 0;
  int64_t total() const { return own + baseline; }
};

Result<JudgedRows> judged_rows(Store& st, const VerdictRow& v, const StoredRecipe& r) {
  JudgedRows n;
  ProbeQuery q;
  if (r.recipe.stage_id) {
    q.stage_id = r.recipe.stage_id;
    q.max_id = r.rows.max_ids.probe;
  } else {
    q.candidate_id = r.recipe.candidate_id;
    q.min_id = v.evidence_first_id;
    q.max_id = v.evidence_last_id;
  }
  auto own = st.probe_row_count(q);
  if (!own) return own.error();
  n.own = *own;
  if (!r.recipe.baseline_id || r.recipe.baseline_mode == BaselineMode::None) return n;
  // With no row of its own (evidence_first_id 0) nothing bounds the baseline's
  // by id, and every one of them up to the judgment is counted: the estimate
  // errs towards showing a judgment as stored, never towards a long read.
  ProbeQuery b;
  b.candidate_id = r.recipe.baseline_id;
  b.max_id = r.rows.max_ids.probe;
  if (v.evidence_first_id > 0) {
    if (r.recipe.baseline_mode == BaselineMode::History)
      b.max_id = std::min(v.evidence_first_id, r.rows.max_ids.probe);
    else
      b.min_id = v.evidence_first_id;
  }
  auto base = st.probe_row_count(b);
  if (!base) return base.error();
  n.baseline = *base;
  return n;
}

// What the text says of a judgment shown as stored: why, and how to judge it again.
std::string as_judged_text(const std::string& name, const std::optional<JudgedRows>& rows,
                           const std::string& judged_by) {
  std::string s = "shown as judged";
  if (rows)
    s += ": its " + std::to_string(rows->own) + " probe rows and about " + std::to_string(rows->baseline) +
         " of its baseline's are more than explain judges again unasked (" + std::to_string(kRecomputeAtOnceRows) + ")";
  s += "; `soakctl explain " + name + " --recompute` judges them again";
  if (judged_by != kJudgeVersion)
    s += " with today's rules (" + judged_by + " then, " + std::string(kJudgeVersion) + " now)";
  return s;
}

// Which candidate row an explanation is about; both JSON answers start with it.
json candidate_json(const std::string& name, const CandidateRow& row) {
  json j;
  j["candidate"] = name;
  j["model"] = row.model;
  j["runtime"] = to_string(row.runtime);
  j["build"] = row.build;
  if (!row.fingerprint.empty()) j["launch"] = json::parse(row.fingerprint, nullptr, false);
  return j;
}

// A candidate with no judged verdict yet, in the judged answer's shape, with nothing to recompute.
void print_unjudged_json(std::ostream& out, const std::string& name, const CandidateRow& row, const VerdictRow* latest,
                         const std::vector<RuntimeLaunch>& launches) {
  json j = candidate_json(name, row);
  j["verdict"] = nullptr;
  j["metrics"] = json::array();
  j["recomputed"] = nullptr;
  if (latest) j["latest"] = verdict_json(*latest);
  if (!launches.empty()) j["launches"] = launches_json(launches);
  out << j.dump(2) << "\n";
}

void print_unjudged_text(std::ostream& out, const std::string& name, const CandidateRow& row, const VerdictRow* latest,
                         const std::vector<RuntimeLaunch>& launches) {
  out << name << " (" << row.model << " on " << to_string(row.runtime) << " at " << row.build << "): ";
  if (latest)
    out << to_string(latest->state) << (latest->reason.empty() ? "" : " — " + latest->reason)
        << (latest->is_override ? " (override by " + latest->who + ": " + latest->why + ")" : "")
        << "\nno judged stage yet: nothing to recompute\n";
  else
    out << "no verdict yet\n";
  print_launches(out, launches, "");
}

// The stored judgment judged again now, or left as stored: asked, or by the
// stage's size (kRecomputeAtOnceRows).
struct JudgedAgain {
  std::optional<JudgedRows> rows;        // counted when the stage's size decided
  std::optional<VerdictRow> recomputed;  // none: shown as stored
  // From the same rows, the sequential test's path (the verdict keeps its end points only).
  std::vector<SequentialMeasure> sequential;
};

// nullopt: the store could not be read (said on c.err).
std::optional<JudgedAgain> judge_again(const Ctl& c, const Args& a, Store& st, const VerdictRow& judged) {
  JudgedAgain out;
  auto recipe = recipe_from_json(judged.judge_input_json);
  bool recompute = a.flag("recompute");
  if (!recompute && !a.flag("stored")) {
    auto n = judged_rows(st, judged, *recipe);
    if (!n) {
      c.err << "soakctl: " << n.message() << "\n";
      return std::nullopt;
    }
    out.rows = *n;
    recompute = n->total() <= kRecomputeAtOnceRows;
  }
  if (!recompute) return out;
  auto input = build_judge_input(st, *recipe);
  if (!input) {
    c.err << "soakctl: cannot recompute: " << input.message() << "\n";
    return std::nullopt;
  }
  out.recomputed = judged_verdict(*input, *recipe);
  out.sequential = sequential_evidence(*input);
  return out;
}

// What explain shows of a candidate's latest judged verdict.
struct Explanation {
  const std::string& name;
  const CandidateRow& row;
  const VerdictRow& judged;                    // the latest judged verdict
  const VerdictRow* latest;                    // the latest verdict of all
  const std::vector<RuntimeLaunch>& launches;  // a managed candidate's runtime
  std::optional<ContextReach> reach;
  JudgedAgain again;

  // The metrics shown: today's rules' on the rows, else the judgment's own.
  const VerdictRow& shown() const { return again.recomputed ? *again.recomputed : judged; }
  bool identical() const { return again.recomputed && same_verdict(judged, *again.recomputed); }
  bool rules_changed() const {
    return judged.judge_version != (again.recomputed ? again.recomputed->judge_version : kJudgeVersion);
  }
  // A mismatch only when the same rules give another result.
  int exit_code() const { return !again.recomputed || identical() || rules_changed() ? kCtlExitOk : kCtlExitMismatch; }
};

void print_explanation_json(std::ostream& out, const Explanation& x) {
  const JudgedAgain& again = x.again;
  json j = candidate_json(x.name, x.row);
  j["verdict"] = verdict_json(x.judged);
  json ms = json::array();
  for (const auto& m : x.shown().metrics) ms.push_back(metric_json(m));
  j["metrics"] = ms;
  if (again.recomputed) {
    j["recomputed"] = {{"identical", x.identical()},
                       {"state", to_string(again.recomputed->state)},
                       {"reason", again.recomputed->reason},
                       {"judge_version", again.recomputed->judge_version},
                       {"rules_changed", x.rules_changed()}};
  } else {
    j["recomputed"] = nullptr;
    j["as_judged"] = {{"rows", again.rows ? json(again.rows->own) : json(nullptr)},
                      {"baseline_rows", again.rows ? json(again.rows->baseline) : json(nullptr)},
                      {"recompute_at_once_rows", kRecomputeAtOnceRows},
                      {"judge_version_now", kJudgeVersion},
                      {"rules_changed", x.rules_changed()}};
  }
  if (x.latest && x.latest != &x.judged) j["latest"] = verdict_json(*x.latest);
  if (!x.launches.empty()) j["launches"] = launches_json(x.launches);
  if (x.reach) j["context_reach"] = reach_json(*x.reach);
  if (again.recomputed) j["sequential"] = sequential_json(again.sequential);
  j["evidence"] = evidence_json(x.shown().metrics);
  out << j.dump(2) << "\n";
}

// The candidate and the judgment as stored: by whom, on which rows, and against which baseline.
void print_judgment(std::ostream& out, const Explanation& x) {
  const CandidateRow& row = x.row;
  const VerdictRow& judged = x.judged;
  out << x.name << " (" << row.model << " on " << to_string(row.runtime) << " at " << row.build << ")\n";
  if (auto fp = probes::parse_fingerprint_json(row.fingerprint); fp && !row.fingerprint.empty())
    out << "launch: " << fp->summary() << "\n";
  out << "verdict: " << to_string(judged.state) << " (" << judged.stage << ")"
      << (judged.reason.empty() ? "" : " — " + judged.reason) << "\n";
  out << "judged " << iso_utc(judged.wall_ms) << " by " << judged.judge_version << ", config " << judged.config_hash
      << ", evidence probe rows " << judged.evidence_first_id << ".." << judged.evidence_last_id << ", baseline "
      << judged.baseline_mode
      << (judged.baseline_id ? " (candidate row " + std::to_string(*judged.baseline_id) + ")" : "") << "\n";
  if (x.latest && x.latest != &judged)
    out << "now: " << to_string(x.latest->state) << (x.latest->reason.empty() ? "" : " — " + x.latest->reason) << "\n";
  print_launches(out, x.launches, "");
  if (x.reach) out << reach_text(*x.reach) << "\n";
}

// What judging the rows again gave: the same, another verdict, or today's
// rules; or why it was shown as judged.
void print_recompute(std::ostream& out, const Explanation& x) {
  const VerdictRow& judged = x.judged;
  const std::optional<VerdictRow>& recomputed = x.again.recomputed;
  if (!recomputed)
    out << as_judged_text(x.name, x.again.rows, judged.judge_version) << "\n\n";
  else if (x.rules_changed())
    out << "the rules changed since (" << judged.judge_version << " then, " << recomputed->judge_version
        << " now); recomputed from the stored rows with today's rules: " << to_string(recomputed->state) << " — "
        << recomputed->reason << "\n\n";
  else
    out << "recomputed from the stored rows: "
        << (x.identical() ? "identical"
                          : "DIFFERENT: " + std::string(to_string(recomputed->state)) + " — " + recomputed->reason)
        << "\n\n";
}

// Every metric, one a line: what decided comes first (failures, then marginal
// results, then the rest), each with its reason under it.
void print_metric_table(std::ostream& out, const std::vector<MetricEvidence>& metrics) {
  char line[256];
  std::snprintf(line, sizeof line, "%-8s %7s %7s %11s %11s %23s %9s %9s  %s\n", "RESULT", "N", "N_BASE", "ESTIMATE",
                "BASELINE", "INTERVAL", "THRESHOLD", "P", "METRIC");
  out << line;
  auto rank = [](const MetricEvidence& m) {
    if (m.result == MetricResult::Fail) return 0;
    if (m.result == MetricResult::Marginal) return 1;
    if (m.result == MetricResult::Insufficient) return 3;
    return 2;
  };
  std::vector<const MetricEvidence*> order;
  for (const auto& m : metrics) order.push_back(&m);
  std::stable_sort(order.begin(), order.end(), [&](const auto* x, const auto* y) { return rank(*x) < rank(*y); });
  for (const MetricEvidence* mp : order) {
    const MetricEvidence& m = *mp;
    std::string interval = "[" + fmt_num(m.lo) + ", " + fmt_num(m.hi) + "]";
    std::snprintf(line, sizeof line, "%-8s %7lld %7lld %11s %11s %23s %9s %9s  ",
                  std::string(to_string(m.result)).c_str(), static_cast<long long>(m.n),
                  static_cast<long long>(m.n_baseline), fmt_num(m.estimate).c_str(), fmt_num(m.baseline).c_str(),
                  interval.c_str(), fmt_num(m.threshold).c_str(), fmt_num(m.p_value).c_str());
    out << line << m.metric << "\n";
    if (!m.reason.empty()) out << "         " << m.reason << "\n";
  }
}

void print_explanation_text(std::ostream& out, const Explanation& x) {
  print_judgment(out, x);
  print_recompute(out, x);
  print_evidence(out, x.shown().metrics);
  print_metric_table(out, x.shown().metrics);
  print_sequential(out, x.again.sequential);
}

int cmd_explain(const Ctl& c, const Args& a, Store& st) {
  const std::string& name = a.positionals()[1];
  if (a.flag("recompute") && a.flag("stored")) {
    c.err << "soakctl explain: --recompute and --stored ask for opposite things; give one of them\n";
    return kCtlExitUsage;
  }
  auto row = lookup_candidate(c, st, name, a.get("build"));
  if (!row) return kCtlExitStore;
  auto all = st.verdicts(row->id);
  if (!all) {
    c.err << "soakctl: " << all.message() << "\n";
    return kCtlExitStore;
  }
  const VerdictRow* judged = nullptr;
  for (const auto& v : *all)
    if (recipe_from_json(v.judge_input_json).ok()) judged = &v;
  const VerdictRow* latest = all->empty() ? nullptr : &all->back();
  auto launches = launches_of(st, row->id);
  if (!launches) {
    c.err << "soakctl: " << launches.message() << "\n";
    return kCtlExitStore;
  }
  if (!judged) {
    if (a.flag("json"))
      print_unjudged_json(c.out, name, *row, latest, *launches);
    else
      print_unjudged_text(c.out, name, *row, latest, *launches);
    return kCtlExitOk;
  }
  auto again = judge_again(c, a, st, *judged);
  if (!again) return kCtlExitStore;
  const Explanation x{name, *row, *judged, latest, *launches, latest_reach(st, row->id), std::move(*again)};
  if (a.flag("json"))
    print_explanation_json(c.out, x);
  else
    print_explanation_text(c.out, x);
  return x.exit_code();
}

}  // namespace

const Command kExplainCommand{
    "explain", Operand::Candidate, {{"json", "recompute", "stored"}, {"build"}}, OpenMode::ReadOnly, cmd_explain};

}  // namespace soak::soakctl
