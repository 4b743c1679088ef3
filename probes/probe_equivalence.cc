// The golden set run once (docs/DESIGN.md §3.13): its prompts one after
// another (concurrency 1), each greedy answer judged by the chat contract and
// the answer rules like any answer, and carried on its row for the store's
// golden_answers table whatever the row's outcome.
#include <memory>
#include <nlohmann/json.hpp>

#include "core/hash.h"
#include "probes/golden_set.h"
#include "probes/json_fields.h"
#include "probes/probe_step.h"
#include "probes/server_cap.h"

namespace soak::probes {
namespace {

using ojson = nlohmann::ordered_json;

class EquivalenceStep final : public Step {
 public:
  explicit EquivalenceStep(StepEnv env) : Step(std::move(env)) {}

  void start() override {
    set_ = golden_set(env_.opts.fixture_seed);
    set_hash_ = golden_set_hash(set_);
    run_ = env_.io.nonces.next();  // one id for the run's answers
    const ChatRequestOptions o = chat_options(Streaming::Off);
    for (const GoldenPrompt& p : set_) {
      ChatJob j;
      j.req = golden_request(o, p);
      j.workload = workload_id(ProbeKind::Equivalence, std::nullopt, CacheState::None, p.id);
      j.fixture_hash = hash_hex(p.text);
      if (p.context_tokens > 0) {
        j.size = p.context_tokens;
        j.prompt_tokens = p.context_tokens;  // the stall clock's prefill allowance
      }
      jobs_.push_back(std::move(j));
    }
    next();
  }

 private:
  void next() {
    if (!take_next(jobs_, i_)) return;
    const size_t index = i_ - 1;
    run_chat(jobs_[index], [this, index](ProbeResult& r, const ExchangeResult& x) {
      note_answer(set_[index], r, x);
      emit(std::move(r));
      next();
    });
  }

  // Every prompt asked is stored (core/golden.h GoldenAnswer). An answer the
  // runtime returned whole goes on the row with its steps up to where it
  // stopped, whatever the row's outcome: a greedy loop is `repetition` and
  // still the answer (the answer rules judge the loop, judges/answers.cc); an
  // answer cut at soakd's own bound (kGoldenMaxTokens) is clean as far as the
  // cut goes; one the runtime cut short of it (a full slot: server_token_cap)
  // is the answer as far as the runtime let it run, cut alike on every run of
  // one launch. A request that brought no answer (refused, stalled, cut) is
  // stored as asked and not answered, so that a comparison counts it missing.
  // Thinking that ran though it was asked off is said on the row (its answer
  // is still compared); so is what stopped the answer.
  void note_answer(const GoldenPrompt& p, ProbeResult& r, const ExchangeResult& x) {
    auto extra = ojson::parse(r.extra_json.empty() ? "{}" : r.extra_json, nullptr, false);
    if (extra.is_discarded() || !extra.is_object()) extra = ojson::object();
    extra["golden_run"] = run_;
    extra["thinking_off_held"] = x.chat.reasoning.empty();
    const int status = x.transfer.head.status;
    std::optional<GoldenAnswer> a;
    if (x.end == TransportEnd::Completed && status >= 200 && status < 300)
      a = read_golden_answer(jsonf::parse_object(x.transfer.body), p.id);
    if (a) {
      extra["steps"] = a->steps.size();
      extra["logprobs"] = std::string(to_string(a->logprobs));
      extra["stopped_by"] = stopped_by(x.chat);
    } else {
      a = unanswered_golden(p.id);
      extra["answered"] = false;
    }
    GoldenAnswerRow g = golden_row(*a);
    g.run = run_;
    g.set_hash = set_hash_;
    r.golden = std::make_shared<const GoldenAnswerRow>(std::move(g));
    r.extra_json = extra.dump();
  }

  // What ended the answer: the model ("stop", a tool call), soakd's own
  // bound, or the runtime short of it (its own cap, a full slot).
  static std::string stopped_by(const ChatResult& c) {
    if (c.finish_reason != "length") return c.finish_reason.empty() ? "unknown" : c.finish_reason;
    return completion_tokens_of(c) >= kGoldenMaxTokens ? "soakd_bound" : "runtime_cap";
  }

  std::vector<GoldenPrompt> set_;
  std::string set_hash_;
  std::string run_;
  std::vector<ChatJob> jobs_;
  size_t i_ = 0;
};

}  // namespace

std::unique_ptr<Step> make_equivalence_step(StepEnv env) { return std::make_unique<EquivalenceStep>(std::move(env)); }

}  // namespace soak::probes
