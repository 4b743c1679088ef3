#include "tests/fake_runtime/http_request_parser.h"

#include <algorithm>
#include <cctype>
#include <charconv>

namespace soak::fake {
namespace {

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

bool contains_token(std::string_view list, std::string_view token) {
  while (!list.empty()) {
    size_t comma = list.find(',');
    std::string_view item = trim(list.substr(0, comma));
    if (iequals(item, token)) return true;
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  return false;
}

// End of the header block (index just past the blank line), accepting CRLF or bare LF.
size_t find_head_end(std::string_view buf) {
  for (size_t i = 0; i < buf.size(); ++i) {
    if (buf[i] != '\n') continue;
    if (i + 1 < buf.size() && buf[i + 1] == '\n') return i + 2;
    if (i + 2 < buf.size() && buf[i + 1] == '\r' && buf[i + 2] == '\n') return i + 3;
  }
  return std::string_view::npos;
}

}  // namespace

std::string_view HttpRequest::header(std::string_view name) const {
  for (const auto& [k, v] : headers)
    if (iequals(k, name)) return v;
  return {};
}

std::string_view HttpRequest::query_param(std::string_view name) const {
  std::string_view q = query;
  while (!q.empty()) {
    size_t amp = q.find('&');
    std::string_view kv = q.substr(0, amp);
    size_t eq = kv.find('=');
    if (kv.substr(0, eq) == name) return eq == std::string_view::npos ? std::string_view{} : kv.substr(eq + 1);
    if (amp == std::string_view::npos) break;
    q.remove_prefix(amp + 1);
  }
  return {};
}

ParseEvent HttpRequestParser::fail(int status, std::string message) {
  failed_ = true;
  ParseEvent e;
  e.kind = ParseEvent::Kind::Error;
  e.status = status;
  e.message = std::move(message);
  return e;
}

ParseEvent HttpRequestParser::next() {
  if (failed_) return fail(400, "parser already failed");
  if (!have_head_) {
    // Tolerate blank lines between pipelined requests (RFC 9112 §2.2).
    size_t skip = 0;
    while (skip < buf_.size() && (buf_[skip] == '\r' || buf_[skip] == '\n')) ++skip;
    if (skip) buf_.erase(0, skip);
    size_t end = find_head_end(buf_);
    if (end == std::string::npos) {
      if (buf_.size() > kMaxHeaderBytes) return fail(431, "request header fields too large");
      return {};
    }
    if (end > kMaxHeaderBytes) return fail(431, "request header fields too large");

    HttpRequest req;
    std::string_view head(buf_.data(), end);
    size_t line_end = head.find('\n');
    std::string_view line = trim(head.substr(0, line_end));
    size_t sp1 = line.find(' ');
    size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
    if (sp1 == std::string_view::npos || sp2 == std::string_view::npos) return fail(400, "bad request line");
    req.method = std::string(line.substr(0, sp1));
    req.target = std::string(line.substr(sp1 + 1, sp2 - sp1 - 1));
    std::string_view version = line.substr(sp2 + 1);
    if (version == "HTTP/1.1") {
      req.minor_version = 1;
    } else if (version == "HTTP/1.0") {
      req.minor_version = 0;
    } else {
      return fail(505, "HTTP version not supported");
    }
    if (req.method.empty() || req.target.empty() || req.target.front() != '/') return fail(400, "bad request target");
    size_t qm = req.target.find('?');
    req.path = req.target.substr(0, qm);
    if (qm != std::string::npos) req.query = req.target.substr(qm + 1);

    head.remove_prefix(line_end + 1);
    while (!head.empty()) {
      size_t nl = head.find('\n');
      std::string_view h = head.substr(0, nl);
      head.remove_prefix(nl == std::string_view::npos ? head.size() : nl + 1);
      if (!h.empty() && h.back() == '\r') h.remove_suffix(1);
      if (h.empty()) break;
      size_t colon = h.find(':');
      if (colon == std::string_view::npos || colon == 0) return fail(400, "bad header line");
      req.headers.emplace_back(std::string(h.substr(0, colon)), std::string(trim(h.substr(colon + 1))));
    }

    std::string_view te = req.header("Transfer-Encoding");
    if (!te.empty()) return fail(501, "chunked request bodies are not supported");
    std::string_view cl = req.header("Content-Length");
    size_t body_len = 0;
    if (!cl.empty()) {
      auto [p, ec] = std::from_chars(cl.data(), cl.data() + cl.size(), body_len);
      if (ec != std::errc() || p != cl.data() + cl.size()) return fail(400, "bad Content-Length");
      if (body_len > kMaxBodyBytes) return fail(413, "request body too large");
    }
    std::string_view conn = req.header("Connection");
    req.keep_alive = req.minor_version == 1 ? !contains_token(conn, "close") : contains_token(conn, "keep-alive");

    pending_ = std::move(req);
    head_len_ = end;
    body_len_ = body_len;
    have_head_ = true;
    continue_sent_ = false;
  }

  if (buf_.size() - head_len_ < body_len_) {
    if (!continue_sent_ && iequals(pending_.header("Expect"), "100-continue")) {
      continue_sent_ = true;
      ParseEvent e;
      e.kind = ParseEvent::Kind::Continue;
      return e;
    }
    return {};
  }
  ParseEvent e;
  e.kind = ParseEvent::Kind::Request;
  e.request = std::move(pending_);
  e.request.body.assign(buf_, head_len_, body_len_);
  buf_.erase(0, head_len_ + body_len_);
  pending_ = HttpRequest{};
  have_head_ = false;
  return e;
}

}  // namespace soak::fake
