// A scripted TaskRunner for simulating weeks of campaigns in virtual time.
//
// Each run writes the rows a real runner would write for that task (same probe
// kinds, workload ids, locators and timing fields) with deterministic,
// seeded jitter, and completes after a virtual duration. Per candidate name a
// Behaviour says how the simulated runtime misbehaves. Completions are queued;
// the driver delivers them as virtual time passes (never from inside run()).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "campaigns/task_runner.h"
#include "core/clock.h"
#include "probes/session.h"
#include "storage/outbox.h"
#include "storage/store.h"

namespace soak {

enum class Behaviour {
  Healthy,
  SlowDecode,        // decode 10x slower with 95 % draft acceptance (an overnight update gone wrong)
  Marginal,          // every latency ~12 % worse: between the effect floor and floor + hold band
  TinySlower,        // 3 % slower: significant with enough rows, below the effect floor
  HungStream,        // agent turns stall after HTTP 200 from the `fault_after`-th on
  NoTerminal,        // agent streams end without data: [DONE] from the `fault_after`-th on
  IdentityMismatch,  // answers with an alias instead of the canonical model id
  Unreachable,       // connection refused, always
  ResetMidRequest,   // every request's connection reset (a runtime that just died)
  Leak,              // footprint grows steadily through the soak
  LeakSpike,         // one spike of footprint that goes away again
  Repeated5xx,       // a run of 5xx from the `fault_after`-th request on
  StaleSlot,         // cancel probes leave the slot busy
  InvalidJson,       // strict JSON invalid every time
  Crash,             // process restarts (event) at the `fault_after`-th scrape
  GuardTrip,         // memory guard trips at the `fault_after`-th scrape
  ContextLimit,      // long-context sizes above `runtime_ctx` are refused (context_exceeded); /props says it
  LargestFails,      // the largest long-context size fails with HTTP 500
  Flaky5xx,          // every 8th functional or burst completion is an HTTP 500 (never 3 in a row)
  SwapCreep,         // host swap grows by `swap_mb_per_hour` during the gate (host samples at each scrape)
  SecondEngine,      // another engine (ollama) becomes resident at the `fault_after`-th scrape
  DeepToolDrop,      // agent turns that need a tool get none once the context passes `drop_tools_above`
  Thinking5xx,       // agent turns with thinking on get HTTP 500 from turn `thinking_fail_turn` of a session
  SlowPooling,       // a pooling server answering at half the rate
  ShortAnswers,      // every answer under half as long (0.45x, and so faster): an early stop
  SoakLargestFails,  // the largest long-context size fails with HTTP 500, in the soak only
  SoakLoops,         // every `loop_every`-th agent turn of the soak ends in a repetition loop
  // From the gate's `fault_after`-th inference run on, nothing is served again:
  // runs stay in flight until cut (their rows cancelled_by_daemon), while
  // scrapes still answer (a runtime whose health routes answer).
  StopServing,
};

struct SimCandidate {
  Behaviour behaviour = Behaviour::Healthy;
  std::string build = "b9430";
  std::string fingerprint;            // launch fingerprint JSON the build read reports (empty: none exposed)
  double speed = 1.0;                 // multiplies every duration
  int64_t fault_after = 20;           // for behaviours that start misbehaving later
  double noise = 0.10;                // relative jitter of every timing
  int64_t runtime_ctx = 32768;        // ContextLimit: the runtime's per-slot context
  double swap_mb_per_hour = 40;       // SwapCreep
  int64_t drop_tools_above = 30'000;  // DeepToolDrop
  int64_t thinking_fail_turn = 5;     // Thinking5xx
  int64_t loop_every = 400;           // SoakLoops: 0.25 % of the soak's turns, under its 1 % failure ratio
  // Fresh long-context prompts of 32K and more reach their first token this
  // many times later than a healthy build's.
  double fresh_prefill_slowdown = 1.0;
  double late_soak_decode = 1.0;  // decode rate divided by this from the soak's second half on
  // Every request's time to first token (and so its wall time) multiplied by
  // this from `late_soak_ttft_from` of the soak's length on (the golden set's
  // end run included).
  double late_soak_ttft = 1.0;
  double late_soak_ttft_from = 1.0 / 3;
  // The soak's footprint grows by this many MB, evenly over soak_cache_fill_ms
  // from the soak's start, then holds (a prompt cache filling).
  double soak_cache_fill_mb = 0;
  int64_t soak_cache_fill_ms = 48LL * 3'600'000;
  // Tokens of each golden answer (32 a run, each position with a top-5 of
  // tokens of their own): a few keep simulations fast; store_bench sets 64,
  // the length the golden set asks for.
  int golden_steps = 4;
};

class SimRunner final : public TaskRunner {
 public:
  SimRunner(Store& store, VirtualClock& clock, int64_t host_id, uint64_t seed = 42)
      : store_(store),
        clock_(clock),
        host_id_(host_id),
        seed_(seed),
        own_outbox_(store, clock, make_null_logger(), host_id) {}

  // Rows go through `outbox` (as the daemon's runner and sampler write them)
  // instead of straight into the store.
  void write_through(Outbox* outbox) { outbox_ = outbox; }
  void set(const std::string& name, SimCandidate c) { sims_[name] = c; }
  // Every probe row a run produced, stored or not; and when each run started.
  int64_t rows_produced() const { return rows_produced_; }
  const std::vector<int64_t>& run_starts_ms() const { return run_starts_ms_; }
  SimCandidate& at(const std::string& name) { return sims_[name]; }

  void run(const TaskRequest& req, std::function<void(TaskReport)> done) override;
  void read_build(const CandidateConfig& c, std::function<void(Result<probes::BuildIdentity>)> done) override;
  void cancel(int64_t work_id) override;
  void cancel_all() override;
  size_t in_flight() const override { return queue_.size(); }
  // Each run's rows are its requests, one after another: a row is served
  // every few seconds while it runs and at its end (probes::ServingState);
  // a StopServing run never is.
  probes::ServingState serving(const std::string& candidate) const override;

  // Delivers every completion due at or before `now` (in time order).
  void deliver(int64_t now_ms);
  std::optional<int64_t> next_completion_ms() const;

  int64_t runs_of(const std::string& name) const;
  // The candidate's runs cut while in flight (cancel(): each completes at once,
  // as the real runner reports a cut run).
  int64_t cancels_of(const std::string& name) const;
  int64_t max_concurrent_heavy() const { return max_heavy_; }

 private:
  Outbox* outbox_ = nullptr;
  int64_t rows_produced_ = 0;
  std::vector<int64_t> run_starts_ms_;
  std::optional<int64_t> put(QueuedRow row);
  struct Pending {
    int64_t at_ms;
    int64_t seq;
    std::function<void()> fire;
    bool heavy;
    int64_t work_id;  // 0: a build read
    std::string name;
    // Inference runs (not scrapes, not build reads): what serving() reports.
    bool inference = false;
    int64_t start_ms = 0;
    std::vector<int64_t> served_at_ms{};  // when its rows were served (none: never)
    int64_t silent_budget_ms = 0;
  };
  std::map<std::string, int64_t> last_served_ms_;  // per candidate: its inference runs' served points, once done
  std::map<std::string, int64_t> cancels_;         // per candidate: runs cut while in flight
  double jitter(double noise = 0.10);              // deterministic, in [1 - noise, 1 + noise]
  ProbeResult base_row(const TaskRequest& req, int64_t started, ProbeKind kind, const std::string& workload) const;
  void perf_row(ProbeResult& r, const SimCandidate& s, double prompt_tokens, double out_tokens, CacheState cache);

  Store& store_;
  VirtualClock& clock_;
  int64_t host_id_;
  uint64_t seed_;
  Outbox own_outbox_;  // straight to the store unless write_through() says otherwise
  std::map<std::string, SimCandidate> sims_;
  std::map<std::string, int64_t> counters_;  // per candidate: requests served (for fault_after)
  std::map<std::string, int64_t> scrapes_;
  std::map<std::string, int64_t> runs_;
  std::vector<Pending> queue_;
  int64_t seq_ = 0;
  int64_t heavy_now_ = 0;
  int64_t max_heavy_ = 0;
  std::optional<int64_t> gate_started_ms_;          // SwapCreep: when the gate's first scrape ran
  std::map<std::string, int64_t> soak_started_ms_;  // per candidate name: the soak's first run
  double decode_divisor_ = 1.0;                     // late_soak_decode, for the run in progress
  double ttft_factor_ = 1.0;                        // late_soak_ttft, for the run in progress
  // Agent sessions per candidate name, driven as the engine drives them (probes/session.h).
  std::map<std::string, std::unique_ptr<probes::AgentSession>> sessions_;
  void agent_turn(const TaskRequest& req, const SimCandidate& s, ProbeResult& r);
  void pooling_rows(const TaskRequest& req, const SimCandidate& s, int64_t start, std::vector<ProbeResult>& rows);
};

}  // namespace soak
