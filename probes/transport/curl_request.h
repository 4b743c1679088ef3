// What one HttpRequest asks of a curl easy handle: URL, method and body, the
// headers, the connection policy and connect timeout, and the fixed choices
// every transfer shares (no proxy, no redirects, HTTP/1.1, no "Expect:
// 100-continue"). HttpClient adds its callbacks and limits on top.
//
// Ownership: the returned header list is what the handle now points to; the
// caller frees it (curl_slist_free_all) after the handle. The request's URL,
// body and method must outlive the transfer (curl keeps pointers to them).
#pragma once

#include <curl/curl.h>

#include "probes/transport/http_types.h"

namespace soak {

curl_slist* set_request_options(CURL* e, const HttpRequest& r);

}  // namespace soak
