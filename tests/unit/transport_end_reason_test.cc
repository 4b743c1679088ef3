// How libcurl's result codes become named end reasons, and the names.
#include <curl/curl.h>

#include <set>
#include <string>

#include "probes/transport/http_types.h"
#include "tests/catch.h"

using namespace soak;

TEST_CASE("end reason: curl codes map to named reasons") {
  CHECK(end_reason_for_curl(CURLE_OK, true) == EndReason::Completed);
  CHECK(end_reason_for_curl(CURLE_COULDNT_CONNECT, false) == EndReason::ConnectRefused);
  CHECK(end_reason_for_curl(CURLE_OPERATION_TIMEDOUT, false) == EndReason::ConnectTimeout);
  // Wall and stall are ours, so a curl timeout after connecting is not a limit we set.
  CHECK(end_reason_for_curl(CURLE_OPERATION_TIMEDOUT, true) == EndReason::Error);
  CHECK(end_reason_for_curl(CURLE_GOT_NOTHING, true) == EndReason::PeerClosed);
  CHECK(end_reason_for_curl(CURLE_PARTIAL_FILE, true) == EndReason::PeerClosed);
  CHECK(end_reason_for_curl(CURLE_RECV_ERROR, true) == EndReason::PeerClosed);
  CHECK(end_reason_for_curl(CURLE_SEND_ERROR, true) == EndReason::PeerClosed);
  CHECK(end_reason_for_curl(CURLE_URL_MALFORMAT, false) == EndReason::Error);
  CHECK(end_reason_for_curl(CURLE_COULDNT_RESOLVE_HOST, false) == EndReason::Error);
}

TEST_CASE("end reason: every reason has its own stable name") {
  std::set<std::string> names;
  for (auto r :
       {EndReason::Completed, EndReason::ConnectRefused, EndReason::ConnectTimeout, EndReason::Timeout,
        EndReason::Stalled, EndReason::Truncated, EndReason::PeerClosed, EndReason::Cancelled, EndReason::Error}) {
    names.insert(std::string(to_string(r)));
  }
  CHECK(names.size() == 9);
  CHECK(to_string(EndReason::Stalled) == "stalled");
  CHECK(to_string(EndReason::ConnectRefused) == "connect_refused");
}

TEST_CASE("response head: header lookup ignores ASCII case and returns the first match") {
  ResponseHead h;
  h.headers = {{"Content-Type", "text/event-stream"}, {"X-A", "1"}, {"x-a", "2"}};
  REQUIRE(h.find("content-type") != nullptr);
  CHECK(*h.find("CONTENT-TYPE") == "text/event-stream");
  CHECK(*h.find("X-a") == "1");
  CHECK(h.find("Content-Length") == nullptr);
  CHECK(header_name_equals("Accept", "aCCEPT"));
  CHECK_FALSE(header_name_equals("Accept", "Accept-Encoding"));
}

TEST_CASE("header lines: blanks and CR LF trimmed, the status of a status line, a header found by any case") {
  CHECK(trim_header_line("  Content-Type: text/event-stream\r\n") == "Content-Type: text/event-stream");
  CHECK(trim_header_line("\t \r\n").empty());
  CHECK(parse_status_line("HTTP/1.1 200 OK") == 200);
  CHECK(parse_status_line("HTTP/2 503") == 503);
  CHECK(parse_status_line("HTTP/1.1 20") == 0);
  CHECK(parse_status_line("HTTP/1.1 2x0 OK") == 0);
  CHECK(parse_status_line("garbage") == 0);
  const std::vector<HttpHeader> hs{{"content-type", "application/json"}, {"X-Other", "1"}};
  CHECK(find_header(hs, "Content-Type"));
  CHECK(find_header(hs, "x-other"));
  CHECK_FALSE(find_header(hs, "Authorization"));
}
