// Prefill progress reports (MLX-LM keep-alive counts, llama.cpp
// prompt_progress chunks) and the server-cap outcome, on literal shapes and on
// a real llama-server capture: a stream with "return_progress": true whose
// answer the server's -n 8 cut (finish_reason length, no max_tokens sent).
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "probes/chat_contract.h"
#include "probes/openai_chat.h"
#include "probes/prefill_progress.h"
#include "probes/runtimes/catalog.h"
#include "probes/server_cap.h"
#include "tests/catch.h"
#include "tests/unit/probes_capture_local.h"

using namespace soak;
using namespace soak::probes;

namespace {

constexpr int64_t kStart = 5'000'000'000;
constexpr int64_t kMs = 1'000'000;
constexpr const char* kProgressCapture = "post-v1-chat-completions-stream-return-progress.sse.http";

ChatResult replay(const std::string& name) {
  auto cap = probes_local::load_capture(name);
  ChatStreamAccumulator acc;
  int64_t t = kStart;
  for (const auto& data : probes_local::sse_data_events(cap.body)) {
    t += kMs;
    acc.on_event(data, t);
  }
  return acc.take();
}

ChatExpectations llama_expect() {
  ChatExpectations x;
  x.canonical_model = "tiny.gguf";
  x.requested_model = "tiny";
  return x;
}

// An mlx-lm stream as mlx_lm/server.py writes it: comments during prefill,
// then chunks whose model echoes the request, the finish, the usage chunk.
std::vector<std::string> mlx_answer(const std::string& finish, int completion_tokens) {
  const std::string head =
      R"({"id":"chatcmpl-1","system_fingerprint":"0.32.0-0.29.1-macOS","object":"chat.completion.chunk","model":"qwen","created":1,)";
  return {
      head +
          R"("choices":[{"index":0,"finish_reason":null,"delta":{"role":"assistant","content":"Hi","reasoning":null,"tool_calls":[]}}]})",
      head + R"("choices":[{"index":0,"finish_reason":")" + finish +
          R"(","delta":{"role":"assistant","content":"","reasoning":null,"tool_calls":[]}}]})",
      R"({"id":"chatcmpl-1","object":"chat.completion","model":"qwen","created":1,"choices":[],"usage":{"prompt_tokens":20,"completion_tokens":)" +
          std::to_string(completion_tokens) + R"(,"total_tokens":99}})",
      "[DONE]"};
}

ChatResult feed(const std::vector<std::string>& events) {
  ChatStreamAccumulator acc;
  int64_t t = kStart;
  for (const auto& e : events) acc.on_event(e, t += kMs);
  return acc.take();
}

}  // namespace

// ---------------------------------------------------------------- MLX-LM keep-alive counts

TEST_CASE("keepalive comments: MLX-LM's n/m is a report; pings, timestamps and bad counts are not") {
  auto r = parse_keepalive_comment("keepalive 1024/65536");
  REQUIRE(r);
  CHECK(r->processed == 1024);
  CHECK(r->total == 65536);
  CHECK(parse_keepalive_comment("keepalive 65536/65536"));
  CHECK(parse_keepalive_comment("keepalive 2048/4096 "));        // trailing space tolerated
  CHECK_FALSE(parse_keepalive_comment("keepalive"));             // Rapid-MLX: a plain ping
  CHECK_FALSE(parse_keepalive_comment("keepalive 1731234567"));  // a timestamp is not a count
  CHECK_FALSE(parse_keepalive_comment("keep-alive"));            // oMLX's comment mode
  CHECK_FALSE(parse_keepalive_comment("ping"));
  CHECK_FALSE(parse_keepalive_comment(""));                     // llama.cpp's `:` ping
  CHECK_FALSE(parse_keepalive_comment("keepalive 5000/4096"));  // more read than there is
  CHECK_FALSE(parse_keepalive_comment("keepalive -1/4096"));
  CHECK_FALSE(parse_keepalive_comment("keepalive 1/0"));
  CHECK_FALSE(parse_keepalive_comment("keepalive 1/2/3"));
  CHECK_FALSE(parse_keepalive_comment("keepalive x/4096"));
}

TEST_CASE("keepalive comments: only a count that rises is progress; a repeated or plain one is a ping") {
  ChatStreamAccumulator acc;
  auto reports = [&] { return acc.result().prefill.reports; };
  acc.on_comment("keepalive 0/65536");  // prefill started, nothing read yet
  CHECK(reports() == 0);
  acc.on_comment("keepalive 2048/65536");
  CHECK(reports() == 1);
  acc.on_comment("keepalive 2048/65536");  // not rising: a ping
  CHECK(reports() == 1);
  acc.on_comment("ping");
  acc.on_comment("");
  acc.on_comment("keepalive");
  CHECK(reports() == 1);
  acc.on_comment("keepalive 1024/65536");  // going back is not progress either
  CHECK(reports() == 1);
  acc.on_comment("keepalive 4096/65536");
  CHECK(reports() == 2);
  CHECK(acc.result().prefill.processed == 4096);
  CHECK(acc.result().prefill.total == 65536);
  // Comments are never events: nothing of the answer changed.
  CHECK(acc.result().data_events == 0);
  CHECK_FALSE(acc.result().first_event_ns.has_value());
}

// ---------------------------------------------------------------- llama.cpp prompt_progress

TEST_CASE("prompt_progress chunks of a real llama-server stream are reports, not events of the answer") {
  ChatResult r = replay(kProgressCapture);
  REQUIRE(r.saw_done);
  CHECK(r.data_events == 16);
  CHECK(r.progress_events == 4);  // processed 0, 256, 512, 649 of 649
  CHECK(r.prefill.reports == 3);  // 0 is no progress; 256, 512 and 649 are
  CHECK(r.prefill.processed == 649);
  CHECK(r.prefill.total == 649);
  // The first event of the answer is the role-only chunk after the reports.
  CHECK(r.first_event_ns == kStart + 5 * kMs);
  CHECK(r.first_token_ns == kStart + 6 * kMs);
  CHECK(r.token_arrivals_ns.size() == 8);
  CHECK(r.content_events == 8);
  CHECK(r.finish_reason == "length");
  REQUIRE(r.usage);
  CHECK(r.usage->completion_tokens == 8);
  CHECK(r.problems.empty());
  // The stream contract holds: the reports are neither content nor a broken stream.
  CHECK(classify_chat(TransportEnd::Completed, 200, "", r, llama_expect()).outcome == Outcome::Clean);
}

TEST_CASE("prompt_progress: shapes that are not a report, and a stream of reports alone is no body") {
  using json = nlohmann::json;
  CHECK(parse_prompt_progress(json::parse(R"({"prompt_progress":{"total":10,"cache":0,"processed":4,"time_ms":1}})")));
  CHECK_FALSE(parse_prompt_progress(json::parse(R"({"prompt_progress":{"total":10}})")));
  CHECK_FALSE(parse_prompt_progress(json::parse(R"({"prompt_progress":{"total":10,"processed":11}})")));
  CHECK_FALSE(parse_prompt_progress(json::parse(R"({"prompt_progress":"50%"})")));
  CHECK_FALSE(parse_prompt_progress(json::parse(R"({"choices":[]})")));

  const std::string progress =
      R"({"choices":[{"finish_reason":null,"index":0,"delta":{"role":"assistant","content":null}}],"model":"tiny.gguf","object":"chat.completion.chunk","prompt_progress":{"total":4096,"cache":0,"processed":)";
  ChatResult only = feed({progress + "1024}}", progress + "2048}}"});
  CHECK(only.progress_events == 2);
  CHECK(only.prefill.reports == 2);
  CHECK_FALSE(only.first_event_ns.has_value());
  CHECK(only.model.empty());  // a report sets nothing of the answer
  Verdict v = classify_chat(TransportEnd::Completed, 200, "", only, llama_expect());
  CHECK(v.outcome == Outcome::NoBody);
  CHECK(v.detail.find("prefill progress") != std::string::npos);
}

TEST_CASE("prompt_progress: a chunk that also carries the answer is read as an ordinary chunk") {
  using json = nlohmann::json;
  const std::string head =
      R"({"prompt_progress":{"total":10,"cache":0,"processed":10,"time_ms":1},"choices":[{"index":0,)";
  CHECK(carries_only_progress(
      json::parse(head + R"("delta":{"role":"assistant","content":null},"finish_reason":null}]})")));
  CHECK(carries_only_progress(json::parse(head + R"("delta":{"content":""}}]})")));
  CHECK_FALSE(carries_only_progress(json::parse(head + R"("delta":{"content":"Hi"}}]})")));
  CHECK_FALSE(carries_only_progress(json::parse(head + R"("delta":{"reasoning_content":"hmm"}}]})")));
  CHECK_FALSE(carries_only_progress(json::parse(head + R"("delta":{"reasoning":"hmm"}}]})")));
  CHECK_FALSE(carries_only_progress(json::parse(head + R"("delta":{"tool_calls":[{"index":0}]}}]})")));
  CHECK_FALSE(carries_only_progress(json::parse(head + R"("delta":{},"finish_reason":"stop"}]})")));
  CHECK_FALSE(carries_only_progress(json::parse(R"({"prompt_progress":{"total":1,"processed":1},"usage":{}})")));
  // Such a chunk still moves the prefill report, and it is the answer's first event and token.
  const std::string mixed = head + R"("delta":{"content":"Hi"},"finish_reason":null}]})";
  ChatResult r = feed({mixed});
  CHECK(r.progress_events == 0);
  CHECK(r.prefill.reports == 1);
  CHECK(r.first_event_ns.has_value());
  CHECK(r.token_arrivals_ns.size() == 1);
}

TEST_CASE("a stall before the first token says how far the prefill got") {
  ChatStreamAccumulator acc;
  acc.on_comment("keepalive 2048/65536");
  acc.on_comment("keepalive 4096/65536");
  Verdict v = classify_chat(TransportEnd::Stalled, 200, "", acc.result(), llama_expect());
  CHECK(v.outcome == Outcome::Stalled);
  CHECK(v.detail.find("4096/65536") != std::string::npos);
  ChatStreamAccumulator quiet;
  quiet.on_comment("");
  Verdict q = classify_chat(TransportEnd::Stalled, 200, "", quiet.result(), llama_expect());
  CHECK(q.detail.find("no prefill progress reported") != std::string::npos);
}

// ---------------------------------------------------------------- server cap

TEST_CASE("server cap: the real stream cut by llama-server's -n 8 is server_token_cap with the lift") {
  ChatResult r = replay(kProgressCapture);
  ServerCapContext c;
  c.lift = builtin_runtime(RuntimeKind::LlamaCpp).lift_cap;
  c.slot_ctx = 4096;
  auto v = classify_server_cap(r, c);
  REQUIRE(v);
  CHECK(v->outcome == Outcome::ServerTokenCap);
  CHECK(v->detail.rfind("llama-server was started with -n 8: start it without -n or with -n -1", 0) == 0);
  CHECK(v->detail.find("after 8 completion tokens") != std::string::npos);
}

TEST_CASE("server cap: the real non-stream answer under -n 64 names -n 64; a full slot names the context") {
  auto cap = probes_local::load_capture("post-v1-chat-completions-nonstream-default-n.http");
  ChatResult r = parse_chat_completion(cap.body, kStart);
  REQUIRE(r.finish_reason == "length");
  ServerCapContext c;
  c.lift = builtin_runtime(RuntimeKind::LlamaCpp).lift_cap;
  c.slot_ctx = 2048;  // the capture's /props n_ctx
  auto v = classify_server_cap(r, c);
  REQUIRE(v);
  CHECK(v->detail.rfind("llama-server was started with -n 64: start it without -n or with -n -1", 0) == 0);
  // The same answer in a slot of 82 tokens (17 prompt + 64 answer + 1): the context ran out, not -n.
  c.slot_ctx = 82;
  auto full = classify_server_cap(r, c);
  REQUIRE(full);
  CHECK(full->detail.find("slot context is full (n_ctx 82") != std::string::npos);
  CHECK(full->detail.find("larger -c") != std::string::npos);
}

TEST_CASE("server cap: MLX-LM's 512 default and a raised --max-tokens") {
  ServerCapContext c;
  c.lift = builtin_runtime(RuntimeKind::MlxLm).lift_cap;
  auto v = classify_server_cap(feed(mlx_answer("length", 512)), c);
  REQUIRE(v);
  CHECK(v->outcome == Outcome::ServerTokenCap);
  CHECK(v->detail.rfind("MLX-LM caps answers at 512 tokens: start mlx_lm.server with --max-tokens 32768", 0) == 0);
  auto raised = classify_server_cap(feed(mlx_answer("length", 4096)), c);
  REQUIRE(raised);
  CHECK(raised->detail.rfind("mlx_lm.server was started with --max-tokens 4096: start it with --max-tokens 32768", 0) ==
        0);
}

TEST_CASE("server cap: not for a natural stop, a tool call, or a request that set its own limit") {
  ServerCapContext c;
  c.lift = builtin_runtime(RuntimeKind::MlxLm).lift_cap;
  CHECK_FALSE(classify_server_cap(feed(mlx_answer("stop", 40)), c));
  CHECK_FALSE(classify_server_cap(feed(mlx_answer("tool_calls", 40)), c));
  c.request_limit = RequestLimit::Sent;
  CHECK_FALSE(classify_server_cap(feed(mlx_answer("length", 512)), c));
  // A bound the request named: reaching it is soakd's cut; stopping short of it is the runtime's.
  c.request_max_tokens = 512;
  CHECK_FALSE(classify_server_cap(feed(mlx_answer("length", 512)), c));
  auto short_of = classify_server_cap(feed(mlx_answer("length", 300)), c);
  REQUIRE(short_of);
  CHECK(short_of->outcome == Outcome::ServerTokenCap);
  CHECK(short_of->detail.find("after 300 completion tokens; soakd asked for at most 512") != std::string::npos);
}

TEST_CASE("server cap: every runtime gets advice that names the count") {
  for (RuntimeKind k : {RuntimeKind::LlamaCpp, RuntimeKind::MlxLm, RuntimeKind::Omlx, RuntimeKind::Vllm,
                        RuntimeKind::RapidMlx, RuntimeKind::Ollama, RuntimeKind::LmStudio, RuntimeKind::OpenAI}) {
    INFO(to_string(k));
    const std::string a = lift_server_cap(builtin_runtime(k).lift_cap, 777, 100, std::nullopt);
    CHECK(a.find("777") != std::string::npos);
    CHECK(a.find(": ") != std::string::npos);  // what happened: what to do
  }
  CHECK(lift_server_cap(builtin_runtime(RuntimeKind::Omlx).lift_cap, 32768, 10, std::nullopt).find("max_tokens") !=
        std::string::npos);
  CHECK(lift_server_cap(builtin_runtime(RuntimeKind::Vllm).lift_cap, 100, 10, std::nullopt).find("--max-model-len") !=
        std::string::npos);
}
