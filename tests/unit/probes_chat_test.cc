// Chat answer interpretation: the stream accumulator, non-stream bodies, row
// fields and the outcome classes, on the real llama-server captures and on
// literal strings for the other runtimes' shapes.
#include <string>
#include <utility>
#include <vector>

#include "probes/chat_contract.h"
#include "probes/openai_chat.h"
#include "tests/catch.h"
#include "tests/unit/probes_capture_local.h"

using namespace soak;
using namespace soak::probes;

namespace {

constexpr int64_t kStart = 5'000'000'000;  // request start on the monotonic clock
constexpr int64_t kMs = 1'000'000;

// Feeds every event of a captured SSE body, one per millisecond after kStart.
ChatResult replay(const std::string& capture_name, int64_t first_at = kStart + 10 * kMs) {
  auto cap = probes_local::load_capture(capture_name);
  ChatStreamAccumulator acc;
  int64_t t = first_at;
  for (const auto& data : probes_local::sse_data_events(cap.body)) {
    acc.on_event(data, t);
    t += kMs;
  }
  return acc.take();
}

ChatExpectations llama_expect(std::string canonical = "tiny.gguf") {
  ChatExpectations x;
  x.canonical_model = std::move(canonical);
  x.requested_model = "tiny";
  return x;
}

ChatResult feed(const std::vector<std::string>& events) {
  ChatStreamAccumulator acc;
  int64_t t = kStart;
  for (const auto& e : events) {
    t += kMs;
    acc.on_event(e, t);
  }
  return acc.take();
}

}  // namespace

TEST_CASE("include-usage capture: role chunk is not a token, usage and timings are read") {
  ChatResult r = replay("post-v1-chat-completions-stream-include-usage.sse.http");
  REQUIRE(r.saw_done);
  CHECK(r.data_events == 16);
  CHECK(r.first_event_ns == kStart + 10 * kMs);  // role-only chunk is the first event...
  CHECK(r.first_token_ns == kStart + 11 * kMs);  // ...but the first token is the next one
  CHECK(r.last_token_ns == kStart + 22 * kMs);
  CHECK(r.terminal_ns == kStart + 25 * kMs);
  CHECK(r.token_arrivals_ns.size() == 12);
  CHECK(r.content_events == 12);
  CHECK(r.reasoning_events == 0);
  CHECK(r.content == "South relaxiv CableDavis refute Else corner publiclyNewsletter Calls ().");
  CHECK(r.finish_reason == "length");
  CHECK(r.model == "tiny.gguf");
  CHECK(r.system_fingerprint == "b9928-81ff7abe5");
  REQUIRE(r.usage);
  CHECK(r.usage->prompt_tokens == 15);
  CHECK(r.usage->completion_tokens == 12);
  CHECK(r.usage->cached_tokens == 3);
  REQUIRE(r.timings);
  CHECK(r.timings->cache_n == 3);
  CHECK(r.timings->prompt_n == 12);
  CHECK(r.timings->predicted_n == 12);
  CHECK(r.timings->predicted_per_second == Approx(330.7516330861884));
  CHECK_FALSE(r.timings->draft_n);  // absent because it was 0
  CHECK(r.problems.empty());

  Verdict v = classify_chat(TransportEnd::Completed, 200, "", r, llama_expect());
  CHECK(v.outcome == Outcome::Clean);
}

TEST_CASE("the response model must equal the canonical id: an alias is an identity mismatch") {
  ChatResult r = replay("post-v1-chat-completions-stream-include-usage.sse.http");
  Verdict v = classify_chat(TransportEnd::Completed, 200, "", r, llama_expect("Qwen3-0.6B"));
  CHECK(v.outcome == Outcome::IdentityMismatch);
  CHECK(v.detail.find("tiny.gguf") != std::string::npos);
}

TEST_CASE("no-usage capture: timings arrive on the finish chunk but usage is missing") {
  ChatResult r = replay("post-v1-chat-completions-stream-no-usage.sse.http");
  CHECK(r.saw_done);
  CHECK_FALSE(r.usage);
  REQUIRE(r.timings);
  CHECK(r.timings->predicted_n == 6);
  CHECK(classify_chat(TransportEnd::Completed, 200, "", r, llama_expect()).outcome == Outcome::MissingUsage);
  ChatExpectations lax = llama_expect();
  lax.usage = UsagePolicy::NotRequired;
  CHECK(classify_chat(TransportEnd::Completed, 200, "", r, lax).outcome == Outcome::Clean);
}

TEST_CASE("invalid-utf8 stream capture: an error object inside a 200 stream is a stream error") {
  ChatResult r = replay("error-invalid-utf8-output-chat-stream.sse.http");
  CHECK_FALSE(r.saw_done);
  CHECK(r.content_events == 16);
  REQUIRE(r.error);
  CHECK(r.error->code == 500);
  CHECK(r.error->type == "server_error");
  CHECK(r.error->message.find("peg-native") != std::string::npos);
  CHECK(r.model == "tiny-utf8-fragments.gguf");
  Verdict v = classify_chat(TransportEnd::Completed, 200, "", r, llama_expect("tiny-utf8-fragments.gguf"));
  CHECK(v.outcome == Outcome::StreamError);
  CHECK(v.detail.find("no [DONE]") != std::string::npos);
}

TEST_CASE("oMLX style: an error object followed by [DONE] is still a stream error") {
  ChatResult r = feed({R"({"choices":[{"index":0,"delta":{"role":"assistant"}}],"model":"m"})",
                       R"({"error":{"message":"boom","type":"server_error"}})", "[DONE]"});
  CHECK(r.saw_done);
  CHECK(classify_chat(TransportEnd::Completed, 200, "", r, llama_expect("m")).outcome == Outcome::StreamError);
}

TEST_CASE("disconnect capture: a stream cut without [DONE]") {
  ChatResult r = replay("disconnect-stream-max-time-1s.sse.http");
  CHECK_FALSE(r.saw_done);
  CHECK(r.content_events == 5);
  CHECK(r.finish_reason.empty());
  CHECK(classify_chat(TransportEnd::Completed, 200, "", r, llama_expect()).outcome == Outcome::NoTerminal);
  CHECK(classify_chat(TransportEnd::ConnectionLost, 200, "", r, llama_expect()).outcome == Outcome::NoTerminal);
  // When soakd's own limits cut it, the limit is the outcome.
  CHECK(classify_chat(TransportEnd::WallTimeout, 200, "", r, llama_expect()).outcome == Outcome::Timeout);
  CHECK(classify_chat(TransportEnd::Stalled, 200, "", r, llama_expect()).outcome == Outcome::Stalled);
  CHECK(classify_chat(TransportEnd::SizeCapped, 200, "", r, llama_expect()).outcome == Outcome::Truncated);
}

TEST_CASE("tool-call stream capture: deltas assembled by index") {
  ChatResult r = replay("post-v1-chat-completions-tools-required-prefill-stream.sse.http");
  REQUIRE(r.tool_calls.size() == 1);
  const ToolCall& c = r.tool_calls[0];
  CHECK(c.index == 0);
  CHECK(c.id == "Kle5SMOhvETNT0QfGVotDE4mNdzdI3pp");
  CHECK(c.type == "function");
  CHECK(c.name == "lookup_weather");
  CHECK(c.arguments == R"({"city":"Lima", "unit":"celsius"})");
  CHECK(r.finish_reason == "tool_calls");
  CHECK(r.content.empty());
  CHECK(r.content_events == 16);  // tool-call text counts as answer output
  CHECK(r.first_token_ns == kStart + 11 * kMs);
  CHECK(classify_chat(TransportEnd::Completed, 200, "", r, llama_expect()).outcome == Outcome::Clean);
}

TEST_CASE("parallel tool calls interleaved by index are kept apart") {
  ChatResult r = feed({
      R"({"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"b","function":{"name":"g","arguments":"{\"y\""}}]}}]})",
      R"({"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"a","function":{"name":"f","arguments":"{"}}]}}]})",
      R"({"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":":2}"}}]}}]})",
      R"({"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"name":"f","arguments":"}"}}]}}]})",
  });
  REQUIRE(r.tool_calls.size() == 2);
  CHECK(r.tool_calls[0].name == "f");  // a repeated name is not doubled
  CHECK(r.tool_calls[0].arguments == "{}");
  CHECK(r.tool_calls[1].id == "b");
  CHECK(r.tool_calls[1].arguments == R"({"y":2})");
}

TEST_CASE("non-stream capture: the same result shape from one body") {
  auto cap = probes_local::load_capture("post-v1-chat-completions-nonstream.http");
  ChatResult r = parse_chat_completion(cap.body, kStart + 80 * kMs);
  CHECK(r.mode == ResponseMode::NonStream);
  CHECK(r.content.rfind("South relaxructoseEconomic", 0) == 0);
  CHECK(r.finish_reason == "length");
  CHECK(r.model == "tiny.gguf");
  CHECK(r.usage->completion_tokens == 24);
  CHECK(r.usage->prompt_tokens == 27);
  CHECK(r.timings->prompt_n == 27);
  CHECK(r.terminal_ns == kStart + 80 * kMs);
  CHECK_FALSE(r.first_token_ns);  // one body carries no per-token timing
  CHECK(r.content_events == 1);
  ChatExpectations x = llama_expect();
  x.mode = ResponseMode::NonStream;
  CHECK(classify_chat(TransportEnd::Completed, 200, "", r, x).outcome == Outcome::Clean);
}

TEST_CASE("non-stream parallel capture keeps the cut-off second call") {
  auto cap = probes_local::load_capture("post-v1-chat-completions-tools-required-prefill-parallel.http");
  ChatResult r = parse_chat_completion(cap.body, kStart);
  REQUIRE(r.tool_calls.size() == 2);
  CHECK(r.tool_calls[0].arguments == R"({"city":"Lima", "unit":"celsius"})");
  CHECK(r.tool_calls[1].arguments == "{");
  CHECK(r.tool_calls[1].id == "4BWhQ20kUe2qeeSz1RVAHchbjMyXEPpE");
  CHECK(r.finish_reason == "length");
}

TEST_CASE("non-stream: leading keep-alive spaces (oMLX) are fine; empty and garbage bodies are classified") {
  ChatResult r = parse_chat_completion(
      "   \n {\"model\":\"m\",\"choices\":[{\"index\":0,\"finish_reason\":\"stop\",\"message\":{\"content\":\"hi\"}}],"
      "\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":1}}",
      kStart);
  ChatExpectations x = llama_expect("m");
  x.mode = ResponseMode::NonStream;
  CHECK(r.content == "hi");
  CHECK(classify_chat(TransportEnd::Completed, 200, "", r, x).outcome == Outcome::Clean);

  ChatResult empty = parse_chat_completion("  ", kStart);
  CHECK(classify_chat(TransportEnd::Completed, 200, "", empty, x).outcome == Outcome::NoBody);

  ChatResult garbage = parse_chat_completion("<html>oops</html>", kStart);
  CHECK(garbage.malformed_events == 1);
  CHECK(classify_chat(TransportEnd::Completed, 200, "", garbage, x).outcome == Outcome::MalformedResponse);
  CHECK(classify_chat(TransportEnd::ConnectionLost, 200, "", garbage, x).outcome == Outcome::NoTerminal);
}

TEST_CASE("oMLX keep-alive chunks never count as a token and never set the model") {
  ChatResult r = feed({
      R"({"id":"k","object":"chat.completion.chunk","model":"keepalive","choices":[{"index":0,"delta":{"content":""}}]})",
      R"({"id":"c","model":"Qwen3-8B","choices":[{"index":0,"delta":{"role":"assistant"}}]})",
      R"({"id":"k","object":"chat.completion.chunk","model":"keepalive","choices":[{"index":0,"delta":{"content":""}}]})",
      R"({"id":"c","model":"Qwen3-8B","choices":[{"index":0,"delta":{"content":"Hello"}}]})",
      R"({"id":"c","model":"Qwen3-8B","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]})",
      R"({"id":"c","model":"Qwen3-8B","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":1,"cached_tokens":4,"time_to_first_token":1.23,"prompt_tokens_per_second":7.5,"generation_tokens_per_second":42.0}})",
      "[DONE]",
  });
  CHECK(r.keepalive_events == 2);
  CHECK(r.first_event_ns == kStart + 2 * kMs);
  CHECK(r.first_token_ns == kStart + 4 * kMs);
  CHECK(r.model == "Qwen3-8B");
  CHECK(r.token_arrivals_ns.size() == 1);
  CHECK(r.usage->cached_tokens == 4);
  CHECK(r.usage->server_ttft_s == Approx(1.23));

  ProbeResult row;
  fill_probe_result(r, RequestClock{kStart, {}, {}, kStart + 8 * kMs}, row);
  CHECK(row.server_ttft_ms == Approx(1230.0));
  // oMLX's prompt_tokens_per_second (7.5) counts the 4 cached tokens; the row
  // keeps processed tokens only, as llama.cpp's prompt_per_second does.
  CHECK(row.server_prompt_tps == Approx(5.0 / 1.23));
  CHECK(row.server_cache_n == 4);
  CHECK(row.server_prompt_n == 5);
  CHECK_FALSE(row.server_load_ms);  // no cold load in this answer
  CHECK(row.server_predicted_tps == Approx(42.0));
  CHECK(row.t_first_event_us == 2000);
  CHECK(row.t_first_token_us == 4000);

  ChatExpectations x;
  x.identity = IdentityEvidence::EchoesRequest;
  x.canonical_model = "mlx-community/Qwen3-8B-4bit";
  x.requested_model = "Qwen3-8B";
  CHECK(classify_chat(TransportEnd::Completed, 200, "", r, x).outcome == Outcome::Clean);
  x.requested_model = "other";
  CHECK(classify_chat(TransportEnd::Completed, 200, "", r, x).outcome == Outcome::IdentityMismatch);
}

TEST_CASE("keep-alives only, or no event at all, is no_body") {
  ChatResult ka = feed({R"({"model":"keepalive","choices":[{"index":0,"delta":{"content":""}}]})"});
  Verdict v = classify_chat(TransportEnd::Completed, 200, "", ka, llama_expect());
  CHECK(v.outcome == Outcome::NoBody);
  CHECK(v.detail.find("keep-alive") != std::string::npos);
  ChatResult none = feed({});
  CHECK(classify_chat(TransportEnd::Completed, 200, "", none, llama_expect()).outcome == Outcome::NoBody);
  // A stall with nothing in it is the stall.
  CHECK(classify_chat(TransportEnd::Stalled, 200, "", ka, llama_expect()).outcome == Outcome::Stalled);
}

TEST_CASE("reasoning in reasoning_content or reasoning is counted apart from the answer") {
  ChatResult r = feed({
      R"({"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":null}}]})",
      R"({"model":"m","choices":[{"index":0,"delta":{"reasoning_content":"Let me"}}]})",
      R"({"model":"m","choices":[{"index":0,"delta":{"reasoning":" think"}}]})",
      R"({"model":"m","choices":[{"index":0,"delta":{"reasoning":"!","reasoning_content":"!"}}]})",
      R"({"model":"m","choices":[{"index":0,"delta":{"content":"MARK-1"}}]})",
      R"({"model":"m","choices":[{"index":0,"delta":{"content":""},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":9,"completion_tokens_details":{"reasoning_tokens":7}}})",
      "[DONE]",
  });
  CHECK(r.reasoning == "Let me think!");  // both keys with the same text: counted once
  CHECK(r.content == "MARK-1");
  CHECK(r.reasoning_events == 3);
  CHECK(r.content_events == 1);
  CHECK(r.first_token_ns == kStart + 2 * kMs);    // reasoning is output
  CHECK(r.first_content_ns == kStart + 5 * kMs);  // the answer starts later
  CHECK(r.usage->reasoning_tokens == 7);
  ProbeResult row;
  fill_probe_result(r, RequestClock{kStart, {}, {}, {}}, row);
  CHECK(row.reasoning_tokens == 7);
  CHECK(row.reasoning_events == 3);
  CHECK(row.content_events == 1);
}

TEST_CASE("malformed events are recorded problems, never exceptions") {
  ChatResult r = feed({
      R"({"model":"m","choices":[{"index":0,"delta":{"content":"a"}}]})",
      R"({"model":"m","choices":[{"index":0,"delta":{"content":)",
      "[1,2,3]",
      R"({"model":"m","choices":"not-an-array","usage":"nope","timings":[1]})",
      R"({"model":"m","choices":[{"index":0,"delta":{"content":7,"tool_calls":{"x":1}},"finish_reason":"stop"}]})",
      "[DONE]",
      R"({"late":true})",
  });
  CHECK(r.malformed_events == 2);
  REQUIRE(r.problems.size() == 3);
  CHECK(r.problems[0].find("malformed JSON") != std::string::npos);
  CHECK(r.problems[2].find("after [DONE]") != std::string::npos);
  CHECK(r.content == "a");
  CHECK(r.finish_reason == "stop");
  Verdict v = classify_chat(TransportEnd::Completed, 200, "", r, llama_expect("m"));
  CHECK(v.outcome == Outcome::MalformedResponse);
}

TEST_CASE("problems are capped so a garbage stream cannot grow memory") {
  ChatStreamAccumulator acc;
  for (int i = 0; i < 1000; ++i) acc.on_event("not json", kStart + i);
  CHECK(acc.result().problems.size() == kMaxRecordedProblems);
  CHECK(acc.result().problems_dropped == 1000 - static_cast<int64_t>(kMaxRecordedProblems));
  CHECK(acc.result().malformed_events == 1000);
}

TEST_CASE("a missing finish_reason is its own class") {
  ChatResult r = feed(
      {R"({"model":"m","choices":[{"index":0,"delta":{"content":"a"}}],"usage":{"completion_tokens":1}})", "[DONE]"});
  CHECK(classify_chat(TransportEnd::Completed, 200, "", r, llama_expect("m")).outcome == Outcome::MissingFinishReason);
}

TEST_CASE("transport failures and soakd's own ends") {
  ChatResult r;
  CHECK(classify_chat(TransportEnd::ConnectRefused, {}, "", r, llama_expect()).outcome == Outcome::ConnectRefused);
  CHECK(classify_chat(TransportEnd::ConnectTimeout, {}, "", r, llama_expect()).outcome == Outcome::ConnectTimeout);
  CHECK(classify_chat(TransportEnd::CancelledByDaemon, 200, "", r, llama_expect()).outcome ==
        Outcome::CancelledByDaemon);
  CHECK(classify_chat(TransportEnd::LocalError, {}, "", r, llama_expect()).outcome == Outcome::HarnessError);
}

TEST_CASE("non-2xx captures: loading, context exceeded, 4xx, 5xx") {
  auto load = probes_local::load_capture("get-health-during-model-load.http");
  Verdict v = classify_http_error(load.status, load.body);
  CHECK(v.outcome == Outcome::Loading);
  CHECK(v.detail.find("Loading model") != std::string::npos);

  for (const char* f : {"error-prompt-exceeds-context.http", "error-prompt-exceeds-context-native.http"}) {
    auto cap = probes_local::load_capture(f);
    CHECK(classify_http_error(cap.status, cap.body).outcome == Outcome::ContextExceeded);
  }
  ApiError e = parse_api_error(probes_local::load_capture("error-prompt-exceeds-context.http").body);
  CHECK(e.n_prompt_tokens == 3032);
  CHECK(e.n_ctx == 2048);
  CHECK(e.code == 400);

  CHECK(classify_http_error(404, probes_local::load_capture("error-unknown-endpoint.http").body).outcome ==
        Outcome::Http4xx);
  CHECK(classify_http_error(400, probes_local::load_capture("error-missing-messages.http").body).outcome ==
        Outcome::Http4xx);
  auto bad_json = probes_local::load_capture("error-invalid-json.http");
  CHECK(classify_http_error(bad_json.status, bad_json.body).outcome == Outcome::Http5xx);
  auto utf8 = probes_local::load_capture("error-invalid-utf8-output-chat-nonstream.http");
  CHECK(classify_chat(TransportEnd::Completed, utf8.status, utf8.body, ChatResult{}, llama_expect()).outcome ==
        Outcome::Http5xx);

  // 503 without "loading" is a server error, not loading.
  auto noslot = probes_local::load_capture("get-slots-fail-on-no-slot-while-busy.http");
  CHECK(classify_http_error(noslot.status, noslot.body).outcome == Outcome::Http5xx);
}

TEST_CASE("non-2xx bodies of the other runtimes") {
  CHECK(classify_http_error(503, R"({"detail":"model loading"})").outcome == Outcome::Loading);  // Rapid-MLX
  CHECK(
      classify_http_error(
          400,
          R"({"error":{"message":"This model's maximum context length is 32768 tokens. However, you requested 40000 tokens","type":"BadRequestError","param":null,"code":400}})")
          .outcome == Outcome::ContextExceeded);  // vLLM
  CHECK(
      classify_http_error(
          400,
          R"({"error":{"message":"Prompt too long: 40000 tokens exceeds max context window of 32768 tokens","type":"invalid_request_error","param":null,"code":null}})")
          .outcome == Outcome::ContextExceeded);                                        // oMLX
  ApiError mlx = parse_api_error(R"({"error": "Content-Length header is required"})");  // mlx-lm
  CHECK(mlx.message == "Content-Length header is required");
  ApiError fastapi = parse_api_error(R"({"detail":[{"loc":["body","messages"],"msg":"field required"}]})");
  CHECK(fastapi.message == "field required");
  ApiError text = parse_api_error("Internal Server Error\n");
  CHECK(text.message == "Internal Server Error");
  CHECK(classify_http_error(302, "").outcome == Outcome::MalformedResponse);
}

TEST_CASE("itl_stats: nearest-rank percentiles over consecutive gaps") {
  std::vector<int64_t> arrivals{0};
  // 19 gaps of 1 ms and one of 50 ms.
  for (int i = 0; i < 19; ++i) arrivals.push_back(arrivals.back() + kMs);
  arrivals.push_back(arrivals.back() + 50 * kMs);
  ItlStats s = itl_stats(arrivals);
  CHECK(s.p50_us == 1000);
  CHECK(s.p95_us == 1000);  // rank ceil(0.95*20) = 19 -> still a 1 ms gap
  CHECK(s.max_us == 50000);
  CHECK_FALSE(itl_stats({kStart}).p50_us);
}

TEST_CASE("client decode rate and the timing-artifact rule") {
  std::vector<int64_t> steady;
  for (int i = 0; i < 11; ++i) steady.push_back(kStart + i * 10 * kMs);  // 10 ms per token
  DecodeRate ok = client_decode_rate(11, steady);
  REQUIRE(ok.tokens_per_s);
  CHECK(*ok.tokens_per_s == Approx(100.0));
  CHECK_FALSE(ok.timing_artifact);

  // Everything flushed in one event: no rate, flagged.
  DecodeRate one = client_decode_rate(200, {kStart});
  CHECK_FALSE(one.tokens_per_s);
  CHECK(one.timing_artifact);

  // 200 tokens over 1 ms: 199000 tok/s is not a decode rate, it is a replay.
  DecodeRate burst = client_decode_rate(200, {kStart, kStart + kMs});
  CHECK(burst.timing_artifact);

  // Too few tokens to judge.
  CHECK_FALSE(client_decode_rate(3, {kStart, kStart + 1}).timing_artifact);
}

TEST_CASE("fill_probe_result on the include-usage capture: client and server columns apart") {
  ChatResult r = replay("post-v1-chat-completions-stream-include-usage.sse.http");
  ProbeResult row;
  RequestClock clock{kStart, 500, kStart + 9 * kMs, kStart + 26 * kMs};  // a new connection set up in 0.5 ms
  fill_probe_result(r, clock, row);
  CHECK(row.t_connect_us == 500);
  CHECK(row.t_first_byte_us == 9000);
  CHECK(row.t_first_event_us == 10000);
  CHECK(row.t_first_token_us == 11000);
  CHECK(row.t_last_token_us == 22000);
  CHECK(row.t_terminal_us == 25000);
  CHECK(row.t_done_us == 26000);
  CHECK(row.itl_p50_us == 1000);
  CHECK(row.itl_max_us == 1000);
  REQUIRE(row.client_decode_tps);
  CHECK(*row.client_decode_tps == Approx(1000.0));  // 11 intervals of 1 ms
  CHECK_FALSE(row.timing_artifact);
  CHECK(row.prompt_tokens == 15);
  CHECK(row.completion_tokens == 12);
  CHECK(row.content_events == 12);
  CHECK(row.server_prompt_n == 12);
  CHECK(row.server_cache_n == 3);
  CHECK(row.server_predicted_n == 12);
  CHECK(row.server_prompt_ms == Approx(3.916));
  CHECK(row.server_predicted_tps == Approx(330.7516330861884));
  CHECK_FALSE(row.server_ttft_ms);  // llama.cpp does not report one; never derived
  CHECK_FALSE(row.server_draft_n);
  CHECK(row.finish_reason == "length");
  CHECK(row.response_model == "tiny.gguf");
}

TEST_CASE("draft acceptance is carried when the runtime reports it") {
  ChatResult r = feed(
      {R"({"model":"m","choices":[{"index":0,"delta":{"content":"x"},"finish_reason":"stop"}],"timings":{"prompt_n":3,"predicted_n":40,"draft_n":32,"draft_n_accepted":30,"predicted_per_second":12.5}})",
       "[DONE]"});
  ProbeResult row;
  fill_probe_result(r, RequestClock{kStart, {}, {}, {}}, row);
  CHECK(row.server_draft_n == 32);
  CHECK(row.server_draft_accepted == 30);
  CHECK(row.server_predicted_tps == Approx(12.5));
}

TEST_CASE("LM Studio /api/v0 stats land in the server columns") {
  ChatResult r = parse_chat_completion(
      R"({"model":"granite-3.0-2b-instruct","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"Hi"}}],"usage":{"prompt_tokens":24,"completion_tokens":53,"total_tokens":77},"stats":{"tokens_per_second":51.43,"time_to_first_token":0.111,"generation_time":0.954,"stop_reason":"eosFound"},"runtime":{"name":"llama.cpp-mac-arm64-apple-metal-advsimd","version":"1.3.0"}})",
      kStart);
  ProbeResult row;
  fill_probe_result(r, RequestClock{kStart, {}, {}, {}}, row);
  CHECK(row.server_ttft_ms == Approx(111.0));
  CHECK(row.server_predicted_tps == Approx(51.43));
  CHECK(row.completion_tokens == 53);
}

TEST_CASE("oMLX model_load_duration lands in its own column") {
  // omlx/server.py: a cold load waits under a lock inside the request; usage
  // then carries model_load_duration (seconds) beside time_to_first_token.
  ChatResult r = feed({
      R"({"id":"c","model":"Qwen3-8B","choices":[{"index":0,"delta":{"content":"Hi"}}]})",
      R"({"id":"c","model":"Qwen3-8B","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]})",
      R"({"id":"c","model":"Qwen3-8B","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":1,"time_to_first_token":12.5,"model_load_duration":11.75}})",
      "[DONE]",
  });
  ProbeResult row;
  fill_probe_result(r, RequestClock{kStart, {}, {}, kStart + 8 * kMs}, row);
  REQUIRE(row.server_load_ms);
  CHECK(*row.server_load_ms == Approx(11750.0));
  CHECK(row.server_ttft_ms == Approx(12500.0));
}
