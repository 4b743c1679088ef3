// Burst: for each configured N, N requests released together (a group,
// probe_group.h), each with its own nonce so no two share a cached prefix.
// The summary's FIFO check (engine_rows.h: from evidence that requests
// waited) makes it serialized_burst only when the runtime has more than one
// slot (configured, or /props total_slots, /slots length) and each place in
// the queue adds an effect above the candidate's floors (core/burst_serial.h);
// with one slot it is the expected FIFO (the field's production 27B runs
// -np 1) and the summary stays clean, saying so, as it does for a rise under
// the floor. The members keep their own outcomes, so one failure is never
// counted twice.
#include <algorithm>

#include "core/hash.h"
#include "probes/probe_group.h"

namespace soak::probes {
namespace {

class BurstStep final : public GroupStep {
 public:
  using GroupStep::GroupStep;
  void start() override { next_size(); }

 private:
  void next_size() {
    const int* size = take_next(env_.cand.settings.burst_sizes, i_);
    if (!size) return;
    const int n = std::max(1, *size);
    const ChatRequestOptions o = chat_options();
    const BuiltRequest plain = burst_request(o, 0, "");  // the prompt without index and nonce
    Group g;
    g.kind = ProbeKind::Burst;
    g.workload = workload_id(ProbeKind::Burst, n);
    g.fixture_hash = hash_hex(plain.body);
    g.sampling_json = plain.sampling_json;
    for (int k = 0; k < n; ++k) {
      ChatJob j;
      j.req = burst_request(o, k, env_.io.nonces.next());
      g.jobs.push_back(std::move(j));
    }
    release(
        std::move(g), [this](BurstSummary& s, ProbeResult& r) { judge_fifo(s, r); }, [this] { next_size(); });
  }

  // Read with the candidate's floors (judge.serial_min_share,
  // serial_min_effect_ms: core/burst_serial.h); the judge reads the stored
  // figures again with its recipe's, so what decides is the recipe.
  void judge_fifo(BurstSummary& s, ProbeResult& r) const {
    s.runtime_slots = runtime_slots();
    const JudgeRules& rules = env_.cand.settings.judge;
    s.floors = SerialFloors{rules.serial_min_share, rules.serial_min_effect_ms};
    const BurstQueueFigures figures = s.queue_figures();
    const SerialCall call = read_serial(figures, *s.floors);
    s.serialized = call.staircase();
    if (!s.serialized) return;
    const bool multi_slot = s.runtime_slots && *s.runtime_slots > 1;
    s.fifo = !s.runtime_slots                        ? "unknown"
             : !multi_slot                           ? "expected"
             : call.reading == SerialReading::Serial ? "failure"
                                                     : "under_floor";
    const std::string served =
        std::to_string(s.n) + " requests served one at a time on a runtime with " +
        (s.runtime_slots ? std::to_string(*s.runtime_slots) : std::string("an unknown number of")) + " slot" +
        (s.runtime_slots == 1 ? "" : "s") + " (" + describe_rise(call, figures) + ")";
    if (s.fifo == "failure") {
      r.outcome = Outcome::SerializedBurst;
      r.detail = served;
    } else if (s.fifo == "under_floor") {
      r.detail = served + ": under the floor " + std::to_string(s.floors->min_effect_ms) +
                 " ms per place (judge.serial_min_effect_ms), an effect nobody would feel";
    }
  }

  size_t i_ = 0;
};

}  // namespace

std::unique_ptr<Step> make_burst_step(StepEnv env) { return std::make_unique<BurstStep>(std::move(env)); }

}  // namespace soak::probes
