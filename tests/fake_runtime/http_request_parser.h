// Incremental HTTP/1.1 request parser for the fake runtime. Pure: bytes in,
// requests out; no sockets, no clocks. Supports what OpenAI-compatible clients
// send: a request line, headers, a Content-Length body (no chunked request
// bodies), keep-alive and `Connection: close`, and `Expect: 100-continue`.
// Malformed input becomes an Error event carrying the status to answer with;
// nothing throws. One parser per connection, used on the loop thread only.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace soak::fake {

struct HttpRequest {
  std::string method;
  std::string target;  // as sent: path plus optional ?query
  std::string path;
  std::string query;  // without the '?'
  int minor_version = 1;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  bool keep_alive = true;

  // Case-insensitive header lookup; empty when absent.
  std::string_view header(std::string_view name) const;
  // Value of a query parameter (no percent-decoding; the fake's clients send plain values).
  std::string_view query_param(std::string_view name) const;
};

inline constexpr size_t kMaxHeaderBytes = 64 * 1024;
inline constexpr size_t kMaxBodyBytes = 64 * 1024 * 1024;

struct ParseEvent {
  enum class Kind { NeedMore, Continue, Request, Error };
  Kind kind = Kind::NeedMore;
  HttpRequest request;  // Kind::Request
  int status = 0;       // Kind::Error: the status to answer before closing
  std::string message;  // Kind::Error
};

class HttpRequestParser {
 public:
  void feed(std::string_view bytes) { buf_.append(bytes.data(), bytes.size()); }
  // The next event. Continue is reported once per request whose headers ask for
  // `Expect: 100-continue` before its body has fully arrived. After Error the
  // parser stays failed: the connection must be closed.
  ParseEvent next();
  size_t buffered() const { return buf_.size(); }

 private:
  ParseEvent fail(int status, std::string message);

  std::string buf_;
  bool have_head_ = false;
  bool continue_sent_ = false;
  bool failed_ = false;
  size_t head_len_ = 0;
  size_t body_len_ = 0;
  HttpRequest pending_;
};

}  // namespace soak::fake
