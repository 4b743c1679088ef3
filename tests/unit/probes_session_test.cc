// The agent session (probes/session.h): deterministic turns, history kept and
// grown, tool results fed back, reasoning stripped unless kept, recovery after
// a malformed call, the ceiling, and thinking per session in proportion.
#include <nlohmann/json.hpp>

#include "probes/prompts.h"
#include "probes/session.h"
#include "tests/catch.h"

using namespace soak;
using namespace soak::probes;
using ojson = nlohmann::ordered_json;

namespace {

SessionAnswer tool_answer(const SessionTurn& t) {
  SessionAnswer a;
  a.outcome = Outcome::Clean;
  a.tool_calls.push_back({"call_" + std::to_string(t.turn), "lookup_weather",
                          R"({"location":{"city":"Lima","country":"Peru"},"unit":"celsius"})"});
  a.prompt_tokens = t.context_estimate;
  a.completion_tokens = 20;
  return a;
}

SessionAnswer text_answer(const SessionTurn& t, Outcome o = Outcome::Clean) {
  SessionAnswer a;
  a.outcome = o;
  a.content = "The notes agree.";
  a.reasoning = "thinking about the notes";
  a.prompt_tokens = t.context_estimate;
  a.completion_tokens = 8;
  return a;
}

AgentSettings settings() {
  AgentSettings s;
  s.thinking_share = 0.5;
  s.tool_every = 2;
  return s;
}

}  // namespace

TEST_CASE("user turns are deterministic and 150-200 tokens by the fixture estimate") {
  for (int64_t turn = 1; turn <= 20; ++turn) {
    const std::string a = session_user_turn(7, 0, turn, turn % 2 == 0);
    CHECK(a == session_user_turn(7, 0, turn, turn % 2 == 0));
    CHECK(a != session_user_turn(7, 1, turn, turn % 2 == 0));
    int64_t words = 0;
    bool in_word = false;
    for (char c : a) {
      const bool space = c == ' ' || c == '\n';
      if (!space && !in_word) ++words;
      in_word = !space;
    }
    const double tokens = static_cast<double>(words) * kTokensPerWordEstimate;
    CHECK(tokens >= 130);
    CHECK(tokens <= 230);
  }
  CHECK(session_user_turn(7, 0, 2, true).find("call lookup_weather") != std::string::npos);
  CHECK(session_user_turn(7, 0, 3, false).find("lookup_weather") == std::string::npos);
}

TEST_CASE("a session keeps the runtime's answers and feeds tool results back; context grows every turn") {
  AgentSession s(7, settings(), 50'000);
  SessionTurn t1 = s.next_turn("nonce-a");
  CHECK(t1.session == 0);
  CHECK(t1.turn == 1);
  CHECK_FALSE(t1.tool_required);
  const ojson m1 = s.messages(t1);
  REQUIRE(m1.size() == 2);
  CHECK(m1[0]["role"] == "system");
  CHECK(m1[0]["content"].get<std::string>().find("nonce-a") != std::string::npos);
  CHECK(m1[1]["role"] == "user");
  s.record(t1, text_answer(t1));

  SessionTurn t2 = s.next_turn("unused");
  CHECK(t2.tool_required);  // every second turn
  CHECK(t2.context_estimate > t1.context_estimate);
  const ojson m2 = s.messages(t2);
  REQUIRE(m2.size() == 4);
  CHECK(m2[2]["role"] == "assistant");
  CHECK(m2[2]["content"] == "The notes agree.");
  CHECK_FALSE(m2[2].contains("reasoning_content"));  // stripped: preserve_thinking is off
  s.record(t2, tool_answer(t2));

  SessionTurn t3 = s.next_turn("unused");
  const ojson m3 = s.messages(t3);
  REQUIRE(m3.size() == 7);
  CHECK(m3[4]["role"] == "assistant");
  CHECK(m3[4]["content"].is_null());
  CHECK(m3[4]["tool_calls"][0]["id"] == "call_2");
  CHECK(m3[5]["role"] == "tool");
  CHECK(m3[5]["tool_call_id"] == "call_2");
  CHECK(m3[5]["content"] == session_tool_result(7, 0, 2));
  CHECK(m3[6]["role"] == "user");
  CHECK(t3.context_estimate > t2.context_estimate + 300);  // the tool result is in it
}

TEST_CASE("preserve_thinking keeps the reasoning in the history") {
  AgentSettings a = settings();
  a.preserve_thinking = true;
  AgentSession s(7, a, 50'000);
  SessionTurn t1 = s.next_turn("n");
  s.record(t1, text_answer(t1));
  const ojson m = s.messages(s.next_turn("n"));
  CHECK(m[2]["reasoning_content"] == "thinking about the notes");
}

TEST_CASE("a malformed tool call is answered with an error and the next turn must call again") {
  AgentSession s(7, settings(), 50'000);
  SessionTurn t1 = s.next_turn("n");
  s.record(t1, text_answer(t1));
  SessionTurn t2 = s.next_turn("n");
  SessionAnswer bad = tool_answer(t2);
  bad.outcome = Outcome::EmptyToolArgs;
  bad.tool_calls[0].arguments = "{}";
  s.record(t2, bad);
  SessionTurn t3 = s.next_turn("n");
  CHECK(t3.recovery);
  CHECK(t3.tool_required);  // turn 3 would not require one otherwise
  CHECK_FALSE(t3.user_message);
  const ojson m = s.messages(t3);
  CHECK(m.back()["role"] == "tool");
  CHECK(m.back()["content"].get<std::string>().find("Call lookup_weather again") != std::string::npos);
  s.record(t3, tool_answer(t3));
  CHECK_FALSE(s.next_turn("n").recovery);
}

TEST_CASE("the ceiling ends a session; the next one is new, with a new nonce and the other thinking variant") {
  AgentSession s(7, settings(), 6'000);
  int64_t turns = 0;
  SessionTurn t = s.next_turn("first");
  CHECK_FALSE(t.thinking);  // share 0.5: sessions 0, 2, ... off; 1, 3, ... on
  while (s.session_open()) {
    s.record(t, t.tool_required ? tool_answer(t) : text_answer(t));
    ++turns;
    if (s.session_open()) t = s.next_turn("unused");
  }
  CHECK(turns >= 3);
  CHECK(t.context_estimate <= 6'000);
  SessionTurn n = s.next_turn("second");
  CHECK(n.session == 1);
  CHECK(n.turn == 1);
  CHECK(n.thinking);
  CHECK(s.messages(n)[0]["content"].get<std::string>().find("second") != std::string::npos);
}

TEST_CASE("thinking_share spreads thinking sessions evenly") {
  for (double share : {0.0, 0.25, 0.5, 1.0}) {
    AgentSettings a = settings();
    a.thinking_share = share;
    AgentSession s(7, a, 2'000);  // every session ends after its first turn
    int on = 0;
    for (int i = 0; i < 8; ++i) {
      SessionTurn t = s.next_turn("n" + std::to_string(i));
      on += t.thinking ? 1 : 0;
      s.record(t, text_answer(t));
      REQUIRE_FALSE(s.session_open());
    }
    CHECK(on == static_cast<int>(share * 8));
  }
}

TEST_CASE("turns without an answer are retried with the same history; three in a row end the session") {
  AgentSession s(7, settings(), 50'000);
  SessionTurn t1 = s.next_turn("n");
  s.record(t1, text_answer(t1));
  for (int i = 0; i < 3; ++i) {
    SessionTurn t = s.next_turn("n");
    CHECK(s.messages(t).size() == 4);  // system, user 1, answer 1, the new user turn
    SessionAnswer a;
    a.outcome = Outcome::Http5xx;
    s.record(t, a);
  }
  CHECK_FALSE(s.session_open());
}

TEST_CASE("rows carry the band of the context they carried") {
  AgentSettings a = settings();
  a.band_tokens = 10'000;
  AgentSession s(7, a, 50'000);
  CHECK(s.facts(34'567).band == "30K-40K");
  CHECK(s.facts(34'567).band_lo == 30'000);
  CHECK(s.facts(999).band == "0-10K");
  CHECK(band_label(2048, 1024) == "2048-3072");
  SessionTurn t = s.next_turn("n");
  ProbeResult r;
  r.cache_state = CacheState::Fresh;
  label_turn_row(r, t, s.record(t, text_answer(t)));
  CHECK(r.workload_id == "agent/0/fresh/no_thinking");
  CHECK(*r.size_tokens == 0);
  auto j = nlohmann::json::parse(r.extra_json);
  CHECK(j["turn"] == 1);
  CHECK(j["context_tokens"] == t.context_estimate);
}
