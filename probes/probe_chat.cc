// The chat probes that send one request after another and judge each answer:
// marker, stream, strict JSON, tool call, thinking on/off, repetition, the
// shared-prefix session and the agent turn.
#include <nlohmann/json.hpp>

#include "core/hash.h"
#include "probes/engine_rows.h"
#include "probes/probe_step.h"
#include "probes/validators.h"

namespace soak::probes {
namespace {

using ojson = nlohmann::ordered_json;

class ChatSeriesStep final : public Step {
 public:
  ChatSeriesStep(ProbeKind kind, StepEnv env) : Step(std::move(env)), kind_(kind) {}

  void start() override {
    jobs_ = make_jobs();
    next();
  }

 private:
  std::vector<ChatJob> make_jobs() {
    const ChatRequestOptions o = chat_options();
    std::vector<ChatJob> jobs;
    // A fixed prompt's fixture hash is the hash of its body: a release that
    // changes the prompt starts a new series instead of pooling with the old.
    auto add = [&](BuiltRequest req, std::string workload) -> ChatJob& {
      ChatJob j;
      j.fixture_hash = hash_hex(req.body);
      j.req = std::move(req);
      j.workload = std::move(workload);
      jobs.push_back(std::move(j));
      return jobs.back();
    };
    switch (kind_) {
      case ProbeKind::Marker: {
        std::string marker = make_marker(fnv1a64(env_.io.nonces.next()));
        ChatJob& j = add(marker_request(o, marker), workload_id(kind_));
        j.fixture_hash = hash_hex(marker_request(o, "").body);  // the prompt without its one-off marker
        j.check = [marker](const ChatResult& r) { return check_marker(r, marker); };
        break;
      }
      case ProbeKind::Stream: add(stream_request(o), workload_id(kind_)); break;
      case ProbeKind::StrictJson:
        add(strict_json_request(o), workload_id(kind_)).check = [](const ChatResult& r) {
          return check_strict_json(r.content, strict_json_schema());
        };
        break;
      case ProbeKind::ToolCall:
        add(tool_call_request(o), workload_id(kind_)).check = [](const ChatResult& r) {
          return check_tool_calls(r.tool_calls, tool_probe_expectation());
        };
        break;
      case ProbeKind::Thinking:
        for (Thinking t : {Thinking::On, Thinking::Off}) {
          add(thinking_request(o, t),
              workload_id(kind_, std::nullopt, CacheState::None, t == Thinking::On ? "on" : "off"))
              .extra = [](const ChatResult& r) {
            return ojson{{"reasoning_chars", r.reasoning.size()},
                         {"answer_has_expected", r.content.find(kThinkingExpectedAnswer) != std::string::npos}}
                .dump();
          };
        }
        break;
      case ProbeKind::Repetition:
        // Every answer is read by the loop detector (probes/answer_check.h); this probe asks for a long one.
        add(repetition_request(o), workload_id(kind_));
        break;
      case ProbeKind::SharedPrefix: {
        // A new session (the seeds' cold / warm / prefix 1-3): the first
        // turn is cold, the warm turn repeats it exactly, the prefix turns
        // change the user turn under the same system prompt.
        const std::string nonce = env_.io.nonces.next();
        for (int turn = -1; turn <= kSharedPrefixTurns; ++turn) {
          const CacheState cache = turn == -1  ? CacheState::Fresh
                                   : turn == 0 ? CacheState::Repeat
                                               : CacheState::SharedPrefix;
          ChatJob& j = add(shared_prefix_request(o, env_.opts.fixture_seed, nonce, std::max(turn, 0)),
                           workload_id(kind_, std::nullopt, cache));
          j.cache = cache;
          j.fixture_hash = shared_system_prompt_hash(env_.opts.fixture_seed);
        }
        break;
      }
      default: break;
    }
    return jobs;
  }

  void next() {
    if (!take_next(jobs_, i_)) return;
    const size_t index = i_ - 1;
    run_chat(jobs_[index], [this, index](ProbeResult& r, const ExchangeResult&) {
      if (kind_ == ProbeKind::SharedPrefix) note_shared_prefix(index, r);
      emit(std::move(r));
      next();
    });
  }

  // The last turn of a session carries the reuse ratio of the whole session:
  // median(prefix turns) / cold, and the seeds' rule, reuse when below
  // kPrefixReuseRatio (the warm turn is the exact repeat: reported apart).
  void note_shared_prefix(size_t index, ProbeResult& r) {
    if (r.outcome == Outcome::Clean && r.t_first_token_us) {
      if (index == 0) {
        cold_ttft_us_ = r.t_first_token_us;
      } else if (index == 1) {
        warm_ttft_us_ = r.t_first_token_us;
      } else {
        prefix_ttfts_us_.push_back(*r.t_first_token_us);
      }
    }
    if (index + 1 != jobs_.size()) return;
    auto j = ojson::parse(r.extra_json.empty() ? "{}" : r.extra_json, nullptr, false);  // keeps the loop figure
    if (j.is_discarded() || !j.is_object()) j = ojson::object();
    auto ratio = reuse_ratio(cold_ttft_us_, prefix_ttfts_us_);
    j["reuse_ratio"] = ratio ? ojson(*ratio) : ojson(nullptr);
    j["reuse"] = ratio ? ojson(*ratio < kPrefixReuseRatio) : ojson(nullptr);
    j["cold_ttft_us"] = cold_ttft_us_ ? ojson(*cold_ttft_us_) : ojson(nullptr);
    j["warm_ttft_us"] = warm_ttft_us_ ? ojson(*warm_ttft_us_) : ojson(nullptr);
    j["prefix_turns"] = prefix_ttfts_us_.size();
    r.extra_json = j.dump();
  }

  ProbeKind kind_;
  std::vector<ChatJob> jobs_;
  size_t i_ = 0;
  std::optional<int64_t> cold_ttft_us_, warm_ttft_us_;
  std::vector<int64_t> prefix_ttfts_us_;
};

}  // namespace

std::unique_ptr<Step> make_chat_step(ProbeKind kind, StepEnv env) {
  return std::make_unique<ChatSeriesStep>(kind, std::move(env));
}

}  // namespace soak::probes
