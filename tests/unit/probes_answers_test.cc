// What every chat answer is judged on (probes/answer_check.h): a loop on any
// answer, an empty answer where text was expected (reasoning alone is not an
// answer), the loop figure on every row, the long-context code word.
#include <nlohmann/json.hpp>

#include "probes/answer_check.h"
#include "tests/catch.h"

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
