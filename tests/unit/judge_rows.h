// Synthetic rows for the judge tests: small builders with deterministic
// "noise" (a fixed sequence), so every test input is reproducible.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "judges/judge.h"

namespace soak::testing {

inline constexpr int64_t kCandidate = 1;
inline constexpr int64_t kBaseline = 2;
inline constexpr int64_t kHost = 1;
inline constexpr int64_t kT0 = 1'700'000'000'000;  // wall ms of the first row
inline constexpr int64_t kMinuteMs = 60'000;
inline constexpr int64_t kHourMs = 60 * kMinuteMs;
inline constexpr int64_t kDayMs = 24 * kHourMs;

// A fixed pseudo-random sequence in [-1, 1] (no generator state, no seed).
inline double wobble(int64_t i) {
  uint64_t x = static_cast<uint64_t>(i) * 0x9E3779B97F4A7C15ULL;
  x ^= x >> 29;
  x *= 0xBF58476D1CE4E5B9ULL;
  x ^= x >> 32;
  return static_cast<double>(x % 20001) / 10000.0 - 1.0;
}

// Figures of one streamed completion.
struct Perf {
  double ttft_ms = 200;
  double wall_ms = 2000;
  double decode_tps = 50;
  double prompt_tps = 1000;
};

// Perf scaled by (1 + spread * wobble(i)).
inline Perf jittered(Perf p, int64_t i, double spread = 0.05) {
  const double f = 1 + spread * wobble(i);
  const double g = 1 + spread * wobble(i + 7919);
  p.ttft_ms *= f;
  p.wall_ms *= g;
  p.decode_tps /= g;
  p.prompt_tps /= f;
  return p;
}

// Appends rows for one candidate with increasing ids and times.
class Rows {
 public:
  explicit Rows(int64_t candidate_id, int64_t first_id = 1, int64_t t0_ms = kT0, int64_t step_ms = 10'000)
      : candidate_id_(candidate_id), next_id_(first_id), t_ms_(t0_ms), step_ms_(step_ms) {}

  // A row of `kind` with the given outcome and no figures.
  ProbeResult& add(ProbeKind kind, std::string workload, Outcome outcome = Outcome::Clean) {
    ProbeResult r;
    r.id = next_id_++;
    r.candidate_id = candidate_id_;
    r.host_id = kHost;
    r.started_wall_ms = t_ms_;
    t_ms_ += step_ms_;
    r.kind = kind;
    r.workload_id = std::move(workload);
    r.fixture_hash = "f1x7ure0";
    r.sampling_json = Sampling{}.to_json();
    r.thinking = false;
    r.outcome = outcome;
    r.http_status = outcome == Outcome::Http5xx ? 500 : 200;
    if (outcome != Outcome::Clean) r.detail = std::string("synthetic ") + std::string(to_string(outcome));
    rows.push_back(std::move(r));
    return rows.back();
  }

  // A clean streamed completion with the given figures (server timings included).
  ProbeResult& perf(ProbeKind kind, std::string workload, const Perf& p, CacheState cache = CacheState::None) {
    ProbeResult& r = add(kind, std::move(workload));
    r.cache_state = cache;
    r.prompt_tokens = 1000;
    r.completion_tokens = 100;
    r.t_first_token_us = static_cast<int64_t>(p.ttft_ms * 1000);
    r.t_done_us = static_cast<int64_t>(p.wall_ms * 1000);
    r.t_last_token_us = r.t_done_us;
    r.client_decode_tps = p.decode_tps;
    r.server_predicted_tps = p.decode_tps;
    r.server_prompt_tps = p.prompt_tps;
    r.finish_reason = "stop";
    r.response_model = "model-x";
    return r;
  }

  void skip(int64_t ms) { t_ms_ += ms; }
  int64_t now_ms() const { return t_ms_; }

  std::vector<ProbeResult> rows;

 private:
  int64_t candidate_id_;
  int64_t next_id_;
  int64_t t_ms_;
  int64_t step_ms_;
};

// `n` jittered stream rows of `workload` around `p`, `seed` picks the noise.
inline void add_perf(Rows& rows, int n, const Perf& p, int64_t seed, std::string workload = "stream/1k",
                     CacheState cache = CacheState::None, ProbeKind kind = ProbeKind::Stream) {
  for (int i = 0; i < n; ++i) rows.perf(kind, workload, jittered(p, seed + i), cache);
}

// A complete input for `stage` with full coverage and an interleaved baseline.
inline JudgeInput input_for(StageKind stage) {
  JudgeInput in;
  in.recipe.stage = stage;
  in.recipe.end = StageEnd::Completed;
  in.recipe.candidate_id = kCandidate;
  in.recipe.host_id = kHost;
  in.recipe.stage_id = 7;
  in.recipe.now_ms = kT0 + 30 * kDayMs;
  in.recipe.config_hash = "c0ffee";
  in.recipe.slots_planned = 100;
  in.recipe.slots_run = 100;
  in.recipe.baseline_mode = BaselineMode::Interleaved;
  in.recipe.baseline_id = kBaseline;
  return in;
}

// A process sample of the candidate's runtime.
inline ProcessSample process_sample(int64_t id, int64_t wall_ms, double footprint_mb, int pid = 4242) {
  ProcessSample s;
  s.id = id;
  s.host_id = kHost;
  s.candidate_id = kCandidate;
  s.wall_ms = wall_ms;
  s.pid = pid;
  s.name = "llama-server";
  s.start_time = 1000 + pid;
  s.footprint_bytes = static_cast<int64_t>(footprint_mb * 1e6);
  return s;
}

inline HostSample host_sample(int64_t id, int64_t wall_ms, double swap_mb) {
  HostSample h;
  h.id = id;
  h.host_id = kHost;
  h.wall_ms = wall_ms;
  h.swap_used_bytes = static_cast<int64_t>(swap_mb * 1e6);
  return h;
}

inline Event event(int64_t id, int64_t wall_ms, EventKind kind, std::optional<int64_t> candidate = kCandidate) {
  Event e;
  e.id = id;
  e.wall_ms = wall_ms;
  e.host_id = kHost;
  e.candidate_id = candidate;
  e.kind = kind;
  e.detail_json = "{}";
  return e;
}

// Of a temporary verdict the pointer lives only to the end of the statement:
// keep the verdict in a variable to hold the metric.
inline const MetricEvidence* find_metric(const VerdictRow& v, const std::string& prefix) {
  for (const auto& m : v.metrics)
    if (m.metric.rfind(prefix, 0) == 0) return &m;
  return nullptr;
}

inline bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

}  // namespace soak::testing
