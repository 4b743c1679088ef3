// Helpers for the fake runtime's own tests: reading the real llama-server
// captures, a deliberately small SSE splitter (the real parser belongs to the
// probe engine), key sets, and a blocking libcurl client for loopback.
#pragma once

#include <curl/curl.h>

#include <atomic>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace soak::fake::testing {

struct RawHttp {
  int status = 0;
  std::string head;  // status line and headers
  std::string body;
};

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A capture from tests/fixtures/llama-server: status line, headers, blank line, body.
inline RawHttp read_capture(const std::string& name) {
  std::string raw = read_file(std::string(SOAKD_FIXTURES_DIR) + "/llama-server/" + name);
  RawHttp r;
  size_t split = raw.find("\r\n\r\n");
  r.head = raw.substr(0, split);
  r.body = split == std::string::npos ? "" : raw.substr(split + 4);
  if (r.head.size() > 12) r.status = std::stoi(r.head.substr(9, 3));
  return r;
}

// The `data:` payloads of an SSE body, in order; comments and blank lines dropped.
inline std::vector<std::string> sse_data(const std::string& body) {
  std::vector<std::string> out;
  std::istringstream in(body);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.rfind("data: ", 0) == 0) out.push_back(line.substr(6));
  }
  return out;
}

// The SSE comment lines (": ...") of a body.
inline std::vector<std::string> sse_comments(const std::string& body) {
  std::vector<std::string> out;
  std::istringstream in(body);
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(":", 0) == 0) out.push_back(line);
  return out;
}

inline std::set<std::string> keys(const nlohmann::json& j) {
  std::set<std::string> out;
  if (j.is_object())
    for (const auto& [k, v] : j.items()) out.insert(k);
  return out;
}

struct Response {
  CURLcode code = CURLE_OK;
  long status = 0;
  std::string headers;
  std::string body;
};

struct FetchOptions {
  std::string body;   // non-empty: POST it as JSON
  bool post = false;  // POST even with an empty body
  long timeout_ms = 10000;
  // Returning true aborts the transfer: the client hangs up mid-response.
  std::function<bool(const std::string& body_so_far)> stop_when;
  // Set from another thread to hang up; noticed by curl's progress callback.
  const std::atomic<bool>* cancel = nullptr;
};

// A blocking request on its own connection.
inline Response fetch(const std::string& url, const FetchOptions& o) {
  struct Sink {
    Response r;
    const FetchOptions* o;
  } sink{{}, &o};
  CURL* h = curl_easy_init();
  curl_easy_setopt(h, CURLOPT_URL, url.c_str());
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, o.timeout_ms);
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_slist* hdrs = nullptr;
  if (!o.body.empty() || o.post) {
    hdrs = curl_slist_append(hdrs, "Content-Type: application/json");
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, o.body.c_str());
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, static_cast<long>(o.body.size()));
  }
  curl_easy_setopt(
      h, CURLOPT_HEADERFUNCTION, +[](char* p, size_t s, size_t n, void* u) {
        static_cast<Sink*>(u)->r.headers.append(p, s * n);
        return s * n;
      });
  curl_easy_setopt(h, CURLOPT_HEADERDATA, &sink);
  curl_easy_setopt(
      h, CURLOPT_WRITEFUNCTION, +[](char* p, size_t s, size_t n, void* u) -> size_t {
        auto* k = static_cast<Sink*>(u);
        k->r.body.append(p, s * n);
        if (k->o->stop_when && k->o->stop_when(k->r.body)) return 0;
        return s * n;
      });
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &sink);
  if (o.cancel) {
    curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(
        h, CURLOPT_XFERINFOFUNCTION, +[](void* u, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
          return static_cast<Sink*>(u)->o->cancel->load() ? 1 : 0;
        });
    curl_easy_setopt(h, CURLOPT_XFERINFODATA, &sink);
  }
  sink.r.code = curl_easy_perform(h);
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &sink.r.status);
  curl_easy_cleanup(h);
  curl_slist_free_all(hdrs);
  return sink.r;
}

inline Response fetch(const std::string& url, const std::string& body = "") {
  FetchOptions o;
  o.body = body;
  return fetch(url, o);
}

inline nlohmann::json chat_body(const std::string& user, bool stream, bool include_usage = false) {
  nlohmann::json b = {{"model", "qwen3.6-35b-a3b"}, {"messages", {{{"role", "user"}, {"content", user}}}}};
  if (stream) b["stream"] = true;
  if (include_usage) b["stream_options"] = {{"include_usage", true}};
  return b;
}

}  // namespace soak::fake::testing
