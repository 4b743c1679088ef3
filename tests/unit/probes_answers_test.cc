// What every chat answer is judged on (probes/answer_check.h): leaked markup
// in its content (each marker, control characters, U+FFFD, the runtime's own
// template tokens; clean prose, JSON, code and real llama-server answers), a
// loop on any answer, an empty answer where text was expected (reasoning alone
// is not an answer), the loop figure on every row, the long-context code word.
#include <nlohmann/json.hpp>

#include "probes/answer_check.h"
#include "probes/runtimes/catalog.h"
#include "tests/catch.h"
#include "tests/unit/probes_capture_local.h"

using namespace soak;
using namespace soak::probes;

namespace {

constexpr const char* kProse =
    "The build finished without warnings. Two tests were slow on the first run and fast on the second, "
    "which points at a cold cache rather than a regression; the figures are in the attached table.";

std::string looped(int times) {
  std::string s = kProse;
  for (int i = 0; i < times; ++i) s += " and the same again";
  return s;
}

}  // namespace

TEST_CASE("an answer with content or a tool call passes; an empty one is empty_answer") {
  ChatResult r;
  r.finish_reason = "stop";
  r.content = kProse;
  CHECK_FALSE(check_answer(r, answer_repetition(r), true));

  ChatResult tool;
  tool.finish_reason = "tool_calls";
  ToolCall call;
  call.id = "call_1";
  call.name = "lookup_weather";
  call.arguments = R"({"location":{"city":"Lima"}})";
  tool.tool_calls.push_back(call);
  CHECK_FALSE(check_answer(tool, answer_repetition(tool), true));

  ChatResult empty;
  empty.finish_reason = "stop";
  empty.content = "  \n";
  auto v = check_answer(empty, answer_repetition(empty), true);
  REQUIRE(v);
  CHECK(v->outcome == Outcome::EmptyAnswer);
  CHECK(v->detail.find("no answer content and no tool call (finish_reason stop)") != std::string::npos);

  SECTION("reasoning alone is not an answer") {
    ChatResult thought;
    thought.finish_reason = "stop";
    thought.reasoning = "The user asks for a code. The code is OAK-1234.";
    auto t = check_answer(thought, answer_repetition(thought), true);
    REQUIRE(t);
    CHECK(t->outcome == Outcome::EmptyAnswer);
    CHECK(t->detail.find("came as reasoning") != std::string::npos);
    CHECK(t->detail.find(std::to_string(thought.reasoning.size()) + " bytes") != std::string::npos);
  }
  SECTION("a stream the probe cuts on purpose is not asked for an answer") {
    CHECK_FALSE(check_answer(empty, answer_repetition(empty), false));
  }
}

TEST_CASE("a loop is caught on any answer, before the empty check, with its figure") {
  ChatResult r;
  r.finish_reason = "length";
  r.content = looped(60);
  const RepetitionReport rep = answer_repetition(r);
  auto v = check_answer(r, rep, true);
  REQUIRE(v);
  CHECK(v->outcome == Outcome::Repetition);
  CHECK(v->detail.find("19-byte unit") != std::string::npos);
  // A cut stream is not asked for text, but a loop is a loop all the same.
  REQUIRE(check_answer(r, rep, false));
  CHECK(check_answer(r, rep, false)->outcome == Outcome::Repetition);

  // Looping reasoning with no content is a loop, not an empty answer.
  ChatResult thinking;
  thinking.reasoning = looped(80);
  auto t = check_answer(thinking, answer_repetition(thinking), true);
  REQUIRE(t);
  CHECK(t->outcome == Outcome::Repetition);
}

TEST_CASE("every answer carries the detector's figure, looping or not") {
  ChatResult prose;
  prose.content = kProse;
  const RepetitionReport ok = answer_repetition(prose);
  CHECK_FALSE(ok.looping);
  CHECK(ok.tail_chars == std::string(kProse).size());
  CHECK(ok.longest_run_chars < 256);

  ChatResult loop;
  loop.content = looped(60);
  const RepetitionReport bad = answer_repetition(loop);
  CHECK(bad.looping);
  CHECK(bad.longest_run_chars >= 60 * 19);
  CHECK(bad.longest_run_chars >= bad.loop_chars);

  // A short run under the threshold is still measured.
  ChatResult short_run;
  short_run.content = looped(5);
  const RepetitionReport some = answer_repetition(short_run);
  CHECK_FALSE(some.looping);
  CHECK(some.longest_run_chars >= 5 * 19);

  auto j = nlohmann::json::parse(with_loop_figure(R"({"sized_by":"tokenize"})", bad));
  CHECK(j["sized_by"] == "tokenize");  // what the probe wrote is kept
  CHECK(j["loop_run_chars"] == bad.longest_run_chars);
  CHECK(j["loop_tail_chars"] == bad.tail_chars);
  auto fresh = nlohmann::json::parse(with_loop_figure("", ok));
  CHECK(fresh["loop_run_chars"] == ok.longest_run_chars);
}

TEST_CASE("the long-context answer must contain its code word") {
  ChatResult r;
  r.content = "Here it is: OAK-4821.";
  CHECK(check_code_word(r, "OAK-4821").outcome == Outcome::Clean);
  r.content = "Here it is: OAK-4822.";
  Verdict v = check_code_word(r, "OAK-4821");
  CHECK(v.outcome == Outcome::MissingMarker);
  CHECK(v.detail.find("code word OAK-4821 absent from the long-context answer") != std::string::npos);
  r.reasoning = "The code is OAK-4821.";
  CHECK(check_code_word(r, "OAK-4821").detail.find("only in the reasoning") != std::string::npos);
}

// ---------------------------------------------------------------- hygiene

namespace {

ChatResult answer(std::string content) {
  ChatResult r;
  r.finish_reason = "stop";
  r.content = std::move(content);
  return r;
}

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("every marker of every list is leaked markup, named with its place") {
  struct Case {
    std::span<const std::string_view> list;
    MarkupKind kind;
    const char* words;
  };
  for (const Case& k : {Case{kReasoningMarkup, MarkupKind::Reasoning, "reasoning markup "},
                        Case{kHarmonyHeaders, MarkupKind::Harmony, "harmony header "},
                        Case{kTemplateTokens, MarkupKind::TemplateToken, "chat-template token "}}) {
    for (std::string_view token : k.list) {
      INFO(token);
      const std::string content = "The answer is 391." + std::string(token) + " Done.";
      const MarkupReport rep = scan_markup(content);
      REQUIRE(rep.total == 1);
      CHECK(rep.found[0].kind == k.kind);
      CHECK(rep.found[0].text == token);
      CHECK(rep.found[0].char_at == 18);
      CHECK(rep.found[0].byte_len == token.size());
      ChatResult r = answer(content);
      auto v = check_answer(r, answer_repetition(r), true);
      REQUIRE(v);
      CHECK(v->outcome == Outcome::LeakedMarkup);
      CHECK(v->detail == k.words + std::string(token) + " at char 18 of " + std::to_string(content.size()) +
                             " in the answer content");
      CHECK(has(v->excerpt, std::string(token)));
    }
  }
}

TEST_CASE("a leaked end-of-turn token: its place in characters, the excerpt escaped around it") {
  // 31 characters, one of them two bytes (é), then the token and a blank line.
  ChatResult r = answer("Réponse: the code is OAK-4821.<|im_end|>\n\n");
  auto v = check_answer(r, answer_repetition(r), true);
  REQUIRE(v);
  CHECK(v->outcome == Outcome::LeakedMarkup);
  CHECK(v->detail == "chat-template token <|im_end|> at char 30 of 42 in the answer content");
  // 24 characters either side: the cut before the token marked.
  CHECK(v->excerpt == "...e: the code is OAK-4821.<|im_end|>\\n\\n");
  // Cuts fall between characters, never inside one.
  std::string accents;
  for (int i = 0; i < 30; ++i) accents += "\xC3\xA9";  // é
  ChatResult wide = answer(accents + "<think>");
  std::string kept;
  for (int i = 0; i < 24; ++i) kept += "\xC3\xA9";
  CHECK(check_answer(wide, answer_repetition(wide), true)->excerpt == "..." + kept + "<think>");
  // A long answer is cut around the token, at character boundaries, each cut marked.
  ChatResult longer = answer(std::string(200, 'a') + "<think>" + std::string(200, 'b'));
  auto l = check_answer(longer, answer_repetition(longer), true);
  REQUIRE(l);
  CHECK(l->excerpt == "..." + std::string(24, 'a') + "<think>" + std::string(24, 'b') + "...");
  CHECK(l->detail == "reasoning markup <think> at char 200 of 407 in the answer content");
}

TEST_CASE("a think block in content: the first finding named, the others listed") {
  ChatResult r = answer("<think>\nThe user wants 17 x 23.\n</think>\n\n391<|im_end|>");
  auto v = check_answer(r, answer_repetition(r), true);
  REQUIRE(v);
  CHECK(v->outcome == Outcome::LeakedMarkup);
  CHECK(v->detail ==
        "reasoning markup <think> at char 0 of 55 in the answer content (3 found; also </think>, <|im_end|>)");
  CHECK(v->excerpt == "<think>\\nThe user wants 17 x 23....");
  // The same token again is counted, not listed twice.
  ChatResult twice = answer("one<|im_end|>two<|im_end|>");
  CHECK(has(check_answer(twice, answer_repetition(twice), true)->detail, "(2 found)"));
}

TEST_CASE("a harmony answer written out raw is caught at its first header") {
  ChatResult r =
      answer("<|channel|>analysis<|message|>Multiply.<|end|><|start|>assistant<|channel|>final<|message|>391");
  const MarkupReport rep = scan_markup(r.content);
  CHECK(rep.total == 6);
  CHECK(rep.found[0].kind == MarkupKind::Harmony);
  auto v = check_answer(r, answer_repetition(r), true);
  REQUIRE(v);
  CHECK(v->detail.rfind("harmony header <|channel|> at char 0 of", 0) == 0);
  CHECK(has(v->detail, "also <|message|>, <|end|>, <|start|>"));
}

TEST_CASE("U+FFFD and control characters other than newline, return and tab") {
  ChatResult fffd = answer("caf\xEF\xBF\xBD au lait");
  auto v = check_answer(fffd, answer_repetition(fffd), true);
  REQUIRE(v);
  CHECK(v->outcome == Outcome::LeakedMarkup);
  CHECK(v->detail == "U+FFFD (replacement character) at char 3 of 12 in the answer content");
  CHECK(v->excerpt == "caf\\uFFFD au lait");

  for (char c : {'\x00', '\x01', '\x07', '\x08', '\x0B', '\x0C', '\x1B', '\x1F', '\x7F'}) {
    std::string content = "ab";
    content += c;
    content += "cd";
    INFO(static_cast<int>(c));
    const MarkupReport rep = scan_markup(content);
    REQUIRE(rep.total == 1);
    CHECK(rep.found[0].kind == MarkupKind::Control);
    CHECK(rep.found[0].char_at == 2);
  }
  ChatResult bell = answer("ring\x07");
  CHECK(check_answer(bell, answer_repetition(bell), true)->detail ==
        "control character U+0007 at char 4 of 5 in the answer content");
  CHECK(check_answer(bell, answer_repetition(bell), true)->excerpt == "ring\\u0007");
  // C1 controls (U+0085 NEL), written as two bytes.
  const MarkupReport c1 = scan_markup("line\xC2\x85next");
  REQUIRE(c1.total == 1);
  CHECK(c1.found[0].text == "U+0085");
  CHECK(c1.chars == 9);
  // Newlines, returns, tabs and ordinary non-ASCII text are answers.
  CHECK(scan_markup("a\tb\r\nc\nd — «é» 日本語 ✓ U+00A0:\xC2\xA0.").total == 0);
}

TEST_CASE("a cut answer's trailing U+FFFD is the cut's; anywhere else it is a finding") {
  ChatResult cut = answer("the last character was cut in tw\xEF\xBF\xBD");
  cut.finish_reason = "length";
  CHECK(scan_markup(cut.content, {}, true).total == 0);
  CHECK_FALSE(check_answer(cut, answer_repetition(cut), true));
  cut.finish_reason = "stop";
  CHECK(check_answer(cut, answer_repetition(cut), true)->outcome == Outcome::LeakedMarkup);
  CHECK(scan_markup("in the \xEF\xBF\xBD middle", {}, true).total == 1);
}

TEST_CASE("clean prose, JSON, code and tool calls are not markup") {
  for (const char* content : {
           kProse,
           R"({"verdict":"pass","reason":"the build is \u0007 fine\n","score":3})",  // escapes are text
           "```python\ndef reverse(s: str) -> str:\n\treturn s[::-1]  # x < y and y > z\n```\n",
           "```c\nif (a < b && b > c) { x = a<<2 | b>>1; }\n#include <stdio.h>\n```",
           "Use a <div> with <b>bold</b> text; a list [1, 2] and a tag <tool>.",
           "The markers look like <|this|> only when a template writes them.",
       }) {
    INFO(content);
    ChatResult r = answer(content);
    CHECK(scan_markup(r.content).total == 0);
    CHECK_FALSE(check_answer(r, answer_repetition(r), true));
  }
}

TEST_CASE("only content is read: reasoning in its own field and tool-call arguments stay clean") {
  ChatResult r = answer("391");
  r.reasoning = "<think>17 x 23 = 391<|im_end|>\x07\xEF\xBF\xBD";  // whatever the reasoning holds
  ToolCall call;
  call.name = "lookup_weather";
  call.arguments = R"({"city":"<|im_end|>"})";
  r.tool_calls.push_back(call);
  CHECK_FALSE(check_answer(r, answer_repetition(r), true));
}

TEST_CASE("leaked markup wins over a loop and an empty-looking answer, and names the loop") {
  std::string content = "<|im_end|>";
  content += looped(60);
  ChatResult r = answer(content);
  r.finish_reason = "length";
  auto v = check_answer(r, answer_repetition(r), true);
  REQUIRE(v);
  CHECK(v->outcome == Outcome::LeakedMarkup);
  CHECK(has(v->detail, "; the answer also ends in a loop (the last"));
  // A think block and nothing after it: markup, not an empty answer.
  ChatResult block = answer("<think>\n\n</think>\n\n");
  CHECK(check_answer(block, answer_repetition(block), true)->outcome == Outcome::LeakedMarkup);
}

TEST_CASE("the runtime's own template tokens are read on top of the fixed lists") {
  const std::vector<std::string> deepseek{
      "<\xEF\xBD\x9C"
      "end\xE2\x96\x81of\xE2\x96\x81sentence\xEF\xBD\x9C>",
      "</s>"};
  const std::string content =
      "Done.<\xEF\xBD\x9C"
      "end\xE2\x96\x81of\xE2\x96\x81sentence\xEF\xBD\x9C>";
  CHECK(scan_markup(content).total == 0);
  const MarkupReport rep = scan_markup(content, deepseek);
  REQUIRE(rep.total == 1);
  CHECK(rep.found[0].kind == MarkupKind::RuntimeToken);
  CHECK(rep.found[0].char_at == 5);
  CHECK(rep.chars == 5 + 19);
  ChatResult r = answer("Bye.</s>");
  auto v = check_answer(r, answer_repetition(r), true, deepseek);
  REQUIRE(v);
  CHECK(v->detail == "the template's own token </s> at char 4 of 8 in the answer content");
  // A token both lists hold keeps its fixed kind.
  const std::vector<std::string> qwen{"<|im_start|>", "<|im_end|>"};
  CHECK(scan_markup("x<|im_end|>", qwen).found[0].kind == MarkupKind::TemplateToken);
}

// ---------------------------------------------------------------- real captures

TEST_CASE("real llama-server answers read clean: content only, thinking on by default or off") {
  // tests/fixtures/llama-server/: a Qwen3-template model (README there); its
  // answers carry neither markup nor template tokens, and the template's own
  // tokens (/props) are read on top.
  const Runtime& llama = builtin_runtime(RuntimeKind::LlamaCpp);
  auto props = llama.read_props(probes_local::load_capture("get-props.http").body);
  REQUIRE(props.ok());
  REQUIRE_FALSE(props->template_tokens.empty());
  int read = 0;
  for (const char* name :
       {"post-v1-chat-completions-thinking-default.http", "post-v1-chat-completions-enable-thinking-false.http",
        "post-v1-chat-completions-nonstream.http", "post-v1-chat-completions-nonstream-default-n.http",
        "post-v1-chat-completions-json-object.http", "post-v1-chat-completions-json-schema-bounded.http",
        "post-v1-chat-completions-json-schema-unbounded.http", "post-v1-chat-completions-tools-auto.http",
        "post-v1-chat-completions-tools-required-enum.http", "post-v1-chat-completions-tools-required-freestring.http",
        "post-v1-chat-completions-tools-required-prefill.http",
        "post-v1-chat-completions-tools-required-prefill-parallel.http"}) {
    INFO(name);
    const auto cap = probes_local::load_capture(name);
    REQUIRE(cap.status == 200);
    const ChatResult r = parse_chat_completion(cap.body, 1);
    CHECK(r.problems.empty());
    CHECK(scan_markup(r.content, props->template_tokens, r.finish_reason == "length").total == 0);
    CHECK_FALSE(check_answer(r, answer_repetition(r), true, props->template_tokens));
    ++read;
  }
  for (const char* name :
       {"post-v1-chat-completions-stream-include-usage.sse.http", "post-v1-chat-completions-stream-no-usage.sse.http",
        "post-v1-chat-completions-stream-return-progress.sse.http", "busy-first-stream.sse.http",
        "post-v1-chat-completions-tools-required-enum-stream.sse.http",
        "post-v1-chat-completions-tools-required-prefill-stream.sse.http"}) {
    INFO(name);
    const auto cap = probes_local::load_capture(name);
    REQUIRE(cap.status == 200);
    ChatStreamAccumulator acc;
    int64_t t = 1;
    for (const auto& e : probes_local::sse_data_events(cap.body)) acc.on_event(e, ++t);
    const ChatResult& r = acc.result();
    CHECK(scan_markup(r.content, props->template_tokens, r.finish_reason == "length").total == 0);
    ++read;
  }
  CHECK(read == 18);
}

TEST_CASE("a thinking answer whose reasoning came in reasoning_content stays clean") {
  // llama-server's shape with --reasoning-format deepseek (the default auto
  // on a Qwen3 template): the think block parsed out of content
  // (tools/server: message.reasoning_content, delta.reasoning_content).
  ChatStreamAccumulator acc;
  int64_t t = 0;
  for (
      const char* e :
      {R"({"choices":[{"index":0,"delta":{"role":"assistant","content":null}}],"model":"m","object":"chat.completion.chunk"})",
       R"({"choices":[{"index":0,"delta":{"reasoning_content":"The user asks 17 x 23. "}}],"model":"m","object":"chat.completion.chunk"})",
       R"({"choices":[{"index":0,"delta":{"reasoning_content":"17 x 20 = 340, 17 x 3 = 51."}}],"model":"m","object":"chat.completion.chunk"})",
       R"({"choices":[{"index":0,"delta":{"content":"17 multiplied by 23 is "}}],"model":"m","object":"chat.completion.chunk"})",
       R"({"choices":[{"index":0,"delta":{"content":"391."}}],"model":"m","object":"chat.completion.chunk"})",
       R"({"choices":[{"finish_reason":"stop","index":0,"delta":{}}],"model":"m","object":"chat.completion.chunk"})",
       R"({"choices":[],"usage":{"completion_tokens":30,"prompt_tokens":20,"total_tokens":50},"model":"m","object":"chat.completion.chunk"})",
       "[DONE]"})
    acc.on_event(e, ++t);
  const ChatResult& r = acc.result();
  REQUIRE(r.reasoning == "The user asks 17 x 23. 17 x 20 = 340, 17 x 3 = 51.");
  REQUIRE(r.content == "17 multiplied by 23 is 391.");
  CHECK_FALSE(check_answer(r, answer_repetition(r), true));

  // The same answer from a parser that stopped separating: the think block in content.
  const ChatResult leaked = parse_chat_completion(
      R"({"choices":[{"finish_reason":"stop","index":0,"message":{"role":"assistant","content":"<think>\nThe user asks 17 x 23.\n</think>\n\n17 multiplied by 23 is 391."}}],"model":"m","object":"chat.completion","usage":{"completion_tokens":30,"prompt_tokens":20,"total_tokens":50}})",
      1);
  auto v = check_answer(leaked, answer_repetition(leaked), true);
  REQUIRE(v);
  CHECK(v->outcome == Outcome::LeakedMarkup);
  CHECK(has(v->detail, "reasoning markup <think> at char 0 of"));
}
