// The golden set (probes/golden_set.h, docs/DESIGN.md §3.13): prompts
// generated from the fixture seed, the greedy bytes sent per runtime, and
// answers read from llama-server's non-streamed logprob shape
// (tools/server/server-task.cpp completion_token_output::probs_vector_to_json:
// choices[0].logprobs.content[] of {id, token, bytes, logprob, top_logprobs}).
#include <algorithm>
#include <map>
#include <set>
#include <string>

#include "core/golden.h"
#include "core/hash.h"
#include "probes/answer_check.h"
#include "probes/golden_set.h"
#include "probes/openai_chat.h"
#include "probes/runtimes/catalog.h"
#include "probes/server_cap.h"
#include "tests/catch.h"
#include "tests/unit/probes_capture_local.h"

using namespace soak;
using namespace soak::probes;
using nlohmann::json;

namespace {

ChatRequestOptions options_for(RuntimeKind kind) {
  ChatRequestOptions o;
  o.model = "tiny";
  o.dialect = builtin_runtime(kind).dialect;
  return o;
}

// A llama-server answer in its non-streamed chat shape, two tokens, top-3
// sent out of order (as mlx-lm's argpartition may).
const char* kLlamaAnswer = R"({
  "choices": [{
    "finish_reason": "stop", "index": 0,
    "message": {"role": "assistant", "content": "Hello world"},
    "logprobs": {"content": [
      {"id": 9906, "token": "Hello", "bytes": [72,101,108,108,111], "logprob": -0.01,
       "top_logprobs": [{"id": 13347, "token": "Hi", "bytes": [72,105], "logprob": -4.7},
                        {"id": 9906, "token": "Hello", "bytes": [72,101,108,108,111], "logprob": -0.01},
                        {"id": 11, "token": ",", "bytes": [44], "logprob": -6.2}]},
      {"id": 1917, "token": " world", "bytes": [32,119,111,114,108,100], "logprob": -0.3,
       "top_logprobs": [{"id": 1917, "token": " world", "bytes": [32,119,111,114,108,100], "logprob": -0.3},
                        {"id": 0, "token": "!", "bytes": [33], "logprob": -3.4028234663852886e+38}]}
    ]}
  }],
  "model": "tiny", "object": "chat.completion"
})";

}  // namespace

TEST_CASE("the golden set is 32 prompts of every kind, the same for the same seed") {
  const auto set = golden_set();
  REQUIRE(set.size() == static_cast<size_t>(kGoldenSetSize));
  CHECK(kGoldenSetSize >= 32);
  std::map<GoldenKind, int> kinds;
  std::set<std::string> ids, texts;
  for (const GoldenPrompt& p : set) {
    ++kinds[p.kind];
    ids.insert(p.id);
    texts.insert(p.text);
    if (p.kind != GoldenKind::ToolCall && p.kind != GoldenKind::JsonSchema)
      CHECK(p.text.find(std::to_string(kGoldenAnswerWords) + " words") != std::string::npos);
  }
  CHECK(ids.size() == set.size());
  CHECK(texts.size() == set.size());
  CHECK(kinds[GoldenKind::Factual] == kGoldenFactual);
  CHECK(kinds[GoldenKind::Code] == kGoldenCode);
  CHECK(kinds[GoldenKind::ToolCall] == kGoldenToolCall);
  CHECK(kinds[GoldenKind::JsonSchema] == kGoldenJsonSchema);
  CHECK(kinds[GoldenKind::Context] == kGoldenContext2K + kGoldenContext8K);
  // The context prompts are about their sizes by the generator's own estimate.
  for (const GoldenPrompt& p : set) {
    if (p.kind != GoldenKind::Context) continue;
    const auto words = static_cast<int64_t>(std::count(p.text.begin(), p.text.end(), ' '));
    CHECK(words > p.context_tokens / 2);
    CHECK(words < p.context_tokens);
  }

  const auto again = golden_set();
  CHECK(golden_set_hash(again) == golden_set_hash(set));
  for (size_t i = 0; i < set.size(); ++i) CHECK(again[i].text == set[i].text);
  const auto other = golden_set(kDefaultFixtureSeed + 1);
  CHECK(golden_set_hash(other) != golden_set_hash(set));
}

TEST_CASE("golden requests are greedy, unstreamed, thinking off, with the same logprob fields every run") {
  const GoldenPrompt p = golden_set()[0];
  const json llama = json::parse(golden_request(options_for(RuntimeKind::LlamaCpp), p).body);
  CHECK(llama["temperature"] == 0);
  CHECK(llama["top_p"] == 1);
  CHECK(llama["top_k"] == 1);
  CHECK(llama["seed"] == kGoldenSamplingSeed);
  CHECK(llama["stream"] == false);
  CHECK(llama["chat_template_kwargs"]["enable_thinking"] == false);
  CHECK(llama["cache_prompt"] == false);  // llama.cpp's README: the prompt cache can change results
  CHECK(llama["logprobs"] == true);
  CHECK(llama["top_logprobs"] == kGoldenTopLogprobs);
  // soakd's own bound, the one request that sends one: every token it lets run is a stored step.
  CHECK(llama["max_tokens"] == kGoldenMaxTokens);
  CHECK(kGoldenMaxTokens == static_cast<int64_t>(kGoldenMaxSteps));
  CHECK_FALSE(llama.contains("max_completion_tokens"));
  CHECK(golden_request(options_for(RuntimeKind::LlamaCpp), p).kind == ProbeKind::Equivalence);
  CHECK(golden_request(options_for(RuntimeKind::LlamaCpp), p).max_tokens == kGoldenMaxTokens);
  for (RuntimeKind k : {RuntimeKind::MlxLm, RuntimeKind::Ollama, RuntimeKind::LmStudio, RuntimeKind::Omlx})
    CHECK(json::parse(golden_request(options_for(k), p).body)["max_tokens"] == kGoldenMaxTokens);

  // Ollama takes neither top_k nor chat_template_kwargs; it has no cache_prompt.
  const json ollama = json::parse(golden_request(options_for(RuntimeKind::Ollama), p).body);
  CHECK_FALSE(ollama.contains("top_k"));
  CHECK(ollama["reasoning_effort"] == "none");
  CHECK_FALSE(ollama.contains("cache_prompt"));
  CHECK(ollama["logprobs"] == true);
  // LM Studio and oMLX give no logprobs: not asked.
  for (RuntimeKind k : {RuntimeKind::LmStudio, RuntimeKind::Omlx}) {
    const json b = json::parse(golden_request(options_for(k), p).body);
    CHECK_FALSE(b.contains("logprobs"));
    CHECK_FALSE(b.contains("top_logprobs"));
  }

  // The tool-call and JSON-schema prompts carry their tool and schema.
  for (const GoldenPrompt& q : golden_set()) {
    const json b = json::parse(golden_request(options_for(RuntimeKind::LlamaCpp), q).body);
    CHECK(b.contains("tools") == (q.kind == GoldenKind::ToolCall));
    CHECK(b.contains("response_format") == (q.kind == GoldenKind::JsonSchema));
  }
  // The same prompt gives the same bytes.
  CHECK(golden_request(options_for(RuntimeKind::LlamaCpp), p).body ==
        golden_request(options_for(RuntimeKind::LlamaCpp), p).body);
}

TEST_CASE("a llama-server answer is read into steps with ids and sorted top-k") {
  const auto a = read_golden_answer(json::parse(kLlamaAnswer), "factual/00");
  REQUIRE(a);
  CHECK(a->prompt_id == "factual/00");
  CHECK(a->text_hash == hash_hex("Hello world"));
  CHECK(a->logprobs == LogprobShape::TopK);
  REQUIRE(a->steps.size() == 2);
  CHECK(a->steps[0].chosen.token == "Hello");
  CHECK(a->steps[0].chosen.id == 9906);
  REQUIRE(a->steps[0].top.size() == 3);
  CHECK(a->steps[0].top[0].token == "Hello");  // sorted, most likely first
  CHECK(a->steps[0].top[1].token == "Hi");
  CHECK(a->steps[0].top[1].logprob == Approx(-4.7));
  // A probability of 0 comes as the float's lowest value; storing it keeps a floor.
  const auto decoded = decode_steps(encode_steps(a->steps));
  REQUIRE(decoded);
  CHECK((*decoded)[1].top[1].logprob == kLowestStoredLogprob);
  CHECK((*decoded)[0].top[1].logprob == Approx(-4.7));
  CHECK((*decoded)[0].chosen.id == 9906);

  SECTION("without logprobs, only the text's hash") {
    json b = json::parse(kLlamaAnswer);
    b["choices"][0].erase("logprobs");
    const auto t = read_golden_answer(b, "x");
    REQUIRE(t);
    CHECK(t->logprobs == LogprobShape::None);
    CHECK(t->steps.empty());
    CHECK(t->text_hash == a->text_hash);
  }
  SECTION("a tool call's text is its name and arguments") {
    json b = json::parse(kLlamaAnswer);
    b["choices"][0]["message"] = json::parse(
        R"({"role":"assistant","content":null,"tool_calls":[{"type":"function","function":{"name":"lookup_weather","arguments":"{\"unit\":\"celsius\"}"}}]})");
    const auto t = read_golden_answer(b, "tool_call/00");
    REQUIRE(t);
    CHECK(t->text_hash == hash_hex("\nlookup_weather {\"unit\":\"celsius\"}"));
  }
  SECTION("a body without a message is no answer") {
    CHECK_FALSE(read_golden_answer(json::parse(R"({"choices": []})"), "x"));
    CHECK_FALSE(read_golden_answer(json::parse(R"({"error": {"message": "bad"}})"), "x"));
    CHECK_FALSE(read_golden_answer(json::parse(R"([1, 2])"), "x"));
  }
}

TEST_CASE("stored steps keep tokens, ids and logprobs to 1e-4 nats, and refuse what they did not write") {
  std::vector<TokenStep> steps(2);
  steps[0].chosen = {"a", 1, -0.12345};
  steps[0].top = {{"a", 1, -0.12345}, {"b", std::nullopt, -2.5}};
  steps[1].chosen = {"b", std::nullopt, -0.5};
  const std::string text = encode_steps(steps);
  const auto back = decode_steps(text);
  REQUIRE(back);
  REQUIRE(back->size() == 2);
  CHECK((*back)[0].chosen.token == "a");
  CHECK((*back)[0].chosen.id == 1);
  CHECK((*back)[0].chosen.logprob == Approx(-0.1235).margin(1e-9));
  CHECK_FALSE((*back)[0].top[1].id);
  CHECK((*back)[1].top.empty());
  // Each distinct token is written once.
  CHECK(json::parse(text)["t"].size() == 2);  // "a" (id 1) and "b" (no id), though "b" is written twice
  CHECK_FALSE(decode_steps("not json"));
  CHECK_FALSE(decode_steps(R"({"t": ["a"], "i": [null], "s": [[5, -1]]})"));  // index out of the table
  CHECK_FALSE(decode_steps(R"({"t": ["a"], "i": [null], "s": [[0]]})"));      // a step without its logprob
}

// ---------------------------------------------------------------- real captures

namespace {

ServerCapContext golden_cap(std::optional<int64_t> slot_ctx) {
  ServerCapContext c;
  c.lift = builtin_runtime(RuntimeKind::LlamaCpp).lift_cap;
  c.request_limit = RequestLimit::Sent;
  c.request_max_tokens = kGoldenMaxTokens;
  c.slot_ctx = slot_ctx;
  return c;
}

}  // namespace

TEST_CASE("a real greedy answer that loops is read whole: every token with its top-5, the loop found") {
  // llama-server started with -n 64; the golden request's max_tokens 256 is what bounds it
  // (tools/server/server-schema.cpp: max_tokens is an alias of the request's n_predict,
  // which replaces the server's default).
  const auto cap = probes_local::load_capture("post-v1-chat-completions-golden-loop.http");
  REQUIRE(cap.status == 200);
  const json body = json::parse(cap.body);
  const auto a = read_golden_answer(body, "factual/xx");
  REQUIRE(a);
  CHECK(a->logprobs == LogprobShape::TopK);
  REQUIRE(a->steps.size() == static_cast<size_t>(kGoldenMaxTokens));
  for (const TokenStep& s : a->steps) {
    CHECK(s.chosen.id);
    CHECK(s.top.size() == static_cast<size_t>(kGoldenTopLogprobs));
    CHECK(s.top[0].logprob >= s.top[1].logprob);
  }
  const ChatResult r = parse_chat_completion(cap.body, 0);
  CHECK(r.finish_reason == "length");
  // The loop: the answer rules' outcome for it (probes/answer_check.h) ...
  const RepetitionReport rep = answer_repetition(r);
  CHECK(rep.looping);
  const auto v = check_answer(r, rep, true);
  REQUIRE(v);
  CHECK(v->outcome == Outcome::Repetition);
  // ... and not a runtime cap: it ran to soakd's own bound.
  CHECK_FALSE(classify_server_cap(r, golden_cap(4096)));
  CHECK(completion_tokens_of(r) == kGoldenMaxTokens);
  // The stored form keeps every step.
  const auto decoded = decode_steps(encode_steps(a->steps));
  REQUIRE(decoded);
  CHECK(decoded->size() == a->steps.size());
}

TEST_CASE("a real greedy answer the runtime cut short of soakd's bound (a full slot) is its own cap, still read") {
  // llama-server -c 160 --parallel 1: a slot of 256 tokens, 26 prompt + 230 answer.
  const auto cap = probes_local::load_capture("post-v1-chat-completions-golden-full-slot.http");
  REQUIRE(cap.status == 200);
  const ChatResult r = parse_chat_completion(cap.body, 0);
  REQUIRE(r.finish_reason == "length");
  const auto v = classify_server_cap(r, golden_cap(256));
  REQUIRE(v);
  CHECK(v->outcome == Outcome::ServerTokenCap);
  CHECK(v->detail.find("slot context is full (n_ctx 256 per slot: 26 prompt + 230 answer tokens)") !=
        std::string::npos);
  CHECK(v->detail.find("after 230 completion tokens; soakd asked for at most 256") != std::string::npos);
  const auto a = read_golden_answer(json::parse(cap.body), "factual/xx");
  REQUIRE(a);
  CHECK(a->steps.size() == 230);
}
