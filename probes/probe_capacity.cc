// Capacity: concurrent long context (S0/S1: 32K x 8 at --parallel 8 completed
// at a mean TTFT of 97.4 s; the 27B 32K x 4; 65K x 8 as a timeout tail). For
// each entry (core/config.h capacity_entries: configured, else 32K x slots on
// a runtime with more than one slot) `concurrency` prompts of `size` tokens
// are released together as a group (probe_group.h, the burst's mechanics),
// each with its own nonce so every member prefills fresh. Members are rows of
// kind capacity (workload "capacity/<size>/fresh/x<N>", fresh, size, client
// concurrency N); the summary row carries p50/p95/max TTFT and the aggregate
// throughput. The fixture is the long-context probe's, sized by /tokenize
// when that probe already measured it (else the word estimate, recorded).
// Members record the runtime's context as the long-context rows do, so a size
// beyond it is judged as a reach, not a fault (docs/DESIGN.md §3.9).
#include <nlohmann/json.hpp>

#include "core/capacity_budget.h"
#include "probes/answer_check.h"
#include "probes/probe_group.h"

namespace soak::probes {
namespace {

using ojson = nlohmann::ordered_json;

class CapacityStep final : public GroupStep {
 public:
  using GroupStep::GroupStep;
  void start() override {
    entries_ = capacity_entries(env_.cand.settings, runtime_slots());
    next_entry();
  }

 private:
  void next_entry() {
    const CapacityEntry* next = take_next(entries_, i_);
    if (!next) return;
    const CapacityEntry e = *next;
    CandidateState::Sized sized =
        recall_sized(env_.state, e.size, env_.opts.fixture_seed)
            .value_or(
                CandidateState::Sized{long_context_fixture(e.size, env_.opts.fixture_seed), "estimate", std::nullopt});
    const ChatRequestOptions o = chat_options();
    Group g;
    g.kind = ProbeKind::Capacity;
    g.workload = workload_id(ProbeKind::Capacity, e.size, CacheState::Fresh, "x" + std::to_string(e.concurrency));
    g.fixture_hash = sized.fixture.hash;
    g.sampling_json = long_context_request(o, sized.fixture, "").sampling_json;
    g.size = e.size;
    ojson extra;
    extra["sized_by"] = sized.sized_by;
    extra["measured_tokens"] = sized.measured_tokens ? ojson(*sized.measured_tokens) : ojson(nullptr);
    if (env_.state.slot_ctx) {
      extra["runtime_ctx"] = *env_.state.slot_ctx;
      extra["runtime_ctx_source"] = env_.state.slot_ctx_source;
    }
    const std::string extra_json = extra.dump();
    const std::string marker = fixture_marker(sized.fixture);
    // The stall clock's prefill allowance (docs/DESIGN.md §2.2): the members
    // share the runtime's slots, so the last member's prompt is read after
    // ceil(concurrency / slots) rounds of prefills, its own included
    // (core/capacity_budget.h). Members still waiting when the runtime's
    // queue moves get their budget again from then, with one prompt's
    // allowance: the rounds ahead are what the move used up.
    const int64_t tokens = sized.measured_tokens ? *sized.measured_tokens : estimated_tokens(sized.fixture);
    const int64_t rounds = capacity_prefill_rounds(e.concurrency, runtime_slots());
    for (int k = 0; k < e.concurrency; ++k) {
      ChatJob j;
      j.req = long_context_request(o, sized.fixture, env_.io.nonces.next());
      j.req.kind = ProbeKind::Capacity;  // the long-context prompt, rows of the capacity check
      j.cache = CacheState::Fresh;
      j.prompt_tokens = tokens;
      j.prefill_rounds = rounds;
      j.extra = [extra_json](const ChatResult&) { return extra_json; };
      j.check = [marker](const ChatResult& r) { return check_code_word(r, marker); };  // S4:208
      g.jobs.push_back(std::move(j));
    }
    release(
        std::move(g), [this](BurstSummary& s, ProbeResult&) { s.runtime_slots = runtime_slots(); },
        [this] { next_entry(); });
  }

  std::vector<CapacityEntry> entries_;
  size_t i_ = 0;
};

}  // namespace

std::unique_ptr<Step> make_capacity_step(StepEnv env) { return std::make_unique<CapacityStep>(std::move(env)); }

}  // namespace soak::probes
