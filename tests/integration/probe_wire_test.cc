// What the probes put on the wire, read from the bytes themselves: a relay on
// 127.0.0.1 between the engine and the fake runtime records every byte the
// engine sends. No functional, tool, long-context or burst request carries
// max_tokens (docs/DESIGN.md §2.2); the API key travels as a Bearer header on every
// request and appears in no stored field.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <map>
#include <mutex>
#include <thread>

#include <nlohmann/json.hpp>

#include "tests/catch.h"
#include "tests/fake_runtime/fake_runtime.h"
#include "tests/integration/probe_harness.h"

using namespace soak;
using namespace soak::probe_test;

namespace {

constexpr int kPollMs = 1'000;

// Forwards 127.0.0.1:port() to 127.0.0.1:upstream and keeps what clients sent.
class RecordingRelay {
 public:
  explicit RecordingRelay(int upstream) : upstream_(upstream) {
    listen_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a = loopback(0);
    REQUIRE(::bind(listen_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    REQUIRE(::listen(listen_, 128) == 0);
    socklen_t len = sizeof a;
    ::getsockname(listen_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    REQUIRE(::pipe(stop_) == 0);
    thread_ = std::thread([this] { loop(); });
  }
  ~RecordingRelay() {
    stop();
    for (auto& [client, p] : pairs_) {
      ::close(client);
      ::close(p.upstream);
    }
    ::close(listen_);
    ::close(stop_[0]);
    ::close(stop_[1]);
  }
  int port() const { return port_; }
  void stop() {
    if (!thread_.joinable()) return;
    char c = 'x';
    (void)!::write(stop_[1], &c, 1);
    thread_.join();
  }
  // Everything clients sent, one string per connection (call stop() first).
  std::vector<std::string> sent() {
    std::lock_guard<std::mutex> g(mu_);
    return done_;
  }

 private:
  struct Pair {
    int upstream = -1;
    std::string sent;
  };
  static sockaddr_in loopback(int port) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<uint16_t>(port));
    return a;
  }
  static bool write_all(int fd, const char* p, size_t n) {
    while (n > 0) {
      ssize_t w = ::send(fd, p, n, MSG_NOSIGNAL);
      if (w <= 0) return false;
      p += w;
      n -= static_cast<size_t>(w);
    }
    return true;
  }
  void close_pair(int client) {
    Pair& p = pairs_[client];
    {
      std::lock_guard<std::mutex> g(mu_);
      done_.push_back(p.sent);
    }
    ::close(client);
    ::close(p.upstream);
    pairs_.erase(client);
  }
  void loop() {
    char buf[65536];
    for (;;) {
      std::vector<pollfd> fds{{stop_[0], POLLIN, 0}, {listen_, POLLIN, 0}};
      for (auto& [client, p] : pairs_) {
        fds.push_back({client, POLLIN, 0});
        fds.push_back({p.upstream, POLLIN, 0});
      }
      if (::poll(fds.data(), fds.size(), kPollMs) < 0) return;
      if (fds[0].revents) {
        std::lock_guard<std::mutex> g(mu_);
        for (auto& [client, p] : pairs_) done_.push_back(p.sent);
        return;
      }
      if (fds[1].revents & POLLIN) {
        int c = ::accept(listen_, nullptr, nullptr);
        int u = ::socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in a = loopback(upstream_);
        if (c >= 0 && ::connect(u, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) {
          pairs_[c].upstream = u;
        } else {
          if (c >= 0) ::close(c);
          ::close(u);
        }
      }
      std::vector<int> gone;
      for (size_t i = 2; i + 1 < fds.size(); i += 2) {
        const int client = fds[i].fd, up = fds[i + 1].fd;
        if (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) {
          ssize_t n = ::recv(client, buf, sizeof buf, 0);
          if (n <= 0 || !write_all(up, buf, static_cast<size_t>(n))) {
            gone.push_back(client);
            continue;
          }
          pairs_[client].sent.append(buf, static_cast<size_t>(n));
        }
        if (fds[i + 1].revents & (POLLIN | POLLHUP | POLLERR)) {
          ssize_t n = ::recv(up, buf, sizeof buf, 0);
          if (n <= 0 || !write_all(client, buf, static_cast<size_t>(n))) gone.push_back(client);
        }
      }
      for (int c : gone)
        if (pairs_.count(c)) close_pair(c);
    }
  }

  int upstream_;
  int listen_ = -1;
  int port_ = 0;
  int stop_[2] = {-1, -1};
  std::map<int, Pair> pairs_;  // relay thread only
  std::mutex mu_;
  std::vector<std::string> done_;
  std::thread thread_;
};

struct WireRequest {
  std::string head;
  std::string path;
  std::string body;
};

// Splits one connection's bytes into requests (Content-Length bodies; curl sends them so).
std::vector<WireRequest> split_requests(std::string bytes) {
  std::vector<WireRequest> out;
  for (;;) {
    size_t end = bytes.find("\r\n\r\n");
    if (end == std::string::npos) break;
    WireRequest r;
    r.head = bytes.substr(0, end);
    size_t sp = r.head.find(' ');
    r.path = r.head.substr(sp + 1, r.head.find(' ', sp + 1) - sp - 1);
    size_t len = 0;
    std::string lower = r.head;
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (size_t cl = lower.find("content-length:"); cl != std::string::npos) len = std::stoul(lower.substr(cl + 15));
    r.body = bytes.substr(end + 4, len);
    bytes.erase(0, end + 4 + len);
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace

TEST_CASE("on the wire: no max_tokens in chat probes, the API key only as a Bearer header") {
  fake::ListenerConfig lc = fake::ListenerConfig::make(fake::Scenario::Healthy);
  lc.knobs.token_interval_ms = 1;
  fake::FakeRuntime rt({lc});
  REQUIRE(rt.start().ok());
  constexpr const char* kKey = "sekrit-key-4711";
  std::vector<ProbeResult> rows;
  std::vector<std::string> sent;
  {
    RecordingRelay relay(rt.port(0));
    probes::EngineOptions o;
    o.env = [](const std::string& name) -> std::optional<std::string> {
      if (name == "SOAKD_TEST_KEY") return std::string(kKey);
      return std::nullopt;
    };
    Harness h(o);
    CandidateConfig c = candidate("http://127.0.0.1:" + std::to_string(relay.port()));
    c.api_key_env = "SOAKD_TEST_KEY";
    rows = h.run(c, probes::all_probe_kinds());
    relay.stop();
    sent = relay.sent();
  }
  INFO(describe(rows));
  for (const auto& r : rows) CHECK(r.outcome == Outcome::Clean);

  std::map<std::string, int> chat_by_kind;
  int requests = 0;
  for (const auto& conn : sent) {
    for (const auto& req : split_requests(conn)) {
      ++requests;
      INFO(req.head);
      CHECK(req.head.find(std::string("\r\nAuthorization: Bearer ") + kKey) != std::string::npos);
      if (req.path != "/v1/chat/completions") continue;
      CHECK(req.body.find("max_tokens") == std::string::npos);
      CHECK(req.body.find("max_completion_tokens") == std::string::npos);
      auto j = nlohmann::json::parse(req.body);
      CHECK_FALSE(j.contains("max_tokens"));
      if (j.value("stream", false)) CHECK(j["stream_options"]["include_usage"] == true);
      const std::string text = j.dump();
      const char* kind = text.find("\"tools\"") != std::string::npos                   ? "tool"
                         : text.find("json_schema") != std::string::npos               ? "json"
                         : text.find("filler for a timing test") != std::string::npos  ? "long_context"
                         : text.find("why bridges are inspected") != std::string::npos ? "burst"
                                                                                       : "other";
      ++chat_by_kind[kind];
    }
  }
  CHECK(requests >= static_cast<int>(rows.size()) - 2);  // all but the two burst summaries are requests
  // Every kind the rule names went over the wire and was checked above.
  CHECK(chat_by_kind["tool"] >= 2);          // tool_call and agent
  CHECK(chat_by_kind["json"] >= 1);          // strict_json
  CHECK(chat_by_kind["long_context"] >= 2);  // fresh and repeat
  CHECK(chat_by_kind["burst"] >= 5);         // 1 + 4
  CHECK(chat_by_kind["other"] >= 5);         // marker, stream, thinking x2, repetition, ...

  for (const auto& r : rows) {
    for (const std::string* field : {&r.detail, &r.excerpt, &r.extra_json, &r.body_hash, &r.workload_id})
      CHECK(field->find("sekrit") == std::string::npos);
  }
}
