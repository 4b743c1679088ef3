// The engine against the real llama-server captures (tests/fixtures/llama-server):
// a loopback server on 127.0.0.1 answers each route with the bytes a real
// llama-server sent (re-framed close-delimited, since curl stored the bodies
// de-chunked), so the probes parse real shapes, not only the fake's.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <map>
#include <thread>

#include <nlohmann/json.hpp>

#include "tests/catch.h"
#include "tests/integration/probe_harness.h"
#include "tests/support/http_capture.h"

using namespace soak;
using namespace soak::probe_test;

namespace {

const std::string kDir = std::string(SOAKD_FIXTURES_DIR) + "/llama-server/";
constexpr const char* kCapturedModel = "tiny.gguf";
constexpr int kPollMs = 1'000;

// Answers "GET /path" or "POST /path" (POST chat: "+stream" when the body asks
// for a stream) with the named capture, one request per connection.
class CaptureServer {
 public:
  explicit CaptureServer(std::map<std::string, std::string> routes) : routes_(std::move(routes)) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    REQUIRE(::listen(fd_, 64) == 0);
    socklen_t len = sizeof a;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    REQUIRE(::pipe(stop_) == 0);
    thread_ = std::thread([this] { serve(); });
  }
  ~CaptureServer() {
    char c = 'x';
    (void)!::write(stop_[1], &c, 1);
    thread_.join();
    ::close(fd_);
    ::close(stop_[0]);
    ::close(stop_[1]);
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

 private:
  static std::string read_request(int c) {
    std::string buf;
    char tmp[65536];
    for (;;) {
      size_t end = buf.find("\r\n\r\n");
      if (end != std::string::npos) {
        std::string lower = buf.substr(0, end);
        for (char& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
        size_t len = 0;
        if (size_t cl = lower.find("content-length:"); cl != std::string::npos) len = std::stoul(lower.substr(cl + 15));
        if (buf.size() >= end + 4 + len) return buf;
      }
      pollfd p{c, POLLIN, 0};
      if (::poll(&p, 1, kPollMs) <= 0) return buf;
      ssize_t n = ::recv(c, tmp, sizeof tmp, 0);
      if (n <= 0) return buf;
      buf.append(tmp, static_cast<size_t>(n));
    }
  }

  std::string answer(const std::string& req) const {
    std::string key = req.substr(0, req.find(' ', req.find(' ') + 1));
    if (key.rfind("POST /v1/chat/completions", 0) == 0) {
      auto body = nlohmann::json::parse(req.substr(req.find("\r\n\r\n") + 4), nullptr, false);
      if (body.is_object() && body.value("stream", false)) key += "+stream";
    }
    auto it = routes_.find(key);
    if (it == routes_.end()) return "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
    auto cap = test::load_http_capture(kDir + it->second);
    // Catch may not be called from this thread: a missing capture fails the test as a 599.
    if (!cap.ok()) return "HTTP/1.1 599 Missing Capture\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
    std::string out = cap->status_line + "\r\n";
    for (const auto& [name, value] : cap->headers) {
      std::string n = name;
      for (char& ch : n) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
      if (n == "transfer-encoding" || n == "content-length" || n == "connection" || n == "keep-alive") continue;
      out += name + ": " + value + "\r\n";
    }
    return out + "Connection: close\r\n\r\n" + cap->body;
  }

  void serve() {
    for (;;) {
      pollfd p[2] = {{stop_[0], POLLIN, 0}, {fd_, POLLIN, 0}};
      if (::poll(p, 2, kPollMs) < 0 || p[0].revents) return;
      if (!(p[1].revents & POLLIN)) continue;
      int c = ::accept(fd_, nullptr, nullptr);
      if (c < 0) continue;
      std::string req = read_request(c);
      if (!req.empty()) {
        std::string out = answer(req);
        for (size_t off = 0; off < out.size();) {
          ssize_t n = ::send(c, out.data() + off, out.size() - off, MSG_NOSIGNAL);
          if (n <= 0) break;
          off += static_cast<size_t>(n);
        }
      }
      ::close(c);
    }
  }

  std::map<std::string, std::string> routes_;
  int fd_ = -1;
  int port_ = 0;
  int stop_[2] = {-1, -1};
  std::thread thread_;
};

CandidateConfig captured(const std::string& url) {
  CandidateConfig c = candidate(url);
  c.model = kCapturedModel;
  return c;
}

}  // namespace

// The captured chat answers stop at the request's max_tokens (finish_reason
// length: the random model never stops on its own). Served to soakd, which
// sends no max_tokens, they read as the server cutting the answer: every field
// is read all the same, and the row names the cap (server_token_cap).
TEST_CASE(
    "real llama-server answers: health, scrape and build read clean; chat answers cut at a limit soakd did not send "
    "are the server's cap") {
  CaptureServer s({{"GET /health", "get-health.http"},
                   {"GET /props", "get-props.http"},
                   {"GET /slots", "get-slots-idle.http"},
                   {"GET /metrics", "get-metrics-after-basic.http"},
                   {"GET /v1/models", "get-v1-models.http"},
                   {"POST /v1/chat/completions", "post-v1-chat-completions-nonstream.http"},
                   {"POST /v1/chat/completions+stream", "post-v1-chat-completions-stream-include-usage.sse.http"}});
  Harness h;
  CandidateConfig c = captured(s.url());
  auto rows = h.run(c, {ProbeKind::Health, ProbeKind::Identity, ProbeKind::Stream, ProbeKind::Scrape});
  INFO(describe(rows));
  REQUIRE(rows.size() == 4);
  for (const auto& r : rows) {
    INFO(to_string(r.kind) << ": " << r.detail);
    const bool chat = r.kind == ProbeKind::Stream || r.kind == ProbeKind::Identity;
    CHECK(r.outcome == (chat ? Outcome::ServerTokenCap : Outcome::Clean));
    CHECK(r.runtime_slots == 2);  // /props total_slots of the captured server
  }
  const ProbeResult* stream = find_row(rows, ProbeKind::Stream);
  CHECK(stream->detail.rfind("llama-server was started with -n 12: start it without -n or with -n -1", 0) == 0);
  CHECK(find_row(rows, ProbeKind::Identity)->detail.find("-n 24") != std::string::npos);
  CHECK(stream->response_model == kCapturedModel);
  CHECK(stream->completion_tokens == 12);
  CHECK(stream->prompt_tokens == 15);
  CHECK(stream->server_cache_n == 3);
  CHECK(stream->server_prompt_n == 12);
  CHECK(stream->server_predicted_tps == Approx(330.7516330861884));
  CHECK(stream->content_events > 0);
  CHECK(stream->t_first_token_us);
  CHECK(stream->t_terminal_us);
  const ProbeResult* identity = find_row(rows, ProbeKind::Identity);
  CHECK(identity->completion_tokens == 24);  // the non-stream answer
  CHECK(nlohmann::json::parse(identity->extra_json)["listed"][0] == kCapturedModel);
  auto scrape = nlohmann::json::parse(find_row(rows, ProbeKind::Scrape)->extra_json);
  CHECK(scrape["props"]["build_info"] == "b9928-81ff7abe5");
  CHECK(scrape["slots"]["busy"] == 0);
  CHECK(scrape["metrics"]["llamacpp:prompt_tokens_total"].is_number());

  auto build = h.read_build(c);
  REQUIRE(build.ok());
  CHECK(build->build == "b9928-81ff7abe5");
  CHECK(build->model == std::string(kCapturedModel));
}

TEST_CASE("real llama-server failures: loading, a stream without the usage asked for, a prompt too long") {
  CaptureServer s({{"GET /health", "get-health-during-model-load.http"},
                   {"POST /v1/chat/completions+stream", "post-v1-chat-completions-stream-no-usage.sse.http"}});
  Harness h;
  CandidateConfig c = captured(s.url());
  auto rows = h.run(c, {ProbeKind::Health, ProbeKind::Stream});
  INFO(describe(rows));
  CHECK(find_row(rows, ProbeKind::Health)->outcome == Outcome::Loading);
  CHECK(find_row(rows, ProbeKind::Stream)->outcome == Outcome::MissingUsage);

  CaptureServer too_long(
      std::map<std::string, std::string>{{"POST /v1/chat/completions+stream", "error-prompt-exceeds-context.http"}});
  CandidateConfig l = captured(too_long.url());
  auto lc = h.run(l, {ProbeKind::LongContext});
  INFO(describe(lc));
  REQUIRE(lc.size() == 1);  // no repeat after a failed fresh request
  CHECK(lc[0].outcome == Outcome::ContextExceeded);
  CHECK(lc[0].http_status == 400);
  CHECK(lc[0].excerpt.find("exceeds the available context size") != std::string::npos);
}
