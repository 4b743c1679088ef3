// Long context: per configured size, a fixture sized in tokens with the
// runtime's /tokenize where the adapter has one (else the word estimate),
// sent fresh — a nonce first, so no prefix cache can serve it — and then as
// the exact repeat of the same bytes. The repeat follows only a fresh request
// whose prompt was read (clean, or cut by a server cap): after a refusal or a
// timeout it would only repeat the failure (and, at 131K, the wait). The real
// usage.prompt_tokens is what the row records. Both requests carry the prompt's
// size so the stall clock allows its prefill (docs/DESIGN.md §2.2).
#include <nlohmann/json.hpp>

#include "probes/engine_rows.h"
#include "probes/probe_step.h"

namespace soak::probes {
namespace {

using ojson = nlohmann::ordered_json;

class LongContextStep final : public Step {
 public:
  using Step::Step;
  void start() override { next_size(); }

 private:
  void next_size() {
    if (stop_if_cancelled()) return;
    const auto& sizes = env_.cand.settings.long_context_sizes;
    if (i_ >= sizes.size()) return finish();
    size_ = sizes[i_++];
    if (auto it = env_.state.long_context.find(size_); it != env_.state.long_context.end()) {
      sized_ = it->second;
      return send_fresh();
    }
    PromptFixture f = long_context_fixture(size_, env_.opts.fixture_seed);
    if (!env_.traits.tokenize) {
      sized_ = {f, "estimate", std::nullopt};
      env_.state.long_context[size_] = sized_;
      return send_fresh();
    }
    measure(std::move(f), 0);
  }

  void measure(PromptFixture f, int round) {
    std::string body = tokenize_request_body(env_.cand.runtime, env_.cand.model, f.body);
    auto shared = std::make_shared<PromptFixture>(std::move(f));
    send(route(*env_.traits.tokenize, std::move(body)), [this, shared, round](const ExchangeResult& x) {
      if (stop_if_cancelled()) return;
      std::optional<int64_t> count;
      if (classify_plain(x.end, x.transfer).outcome == Outcome::Clean) {
        if (auto c = parse_tokenize_count(env_.cand.runtime, x.transfer.body)) count = *c;
      }
      if (!count) {
        // Sizing failed (the request itself will say why): send the estimate, measure again next run.
        sized_ = {*shared, "estimate", std::nullopt};
        return send_fresh();
      }
      if (within_size_tolerance(size_, *count) || round + 1 >= kMaxSizingRounds) {
        sized_ = {*shared, "tokenize", count};
        env_.state.long_context[size_] = sized_;
        return send_fresh();
      }
      measure(adjust_to_measured(*shared, *count), round + 1);
    });
  }

  ChatJob job(CacheState cache, const std::string& nonce) {
    ChatJob j;
    j.req = long_context_request(chat_options(), sized_.fixture, nonce);
    j.workload = workload_id(ProbeKind::LongContext, size_, cache);
    j.cache = cache;
    j.size = size_;
    j.fixture_hash = sized_.fixture.hash;
    // The stall clock's prefill allowance grows with the prompt (docs/DESIGN.md §2.2).
    j.prompt_tokens = sized_.measured_tokens ? *sized_.measured_tokens : estimated_tokens(sized_.fixture);
    const std::string marker = fixture_marker(sized_.fixture);
    const std::string sized_by = sized_.sized_by;
    const auto measured = sized_.measured_tokens;
    j.extra = [marker, sized_by, measured](const ChatResult& r) {
      ojson e;
      e["sized_by"] = sized_by;
      e["measured_tokens"] = measured ? ojson(*measured) : ojson(nullptr);
      e["marker_found"] = r.content.find(marker) != std::string::npos;
      return e.dump();
    };
    return j;
  }

  void send_fresh() {
    if (stop_if_cancelled()) return;
    const std::string nonce = env_.io.nonces.next();
    run_chat(job(CacheState::Fresh, nonce), [this, nonce](ProbeResult& r, const ExchangeResult&) {
      // A server cap cut the answer, not the prefill: the prompt is cached all the same.
      const bool read = r.outcome == Outcome::Clean || r.outcome == Outcome::ServerTokenCap;
      emit(std::move(r));
      if (read && !cancelled()) return send_repeat(nonce);
      next_size();
    });
  }

  void send_repeat(const std::string& nonce) {
    run_chat(job(CacheState::Repeat, nonce), [this](ProbeResult& r, const ExchangeResult&) {
      emit(std::move(r));
      next_size();
    });
  }

  size_t i_ = 0;
  int64_t size_ = 0;
  CandidateState::Sized sized_;
};

}  // namespace

std::unique_ptr<Step> make_long_context_step(StepEnv env) { return std::make_unique<LongContextStep>(std::move(env)); }

}  // namespace soak::probes
