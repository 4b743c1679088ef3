#include "reports/page.h"

#include <algorithm>
#include <cmath>

#include "reports/charts.h"
#include "reports/html.h"

namespace soak::report {

namespace {

// The page's only styling. Colours by class; prints on white.
constexpr const char* kStyle = R"(
body{font:14px/1.45 -apple-system,"Helvetica Neue",Arial,sans-serif;margin:24px auto;max-width:1000px;color:#1d232a;background:#fff}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #d8dde3;padding-bottom:4px}
.sub{color:#5b6570}.mono,td.mono{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:12px}
.badge{display:inline-block;padding:2px 10px;border-radius:10px;font-weight:600;color:#fff;background:#6c7682}
.v-promoted{background:#1f8a4c}.v-rejected{background:#c62828}.v-hold{background:#c77c02}.v-inconclusive{background:#6d5bb0}
.v-blocked{background:#37474f}.v-running{background:#1565c0}
table{border-collapse:collapse;width:100%;margin:6px 0}th,td{text-align:left;padding:3px 6px;border-bottom:1px solid #eceff2;vertical-align:top}
th{font-size:12px;color:#5b6570;font-weight:600}td.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
tr.r-fail td:first-child{color:#c62828;font-weight:600}tr.r-marginal td:first-child{color:#c77c02;font-weight:600}
tr.r-insufficient td{color:#6c7682}tr:target{background:#fff4c2}
details{margin:6px 0}summary{cursor:pointer;font-weight:600}td.n.wrap{white-space:normal}
td.metric{overflow-wrap:anywhere}td.mono{white-space:nowrap}td.metric,td.detail{white-space:normal}tr.figures td{border-bottom:none}tr.why td{padding-top:0;font-size:13px;color:#3a444e}
section,.wide{overflow-x:auto}svg.mini{width:220px;height:auto}table.index .reason{font-size:12px}
table.index td:nth-child(2),table.index td:nth-child(3){font-size:13px}
svg.chart{display:block;margin:6px 0;font-size:11px}svg text{fill:#3a444e}svg .tick{font-size:10px}svg .unit,svg .lane{font-size:10px;fill:#5b6570}
.axis{stroke:#8a949e}.grid{stroke:#eceff2}.legend{font-size:11px}
.stage{stroke:#fff}.state-passed{fill:#43a047}.state-failed{fill:#e53935}.state-running{fill:#1e88e5}.state-hold{fill:#fb8c00}
.state-inconclusive{fill:#8e7cc3}.state-aborted{fill:#90a4ae}.state-blocked{fill:#455a64}.state-pending{fill:#cfd8dc}
.stage-label{fill:#fff;font-weight:600}.nominal-end{stroke:#1e88e5;stroke-dasharray:3 2}.deadline{stroke:#c62828;stroke-dasharray:3 2}
.gap{fill:#fff;fill-opacity:.75;stroke:#37474f;stroke-dasharray:2 2}.ev{fill:#90a4ae;stroke:#fff}.key.ev-other{fill:#90a4ae}
.ev-gap,.key.ev-gap{fill:#fff;stroke:#37474f}.ev-process_restart,.ev-process_gone{fill:#c62828}.ev-guard_trip{fill:#ef6c00}
.ev-build_change{fill:#1565c0}.ev-control{fill:#8e24aa}
.footprint.band{fill:#1e88e5;fill-opacity:.18;stroke:none}.footprint.line{stroke:#1565c0}.key.footprint{fill:#1565c0}
.line{fill:none;stroke-width:1.5}.resident.line{stroke:#00897b;stroke-dasharray:5 3}.key.resident{fill:#00897b}
.trend.line{stroke:#c62828;stroke-width:2}.key.trend{fill:#c62828}.trend-interval,.key.trend-interval{fill:#c62828;fill-opacity:.15;stroke:none}
.block{fill:#0d47a1}.trend-label{font-size:12px;fill:#c62828}
.swap.band{fill:#8e24aa;fill-opacity:.2;stroke:none}.swap.line{stroke:#8e24aa}.key.swap{fill:#8e24aa}
.host-swap.band{fill:#ef6c00;fill-opacity:.15;stroke:none}.host-swap.line{stroke:#ef6c00}.key.host-swap{fill:#ef6c00}
.level.normal{fill:#a5d6a7}.level.warn{fill:#ffcc80}.level.critical{fill:#e57373}
.free.band,.psi.band{fill:#00897b;fill-opacity:.15;stroke:none}.free.line,.psi.line{stroke:#00897b}.key.free,.key.psi{fill:#00897b}
.row-bg{fill:#fafbfc}.result-fail .row-bg{fill:#fdecea}.result-marginal .row-bg{fill:#fff4e0}
.row-label{font-size:12px;font-weight:600}.row-result{font-size:11px;fill:#5b6570}
.cand.box,.key.cand{fill:#1e88e5;fill-opacity:.35;stroke:#1565c0}.base.box,.key.base{fill:#9e9e9e;fill-opacity:.35;stroke:#616161}
.cand.median{stroke:#0d47a1;stroke-width:2}.base.median{stroke:#424242;stroke-width:2}.whisker{stroke:#616161}
.pt.cand{fill:#1565c0;fill-opacity:.45}.pt.base{fill:#616161;fill-opacity:.45}.note{fill:#6c7682;font-style:italic}
.fresh.box,.key.fresh{fill:#1e88e5;fill-opacity:.4;stroke:#1565c0}.repeat.box,.key.repeat{fill:#43a047;fill-opacity:.4;stroke:#2e7d32}
.fresh.median,.repeat.median,.burst.median{stroke:#212121;stroke-width:2}.refused,.serialized{fill:#c62828;font-weight:600}
.reach{stroke:#c62828;stroke-dasharray:4 3}.reach-label{fill:#c62828}.burst.box{fill:#7e57c2;fill-opacity:.4;stroke:#5e35b1}
.speed-s0.band{fill:#1e88e5;fill-opacity:.15;stroke:none}.speed-s0.line{stroke:#1565c0}.key.speed-s0{fill:#1565c0}
.speed-s1.line{stroke:#2e7d32}.key.speed-s1{fill:#2e7d32}.speed-s2.line{stroke:#ef6c00}.key.speed-s2{fill:#ef6c00}
.speed-s3.line{stroke:#8e24aa}.key.speed-s3{fill:#8e24aa}.stage-edge{stroke:#90a4ae;stroke-dasharray:2 3}.stage-name{font-size:10px;fill:#5b6570}
.notes li{color:#5b6570}footer{margin-top:32px;color:#8a949e;font-size:12px}
)";

std::string head(const std::string& title) {
  return "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
         "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
         "<title>" +
         escape(title) + "</title><style>" + kStyle + "</style></head><body>\n";
}

std::string badge(std::string_view state) {
  return "<span class=\"badge v-" + escape(state) + "\">" + escape(state) + "</span>";
}

std::string family(const std::string& metric) { return metric.substr(0, metric.find('/')); }

bool central(const std::string& fam) {
  return fam == "ttft_ms" || fam == "prompt_tps" || fam == "decode_tps" || fam == "wall_ms";
}
std::string unit_of(const std::string& fam) {
  const std::string base = fam.substr(0, fam.find('.'));
  if (base == "ttft_ms" || base == "wall_ms") return " ms";
  if (base == "prompt_tps" || base == "decode_tps") return " tok/s";
  return "";
}

std::string range(double lo, double hi, const std::string& unit) { return "[" + num(lo) + ", " + num(hi) + "]" + unit; }
std::string pct_range(double lo, double hi) { return "[" + pct(lo) + ", " + pct(hi) + "]"; }

int rank(const MetricEvidence& m) {
  switch (m.result) {
    case MetricResult::Fail: return 0;
    case MetricResult::Marginal: return 1;
    case MetricResult::Pass: return 2;
    case MetricResult::Insufficient: return 3;
  }
  return 4;
}

std::string metrics_table(const VerdictRow& v, const CandidateReport& r) {
  std::vector<const MetricEvidence*> order;
  for (const auto& m : v.metrics) order.push_back(&m);
  std::stable_sort(order.begin(), order.end(), [](auto* a, auto* b) { return rank(*a) < rank(*b); });
  // Nine columns of figures, and the judge's reason on a line of its own under
  // them: a reason is a sentence, too long for a column beside the numbers.
  std::string s =
      "<table class=\"metrics\"><tr><th>result</th><th>metric</th><th>n</th><th>n base</th><th>estimate</th>"
      "<th>baseline</th><th>interval</th><th>threshold</th><th>p</th></tr>\n";
  for (const MetricEvidence* m : order) {
    const MetricText t = metric_text(*m);
    const std::string res(to_string(m->result));
    s += "<tr class=\"r-" + res + " figures\"><td>" + res + "</td><td class=\"mono metric\">" + escape(m->metric) +
         "</td><td class=\"n\">" + std::to_string(m->n) + "</td><td class=\"n\">" + std::to_string(m->n_baseline) +
         "</td><td class=\"n\">" + escape(t.estimate) + "</td><td class=\"n\">" + escape(t.baseline) +
         "</td><td class=\"n wrap\">" + escape(t.interval) + "</td><td class=\"n wrap\">" + escape(t.threshold) +
         "</td><td class=\"n\">" + num(m->p_value) + "</td></tr>\n";
    if (!m->reason.empty())
      s += "<tr class=\"r-" + res + " why\"><td></td><td colspan=\"8\" class=\"reason\">" +
           linked_reason(m->reason, r.row_ids, r.event_ids) + "</td></tr>\n";
  }
  return s + "</table>\n";
}

std::string verdict_section(const CandidateReport& r) {
  std::string s = "<section id=\"verdict\"><h2>Verdict</h2>\n";
  if (!r.latest) return s + "<p>No verdict yet.</p></section>\n";
  const VerdictRow& l = *r.latest;
  s += "<p class=\"now\">" + badge(to_string(l.state)) + " <b>" + escape(l.stage) + "</b> — " +
       linked_reason(l.reason, r.row_ids, r.event_ids) + "</p>\n";
  if (l.is_override) s += "<p>Override by " + escape(l.who) + ": " + escape(l.why) + "</p>\n";
  if (!r.judged.empty() && r.judged.front().identical)
    s += *r.judged.front().identical
             ? "<p class=\"recomputed ok\">Recomputed from the stored rows: identical.</p>\n"
             : "<p class=\"recomputed differs\"><b>Recomputed from the stored rows: DIFFERENT</b> — " +
                   escape(r.judged.front().recomputed) + "</p>\n";
  if (!r.judged.empty())
    s += "<p class=\"sub\">Every metric of every judged stage: <a href=\"#argument\">the argument</a>.</p>\n";
  return s + "</section>\n";
}

// Every judged stage's metrics, deciding first, newest stage open: what
// `soakctl explain` prints. After the charts: it is long.
std::string argument_section(const CandidateReport& r) {
  std::string s = "<section id=\"argument\"><h2>The argument</h2>\n";
  if (r.judged.empty()) return s + "<p>No judged stage yet.</p></section>\n";
  bool first = true;
  for (const auto& jv : r.judged) {
    const VerdictRow& v = jv.stored;
    s += std::string("<details") + (first ? " open" : "") + " class=\"judged\"><summary>" + escape(v.stage) + ": " +
         escape(to_string(v.state)) + " (judged " + iso_utc(v.wall_ms) + ")</summary>\n";
    first = false;
    s += "<p class=\"reason\">" + linked_reason(v.reason, r.row_ids, r.event_ids) + "</p>\n";
    s += "<p class=\"sub\">judge " + escape(v.judge_version) + ", config " + escape(v.config_hash) + ", evidence " +
         linked_reason("probe rows " + std::to_string(v.evidence_first_id) + ".." + std::to_string(v.evidence_last_id),
                       r.row_ids, r.event_ids) +
         ", baseline " + escape(v.baseline_mode) +
         (v.baseline_id ? " (candidate row " + std::to_string(*v.baseline_id) + ")" : "") + "</p>\n";
    if (jv.identical)
      s += *jv.identical ? "<p class=\"recomputed ok\">Recomputed from the stored rows: identical.</p>\n"
                         : "<p class=\"recomputed differs\"><b>Recomputed from the stored rows: DIFFERENT</b> — " +
                               escape(jv.recomputed) + "</p>\n";
    s += metrics_table(v, r) + "</details>\n";
  }
  return s + "</section>\n";
}

// Each speed figure over the whole campaign, every stage: a drift is seen
// where the soak judges it.
std::string speed_section(const CandidateReport& r) {
  std::string s = "<section id=\"speed\"><h2>Speed over the campaign</h2>\n";
  if (r.speed.empty()) return s + "<p>No timed completions yet.</p></section>\n";
  s += "<p class=\"sub\">Every clean completion of every stage, per workload: the median per time bucket (the "
       "busiest workload with its min–max band); rates leave out timing artifacts, prompt rates take fresh rows "
       "only, as the judges do.</p>\n";
  for (const auto& c : r.speed) s += "<h3>" + escape(c.figure) + "</h3>\n" + speed_svg(c) + "\n";
  return s + "</section>\n";
}

std::string perf_section(const CandidateReport& r) {
  std::string s = "<section id=\"perf\"><h2>Candidate beside baseline</h2>\n";
  if (r.perf.empty()) return s + "<p>No comparison: no judged canary with performance rows.</p></section>\n";
  s += "<p class=\"sub\">The " + escape(r.perf_stage) +
       "'s rows as its judge compared them (baseline: " + escape(r.baseline_mode) +
       (r.baseline ? ", " + escape(r.baseline->name) + " at " + escape(r.baseline->build) : "") +
       "), one locator per line, deciding metrics first. Boxes: p25–p75 with the median; whiskers p5–p95; dots: the "
       "rows (thinned to " +
       std::to_string(kStripPoints) + " per side).</p>\n";
  // Figures in the order of their most deciding locator (r.perf is sorted so:
  // failed, marginal, passed, insufficient), so what decided comes first.
  std::vector<std::string> figures;
  for (const auto& g : r.perf)
    if (std::find(figures.begin(), figures.end(), g.figure) == figures.end()) figures.push_back(g.figure);
  for (const std::string& fig : figures) {
    std::vector<const PerfGroup*> gs;
    for (const auto& g : r.perf)
      if (g.figure == fig) gs.push_back(&g);
    if (gs.empty()) continue;
    s += "<h3>" + escape(fig) + "</h3>\n" + perf_svg(fig, gs) + "\n";
  }
  return s + "</section>\n";
}

std::string rows_table(const CandidateReport& r) {
  std::string s = "<section id=\"rows\"><h2>Rows</h2>\n";
  if (r.rows.empty()) return s + "<p>No failure rows and none cited.</p></section>\n";
  s +=
      "<table class=\"rows\"><tr><th>id</th><th>started</th><th>kind</th><th>workload</th><th>outcome</th><th>HTTP</th>"
      "<th>TTFT ms</th><th>decode tok/s</th><th>detail</th></tr>\n";
  for (const auto& row : r.rows) {
    s += "<tr id=\"" + row_anchor(row.id) + "\"><td class=\"n\">" + std::to_string(row.id) +
         "</td><td class=\"mono\">" + iso_utc(row.started_wall_ms) + "</td><td>" + escape(to_string(row.kind)) +
         "</td><td class=\"mono metric\">" + escape(row.workload_id) + "</td><td>" + escape(to_string(row.outcome)) +
         "</td><td class=\"n\">" + (row.http_status ? std::to_string(*row.http_status) : "") + "</td><td class=\"n\">" +
         (row.t_first_token_us ? num(static_cast<double>(*row.t_first_token_us) / 1000) : "") +
         "</td><td class=\"n\">" + (row.client_decode_tps ? num(*row.client_decode_tps) : "") + "</td><td>" +
         escape(row.detail) + (row.excerpt.empty() ? "" : " <span class=\"mono\">" + escape(row.excerpt) + "</span>") +
         "</td></tr>\n";
  }
  return s + "</table></section>\n";
}

std::string events_table(const CandidateReport& r) {
  std::string s = "<section id=\"events\"><h2>Events</h2>\n";
  if (r.events.empty()) return s + "<p>No events.</p></section>\n";
  s += "<table "
       "class=\"events\"><tr><th>id</th><th>at</th><th>kind</th><th>scope</th><th>duration</th><th>detail</th></tr>\n";
  for (const auto& e : r.events)
    s += "<tr id=\"" + event_anchor(e.id) + "\"><td class=\"n\">" + std::to_string(e.id) + "</td><td class=\"mono\">" +
         iso_utc(e.wall_ms) + "</td><td>" + escape(to_string(e.kind)) + "</td><td>" +
         (e.candidate_id ? "candidate" : "host") + "</td><td class=\"n\">" +
         (e.duration_ms ? duration_text(*e.duration_ms) : "") + "</td><td class=\"mono detail\">" +
         escape(e.detail_json) + "</td></tr>\n";
  return s + "</table></section>\n";
}

}  // namespace

MetricText metric_text(const MetricEvidence& m) {
  MetricText t;
  const std::string fam = family(m.metric);
  const std::string unit = unit_of(fam);
  t.estimate = num(m.estimate) + unit;
  t.baseline = num(m.baseline) + unit;
  t.threshold = num(m.threshold);
  const bool no_interval = m.lo == 0 && m.hi == 0;
  if (central(fam)) {
    // lo/hi: the Hodges–Lehmann shift interval as a fraction of the baseline
    // median; as the candidate's median it reads in the estimate's unit.
    const double b = std::fabs(m.baseline);
    t.interval = no_interval ? "—" : range(m.baseline + m.lo * b, m.baseline + m.hi * b, unit);
    t.threshold = pct(m.threshold) + " effect floor";
  } else if (fam.find('.') != std::string::npos && !unit.empty()) {  // tails: p95, p99, p5, p1
    t.interval = no_interval ? "—" : pct_range(m.lo, m.hi) + " of rows beyond the baseline's";
    t.threshold = pct(m.threshold);
  } else if (fam == "decode_drift") {
    t.estimate = num(m.estimate) + " tok/s";
    t.baseline = num(m.baseline) + " tok/s";
    t.interval = no_interval ? "—" : range(m.baseline * (1 + m.lo), m.baseline * (1 + m.hi), " tok/s");
    t.threshold = pct(-m.threshold) + " drift";
  } else if (fam == "footprint_slope_mb_per_h") {
    t.estimate = num(m.estimate) + " MB/h";
    t.baseline = "—";
    t.interval = range(m.lo, m.hi, " MB/h");
    t.threshold = num(m.threshold) + " MB/h";
  } else if (fam == "footprint_growth") {
    t.estimate = pct(m.estimate);
    t.baseline = num(m.baseline) + " MB";
    t.interval = pct_range(m.lo, m.hi);
    t.threshold = pct(m.threshold);
  } else if (fam == "swap_growth_mb") {
    t.estimate = num(m.estimate) + " MB";
    t.interval = range(m.lo, m.hi, " MB");
    t.threshold = num(m.threshold) + " MB";
  } else if (fam == "error_rate" || fam == "completion_rate" || fam == "failure_ratio" || fam == "coverage" ||
             (fam == "hard" && !no_interval)) {
    t.estimate = pct(m.estimate).substr(m.estimate >= 0 ? 1 : 0);
    t.baseline = pct(m.baseline).substr(m.baseline >= 0 ? 1 : 0);
    t.interval = no_interval ? "—" : pct_range(m.lo, m.hi);
    t.threshold = pct(m.threshold).substr(m.threshold >= 0 ? 1 : 0);
  } else {
    t.interval = no_interval ? "—" : range(m.lo, m.hi, unit);
  }
  return t;
}

namespace {

// The golden set's prompts × status for the latest comparison (docs/DESIGN.md §3.13).
std::string golden_section(const CandidateReport& r) {
  std::string s = "<section id=\"golden-section\"><h2 id=\"golden\">Same answers (golden set)</h2>\n";
  if (!r.golden) return s + "<p>No judged canary or soak ran the golden set.</p></section>\n";
  const GoldenTable& g = *r.golden;
  if (!g.skipped.empty()) return s + "<p>The " + escape(g.stage) + ": " + escape(g.skipped) + ".</p></section>\n";
  s += "<p class=\"sub\">The " + escape(g.stage) + ": " + escape(g.compared) + ".<br>" + escape(g.summary) +
       "</p>\n<table class=\"golden\"><tr><th>prompt</th><th>status</th><th>detail</th></tr>\n";
  for (const auto& p : g.prompts)
    s += "<tr" + std::string(p.fails ? " class=\"r-fail\"" : "") + "><td class=\"mono\">" + escape(p.prompt_id) +
         "</td><td>" + escape(p.status) + (p.fails ? " (fails)" : "") + "</td><td class=\"mono\">" +
         escape(p.status == "equal" ? std::string() : p.detail) + "</td></tr>\n";
  return s + "</table></section>\n";
}

}  // namespace

std::string render_candidate(const CandidateReport& r) {
  const CandidateRow& c = r.candidate;
  std::string s = head("soakd: " + c.name + " at " + c.build);
  s += "<header><h1>" + escape(c.name) + " " + (r.latest ? badge(to_string(r.latest->state)) : badge("none")) +
       "</h1>\n";
  s += "<p class=\"sub\">" + escape(c.model) + " on " + escape(to_string(c.runtime)) + " at build <b>" +
       escape(c.build) + "</b> · " + escape(c.base_url) + " · candidate row " + std::to_string(c.id);
  if (r.baseline) s += " · baseline " + escape(r.baseline->name) + " at " + escape(r.baseline->build);
  s += "<br>report written " + iso_utc(r.generated_ms) + " by soakctl report</p></header>\n";
  s += "<nav class=\"sub\"><a href=\"#verdict\">verdict</a> · <a href=\"#timeline\">timeline</a> · <a "
       "href=\"#memory\">memory</a> · "
       "<a href=\"#pressure\">pressure</a> · <a href=\"#perf\">candidate vs baseline</a> · <a "
       "href=\"#speed\">speed</a> · <a href=\"#golden\">same answers</a> · <a href=\"#ladder\">long "
       "context</a> · <a href=\"#bursts\">bursts</a> · <a href=\"#argument\">argument</a> · <a href=\"#rows\">rows</a> "
       "· <a href=\"#events\">events</a></nav>\n";
  s += verdict_section(r);
  s += "<section id=\"timeline-section\"><h2 id=\"timeline\">Stage timeline</h2>\n" +
       timeline_svg(r.timeline, "timeline-chart", TimelineSize::Full) + "\n";
  s += "<table "
       "class=\"stages\"><tr><th>stage</th><th>state</th><th>started</th><th>ended</th><th>length</th><th>reason</th></"
       "tr>\n";
  for (const auto& st : r.timeline.stages)
    s += "<tr><td>" + escape(to_string(st.kind)) + "</td><td>" + escape(to_string(st.state)) +
         "</td><td class=\"mono\">" + iso_utc(st.start_ms) + "</td><td class=\"mono\">" +
         (st.state == StageState::Running ? std::string("running") : iso_utc(st.end_ms)) + "</td><td class=\"n\">" +
         duration_text(st.end_ms - st.start_ms) + "</td><td>" + escape(st.reason) + "</td></tr>\n";
  s += "</table></section>\n";
  s += "<section id=\"memory-section\"><h2 id=\"memory-h\">Memory</h2>\n";
  s += r.memory ? "<p class=\"sub\">Over the " + escape(r.memory->stage) + ": " + iso_utc(r.memory->from_ms) + " to " +
                      iso_utc(r.memory->to_ms) + "; " + std::to_string(kTimeBuckets) +
                      " buckets, each min–max and median.</p>\n" + memory_svg(*r.memory)
                : std::string("<p>No stage has run yet.</p>");
  s += "</section>\n<section id=\"pressure-section\"><h2 id=\"pressure-h\">Host memory pressure</h2>\n";
  s += r.pressure ? pressure_svg(*r.pressure) : std::string("<p>No host samples.</p>");
  if (r.pressure && r.pressure->thermal_samples > 0)
    s += "<p class=\"thermal\">Thermal pressure: above nominal in " + std::to_string(r.pressure->thermal_hot) + " of " +
         std::to_string(r.pressure->thermal_samples) +
         " host samples (highest: " + escape(to_string(r.pressure->thermal_worst)) +
         "); timed rows measured above nominal are left out of the comparisons.</p>\n";
  s += "</section>\n" + perf_section(r) + speed_section(r) + golden_section(r);
  s += "<section id=\"ladder-section\"><h2 id=\"ladder-h\">Long context</h2>\n";
  s += r.ladder.empty() ? std::string("<p>No long-context rows.</p>") : ladder_svg(r.ladder, r.context_reach);
  s += "</section>\n<section id=\"bursts-section\"><h2 id=\"bursts-h\">Bursts</h2>\n";
  s += r.bursts.empty() ? std::string("<p>No burst rows.</p>") : bursts_svg(r.bursts);
  s += "</section>\n" + argument_section(r) + rows_table(r) + events_table(r);
  if (!r.notes.empty()) {
    s += "<section id=\"notes\"><h2>Notes</h2><ul class=\"notes\">";
    for (const auto& n : r.notes) s += "<li>" + escape(n) + "</li>";
    s += "</ul></section>\n";
  }
  s += "<footer>soakd report · static file: no script, nothing fetched · times in UTC</footer>\n</body></html>\n";
  return s;
}

std::string render_index(const IndexReport& idx) {
  std::string s = head("soakd: every candidate");
  s += "<header><h1>soakd candidates</h1><p class=\"sub\">report written " + iso_utc(idx.generated_ms) + " · " +
       std::to_string(idx.entries.size()) + " candidate row(s)</p></header>\n";
  s += "<div class=\"wide\"><table class=\"index\"><tr><th>candidate</th><th>model · runtime · "
       "build</th><th>stage</th><th>verdict</th>"
       "<th>timeline</th></tr>\n";
  int i = 0;
  for (const auto& e : idx.entries) {
    const CandidateRow& c = e.status.candidate;
    std::string stage = "-";
    if (e.status.stage) {
      stage = std::string(to_string(e.status.stage->kind)) + " " + std::string(to_string(e.status.stage->state));
      if (e.status.stage->state == StageState::Running && e.status.stage->length_ms > 0)
        stage += " " +
                 std::to_string(
                     static_cast<int>(std::clamp(static_cast<double>(idx.generated_ms - e.status.stage->started_ms) /
                                                     static_cast<double>(e.status.stage->length_ms),
                                                 0.0, 1.0) *
                                      100)) +
                 "%";
    }
    const auto& v = e.status.verdict;
    s += "<tr class=\"candidate\"><td><b>" + escape(c.name) + "</b><div class=\"sub mono\">soakctl report " +
         escape(c.name) + " --build " + escape(c.build) + " --html FILE</div></td><td>" + escape(c.model) + " · " +
         escape(to_string(c.runtime)) + " · " + escape(c.build) + "</td><td>" + escape(stage) + "</td><td>" +
         (v ? badge(to_string(v->state)) + "<div class=\"reason\">" + escape(v->reason) + "</div>" : std::string("-")) +
         "</td><td>" + timeline_svg(e.timeline, "mini-" + std::to_string(i++), TimelineSize::Mini) + "</td></tr>\n";
  }
  s += "</table></div>\n<footer>soakd report · static file: no script, nothing fetched · times in "
       "UTC</footer>\n</body></html>\n";
  return s;
}

}  // namespace soak::report
