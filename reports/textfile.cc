#include "reports/textfile.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "judges/stats.h"
#include "reports/evidence_live.h"

namespace soak::report {

namespace {

std::string value(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.10g", std::isfinite(v) ? v : 0.0);
  return buf;
}
std::string value(int64_t v) { return std::to_string(v); }
std::string seconds(int64_t ms) { return value(static_cast<double>(ms) / 1000.0); }

void insert_sorted(std::vector<double>& v, double x) { v.insert(std::upper_bound(v.begin(), v.end(), x), x); }

// One family at a time: HELP and TYPE once, then its samples.
class Text {
 public:
  void family(const char* name, const char* type, const char* help) {
    out_ += "# HELP ";
    out_ += name;
    out_ += ' ';
    out_ += help;
    out_ += "\n# TYPE ";
    out_ += name;
    out_ += ' ';
    out_ += type;
    out_ += '\n';
  }
  void sample(std::string_view name, const std::string& labels, const std::string& v) {
    out_ += name;
    if (!labels.empty()) out_ += "{" + labels + "}";
    out_ += ' ' + v + '\n';
  }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

std::string label(std::string_view k, std::string_view v) { return std::string(k) + "=\"" + label_value(v) + "\""; }
std::string join(const std::string& a, const std::string& b) { return a.empty() ? b : b.empty() ? a : a + "," + b; }

std::string candidate_labels(const CandidateRow& c) {
  return label("candidate", c.name) + "," + label("model", c.model) + "," + label("runtime", to_string(c.runtime)) +
         "," + label("build", c.build);
}

bool perf_row(const ProbeResult& r) {
  return r.outcome == Outcome::Clean && r.kind != ProbeKind::Health && r.kind != ProbeKind::Scrape &&
         r.kind != ProbeKind::Build && r.kind != ProbeKind::Cancel;
}

template <class E, size_t N>
void state_set(Text& t, const char* name, const std::string& labels, const char* key, const E (&all)[N], E current) {
  for (E e : all) t.sample(name, join(labels, label(key, to_string(e))), e == current ? "1" : "0");
}

constexpr StageState kStageStates[] = {StageState::Pending, StageState::Running, StageState::Passed,
                                       StageState::Failed,  StageState::Hold,    StageState::Inconclusive,
                                       StageState::Aborted, StageState::Blocked};
constexpr VerdictState kVerdictStates[] = {VerdictState::Running, VerdictState::Promoted,     VerdictState::Rejected,
                                           VerdictState::Hold,    VerdictState::Inconclusive, VerdictState::Blocked};

void summary(Text& t, const char* name, const std::string& labels, const std::vector<double>& sorted) {
  double sum = 0;
  for (double v : sorted) sum += v;
  for (double q : kSummaryQuantiles)
    t.sample(name, join(labels, label("quantile", value(q))), value(stats::quantile_sorted(sorted, q)));
  t.sample(std::string(name) + "_sum", labels, value(sum));
  t.sample(std::string(name) + "_count", labels, value(static_cast<int64_t>(sorted.size())));
}

}  // namespace

std::string label_value(std::string_view v) {
  std::string out;
  for (char ch : v) {
    if (ch == '\\')
      out += "\\\\";
    else if (ch == '"')
      out += "\\\"";
    else if (ch == '\n')
      out += "\\n";
    else
      out += ch;
  }
  return out;
}

Status TextfileCollector::refresh(Store& store, int64_t now_ms) {
  SOAK_TRY_ASSIGN(auto max, store.max_ids());

  if (max.probe > counted_to_) {
    ProbeQuery q;
    q.min_id = counted_to_ + 1;
    q.max_id = max.probe;
    SOAK_TRY_ASSIGN(auto counts, store.probe_counts(q));
    for (const auto& c : counts) counts_[c.candidate_id][{c.kind, c.outcome}] += c.n;
    counted_to_ = max.probe;
  }

  SOAK_TRY_ASSIGN(status_, store.status());

  for (const auto& s : status_) {
    if (!s.stage) continue;
    StageFigures& f = figures_[s.candidate.id];
    if (f.stage_id != s.stage->id) {
      f = StageFigures{};
      f.stage_id = s.stage->id;
    }
    if (f.read_to >= max.probe) continue;
    ProbeQuery q;
    q.stage_id = s.stage->id;
    q.min_id = f.read_to + 1;
    q.max_id = max.probe;
    SOAK_TRY_ASSIGN(auto rows, store.probe_results(q));
    for (const auto& r : rows) {
      if ((r.server_running || r.server_waiting) && r.started_wall_ms >= f.queue_ms) {
        f.running = r.server_running;
        f.waiting = r.server_waiting;
        f.queue_ms = r.started_wall_ms;
      }
      if (!perf_row(r)) continue;
      if (r.t_first_token_us) insert_sorted(f.ttft_s[r.workload_id], static_cast<double>(*r.t_first_token_us) / 1e6);
      if (r.client_decode_tps && !r.timing_artifact) insert_sorted(f.decode_tps[r.workload_id], *r.client_decode_tps);
    }
    f.read_to = max.probe;
    if (s.stage->state != StageState::Running) continue;
    SOAK_TRY(f.live.refresh(store, s.candidate.id, *s.stage, max.probe, rows));
  }

  SampleQuery recent;
  recent.since_ms = now_ms - kSampleFreshMs;
  recent.until_ms = now_ms;
  process_.clear();
  for (const auto& s : status_) {
    SampleQuery q = recent;
    q.candidate_id = s.candidate.id;
    SOAK_TRY_ASSIGN(auto samples, store.process_samples(q));
    if (!samples.empty()) process_[s.candidate.id] = samples.back();
  }
  // The newest host sample is the one with the largest id (soakd appends them
  // in time order): a primary-key lookup, where a time range would scan a
  // week of samples on every tick (no index on the time alone).
  host_.reset();
  if (max.host_sample > 0) {
    SampleQuery newest;
    newest.min_id = max.host_sample;
    newest.max_id = max.host_sample;
    SOAK_TRY_ASSIGN(auto hosts, store.host_samples(newest));
    if (!hosts.empty() && hosts.back().wall_ms >= recent.since_ms && hosts.back().wall_ms <= now_ms)
      host_ = hosts.back();
  }

  if (max.event > events_to_) {
    EventQuery q;
    q.min_id = events_to_ + 1;
    q.max_id = max.event;
    SOAK_TRY_ASSIGN(auto events, store.events(q));
    for (const auto& e : events) {
      ++events_[e.kind];
      if (e.kind == EventKind::GuardTrip)
        last_guard_trip_ms_ = std::max(last_guard_trip_ms_.value_or(e.wall_ms), e.wall_ms);
    }
    events_to_ = max.event;
  }
  return {};
}

namespace {

// The file's own families: when it was written, and by which soakd.
void file_families(Text& t, int64_t now_ms, const std::string& version) {
  t.family("soakd_textfile_written_timestamp_seconds", "gauge", "When these figures were written (Unix time).");
  t.sample("soakd_textfile_written_timestamp_seconds", "", seconds(now_ms));
  t.family("soakd_build_info", "gauge", "The soakd that wrote these figures.");
  t.sample("soakd_build_info", label("version", version), "1");
}

// Each candidate row's latest stage: which, its state, how far into it, and when it started and must end.
void stage_families(Text& t, const std::vector<StatusRow>& status, int64_t now_ms) {
  t.family("soakd_candidate_stage", "gauge", "The candidate's latest stage (state set: 1 for the current one).");
  for (const auto& s : status)
    if (s.stage)
      state_set(t, "soakd_candidate_stage", candidate_labels(s.candidate), "stage", kAllStages, s.stage->kind);
  t.family("soakd_candidate_stage_state", "gauge", "The latest stage's state (state set).");
  for (const auto& s : status)
    if (s.stage)
      state_set(t, "soakd_candidate_stage_state", candidate_labels(s.candidate), "state", kStageStates, s.stage->state);
  t.family("soakd_candidate_stage_progress_ratio", "gauge",
           "Time into the latest stage over its nominal length (1 once it ended).");
  for (const auto& s : status) {
    if (!s.stage) continue;
    double p = 1;
    if (s.stage->state == StageState::Running && s.stage->length_ms > 0)
      p = std::clamp(static_cast<double>(now_ms - s.stage->started_ms) / static_cast<double>(s.stage->length_ms), 0.0,
                     1.0);
    t.sample("soakd_candidate_stage_progress_ratio", candidate_labels(s.candidate), value(p));
  }
  t.family("soakd_candidate_stage_started_timestamp_seconds", "gauge", "When the latest stage started (Unix time).");
  for (const auto& s : status)
    if (s.stage)
      t.sample("soakd_candidate_stage_started_timestamp_seconds", candidate_labels(s.candidate),
               seconds(s.stage->started_ms));
  t.family("soakd_candidate_stage_deadline_timestamp_seconds", "gauge",
           "When the latest stage must end at the latest, grace included (Unix time).");
  for (const auto& s : status)
    if (s.stage)
      t.sample("soakd_candidate_stage_deadline_timestamp_seconds", candidate_labels(s.candidate),
               seconds(s.stage->deadline_ms));
}

// Each candidate row's latest verdict, and when it was reached.
void verdict_families(Text& t, const std::vector<StatusRow>& status) {
  t.family("soakd_candidate_verdict", "gauge", "The candidate's latest verdict (state set: 1 for the current one).");
  for (const auto& s : status)
    if (s.verdict)
      state_set(t, "soakd_candidate_verdict", candidate_labels(s.candidate), "verdict", kVerdictStates,
                s.verdict->state);
  t.family("soakd_candidate_verdict_timestamp_seconds", "gauge", "When the latest verdict was reached (Unix time).");
  for (const auto& s : status)
    if (s.verdict)
      t.sample("soakd_candidate_verdict_timestamp_seconds", candidate_labels(s.candidate), seconds(s.verdict->wall_ms));
}

using ProbeCounts = std::map<int64_t, std::map<std::pair<ProbeKind, Outcome>, int64_t>>;

void probe_count_family(Text& t, const std::vector<StatusRow>& status, const ProbeCounts& counts) {
  t.family("soakd_probe_results_total", "counter", "Probe results stored, by probe kind and outcome.");
  for (const auto& s : status) {
    auto it = counts.find(s.candidate.id);
    if (it == counts.end()) continue;
    for (const auto& [key, n] : it->second)
      t.sample("soakd_probe_results_total",
               candidate_labels(s.candidate) + "," + label("kind", to_string(key.first)) + "," +
                   label("outcome", to_string(key.second)),
               value(n));
  }
}

// The three below read the latest stage's figures of each candidate row:
// `Figures` is the collector's map of them by candidate row (its
// StageFigures are private to it, so they come in as a template parameter).

template <class Figures>
void workload_summary_families(Text& t, const std::vector<StatusRow>& status, const Figures& figures) {
  t.family("soakd_ttft_seconds", "summary", "Time to first token of clean rows in the latest stage, by workload.");
  for (const auto& s : status) {
    auto it = figures.find(s.candidate.id);
    if (it == figures.end()) continue;
    for (const auto& [w, v] : it->second.ttft_s)
      summary(t, "soakd_ttft_seconds", candidate_labels(s.candidate) + "," + label("workload", w), v);
  }
  t.family("soakd_decode_tokens_per_second", "summary",
           "Client-measured decode rate of clean rows in the latest stage, by workload.");
  for (const auto& s : status) {
    auto it = figures.find(s.candidate.id);
    if (it == figures.end()) continue;
    for (const auto& [w, v] : it->second.decode_tps)
      summary(t, "soakd_decode_tokens_per_second", candidate_labels(s.candidate) + "," + label("workload", w), v);
  }
}

template <class Figures>
void sequential_evidence_families(Text& t, const std::vector<StatusRow>& status, const Figures& figures) {
  t.family("soakd_sequential_evidence_ratio", "gauge",
           "The running stage's sequential failure test per watched measure: log E over log(1/alpha), 0 while the "
           "rows favour the budget, 1 rejects.");
  for (const auto& s : status) {
    auto it = figures.find(s.candidate.id);
    if (it == figures.end() || !s.stage || s.stage->state != StageState::Running) continue;
    for (const auto& m : it->second.live.measures())
      t.sample("soakd_sequential_evidence_ratio", join(candidate_labels(s.candidate), label("measure", m.name)),
               value(m.fraction()));
  }
  t.family("soakd_sequential_e_value_log", "gauge",
           "The natural log of the running stage's e-value per watched measure, after its rows so far.");
  for (const auto& s : status) {
    auto it = figures.find(s.candidate.id);
    if (it == figures.end() || !s.stage || s.stage->state != StageState::Running) continue;
    for (const auto& m : it->second.live.measures())
      t.sample("soakd_sequential_e_value_log", join(candidate_labels(s.candidate), label("measure", m.name)),
               value(m.last.log_e));
  }
}

template <class Figures>
void runtime_queue_families(Text& t, const std::vector<StatusRow>& status, const Figures& figures, int64_t now_ms) {
  using StageFigures = typename Figures::mapped_type;
  struct QueueGauge {
    const char* name;
    const char* help;
    std::optional<int64_t> StageFigures::*field;
  };
  const QueueGauge queue[] = {
      {"soakd_runtime_requests_running",
       "Requests the runtime itself says it is running, at the newest row that read its queue (left out when older "
       "than 5 minutes).",
       &StageFigures::running},
      {"soakd_runtime_requests_waiting",
       "Requests the runtime itself says are waiting, at the newest row that read its queue (left out when older "
       "than 5 minutes).",
       &StageFigures::waiting}};
  for (const auto& g : queue) {
    t.family(g.name, "gauge", g.help);
    for (const auto& s : status) {
      auto it = figures.find(s.candidate.id);
      if (it == figures.end() || !(it->second.*g.field) || now_ms - it->second.queue_ms > kSampleFreshMs) continue;
      t.sample(g.name, candidate_labels(s.candidate), value(*(it->second.*g.field)));
    }
  }
}

// The runtime process's memory at each candidate row's newest current sample.
void process_families(Text& t, const std::vector<StatusRow>& status, const std::map<int64_t, ProcessSample>& process) {
  struct ProcessGauge {
    const char* name;
    const char* help;
    std::optional<int64_t> ProcessSample::*field;
  };
  const ProcessGauge gauges[] = {
      {"soakd_process_footprint_bytes", "The runtime process's physical footprint (macOS) at the newest sample.",
       &ProcessSample::footprint_bytes},
      {"soakd_process_resident_bytes", "The runtime process's resident memory at the newest sample.",
       &ProcessSample::resident_bytes},
      {"soakd_process_swap_bytes", "The runtime process's swapped-out memory at the newest sample.",
       &ProcessSample::swap_bytes}};
  for (const auto& g : gauges) {
    t.family(g.name, "gauge", g.help);
    for (const auto& s : status) {
      auto it = process.find(s.candidate.id);
      if (it != process.end() && (it->second.*g.field))
        t.sample(g.name, candidate_labels(s.candidate), value(*(it->second.*g.field)));
    }
  }
}

// Host figures: the newest current host sample `h` (the families are
// declared even without one, so the file always has the same shape).
void host_families(Text& t, const std::optional<HostSample>& h) {
  auto host = [&](const char* name, const char* type, const char* help, auto get) {
    t.family(name, type, help);
    if (!h) return;
    if (auto v = get(*h)) t.sample(name, "", value(*v));
  };
  host("soakd_host_sample_timestamp_seconds", "gauge", "When the newest host memory sample was taken (Unix time).",
       [](const HostSample& x) { return std::optional<double>(static_cast<double>(x.wall_ms) / 1000.0); });
  t.family("soakd_host_memory_pressure", "gauge", "The kernel's memory pressure level, macOS (state set).");
  if (h && h->pressure_level)
    for (auto [name, level] : {std::pair{"normal", 1}, {"warn", 2}, {"critical", 4}})
      t.sample("soakd_host_memory_pressure", label("level", name), *h->pressure_level == level ? "1" : "0");
  host("soakd_host_memory_free_ratio", "gauge", "Memory free as the kernel counts it for pressure, macOS.",
       [](const HostSample& x) {
         return x.memorystatus_level ? std::optional<double>(*x.memorystatus_level / 100.0) : std::nullopt;
       });
  host("soakd_host_memory_psi_some_ratio", "gauge", "Share of time some task stalled on memory over 10 s, Linux PSI.",
       [](const HostSample& x) {
         return x.psi_some_avg10 ? std::optional<double>(*x.psi_some_avg10 / 100.0) : std::nullopt;
       });
  host("soakd_host_swap_used_bytes", "gauge", "Swap in use.", [](const HostSample& x) { return x.swap_used_bytes; });
  host("soakd_host_swap_total_bytes", "gauge", "Swap configured.",
       [](const HostSample& x) { return x.swap_total_bytes; });
  host("soakd_host_swapouts_total", "counter", "Pages swapped out since boot.",
       [](const HostSample& x) { return x.swapouts; });
}

// The memory guard: whether it tripped within `window_ms` of `now_ms`, and when it last did.
void guard_families(Text& t, std::optional<int64_t> last_trip_ms, int64_t window_ms, int64_t now_ms) {
  t.family("soakd_guard_tripped", "gauge", "1 when the memory guard tripped within its window.");
  const bool tripped = last_trip_ms && now_ms - *last_trip_ms <= window_ms;
  t.sample("soakd_guard_tripped", "", tripped ? "1" : "0");
  t.family("soakd_guard_last_trip_timestamp_seconds", "gauge", "When the memory guard last tripped (Unix time).");
  if (last_trip_ms) t.sample("soakd_guard_last_trip_timestamp_seconds", "", seconds(*last_trip_ms));
}

void event_family(Text& t, const std::map<EventKind, int64_t>& events) {
  t.family("soakd_events_total", "counter", "Events recorded, by kind (gaps, restarts, guard trips, controls, ...).");
  for (const auto& [kind, n] : events) t.sample("soakd_events_total", label("kind", to_string(kind)), value(n));
}

}  // namespace

std::string TextfileCollector::render(int64_t now_ms) const {
  Text t;
  file_families(t, now_ms, opt_.version);
  stage_families(t, status_, now_ms);
  verdict_families(t, status_);
  probe_count_family(t, status_, counts_);
  workload_summary_families(t, status_, figures_);
  sequential_evidence_families(t, status_, figures_);
  runtime_queue_families(t, status_, figures_, now_ms);
  process_families(t, status_, process_);
  host_families(t, host_);
  guard_families(t, last_guard_trip_ms_, opt_.guard_window_ms, now_ms);
  event_family(t, events_);
  return t.take();
}

}  // namespace soak::report
