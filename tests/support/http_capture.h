// Splits a raw HTTP response capture (`curl -sS -D -` output: status line and
// headers with CRLF, a blank line, then the body bytes as curl delivered them,
// i.e. already de-chunked) into its parts. Interim 1xx blocks are skipped.
// Pure functions; failures are values.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/result.h"

namespace soak::test {

struct HttpCapture {
  std::string status_line;  // e.g. "HTTP/1.1 200 OK"
  int status = 0;
  std::vector<std::pair<std::string, std::string>> headers;  // in order, names as sent
  std::string body;

  // First header with this name (ASCII case-insensitive), or nullptr.
  const std::string* header(std::string_view name) const;
};

Result<HttpCapture> parse_http_capture(std::string_view raw);
Result<HttpCapture> load_http_capture(const std::string& path);

// Whole file as bytes (for fixtures that are not HTTP captures).
Result<std::string> read_file_bytes(const std::string& path);

}  // namespace soak::test
