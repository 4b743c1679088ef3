// A REAL llama-server started with -n 64, as a managed candidate, when one is
// configured (docs/DESIGN.md §3.11):
//   SOAKD_LLAMA_SERVER=/path/to/llama-server  (required, else the test is skipped)
//   SOAKD_LLAMA_MODEL=/path/to/model.gguf     (default: ../shared/models/tiny-qwen3.gguf)
// The server shows -n in no route (get_props in tools/server/server-context.cpp
// builds its default_generation_settings from a fresh task_params with only
// the sampling copied, so params.n_predict stays -1 whatever -n says); soakd
// reads it from the launch argv into the fingerprint. 64 is below
// limits.min_server_cap: the candidate is held at smoke from its fingerprint
// alone, the reason naming -n, before any chat answer is judged.
#include <cstdlib>
#include <filesystem>

#include "tests/integration/managed_harness.h"

using namespace soak;
using namespace soak::managed_test;

namespace {

constexpr int kSkipExitCode = 77;

[[noreturn]] void skip_test(const std::string& why) {
  std::printf("skipped: %s\n", why.c_str());
  std::fflush(stdout);
  std::_Exit(kSkipExitCode);
}

}  // namespace

TEST_CASE("a real llama-server started with -n 64 is held at smoke from its launch fingerprint alone") {
  const char* server = std::getenv("SOAKD_LLAMA_SERVER");
  if (!server || !*server) skip_test("SOAKD_LLAMA_SERVER is not set");
  const char* model_env = std::getenv("SOAKD_LLAMA_MODEL");
  const std::string model =
      model_env && *model_env ? model_env : std::string(SOAKD_SOURCE_DIR) + "/../shared/models/tiny-qwen3.gguf";
  if (!std::filesystem::exists(server)) skip_test(std::string(server) + " does not exist");
  if (!std::filesystem::exists(model)) skip_test(model + " does not exist (set SOAKD_LLAMA_MODEL)");

  Setup s;
  const std::string launch = "{\"argv\": [" + json_quote(server) + ", \"-m\", " + json_quote(model) +
                             ", \"--host\", \"127.0.0.1\", \"--port\", \"" + std::to_string(s.port) +
                             "\", \"--alias\", \"qwen3.6-35b-a3b\", \"-c\", \"4096\", \"-n\", \"64\", \"--parallel\", "
                             "\"2\", \"--jinja\", \"--metrics\", \"--slots\"], \"ready_timeout\": \"2m\", "
                             "\"stop_timeout\": \"10s\"}";
  s.write(launch, "", R"({ "smoke": "30s", "canary": "5s", "gate": "5s", "soak": "5s" })");
  auto check = run_program({kSoakd, "check-config", s.cfg}, kStepMs);
  INFO(check.err);
  CHECK(check.exit_code == 0);
  CHECK(check.err.find("caps every answer at 64 tokens") != std::string::npos);

  auto d = start_soakd(s, true);
  REQUIRE(d);
  const int pid = ready_pid(*d);
  auto st = d->wait_exit(240'000);
  INFO(d->err());
  REQUIRE(st);
  REQUIRE(WIFEXITED(*st));
  CHECK(WEXITSTATUS(*st) == 0);
  CHECK_FALSE(alive(pid));  // stopped once its campaign settled

  auto cands = s.candidates();
  REQUIRE(cands.size() == 1);
  CHECK(cands[0].build.rfind("b", 0) == 0);  // build_info from /props
  CHECK(cands[0].fingerprint.find("\"max_tokens_default\":64") != std::string::npos);
  auto v = s.verdict(cands[0].id);
  REQUIRE(v);
  INFO(v->reason);
  CHECK(v->state == VerdictState::Hold);
  CHECK(v->stage == "smoke");
  CHECK(v->reason.find("64 tokens") != std::string::npos);
  CHECK(v->reason.find("-n 64") != std::string::npos);
  CHECK(v->reason.find("limits.min_server_cap 8192") != std::string::npos);
  // Before any chat answer: no chat probe row at all (the server_token_cap
  // every -n 64 answer would earn never comes into it).
  ProbeQuery q;
  q.candidate_id = cands[0].id;
  auto rows = s.open_store()->probe_results(q);
  REQUIRE(rows.ok());
  for (const auto& r : *rows) {
    INFO(to_string(r.kind) << " " << r.workload_id << " " << to_string(r.outcome));
    CHECK((r.kind == ProbeKind::Health || r.kind == ProbeKind::Scrape || r.kind == ProbeKind::Build));
    CHECK(r.outcome != Outcome::ServerTokenCap);
  }
}
