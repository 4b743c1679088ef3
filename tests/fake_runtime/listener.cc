#include "tests/fake_runtime/listener.h"

#include <signal.h>
#include <unistd.h>

#include <string>
#include <vector>

namespace soak::fake {
namespace {
constexpr int kBacklog = 511;
}

Listener::Listener(uv_loop_t* loop, const Clock& clock, ListenerConfig config, CrashMode crash, Publish publish)
    : loop_(loop),
      cfg_(config),
      crash_mode_(crash),
      publish_(std::move(publish)),
      responder_(loop, clock, std::move(config), *this) {}

Listener::~Listener() { shutdown(); }

Status Listener::listen() {
  uv_tcp_init(loop_, server_.get());
  server_.mark_initialized();
  server_.get()->data = this;
  sockaddr_storage addr{};
  int rc = cfg_.host.find(':') != std::string::npos
               ? uv_ip6_addr(cfg_.host.c_str(), cfg_.port, reinterpret_cast<sockaddr_in6*>(&addr))
               : uv_ip4_addr(cfg_.host.c_str(), cfg_.port, reinterpret_cast<sockaddr_in*>(&addr));
  if (rc != 0) return make_error("bad listen address " + cfg_.host + ": " + uv_strerror(rc));
  rc = uv_tcp_bind(server_.get(), reinterpret_cast<const sockaddr*>(&addr), 0);
  if (rc == 0) {
    rc = uv_listen(reinterpret_cast<uv_stream_t*>(server_.get()), kBacklog, [](uv_stream_t* s, int status) {
      if (status == 0) static_cast<Listener*>(s->data)->on_connection();
    });
  }
  if (rc != 0) return make_error("listen on " + cfg_.host + ":" + std::to_string(cfg_.port) + ": " + uv_strerror(rc));
  sockaddr_storage bound{};
  int len = sizeof bound;
  uv_tcp_getsockname(server_.get(), reinterpret_cast<sockaddr*>(&bound), &len);
  port_ = bound.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port)
                                      : ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  responder_.set_port(port_);
  publish_(responder_.stats());
  return Status::Ok();
}

void Listener::on_connection() {
  if (down_) return;
  auto conn = Connection::accept(
      reinterpret_cast<uv_stream_t*>(server_.get()),
      [this](HttpRequest req, std::shared_ptr<Connection> c) { responder_.handle(std::move(req), std::move(c)); },
      [this](Connection* c) { conns_.erase(c); });
  if (conn) conns_.emplace(conn.get(), conn);
}

void Listener::shutdown() {
  if (down_) return;
  down_ = true;
  responder_.shutdown();
  server_.close();
  std::vector<std::shared_ptr<Connection>> open;
  for (auto& [raw, weak] : conns_)
    if (auto c = weak.lock()) open.push_back(std::move(c));
  for (auto& c : open) c->abort();
}

void Listener::crash() {
  if (crash_mode_ == CrashMode::KillProcess) {
    // Die the way an OOM kill or a segfault looks from outside: no cleanup, no goodbye.
    ::kill(::getpid(), SIGKILL);
  }
  shutdown();
}

}  // namespace soak::fake
