// Test-local reading of the llama-server captures: splits a raw `.http` file
// (status line, CRLF headers, blank line, body) and cuts a complete SSE body
// into events. Deliberately minimal; tests/support/http_capture.h and the
// transport's SseParser can replace it once both are in the tree.
#pragma once

#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace probes_local {

struct Capture {
  int status = 0;
  std::string headers;
  std::string body;
};

inline std::string read_fixture(const std::string& name) {
  std::ifstream in(std::string(SOAKD_FIXTURES_DIR) + "/llama-server/" + name, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline Capture load_capture(const std::string& name) {
  std::string raw = read_fixture(name);
  Capture c;
  size_t sep = raw.find("\r\n\r\n");
  if (sep == std::string::npos) return c;
  c.headers = raw.substr(0, sep);
  c.body = raw.substr(sep + 4);
  size_t sp = c.headers.find(' ');
  if (sp != std::string::npos) c.status = std::stoi(c.headers.substr(sp + 1, 3));
  return c;
}

// Data fields of the events of a complete SSE body; comment lines are skipped.
inline std::vector<std::string> sse_data_events(std::string_view body) {
  std::vector<std::string> events;
  std::string data;
  bool has_data = false;
  size_t pos = 0;
  while (pos <= body.size()) {
    size_t eol = body.find('\n', pos);
    std::string_view line = body.substr(pos, eol == std::string_view::npos ? body.size() - pos : eol - pos);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) {
      if (has_data) events.push_back(data);
      data.clear();
      has_data = false;
    } else if (line.front() != ':' && line.substr(0, 5) == "data:") {
      std::string_view v = line.substr(5);
      if (!v.empty() && v.front() == ' ') v.remove_prefix(1);
      if (has_data) data += '\n';
      data += v;
      has_data = true;
    }
    if (eol == std::string_view::npos) break;
    pos = eol + 1;
  }
  return events;
}

}  // namespace probes_local
