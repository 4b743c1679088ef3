#include <fstream>
#include <string>

#include "core/config.h"
#include "tests/catch.h"

using namespace soak;

namespace {

const char* kGood = R"({
  // comments are allowed
  "store": "/tmp/soakd-test/soakd.db",
  "defaults": { "stages": { "canary": "30m" }, "cadence": { "burst": "5m" } },
  /* block comments too */
  "candidates": [
    { "name": "a", "model": "qwen3.6-35b-a3b", "runtime": "llama.cpp", "base_url": "http://127.0.0.1:8080/",
      "build": { "from": "http" } },
    { "name": "b", "model": "qwen3.6-35b-a3b", "runtime": "mlx-lm", "base_url": "http://127.0.0.1:8081",
      "baseline": "a", "stages": { "gate": "1h" }, "build": { "command": ["mlx_lm.server", "--version"] } }
  ]
})";

Result<Config> parse(const std::string& text) { return parse_config(text, "test.json", "/etc/soakd"); }

// Parses `text` and expects exactly one error line containing every needle.
void expect_error(const std::string& text, std::initializer_list<std::string> needles) {
  auto r = parse(text);
  REQUIRE_FALSE(r.ok());
  INFO(r.message());
  for (const auto& n : needles) CHECK(r.message().find(n) != std::string::npos);
  CHECK(r.message().rfind("test.json: ", 0) == 0);
}

std::string with_candidates(const std::string& cands) { return R"({"candidates": [)" + cands + "]}"; }

const std::string kA = R"({"name":"a","model":"m","runtime":"llama.cpp","base_url":"http://127.0.0.1:8080"})";

}  // namespace

TEST_CASE("durations parse with units and reject bare or bad ones") {
  CHECK(*parse_duration("90s") == 90'000);
  CHECK(*parse_duration("2h") == 2 * kHour);
  CHECK(*parse_duration("7d") == 7 * kDay);
  CHECK(*parse_duration("1h30m") == 90 * kMinute);
  CHECK(*parse_duration("250ms") == 250);
  CHECK_FALSE(parse_duration("90").ok());
  CHECK_FALSE(parse_duration("2 h").ok());
  CHECK_FALSE(parse_duration("2w").ok());
  CHECK_FALSE(parse_duration("").ok());
  CHECK(format_duration(90 * kMinute) == "1h30m");
  CHECK(format_duration(7 * kDay) == "7d");
}

TEST_CASE("a good config parses, merges defaults and per-candidate overrides") {
  auto r = parse(kGood);
  REQUIRE(r.ok());
  const Config& c = *r;
  REQUIRE(c.candidates.size() == 2);
  CHECK(c.store_path == "/tmp/soakd-test/soakd.db");
  CHECK(c.candidates[0].base_url == "http://127.0.0.1:8080");  // trailing slash dropped
  CHECK(c.candidates[0].runtime == RuntimeKind::LlamaCpp);
  CHECK(c.candidates[0].settings.stages.canary_ms == 30 * kMinute);  // from defaults
  CHECK(c.candidates[0].settings.stages.gate_ms == kDefaultGateMs);  // built-in default
  CHECK(c.candidates[1].settings.stages.gate_ms == kHour);           // candidate override
  CHECK(c.candidates[1].settings.stages.canary_ms == 30 * kMinute);  // still inherits
  CHECK(c.candidates[1].settings.cadence.burst_ms == 5 * kMinute);
  CHECK(c.candidates[1].build.source == BuildSource::Command);
  CHECK(c.candidates[1].build.command.size() == 2);
  CHECK(c.candidates[1].baseline == std::optional<std::string>("a"));
  CHECK(c.candidates[0].settings.sampling.temperature == Approx(0.6));
  CHECK(c.candidate_hash(c.candidates[0]) != c.candidate_hash(c.candidates[1]));
  CHECK(c.candidate_hash(c.candidates[0]) == c.candidate_hash(c.candidates[0]));
}

TEST_CASE("defaults come after candidates in the file and still apply") {
  auto r = parse(R"({"candidates": [)" + kA + R"(], "defaults": {"stages": {"soak": "3d"}}})");
  REQUIRE(r.ok());
  CHECK(r->candidates[0].settings.stages.soak_ms == 3 * kDay);
}

TEST_CASE("relative store paths resolve against the config file's directory") {
  auto r = parse(R"({"store": "data/s.db", "candidates": [)" + kA + "]}");
  REQUIRE(r.ok());
  CHECK(r->store_path == "/etc/soakd/data/s.db");
}

TEST_CASE("invalid JSON names the file and the position") {
  expect_error("{\"candidates\": [", {"not valid JSON", "line"});
}

TEST_CASE("unknown keys are errors with a suggestion, at every level") {
  expect_error(R"({"candidats": []})", {"candidats", "did you mean \"candidates\""});
  expect_error(with_candidates(R"({"name":"a","model":"m","runtime":"llama.cpp","base_url":"http://127.0.0.1:1","basline":"x"})"),
               {"candidates[0].basline", "did you mean \"baseline\""});
  expect_error(R"({"defaults": {"stages": {"cannary": "2h"}}, "candidates": [)" + kA + "]}",
               {"defaults.stages.cannary", "did you mean \"canary\""});
}

TEST_CASE("missing required keys and wrong types are named with an example") {
  expect_error(R"({})", {"candidates: is required", "e.g."});
  expect_error(with_candidates(R"({"name":"a","runtime":"llama.cpp","base_url":"http://127.0.0.1:1"})"),
               {"candidates[0].model: is required", "e.g. \"model\""});
  expect_error(with_candidates(R"({"name":"a","model":"m","runtime":"llama.cpp","base_url":8080})"),
               {"candidates[0].base_url: must be a string", "e.g. \"http://127.0.0.1:8080\""});
}

TEST_CASE("bad base URLs are rejected with the reason") {
  for (const char* url : {"127.0.0.1:8080", "ftp://x:1", "http://", "http://u:p@host:1", "http://h:99999"}) {
    std::string c = R"({"name":"a","model":"m","runtime":"llama.cpp","base_url":")" + std::string(url) + "\"}";
    expect_error(with_candidates(c), {"candidates[0].base_url", "http://"});
  }
  expect_error(with_candidates(R"({"name":"a","model":"m","runtime":"llama.cpp","base_url":"http://127.0.0.1:8080/v1"})"),
               {"drop the trailing /v1"});
  CHECK(parse(with_candidates(R"({"name":"a","model":"m","runtime":"llama.cpp","base_url":"http://[::1]:8080"})")).ok());
}

TEST_CASE("unknown runtime lists the known ones") {
  expect_error(with_candidates(R"({"name":"a","model":"m","runtime":"llamacpp","base_url":"http://127.0.0.1:1"})"),
               {"candidates[0].runtime", "unknown runtime \"llamacpp\"", "llama.cpp, mlx-lm"});
}

TEST_CASE("duplicate candidate names are rejected") {
  expect_error(with_candidates(kA + "," + kA), {"candidates[1].name", "duplicate candidate name \"a\""});
}

TEST_CASE("a baseline that names no candidate is rejected") {
  expect_error(with_candidates(R"({"name":"a","model":"m","runtime":"llama.cpp","base_url":"http://127.0.0.1:1","baseline":"zzz"})"),
               {"candidates[0].baseline", "names no candidate: \"zzz\""});
  expect_error(with_candidates(R"({"name":"a","model":"m","runtime":"llama.cpp","base_url":"http://127.0.0.1:1","baseline":"a"})"),
               {"its own baseline"});
}

TEST_CASE("an API key over plain HTTP to a non-loopback host is rejected unless opted in") {
  std::string remote = R"({"name":"a","model":"m","runtime":"vllm","base_url":"http://10.0.0.5:8000","api_key_env":"VLLM_KEY")";
  expect_error(with_candidates(remote + "}"), {"candidates[0].api_key_env", "plain HTTP to 10.0.0.5", "allow_insecure_api_key"});
  CHECK(parse(with_candidates(remote + R"(,"allow_insecure_api_key":true})")).ok());
  CHECK(parse(with_candidates(R"({"name":"a","model":"m","runtime":"vllm","base_url":"https://10.0.0.5:8000","api_key_env":"VLLM_KEY"})")).ok());
  CHECK(parse(with_candidates(R"({"name":"a","model":"m","runtime":"vllm","base_url":"http://localhost:8000","api_key_env":"VLLM_KEY"})")).ok());
  // The key itself pasted in place of a variable name is refused, and not echoed back.
  auto r = parse(with_candidates(R"({"name":"a","model":"m","runtime":"vllm","base_url":"https://h","api_key_env":"sk-abc123secret"})"));
  REQUIRE_FALSE(r.ok());
  CHECK(r.message().find("NAME of an environment variable") != std::string::npos);
  CHECK(r.message().find("sk-abc123secret") == std::string::npos);
}

TEST_CASE("durations <= 0 and unit-less numbers are rejected") {
  expect_error(R"({"defaults": {"stages": {"canary": "0s"}}, "candidates": [)" + kA + "]}",
               {"defaults.stages.canary", "greater than zero", "e.g. \"2h\""});
  expect_error(R"({"defaults": {"stages": {"canary": 7200}}, "candidates": [)" + kA + "]}",
               {"defaults.stages.canary", "duration string with a unit"});
  expect_error(with_candidates(R"({"name":"a","model":"m","runtime":"llama.cpp","base_url":"http://127.0.0.1:1","cadence":{"burst":"-5m"}})"),
               {"candidates[0].cadence.burst"});
  expect_error(R"({"sampler": {"interval": "5x"}, "candidates": [)" + kA + "]}", {"sampler.interval", "unknown unit"});
}

TEST_CASE("build must be exactly one form") {
  expect_error(with_candidates(R"({"name":"a","model":"m","runtime":"llama.cpp","base_url":"http://127.0.0.1:1","build":{}})"),
               {"candidates[0].build", "exactly one of"});
  expect_error(with_candidates(R"({"name":"a","model":"m","runtime":"llama.cpp","base_url":"http://127.0.0.1:1","build":{"command":[]}})"),
               {"candidates[0].build.command", "non-empty array"});
}

TEST_CASE("every problem in a file is reported, one line each") {
  auto r = parse(with_candidates(R"({"name":"a","model":"m","runtime":"nope","base_url":"x"},{"name":"a"})"));
  REQUIRE_FALSE(r.ok());
  size_t lines = 1;
  for (char ch : r.message()) lines += ch == '\n';
  CHECK(lines >= 4);  // runtime, base_url, duplicate name, missing keys of [1]
}

TEST_CASE("the shipped example configs validate") {
  for (const char* rel : {"/examples/demo.json", "/examples/soakd.example.json"}) {
    std::string path = std::string(SOAKD_SOURCE_DIR) + rel;
    auto r = load_config(path);
    INFO(path << ": " << (r.ok() ? std::string("ok") : r.message()));
    CHECK(r.ok());
  }
}

TEST_CASE("a missing config file is a clear error") {
  auto r = load_config("/nonexistent/soakd.json");
  REQUIRE_FALSE(r.ok());
  CHECK(r.message().find("/nonexistent/soakd.json: cannot read config file") != std::string::npos);
}
