// HttpClient and SseClient against a scripted server on 127.0.0.1: real
// sockets, real curl, the real libuv loop. Each scenario is one script the
// server runs per connection. Every wait is on an event with a deadline; the
// only pacing is the server's own (it writes an event every few ms).
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <functional>
#include <iterator>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "core/clock.h"
#include "probes/transport/http_client.h"
#include "probes/transport/sse_client.h"
#include "tests/catch.h"
#include "tests/support/http_capture.h"

using namespace soak;

namespace {

constexpr int64_t kMs = 1'000'000;
constexpr int64_t kGuardMs = 5'000;       // no scenario may take longer than this
constexpr int64_t kServerWaitMs = 2'000;  // bound on waiting for the server to notice something
const std::string kFixtures = std::string(SOAKD_FIXTURES_DIR) + "/llama-server/";

// ------------------------------------------------------------------ server
sockaddr_in loopback_addr(int port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return a;
}

// A TCP socket bound to 127.0.0.1 on an ephemeral port, which lands in `port`.
int bind_loopback(int* port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a = loopback_addr(0);
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  *port = ntohs(a.sin_port);
  return fd;
}

class Conn {
 public:
  enum class Wait { Timeout, Readable, Closed, Stopping };

  Conn(int fd, int stop_fd) : fd_(fd), stop_fd_(stop_fd) {}

  // Reads one request (headers and Content-Length body). nullopt on close or stop.
  std::optional<std::string> read_request() {
    for (;;) {
      size_t hdr_end = buf_.find("\r\n\r\n");
      if (hdr_end != std::string::npos) {
        size_t need = hdr_end + 4 + content_length(buf_.substr(0, hdr_end));
        if (buf_.size() >= need) {
          std::string req = buf_.substr(0, need);
          buf_.erase(0, need);
          return req;
        }
      }
      Wait w = wait(-1);
      if (w != Wait::Readable) return std::nullopt;
      char tmp[65536];
      ssize_t n = ::recv(fd_, tmp, sizeof tmp, 0);
      if (n <= 0) return std::nullopt;
      buf_.append(tmp, static_cast<size_t>(n));
    }
  }

  bool send(std::string_view bytes) {
    while (!bytes.empty()) {
      ssize_t n = ::send(fd_, bytes.data(), bytes.size(), 0);
      if (n <= 0) return false;
      bytes.remove_prefix(static_cast<size_t>(n));
    }
    return true;
  }

  bool send_chunk(std::string_view data) {
    char head[32];
    int n = snprintf(head, sizeof head, "%zx\r\n", data.size());
    return send(std::string(head, static_cast<size_t>(n)) + std::string(data) + "\r\n");
  }

  // Waits up to `ms` (-1: no limit) for the peer to send or close, or for the server to stop.
  Wait wait(int ms) {
    pollfd p[2] = {{fd_, POLLIN, 0}, {stop_fd_, POLLIN, 0}};
    int r = ::poll(p, 2, ms);
    if (r == 0) return Wait::Timeout;
    if (r < 0 || (p[1].revents & (POLLIN | POLLHUP))) return Wait::Stopping;
    if (!buf_.empty()) return Wait::Readable;
    char c;
    ssize_t n = ::recv(fd_, &c, 1, MSG_PEEK | MSG_DONTWAIT);
    return n > 0 ? Wait::Readable : Wait::Closed;
  }

  // Server-side pacing between events: true if the peer is still there.
  bool pause(int ms) {
    Wait w = wait(ms);
    return w == Wait::Timeout || w == Wait::Readable;
  }

 private:
  static size_t content_length(const std::string& head) {
    std::string lower;
    for (char c : head) lower.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
    size_t at = lower.find("\r\ncontent-length:");
    return at == std::string::npos ? 0 : std::stoul(head.substr(at + 17));
  }

  int fd_;
  int stop_fd_;
  std::string buf_;
};

class ScriptServer {
 public:
  using Script = std::function<void(Conn&)>;

  explicit ScriptServer(Script script) : script_(std::move(script)) {
    ::signal(SIGPIPE, SIG_IGN);
    REQUIRE(::pipe(stop_pipe_) == 0);
    listen_fd_ = bind_loopback(&port_);
    REQUIRE(::listen(listen_fd_, 64) == 0);
    acceptor_ = std::thread([this] { accept_loop(); });
  }

  ~ScriptServer() {
    ::close(stop_pipe_[1]);  // wakes every wait
    acceptor_.join();
    for (auto& t : workers_) t.join();
    for (int fd : fds_) ::close(fd);
    ::close(listen_fd_);
    ::close(stop_pipe_[0]);
  }

  std::string url(const std::string& path) const { return "http://127.0.0.1:" + std::to_string(port_) + path; }

  int connections() {
    std::lock_guard<std::mutex> l(mu_);
    return connections_;
  }

  // Scripts call this when they see the client hang up.
  void note_peer_closed() {
    std::lock_guard<std::mutex> l(mu_);
    ++peer_closed_;
    cv_.notify_all();
  }

  bool wait_peer_closed(int count) {
    std::unique_lock<std::mutex> l(mu_);
    return cv_.wait_for(l, std::chrono::milliseconds(kServerWaitMs), [&] { return peer_closed_ >= count; });
  }

  void record_request(std::string req) {
    std::lock_guard<std::mutex> l(mu_);
    requests_.push_back(std::move(req));
  }
  std::vector<std::string> requests() {
    std::lock_guard<std::mutex> l(mu_);
    return requests_;
  }

 private:
  void accept_loop() {
    for (;;) {
      pollfd p[2] = {{listen_fd_, POLLIN, 0}, {stop_pipe_[0], POLLIN, 0}};
      if (::poll(p, 2, -1) < 0 || (p[1].revents & (POLLIN | POLLHUP))) return;
      int fd = ::accept(listen_fd_, nullptr, nullptr);
      if (fd < 0) continue;
      timeval send_limit{kServerWaitMs / 1000, 0};  // a script never blocks on a client that stopped reading
      ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &send_limit, sizeof send_limit);
      {
        std::lock_guard<std::mutex> l(mu_);
        ++connections_;
        fds_.push_back(fd);
      }
      workers_.emplace_back([this, fd] {
        Conn c(fd, stop_pipe_[0]);
        script_(c);
        ::shutdown(fd, SHUT_RDWR);
      });
    }
  }

  Script script_;
  int listen_fd_ = -1;
  int stop_pipe_[2] = {-1, -1};
  int port_ = 0;
  std::thread acceptor_;
  std::vector<std::thread> workers_;
  std::vector<int> fds_;
  std::mutex mu_;
  std::condition_variable cv_;
  int connections_ = 0;
  int peer_closed_ = 0;
  std::vector<std::string> requests_;
};

std::string sse_head(bool chunked) {
  return std::string("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n") +
         (chunked ? "Transfer-Encoding: chunked\r\n" : "Connection: close\r\n") + "\r\n";
}

std::string content_event(int i) {
  return "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"t" + std::to_string(i) + "\"}}]}\n\n";
}

// Scripts shared by several scenarios. Each reads one request first.
bool open_stream(Conn& c) {
  if (!c.read_request()) return false;
  return c.send(sse_head(true));
}

// Sends `chunk` every `every_ms` until the client goes away.
void repeat_chunk(Conn& c, const std::string& chunk, int every_ms) {
  while (c.send_chunk(chunk) && c.pause(every_ms)) {
  }
}

// Content events every `every_ms` until the client goes away.
void stream_content(Conn& c, int every_ms) {
  if (!open_stream(c)) return;
  for (int i = 0; c.send_chunk(content_event(i)) && c.pause(every_ms); ++i) {
  }
}

// Headers, then silence until the client goes away.
void hang_after_headers(Conn& c) {
  if (open_stream(c)) c.wait(-1);
}

// Raw capture bytes re-sent with its body in chunks of awkward sizes.
void serve_capture_chunked(Conn& c, const test::HttpCapture& cap) {
  std::string head = cap.status_line + "\r\n";
  for (const auto& [k, v] : cap.headers) head += k + ": " + v + "\r\n";
  head += "\r\n";
  c.send(head);
  static const size_t kSizes[] = {1, 7, 100, 2, 3000, 13, 512};
  size_t at = 0;
  for (size_t i = 0; at < cap.body.size(); ++i) {
    size_t n = std::min(kSizes[i % std::size(kSizes)], cap.body.size() - at);
    if (!c.send_chunk(std::string_view(cap.body).substr(at, n))) return;
    at += n;
  }
  c.send("0\r\n\r\n");
}

test::HttpCapture capture(const std::string& name) {
  auto cap = test::load_http_capture(kFixtures + name);
  REQUIRE(cap.ok());
  return *cap;
}

// ------------------------------------------------------------------ client side
class Loop {
 public:
  Loop() { uv_loop_init(&loop_); }
  uv_loop_t* get() { return &loop_; }

 protected:
  uv_loop_t loop_;
};

struct Fixture : Loop {
  SystemClock clock;
  HttpClient http{get(), clock};
  SseClient sse{http};

  ~Fixture() {
    http.shutdown();
    uv_run(get(), UV_RUN_DEFAULT);
    CHECK(uv_loop_close(get()) == 0);  // every handle the client opened was closed
  }

  // Runs the loop until `done()` or the guard deadline; returns done().
  bool run_until(const std::function<bool()>& done) {
    bool expired = false;
    uv_timer_t guard;
    uv_timer_init(get(), &guard);
    guard.data = &expired;
    uv_timer_start(
        &guard, [](uv_timer_t* t) { *static_cast<bool*>(t->data) = true; }, kGuardMs, 0);
    while (!done() && !expired) uv_run(get(), UV_RUN_ONCE);
    uv_close(reinterpret_cast<uv_handle_t*>(&guard), nullptr);
    uv_run(get(), UV_RUN_NOWAIT);
    return done();
  }
};

// Content = a chat delta with text; everything else (role chunk, usage, [DONE],
// oMLX-style keepalive chunks) is not.
EventClass classify(std::string_view data) {
  return data.find("\"content\":\"") != std::string_view::npos ? EventClass::Content : EventClass::NotContent;
}

struct SseRecorder : SseHandler {
  std::vector<std::string> events;
  std::vector<int64_t> content_ns;
  int comments = 0;
  std::optional<ResponseHead> head;
  std::optional<SseResult> result;
  std::function<EventClass(std::string_view)> classifier = classify;
  std::function<void(TransferId)> after_content;  // hook run inside the callback

  void on_headers(TransferId, const ResponseHead& h, int64_t) override { head = h; }
  EventClass on_event(TransferId id, const SseEvent& e, int64_t ns) override {
    events.emplace_back(e.data);
    EventClass c = classifier(e.data);
    if (c == EventClass::Content) {
      content_ns.push_back(ns);
      if (after_content) after_content(id);
    }
    return c;
  }
  std::function<EventClass(std::string_view)> comment_classifier;  // default: every comment is a keep-alive
  EventClass on_comment(TransferId, std::string_view text, int64_t) override {
    ++comments;
    return comment_classifier ? comment_classifier(text) : EventClass::NotContent;
  }
  void on_done(TransferId, const SseResult& r) override { result = r; }
  bool done() const { return result.has_value(); }
  const TransferResult& tr() const { return result->transfer; }
};

struct BodyRecorder : TransferHandler {
  std::string body;
  std::optional<TransferResult> result;
  void on_body(TransferId, std::string_view b, int64_t) override { body.append(b); }
  void on_done(TransferId, const TransferResult& r) override { result = r; }
  bool done() const { return result.has_value(); }
};

HttpRequest sse_request(const ScriptServer& s, int64_t stall_ms, int64_t wall_ms = kGuardMs - 1000) {
  HttpRequest r;
  r.method = "POST";
  r.url = s.url("/v1/chat/completions");
  r.body = R"({"model":"m","messages":[{"role":"user","content":"hi"}],"stream":true})";
  r.stall_timeout_ms = stall_ms;
  r.wall_timeout_ms = wall_ms;
  r.connect_timeout_ms = 1000;
  return r;
}

std::vector<std::string> one_shot_events(const std::string& body) {
  struct Sink : SseSink {
    std::vector<std::string> ev;
    void on_event(const SseEvent& e) override { ev.emplace_back(e.data); }
    void on_comment(std::string_view) override {}
  } sink;
  SseParser p;
  p.feed(body, sink);
  return sink.ev;
}

int closed_port() {
  int port = 0;
  ::close(bind_loopback(&port));
  return port;
}

}  // namespace

// ------------------------------------------------------------------ scenarios
TEST_CASE("http: real llama-server streams re-chunked arrive as the same events, Completed") {
  for (const char* name :
       {"post-v1-chat-completions-stream-include-usage.sse.http", "error-invalid-utf8-output-chat-stream.sse.http",
        "post-v1-chat-completions-tools-required-prefill-stream.sse.http"}) {
    INFO(name);
    auto cap = capture(name);
    ScriptServer server([&](Conn& c) {
      while (auto req = c.read_request()) serve_capture_chunked(c, cap);
    });
    Fixture f;
    SseRecorder rec;
    TransferId id = f.sse.start(sse_request(server, 2000), &rec);
    REQUIRE(id != kNoTransfer);
    REQUIRE(f.run_until([&] { return rec.done(); }));
    const auto& r = rec.tr();
    INFO(r.detail);
    CHECK(r.reason == EndReason::Completed);
    CHECK(r.head.status == 200);
    REQUIRE(rec.head.has_value());
    CHECK(*rec.head->find("content-type") == "text/event-stream");
    CHECK(rec.events == one_shot_events(cap.body));
    CHECK(rec.result->event_stream);
    CHECK(rec.result->events == static_cast<int64_t>(rec.events.size()));
    CHECK(rec.result->tail.clean());
    CHECK(r.bytes_received == static_cast<int64_t>(cap.body.size()));
    CHECK(r.body.empty());
    CHECK_FALSE(r.reused_connection);
    CHECK(r.local_port > 0);
    // Timing points are ordered and all present.
    REQUIRE(r.times.connect_start_ns.has_value());
    REQUIRE(r.times.connected_ns.has_value());
    REQUIRE(r.times.first_byte_ns.has_value());
    REQUIRE(rec.result->first_event_ns.has_value());
    CHECK(r.times.start_ns <= *r.times.connect_start_ns);
    CHECK(*r.times.connect_start_ns <= *r.times.connected_ns);
    CHECK(*r.times.connected_ns <= *r.times.first_byte_ns);
    CHECK(*r.times.first_byte_ns <= *rec.result->first_event_ns);
    CHECK(*rec.result->first_event_ns <= r.times.done_ns);
  }
}

TEST_CASE("http: the request leaves as sent, JSON by default, without Expect: 100-continue") {
  ScriptServer* sp = nullptr;
  ScriptServer server([&](Conn& c) {
    while (auto req = c.read_request()) {
      sp->record_request(*req);
      c.send("HTTP/1.1 204 No Content\r\n\r\n");
    }
  });
  sp = &server;
  Fixture f;
  BodyRecorder rec;
  HttpRequest r;
  r.method = "POST";
  r.url = server.url("/v1/chat/completions");
  r.body = std::string(2 * 1024 * 1024, 'x');  // above curl's 1 MB Expect threshold
  r.headers.push_back({"X-Probe", "marker"});
  f.http.start(r, &rec);
  REQUIRE(f.run_until([&] { return rec.done(); }));
  CHECK(rec.result->reason == EndReason::Completed);
  CHECK(rec.result->head.status == 204);
  auto reqs = server.requests();
  REQUIRE(reqs.size() == 1);
  const std::string& q = reqs[0];
  CHECK(q.rfind("POST /v1/chat/completions HTTP/1.1\r\n", 0) == 0);
  CHECK(q.find("\r\nContent-Type: application/json\r\n") != std::string::npos);
  CHECK(q.find("\r\nX-Probe: marker\r\n") != std::string::npos);
  CHECK(q.find("Expect:") == std::string::npos);
  CHECK(q.size() > r.body.size());
  CHECK(q.compare(q.size() - r.body.size(), r.body.size(), r.body) == 0);
}

TEST_CASE("http: buffered GET returns the body whole; an error JSON on the SSE path is handed back unparsed") {
  auto health = capture("get-health.http");
  auto error = capture("error-missing-messages.http");
  ScriptServer server([&](Conn& c) {
    while (auto req = c.read_request()) {
      const auto& cap = req->rfind("GET", 0) == 0 ? health : error;
      std::string raw = cap.status_line + "\r\n";
      for (const auto& [k, v] : cap.headers) raw += k + ": " + v + "\r\n";
      c.send(raw + "\r\n" + cap.body);
    }
  });
  Fixture f;
  BodyRecorder get;
  HttpRequest r;
  r.url = server.url("/health");
  r.body_mode = BodyMode::Buffer;
  f.http.start(r, &get);
  SseRecorder post;
  f.sse.start(sse_request(server, 2000), &post);
  REQUIRE(f.run_until([&] { return get.done() && post.done(); }));
  CHECK(get.result->reason == EndReason::Completed);
  CHECK(get.result->head.status == 200);
  CHECK(get.result->body == health.body);
  CHECK(get.body.empty());  // buffered: nothing streamed
  CHECK(post.tr().reason == EndReason::Completed);
  CHECK(post.tr().head.status == 400);
  CHECK_FALSE(post.result->event_stream);
  CHECK(post.result->events == 0);
  CHECK(post.tr().body == error.body);
}

TEST_CASE("http: 200 then no body then close is a Completed empty response; a broken chunked stream is PeerClosed") {
  SECTION("no body, close-delimited") {
    ScriptServer server([&](Conn& c) {
      if (c.read_request()) c.send(sse_head(false));
    });
    Fixture f;
    SseRecorder rec;
    f.sse.start(sse_request(server, 2000), &rec);
    REQUIRE(f.run_until([&] { return rec.done(); }));
    CHECK(rec.tr().reason == EndReason::Completed);
    CHECK(rec.tr().head.status == 200);
    CHECK(rec.tr().bytes_received == 0);
    CHECK(rec.result->events == 0);
    CHECK(rec.result->event_stream);
  }
  SECTION("chunked, closed after two events without the last chunk") {
    ScriptServer server([](Conn& c) {
      if (!open_stream(c)) return;
      c.send_chunk(content_event(0));
      c.send_chunk(content_event(1));
      c.send_chunk("data: {\"choices\":[{\"delta\":{\"content\":\"cut");
    });
    Fixture f;
    SseRecorder rec;
    f.sse.start(sse_request(server, 2000), &rec);
    REQUIRE(f.run_until([&] { return rec.done(); }));
    CHECK(rec.tr().reason == EndReason::PeerClosed);
    CHECK(rec.tr().head.status == 200);
    CHECK(rec.events.size() == 2);
    CHECK(rec.result->tail.partial_line_bytes > 0);
  }
}

TEST_CASE("http: 200 then silence trips Stalled, measured from the request start") {
  ScriptServer server(hang_after_headers);
  Fixture f;
  SseRecorder rec;
  f.sse.start(sse_request(server, 300), &rec);
  REQUIRE(f.run_until([&] { return rec.done(); }));
  const auto& r = rec.tr();
  CHECK(r.reason == EndReason::Stalled);
  CHECK(r.head.status == 200);
  CHECK(r.times.first_byte_ns.has_value());
  CHECK(r.times.done_ns - r.times.start_ns >= 300 * kMs);
  CHECK(r.detail.find("request start") != std::string::npos);
}

TEST_CASE("http: keep-alive comments never reset the stall clock") {
  SECTION("pings only: stalled from the request start") {
    ScriptServer server([](Conn& c) {
      if (open_stream(c)) repeat_chunk(c, ": ping\n\n", 20);
    });
    Fixture f;
    SseRecorder rec;
    f.sse.start(sse_request(server, 300), &rec);
    REQUIRE(f.run_until([&] { return rec.done(); }));
    CHECK(rec.tr().reason == EndReason::Stalled);
    CHECK(rec.comments >= 3);  // the pings did arrive
    CHECK(rec.tr().times.done_ns - rec.tr().times.start_ns >= 300 * kMs);
  }
  SECTION("content, then pings: stalled from the last content") {
    ScriptServer server([](Conn& c) {
      if (!open_stream(c)) return;
      for (int i = 0; i < 6; ++i) {
        if (!c.send_chunk(content_event(i)) || !c.pause(50)) return;
      }
      repeat_chunk(c, ": ping\n\n", 20);
    });
    Fixture f;
    SseRecorder rec;
    f.sse.start(sse_request(server, 300), &rec);
    REQUIRE(f.run_until([&] { return rec.done(); }));
    CHECK(rec.tr().reason == EndReason::Stalled);
    REQUIRE(rec.content_ns.size() == 6);
    CHECK(rec.comments >= 3);
    CHECK(rec.tr().times.done_ns - rec.content_ns.back() >= 300 * kMs);
    CHECK(rec.tr().detail.find("last content") != std::string::npos);
  }
  SECTION("data chunks the caller calls keep-alives (oMLX style) do not reset it either") {
    ScriptServer server([](Conn& c) {
      const std::string omlx_keepalive =
          "data: {\"model\":\"keepalive\",\"choices\":[{\"delta\":{\"content\":\"\"}}]}\n\n";
      if (open_stream(c)) repeat_chunk(c, omlx_keepalive, 20);
    });
    Fixture f;
    SseRecorder rec;
    rec.classifier = [](std::string_view d) {
      return d.find("\"keepalive\"") != std::string_view::npos ? EventClass::NotContent : classify(d);
    };
    f.sse.start(sse_request(server, 300), &rec);
    REQUIRE(f.run_until([&] { return rec.done(); }));
    CHECK(rec.tr().reason == EndReason::Stalled);
    CHECK(rec.events.size() >= 3);
    CHECK(rec.content_ns.empty());
  }
}

// Before the first content the stall budget is the stall timeout plus the
// request's prefill allowance, and a comment the handler calls Progress gives a
// full stall window from its arrival (docs/DESIGN.md §2.2). Real sockets: the
// handler decides what a comment is, the client only keeps the clock.
TEST_CASE("http: prefill progress and the prefill allowance hold off the stall clock before the first content") {
  // 900 ms of prefill, then a short answer that ends the stream.
  auto prefill_then_answer = [](const std::string& comment) {
    return [comment](Conn& c) {
      if (!open_stream(c)) return;
      for (int i = 1; i <= 9; ++i)
        if (!c.send_chunk(comment == "count" ? ": keepalive " + std::to_string(i * 100) + "/900\n\n" : comment) ||
            !c.pause(100))
          return;
      for (int i = 0; i < 3; ++i)
        if (!c.send_chunk(content_event(i))) return;
      c.send("0\r\n\r\n");
      c.wait(-1);
    };
  };
  auto progress = [](std::string_view text) {
    return text.rfind("keepalive ", 0) == 0 ? EventClass::Progress : EventClass::NotContent;
  };
  SECTION("progress every 100 ms: a 300 ms stall timeout does not trip over 900 ms of prefill") {
    ScriptServer server(prefill_then_answer("count"));
    Fixture f;
    SseRecorder rec;
    rec.comment_classifier = progress;
    f.sse.start(sse_request(server, 300), &rec);
    REQUIRE(f.run_until([&] { return rec.done(); }));
    INFO(rec.tr().detail);
    CHECK(rec.tr().reason == EndReason::Completed);
    CHECK(rec.content_ns.size() == 3);
    CHECK(rec.content_ns.front() - rec.tr().times.start_ns >= 900 * kMs);
  }
  SECTION("the same comments taken as pings: stalled at 300 ms, since nothing was progress") {
    ScriptServer server(prefill_then_answer("count"));
    Fixture f;
    SseRecorder rec;
    f.sse.start(sse_request(server, 300), &rec);
    REQUIRE(f.run_until([&] { return rec.done(); }));
    CHECK(rec.tr().reason == EndReason::Stalled);
    CHECK(rec.tr().detail.find("no prefill progress reported") != std::string::npos);
    CHECK(rec.content_ns.empty());
  }
  SECTION("pings only, within the allowance: 300 ms + 1000 ms covers the 900 ms prefill") {
    ScriptServer server(prefill_then_answer(": ping\n\n"));
    Fixture f;
    SseRecorder rec;
    rec.comment_classifier = progress;  // a ping is never progress
    HttpRequest req = sse_request(server, 300);
    req.prefill_allowance_ms = 1000;
    f.sse.start(req, &rec);
    REQUIRE(f.run_until([&] { return rec.done(); }));
    INFO(rec.tr().detail);
    CHECK(rec.tr().reason == EndReason::Completed);
    CHECK(rec.content_ns.size() == 3);
  }
  SECTION("pings only, beyond the allowance: stalled when the budget is spent, not before") {
    ScriptServer server(prefill_then_answer(": ping\n\n"));
    Fixture f;
    SseRecorder rec;
    HttpRequest req = sse_request(server, 300);
    req.prefill_allowance_ms = 200;
    f.sse.start(req, &rec);
    REQUIRE(f.run_until([&] { return rec.done(); }));
    CHECK(rec.tr().reason == EndReason::Stalled);
    CHECK(rec.tr().times.done_ns - rec.tr().times.start_ns >= 500 * kMs);
    CHECK(rec.tr().detail.find("prefill allowance of 200 ms") != std::string::npos);
  }
}

TEST_CASE("http: steady content keeps a stream alive past its stall timeout; the wall timeout still ends it") {
  ScriptServer server([](Conn& c) { stream_content(c, 20); });
  Fixture f;
  SseRecorder rec;
  f.sse.start(sse_request(server, 250, 500), &rec);
  REQUIRE(f.run_until([&] { return rec.done(); }));
  CHECK(rec.tr().reason == EndReason::Timeout);
  CHECK(rec.tr().times.done_ns - rec.tr().times.start_ns >= 500 * kMs);
  CHECK(rec.content_ns.size() >= 5);
  CHECK(rec.tr().detail.find("wall timeout") != std::string::npos);
}

TEST_CASE("http: a body over the cap ends Truncated with exactly the cap delivered") {
  const std::string body(100'000, 'b');
  ScriptServer server([&](Conn& c) {
    while (c.read_request()) c.send("HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n" + body);
  });
  Fixture f;
  BodyRecorder streamed, buffered;
  HttpRequest r;
  r.url = server.url("/big");
  r.max_response_bytes = 10'000;
  f.http.start(r, &streamed);
  r.body_mode = BodyMode::Buffer;
  f.http.start(r, &buffered);
  REQUIRE(f.run_until([&] { return streamed.done() && buffered.done(); }));
  CHECK(streamed.result->reason == EndReason::Truncated);
  CHECK(streamed.result->bytes_received == 10'000);
  CHECK(streamed.body.size() == 10'000);
  CHECK(buffered.result->reason == EndReason::Truncated);
  CHECK(buffered.result->body.size() == 10'000);
  CHECK(buffered.result->detail.find("10000") != std::string::npos);
}

TEST_CASE("http: localhost reaches an IPv4-only server (a refused ::1 falls through to 127.0.0.1)") {
  auto health = capture("get-health.http");
  ScriptServer server([&](Conn& c) {
    while (c.read_request()) {
      c.send("HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(health.body.size()) + "\r\n\r\n" + health.body);
    }
  });
  Fixture f;
  BodyRecorder rec;
  HttpRequest r;
  r.url = server.url("/health");
  r.url.replace(r.url.find("127.0.0.1"), 9, "localhost");
  r.body_mode = BodyMode::Buffer;
  f.http.start(r, &rec);
  REQUIRE(f.run_until([&] { return rec.done(); }));
  INFO(rec.result->detail);
  CHECK(rec.result->reason == EndReason::Completed);
  CHECK(rec.result->body == health.body);
}

TEST_CASE("http: a refused port is ConnectRefused with no connection stamp") {
  Fixture f;
  BodyRecorder rec;
  HttpRequest r;
  r.url = "http://127.0.0.1:" + std::to_string(closed_port()) + "/health";
  f.http.start(r, &rec);
  REQUIRE(f.run_until([&] { return rec.done(); }));
  CHECK(rec.result->reason == EndReason::ConnectRefused);
  CHECK_FALSE(rec.result->times.connected_ns.has_value());
  CHECK_FALSE(rec.result->times.first_byte_ns.has_value());
  CHECK(rec.result->head.status == 0);
  CHECK(rec.result->curl_code != 0);
}

TEST_CASE("http: a listener that never completes the handshake is ConnectTimeout") {
  // A listen backlog of 0 that is already full: the kernel drops further SYNs.
  int port = 0;
  int lfd = bind_loopback(&port);
  REQUIRE(::listen(lfd, 0) == 0);
  const sockaddr_in a = loopback_addr(port);
  std::vector<int> fillers;
  for (int i = 0; i < 8; ++i) {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    ::fcntl(fd, F_SETFL, O_NONBLOCK);
    ::connect(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a);
    fillers.push_back(fd);
  }
  {
    Fixture f;
    BodyRecorder rec;
    HttpRequest r;
    r.url = "http://127.0.0.1:" + std::to_string(port) + "/health";
    r.connect_timeout_ms = 200;
    f.http.start(r, &rec);
    REQUIRE(f.run_until([&] { return rec.done(); }));
    CHECK(rec.result->reason == EndReason::ConnectTimeout);
    CHECK_FALSE(rec.result->times.connected_ns.has_value());
  }
  for (int fd : fillers) ::close(fd);
  ::close(lfd);
}

TEST_CASE("http: cancel mid-stream ends Cancelled and the server sees the connection close") {
  ScriptServer* sp = nullptr;
  ScriptServer server([&](Conn& c) {
    stream_content(c, 10);
    sp->note_peer_closed();
  });
  sp = &server;
  Fixture f;

  SECTION("from inside the event callback") {
    SseRecorder rec;
    rec.after_content = [&](TransferId id) {
      if (rec.content_ns.size() == 3) f.sse.cancel(id);
    };
    f.sse.start(sse_request(server, 2000), &rec);
    REQUIRE(f.run_until([&] { return rec.done(); }));
    CHECK(rec.tr().reason == EndReason::Cancelled);
    CHECK(rec.content_ns.size() == 3);  // nothing delivered after the cancel
    CHECK(server.wait_peer_closed(1));
  }
  SECTION("from inside the event callback, with more events in the same read") {
    ScriptServer burst([](Conn& c) {
      if (!open_stream(c)) return;
      std::string five;
      for (int i = 0; i < 5; ++i) five += content_event(i);
      c.send_chunk(five);
      c.wait(-1);
    });
    SseRecorder rec;
    rec.after_content = [&](TransferId id) { f.sse.cancel(id); };
    f.sse.start(sse_request(burst, 2000), &rec);
    REQUIRE(f.run_until([&] { return rec.done(); }));
    CHECK(rec.tr().reason == EndReason::Cancelled);
    CHECK(rec.content_ns.size() == 1);
  }
  SECTION("from outside any callback: on_done comes later, from the loop") {
    SseRecorder rec;
    TransferId id = f.sse.start(sse_request(server, 2000), &rec);
    REQUIRE(f.run_until([&] { return rec.content_ns.size() >= 3; }));
    f.sse.cancel(id);
    CHECK_FALSE(rec.done());
    CHECK(f.http.active() == 1);
    REQUIRE(f.run_until([&] { return rec.done(); }));
    CHECK(rec.tr().reason == EndReason::Cancelled);
    CHECK(f.http.active() == 0);
    CHECK(server.wait_peer_closed(1));
    f.sse.cancel(id);  // finished ids are ignored
  }
}

TEST_CASE("http: keep-alive reuse is the default; ConnectionPolicy::Fresh opens a new connection") {
  auto health = capture("get-health.http");
  std::string raw = health.status_line + "\r\n";
  for (const auto& [k, v] : health.headers) raw += k + ": " + v + "\r\n";
  raw += "\r\n" + health.body;
  for (auto policy : {ConnectionPolicy::Reuse, ConnectionPolicy::Fresh}) {
    ScriptServer server([&](Conn& c) {
      while (c.read_request()) c.send(raw);
    });
    Fixture f;
    BodyRecorder first, second;
    HttpRequest r;
    r.url = server.url("/health");
    r.connection = policy;
    f.http.start(r, &first);
    REQUIRE(f.run_until([&] { return first.done(); }));
    f.http.start(r, &second);
    REQUIRE(f.run_until([&] { return second.done(); }));
    CHECK(first.result->reason == EndReason::Completed);
    CHECK(second.result->reason == EndReason::Completed);
    CHECK(second.body == health.body);
    CHECK_FALSE(first.result->reused_connection);
    CHECK(first.result->times.connect_start_ns.has_value());
    if (policy == ConnectionPolicy::Reuse) {
      CHECK(second.result->reused_connection);
      CHECK_FALSE(second.result->times.connect_start_ns.has_value());
      CHECK(second.result->local_port == first.result->local_port);
      CHECK(server.connections() == 1);
    } else {
      CHECK_FALSE(second.result->reused_connection);
      CHECK(second.result->times.connect_start_ns.has_value());
      CHECK(second.result->local_port != first.result->local_port);
      CHECK(server.connections() == 2);
    }
  }
}

TEST_CASE("http: starting transfers from inside callbacks works (deferred while curl runs)") {
  auto health = capture("get-health.http");
  ScriptServer server([&](Conn& c) {
    while (auto req = c.read_request()) {
      if (req->rfind("GET", 0) == 0) {
        c.send("HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(health.body.size()) + "\r\n\r\n" + health.body);
        continue;
      }
      c.send(sse_head(true));
      for (int i = 0; i < 3; ++i) c.send_chunk(content_event(i));
      c.send_chunk("data: [DONE]\n\n");
      c.send("0\r\n\r\n");
    }
  });
  Fixture f;
  BodyRecorder from_event, from_done;
  struct Chain : SseRecorder {
    std::function<void()> then;
    void on_done(TransferId id, const SseResult& r) override {
      SseRecorder::on_done(id, r);
      then();
    }
  } rec;
  HttpRequest get;
  get.url = server.url("/health");
  get.body_mode = BodyMode::Buffer;
  rec.after_content = [&](TransferId) {
    if (rec.content_ns.size() == 1) CHECK(f.http.start(get, &from_event) != kNoTransfer);
  };
  rec.then = [&] { CHECK(f.http.start(get, &from_done) != kNoTransfer); };
  f.sse.start(sse_request(server, 2000), &rec);
  REQUIRE(f.run_until([&] { return rec.done() && from_event.done() && from_done.done(); }));
  CHECK(rec.tr().reason == EndReason::Completed);
  CHECK(rec.events.back() == "[DONE]");
  CHECK(from_event.result->body == health.body);
  CHECK(from_done.result->body == health.body);
}

TEST_CASE("http: a throwing handler ends its own transfer as Error and nothing unwinds through curl") {
  ScriptServer server([](Conn& c) { stream_content(c, 10); });
  Fixture f;
  SseRecorder rec;
  rec.after_content = [](TransferId) { throw std::runtime_error("boom"); };
  f.sse.start(sse_request(server, 2000), &rec);
  REQUIRE(f.run_until([&] { return rec.done(); }));
  CHECK(rec.tr().reason == EndReason::Error);
  CHECK(rec.tr().detail.find("handler threw: boom") != std::string::npos);
  CHECK(rec.content_ns.size() == 1);
}

TEST_CASE("http: shutdown ends every live transfer as Cancelled before it returns, and frees every handle") {
  ScriptServer server(hang_after_headers);
  Fixture f;
  SseRecorder a, b, c;
  for (auto* r : {&a, &b, &c}) f.sse.start(sse_request(server, 4000), r);
  REQUIRE(f.run_until([&] { return a.head && b.head && c.head; }));
  f.http.shutdown();
  for (auto* r : {&a, &b, &c}) {
    REQUIRE(r->done());
    CHECK(r->tr().reason == EndReason::Cancelled);
    CHECK(r->tr().detail == "client shut down");
  }
  SseRecorder late;
  CHECK(f.sse.start(sse_request(server, 100), &late) == kNoTransfer);
  // ~Fixture drains the loop and checks uv_loop_close() == 0.
}

TEST_CASE("http: shutdown from inside an event callback is finished once curl returns") {
  ScriptServer server([](Conn& c) { stream_content(c, 10); });
  Fixture f;
  SseRecorder a, b;
  a.after_content = [&](TransferId) { f.http.shutdown(); };
  b.after_content = [](TransferId) {};
  f.sse.start(sse_request(server, 2000), &b);
  REQUIRE(f.run_until([&] { return !b.content_ns.empty(); }));
  f.sse.start(sse_request(server, 2000), &a);
  REQUIRE(f.run_until([&] { return a.done() && b.done(); }));
  CHECK(a.tr().reason == EndReason::Cancelled);
  CHECK(b.tr().reason == EndReason::Cancelled);
  CHECK(a.content_ns.size() == 1);
  CHECK(f.http.active() == 0);
}

TEST_CASE("http: a slot request served at an origin restarts the first-content budget of those queued there") {
  // A runtime's queue: "/a" holds the slot and answers after 500 ms; "/b"
  // waits silently (no status line, as llama-server defers it) and answers at
  // 1250 ms. B's stall timeout is 1000 ms: only A's end moves its budget, to
  // 500 + 1000 ms. 250 ms of margin either way.
  auto runtime = [](Conn& c) {
    auto req = c.read_request();
    if (!req) return;
    const bool first = req->find("POST /a ") != std::string::npos;
    if (!c.pause(first ? 500 : 1250)) return;
    if (!c.send(sse_head(true)) || !c.send_chunk(content_event(0)) || !c.send_chunk("data: [DONE]\n\n")) return;
    c.send("0\r\n\r\n");
    c.wait(-1);
  };
  auto run = [&](QueueRole role_a, bool other_origin) {
    ScriptServer server(runtime), elsewhere(runtime);
    Fixture f;
    SseRecorder a, b;
    HttpRequest ra = sse_request(other_origin ? elsewhere : server, 4000);
    ra.url = (other_origin ? elsewhere : server).url("/a");
    ra.queue_role = role_a;
    HttpRequest rb = sse_request(server, 1000);
    rb.url = server.url("/b");
    rb.queue_role = QueueRole::Slot;
    f.sse.start(ra, &a);
    f.sse.start(rb, &b);
    REQUIRE(f.run_until([&] { return a.done() && b.done(); }));
    CHECK(a.tr().reason == EndReason::Completed);
    return b.tr();
  };
  SECTION("both slot requests at one origin: B is queued, not stalled") {
    TransferResult b = run(QueueRole::Slot, false);
    INFO(b.detail);
    CHECK(b.reason == EndReason::Completed);
  }
  SECTION("A takes no slot (a metrics read): B stalls at its own budget, since the request start") {
    TransferResult b = run(QueueRole::None, false);
    CHECK(b.reason == EndReason::Stalled);
    CHECK(b.detail.find("since the request start") != std::string::npos);
  }
  SECTION("A is served at another origin: B's queue did not move") {
    CHECK(run(QueueRole::Slot, true).reason == EndReason::Stalled);
  }
}

TEST_CASE("http: the runtime's own report of its queue moving restarts the budget of what waits at that origin") {
  // Nothing of ours is served ahead of B: only the caller's mark (a reading
  // of the runtime's /slots, as a group step makes) moves its budget.
  ScriptServer server([](Conn& c) {
    if (!c.read_request() || !c.pause(1250)) return;
    if (!c.send(sse_head(true)) || !c.send_chunk(content_event(0)) || !c.send_chunk("data: [DONE]\n\n")) return;
    c.send("0\r\n\r\n");
    c.wait(-1);
  });
  Fixture f;
  SseRecorder b;
  HttpRequest rb = sse_request(server, 1000);
  rb.queue_role = QueueRole::Slot;
  f.sse.start(rb, &b);
  const std::string origin = origin_of(rb.url);
  CHECK(f.http.queued(origin) == 1);
  CHECK(f.http.queued(origin_of("http://127.0.0.1:1")) == 0);
  uv_timer_t mark;
  uv_timer_init(f.get(), &mark);
  struct Ctx {
    Fixture* f;
    std::string origin;
  } ctx{&f, origin};
  mark.data = &ctx;
  uv_timer_start(
      &mark,
      [](uv_timer_t* t) {
        auto* c = static_cast<Ctx*>(t->data);
        c->f->http.mark_queue_moved(c->origin, c->f->clock.mono_ns());
      },
      500, 0);
  REQUIRE(f.run_until([&] { return b.done(); }));
  uv_close(reinterpret_cast<uv_handle_t*>(&mark), nullptr);
  uv_run(f.get(), UV_RUN_NOWAIT);  // the close completes while `mark` is still in scope
  INFO(b.tr().detail);
  CHECK(b.tr().reason == EndReason::Completed);
  CHECK(f.http.queued(origin) == 0);
}

TEST_CASE("http: a keep-alive connection the server closed is not the runtime's failure: a fresh one carries it") {
  // llama-server (cpp-httplib) closes a connection idle for its keep-alive
  // timeout (`Keep-Alive: timeout=5`). A request sent on it as it closes, or
  // after, must reach the server on a new connection, not end as a reset.
  ScriptServer* sp = nullptr;
  auto answer = [](Conn& c) {
    const std::string body = "{\"ok\":1}";
    return c.send("HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(body.size()) +
                  "\r\nKeep-Alive: timeout=5\r\n\r\n" + body);
  };
  auto post = [](const ScriptServer& s) {
    HttpRequest r;
    r.method = "POST";
    r.url = s.url("/v1/chat/completions");
    r.body = R"({"model":"m","messages":[{"role":"user","content":"hi"}]})";
    r.body_mode = BodyMode::Buffer;
    r.queue_role = QueueRole::Slot;
    r.connect_timeout_ms = 1000;
    return r;
  };
  enum class Close { AsTheRequestArrives, WhileIdle };
  auto run = [&](Close how) {
    ScriptServer server([&](Conn& c) {
      if (!c.read_request() || !answer(c)) return;
      if (how == Close::WhileIdle) {
        c.pause(100);  // idle past its keep-alive timeout: the server closes
        sp->note_peer_closed();
        return;
      }
      (void)c.read_request();  // the next request arrived as the server gave the connection up
      sp->note_peer_closed();
    });
    sp = &server;
    Fixture f;
    BodyRecorder first, second;
    f.http.start(post(server), &first);
    REQUIRE(f.run_until([&] { return first.done(); }));
    REQUIRE(first.result->reason == EndReason::Completed);
    if (how == Close::WhileIdle) REQUIRE(server.wait_peer_closed(1));
    f.http.start(post(server), &second);
    REQUIRE(f.run_until([&] { return second.done(); }));
    INFO(second.result->detail);
    CHECK(second.result->reason == EndReason::Completed);
    CHECK(second.result->head.status == 200);
    CHECK(second.result->body == "{\"ok\":1}");
    CHECK_FALSE(second.result->reused_connection);  // it went on a connection of its own
    CHECK(server.connections() == 2);
  };
  SECTION("closed as the next request arrives") { run(Close::AsTheRequestArrives); }
  SECTION("closed while idle, before the next request") { run(Close::WhileIdle); }
}
