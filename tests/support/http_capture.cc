#include "tests/support/http_capture.h"

#include <fstream>
#include <sstream>

#include "probes/transport/http_types.h"

namespace soak::test {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// One header block starting at `raw`; returns the bytes after its blank line.
Result<std::string_view> parse_block(std::string_view raw, HttpCapture& out) {
  size_t eol = raw.find("\r\n");
  if (eol == std::string_view::npos) return make_error("no CRLF after the status line");
  std::string_view status_line = raw.substr(0, eol);
  if (status_line.rfind("HTTP/", 0) != 0) return make_error("capture does not start with HTTP/");
  size_t sp = status_line.find(' ');
  if (sp == std::string_view::npos || sp + 4 > status_line.size()) return make_error("malformed status line");
  int status = 0;
  for (size_t i = sp + 1; i < sp + 4; ++i) {
    char c = status_line[i];
    if (c < '0' || c > '9') return make_error("malformed status code");
    status = status * 10 + (c - '0');
  }
  out.status_line = std::string(status_line);
  out.status = status;
  out.headers.clear();
  size_t pos = eol + 2;
  for (;;) {
    size_t next = raw.find("\r\n", pos);
    if (next == std::string_view::npos) return make_error("header block does not end with a blank line");
    std::string_view line = raw.substr(pos, next - pos);
    pos = next + 2;
    if (line.empty()) break;
    size_t colon = line.find(':');
    if (colon == std::string_view::npos) return make_error("header line without a colon");
    out.headers.emplace_back(std::string(line.substr(0, colon)), std::string(trim(line.substr(colon + 1))));
  }
  return raw.substr(pos);
}

}  // namespace

const std::string* HttpCapture::header(std::string_view name) const {
  for (const auto& [k, v] : headers) {
    if (header_name_equals(k, name)) return &v;
  }
  return nullptr;
}

Result<HttpCapture> parse_http_capture(std::string_view raw) {
  HttpCapture cap;
  for (;;) {
    auto rest = parse_block(raw, cap);
    if (!rest.ok()) return rest.error();
    raw = *rest;
    if (cap.status >= 200) break;
  }
  cap.body = std::string(raw);
  return cap;
}

Result<std::string> read_file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error("cannot open " + path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Result<HttpCapture> load_http_capture(const std::string& path) {
  auto bytes = read_file_bytes(path);
  if (!bytes.ok()) return bytes.error();
  auto cap = parse_http_capture(*bytes);
  if (!cap.ok()) return make_error(path + ": " + cap.message());
  return cap;
}

}  // namespace soak::test
