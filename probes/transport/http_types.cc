#include "probes/transport/http_types.h"

#include <curl/curl.h>

namespace soak {

bool header_name_equals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  auto lower = [](char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; };
  for (size_t i = 0; i < a.size(); ++i) {
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

std::string_view trim_header_line(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r' || s.back() == '\n'))
    s.remove_suffix(1);
  return s;
}

int parse_status_line(std::string_view line) {
  size_t sp = line.find(' ');
  if (sp == std::string_view::npos || sp + 4 > line.size()) return 0;
  int status = 0;
  for (size_t i = sp + 1; i < sp + 4; ++i) {
    if (line[i] < '0' || line[i] > '9') return 0;
    status = status * 10 + (line[i] - '0');
  }
  return status;
}

bool find_header(const std::vector<HttpHeader>& headers, std::string_view name) {
  for (const auto& h : headers) {
    if (header_name_equals(h.name, name)) return true;
  }
  return false;
}

std::string origin_of(std::string_view url) {
  const size_t sep = url.find("://");
  if (sep == std::string_view::npos) return std::string(url);
  auto lower = [](std::string_view s) {
    std::string out(s);
    for (char& c : out)
      if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    return out;
  };
  const std::string scheme = lower(url.substr(0, sep));
  std::string_view authority = url.substr(sep + 3);
  authority = authority.substr(0, authority.find_first_of("/?#"));
  if (size_t at = authority.rfind('@'); at != std::string_view::npos) authority.remove_prefix(at + 1);
  // The port follows the last ':' outside an IPv6 literal's brackets.
  const size_t colon = authority.rfind(':');
  const bool has_port = colon != std::string_view::npos && authority.find(']', colon) == std::string_view::npos;
  std::string host = lower(has_port ? authority.substr(0, colon) : authority);
  std::string port = has_port ? std::string(authority.substr(colon + 1)) : std::string();
  if (port.empty()) port = scheme == "https" ? "443" : "80";
  return scheme + "://" + host + ":" + port;
}

const std::string* ResponseHead::find(std::string_view name) const {
  for (const auto& h : headers) {
    if (header_name_equals(h.name, name)) return &h.value;
  }
  return nullptr;
}

std::string_view to_string(EndReason r) {
  switch (r) {
    case EndReason::Completed: return "completed";
    case EndReason::ConnectRefused: return "connect_refused";
    case EndReason::ConnectTimeout: return "connect_timeout";
    case EndReason::Timeout: return "timeout";
    case EndReason::Stalled: return "stalled";
    case EndReason::QueueTimeout: return "queue_timeout";
    case EndReason::Truncated: return "truncated";
    case EndReason::PeerClosed: return "peer_closed";
    case EndReason::Cancelled: return "cancelled";
    case EndReason::Error: return "error";
  }
  return "error";
}

EndReason end_reason_for_curl(int curl_code, bool connected) {
  switch (static_cast<CURLcode>(curl_code)) {
    case CURLE_OK: return EndReason::Completed;
    case CURLE_COULDNT_CONNECT: return EndReason::ConnectRefused;
    case CURLE_OPERATION_TIMEDOUT:
      // Only the connect timeout is curl's; wall and stall are our own timers,
      // so a curl timeout after connecting is not one of our limits.
      return connected ? EndReason::Error : EndReason::ConnectTimeout;
    case CURLE_GOT_NOTHING:   // connection closed before any response byte
    case CURLE_PARTIAL_FILE:  // chunked stream without its last chunk, short Content-Length
    case CURLE_RECV_ERROR:    // connection reset while reading
    case CURLE_SEND_ERROR:    // connection reset while sending the request
      return EndReason::PeerClosed;
    default: return EndReason::Error;
  }
}

}  // namespace soak
