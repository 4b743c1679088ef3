// The capture splitter other areas' tests rely on: literal strings and a real capture.
#include "tests/catch.h"
#include "tests/support/http_capture.h"

using namespace soak;

TEST_CASE("http capture: status, headers in order, body bytes untouched") {
  auto c =
      test::parse_http_capture("HTTP/1.1 503 Service Unavailable\r\nA: 1\r\nEmpty: \r\nb:  x y \r\n\r\n{\"k\":\r\n1}");
  REQUIRE(c.ok());
  CHECK(c->status_line == "HTTP/1.1 503 Service Unavailable");
  CHECK(c->status == 503);
  REQUIRE(c->headers.size() == 3);
  CHECK(c->headers[1].first == "Empty");
  CHECK(c->headers[1].second.empty());
  CHECK(*c->header("B") == "x y");
  CHECK(c->body == "{\"k\":\r\n1}");
}

TEST_CASE("http capture: interim 1xx blocks are skipped") {
  auto c = test::parse_http_capture("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nX: y\r\n\r\nbody");
  REQUIRE(c.ok());
  CHECK(c->status == 200);
  CHECK(c->body == "body");
}

TEST_CASE("http capture: malformed input is an error value") {
  CHECK_FALSE(test::parse_http_capture("not http").ok());
  CHECK_FALSE(test::parse_http_capture("HTTP/1.1 200 OK\r\nNoColon\r\n\r\n").ok());
  CHECK_FALSE(test::parse_http_capture("HTTP/1.1 200 OK\r\nA: 1\r\n").ok());
  CHECK_FALSE(test::load_http_capture("/nonexistent/file.http").ok());
}

TEST_CASE("http capture: a real llama-server capture") {
  auto c = test::load_http_capture(std::string(SOAKD_FIXTURES_DIR) + "/llama-server/get-health-during-model-load.http");
  REQUIRE(c.ok());
  CHECK(c->status == 503);
  REQUIRE(c->header("content-length") != nullptr);
  CHECK(std::to_string(c->body.size()) == *c->header("Content-Length"));
  CHECK(c->body.find("Loading model") != std::string::npos);
}
