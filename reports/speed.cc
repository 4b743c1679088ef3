// Each speed figure over the candidate's whole campaign (docs/DESIGN.md §3.6):
// TTFT, fresh prompt rate, decode rate and wall time of every clean
// completion, per workload, bucketed in time across smoke, canary, gate and
// soak, so that a drift is seen where the soak judges it. The figures are
// read as the judges read them: rates leave out timing artifacts, prompt
// rates take fresh rows only, rows that waited for a cold model load are kept
// out of TTFT, prefill and wall (judges/pools.cc extract()).
#include <algorithm>
#include <map>
#include <optional>

#include "judges/judge.h"
#include "reports/model.h"

namespace soak::report {

namespace {

enum class Fig { Ttft, PromptTps, DecodeTps, Wall };
struct FigureSpec {
  Fig fig;
  const char* name;
  const char* unit;
};
constexpr FigureSpec kFigures[] = {{Fig::Ttft, "ttft_ms", "ms"},
                                   {Fig::PromptTps, "prompt_tps", "tok/s"},
                                   {Fig::DecodeTps, "decode_tps", "tok/s"},
                                   {Fig::Wall, "wall_ms", "ms"}};

bool timed(const ProbeResult& r) {
  if (r.outcome != Outcome::Clean) return false;
  switch (r.kind) {
    case ProbeKind::Health:
    case ProbeKind::Scrape:
    case ProbeKind::Build:
    case ProbeKind::Cancel: return false;
    default: break;
  }
  const std::string_view w = r.workload_id;
  return !(w.size() >= 8 && w.substr(w.size() - 8) == "/summary");
}

std::optional<double> value_of(Fig f, const ProbeResult& r) {
  const bool cold_load = r.server_load_ms && *r.server_load_ms > 0;
  auto ms = [](std::optional<int64_t> us) -> std::optional<double> {
    if (!us) return std::nullopt;
    return static_cast<double>(*us) / 1000.0;
  };
  switch (f) {
    case Fig::Ttft: return cold_load ? std::nullopt : ms(r.t_first_token_us);
    case Fig::Wall: return cold_load ? std::nullopt : ms(r.t_done_us);
    case Fig::DecodeTps:
      if (r.timing_artifact) return std::nullopt;
      return r.server_predicted_tps ? r.server_predicted_tps : r.client_decode_tps;
    case Fig::PromptTps:
      if (r.timing_artifact || cold_load || r.cache_state != CacheState::Fresh) return std::nullopt;
      if (r.server_prompt_tps) return r.server_prompt_tps;
      if (!r.prompt_tokens || !r.t_first_token_us || *r.t_first_token_us <= 0) return std::nullopt;
      return static_cast<double>(*r.prompt_tokens) / (static_cast<double>(*r.t_first_token_us) / 1e6);
  }
  return std::nullopt;
}

// "agent 20K shared_prefix", "long_context 32K fresh", "stream": the kind, the
// size or context band, and the cache state where it tells rows apart.
std::string workload_of(const ProbeResult& r) {
  std::string w(to_string(r.kind));
  if (r.size_tokens) w += " " + size_label(*r.size_tokens);
  if (r.cache_state != CacheState::None) w += " " + std::string(to_string(r.cache_state));
  if (r.client_concurrency > 1) w += " x" + std::to_string(r.client_concurrency);
  return w;
}

}  // namespace

void speed_charts(Store& store, const CandidateRow& candidate, CandidateReport& rep) {
  ProbeQuery q;
  q.candidate_id = candidate.id;
  auto rows = store.probe_results(q);
  if (!rows) {
    rep.notes.push_back("speed rows unreadable: " + rows.message());
    return;
  }
  const int64_t from = rep.timeline.from_ms, to = std::max(rep.timeline.to_ms, from + 1);
  for (const FigureSpec& f : kFigures) {
    std::map<std::string, std::vector<TimedValue>> by_workload;
    for (const auto& r : *rows) {
      if (!timed(r)) continue;
      if (auto v = value_of(f.fig, r); v && *v >= 0) by_workload[workload_of(r)].push_back({r.started_wall_ms, *v});
    }
    if (by_workload.empty()) continue;
    std::vector<std::pair<std::string, std::vector<TimedValue>>> ranked(by_workload.begin(), by_workload.end());
    std::stable_sort(ranked.begin(), ranked.end(),
                     [](const auto& a, const auto& b) { return a.second.size() > b.second.size(); });
    SpeedChart chart;
    chart.figure = f.name;
    chart.unit = f.unit;
    chart.from_ms = from;
    chart.to_ms = to;
    chart.stages = rep.timeline.stages;
    std::string left_out;
    for (size_t i = 0; i < ranked.size(); ++i) {
      if (i >= kMaxSpeedSeries) {
        left_out += (left_out.empty() ? "" : ", ") + ranked[i].first;
        continue;
      }
      SpeedSeries s;
      s.workload = ranked[i].first;
      s.n = static_cast<int64_t>(ranked[i].second.size());
      s.buckets = downsample(std::move(ranked[i].second), from, to, kTimeBuckets);
      chart.series.push_back(std::move(s));
    }
    if (!left_out.empty())
      rep.notes.push_back(std::string(f.name) + " over the campaign draws the " + std::to_string(kMaxSpeedSeries) +
                          " workloads with the most rows; not drawn: " + left_out);
    rep.speed.push_back(std::move(chart));
  }
}

}  // namespace soak::report
