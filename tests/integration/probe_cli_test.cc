// `soakd probe` end to end, as a user runs it: the fake runtime as a child
// process, soakd as another; the table, the exit code, and the rows in the
// store (with the host and the candidate x build registered).
#include <fstream>

#include <nlohmann/json.hpp>

#include "storage/sqlite_store.h"
#include "tests/catch.h"
#include "tests/support/child_process.h"
#include "tests/support/temp_dir.h"

using namespace soak;

namespace {

const std::string kSoakd = std::string(SOAKD_BINARY_DIR) + "/daemon/soakd";
const std::string kFake = std::string(SOAKD_BINARY_DIR) + "/tests/fake_runtime/soak-fake-runtime";
constexpr int kWaitMs = 30'000;

struct FakeChild {
  explicit FakeChild(const std::string& scenario, std::vector<std::string> more = {}) {
    std::vector<std::string> argv{kFake, "--scenario", scenario, "--token-interval-ms", "1"};
    argv.insert(argv.end(), more.begin(), more.end());
    auto c = ChildProcess::spawn(argv);
    REQUIRE(c);
    child.emplace(std::move(*c));
    auto line = child->wait_for_line("listening on 127.0.0.1:", kWaitMs);
    REQUIRE(line);
    url = "http://" + line->substr(line->find("127.0.0.1:"));
    while (!url.empty() && (url.back() == '\n' || url.back() == '\r')) url.pop_back();
  }
  std::optional<ChildProcess> child;
  std::string url;
};

std::string write_config(const TempDir& tmp, const std::string& url, const std::string& runtime = "llama.cpp",
                         const std::string& model = "qwen3.6-35b-a3b") {
  std::string path = tmp.path() + "/soakd.json";
  std::ofstream(path) << R"({
    "store": ")" << tmp.path()
                      << R"(/soakd.db",
    "log": ")" << tmp.path()
                      << R"(/soakd.log",
    "defaults": { "long_context_sizes": [1024], "burst_sizes": [2],
                  "limits": { "stall_timeout": "5s", "wall_timeout": "20s" } },
    "candidates": [ { "name": "fake", "model": ")"
                      << model << R"(", "runtime": ")" << runtime << R"(",
                      "base_url": ")"
                      << url << R"(", "build": { "from": "http" } } ]
  })";
  return path;
}

std::vector<ProbeResult> stored_rows(const TempDir& tmp) {
  auto st = SqliteStore::open(tmp.path() + "/soakd.db", OpenMode::ReadOnly);
  REQUIRE(st.ok());
  return *(*st)->probe_results(ProbeQuery{});
}

}  // namespace

TEST_CASE("soakd probe against a healthy runtime: table, exit 0, rows stored") {
  FakeChild fake("healthy");
  TempDir tmp;
  const std::string cfg = write_config(tmp, fake.url);
  RunResult r = run_program({kSoakd, "probe", "--config", cfg, "--candidate", "fake"}, kWaitMs);
  INFO(r.out << r.err);
  CHECK(r.exit_code == 0);
  for (const char* kind :
       {"health", "identity", "marker", "stream", "strict_json", "tool_call", "thinking", "repetition"})
    CHECK(r.out.find(std::string("\n") + kind + " ") != std::string::npos);
  CHECK(r.out.find("9 row(s), 9 clean, 0 not clean") != std::string::npos);  // thinking is two rows
  CHECK(r.out.find("build b9430-") != std::string::npos);

  auto rows = stored_rows(tmp);
  CHECK(rows.size() == 9);
  for (const auto& row : rows) {
    CHECK(row.outcome == Outcome::Clean);
    CHECK(row.task.empty());  // a one-off probe, not a scheduled task
  }
  auto st = SqliteStore::open(tmp.path() + "/soakd.db", OpenMode::ReadOnly);
  auto cands = *(*st)->candidates();
  REQUIRE(cands.size() == 1);
  CHECK(cands[0].name == "fake");
  CHECK(cands[0].build.rfind("b9430-", 0) == 0);
  CHECK(rows[0].candidate_id == cands[0].id);
}

TEST_CASE("soakd probe --kind names one kind; a fault gives exit 1 and its class; --json parses") {
  FakeChild fake("empty-tool-args");
  TempDir tmp;
  const std::string cfg = write_config(tmp, fake.url);
  RunResult r = run_program({kSoakd, "probe", "--config", cfg, "--candidate", "fake", "--kind", "tool_call"}, kWaitMs);
  INFO(r.out << r.err);
  CHECK(r.exit_code == 1);
  CHECK(r.out.find("empty_tool_args") != std::string::npos);
  CHECK(stored_rows(tmp).size() == 1);

  RunResult j =
      run_program({kSoakd, "probe", "--config", cfg, "--candidate", "fake", "--kind", "burst", "--json"}, kWaitMs);
  INFO(j.out << j.err);
  CHECK(j.exit_code == 0);
  auto doc = nlohmann::json::parse(j.out);
  CHECK(doc["candidate"] == "fake");
  REQUIRE(doc["rows"].size() == 3);  // two members and the summary
  CHECK(doc["rows"][2]["workload_id"] == "burst/2/summary");
  CHECK(doc["rows"][2]["extra"]["n"] == 2);
  CHECK(doc["all_clean"] == true);
  CHECK(stored_rows(tmp).size() == 4);
}

TEST_CASE("soakd probe usage errors exit 2") {
  TempDir tmp;
  const std::string cfg = write_config(tmp, "http://127.0.0.1:9");
  CHECK(run_program({kSoakd, "probe", "--config", cfg}, kWaitMs).exit_code == 2);
  CHECK(run_program({kSoakd, "probe", "--config", cfg, "--candidate", "nope"}, kWaitMs).exit_code == 2);
  RunResult bad = run_program({kSoakd, "probe", "--config", cfg, "--candidate", "fake", "--kind", "nope"}, kWaitMs);
  CHECK(bad.exit_code == 2);
  CHECK(bad.err.find("strict_json") != std::string::npos);  // names the known kinds
}

// mlx_lm/server.py: only the request string "default_model" or exactly the
// --model value maps to the weights it was started with; any other id is
// loaded from the cache. For a runtime soakd did not launch, the argv comes
// from the process listening on the candidate's port (platform/runtime_processes.h).
TEST_CASE("soakd probe: an MLX-LM soakd did not launch is identified by its own process's --model") {
  const std::string served = "mlx-community/Served-4bit";
  FakeChild fake("healthy", {"--flavour", "mlx-lm", "--model", served});
  TempDir tmp;
  SECTION("config model is the process's --model: clean, proven by the runtime argv") {
    const std::string cfg = write_config(tmp, fake.url, "mlx-lm", served);
    RunResult r =
        run_program({kSoakd, "probe", "--config", cfg, "--candidate", "fake", "--kind", "identity", "--json"}, kWaitMs);
    INFO(r.out << r.err);
    CHECK(r.exit_code == 0);
    auto doc = nlohmann::json::parse(r.out);
    REQUIRE(doc["rows"].size() == 1);
    CHECK(doc["rows"][0]["outcome"] == "clean");
    CHECK(doc["rows"][0]["extra"]["proof"] == "runtime argv");
    CHECK(doc["rows"][0]["detail"].get<std::string>().find("listening on port") != std::string::npos);
  }
  SECTION("config model differs from the process's --model: identity_mismatch") {
    const std::string cfg = write_config(tmp, fake.url, "mlx-lm", "mlx-community/Other-4bit");
    RunResult r =
        run_program({kSoakd, "probe", "--config", cfg, "--candidate", "fake", "--kind", "identity", "--json"}, kWaitMs);
    INFO(r.out << r.err);
    CHECK(r.exit_code == 1);
    auto doc = nlohmann::json::parse(r.out);
    REQUIRE(doc["rows"].size() == 1);
    CHECK(doc["rows"][0]["outcome"] == "identity_mismatch");
    CHECK(doc["rows"][0]["detail"].get<std::string>().find(served) != std::string::npos);
  }
}
