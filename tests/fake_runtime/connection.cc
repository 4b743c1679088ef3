#include "tests/fake_runtime/connection.h"

#include <cstdio>
#include <cstdlib>

namespace soak::fake {
namespace {

constexpr size_t kReadChunk = 64 * 1024;

struct WriteReq {
  uv_write_t req{};
  std::string data;
  std::shared_ptr<Connection> conn;  // keeps the connection alive until the write completes
  bool close_after = false;
};

std::string head_bytes(int status, const Headers& headers, const char* framing) {
  std::string out = "HTTP/1.1 " + std::to_string(status) + " " + status_reason(status) + "\r\n";
  for (const auto& [k, v] : headers) out += k + ": " + v + "\r\n";
  if (framing) out += framing;
  out += "\r\n";
  return out;
}

}  // namespace

std::string status_reason(int status) {
  switch (status) {
    case 100: return "Continue";
    case 200: return "OK";
    case 400: return "Bad Request";
    case 404: return "Not Found";
    case 413: return "Payload Too Large";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Responder Error";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    case 505: return "HTTP Version Not Supported";
    default: return "Status";
  }
}

std::shared_ptr<Connection> Connection::accept(uv_stream_t* server, Handler handler, Closed on_closed) {
  std::shared_ptr<Connection> c(new Connection(std::move(handler), std::move(on_closed)));
  uv_tcp_init(server->loop, &c->tcp_);
  c->tcp_.data = c.get();
  c->self_ = c;
  if (uv_accept(server, reinterpret_cast<uv_stream_t*>(&c->tcp_)) != 0) {
    c->close(Cause::Responder);
    return nullptr;
  }
  uv_tcp_nodelay(&c->tcp_, 1);
  uv_read_start(
      reinterpret_cast<uv_stream_t*>(&c->tcp_),
      [](uv_handle_t*, size_t, uv_buf_t* buf) {
        buf->base = static_cast<char*>(std::malloc(kReadChunk));
        buf->len = buf->base ? kReadChunk : 0;
      },
      [](uv_stream_t* s, ssize_t nread, const uv_buf_t* buf) {
        static_cast<Connection*>(s->data)->on_read(nread, buf);
        std::free(buf->base);
      });
  return c;
}

void Connection::on_read(ssize_t nread, const uv_buf_t* buf) {
  if (closing_) return;
  if (nread < 0) {
    close(Cause::Peer);
    return;
  }
  if (nread == 0) return;
  parser_.feed(std::string_view(buf->base, static_cast<size_t>(nread)));
  process();
}

void Connection::process() {
  if (processing_) return;
  processing_ = true;
  auto hold = shared_from_this();
  while (!closing_ && !busy_ && !draining_) {
    ParseEvent ev = parser_.next();
    if (ev.kind == ParseEvent::Kind::NeedMore) break;
    if (ev.kind == ParseEvent::Kind::Continue) {
      write_raw("HTTP/1.1 100 Continue\r\n\r\n", false);
      continue;
    }
    if (ev.kind == ParseEvent::Kind::Error) {
      Headers h{{"Connection", "close"}, {"Content-Type", "text/plain"}};
      std::string body = ev.message + "\n";
      busy_ = true;
      respond(ev.status, h, body, Persist::Close);
      break;
    }
    busy_ = true;
    handler_(std::move(ev.request), hold);
  }
  processing_ = false;
}

void Connection::write_raw(std::string data, bool close_after) {
  if (closing_) return;
  auto* w = new WriteReq;
  w->data = std::move(data);
  w->conn = shared_from_this();
  w->close_after = close_after;
  uv_buf_t b = uv_buf_init(w->data.data(), static_cast<unsigned>(w->data.size()));
  int rc = uv_write(&w->req, reinterpret_cast<uv_stream_t*>(&tcp_), &b, 1, [](uv_write_t* req, int status) {
    std::unique_ptr<WriteReq> w(reinterpret_cast<WriteReq*>(req));
    if (status < 0) {
      if (status != UV_ECANCELED) w->conn->close(Cause::Peer);
      return;
    }
    if (w->close_after) w->conn->close(Cause::Responder);
  });
  if (rc != 0) {
    delete w;
    close(Cause::Peer);
  }
}

void Connection::finish_response(Persist persist) {
  busy_ = false;
  on_gone_ = nullptr;
  if (persist == Persist::Close) {
    draining_ = true;  // the last write closes the connection
    return;
  }
  // More requests may already be buffered (pipelining or a quick client).
  if (!processing_ && parser_.buffered() > 0) process();
}

void Connection::respond(int status, const Headers& headers, std::string_view body, Persist persist) {
  if (closing_) return;
  std::string out = head_bytes(status, headers, nullptr);
  out.insert(out.size() - 2, "Content-Length: " + std::to_string(body.size()) + "\r\n");
  out.append(body.data(), body.size());
  write_raw(std::move(out), persist == Persist::Close);
  finish_response(persist);
}

void Connection::start_chunked(int status, const Headers& headers, Persist persist) {
  if (closing_) return;
  chunked_persist_ = persist;
  write_raw(head_bytes(status, headers, "Transfer-Encoding: chunked\r\n"), false);
}

void Connection::write_chunk(std::string_view data) {
  if (closing_ || data.empty()) return;
  char size[32];
  std::snprintf(size, sizeof size, "%zx\r\n", data.size());
  std::string out(size);
  out.append(data.data(), data.size());
  out += "\r\n";
  write_raw(std::move(out), false);
}

void Connection::end_chunked() {
  if (closing_) return;
  write_raw("0\r\n\r\n", chunked_persist_ == Persist::Close);
  finish_response(chunked_persist_);
}

void Connection::head_then_close(int status, const Headers& headers) {
  if (closing_) return;
  write_raw(head_bytes(status, headers, nullptr), true);
  draining_ = true;
  busy_ = false;
  on_gone_ = nullptr;
}

void Connection::abort() {
  on_gone_ = nullptr;
  close(Cause::Responder);
}

void Connection::close(Cause cause) {
  if (closing_) return;
  closing_ = true;
  auto gone = std::move(on_gone_);
  on_gone_ = nullptr;
  bool was_busy = busy_;
  busy_ = false;
  uv_close(reinterpret_cast<uv_handle_t*>(&tcp_), [](uv_handle_t* h) {
    auto* c = static_cast<Connection*>(h->data);
    if (c->on_closed_) c->on_closed_(c);
    auto last = std::move(c->self_);  // may destroy the connection on scope exit
  });
  if (cause == Cause::Peer && was_busy && gone) gone();
}

}  // namespace soak::fake
