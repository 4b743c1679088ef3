// Every real llama-server SSE capture, parsed one-shot, split in two at every
// byte offset, and fed a byte at a time: the event sequence must not change,
// and it must have the shape the capture is known to have.
#include <string>
#include <vector>

#include "probes/transport/sse.h"
#include "tests/catch.h"
#include "tests/support/http_capture.h"

using namespace soak;

namespace {

struct Item {
  bool comment = false;
  std::string type, data, id;
  bool operator==(const Item&) const = default;
};

struct Recorder final : SseSink {
  std::vector<Item> seq;
  void on_event(const SseEvent& e) override {
    seq.push_back(Item{false, std::string(e.type), std::string(e.data), std::string(e.id)});
  }
  void on_comment(std::string_view t) override { seq.push_back(Item{true, "", std::string(t), ""}); }
};

struct Parsed {
  std::vector<Item> seq;
  SseTail tail;
};

Parsed parse_pieces(std::string_view body, size_t cut) {
  SseParser p;
  Recorder r;
  p.feed(body.substr(0, cut), r);
  p.feed(body.substr(cut), r);
  return {r.seq, p.tail()};
}

std::vector<Item> events_of(const std::vector<Item>& seq) {
  std::vector<Item> out;
  for (const auto& i : seq)
    if (!i.comment) out.push_back(i);
  return out;
}

std::vector<Item> comments_of(const std::vector<Item>& seq) {
  std::vector<Item> out;
  for (const auto& i : seq)
    if (i.comment) out.push_back(i);
  return out;
}

// Events counted independently of the parser: blocks that begin with "data: ".
size_t count_data_blocks(std::string_view body) {
  size_t n = body.rfind("data: ", 0) == 0 ? 1 : 0;
  for (size_t at = 0; (at = body.find("\n\ndata: ", at)) != std::string_view::npos; at += 8) ++n;
  return n;
}

const std::string kDir = std::string(SOAKD_FIXTURES_DIR) + "/llama-server/";

struct CaptureCase {
  const char* file;
  bool truncated;     // has a ": fixture truncated" comment
  bool ends_in_done;  // last event is [DONE]
};

const CaptureCase kCaptures[] = {
    {"busy-first-stream.sse.http", true, true},
    {"busy-third-stream.sse.http", true, true},
    {"disconnect-stream-max-time-1s.sse.http", true, false},
    {"error-invalid-utf8-output-chat-stream.sse.http", false, false},
    {"post-v1-chat-completions-stream-include-usage.sse.http", false, true},
    {"post-v1-chat-completions-stream-no-usage.sse.http", false, true},
    {"post-v1-chat-completions-stream-return-progress.sse.http", false, true},
    {"post-v1-chat-completions-tools-required-enum-stream.sse.http", true, true},
    {"post-v1-chat-completions-tools-required-prefill-stream.sse.http", false, true},
};

}  // namespace

TEST_CASE("sse captures: every split point and a byte-at-a-time feed give the one-shot sequence") {
  for (const auto& c : kCaptures) {
    auto cap = test::load_http_capture(kDir + c.file);
    REQUIRE(cap.ok());
    const std::string& body = cap->body;
    INFO(c.file);
    REQUIRE(cap->status == 200);
    REQUIRE(cap->header("Content-Type") != nullptr);
    REQUIRE(*cap->header("Content-Type") == "text/event-stream");

    Parsed whole = parse_pieces(body, body.size());
    auto events = events_of(whole.seq);
    REQUIRE(events.size() == count_data_blocks(body));
    REQUIRE(events.size() >= 5);
    CHECK(whole.tail.clean());

    for (size_t cut = 0; cut <= body.size(); ++cut) {
      Parsed split = parse_pieces(body, cut);
      if (split.seq != whole.seq || split.tail.partial_line_bytes != whole.tail.partial_line_bytes) {
        FAIL("sequence differs when split at byte " << cut);
      }
    }
    SseParser p;
    Recorder r;
    for (char ch : body) p.feed(std::string_view(&ch, 1), r);
    CHECK(r.seq == whole.seq);
    CHECK(p.tail().clean());

    // The role-only chunk comes first in every llama-server stream.
    CHECK(events.front().data.find(R"("delta":{"role":"assistant","content":null})") != std::string::npos);
    for (const auto& e : events) {
      CHECK(e.type.empty());
      CHECK(e.id.empty());
      CHECK(e.data.find('\n') == std::string::npos);
    }
    auto comments = comments_of(whole.seq);
    if (c.truncated) {
      REQUIRE(comments.size() == 1);
      CHECK(comments[0].data.rfind("fixture truncated: ", 0) == 0);
    } else {
      CHECK(comments.empty());
    }
    if (c.ends_in_done) {
      CHECK(events.back().data == "[DONE]");
    } else {
      for (const auto& e : events) CHECK(e.data != "[DONE]");
    }
  }
}

TEST_CASE("sse captures: the invalid-UTF-8 stream ends in an error object after 16 content deltas") {
  auto cap = test::load_http_capture(kDir + "error-invalid-utf8-output-chat-stream.sse.http");
  REQUIRE(cap.ok());
  auto events = events_of(parse_pieces(cap->body, cap->body.size()).seq);
  REQUIRE(events.size() == 18);  // role chunk + 16 deltas + error
  CHECK(events.back().data.rfind(R"({"error":{"code":500,)", 0) == 0);
  int content = 0;
  for (const auto& e : events)
    if (e.data.find(R"("delta":{"content":")") != std::string::npos) ++content;
  CHECK(content == 16);
}

TEST_CASE("sse captures: include_usage stream has finish chunk, then usage chunk with empty choices, then [DONE]") {
  auto cap = test::load_http_capture(kDir + "post-v1-chat-completions-stream-include-usage.sse.http");
  REQUIRE(cap.ok());
  auto events = events_of(parse_pieces(cap->body, cap->body.size()).seq);
  REQUIRE(events.size() == 1 + 12 + 1 + 1 + 1);  // role, 12 tokens, finish, usage, [DONE]
  const auto& finish = events[events.size() - 3];
  const auto& usage = events[events.size() - 2];
  CHECK(finish.data.find(R"("finish_reason":"length")") != std::string::npos);
  CHECK(usage.data.rfind(R"({"choices":[],)", 0) == 0);
  CHECK(usage.data.find(R"("completion_tokens":12)") != std::string::npos);
}

TEST_CASE("sse captures: the dropped stream ends mid-stream without [DONE] and without a partial line") {
  auto cap = test::load_http_capture(kDir + "disconnect-stream-max-time-1s.sse.http");
  REQUIRE(cap.ok());
  auto parsed = parse_pieces(cap->body, cap->body.size());
  auto events = events_of(parsed.seq);
  CHECK(events.back().data.find(R"("finish_reason":null)") != std::string::npos);
  CHECK(parsed.tail.clean());
  // Cutting the capture in the middle of its last event is what a dropped
  // connection looks like on the wire: the event is not dispatched, only reported.
  std::string_view shortened = std::string_view(cap->body).substr(0, cap->body.size() - 40);
  auto cut = parse_pieces(shortened, shortened.size());
  CHECK(events_of(cut.seq).size() == events.size() - 1);
  CHECK(cut.tail.partial_line_bytes > 0);
}
