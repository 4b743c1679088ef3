// Long context: per configured size, a fixture sized in tokens with the
// runtime's /tokenize where it has one (else the word estimate),
// sent fresh — a nonce first, so no prefix cache can serve it — and then as
// the exact repeat of the same bytes. The repeat follows only a fresh request
// whose prompt was read (an answer came, whatever the answer rules make of
// it): after a refusal or a
// timeout it would only repeat the failure (and, at 131K, the wait). The real
// usage.prompt_tokens is what the row records. Both requests carry the prompt's
// size so the stall clock allows its prefill (docs/DESIGN.md §2.2).
//
// Every row also carries the runtime's own context as far as it is known
// (runtime_ctx, runtime_ctx_source): from /props or /slots (the scrape), from
// vLLM's /tokenize max_model_len, or from the context_exceeded error itself
// (llama.cpp's n_ctx field, or the number in the message). The canary's
// long-context gate holds rather than rejects a size beyond it (§3.9).
#include <cctype>

#include <nlohmann/json.hpp>

#include "probes/answer_check.h"
#include "probes/engine_rows.h"
#include "probes/openai_chat.h"
#include "probes/probe_step.h"

namespace soak::probes {
namespace {

using ojson = nlohmann::ordered_json;

// The number after one of these in an error message is the runtime's context
// (vLLM: "This model's maximum context length is 32768 tokens"; mlx / others
// phrase it alike).
constexpr std::string_view kContextNumberPhrases[] = {"maximum context length is ", "context length of ",
                                                      "context size of ", "context window of "};

std::optional<int64_t> context_from_message(const std::string& message) {
  std::string lower;
  for (char ch : message) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  for (std::string_view p : kContextNumberPhrases) {
    auto at = lower.find(p);
    if (at == std::string::npos) continue;
    size_t i = at + p.size();
    int64_t n = 0;
    bool any = false;
    for (; i < lower.size() && (std::isdigit(static_cast<unsigned char>(lower[i])) || lower[i] == ','); ++i) {
      if (lower[i] == ',') continue;
      n = n * 10 + (lower[i] - '0');
      any = true;
    }
    if (any && n > 0) return n;
  }
  return std::nullopt;
}

class LongContextStep final : public Step {
 public:
  using Step::Step;
  void start() override { next_size(); }

 private:
  void next_size() {
    const int64_t* size = take_next(env_.cand.settings.long_context_sizes, i_);
    if (!size) return;
    size_ = *size;
    if (auto known = recall_sized(env_.state, size_, env_.opts.fixture_seed)) {
      sized_ = std::move(*known);
      return send_fresh();
    }
    PromptFixture f = long_context_fixture(size_, env_.opts.fixture_seed);
    if (!env_.runtime.tokenize || !env_.runtime.tokenize_body) {
      sized_ = {std::move(f), "estimate", std::nullopt};
      remember_sized(env_.state, size_, sized_);
      return send_fresh();
    }
    measure(std::move(f), 0);
  }

  void measure(PromptFixture f, int round) {
    std::string body = env_.runtime.tokenize_body(env_.cand.model, f.body);
    auto shared = std::make_shared<PromptFixture>(std::move(f));
    send(route(*env_.runtime.tokenize, std::move(body)), [this, shared, round](const ExchangeResult& x) {
      if (stop_if_cancelled()) return;
      std::optional<int64_t> count;
      if (classify_plain(x.end, x.transfer).outcome == Outcome::Clean) {
        if (auto c = env_.runtime.tokenize_count(x.transfer.body)) count = *c;
        note_max_model_len(x.transfer.body);
      }
      if (!count) {
        // Sizing failed (the request itself will say why): send the estimate, measure again next run.
        sized_ = {*shared, "estimate", std::nullopt};
        return send_fresh();
      }
      if (within_size_tolerance(size_, *count) || round + 1 >= kMaxSizingRounds) {
        sized_ = {*shared, "tokenize", count};
        remember_sized(env_.state, size_, sized_);
        return send_fresh();
      }
      measure(adjust_to_measured(*shared, *count), round + 1);
    });
  }

  // vLLM's /tokenize answers max_model_len beside the count.
  void note_max_model_len(const std::string& body) {
    auto a = parse_tokenize_answer(body);
    if (!a || !a->max_model_len) return;
    env_.state.slot_ctx = *a->max_model_len;
    env_.state.slot_ctx_source = "/tokenize max_model_len";
  }

  // What the row says about the runtime's context; a refusal teaches it.
  void note_context(ProbeResult& r, const ExchangeResult& x) {
    auto e = nlohmann::ordered_json::parse(r.extra_json.empty() ? "{}" : r.extra_json, nullptr, false);
    if (e.is_discarded() || !e.is_object()) e = ojson::object();
    if (r.outcome == Outcome::ContextExceeded) {
      // What the runtime already said (/props, /slots) stays the source when
      // the refusal agrees with it; a refusal that says otherwise is newer.
      const ApiError err = parse_api_error(x.transfer.body);
      if (err.n_ctx) {
        if (env_.state.slot_ctx != err.n_ctx) env_.state.slot_ctx_source = "error n_ctx";
        env_.state.slot_ctx = err.n_ctx;
      } else if (auto n = context_from_message(err.message)) {
        if (env_.state.slot_ctx != n) env_.state.slot_ctx_source = "error text";
        env_.state.slot_ctx = n;
      }
      if (err.n_prompt_tokens) e["n_prompt_tokens"] = *err.n_prompt_tokens;
    }
    if (env_.state.slot_ctx) {
      e["runtime_ctx"] = *env_.state.slot_ctx;
      e["runtime_ctx_source"] = env_.state.slot_ctx_source;
    }
    r.extra_json = e.dump();
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
    // The answer must contain the code word its prompt asked for (S4:208).
    j.check = [marker](const ChatResult& r) { return check_code_word(r, marker); };
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
    run_chat(job(CacheState::Fresh, nonce), [this, nonce](ProbeResult& r, const ExchangeResult& x) {
      note_context(r, x);
      // An answer that came (cut by a server cap, carrying leaked markup, a
      // loop or without its code word) followed a prompt that was read: the
      // prompt is cached all the same.
      const bool read = r.outcome == Outcome::Clean || r.outcome == Outcome::ServerTokenCap ||
                        r.outcome == Outcome::LeakedMarkup || r.outcome == Outcome::MissingMarker ||
                        r.outcome == Outcome::Repetition;
      emit(std::move(r));
      if (read && !cancelled()) return send_repeat(nonce);
      next_size();
    });
  }

  void send_repeat(const std::string& nonce) {
    run_chat(job(CacheState::Repeat, nonce), [this](ProbeResult& r, const ExchangeResult& x) {
      note_context(r, x);
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
