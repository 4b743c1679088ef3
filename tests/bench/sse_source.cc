#include "tests/bench/sse_source.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#ifndef MSG_NOSIGNAL
#define MSG_NOSIGNAL 0  // macOS: SIGPIPE is ignored in the source process instead
#endif

namespace soak::bench {
namespace {

constexpr int kBacklog = 512;

int64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

std::string tail_events(int tokens, int64_t t0, int64_t t1, int64_t now) {
  const double prompt_ms = static_cast<double>(t1 - t0) / 1e6;
  const double predicted_ms = static_cast<double>(now - t1) / 1e6;
  char fin[600];
  snprintf(fin, sizeof fin,
           "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"model\":\"bench\",\"created\":0,"
           "\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}],\"timings\":{\"prompt_n\":1,"
           "\"prompt_ms\":%.6f,\"predicted_n\":%d,\"predicted_ms\":%.6f,"
           "\"arrival_mono_ns\":%lld,\"first_write_mono_ns\":%lld}}\n\n",
           prompt_ms, tokens, predicted_ms, static_cast<long long>(t0), static_cast<long long>(t1));
  char use[320];
  snprintf(use, sizeof use,
           "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"model\":\"bench\",\"created\":0,"
           "\"choices\":[],\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":%d,\"total_tokens\":%d}}\n\n",
           tokens, tokens + 1);
  return std::string(fin) + use + "data: [DONE]\n\n";
}

struct Conn {
  int fd = -1;
  std::string in;
  std::string out;
  enum class State { Reading, Waiting, Streaming, Closing } state = State::Reading;
  int64_t t0 = 0;  // request fully arrived
  int64_t t1 = 0;  // first content written
  int64_t due = 0;
  int next = 0;
};

class Source {
 public:
  Source(const SourceConfig& c, int listen_fd, int alive_fd) : cfg_(c), listen_fd_(listen_fd), alive_fd_(alive_fd) {
    if (cfg_.interval_ms == 0) {
      for (int i = 1; i < cfg_.tokens; ++i) bulk_ += content_event(i);
    }
  }

  void run() {
    std::vector<pollfd> fds;
    for (;;) {
      fds.clear();
      fds.push_back({listen_fd_, POLLIN, 0});
      if (alive_fd_ >= 0) fds.push_back({alive_fd_, POLLIN, 0});
      size_t first_conn = fds.size();
      int64_t next_due = INT64_MAX;
      for (auto& c : conns_) {
        short ev = 0;
        if (c->state == Conn::State::Reading) ev |= POLLIN;
        if (!c->out.empty()) ev |= POLLOUT;
        fds.push_back({c->fd, ev, 0});
        if ((c->state == Conn::State::Waiting || c->state == Conn::State::Streaming) && c->out.empty())
          next_due = std::min(next_due, c->due);
      }
      int timeout = -1;
      if (next_due != INT64_MAX) {
        int64_t wait = next_due - now_ns();
        timeout = wait <= 0 ? 0 : static_cast<int>((wait + 999'999) / 1'000'000);
      }
      int r = ::poll(fds.data(), fds.size(), timeout);
      if (r < 0 && errno != EINTR) return;
      if (alive_fd_ >= 0 && (fds[1].revents & (POLLIN | POLLHUP))) return;
      if (fds[0].revents & POLLIN) accept_all();
      for (size_t i = first_conn; i < fds.size(); ++i) {
        Conn& c = *conns_[i - first_conn];
        if (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) on_readable(c);
        if (fds[i].revents & POLLOUT) flush(c);
      }
      int64_t now = now_ns();
      for (auto& c : conns_) {
        if ((c->state == Conn::State::Waiting || c->state == Conn::State::Streaming) && c->out.empty() && now >= c->due)
          emit(*c);
      }
      reap();
    }
  }

 private:
  void accept_all() {
    for (;;) {
      int fd = ::accept(listen_fd_, nullptr, nullptr);
      if (fd < 0) return;
      ::fcntl(fd, F_SETFL, O_NONBLOCK);
      int one = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      auto c = std::make_unique<Conn>();
      c->fd = fd;
      conns_.push_back(std::move(c));
    }
  }

  void on_readable(Conn& c) {
    char buf[16384];
    for (;;) {
      ssize_t n = ::recv(c.fd, buf, sizeof buf, 0);
      if (n > 0) {
        c.in.append(buf, static_cast<size_t>(n));
        continue;
      }
      if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) {
        c.state = Conn::State::Closing;
        c.out.clear();
      }
      break;
    }
    if (c.state == Conn::State::Reading) maybe_request(c);
  }

  void maybe_request(Conn& c) {
    size_t end = c.in.find("\r\n\r\n");
    if (end == std::string::npos) return;
    size_t body = 0;
    for (const char* key : {"\r\nContent-Length:", "\r\ncontent-length:"}) {
      size_t at = c.in.find(key);
      if (at != std::string::npos && at < end) body = std::strtoul(c.in.c_str() + at + 17, nullptr, 10);
    }
    if (c.in.size() < end + 4 + body) return;
    int64_t t0 = now_ns();
    if (c.in.rfind("POST ", 0) == 0) {
      arrivals_.push_back(t0);
      c.t0 = t0;
      c.due = t0 + static_cast<int64_t>(cfg_.delay_ms * 1e6);
      c.state = Conn::State::Waiting;
      send(c, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n");
      return;
    }
    std::string body_text = "{\"status\":\"ok\"}";
    if (c.in.rfind("GET /bench/arrivals", 0) == 0) {
      body_text = "[";
      for (size_t i = 0; i < arrivals_.size(); ++i) {
        if (i) body_text += ',';
        body_text += std::to_string(arrivals_[i]);
      }
      body_text += "]";
      arrivals_.clear();
    }
    c.state = Conn::State::Closing;
    send(c, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: " +
                std::to_string(body_text.size()) + "\r\n\r\n" + body_text);
  }

  void emit(Conn& c) {
    if (c.state == Conn::State::Waiting) {
      send(c, content_event(0));
      c.t1 = now_ns();
      c.next = 1;
      c.state = Conn::State::Streaming;
      c.due = c.t1;
      if (cfg_.interval_ms == 0) {
        send(c, bulk_);
        c.next = cfg_.tokens;
      }
    } else {
      send(c, content_event(c.next++));
    }
    if (c.next >= cfg_.tokens) {
      send(c, tail_events(cfg_.tokens, c.t0, c.t1, now_ns()));
      c.state = Conn::State::Closing;
      return;
    }
    c.due += static_cast<int64_t>(cfg_.interval_ms * 1e6);
  }

  void send(Conn& c, const std::string& bytes) {
    c.out += bytes;
    flush(c);
  }

  void flush(Conn& c) {
    while (!c.out.empty()) {
      ssize_t n = ::send(c.fd, c.out.data(), c.out.size(), MSG_NOSIGNAL);
      if (n > 0) {
        c.out.erase(0, static_cast<size_t>(n));
        continue;
      }
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
      c.out.clear();
      c.state = Conn::State::Closing;
      return;
    }
  }

  void reap() {
    for (size_t i = 0; i < conns_.size();) {
      Conn& c = *conns_[i];
      if (c.state == Conn::State::Closing && c.out.empty()) {
        ::close(c.fd);
        conns_[i] = std::move(conns_.back());
        conns_.pop_back();
      } else {
        ++i;
      }
    }
  }

  SourceConfig cfg_;
  int listen_fd_;
  int alive_fd_;
  std::string bulk_;
  std::vector<std::unique_ptr<Conn>> conns_;
  std::vector<int64_t> arrivals_;
};

int listen_on(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd, kBacklog) != 0) {
    perror("sse source: bind/listen");
    std::exit(1);
  }
  ::fcntl(fd, F_SETFL, O_NONBLOCK);
  return fd;
}

int bound_port(int fd) {
  sockaddr_in a{};
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  return ntohs(a.sin_port);
}

}  // namespace

std::string content_event(int i) {
  return "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"model\":\"bench\",\"created\":0,"
         "\"choices\":[{\"index\":0,\"delta\":{\"content\":\" t" +
         std::to_string(i) + "\"},\"finish_reason\":null}]}\n\n";
}

SourceProcess spawn_source(const SourceConfig& config, int alive_fd) {
  int lfd = listen_on(config.port);
  SourceProcess p;
  p.port = bound_port(lfd);
  p.pid = ::fork();
  if (p.pid == 0) {
    ::signal(SIGPIPE, SIG_IGN);
    Source(config, lfd, alive_fd).run();
    ::_exit(0);
  }
  ::close(lfd);  // the child listens; the socket was bound before fork, so connecting now is safe
  return p;
}

void stop_source(SourceProcess& p) {
  if (p.pid <= 0) return;
  ::kill(p.pid, SIGTERM);
  ::waitpid(p.pid, nullptr, 0);
  p.pid = -1;
}

int serve_forever(const SourceConfig& config) {
  ::signal(SIGPIPE, SIG_IGN);
  int lfd = listen_on(config.port);
  printf("sse source on 127.0.0.1:%d tokens=%d interval_ms=%g delay_ms=%g\n", bound_port(lfd), config.tokens,
         config.interval_ms, config.delay_ms);
  fflush(stdout);
  Source(config, lfd, -1).run();
  return 0;
}

}  // namespace soak::bench
