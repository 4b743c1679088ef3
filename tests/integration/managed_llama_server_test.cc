// A REAL llama-server as a managed candidate (docs/DESIGN.md §4.8), when one
// is configured:
//   SOAKD_LLAMA_SERVER=/path/to/llama-server  (required, else the test is skipped)
//   SOAKD_LLAMA_MODEL=/path/to/model.gguf     (default: ../shared/models/tiny-qwen3.gguf)
// soakd starts it from a launch block on a free loopback port, waits for its
// health, reads its build from /props, probes it (a random-weight model fails
// the marker probes: the verdict does not matter here), and stops it when the
// campaign settles: no process is left.
#include <cstdlib>
#include <filesystem>

#include "tests/integration/managed_harness.h"

using namespace soak;
using namespace soak::managed_test;

namespace {

constexpr int kSkipExitCode = 77;

[[noreturn]] void skip(const std::string& why) {
  std::printf("skipped: %s\n", why.c_str());
  std::fflush(stdout);
  std::_Exit(kSkipExitCode);
}

}  // namespace

TEST_CASE("soakd starts a real llama-server, probes it and stops it") {
  const char* server = std::getenv("SOAKD_LLAMA_SERVER");
  if (!server || !*server) skip("SOAKD_LLAMA_SERVER is not set");
  const char* model_env = std::getenv("SOAKD_LLAMA_MODEL");
  const std::string model =
      model_env && *model_env ? model_env : std::string(SOAKD_SOURCE_DIR) + "/../shared/models/tiny-qwen3.gguf";
  if (!std::filesystem::exists(server)) skip(std::string(server) + " does not exist");
  if (!std::filesystem::exists(model)) skip(model + " does not exist (set SOAKD_LLAMA_MODEL)");

  Setup s;
  const std::string port = std::to_string(s.port);
  const std::string launch = "{\"argv\": [" + json_quote(server) + ", \"-m\", " + json_quote(model) +
                             ", \"--host\", \"127.0.0.1\", \"--port\", \"" + port +
                             "\", \"--alias\", \"qwen3.6-35b-a3b\", \"-c\", \"4096\", \"-n\", \"64\", \"--parallel\", "
                             "\"2\", \"--jinja\", \"--metrics\", \"--slots\"], \"ready_timeout\": \"2m\", "
                             "\"stop_timeout\": \"10s\"}";
  // -n 64 is below limits.min_server_cap: accepted here, so that the probes run
  // (managed_llama_server_cap_test.cc is the hold).
  s.write(launch, R"(, "accept_server_cap": true)", R"({ "smoke": "5s", "canary": "5s", "gate": "5s", "soak": "5s" })");
  auto check = run_program({kSoakd, "check-config", s.cfg}, kStepMs);
  INFO(check.err);
  CHECK(check.exit_code == 0);
  CHECK(check.err.find("warning") == std::string::npos);  // -n and -c given

  auto d = start_soakd(s, true);
  REQUIRE(d);
  const int pid = ready_pid(*d);
  CHECK(alive(pid));
  auto st = d->wait_exit(240'000);
  INFO(d->err());
  REQUIRE(st);
  REQUIRE(WIFEXITED(*st));
  CHECK(WEXITSTATUS(*st) == 0);
  CHECK_FALSE(alive(pid));

  auto cands = s.candidates();
  REQUIRE(cands.size() == 1);
  CHECK(cands[0].build.rfind("b", 0) == 0);  // build_info from /props, e.g. "b12074-..."
  ProbeQuery pq;
  pq.candidate_id = cands[0].id;
  auto rows = *s.open_store()->probe_results(pq);
  int clean_health = 0;
  for (const auto& r : rows) clean_health += r.kind == ProbeKind::Health && r.outcome == Outcome::Clean;
  CHECK(rows.size() >= 3);  // health, identity and the first functional probes (smoke stops at the first miss)
  CHECK(clean_health >= 1);

  auto ls = s.launches();
  REQUIRE(ls.size() == 1);
  CHECK(ls[0].pid == pid);
  CHECK(ls[0].ready_ms);
  CHECK(ls[0].state == LaunchState::Stopped);
  CHECK(ls[0].executable == std::filesystem::canonical(server).string());
  // The server's own output (model load, "server is listening") is in the runtime log.
  CHECK(s.read_runtime_log().find("listening") != std::string::npos);
}
