// The fake runtime's pure parts on literal strings and on the real captures:
// the request parser, the tokenizer rule, reply planning, the CLI, and the
// wire shapes compared key by key with tests/fixtures/llama-server.
#include <string>

#include "tests/catch.h"
#include "tests/fake_runtime/cli.h"
#include "tests/fake_runtime/http_request_parser.h"
#include "tests/fake_runtime/shapes.h"
#include "tests/fake_runtime/test_support.h"
#include "tests/fake_runtime/text_model.h"

using namespace soak::fake;
using namespace soak::fake::testing;
using json = nlohmann::json;

namespace {

std::vector<ParseEvent> parse_all(HttpRequestParser& p) {
  std::vector<ParseEvent> out;
  while (true) {
    ParseEvent e = p.next();
    if (e.kind == ParseEvent::Kind::NeedMore) break;
    out.push_back(std::move(e));
    if (out.back().kind == ParseEvent::Kind::Error) break;
  }
  return out;
}

json parsed(const ojson& j) { return json::parse(j.dump()); }

}  // namespace

TEST_CASE("request parser: a POST split at every byte boundary parses the same") {
  const std::string raw =
      "POST /v1/chat/completions?x=1 HTTP/1.1\r\nHost: a\r\nContent-Length: 11\r\n\r\n{\"a\":\"b c\"}";
  for (size_t cut = 0; cut <= raw.size(); ++cut) {
    HttpRequestParser p;
    p.feed(raw.substr(0, cut));
    auto first = parse_all(p);
    p.feed(raw.substr(cut));
    auto rest = parse_all(p);
    first.insert(first.end(), rest.begin(), rest.end());
    REQUIRE(first.size() == 1);
    REQUIRE(first[0].kind == ParseEvent::Kind::Request);
    CHECK(first[0].request.method == "POST");
    CHECK(first[0].request.path == "/v1/chat/completions");
    CHECK(first[0].request.query_param("x") == "1");
    CHECK(first[0].request.body == "{\"a\":\"b c\"}");
    CHECK(first[0].request.keep_alive);
  }
}

TEST_CASE("request parser: pipelining, Connection: close, HTTP/1.0, bare LF") {
  HttpRequestParser p;
  p.feed("GET /health HTTP/1.1\r\n\r\nGET /props HTTP/1.1\r\nConnection: close\r\n\r\nGET /x HTTP/1.0\n\n");
  auto ev = parse_all(p);
  REQUIRE(ev.size() == 3);
  CHECK(ev[0].request.path == "/health");
  CHECK(ev[0].request.keep_alive);
  CHECK(ev[1].request.path == "/props");
  CHECK_FALSE(ev[1].request.keep_alive);
  CHECK(ev[2].request.minor_version == 0);
  CHECK_FALSE(ev[2].request.keep_alive);
}

TEST_CASE("request parser: Expect 100-continue is reported once, before the body") {
  HttpRequestParser p;
  p.feed("POST /v1/embeddings HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n");
  auto ev = parse_all(p);
  REQUIRE(ev.size() == 1);
  CHECK(ev[0].kind == ParseEvent::Kind::Continue);
  CHECK(parse_all(p).empty());
  p.feed("{}");
  ev = parse_all(p);
  REQUIRE(ev.size() == 1);
  CHECK(ev[0].request.body == "{}");
}

TEST_CASE("request parser: malformed input becomes an error status") {
  auto first_error = [](const std::string& raw) {
    HttpRequestParser p;
    p.feed(raw);
    auto ev = parse_all(p);
    return ev.empty() || ev.back().kind != ParseEvent::Kind::Error ? 0 : ev.back().status;
  };
  CHECK(first_error("NONSENSE\r\n\r\n") == 400);
  CHECK(first_error("GET / HTTP/2.0\r\n\r\n") == 505);
  CHECK(first_error("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n") == 501);
  CHECK(first_error("POST / HTTP/1.1\r\nContent-Length: x\r\n\r\n") == 400);
  CHECK(first_error("GET / HTTP/1.1\r\nX: " + std::string(kMaxHeaderBytes, 'a')) == 431);
}

TEST_CASE("tokenizer rule: pieces of up to 4 bytes per word, specials whole, shared prefixes shared") {
  auto toks = tokenize("Hello world");
  REQUIRE(toks.size() == 4);
  CHECK(toks[0].piece == "Hell");
  CHECK(toks[1].piece == "o");
  CHECK(toks[2].piece == " worl");
  CHECK(toks[3].piece == "d");
  auto special = tokenize("<|im_start|>user\nhi<|im_end|>");
  REQUIRE(special.size() == 4);
  CHECK(special[0].piece == "<|im_start|>");
  CHECK(special[3].piece == "<|im_end|>");
  auto a = token_ids("same system prompt. user turn one");
  auto b = token_ids("same system prompt. user turn two");
  CHECK(common_prefix(a, a) == a.size());
  CHECK(common_prefix(a, b) == a.size() - 1);
  CHECK(count_tokens("") == 0);
}

TEST_CASE("marker prompts are answered with the marker alone") {
  CHECK(find_marker("Reply with exactly: MARKER-7f3a and nothing else.") == "MARKER-7f3a");
  CHECK(find_marker("Reply with exactly: \"banana42\".") == "banana42");
  CHECK(find_marker("Reply with exactly this code and nothing else: RIVER-4821") == "RIVER-4821");
  CHECK(find_marker("lots of filler\n\nReply with one short sentence that contains the code OAK-1234.") == "OAK-1234");
  CHECK_FALSE(find_marker("Tell me a story about a well-known place.").has_value());
  json req = chat_body("Reply with exactly: MARKER-xyz", false);
  ReplyPlan plan = plan_reply(req, render_chat_prompt(req), Scenario::Healthy, Knobs{});
  std::string content;
  for (const auto& p : plan.pieces) content += p.text;
  CHECK(content == "MARKER-xyz");
  CHECK(plan.finish_reason == "stop");
}

TEST_CASE("json_schema replies satisfy the fixture's bounded schema; invalid-json breaks them") {
  json req = json::parse(read_file(std::string(SOAKD_FIXTURES_DIR) +
                                   "/llama-server/post-v1-chat-completions-json-schema-bounded.request.json"));
  req.erase("max_tokens");
  std::string prompt = render_chat_prompt(req);
  auto text_of = [](const ReplyPlan& p) {
    std::string s;
    for (const auto& x : p.pieces) s += x.text;
    return s;
  };
  json doc = json::parse(text_of(plan_reply(req, prompt, Scenario::Healthy, Knobs{})));
  CHECK(doc["ok"].is_boolean());
  CHECK((doc["level"] == "low" || doc["level"] == "medium" || doc["level"] == "high"));
  CHECK(doc["note"].get<std::string>().size() <= 12);
  CHECK(keys(doc) == std::set<std::string>{"ok", "level", "note"});
  CHECK_FALSE(json::accept(text_of(plan_reply(req, prompt, Scenario::InvalidJson, Knobs{}))));
}

TEST_CASE("tool requests get one call with arguments for the tool; empty-tool-args sends {}") {
  json req = json::parse(read_file(std::string(SOAKD_FIXTURES_DIR) +
                                   "/llama-server/post-v1-chat-completions-tools-required-enum.request.json"));
  std::string prompt = render_chat_prompt(req);
  ReplyPlan plan = plan_reply(req, prompt, Scenario::Healthy, Knobs{});
  REQUIRE(plan.tool_call);
  CHECK(plan.tool_name == "lookup_weather");
  CHECK(plan.finish_reason == "tool_calls");
  std::string args;
  for (const auto& p : plan.pieces) args += p.text;
  json a = json::parse(args);
  for (const auto& r : req["tools"][0]["function"]["parameters"]["required"]) CHECK(a.contains(r.get<std::string>()));
  ReplyPlan empty = plan_reply(req, prompt, Scenario::EmptyToolArgs, Knobs{});
  std::string none;
  for (const auto& p : empty.pieces) none += p.text;
  CHECK(none == "{}");
}

TEST_CASE("length limits: max_tokens, the mlx-lm cap, thinking and repetition") {
  json req = chat_body("Tell me a story.", false);
  Knobs k;
  ReplyPlan plain = plan_reply(req, render_chat_prompt(req), Scenario::Healthy, k);
  CHECK(plain.pieces.size() == static_cast<size_t>(kDefaultReplyTokens));
  CHECK(plain.finish_reason == "stop");
  req["max_tokens"] = 5;
  ReplyPlan cut = plan_reply(req, render_chat_prompt(req), Scenario::Healthy, k);
  CHECK(cut.pieces.size() == 5);
  CHECK(cut.finish_reason == "length");
  req.erase("max_tokens");
  Knobs mlx = scenario_defaults(Scenario::RepetitionLoop, Flavour::MlxLm);
  mlx.repetition_tokens = 2 * kMlxLmServerMaxTokens;
  ReplyPlan loop = plan_reply(req, render_chat_prompt(req), Scenario::RepetitionLoop, mlx);
  CHECK(loop.pieces.size() == static_cast<size_t>(kMlxLmServerMaxTokens));
  CHECK(loop.pieces[0].text == loop.pieces[4].text);
  req["chat_template_kwargs"] = {{"enable_thinking", true}};
  ReplyPlan think = plan_reply(req, render_chat_prompt(req), Scenario::Healthy, k);
  CHECK(think.pieces.front().kind == PieceKind::Reasoning);
  CHECK(think.pieces.back().kind == PieceKind::Content);
  req["chat_template_kwargs"] = {{"enable_thinking", false}};
  ReplyPlan no_think = plan_reply(req, render_chat_prompt(req), Scenario::Healthy, k);
  CHECK(no_think.pieces.front().kind == PieceKind::Content);
}

TEST_CASE("markup-leak: what each leak knob writes into content; tool calls are left as they are") {
  auto plan = [](json req, const std::string& leak) {
    Knobs k;
    k.leak = leak;
    return plan_reply(req, render_chat_prompt(req), Scenario::MarkupLeak, k);
  };
  auto content_of = [](const ReplyPlan& p) {
    std::string s;
    for (const auto& x : p.pieces)
      if (x.kind == PieceKind::Content) s += x.text;
    return s;
  };
  auto reasoning_of = [](const ReplyPlan& p) {
    std::string s;
    for (const auto& x : p.pieces)
      if (x.kind == PieceKind::Reasoning) s += x.text;
    return s;
  };
  const json marker = chat_body("Reply with exactly this code and nothing else: RIVER-4821", false);
  json thinking = chat_body("What is 17 multiplied by 23?", false);
  thinking["chat_template_kwargs"] = {{"enable_thinking", true}};

  CHECK(content_of(plan(marker, "think")) == "<think>\n\n</think>\n\nRIVER-4821");
  CHECK(content_of(plan(marker, "")) == content_of(plan(marker, "think")));  // think is the default
  const ReplyPlan thought = plan(thinking, "think");
  CHECK(reasoning_of(thought).empty());  // the parser separated nothing
  CHECK(content_of(thought).rfind("<think>\nLet me think", 0) == 0);
  CHECK(content_of(thought).find("\n</think>\n\n") != std::string::npos);

  CHECK(content_of(plan(marker, "im-end")) == "RIVER-4821<|im_end|>");
  CHECK_FALSE(reasoning_of(plan(thinking, "im-end")).empty());  // reasoning stays where it was

  CHECK(content_of(plan(marker, "harmony")) == "<|channel|>final<|message|>RIVER-4821");
  CHECK(content_of(plan(thinking, "harmony")).rfind("<|channel|>analysis<|message|>Let me think", 0) == 0);
  CHECK(content_of(plan(thinking, "harmony")).find("<|end|><|start|>assistant<|channel|>final<|message|>") !=
        std::string::npos);

  const std::string fffd = content_of(plan(marker, "fffd"));
  CHECK(fffd.find("\xEF\xBF\xBD") != std::string::npos);
  CHECK(fffd.find("RIVER-48") == 0);

  Knobs mistral;
  mistral.leak = "eos";
  mistral.eos_token = "</s>";
  CHECK(content_of(plan_reply(marker, render_chat_prompt(marker), Scenario::MarkupLeak, mistral)) == "RIVER-4821</s>");
  CHECK(content_of(plan(marker, "eos")) == "RIVER-4821<|im_end|>");  // the default EOS

  json tools = json::parse(read_file(std::string(SOAKD_FIXTURES_DIR) +
                                     "/llama-server/post-v1-chat-completions-tools-required-enum.request.json"));
  const ReplyPlan call = plan(tools, "im-end");
  REQUIRE(call.tool_call);
  CHECK(content_of(call).empty());

  // The CLI takes only the names it knows.
  CHECK(parse_cli({"--scenario", "markup-leak", "--leak", "harmony"}).ok());
  auto bad = parse_cli({"--scenario", "markup-leak", "--leak", "bos"});
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.message().find("think, im-end, harmony, fffd, eos") != std::string::npos);
}

TEST_CASE("llama.cpp stream chunks carry the same keys as the captured stream") {
  auto events = sse_data(read_capture("post-v1-chat-completions-stream-include-usage.sse.http").body);
  REQUIRE(events.size() >= 4);
  json role = json::parse(events.front());
  json piece = json::parse(events[1]);
  json finish = json::parse(events[events.size() - 3]);
  json usage = json::parse(events[events.size() - 2]);
  ChatIds ids{"chatcmpl-x", 1, "tiny.gguf", "b9928-81ff7abe5"};
  GenTimings t{3, 12, 3.9, 12, 36.2, 0, 0, 0, 0};
  json my_role = parsed(*chunk_role(Flavour::LlamaCpp, ids));
  json my_piece = parsed(chunk_piece(Flavour::LlamaCpp, ids, {PieceKind::Content, "x"}, nullptr));
  json my_finish = parsed(chunk_finish(Flavour::LlamaCpp, ids, "length", nullptr));
  json my_usage = parsed(chunk_usage(Flavour::LlamaCpp, ids, t));
  CHECK(keys(my_role) == keys(role));
  CHECK(keys(my_role["choices"][0]) == keys(role["choices"][0]));
  CHECK(my_role["choices"][0]["delta"] == role["choices"][0]["delta"]);
  CHECK(keys(my_piece["choices"][0]["delta"]) == keys(piece["choices"][0]["delta"]));
  CHECK(keys(my_finish) == keys(finish));
  CHECK(my_finish["choices"][0]["delta"] == finish["choices"][0]["delta"]);
  CHECK(keys(my_usage) == keys(usage));
  CHECK(my_usage["choices"] == json::array());
  CHECK(keys(my_usage["usage"]) == keys(usage["usage"]));
  CHECK(keys(my_usage["timings"]) == keys(usage["timings"]));
  CHECK(my_usage["usage"]["prompt_tokens"] == 15);

  // Without include_usage the timings ride on the finish chunk.
  auto no_usage = sse_data(read_capture("post-v1-chat-completions-stream-no-usage.sse.http").body);
  json finish_t = json::parse(no_usage[no_usage.size() - 2]);
  CHECK(keys(parsed(chunk_finish(Flavour::LlamaCpp, ids, "length", &t))) == keys(finish_t));

  GenTimings draft = t;
  draft.draft_n = 20;
  draft.draft_n_accepted = 19;
  json with_draft = parsed(chunk_usage(Flavour::LlamaCpp, ids, draft));
  CHECK(with_draft["timings"]["draft_n_accepted"] == 19);
  CHECK_FALSE(my_usage["timings"].contains("draft_n"));
}

TEST_CASE("llama.cpp tool-call chunks and completions match the captures") {
  auto events = sse_data(read_capture("post-v1-chat-completions-tools-required-prefill-stream.sse.http").body);
  json open = json::parse(events[1]);
  json more = json::parse(events[2]);
  ChatIds ids{"chatcmpl-x", 1, "tiny.gguf", "b9928-81ff7abe5"};
  ToolCallOut tool{"id1", "lookup_weather", ""};
  json my_open = parsed(chunk_piece(Flavour::LlamaCpp, ids, {PieceKind::ToolArgs, "{"}, &tool));
  json my_more = parsed(chunk_piece(Flavour::LlamaCpp, ids, {PieceKind::ToolArgs, "\""}, nullptr));
  CHECK(keys(my_open["choices"][0]["delta"]["tool_calls"][0]) == keys(open["choices"][0]["delta"]["tool_calls"][0]));
  CHECK(keys(my_more["choices"][0]["delta"]["tool_calls"][0]) == keys(more["choices"][0]["delta"]["tool_calls"][0]));

  json full = json::parse(read_capture("post-v1-chat-completions-tools-required-prefill.http").body);
  CompletionOut out;
  out.finish_reason = "tool_calls";
  out.tool = ToolCallOut{"id1", "lookup_weather", "{}"};
  json mine = parsed(completion_body(Flavour::LlamaCpp, ids, out, GenTimings{}));
  CHECK(keys(mine) == keys(full));
  CHECK(keys(mine["choices"][0]["message"]) == keys(full["choices"][0]["message"]));
  CHECK(keys(mine["choices"][0]["message"]["tool_calls"][0]) == keys(full["choices"][0]["message"]["tool_calls"][0]));
  CHECK(keys(mine["timings"]) == keys(full["timings"]));
}

TEST_CASE("server endpoints: health, slots, props and metrics use the captured names") {
  ServerView v;
  v.model = "tiny.gguf";
  v.build = "b9928-81ff7abe5";
  v.slots = 2;
  v.ctx_per_slot = 2048;
  CHECK(parsed(health_body(Flavour::LlamaCpp, true, v)) ==
        json::parse(read_capture("get-health-during-model-load.http").body));
  CHECK(parsed(health_body(Flavour::LlamaCpp, false, v)) == json::parse(read_capture("get-health.http").body));

  json props = json::parse(read_capture("get-props.http").body);
  json my_props = parsed(props_body(v));
  for (const auto& k : keys(my_props)) CHECK(props.contains(k));
  CHECK(my_props["build_info"] == props["build_info"]);
  CHECK(my_props["total_slots"] == props["total_slots"]);
  CHECK(my_props["default_generation_settings"]["n_ctx"] == props["default_generation_settings"]["n_ctx"]);

  json models = json::parse(read_capture("get-v1-models.http").body);
  json my_models = parsed(models_body(Flavour::LlamaCpp, v));
  CHECK(keys(my_models) == keys(models));
  CHECK(keys(my_models["data"][0]) == keys(models["data"][0]));
  CHECK(keys(my_models["data"][0]["meta"]) == keys(models["data"][0]["meta"]));
  CHECK(my_models["data"][0]["id"] == models["data"][0]["id"]);

  CHECK(parsed(slots_body({SlotView{0, 2048}, SlotView{1, 2048}})) ==
        json::parse(read_capture("get-slots-idle.http").body));
  json busy = json::parse(read_capture("get-slots-while-busy.http").body);
  SlotView s{0, 2048};
  s.is_processing = s.has_task = true;
  json my_busy = parsed(slots_body({s}));
  for (const auto& k : keys(my_busy[0])) CHECK(busy[0].contains(k));
  CHECK(keys(my_busy[0]["next_token"][0]) == keys(busy[0]["next_token"][0]));

  auto names = [](const std::string& text) {
    std::vector<std::string> out;
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line))
      if (!line.empty() && line[0] != '#') out.push_back(line.substr(0, line.find(' ')));
    return out;
  };
  CHECK(names(metrics_text(MetricsView{})) == names(read_capture("get-metrics-fresh.http").body));
}

TEST_CASE("CLI: listen specs, per-listener scenario and flavour, knob overrides, errors") {
  auto o = parse_cli(
      {"--listen", "127.0.0.1:18431", "--listen", "18432:fifo:mlx-lm", "--token-interval-ms", "2", "--build=b9502"});
  REQUIRE(o.ok());
  REQUIRE(o->listeners.size() == 2);
  CHECK(o->listeners[0].port == 18431);
  CHECK(o->listeners[0].scenario == Scenario::Healthy);
  CHECK(o->listeners[1].scenario == Scenario::FifoSerial);
  CHECK(o->listeners[1].flavour == Flavour::MlxLm);
  CHECK(o->listeners[1].knobs.slots == 1);
  CHECK(o->listeners[1].knobs.server_max_tokens == kMlxLmServerMaxTokens);
  CHECK(o->listeners[1].knobs.token_interval_ms == 2);
  CHECK(o->listeners[0].knobs.build == "b9502");
  CHECK(parse_cli({}).value().listeners.size() == 1);
  CHECK(parse_cli({"--help"}).value().help);
  CHECK_FALSE(parse_cli({"--scenario", "nope"}).ok());
  CHECK_FALSE(parse_cli({"--slots", "-1"}).ok());
  CHECK_FALSE(parse_cli({"--bogus", "1"}).ok());
  CHECK_FALSE(parse_cli({"--listen", "70000"}).ok());

  auto cfg = parse_config_json(
      R"({"defaults": {"token_interval_ms": 3}, "listeners": [{"port": 0, "scenario": "stall", "flavour": "omlx",
          "stall_after_tokens": 7, "build": "0.7.1"}]})");
  REQUIRE(cfg.ok());
  REQUIRE(cfg->size() == 1);
  CHECK((*cfg)[0].flavour == Flavour::Omlx);
  CHECK((*cfg)[0].knobs.stall_after_tokens == 7);
  CHECK((*cfg)[0].knobs.token_interval_ms == 3);
  CHECK((*cfg)[0].knobs.build == "0.7.1");
  CHECK_FALSE(parse_config_json("[]").ok());
}
