// Request builders: the bytes soakd sends. The no-max_tokens rule is asserted
// on the serialized body of every functional, tool, long-context and burst
// request (and every other chat probe).
#include <string>
#include <vector>

#include "probes/requests.h"
#include "probes/runtimes/catalog.h"
#include "tests/catch.h"

using namespace soak;
using namespace soak::probes;
using nlohmann::json;

namespace {

ChatRequestOptions options() {
  ChatRequestOptions o;
  o.model = "Qwen3-8B";
  return o;
}

std::vector<BuiltRequest> every_chat_request(const ChatRequestOptions& o) {
  PromptFixture f = long_context_fixture(1024);
  return {
      marker_request(o, "ZEBRA-4471"),
      stream_request(o),
      strict_json_request(o),
      tool_call_request(o),
      thinking_request(o, Thinking::On),
      thinking_request(o, Thinking::Off),
      repetition_request(o),
      long_context_request(o, f, "00000000000000aa"),
      long_context_request(o, f, "00000000000000aa"),
      shared_prefix_request(o, kDefaultFixtureSeed, "00000000000000bb", 0),
      shared_prefix_request(o, kDefaultFixtureSeed, "00000000000000bb", 1),
      burst_request(o, 0, "00000000000000cc"),
      burst_request(o, 7, "00000000000000dd"),
      cancel_request(o, "00000000000000ee"),
  };
}

}  // namespace

TEST_CASE("no chat probe sends max_tokens or max_completion_tokens (checked on the bytes)") {
  for (Streaming s : {Streaming::On, Streaming::Off}) {
    ChatRequestOptions o = options();
    o.streaming = s;
    for (const BuiltRequest& r : every_chat_request(o)) {
      INFO(to_string(r.kind) << ": " << r.body.substr(0, 200));
      CHECK(r.body.find("max_tokens") == std::string::npos);
      CHECK(r.body.find("max_completion_tokens") == std::string::npos);
      CHECK(r.body.find("\"n_predict\"") == std::string::npos);
      CHECK(r.path == "/v1/chat/completions");
    }
  }
}

TEST_CASE("every chat body carries the recorded sampling and asks for usage when streaming") {
  ChatRequestOptions o = options();
  o.sampling.temperature = 0.7;
  for (const BuiltRequest& r : every_chat_request(o)) {
    INFO(to_string(r.kind));
    json b = json::parse(r.body);
    CHECK(b["model"] == "Qwen3-8B");
    CHECK(b["temperature"].get<double>() == Approx(0.7));
    CHECK(b["top_p"].get<double>() == Approx(0.95));
    CHECK(b["top_k"] == 20);
    CHECK(b["stream"] == true);
    CHECK(b["stream_options"]["include_usage"] == true);
    CHECK(r.streaming == Streaming::On);
    CHECK(r.sampling_json == o.sampling.to_json());
    CHECK(b["messages"].is_array());
    CHECK_FALSE(b["messages"].empty());
  }
  ChatRequestOptions ns = options();
  ns.streaming = Streaming::Off;
  json b = json::parse(stream_request(ns).body);
  CHECK(b["stream"] == false);
  CHECK_FALSE(b.contains("stream_options"));
  // A cancel needs a stream to cut, whatever the options say.
  CHECK(json::parse(cancel_request(ns, "n").body)["stream"] == true);
}

TEST_CASE("serialization is stable: same inputs, same bytes; the key order is fixed") {
  ChatRequestOptions o = options();
  // The bytes pinned: a change to the order of keys, the schema or the
  // sampling parameters shows here (runtimes' prompt caches key on bytes).
  CHECK(
      strict_json_request(o).body ==
      R"({"model":"Qwen3-8B","messages":[{"role":"user","content":"Report the status of a nightly build as JSON: whether it is ok, its level (low, medium or high) and a short note."}],"temperature":0.6,"top_p":0.95,"top_k":20,"stream":true,"stream_options":{"include_usage":true},"response_format":{"type":"json_schema","json_schema":{"name":"build_status","strict":true,"schema":{"additionalProperties":false,"properties":{"level":{"enum":["low","medium","high"],"type":"string"},"note":{"maxLength":40,"type":"string"},"ok":{"type":"boolean"}},"required":["ok","level","note"],"type":"object"}}}})");
  std::string body = marker_request(o, "ZEBRA-4471").body;
  CHECK(
      body.rfind(
          R"({"model":"Qwen3-8B","messages":[{"role":"user","content":"Reply with exactly this code and nothing else: ZEBRA-4471"}],"temperature":0.6,"top_p":0.95,"top_k":20,"stream":true,"stream_options":{"include_usage":true}})",
          0) == 0);
}

TEST_CASE("thinking is sent only when the probe sets it") {
  ChatRequestOptions o = options();
  CHECK(marker_request(o, "X").body.find("chat_template_kwargs") == std::string::npos);
  CHECK_FALSE(marker_request(o, "X").thinking);
  BuiltRequest on = thinking_request(o, Thinking::On);
  BuiltRequest off = thinking_request(o, Thinking::Off);
  CHECK(json::parse(on.body)["chat_template_kwargs"]["enable_thinking"] == true);
  CHECK(json::parse(off.body)["chat_template_kwargs"]["enable_thinking"] == false);
  CHECK(on.thinking == true);
  CHECK(off.thinking == false);
  o.thinking = Thinking::Off;  // any probe can pin it
  CHECK(json::parse(marker_request(o, "X").body)["chat_template_kwargs"]["enable_thinking"] == false);
}

TEST_CASE("strict JSON: response_format json_schema with the schema the validator uses") {
  json b = json::parse(strict_json_request(options()).body);
  CHECK(b["response_format"]["type"] == "json_schema");
  CHECK(b["response_format"]["json_schema"]["strict"] == true);
  CHECK(b["response_format"]["json_schema"]["schema"] == strict_json_schema());
  CHECK(check_strict_json(R"({"ok":true,"level":"low","note":"all green"})", strict_json_schema()).outcome ==
        Outcome::Clean);
  CHECK(check_strict_json(R"({"ok":true,"level":"low"})", strict_json_schema()).outcome == Outcome::InvalidJson);
}

TEST_CASE("tool call: a required object argument, tool_choice only where supported") {
  json b = json::parse(tool_call_request(options()).body);
  REQUIRE(b["tools"].size() == 1);
  const json& fn = b["tools"][0]["function"];
  CHECK(fn["name"] == tool_probe_expectation().name);
  CHECK(fn["parameters"] == tool_probe_expectation().parameters);
  CHECK(fn["parameters"]["properties"]["location"]["type"] == "object");
  CHECK(fn["parameters"]["required"] == json::array({"location", "unit"}));
  CHECK(b["tool_choice"] == "required");
  CHECK(b["parallel_tool_calls"] == false);

  ChatRequestOptions ollama = options();
  ollama.dialect.tool_choice = builtin_runtime(RuntimeKind::Ollama).dialect.tool_choice;
  CHECK_FALSE(json::parse(tool_call_request(ollama).body).contains("tool_choice"));

  // The probe's own expectation tells a good call from an empty or flattened one.
  ToolCall good;
  good.name = "lookup_weather";
  good.arguments = R"({"location":{"city":"Lima","country":"Peru"},"unit":"celsius"})";
  CHECK(check_tool_calls({good}, tool_probe_expectation()).outcome == Outcome::Clean);
  ToolCall empty = good;
  empty.arguments = "{}";
  CHECK(check_tool_calls({empty}, tool_probe_expectation()).outcome == Outcome::EmptyToolArgs);
  ToolCall flat = good;
  flat.arguments = R"({"city":"Lima","country":"Peru","unit":"celsius"})";
  CHECK(check_tool_calls({flat}, tool_probe_expectation()).outcome == Outcome::InvalidToolCall);
  ToolCall hollow = good;
  hollow.arguments = R"({"location":{},"unit":"celsius"})";
  CHECK(check_tool_calls({hollow}, tool_probe_expectation()).outcome == Outcome::InvalidToolCall);
}

TEST_CASE("long context: fresh requests differ, the exact repeat is the same bytes") {
  ChatRequestOptions o = options();
  PromptFixture f = long_context_fixture(8192);
  BuiltRequest first = long_context_request(o, f, "1111111111111111");
  BuiltRequest repeat = long_context_request(o, f, "1111111111111111");
  BuiltRequest fresh = long_context_request(o, f, "2222222222222222");
  CHECK(first.body == repeat.body);
  CHECK(first.body != fresh.body);
  std::string content = json::parse(first.body)["messages"][0]["content"];
  CHECK(content.rfind("Session 1111111111111111\n\n", 0) == 0);
  CHECK(content.size() > 30000);
}

TEST_CASE("shared prefix: same system prompt, changing user turn") {
  ChatRequestOptions o = options();
  json a = json::parse(shared_prefix_request(o, kDefaultFixtureSeed, "s1", 0).body);
  json b = json::parse(shared_prefix_request(o, kDefaultFixtureSeed, "s1", 1).body);
  CHECK(a["messages"][0]["role"] == "system");
  CHECK(a["messages"][0]["content"] == b["messages"][0]["content"]);
  CHECK(a["messages"][1]["content"] != b["messages"][1]["content"]);
  CHECK(a["messages"][0]["content"].get<std::string>().size() > 7000);
}

TEST_CASE("burst members never share a prompt") {
  ChatRequestOptions o = options();
  CHECK(burst_request(o, 1, "aa").body != burst_request(o, 2, "aa").body);
  CHECK(burst_request(o, 1, "aa").body != burst_request(o, 1, "bb").body);
  CHECK(burst_request(o, 1, "aa").kind == ProbeKind::Burst);
}

TEST_CASE("embeddings and rerank bodies") {
  BuiltRequest e = embeddings_request("bge-m3", {"one", "two"});
  CHECK(e.path == "/v1/embeddings");
  CHECK(e.body == R"({"model":"bge-m3","input":["one","two"]})");
  BuiltRequest r = rerank_request("bge-reranker", "what is a bridge?", {"a", "b", "c"});
  CHECK(r.path == "/v1/rerank");
  json b = json::parse(r.body);
  CHECK(b["query"] == "what is a bridge?");
  CHECK(b["documents"].size() == 3);
  CHECK(b["top_n"] == 3);
  CHECK(r.kind == ProbeKind::Rerank);
}

TEST_CASE("dialect: Ollama takes thinking as reasoning_effort and has no top_k; the row says so") {
  // ollama openai/openai.go ChatCompletionRequest: reasoning_effort ("none" is
  // thinking off); no chat_template_kwargs, no top_k.
  ChatRequestOptions ollama = options();
  ollama.dialect.thinking_switch = builtin_runtime(RuntimeKind::Ollama).dialect.thinking_switch;
  ollama.dialect.top_k = builtin_runtime(RuntimeKind::Ollama).dialect.top_k;
  BuiltRequest off = thinking_request(ollama, Thinking::Off);
  json b = json::parse(off.body);
  CHECK(b["reasoning_effort"] == "none");
  CHECK_FALSE(b.contains("chat_template_kwargs"));
  CHECK_FALSE(b.contains("top_k"));
  json sampling = json::parse(off.sampling_json);
  CHECK(sampling["not_applied"] == json::array({"top_k"}));
  CHECK(json::parse(thinking_request(ollama, Thinking::On).body)["reasoning_effort"] == "medium");

  // llama.cpp (and the rest) take chat_template_kwargs and top_k.
  ChatRequestOptions llama = options();
  llama.dialect.thinking_switch = builtin_runtime(RuntimeKind::LlamaCpp).dialect.thinking_switch;
  llama.dialect.top_k = builtin_runtime(RuntimeKind::LlamaCpp).dialect.top_k;
  BuiltRequest l = thinking_request(llama, Thinking::Off);
  json lb = json::parse(l.body);
  CHECK(lb["chat_template_kwargs"]["enable_thinking"] == false);
  CHECK(lb.contains("top_k"));
  CHECK_FALSE(lb.contains("reasoning_effort"));
  CHECK_FALSE(json::parse(l.sampling_json).contains("not_applied"));
}
