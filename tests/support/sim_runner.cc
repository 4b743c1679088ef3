#include "tests/support/sim_runner.h"

#include <algorithm>
#include <memory>

namespace soak {

namespace {

constexpr int64_t kBaseFootprint = 20LL * 1024 * 1024 * 1024;  // 20 GiB resident model
constexpr double kPromptRate = 400.0;                          // tokens/s, fresh prefill
constexpr double kDecodeRate = 40.0;                           // tokens/s
constexpr double kOutputTokens = 64;
constexpr int64_t kAgentPromptTokens = 2000;   // ~7 KB shared system prompt + user turn
constexpr int64_t kSimServedEveryMs = 10'000;  // a running row is served this often (SimRunner::serving)

double slowdown(Behaviour b) {
  switch (b) {
    case Behaviour::Marginal: return 1.12;
    case Behaviour::TinySlower: return 1.03;
    default: return 1.0;
  }
}

}  // namespace

double SimRunner::jitter(double noise) {
  // splitmix64: deterministic across platforms.
  uint64_t z = (seed_ += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  z ^= z >> 31;
  return 1.0 - noise + 2 * noise * static_cast<double>(z >> 11) / static_cast<double>(1ULL << 53);
}

ProbeResult SimRunner::base_row(const TaskRequest& req, int64_t started, ProbeKind kind,
                                const std::string& workload) const {
  ProbeResult r;
  r.candidate_id = req.candidate_id;
  r.host_id = req.host_id;
  r.stage_id = req.stage_id;
  r.started_wall_ms = started;
  r.kind = kind;
  r.task = std::string(to_string(req.task));
  r.workload_id = workload;
  r.fixture_hash = "fx-" + workload;
  r.sampling_json = req.candidate->settings.sampling.to_json();
  r.thinking = false;
  r.runtime_slots = req.candidate->slots;
  r.group_id = req.group_id;
  r.outcome = Outcome::Clean;
  r.http_status = 200;
  r.finish_reason = "stop";
  r.response_model = req.candidate->model;
  return r;
}

void SimRunner::perf_row(ProbeResult& r, const SimCandidate& s, double prompt_tokens, double out_tokens,
                         CacheState cache) {
  const double slow = slowdown(s.behaviour) * s.speed;
  if (s.behaviour == Behaviour::ShortAnswers) out_tokens *= 0.45;  // under S4:271's 0.5x
  const double prompt_rate = cache == CacheState::Fresh || cache == CacheState::None ? kPromptRate : kPromptRate * 20;
  double decode = kDecodeRate / slow / decode_divisor_;
  if (s.behaviour == Behaviour::SlowDecode) {
    decode = kDecodeRate / 10;
    r.server_draft_n = 100;
    r.server_draft_accepted = 95;
  }
  const double ttft_s = (prompt_tokens / prompt_rate + 0.05) * slow * jitter(s.noise) * ttft_factor_;
  decode *= jitter(s.noise);
  const double wall_s = ttft_s + out_tokens / decode;
  r.cache_state = cache;
  r.prompt_tokens = static_cast<int64_t>(prompt_tokens);
  r.completion_tokens = static_cast<int64_t>(out_tokens);
  r.t_connect_us = 300;
  r.t_first_byte_us = static_cast<int64_t>(ttft_s * 0.5e6);
  r.t_first_event_us = r.t_first_byte_us;
  r.t_first_token_us = static_cast<int64_t>(ttft_s * 1e6);
  r.t_last_token_us = static_cast<int64_t>(wall_s * 1e6) - 1000;
  r.t_terminal_us = static_cast<int64_t>(wall_s * 1e6) - 500;
  r.t_done_us = static_cast<int64_t>(wall_s * 1e6);
  r.client_decode_tps = decode;
  r.server_prompt_tps = prompt_tokens / (ttft_s - 0.01);
  r.server_predicted_tps = decode;
  r.content_events = static_cast<int64_t>(out_tokens);
}

void SimRunner::run(const TaskRequest& req, std::function<void(TaskReport)> done) {
  const std::string name = req.candidate->name;
  SimCandidate s = sims_[name];
  runs_[name]++;
  const int64_t start = clock_.wall_ms();
  run_starts_ms_.push_back(start);
  // How far into its soak the candidate is (-1: not in the soak).
  int64_t soak_elapsed = -1;
  if (req.stage == StageKind::Soak && req.stage_id) {
    soak_started_ms_.try_emplace(name, start);
    soak_elapsed = start - soak_started_ms_[name];
  }
  decode_divisor_ = soak_elapsed >= req.candidate->settings.stages.soak_ms / 2 ? s.late_soak_decode : 1.0;
  ttft_factor_ =
      soak_elapsed >= 0 && static_cast<double>(soak_elapsed) >=
                               static_cast<double>(req.candidate->settings.stages.soak_ms) * s.late_soak_ttft_from
          ? s.late_soak_ttft
          : 1.0;
  std::vector<ProbeResult> rows;
  const bool down = s.behaviour == Behaviour::Unreachable || s.behaviour == Behaviour::ResetMidRequest;
  auto add = [&](ProbeKind k, const std::string& workload) -> ProbeResult& {
    rows.push_back(base_row(req, start, k, workload));
    if (down) {
      rows.back().outcome = s.behaviour == Behaviour::Unreachable ? Outcome::ConnectRefused : Outcome::ConnectionReset;
      rows.back().http_status.reset();
      rows.back().response_model.clear();
    }
    return rows.back();
  };
  auto served = [&] { return ++counters_[name]; };
  auto flaky = [&](ProbeResult& r) {
    if (down || s.behaviour != Behaviour::Flaky5xx || ++counters_[name + "/flaky"] % 8 != 0) return;
    r.outcome = Outcome::Http5xx;
    r.http_status = 500;
    r.detail = "HTTP 500 server_error";
  };
  auto functional = [&] {
    for (auto [k, w] : {std::pair{ProbeKind::Marker, "marker"},
                        {ProbeKind::Stream, "stream"},
                        {ProbeKind::StrictJson, "strict_json"},
                        {ProbeKind::ToolCall, "tool_call"}}) {
      ProbeResult& r = add(k, w);
      if (down) continue;
      perf_row(r, s, 200, kOutputTokens, CacheState::None);
      if (k == ProbeKind::StrictJson && s.behaviour == Behaviour::InvalidJson) r.outcome = Outcome::InvalidJson;
      if (s.behaviour == Behaviour::IdentityMismatch) {
        r.response_model = "qwen-alias";
        r.outcome = Outcome::IdentityMismatch;
      }
      if (s.behaviour == Behaviour::Repeated5xx && served() >= s.fault_after) {
        r.outcome = Outcome::Http5xx;
        r.http_status = 500;
      }
      flaky(r);
    }
  };

  if (req.candidate->kind != WorkloadKind::Chat && !down && req.task != TaskKind::Scrape) {
    pooling_rows(req, s, start, rows);
  } else
    switch (req.task) {
      case TaskKind::Smoke: {
        ProbeResult& h = add(ProbeKind::Health, "health");
        (void)h;
        ProbeResult& id = add(ProbeKind::Identity, "identity");
        if (!down && s.behaviour == Behaviour::IdentityMismatch) {
          id.outcome = Outcome::IdentityMismatch;
          id.response_model = "qwen-alias";
        }
        functional();
        break;
      }
      case TaskKind::Scrape: {
        ProbeResult& r = add(ProbeKind::Scrape, "scrape");
        if (!down) r.t_done_us = 2000;
        const int64_t n = ++scrapes_[name];
        ProcessSample p;
        p.host_id = host_id_;
        p.candidate_id = req.candidate_id;
        p.wall_ms = start;
        p.pid = 4242;
        p.name = "llama-server";
        p.start_time = 1;
        double fp = static_cast<double>(kBaseFootprint) * (0.995 + 0.01 * (jitter() - 0.9) * 5);
        if (s.behaviour == Behaviour::Leak && req.stage == StageKind::Soak) fp += static_cast<double>(n) * 40e6;
        if (s.behaviour == Behaviour::LeakSpike && req.stage == StageKind::Soak && n % 500 == 7) fp *= 1.3;
        if (soak_elapsed >= 0 && s.soak_cache_fill_mb > 0)
          fp += s.soak_cache_fill_mb * 1e6 *
                std::min(1.0, static_cast<double>(soak_elapsed) / static_cast<double>(s.soak_cache_fill_ms));
        p.footprint_bytes = static_cast<int64_t>(fp);
        p.resident_bytes = p.footprint_bytes;
        if (req.stage_id) put(p);
        auto event = [&](EventKind kind) {
          Event e;
          e.wall_ms = start;
          e.host_id = host_id_;
          e.candidate_id = req.candidate_id;
          e.kind = kind;
          e.detail_json = R"({"simulated":true})";
          put(e);
        };
        if (req.stage_id && n == s.fault_after && s.behaviour == Behaviour::Crash) event(EventKind::ProcessRestart);
        if (req.stage_id && n == s.fault_after && s.behaviour == Behaviour::GuardTrip) event(EventKind::GuardTrip);
        if (req.stage_id && n == s.fault_after && s.behaviour == Behaviour::SecondEngine) {
          Event e;
          e.wall_ms = start;
          e.host_id = host_id_;
          e.candidate_id = req.candidate_id;
          e.kind = EventKind::DuplicateEngine;
          e.detail_json = R"({"pid":777,"runtime":"ollama","command":"ollama serve"})";
          store_.insert_event(e).ok();
        }
        if (req.stage_id && s.behaviour == Behaviour::SwapCreep) {
          // Swap creeping in at a steady rate through the gate: a few MB per
          // 10-minute guard window, hundreds over the day.
          if (req.stage == StageKind::Gate && !gate_started_ms_) gate_started_ms_ = start;
          const double hours = gate_started_ms_ ? static_cast<double>(start - *gate_started_ms_) / 3.6e6 : 0.0;
          HostSample h;
          h.host_id = host_id_;
          h.wall_ms = start;
          h.swap_used_bytes = static_cast<int64_t>((1000 + s.swap_mb_per_hour * hours) * 1e6);
          h.swapouts = 100;
          store_.insert_host_sample(h).ok();
        }
        break;
      }
      case TaskKind::Functional: functional(); break;
      case TaskKind::LongContext: {
        const auto& sizes = req.candidate->settings.long_context_sizes;
        const int64_t largest = sizes.empty() ? 0 : *std::max_element(sizes.begin(), sizes.end());
        for (int64_t size : sizes) {
          for (CacheState cache : {CacheState::Fresh, CacheState::Repeat}) {
            ProbeResult& r = add(ProbeKind::LongContext,
                                 "long_context/" + std::to_string(size) + "/" + std::string(to_string(cache)));
            r.size_tokens = size;
            r.cache_state = cache;
            if (down) continue;
            perf_row(r, s, static_cast<double>(size), kOutputTokens, cache);
            if (cache == CacheState::Fresh && size >= 32768 && s.fresh_prefill_slowdown != 1.0) {
              const double f = s.fresh_prefill_slowdown;
              const auto extra = static_cast<int64_t>(static_cast<double>(*r.t_first_token_us) * (f - 1));
              for (auto* t : {&r.t_first_byte_us, &r.t_first_event_us, &r.t_first_token_us, &r.t_last_token_us,
                              &r.t_terminal_us, &r.t_done_us})
                *t = **t + extra;
              r.server_prompt_tps = *r.server_prompt_tps / f;
            }
            if (s.behaviour == Behaviour::ContextLimit) {
              r.extra_json = R"({"sized_by":"tokenize","runtime_ctx":)" + std::to_string(s.runtime_ctx) +
                             R"(,"runtime_ctx_source":"/props n_ctx"})";
              if (size >= s.runtime_ctx) {
                r.outcome = Outcome::ContextExceeded;
                r.http_status = 400;
                r.detail = "HTTP 400 exceed_context_size_error";
                break;  // the probe sends no repeat after a failed fresh request
              }
            }
            const bool fails = s.behaviour == Behaviour::LargestFails ||
                               (s.behaviour == Behaviour::SoakLargestFails && req.stage == StageKind::Soak);
            if (fails && size == largest) {
              r.outcome = Outcome::Http5xx;
              r.http_status = 500;
              r.detail = "HTTP 500 server_error";
              break;
            }
          }
        }
        break;
      }
      case TaskKind::Burst:
        for (int n : req.candidate->settings.burst_sizes) {
          for (int i = 0; i < n; ++i) {
            ProbeResult& r = add(ProbeKind::Burst, "burst/" + std::to_string(n));
            r.client_concurrency = n;
            if (!down) perf_row(r, s, 300, kOutputTokens, CacheState::None);
            flaky(r);
          }
        }
        break;
      case TaskKind::Capacity:
        for (const CapacityEntry& e : capacity_entries(req.candidate->settings, req.candidate->slots)) {
          const std::string w = "capacity/" + std::to_string(e.size) + "/fresh/x" + std::to_string(e.concurrency);
          for (int i = 0; i < e.concurrency; ++i) {
            ProbeResult& r = add(ProbeKind::Capacity, w);
            r.size_tokens = e.size;
            r.client_concurrency = e.concurrency;
            if (!down) perf_row(r, s, static_cast<double>(e.size), kOutputTokens, CacheState::Fresh);
          }
          ProbeResult& summary = add(ProbeKind::Capacity, w + "/summary");
          summary.size_tokens = e.size;
          summary.client_concurrency = e.concurrency;
        }
        break;
      case TaskKind::Cancel: {
        ProbeResult& r = add(ProbeKind::Cancel, "cancel");
        if (!down && s.behaviour == Behaviour::StaleSlot) r.outcome = Outcome::StaleSlot;
        break;
      }
      case TaskKind::PrefixReuse: {
        // Cold, warm, prefix 1-3; the last row carries the reuse ratio.
        std::vector<int64_t> ttfts;
        const char* caches[] = {"fresh", "repeat", "shared_prefix", "shared_prefix", "shared_prefix"};
        for (int i = 0; i < 5; ++i) {
          ProbeResult& r = add(ProbeKind::SharedPrefix, std::string("shared_prefix/") + caches[i]);
          if (down) continue;
          perf_row(r, s, kAgentPromptTokens, kOutputTokens, i == 0 ? CacheState::Fresh : CacheState::SharedPrefix);
          if (r.t_first_token_us) ttfts.push_back(*r.t_first_token_us);
        }
        if (!down && ttfts.size() == 5) {
          std::vector<int64_t> prefix(ttfts.begin() + 2, ttfts.end());
          std::sort(prefix.begin(), prefix.end());
          rows.back().extra_json =
              "{\"reuse_ratio\":" + std::to_string(static_cast<double>(prefix[1]) / static_cast<double>(ttfts[0])) +
              "}";
        }
        break;
      }
      case TaskKind::GoldenStart:
      case TaskKind::GoldenEnd:
        // The golden set (probes/golden_set.h): 32 greedy answers of
        // golden_steps tokens with their top-5, every alternative a token of
        // its own (the largest a stored answer gets at that length).
        for (int i = 0; i < 32; ++i) {
          const std::string id = "factual/" + std::to_string(100 + i).substr(1);
          ProbeResult& r = add(ProbeKind::Equivalence, "equivalence/" + id);
          if (down) continue;
          perf_row(r, s, 200, kOutputTokens, CacheState::None);
          GoldenAnswer a;
          a.prompt_id = id;
          a.text_hash = "sim-" + id;
          a.logprobs = LogprobShape::TopK;
          for (int k = 0; k < s.golden_steps; ++k) {
            TokenStep step;
            for (int j = 0; j < 5; ++j) {
              const int64_t tok = (i * 64 + k) * 5 + j;
              step.top.push_back(TokenChoice{" " + std::to_string(tok), tok, -0.05 - 1.7 * j});
            }
            step.chosen = step.top[0];
            a.steps.push_back(std::move(step));
          }
          GoldenAnswerRow g = golden_row(a);
          g.run = "sim-" + std::to_string(req.work_id);
          g.set_hash = "sim";
          r.golden = std::make_shared<const GoldenAnswerRow>(std::move(g));
        }
        break;
      case TaskKind::Warmup:  // two short completions, as the engine runs it (core/tasks.h)
        for (auto [k, w] : {std::pair{ProbeKind::Marker, "marker"}, {ProbeKind::Stream, "stream"}}) {
          ProbeResult& r = add(k, w);
          if (!down) perf_row(r, s, 200, kOutputTokens, CacheState::None);
        }
        break;
      case TaskKind::Agent:
      case TaskKind::SoakTraffic: {
        ProbeResult& r = add(ProbeKind::Agent, "agent");
        if (down) break;
        agent_turn(req, s, r);
        const int64_t k = served();
        if (s.behaviour == Behaviour::HungStream && k >= s.fault_after) {
          r.outcome = Outcome::Stalled;
          r.detail = "no content for 120s after HTTP 200";
          r.t_last_token_us.reset();
          r.t_terminal_us.reset();
        }
        if (s.behaviour == Behaviour::NoTerminal && k >= s.fault_after) {
          r.outcome = Outcome::NoTerminal;
          r.detail = "stream ended without data: [DONE]";
          r.t_terminal_us.reset();
        }
        if (s.behaviour == Behaviour::Repeated5xx && k >= s.fault_after) {
          r.outcome = Outcome::Http5xx;
          r.http_status = 500;
        }
        break;
      }
    }

  // StopServing: from the gate's fault_after-th inference run on, none is served again.
  const bool inference = req.task != TaskKind::Scrape;
  const bool stopped = s.behaviour == Behaviour::StopServing && inference && req.stage == StageKind::Gate &&
                       req.stage_id && ++counters_[name + "/gate"] >= s.fault_after;
  // Rows run one after another; the run lasts as long as they took.
  int64_t offset = 0;
  std::vector<int64_t> served_at;
  int64_t budget = 0;
  const Limits& limits = req.candidate->settings.limits;
  for (auto& r : rows) {
    r.started_wall_ms = start + offset;
    // A row that came back was served all along: its prefill progress, its
    // tokens (as llama-server reports progress per batch), then its end.
    const int64_t row_ms = std::max<int64_t>(5, r.t_done_us.value_or(5000) / 1000);
    for (int64_t at = kSimServedEveryMs; at < row_ms; at += kSimServedEveryMs) served_at.push_back(start + offset + at);
    offset += row_ms;
    served_at.push_back(start + offset);
    budget = std::max(
        budget, limits.stall_timeout_ms + prefill_allowance_ms(r.prompt_tokens.value_or(r.size_tokens.value_or(0)),
                                                               limits.prefill_floor_tps));
  }
  int64_t duration = std::max<int64_t>(10, offset);
  if (stopped) {
    // Accepted and never answered: in flight until cut, and then cancelled.
    for (auto& r : rows) {
      r.outcome = Outcome::CancelledByDaemon;
      r.detail = "cancelled by soakd";
    }
    served_at.clear();
    duration = kDay * 365;
  }
  const bool heavy = req.task == TaskKind::LongContext || req.task == TaskKind::Burst || req.task == TaskKind::Capacity;
  if (heavy && ++heavy_now_ > max_heavy_) max_heavy_ = heavy_now_;
  queue_.push_back(Pending{start + duration, seq_++,
                           [this, rows = std::move(rows), done = std::move(done), heavy]() mutable {
                             TaskReport rep;
                             for (auto& r : rows) {
                               ++rows_produced_;
                               rep.outcomes.push_back(r.outcome);
                               rep.kinds.push_back(r.kind);
                               if (auto id = put(r)) rep.row_ids.push_back(*id);
                             }
                             if (heavy) --heavy_now_;
                             done(std::move(rep));
                           },
                           heavy, req.work_id, name, inference, start, std::move(served_at), budget});
}

probes::ServingState SimRunner::serving(const std::string& candidate) const {
  const int64_t now = clock_.wall_ms();
  probes::ServingState s;
  std::optional<int64_t> served;
  if (auto it = last_served_ms_.find(candidate); it != last_served_ms_.end()) served = it->second;
  for (const Pending& p : queue_) {
    if (p.name != candidate || p.work_id == 0 || !p.inference) continue;
    ++s.outstanding;
    s.oldest_age_ms = std::max(s.oldest_age_ms, now - p.start_ms);
    s.silent_budget_ms = std::max(s.silent_budget_ms, p.silent_budget_ms);
    for (int64_t at : p.served_at_ms)
      if (at <= now) served = std::max(served.value_or(at), at);
  }
  if (served) s.served_age_ms = now - *served;
  return s;
}

void SimRunner::agent_turn(const TaskRequest& req, const SimCandidate& s, ProbeResult& r) {
  auto& session = sessions_[req.candidate->name];
  if (!session)
    session = std::make_unique<probes::AgentSession>(seed_, req.candidate->settings.agent,
                                                     req.candidate->settings.agent.context_ceiling_tokens);
  const std::string nonce = "sim" + std::to_string(session->sessions_started());
  const probes::SessionTurn t = session->next_turn(nonce);
  const CacheState cache = t.turn == 1 ? CacheState::Fresh : CacheState::SharedPrefix;
  perf_row(r, s, static_cast<double>(t.context_estimate), kOutputTokens, cache);
  r.thinking = t.thinking;
  probes::SessionAnswer a;
  a.outcome = Outcome::Clean;
  a.prompt_tokens = t.context_estimate;
  a.completion_tokens = static_cast<int64_t>(kOutputTokens);
  const bool drop = s.behaviour == Behaviour::DeepToolDrop && t.context_estimate > s.drop_tools_above;
  if (t.tool_required && !drop) {
    a.tool_calls.push_back({"call_" + std::to_string(t.turn), "lookup_weather",
                            R"({"location":{"city":"Lima","country":"Peru"},"unit":"celsius"})"});
  } else {
    a.content = "Noted; the notes agree with the plan.";
    if (t.tool_required) {
      a.outcome = Outcome::MissingToolCall;
      r.detail = "the turn required a tool call and the answer had none";
    }
  }
  if (s.behaviour == Behaviour::Thinking5xx && t.thinking && t.turn >= s.thinking_fail_turn) {
    a = probes::SessionAnswer{};
    a.outcome = Outcome::Http5xx;
    r.http_status = 500;
    r.detail = "HTTP 500 server_error";
    r.completion_tokens.reset();
  }
  if (s.behaviour == Behaviour::SoakLoops && req.stage == StageKind::Soak &&
      ++counters_[req.candidate->name + "/turns"] % s.loop_every == 0) {
    a.tool_calls.clear();
    a.content.clear();
    for (int i = 0; i < 60; ++i) a.content += " and the same again";
    a.outcome = Outcome::Repetition;
    r.detail = "the last 1140 bytes repeat a 19-byte unit: ' and the same again'";
    r.extra_json = R"({"loop_run_chars":1140,"loop_tail_chars":1140})";
  }
  r.outcome = a.outcome;
  if (t.thinking && a.outcome != Outcome::Http5xx) r.reasoning_tokens = 100;
  probes::label_turn_row(r, t, session->record(t, a));
}

void SimRunner::pooling_rows(const TaskRequest& req, const SimCandidate& s, int64_t start,
                             std::vector<ProbeResult>& rows) {
  const ProbeKind kind = req.candidate->kind == WorkloadKind::Rerank ? ProbeKind::Rerank : ProbeKind::Embeddings;
  const double slow = (s.behaviour == Behaviour::SlowPooling ? 2.0 : 1.0) * s.speed;
  auto timed = [&](ProbeResult& r, double ms) {
    const double wall = ms * slow * jitter(s.noise);
    r.t_connect_us = 200;
    r.t_first_byte_us = static_cast<int64_t>(wall * 900);
    r.t_done_us = static_cast<int64_t>(wall * 1000);
    r.finish_reason.clear();
    r.thinking.reset();
    r.prompt_tokens = 16;
  };
  auto pooled = [&](CacheState cache) {
    rows.push_back(
        base_row(req, start, kind, std::string(to_string(kind)) + (cache == CacheState::Repeat ? "/repeat" : "")));
    rows.back().cache_state = cache;
    timed(rows.back(), 60);
  };
  switch (req.task) {
    case TaskKind::Smoke: rows.push_back(base_row(req, start, ProbeKind::Health, "health")); [[fallthrough]];
    case TaskKind::Functional:
    case TaskKind::Warmup:
    case TaskKind::Agent:
    case TaskKind::SoakTraffic:
      pooled(CacheState::None);
      pooled(CacheState::Repeat);
      break;
    case TaskKind::Burst:
      for (int n : req.candidate->settings.burst_sizes) {
        const std::string w = "burst/" + std::to_string(n) + "/" + std::string(to_string(req.candidate->kind));
        double last_ms = 0;
        for (int i = 0; i < n; ++i) {
          rows.push_back(base_row(req, start, ProbeKind::Burst, w));
          rows.back().client_concurrency = n;
          rows.back().size_tokens = n;
          // One slot at a time past the runtime's slots: the burst takes n/slots service times.
          timed(rows.back(), 60.0 * (1 + i / std::max(1, req.candidate->slots.value_or(4))));
          last_ms = std::max(last_ms, static_cast<double>(*rows.back().t_done_us) / 1000);
        }
        ProbeResult sum = base_row(req, start, ProbeKind::Burst, w + "/summary");
        sum.client_concurrency = n;
        sum.size_tokens = n;
        sum.extra_json = "{\"n\":" + std::to_string(n) + ",\"rps\":" + std::to_string(n / (last_ms / 1000)) + "}";
        rows.push_back(std::move(sum));
      }
      break;
    default: break;  // nothing else runs for a pooling server (the plan has no such task)
  }
}

void SimRunner::read_build(const CandidateConfig& c, std::function<void(Result<probes::BuildIdentity>)> done) {
  SimCandidate s = sims_[c.name];
  const int64_t at = clock_.wall_ms() + 10;
  // Like probes/probe_build.cc: a fixed build is the config's; only the
  // fingerprint is read from the runtime (unknown when it cannot be reached).
  if (c.build.source == BuildSource::Fixed) {
    std::string fp = s.behaviour == Behaviour::Unreachable ? std::string() : s.fingerprint;
    queue_.push_back(Pending{at, seq_++,
                             [done, b = c.build.fixed, fp] {
                               done(probes::BuildIdentity{b, {}, fp});
                             },
                             false, 0, c.name});
    return;
  }
  if (s.behaviour == Behaviour::Unreachable) {
    queue_.push_back(Pending{at, seq_++, [done] { done(make_error("connection refused")); }, false, 0, c.name});
  } else {
    std::string model = c.model;
    queue_.push_back(Pending{at, seq_++,
                             [done, s, model] {
                               done(probes::BuildIdentity{s.build, model, s.fingerprint});
                             },
                             false, 0, c.name});
  }
}

// Simulated runs are not interruptible: a cancelled run completes when due.
void SimRunner::cancel(int64_t work_id) {
  for (Pending& p : queue_)
    if (p.work_id == work_id && work_id != 0 && p.at_ms > clock_.wall_ms()) {
      p.at_ms = clock_.wall_ms();
      ++cancels_[p.name];
    }
}

int64_t SimRunner::cancels_of(const std::string& name) const {
  auto it = cancels_.find(name);
  return it == cancels_.end() ? 0 : it->second;
}

void SimRunner::cancel_all() { deliver(INT64_MAX); }

void SimRunner::deliver(int64_t now_ms) {
  while (true) {
    auto it = std::min_element(queue_.begin(), queue_.end(), [](const Pending& a, const Pending& b) {
      return a.at_ms != b.at_ms ? a.at_ms < b.at_ms : a.seq < b.seq;
    });
    if (it == queue_.end() || it->at_ms > now_ms) return;
    Pending p = std::move(*it);
    queue_.erase(it);
    if (p.inference)
      for (int64_t at : p.served_at_ms)
        if (at <= p.at_ms) last_served_ms_[p.name] = std::max(last_served_ms_[p.name], at);
    p.fire();
  }
}

std::optional<int64_t> SimRunner::next_completion_ms() const {
  std::optional<int64_t> t;
  for (const auto& p : queue_)
    if (!t || p.at_ms < *t) t = p.at_ms;
  return t;
}

int64_t SimRunner::runs_of(const std::string& name) const {
  auto it = runs_.find(name);
  return it == runs_.end() ? 0 : it->second;
}

std::optional<int64_t> SimRunner::put(QueuedRow row) { return (outbox_ ? *outbox_ : own_outbox_).put(std::move(row)); }

}  // namespace soak
