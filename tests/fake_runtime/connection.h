// One accepted TCP connection of the fake runtime: reads and parses requests,
// hands each complete request to the handler, and writes exactly one response
// per request (Content-Length, chunked, or close-delimited), then moves on to
// the next buffered request or closes.
//
// Ownership: shared_ptr. The connection keeps itself alive while its uv handle
// is open; whoever serves a request (a job) holds a shared_ptr too, so a
// response callback after the peer left is a harmless no-op. All calls on the
// loop thread. Failures (write errors, EOF) close the connection; if a response
// was in progress the on_gone callback tells its server, once.
#pragma once

#include <uv.h>

#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "tests/fake_runtime/http_request_parser.h"
#include "tests/fake_runtime/shapes.h"

namespace soak::fake {

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  using Handler = std::function<void(HttpRequest, std::shared_ptr<Connection>)>;
  using Closed = std::function<void(Connection*)>;

  // Accepts a pending connection from `server`; returns null if accept fails.
  static std::shared_ptr<Connection> accept(uv_stream_t* server, Handler handler, Closed on_closed);

  // --- one response per request ---------------------------------------
  void respond(int status, const Headers& headers, std::string_view body, Persist persist);
  void start_chunked(int status, const Headers& headers, Persist persist);
  void write_chunk(std::string_view data);  // one HTTP chunk (no-op for empty data)
  void end_chunked();                       // the terminating 0-size chunk, response complete
  // Status line and headers with neither Content-Length nor chunking, then close:
  // a clean close-delimited response with an empty body.
  void head_then_close(int status, const Headers& headers);
  // Close now, on the server's initiative: on_gone does not fire.
  void abort();

  // Called once if the peer leaves (EOF, error) while a response is in progress.
  void set_on_gone(std::function<void()> cb) { on_gone_ = std::move(cb); }
  bool open() const { return !closing_; }
  bool responding() const { return busy_; }

  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;
  ~Connection() = default;

 private:
  Connection(Handler handler, Closed on_closed) : handler_(std::move(handler)), on_closed_(std::move(on_closed)) {}

  void on_read(ssize_t nread, const uv_buf_t* buf);
  void process();
  void write_raw(std::string data, bool close_after);
  void finish_response(Persist persist);
  enum class Cause { Responder, Peer };  // only a peer-side failure notifies on_gone
  void close(Cause cause);

  uv_tcp_t tcp_{};
  std::shared_ptr<Connection> self_;  // released in the uv close callback
  HttpRequestParser parser_;
  Handler handler_;
  Closed on_closed_;
  std::function<void()> on_gone_;
  Persist chunked_persist_ = Persist::KeepAlive;
  bool busy_ = false;        // a request was dispatched and its response is not finished
  bool processing_ = false;  // inside process(): guards re-entry from a synchronous respond()
  bool closing_ = false;
  bool draining_ = false;  // the last response asked to close: read no further requests
};

std::string status_reason(int status);

}  // namespace soak::fake
