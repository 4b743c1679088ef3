// One probe kind run once against one candidate: a Step. The engine starts a
// step, receives its rows through `emit` as each request finishes, and moves
// on when the step calls `finished`. Every probe kind is a Step subclass in
// its own probe_*.cc; this header holds what they share: the row locators, the
// chat request path (stream contract, then the content check, then the
// server cap) and the cancellation rule.
//
// Ownership: the engine owns each step and destroys it only after `finished`
// has fired and the engine's deferred continuation runs (never from inside a
// step's own callback); a step owns its exchanges. Threading: loop thread only.
// Failure: nothing throws; every fault is a row's outcome.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/types.h"
#include "probes/engine_exchange.h"
#include "probes/probe_types.h"
#include "probes/prompts.h"
#include "probes/requests.h"
#include "probes/runtime_metrics.h"
#include "probes/runtimes/runtime.h"
#include "probes/server_cap.h"
#include "probes/session.h"

namespace soak::probes {

// What the engine remembers about a candidate between runs.
struct CandidateState {
  std::optional<int> runtime_slots;  // from /props (config's `slots` wins)
  // Each slot's own context (tells a full slot from -n; the canary's
  // long-context gate compares a refused size with it) and how it was known:
  // "/props n_ctx", "/slots n_ctx", "/tokenize max_model_len", "error n_ctx",
  // "error text".
  std::optional<int64_t> slot_ctx;
  std::string slot_ctx_source;
  bool props_read = false;
  // The special tokens the runtime's own template names (/props chat_template,
  // bos and eos; probes/runtimes/runtime.h special_tokens_in_template): read
  // for leaked markup on top of the fixed lists (probes/answer_check.h).
  std::vector<std::string> template_tokens;
  struct Sized {
    PromptFixture fixture;
    std::string sized_by;  // "tokenize" | "estimate"
    std::optional<int64_t> measured_tokens;
  };
  // A size once measured, by target size: the filler's word count, not the
  // prompt (up to a few hundred KB per size), which is rebuilt from it and the
  // seed when needed (recall_sized) - nothing of it is held between runs
  // (docs/DESIGN.md §4.10).
  struct SizedWords {
    int64_t words = 0;
    std::string sized_by;
    std::optional<int64_t> measured_tokens;
  };
  std::map<int64_t, SizedWords> long_context;
  std::optional<int64_t> refused_since_ns;  // health: first refused connection of the current streak
  // The runtime's speculative counters at the previous scrape: a scrape row
  // carries the drafted / accepted tokens since then (ScrapeStep).
  std::optional<SpecCounters> spec_seen;
  // The candidate's agent session (gate and soak traffic), created on the
  // first agent turn; a shared_ptr so the state stays copyable.
  std::shared_ptr<AgentSession> agent_session;
};

// The fixture sized for `size` earlier (nullopt: not sized yet), and remembering one.
std::optional<CandidateState::Sized> recall_sized(const CandidateState& s, int64_t size, uint64_t seed);
void remember_sized(CandidateState& s, int64_t size, const CandidateState::Sized& sized);

struct StepEnv {
  EngineIo& io;
  const EngineOptions& opts;
  const CandidateConfig& cand;
  const Runtime& runtime;  // the candidate's entry (probes/runtimes/): routes, readers, dialect
  CandidateState& state;
  std::optional<int64_t> group_id;
  std::string expect_model;  // RunSpec::expect_model
  std::function<void(ProbeResult)> emit;
  std::function<void()> finished;
};

// A chat request and how to judge and label its row.
struct ChatJob {
  BuiltRequest req;
  std::string workload;
  CacheState cache = CacheState::None;
  std::optional<int64_t> size;
  std::string fixture_hash;
  int client_concurrency = 1;
  ConnectionPolicy connection = ConnectionPolicy::Reuse;
  int cut_after_tokens = 0;
  std::optional<int64_t> stall_timeout_ms;
  std::optional<int64_t> prompt_tokens;  // known prompt size: the stall clock's prefill allowance
  int64_t prefill_rounds = 1;            // ExchangeSpec::prefill_rounds
  // Whether the answer must hold text or a tool call (probes/answer_check.h);
  // false only for a stream the probe cuts on purpose.
  bool expects_answer = true;
  // Content check once the stream contract passed and the answer is neither
  // a loop nor empty (empty: none).
  std::function<Verdict(const ChatResult&)> check;
  // Probe-specific figures for extra_json (empty: none).
  std::function<std::string(const ChatResult&)> extra;
};

class Step {
 public:
  explicit Step(StepEnv env) : env_(std::move(env)) {}
  virtual ~Step() = default;
  Step(const Step&) = delete;
  Step& operator=(const Step&) = delete;

  virtual void start() = 0;
  // soakd cancels: requests in flight end as cancelled_by_daemon rows, nothing
  // new starts, `finished` still fires (on a later loop pass).
  void cancel();

 protected:
  // Stops the step's own timers; called by cancel() before the exchanges are cancelled.
  virtual void on_cancel() {}

  Exchange& send(ExchangeSpec spec, Exchange::Done then);
  // Sends `job` and hands its judged row to `then` (which emits it, maybe after annotating).
  void run_chat(ChatJob job, std::function<void(ProbeResult&, const ExchangeResult&)> then);
  ProbeResult chat_row(const ChatJob& job, const ExchangeResult& x) const;
  // Row of a non-chat request: locators, transfer fields, hash; outcome from classify_plain.
  ProbeResult plain_row(ProbeKind kind, std::string workload, const ExchangeResult& x) const;
  ProbeResult row(ProbeKind kind, std::string workload) const;
  ChatRequestOptions chat_options(Streaming streaming = Streaming::On) const;
  ChatExpectations expectations(ResponseMode mode) const;
  // `max_tokens`: the bound the request named (BuiltRequest::max_tokens).
  ServerCapContext server_cap_context(std::optional<int64_t> max_tokens = std::nullopt) const;
  ExchangeSpec route(const HttpRoute& r, std::string body = {}) const;

  // Outcome and detail from `v`; an excerpt of `shown` when it is a failure.
  static void set_verdict(ProbeResult& r, const Verdict& v, std::string_view shown);
  void emit(ProbeResult r);
  void finish();  // once; later calls are ignored
  bool cancelled() const { return cancelled_; }
  // Ends the step if it was cancelled; true when it did.
  bool stop_if_cancelled();
  // The next of a step's items (its sizes, entries, jobs), `taken` counting
  // those already taken; nullptr once the step was cancelled or every item
  // was taken, and then the step has finished.
  template <class T>
  const T* take_next(const std::vector<T>& items, size_t& taken) {
    if (stop_if_cancelled()) return nullptr;
    if (taken >= items.size()) {
      finish();
      return nullptr;
    }
    return &items[taken++];
  }
  int64_t live_requests() const;
  // Frees the exchanges that have ended (a step polling for minutes sends
  // hundreds). Only from a timer's callback: inside an exchange's Done it
  // would free the handler that is running.
  void drop_finished_exchanges();

  StepEnv env_;
  std::vector<std::unique_ptr<Exchange>> exchanges_;

 private:
  bool cancelled_ = false;
  bool finished_ = false;
};

// The step for one probe kind; nullptr for kinds the engine does not run.
std::unique_ptr<Step> make_step(ProbeKind kind, StepEnv env);
// The engine's quiet preamble: reads /props for the runtime's slot count and
// per-slot context (no row).
std::unique_ptr<Step> make_props_step(StepEnv env);

// Steps by family (probe_*.cc).
std::unique_ptr<Step> make_health_step(StepEnv env);
std::unique_ptr<Step> make_identity_step(StepEnv env);
std::unique_ptr<Step> make_scrape_step(StepEnv env);
std::unique_ptr<Step> make_pooling_step(ProbeKind kind, StepEnv env);
std::unique_ptr<Step> make_chat_step(ProbeKind kind, StepEnv env);
std::unique_ptr<Step> make_long_context_step(StepEnv env);
std::unique_ptr<Step> make_burst_step(StepEnv env);
std::unique_ptr<Step> make_capacity_step(StepEnv env);
std::unique_ptr<Step> make_cancel_step(StepEnv env);
std::unique_ptr<Step> make_session_step(StepEnv env);        // probe_session.cc
std::unique_ptr<Step> make_pooling_burst_step(StepEnv env);  // probe_pooling.cc
std::unique_ptr<Step> make_equivalence_step(StepEnv env);    // probe_equivalence.cc

}  // namespace soak::probes
