#include "probes/transport/curl_request.h"

#include <string>

namespace soak {
namespace {

// Larger than curl's 16 KiB default: a fast stream is read in fewer calls.
constexpr long kReceiveBufferBytes = 64 * 1024;

}  // namespace

curl_slist* set_request_options(CURL* e, const HttpRequest& r) {
  curl_easy_setopt(e, CURLOPT_URL, r.url.c_str());
  curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
  // Runtimes are local: a proxy from the environment would sit inside every timing.
  curl_easy_setopt(e, CURLOPT_PROXY, "");
  curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(e, CURLOPT_HTTP_VERSION, static_cast<long>(CURL_HTTP_VERSION_1_1));
  curl_easy_setopt(e, CURLOPT_BUFFERSIZE, kReceiveBufferBytes);
  if (r.connect_timeout_ms > 0) {
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(r.connect_timeout_ms));
  }
  if (r.connection == ConnectionPolicy::Fresh) {
    curl_easy_setopt(e, CURLOPT_FRESH_CONNECT, 1L);
    curl_easy_setopt(e, CURLOPT_FORBID_REUSE, 1L);
  }

  if (r.method == "GET" && r.body.empty()) {
    curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
  } else if (r.method == "HEAD") {
    curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
  } else {
    if (!r.body.empty() || r.method == "POST") {
      curl_easy_setopt(e, CURLOPT_POSTFIELDS, r.body.data());
      curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(r.body.size()));
    }
    if (r.method != "POST") curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, r.method.c_str());
  }

  curl_slist* headers = nullptr;
  for (const auto& h : r.headers) {
    std::string line = h.name + ": " + h.value;
    headers = curl_slist_append(headers, line.c_str());
  }
  if (!r.body.empty() && !find_header(r.headers, "Content-Type")) {
    headers = curl_slist_append(headers, "Content-Type: application/json");
  }
  // curl waits up to a second for "100 Continue" before sending a large body;
  // that wait would sit inside every long-context TTFT.
  headers = curl_slist_append(headers, "Expect:");
  curl_easy_setopt(e, CURLOPT_HTTPHEADER, headers);
  return headers;
}

}  // namespace soak
