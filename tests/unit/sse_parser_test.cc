// The SSE grammar on literal strings: line endings, BOM, field forms, comments,
// dispatch rules, and feeding the same bytes in every possible split.
#include <optional>
#include <string>
#include <vector>

#include "probes/transport/sse.h"
#include "tests/catch.h"

using namespace soak;
using namespace std::string_view_literals;

namespace {

struct Rec {
  bool comment = false;
  std::string type, data, id;
  std::optional<int64_t> retry;
  bool operator==(const Rec&) const = default;
};

struct Recorder final : SseSink {
  std::vector<Rec> seq;
  void on_event(const SseEvent& e) override {
    seq.push_back(Rec{false, std::string(e.type), std::string(e.data), std::string(e.id), e.retry_ms});
  }
  void on_comment(std::string_view text) override { seq.push_back(Rec{true, "", std::string(text), "", {}}); }
  std::vector<Rec> events() const {
    std::vector<Rec> out;
    for (const auto& r : seq)
      if (!r.comment) out.push_back(r);
    return out;
  }
};

std::vector<Rec> parse_whole(std::string_view s, SseTail* tail = nullptr) {
  SseParser p;
  Recorder r;
  p.feed(s, r);
  if (tail) *tail = p.tail();
  return r.seq;
}

Rec ev(std::string data, std::string type = "", std::string id = "") { return Rec{false, type, data, id, {}}; }
Rec comment(std::string text) { return Rec{true, "", text, "", {}}; }

}  // namespace

TEST_CASE("sse: one event per blank line, LF endings") {
  auto seq = parse_whole("data: a\n\ndata: b\n\n");
  REQUIRE(seq == std::vector<Rec>{ev("a"), ev("b")});
}

TEST_CASE("sse: CRLF and lone CR line endings give the same events as LF") {
  auto lf = parse_whole("event: x\ndata: 1\ndata: 2\n\n: c\n\ndata: 3\n\n");
  CHECK(parse_whole("event: x\r\ndata: 1\r\ndata: 2\r\n\r\n: c\r\n\r\ndata: 3\r\n\r\n") == lf);
  CHECK(parse_whole("event: x\rdata: 1\rdata: 2\r\r: c\r\rdata: 3\r\r") == lf);
  CHECK(parse_whole("event: x\r\ndata: 1\rdata: 2\n\r\n: c\r\rdata: 3\n\n") == lf);
  REQUIRE(lf == std::vector<Rec>{ev("1\n2", "x"), comment("c"), ev("3")});
}

TEST_CASE("sse: multi-line data joins with newline; empty data lines count") {
  CHECK(parse_whole("data: a\ndata: b\ndata: c\n\n") == std::vector<Rec>{ev("a\nb\nc")});
  CHECK(parse_whole("data\n\n") == std::vector<Rec>{ev("")});
  CHECK(parse_whole("data:\ndata:\n\n") == std::vector<Rec>{ev("\n")});
  CHECK(parse_whole("data: a\ndata\n\n") == std::vector<Rec>{ev("a\n")});
}

TEST_CASE("sse: data with and without the space after the colon; only one space is removed") {
  CHECK(parse_whole("data:x\n\n") == std::vector<Rec>{ev("x")});
  CHECK(parse_whole("data: x\n\n") == std::vector<Rec>{ev("x")});
  CHECK(parse_whole("data:  x\n\n") == std::vector<Rec>{ev(" x")});
  CHECK(parse_whole("data: a:b: c\n\n") == std::vector<Rec>{ev("a:b: c")});
}

TEST_CASE("sse: a field without a colon is that field with an empty value") {
  CHECK(parse_whole("event\ndata: d\n\n") == std::vector<Rec>{ev("d", "")});
  CHECK(parse_whole("data: d\nid\n\n") == std::vector<Rec>{ev("d", "", "")});
  CHECK(parse_whole("bogus\ndata: d\n\n") == std::vector<Rec>{ev("d")});
}

TEST_CASE("sse: comments are reported apart and never dispatch an event") {
  auto seq = parse_whole(": ping\n\n:keepalive\n\n: \n\n");
  REQUIRE(seq == std::vector<Rec>{comment("ping"), comment("keepalive"), comment("")});
  SseParser p;
  Recorder r;
  p.feed(": ping\n\ndata: x\n: inside\n\n", r);
  CHECK(p.events() == 1);
  CHECK(p.comments() == 2);
  CHECK(r.events() == std::vector<Rec>{ev("x")});
}

TEST_CASE("sse: a blank line without data dispatches nothing and forgets the event type") {
  CHECK(parse_whole("event: a\n\ndata: d\n\n") == std::vector<Rec>{ev("d", "")});
  CHECK(parse_whole("\n\n\n").empty());
}

TEST_CASE("sse: the last event id persists across events; ids with NUL are ignored") {
  auto seq = parse_whole("id: 7\ndata: a\n\ndata: b\n\nid: 8\ndata: c\n\nid: x\0y\ndata: d\n\n"sv);
  REQUIRE(seq.size() == 4);
  CHECK(seq[0].id == "7");
  CHECK(seq[1].id == "7");
  CHECK(seq[2].id == "8");
  CHECK(seq[3].id == "8");
}

TEST_CASE("sse: retry is reported with its block only when all digits") {
  auto seq = parse_whole("retry: 1500\ndata: a\n\ndata: b\n\nretry: 15x\ndata: c\n\n");
  REQUIRE(seq.size() == 3);
  CHECK(seq[0].retry == 1500);
  CHECK_FALSE(seq[1].retry.has_value());
  CHECK_FALSE(seq[2].retry.has_value());
}

TEST_CASE("sse: a leading BOM is dropped once, even when split") {
  using namespace std::string_literals;
  const std::string bom = "\xEF\xBB\xBF";
  CHECK(parse_whole(bom + "data: a\n\n") == std::vector<Rec>{ev("a")});
  // Only at stream start: a second BOM is part of the field name, so the line is an unknown field.
  CHECK(parse_whole(bom + bom + "data: a\n\n").empty());
  SseParser p;
  Recorder r;
  for (char c : bom + "data: a\n\n") p.feed(std::string_view(&c, 1), r);
  CHECK(r.seq == std::vector<Rec>{ev("a")});
  // A BOM prefix that turns out not to be a BOM is ordinary bytes.
  SseParser q;
  Recorder s;
  q.feed("\xEF", s);
  q.feed("\xBB:x\ndata: a\n\n", s);
  CHECK(s.seq == std::vector<Rec>{ev("a")});
  CHECK(q.tail().clean());
}

TEST_CASE("sse: end of stream discards and reports what is unfinished") {
  SseTail t;
  CHECK(parse_whole("data: a\n\ndata: b\n", &t) == std::vector<Rec>{ev("a")});
  CHECK(t.undispatched_event);
  CHECK(t.partial_line_bytes == 0);
  CHECK(parse_whole("data: a\n\ndata: b", &t) == std::vector<Rec>{ev("a")});
  CHECK(t.partial_line_bytes == 7);
  CHECK_FALSE(t.undispatched_event);
  CHECK(parse_whole("data: a\n\n", &t).size() == 1);
  CHECK(t.clean());
}

TEST_CASE("sse: every two-piece split and a byte-at-a-time feed match the one-shot parse") {
  using namespace std::string_literals;
  const std::string text =
      "\xEF\xBB\xBF: hi\r\nevent: e\r\ndata: 1\r\ndata:2\r\rid: 9\rdata\n\n"
      "retry: 5\ndata: x\r\n\r\n"
      ": keepalive\n\ndata: {\"a\":1}\r\n\r\ntrailing";
  SseTail whole_tail;
  auto whole = parse_whole(text, &whole_tail);
  REQUIRE(whole.size() == 6);
  for (size_t cut = 0; cut <= text.size(); ++cut) {
    SseParser p;
    Recorder r;
    p.feed(std::string_view(text).substr(0, cut), r);
    p.feed(std::string_view(text).substr(cut), r);
    INFO("cut at " << cut);
    REQUIRE(r.seq == whole);
    REQUIRE(p.tail().partial_line_bytes == whole_tail.partial_line_bytes);
  }
  SseParser p;
  Recorder r;
  for (char c : text) p.feed(std::string_view(&c, 1), r);
  CHECK(r.seq == whole);
}

TEST_CASE("sse: a CR at the end of one piece and an LF at the start of the next is one line break") {
  SseParser p;
  Recorder r;
  p.feed("data: a\r", r);
  p.feed("", r);
  p.feed("\n\r", r);
  p.feed("\n", r);
  CHECK(r.seq == std::vector<Rec>{ev("a")});
  CHECK(p.tail().clean());
}
