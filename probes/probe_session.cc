// The agent probe: one turn of the candidate's agent session (probes/session.h)
// per run. The row is labelled with the context band the turn carried (its
// workload id and size_tokens, so comparisons key on the band) and carries the
// session, turn, context size and what the turn asked for in extra_json.
#include <nlohmann/json.hpp>

#include "probes/engine_rows.h"
#include "probes/probe_step.h"
#include "probes/validators.h"

namespace soak::probes {
namespace {

using ojson = nlohmann::ordered_json;

// The agent's context ceiling: the configured one, within the runtime's own
// per-slot context when it is known (a margin left for the answer).
int64_t ceiling_for(const CandidateConfig& c, const CandidateState& s) {
  int64_t ceiling = c.settings.agent.context_ceiling_tokens;
  if (s.slot_ctx && *s.slot_ctx > 0) {
    constexpr double kAnswerMargin = 0.85;
    ceiling = std::min(ceiling, static_cast<int64_t>(static_cast<double>(*s.slot_ctx) * kAnswerMargin));
  }
  return ceiling;
}

Verdict turn_check(const ChatResult& r, bool tool_required) {
  if (r.tool_calls.empty()) {
    if (!tool_required) return {Outcome::Clean, ""};
    return {Outcome::MissingToolCall, "the turn required a tool call and the answer had none"};
  }
  return check_tool_calls(r.tool_calls, tool_probe_expectation());
}

class SessionStep final : public Step {
 public:
  using Step::Step;

  void start() override {
    CandidateState& st = env_.state;
    if (!st.agent_session)
      st.agent_session =
          std::make_shared<AgentSession>(env_.opts.fixture_seed, env_.cand.settings.agent, ceiling_for(env_.cand, st));
    session_ = st.agent_session;
    const std::string nonce = session_->session_open() ? std::string() : env_.io.nonces.next();
    auto turn = std::make_shared<SessionTurn>(session_->next_turn(nonce));
    ChatRequestOptions o = chat_options();
    o.thinking = turn->thinking ? Thinking::On : Thinking::Off;
    ChatJob job;
    job.req = session_request(o, session_->messages(*turn), session_tools(), turn->tool_required);
    job.workload = "agent";
    job.cache = turn->turn == 1 ? CacheState::Fresh : CacheState::SharedPrefix;
    job.fixture_hash = shared_system_prompt_hash(env_.opts.fixture_seed);
    job.prompt_tokens = turn->context_estimate;  // the stall clock's prefill allowance
    const bool required = turn->tool_required;
    job.check = [required](const ChatResult& r) { return turn_check(r, required); };
    run_chat(std::move(job), [this, turn](ProbeResult& r, const ExchangeResult& x) {
      SessionAnswer a;
      a.outcome = r.outcome;
      a.content = x.chat.content;
      a.reasoning = x.chat.reasoning;
      for (const ToolCall& c : x.chat.tool_calls) a.tool_calls.push_back({c.id, c.name, c.arguments});
      a.prompt_tokens = r.prompt_tokens;
      a.completion_tokens = r.completion_tokens;
      const TurnFacts f = session_->record(*turn, a);
      label_turn_row(r, *turn, f);
      emit(std::move(r));
      finish();
    });
  }

 private:
  std::shared_ptr<AgentSession> session_;
};

}  // namespace

std::unique_ptr<Step> make_session_step(StepEnv env) { return std::make_unique<SessionStep>(std::move(env)); }

}  // namespace soak::probes
