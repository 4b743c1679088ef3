// Content checks: the JSON-Schema subset, strict JSON on the json_schema
// captures, tool-call validation on the tool captures (incl. the cut-off
// parallel call), the marker rule and the repetition detector.
#include <string>
#include <utility>

#include "probes/openai_chat.h"
#include "probes/validators.h"
#include "tests/catch.h"
#include "tests/unit/probes_capture_local.h"

using namespace soak;
using namespace soak::probes;
using nlohmann::json;

namespace {

ChatResult body_of(const std::string& capture) {
  return parse_chat_completion(probes_local::load_capture(capture).body, 0);
}

json request_schema(const std::string& request_file) {
  json req = json::parse(probes_local::read_fixture(request_file));
  return req["response_format"]["json_schema"]["schema"];
}

ToolExpectation weather_tool(const std::string& request_file) {
  json req = json::parse(probes_local::read_fixture(request_file));
  const json& fn = req["tools"][0]["function"];
  return ToolExpectation{fn["name"].get<std::string>(), fn["parameters"]};
}

ToolCall call(std::string name, std::string args) {
  ToolCall c;
  c.name = std::move(name);
  c.arguments = std::move(args);
  return c;
}

const char* kProse =
    "The probe sends a short prompt and expects an exact marker in the answer. When the runtime is healthy, "
    "the answer arrives within a second or two, carries a finish reason and a usage block, and names the "
    "model it came from. When it is not, the failure has a name: a stream that never ends, a body that never "
    "starts, a model that answers under an alias, or a tool call whose arguments are an empty object. Each of "
    "these has cost someone an evening, which is why the daemon writes every result down the moment it "
    "finishes, with the build, the host and the sampling parameters beside it. Numbers from different "
    "locators are never pooled, and a repeat of a long prompt is never mistaken for a fresh one, because a "
    "prefix cache can make a second request look ten times faster than the first one ever was.";

}  // namespace

TEST_CASE("schema subset: types, required, enum, lengths, additionalProperties, items") {
  json schema = json::parse(R"({
    "type":"object",
    "properties":{
      "ok":{"type":"boolean"},
      "level":{"type":"string","enum":["low","medium","high"]},
      "note":{"type":"string","maxLength":5,"minLength":1},
      "n":{"type":"integer","minimum":0,"maximum":10},
      "x":{"type":["number","null"]},
      "tags":{"type":"array","items":{"type":"string"},"maxItems":2}
    },
    "required":["ok","level"],
    "additionalProperties":false})");
  CHECK_FALSE(schema_violation(json::parse(R"({"ok":true,"level":"low"})"), schema));
  CHECK_FALSE(schema_violation(json::parse(R"({"ok":true,"level":"low","n":3.0,"x":null,"tags":["a"]})"), schema));
  CHECK(*schema_violation(json::parse(R"([])"), schema) == "$: expected object, got array");
  CHECK(*schema_violation(json::parse(R"({"ok":true})"), schema) == "$: missing required property 'level'");
  CHECK(schema_violation(json::parse(R"({"ok":1,"level":"low"})"), schema)->find("$.ok: expected boolean") == 0);
  CHECK(schema_violation(json::parse(R"({"ok":true,"level":"max"})"), schema)->find("is not one of") !=
        std::string::npos);
  CHECK(schema_violation(json::parse(R"({"ok":true,"level":"low","note":"toolong"})"), schema)->find("maxLength 5") !=
        std::string::npos);
  // Lengths count characters, not bytes: five two-byte characters fit.
  CHECK_FALSE(schema_violation(json::parse(R"({"ok":true,"level":"low","note":"ééééé"})"), schema));
  CHECK(schema_violation(json::parse(R"({"ok":true,"level":"low","note":""})"), schema)->find("minLength") !=
        std::string::npos);
  CHECK(schema_violation(json::parse(R"({"ok":true,"level":"low","n":2.5})"), schema)->find("expected integer") !=
        std::string::npos);
  CHECK(schema_violation(json::parse(R"({"ok":true,"level":"low","n":11})"), schema)->find("above maximum") !=
        std::string::npos);
  CHECK(*schema_violation(json::parse(R"({"ok":true,"level":"low","extra":1})"), schema) ==
        "$.extra: property not allowed (additionalProperties is false)");
  CHECK(*schema_violation(json::parse(R"({"ok":true,"level":"low","tags":["a",2]})"), schema) ==
        "$.tags[1]: expected string, got integer");
  CHECK(schema_violation(json::parse(R"({"ok":true,"level":"low","x":"s"})"), schema)->find("number|null") !=
        std::string::npos);
}

TEST_CASE("strict JSON on the json_schema captures") {
  // Bounded schema: valid JSON that conforms (note "/> naturally" is 12 characters).
  Verdict bounded = check_strict_json(body_of("post-v1-chat-completions-json-schema-bounded.http").content,
                                      request_schema("post-v1-chat-completions-json-schema-bounded.request.json"));
  CHECK(bounded.outcome == Outcome::Clean);
  Verdict unbounded = check_strict_json(body_of("post-v1-chat-completions-json-schema-unbounded.http").content,
                                        request_schema("post-v1-chat-completions-json-schema-unbounded.request.json"));
  CHECK(unbounded.outcome == Outcome::Clean);
  // json_object without a schema is not enforced by llama.cpp: free text fails the strict check.
  Verdict free = check_strict_json(body_of("post-v1-chat-completions-json-object.http").content,
                                   request_schema("post-v1-chat-completions-json-schema-bounded.request.json"));
  CHECK(free.outcome == Outcome::InvalidJson);
  CHECK(free.detail.find("not JSON") != std::string::npos);
}

TEST_CASE("strict JSON: fences, empty, and schema violations are invalid_json") {
  json schema = json::parse(R"({"type":"object","required":["a"]})");
  CHECK(check_strict_json("  {\"a\":1}\n", schema).outcome == Outcome::Clean);
  CHECK(check_strict_json("```json\n{\"a\":1}\n```", schema).outcome == Outcome::InvalidJson);
  CHECK(check_strict_json("", schema).outcome == Outcome::InvalidJson);
  Verdict v = check_strict_json("{\"b\":1}", schema);
  CHECK(v.outcome == Outcome::InvalidJson);
  CHECK(v.detail == "$: missing required property 'a'");
}

TEST_CASE("tool calls on the captures: valid, cut-off parallel, and content-only answers") {
  ToolExpectation weather = weather_tool("post-v1-chat-completions-tools-required-prefill.request.json");
  CHECK(weather.name == "lookup_weather");
  CHECK(check_tool_calls(body_of("post-v1-chat-completions-tools-required-prefill.http").tool_calls, weather).outcome ==
        Outcome::Clean);

  // One complete call, then a cut-off second call whose arguments are `{`: invalid, not empty.
  Verdict parallel =
      check_tool_calls(body_of("post-v1-chat-completions-tools-required-prefill-parallel.http").tool_calls, weather);
  CHECK(parallel.outcome == Outcome::InvalidToolCall);
  CHECK(parallel.detail.find("tool_calls[1].arguments is not valid JSON") != std::string::npos);

  // tool_choice required but the model answered in prose.
  Verdict prose = check_tool_calls(body_of("post-v1-chat-completions-tools-required-enum.http").tool_calls, weather);
  CHECK(prose.outcome == Outcome::InvalidToolCall);
  CHECK(prose.detail == "no tool call in the answer");
}

TEST_CASE("tool calls: empty arguments are their own class") {
  ToolExpectation weather = weather_tool("post-v1-chat-completions-tools-required-prefill.request.json");
  CHECK(check_tool_calls({call("lookup_weather", "{}")}, weather).outcome == Outcome::EmptyToolArgs);
  CHECK(check_tool_calls({call("lookup_weather", " { } ")}, weather).outcome == Outcome::EmptyToolArgs);
  CHECK(check_tool_calls({call("lookup_weather", "")}, weather).outcome == Outcome::EmptyToolArgs);
  // Without required keys, {} is a fine call.
  ToolExpectation no_args{"ping", json::parse(R"({"type":"object","properties":{}})")};
  CHECK(check_tool_calls({call("ping", "{}")}, no_args).outcome == Outcome::Clean);

  Verdict wrong_name = check_tool_calls({call("get_weather", R"({"city":"Lima","unit":"celsius"})")}, weather);
  CHECK(wrong_name.outcome == Outcome::InvalidToolCall);
  CHECK(wrong_name.detail.find("'get_weather'") != std::string::npos);
  CHECK(check_tool_calls({call("lookup_weather", R"(["Lima"])")}, weather).outcome == Outcome::InvalidToolCall);
  Verdict missing = check_tool_calls({call("lookup_weather", R"({"city":"Lima"})")}, weather);
  CHECK(missing.outcome == Outcome::InvalidToolCall);
  CHECK(missing.detail.find("missing required property 'unit'") != std::string::npos);
  CHECK(check_tool_calls({call("lookup_weather", R"({"city":"Oslo","unit":"celsius"})")}, weather).outcome ==
        Outcome::InvalidToolCall);  // not in the enum
  CHECK(check_tool_calls({call("lookup_weather", R"({"city":7,"unit":"celsius"})")}, weather).outcome ==
        Outcome::InvalidToolCall);
}

TEST_CASE("marker: exact, in the answer, not in the reasoning") {
  ChatResult r;
  r.content = "Sure: ZEBRA-4471.";
  CHECK(check_marker(r, "ZEBRA-4471").outcome == Outcome::Clean);
  CHECK(check_marker(r, "zebra-4471").outcome == Outcome::MissingMarker);  // exact, case included
  ChatResult thought;
  thought.reasoning = "The user wants ZEBRA-4471.";
  thought.content = "OK.";
  Verdict v = check_marker(thought, "ZEBRA-4471");
  CHECK(v.outcome == Outcome::MissingMarker);
  CHECK(v.detail.find("only in the reasoning") != std::string::npos);
}

TEST_CASE("repetition: loops trip, prose and the captures' gibberish do not") {
  CHECK_FALSE(detect_repetition(kProse).looping);
  for (const char* f :
       {"post-v1-chat-completions-json-object.http", "post-v1-chat-completions-nonstream.http",
        "post-v1-chat-completions-thinking-default.http", "post-v1-chat-completions-enable-thinking-false.http"}) {
    CHECK_FALSE(detect_repetition(body_of(f).content).looping);
  }
  // The busy stream's full text (content of its captured events).
  ChatStreamAccumulator acc;
  int64_t t = 0;
  for (const auto& e : probes_local::sse_data_events(probes_local::load_capture("busy-first-stream.sse.http").body))
    acc.on_event(e, ++t);
  CHECK_FALSE(detect_repetition(acc.result().content).looping);

  std::string loop;
  for (int i = 0; i < 60; ++i) loop += "I need to check the file again. ";
  RepetitionReport rep = detect_repetition(std::string(kProse) + loop);
  CHECK(rep.looping);
  CHECK(rep.unit_chars == 32);
  CHECK(rep.loop_chars >= 60 * 32 - 32);

  CHECK(detect_repetition(std::string(kProse) + std::string(1200, '!')).looping);
  CHECK(detect_repetition(std::string(300, '\n')).looping);

  // A loop cut mid-unit is still a loop.
  CHECK(detect_repetition(loop.substr(0, loop.size() - 7)).looping);

  // Too short to call a loop, or too small a share of the tail.
  CHECK_FALSE(detect_repetition("ha ha ha ha ha ha ha ha").looping);
  std::string long_prose;
  for (int i = 0; i < 8; ++i) long_prose += kProse;
  std::string short_loop;
  for (int i = 0; i < 10; ++i) short_loop += "again and again ";
  CHECK_FALSE(detect_repetition(long_prose + short_loop).looping);

  // A table rule inside prose is periodic but short.
  CHECK_FALSE(detect_repetition(std::string(kProse) + "\n|" + std::string(80, '-') + "|\n" + kProse).looping);
}

TEST_CASE("check_repetition looks at reasoning when there is no answer") {
  ChatResult r;
  for (int i = 0; i < 100; ++i) r.reasoning += "Wait, let me reconsider. ";
  Verdict v = check_repetition(r);
  CHECK(v.outcome == Outcome::Repetition);
  CHECK(v.detail.find("25-byte unit") != std::string::npos);
  r.content = kProse;
  CHECK(check_repetition(r).outcome == Outcome::Clean);
}

TEST_CASE("pooling answers: embeddings and rerank shapes") {
  CHECK(
      check_embeddings(
          R"({"object":"list","data":[{"index":0,"embedding":[0.1,-0.2]},{"index":1,"embedding":[0.3,0.4]}],"usage":{"prompt_tokens":4}})",
          2)
          .outcome == Outcome::Clean);
  CHECK(check_embeddings(R"({"data":[{"embedding":[0.1,0.2]}]})", 2).outcome == Outcome::MalformedResponse);
  CHECK(check_embeddings(R"({"data":[{"embedding":[0.1]},{"embedding":[0.1,0.2]}]})", 2).outcome ==
        Outcome::MalformedResponse);
  CHECK(check_embeddings(R"({"data":[{"embedding":[]}]})", 1).outcome == Outcome::MalformedResponse);
  CHECK(check_embeddings(R"({"data":[{"embedding":["x"]}]})", 1).outcome == Outcome::MalformedResponse);
  CHECK(check_embeddings("oops", 1).outcome == Outcome::MalformedResponse);

  CHECK(check_rerank(
            R"({"model":"r","results":[{"index":2,"relevance_score":0.9},{"index":0,"relevance_score":-1.5}]})", 3)
            .outcome == Outcome::Clean);
  CHECK(check_rerank(R"({"results":[{"index":3,"relevance_score":0.9}]})", 3).outcome == Outcome::MalformedResponse);
  CHECK(check_rerank(R"({"results":[{"index":0}]})", 3).outcome == Outcome::MalformedResponse);
  CHECK(check_rerank(R"({"results":[]})", 3).outcome == Outcome::MalformedResponse);
}
