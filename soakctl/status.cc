// `soakctl status`: one entry per candidate (its newest build) with its stage,
// a progress bar and the latest verdict. Fits the terminal (80 columns when its width is not
// known, or when piped): a line with name, stage, progress, verdict and build,
// then model, runtime and the verdict's reason, wrapped and cut with "…"
// (`explain` shows all of it). Colour only on a terminal, never with NO_COLOR.
#include "soakctl/common.h"
#include "storage/lock.h"

#include "judges/judge.h"
#include "probes/engine_rows.h"
#include "probes/served_state.h"
#include "reports/evidence_live.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

namespace soak::soakctl {

namespace {

constexpr int kBarCells = 10;
constexpr int kReasonLines = 3;  // the reason's lines under each candidate at most
constexpr int kNameColumns = 20, kStageColumns = 7, kProgressColumns = 17, kVerdictColumns = 13;
constexpr int kMinColumns = 60;  // narrower terminals get the 80-column layout cut by the terminal

// Display width of UTF-8 text, one column per code point (the names, builds
// and reasons soakd writes have no wide characters).
size_t columns_of(std::string_view s) {
  size_t n = 0;
  for (char ch : s) n += (static_cast<unsigned char>(ch) & 0xC0) != 0x80;
  return n;
}

// The first `cols` columns of `s`, ending in "…" when cut.
std::string fit(std::string_view s, size_t cols) {
  if (columns_of(s) <= cols) return std::string(s);
  if (cols == 0) return "";
  std::string out;
  size_t n = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const bool starts = (static_cast<unsigned char>(s[i]) & 0xC0) != 0x80;
    if (starts && ++n > cols - 1) break;
    out += s[i];
  }
  return out + "…";
}

std::string pad(const std::string& s, size_t cols) {
  const size_t w = columns_of(s);
  return w >= cols ? s : s + std::string(cols - w, ' ');
}

// `text` in lines of at most `cols` columns, breaking at spaces; at most
// `max_lines`, the last cut with "…" when more was left.
std::vector<std::string> wrap(const std::string& text, size_t cols, int max_lines) {
  std::vector<std::string> lines;
  std::string line, word;
  std::vector<std::string> words;
  for (char ch : text) {
    if (ch == ' ') {
      if (!word.empty()) words.push_back(word);
      word.clear();
    } else {
      word += ch;
    }
  }
  if (!word.empty()) words.push_back(word);
  size_t i = 0;
  while (i < words.size() && static_cast<int>(lines.size()) < max_lines) {
    line.clear();
    while (i < words.size()) {
      const std::string next = line.empty() ? words[i] : line + " " + words[i];
      if (columns_of(next) > cols) {
        if (line.empty()) line = fit(words[i++], cols);  // one word longer than the line
        break;
      }
      line = next;
      ++i;
    }
    lines.push_back(line);
  }
  if (i < words.size() && !lines.empty()) {  // more left than fits: the last line ends in "…"
    std::string rest = lines.back();
    for (; i < words.size(); ++i) rest += " " + words[i];
    lines.back() = fit(rest, cols);
  }
  return lines;
}

struct Colours {
  bool on = false;
  std::string paint(const std::string& s, const char* code) const {
    return on ? std::string("\033[") + code + "m" + s + "\033[0m" : s;
  }
};

const char* verdict_colour(VerdictState v) {
  switch (v) {
    case VerdictState::Promoted: return "32";      // green
    case VerdictState::Rejected: return "1;31";    // bold red
    case VerdictState::Hold: return "33";          // yellow
    case VerdictState::Running: return "34";       // blue
    case VerdictState::Inconclusive: return "35";  // magenta
    case VerdictState::Blocked: return "90";       // grey
  }
  return "0";
}

std::string progress_bar(double fraction, const Colours& col) {
  fraction = std::clamp(fraction, 0.0, 1.0);
  const int filled = static_cast<int>(std::lround(fraction * kBarCells));
  std::string bar = "[" + col.paint(std::string(static_cast<size_t>(filled), '#'), "36") +
                    std::string(static_cast<size_t>(kBarCells - filled), '.') + "] ";
  return bar + std::to_string(static_cast<int>(std::floor(fraction * 100))) + "%";
}

// The seeds' prefix-reuse rule over the candidate's canary runs (cold, warm,
// prefix 1-3): reuse when the median of median(prefix)/cold is below
// probes::kPrefixReuseRatio (docs/DESIGN.md §3.10). nullopt: no complete run.
struct PrefixReuse {
  bool reuse = false;
  double median_ratio = 0;
  size_t runs = 0;
};
std::optional<PrefixReuse> prefix_reuse(Store& st, int64_t candidate_id) {
  ProbeQuery q;
  q.candidate_id = candidate_id;
  q.kind = ProbeKind::SharedPrefix;
  auto rows = st.probe_results(q);
  if (!rows) return std::nullopt;
  std::vector<double> ratios;
  for (const auto& r : *rows) {
    auto j = json::parse(r.extra_json, nullptr, false);
    if (j.is_object() && j.contains("reuse_ratio") && j["reuse_ratio"].is_number())
      ratios.push_back(j["reuse_ratio"].get<double>());
  }
  if (ratios.empty()) return std::nullopt;
  std::sort(ratios.begin(), ratios.end());
  const size_t n = ratios.size();
  const double median = n % 2 ? ratios[n / 2] : (ratios[n / 2 - 1] + ratios[n / 2]) / 2;
  return PrefixReuse{median < probes::kPrefixReuseRatio, median, n};
}

// The running stage's sequential evidence (judges/sequential.h): as soakd
// stored it last (reports/evidence_live.h StageEvidenceWriter, one row), or,
// where it stored none (an older soakd, or the stage's first minute), computed
// from the stage's rows. Empty when nothing runs or the store cannot say.
struct RunningEvidence {
  std::vector<SequentialMeasure> measures;
  std::optional<int64_t> stored_ms;  // when soakd computed it (nullopt: computed here)
  // The decisive rules' way to their evidence, as soakd stored it (none when
  // computed here).
  std::vector<EvidenceProgress> progress;
};
RunningEvidence evidence_of(Store& st, const StatusRow& r) {
  if (!r.stage || r.stage->state != StageState::Running) return {};
  if (auto e = st.stage_evidence(r.stage->id); e && *e)
    if (auto ms = report::measures_from_json((*e)->measures_json))
      return {std::move(*ms), (*e)->wall_ms, report::progress_from_json((*e)->measures_json)};
  auto ms = report::running_evidence(st, r.candidate.id, *r.stage);
  return {ms ? std::move(*ms) : std::vector<SequentialMeasure>{}, std::nullopt, {}};
}

// "evidence for a promotion: shortest ttft_drift, 3 of 5 rows in the pooled
// first and last quarters (60%); 2 more short": the decisive rule furthest
// from its evidence, or that every one counted so far has it.
std::optional<std::string> evidence_progress_text(const std::vector<EvidenceProgress>& ps) {
  if (ps.empty()) return std::nullopt;
  const auto shortest =
      std::min_element(ps.begin(), ps.end(), [](const auto& a, const auto& b) { return a.fraction() < b.fraction(); });
  const auto short_of = std::count_if(ps.begin(), ps.end(), [](const auto& p) { return p.had < p.needed; });
  if (short_of == 0)
    return ps.size() == 1
               ? "evidence for a promotion: " + ps[0].rule + " has its " + std::to_string(ps[0].had) + " of " +
                     std::to_string(ps[0].needed) + " " + ps[0].unit
               : "evidence for a promotion: all " + std::to_string(ps.size()) + " rules counted so far have theirs";
  std::string s = "evidence for a promotion: shortest " + shortest->rule + ", " + std::to_string(shortest->had) +
                  " of " + std::to_string(shortest->needed) + " " + shortest->unit + " (" +
                  std::to_string(static_cast<int>(std::floor(shortest->fraction() * 100))) + "%)";
  if (short_of > 1) s += "; " + std::to_string(short_of - 1) + " more short";
  return s;
}

json progress_json(const std::vector<EvidenceProgress>& ps) {
  json arr = json::array();
  for (const auto& p : ps)
    arr.push_back(
        {{"rule", p.rule}, {"had", p.had}, {"needed", p.needed}, {"unit", p.unit}, {"fraction", p.fraction()}});
  return arr;
}
// Stored evidence older than this is shown with its time (soakd stores it every minute while it runs).
constexpr int64_t kEvidenceStaleMs = 2 * report::kStageEvidenceEveryMs;

json evidence_json(const std::vector<SequentialMeasure>& ms) {
  json arr = json::array();
  for (const auto& m : ms)
    arr.push_back({{"measure", m.name},
                   {"n", m.last.n},
                   {"k", m.last.k},
                   {"log_e", m.last.log_e},
                   {"log_boundary", m.log_boundary()},
                   {"fraction", m.fraction()},
                   {"budget", m.budget},
                   {"basis", m.basis}});
  return arr;
}

// "evidence: pooled 41%, task/burst 41%, http_5xx 12% of the boundary": the
// measures furthest on their way to rejection first, those at none left out.
constexpr size_t kEvidenceShown = 3;
std::string evidence_text(RunningEvidence ev, int64_t now) {
  auto& ms = ev.measures;
  std::stable_sort(ms.begin(), ms.end(), [](const auto& x, const auto& y) { return x.fraction() > y.fraction(); });
  std::string s;
  size_t shown = 0;
  for (const auto& m : ms) {
    const int pct = static_cast<int>(std::floor(m.fraction() * 100));
    if (pct <= 0 || shown == kEvidenceShown) continue;
    s += (shown++ ? ", " : "") + m.name + " " + std::to_string(pct) + "%";
  }
  std::string when;
  if (ev.stored_ms && now - *ev.stored_ms > kEvidenceStaleMs) when = " (as of " + iso_utc(*ev.stored_ms) + ")";
  return "evidence against the failure budget: " + (shown ? s + " of the boundary" : std::string("none")) + when;
}

// The notify command's latest outcome on each candidate row (daemon/notifier.h):
// the `notify` event's detail, with its time. One query for all rows, by the
// events' kind index (a candidate's own events are mostly other kinds).
std::map<int64_t, json> last_notify(Store& st) {
  EventQuery q;
  q.kind = EventKind::Notify;
  auto events = st.events(q);
  std::map<int64_t, json> out;
  if (!events) return out;
  for (const auto& e : *events) {  // oldest first: the last one of a candidate stays
    if (!e.candidate_id) continue;
    json j = json::parse(e.detail_json, nullptr, false);
    if (!j.is_object()) continue;
    j["at"] = iso_utc(e.wall_ms);
    out[*e.candidate_id] = std::move(j);
  }
  return out;
}
const json* notify_of(const std::map<int64_t, json>& all, int64_t candidate_id) {
  auto it = all.find(candidate_id);
  return it == all.end() ? nullptr : &it->second;
}

// The newest row of each candidate name: a new build or launch is a new row,
// and after a month of nightly builds a line for each would bury today's.
// The earlier rows are counted, and the newest promoted one among them named
// when the shown row is not promoted itself (what runs in production).
struct Shown {
  const StatusRow* row = nullptr;
  size_t earlier = 0;
  const StatusRow* promoted = nullptr;
};
std::vector<Shown> newest_per_name(const std::vector<StatusRow>& rows) {
  std::vector<Shown> out;  // rows come ordered by name, then id
  for (const auto& r : rows) {
    if (!out.empty() && out.back().row->candidate.name == r.candidate.name) {
      Shown& s = out.back();
      if (s.row->verdict && s.row->verdict->state == VerdictState::Promoted) s.promoted = s.row;
      s.row = &r;
      ++s.earlier;
    } else {
      out.push_back({&r});
    }
  }
  for (auto& s : out)
    if (s.row->verdict && s.row->verdict->state == VerdictState::Promoted) s.promoted = nullptr;
  return out;
}

std::string earlier_text(const Shown& s) {
  std::string t = std::to_string(s.earlier) +
                  (s.earlier == 1 ? " earlier build or launch" : " earlier builds or launches") + " (soakctl history " +
                  s.row->candidate.name + ")";
  if (s.promoted)
    t += "; last promoted: " + s.promoted->candidate.build +
         (s.promoted->candidate.build == s.row->candidate.build ? ", another launch" : "");
  return t;
}

// The host's thermal pressure as its latest sample read it (platform/thermal.h):
// one row, found by the table's largest id. nullopt: no sample carries a level.
std::optional<std::string> host_thermal(Store& st) {
  auto max = st.max_ids();
  if (!max || max->host_sample == 0) return std::nullopt;
  SampleQuery q;
  q.min_id = max->host_sample;
  auto rows = st.host_samples(q);
  if (!rows || rows->empty() || !rows->back().thermal_level) return std::nullopt;
  const auto level = thermal_level_of(*rows->back().thermal_level);
  if (!level) return std::nullopt;
  return "host thermal pressure: " + std::string(to_string(*level)) + " (" + iso_utc(rows->back().wall_ms) + ")" +
         (*level == ThermalLevel::Nominal ? "" : " — timed rows measured now are left out of speed comparisons");
}

std::string notify_text(const json& j) {
  auto str = [&](const char* k) { return j.contains(k) && j[k].is_string() ? j[k].get<std::string>() : ""; };
  return "notify (" + str("verdict") + ", " + str("at") + "): " + str("outcome") + " — " + str("detail");
}

int cmd_status(const Ctl& c, const Args& a, Store& st) {
  auto rows = st.status();
  if (!rows) {
    c.err << "soakctl: " << rows.message() << "\n";
    return kCtlExitStore;
  }
  const int64_t now = c.clock.wall_ms();
  // What the store cannot say about itself: the running soakd cannot write to it.
  std::optional<std::string> note;
  if (auto path = store_path(a)) note = DaemonLock::running_note(*path);
  const auto shown = newest_per_name(*rows);
  const auto notified = last_notify(st);
  if (a.flag("json")) {
    json arr = json::array();
    for (const Shown& sh : shown) {
      const StatusRow& r = *sh.row;
      json j;
      j["candidate"] = r.candidate.name;
      j["model"] = r.candidate.model;
      j["runtime"] = to_string(r.candidate.runtime);
      j["build"] = r.candidate.build;
      j["base_url"] = r.candidate.base_url;
      j["candidate_id"] = r.candidate.id;
      if (!r.candidate.fingerprint.empty()) j["launch"] = json::parse(r.candidate.fingerprint, nullptr, false);
      j["stage"] = r.stage ? stage_json(*r.stage, now) : json(nullptr);
      j["verdict"] = r.verdict ? verdict_json(*r.verdict) : json(nullptr);
      if (auto reach = latest_reach(st, r.candidate.id)) j["context_reach"] = reach_json(*reach);
      if (auto p = prefix_reuse(st, r.candidate.id))
        j["prefix_reuse"] = {{"reuse", p->reuse}, {"median_ratio", p->median_ratio}, {"runs", p->runs}};
      if (auto ev = evidence_of(st, r); !ev.measures.empty() || !ev.progress.empty()) {
        j["sequential"] = evidence_json(ev.measures);
        if (ev.stored_ms) j["sequential_ms"] = *ev.stored_ms;
        if (!ev.progress.empty()) j["evidence_progress"] = progress_json(ev.progress);
      }
      if (const json* n = notify_of(notified, r.candidate.id)) j["notify"] = *n;
      if (sh.earlier) j["earlier_builds"] = sh.earlier;
      if (sh.promoted)
        j["last_promoted"] = {{"build", sh.promoted->candidate.build},
                              {"candidate_id", sh.promoted->candidate.id},
                              {"verdict", verdict_json(*sh.promoted->verdict)}};
      arr.push_back(std::move(j));
    }
    c.out << arr.dump(2) << "\n";
    if (note) c.err << "soakd: " << *note << "\n";
    return kCtlExitOk;
  }
  if (note) c.out << "soakd: " << *note << "\n\n";
  if (auto thermal = host_thermal(st)) c.out << *thermal << "\n\n";
  if (rows->empty()) {
    c.out << "no candidates yet (soakd registers each candidate once it has read its build)\n";
    return kCtlExitOk;
  }
  const Colours col{c.terminal.is_tty && !c.terminal.no_color};
  const int width = c.terminal.is_tty && c.terminal.columns >= kMinColumns ? c.terminal.columns : kDefaultColumns;
  const size_t build_cols =
      static_cast<size_t>(width - kNameColumns - kStageColumns - kProgressColumns - kVerdictColumns - 4);
  const size_t reason_cols = static_cast<size_t>(width - 4);
  c.out << pad("CANDIDATE", kNameColumns) << " " << pad("STAGE", kStageColumns) << " "
        << pad("PROGRESS", kProgressColumns) << " " << pad("VERDICT", kVerdictColumns) << " BUILD\n";
  for (const Shown& sh : shown) {
    const StatusRow& r = *sh.row;
    const std::string stage = r.stage ? std::string(to_string(r.stage->kind)) : "-";
    // Padding is counted on the plain text, so escape codes never shift a column.
    std::string progress = "-", plain = "-";
    if (r.stage) {
      if (r.stage->state == StageState::Running && r.stage->length_ms > 0) {
        const double f = static_cast<double>(now - r.stage->started_ms) / static_cast<double>(r.stage->length_ms);
        progress = progress_bar(f, col);
        plain = progress_bar(f, Colours{});
      } else {
        progress = plain = std::string(to_string(r.stage->state));
      }
    }
    const std::string verdict = r.verdict ? std::string(to_string(r.verdict->state)) : "-";
    const size_t progress_text = columns_of(plain);
    c.out << pad(fit(r.candidate.name, kNameColumns), kNameColumns) << " " << pad(stage, kStageColumns) << " "
          << progress << std::string(kProgressColumns > progress_text ? kProgressColumns - progress_text : 0, ' ')
          << " "
          << (r.verdict ? col.paint(pad(verdict, kVerdictColumns), verdict_colour(r.verdict->state))
                        : pad(verdict, kVerdictColumns))
          << " " << fit(r.candidate.build, build_cols) << "\n";
    std::string about = r.candidate.model + " on " + std::string(to_string(r.candidate.runtime));
    // The reach label comes before the reason: a long reason is cut at
    // kReasonLines, and the label must survive that.
    if (auto reach = latest_reach(st, r.candidate.id))
      about += " [reach " + size_label(reach->reach_tokens) + "/" + size_label(reach->configured_tokens) + "]";
    if (auto p = prefix_reuse(st, r.candidate.id)) {
      char buf[64];
      std::snprintf(buf, sizeof buf, " [prefix reuse %s %.2f]", p->reuse ? "yes" : "no", p->median_ratio);
      about += buf;
    }
    if (r.verdict && r.verdict->is_override) about += " (override by " + r.verdict->who + ")";
    if (r.verdict && !r.verdict->reason.empty() && r.verdict->state != VerdictState::Running)
      about += " — " + r.verdict->reason;
    for (const auto& line : wrap(about, reason_cols, kReasonLines)) c.out << "    " << line << "\n";
    if (auto ev = evidence_of(st, r); !ev.measures.empty() || !ev.progress.empty()) {
      if (auto p = evidence_progress_text(ev.progress))
        for (const auto& line : wrap(*p, reason_cols, kReasonLines)) c.out << "    " << line << "\n";
      if (!ev.measures.empty())
        for (const auto& line : wrap(evidence_text(std::move(ev), now), reason_cols, kReasonLines))
          c.out << "    " << line << "\n";
    }
    // What the runtime serves with: a change of it is a new row, like a build.
    if (auto fp = probes::parse_fingerprint_json(r.candidate.fingerprint); fp && !r.candidate.fingerprint.empty())
      for (const auto& line : wrap("launch: " + fp->summary(), reason_cols, kReasonLines))
        c.out << "    " << line << "\n";
    if (const json* n = notify_of(notified, r.candidate.id))
      for (const auto& line : wrap(notify_text(*n), reason_cols, kReasonLines)) c.out << "    " << line << "\n";
    if (sh.earlier)
      for (const auto& line : wrap(earlier_text(sh), reason_cols, kReasonLines)) c.out << "    " << line << "\n";
  }
  return kCtlExitOk;
}

}  // namespace

const Command kStatusCommand{"status", Operand::None, {{"json"}, {}}, OpenMode::ReadOnly, cmd_status};

}  // namespace soak::soakctl
