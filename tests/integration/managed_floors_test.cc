// The absolute rules through the fake runtime, soakd as a whole
// (docs/DESIGN.md §3.11): an MLX-LM launched without --max-tokens is held at
// smoke from its launch fingerprint before any answer is judged, and goes on
// when the candidate accepts the cap; a first build decoding at 2.8 tok/s,
// with no baseline, is rejected with the floor in its reason.
#include <sys/wait.h>

#include "tests/integration/managed_harness.h"

using namespace soak;
using namespace soak::managed_test;

namespace {

// The fake as mlx_lm.server: its argv names the model and no --max-tokens.
std::string mlx_launch(int port) {
  return fake_launch(kFake, port, "healthy:mlx-lm", {"--model", "qwen3.6-35b-a3b", "--build", "0.32.0"});
}

bool is_chat_probe(ProbeKind k) { return k != ProbeKind::Health && k != ProbeKind::Scrape && k != ProbeKind::Build; }

// Runs soakd until every candidate is settled; its stderr in the test log.
void run_to_settled(const Setup& s) {
  auto d = start_soakd(s, true);
  REQUIRE(d);
  auto st = d->wait_exit(kRunMs);
  INFO(d->err());
  REQUIRE(st);
  REQUIRE(WIFEXITED(*st));
  CHECK(WEXITSTATUS(*st) == 0);
}

}  // namespace

TEST_CASE("an MLX-LM launched at its 512-token default is held at smoke from its launch alone") {
  Setup s;
  s.runtime = "mlx-lm";
  s.write(mlx_launch(s.port));
  auto check = run_program({kSoakd, "check-config", s.cfg}, kStepMs);
  INFO(check.err);
  CHECK(check.exit_code == 0);  // a warning, not an error
  CHECK(check.err.find("soakd will hold the candidate at smoke") != std::string::npos);

  run_to_settled(s);
  auto cands = s.candidates();
  REQUIRE(cands.size() == 1);
  CHECK(cands[0].fingerprint.find("\"max_tokens_default\":512") != std::string::npos);
  auto v = s.verdict(cands[0].id);
  REQUIRE(v);
  INFO(v->reason);
  CHECK(v->state == VerdictState::Hold);
  CHECK(v->stage == "smoke");
  CHECK(v->reason.find("512 tokens") != std::string::npos);
  CHECK(v->reason.find("limits.min_server_cap 8192") != std::string::npos);
  CHECK(v->reason.find("--max-tokens") != std::string::npos);
  // No chat probe ran: the hold came before any answer to judge.
  ProbeQuery q;
  q.candidate_id = cands[0].id;
  auto rows = s.open_store()->probe_results(q);
  REQUIRE(rows.ok());
  for (const auto& r : *rows) {
    INFO(to_string(r.kind) << " " << r.workload_id);
    CHECK_FALSE(is_chat_probe(r.kind));
  }
}

TEST_CASE("the same MLX-LM launch with accept_server_cap: true passes its smoke") {
  Setup s;
  s.runtime = "mlx-lm";
  s.write(mlx_launch(s.port), R"(, "accept_server_cap": true)");
  auto check = run_program({kSoakd, "check-config", s.cfg}, kStepMs);
  INFO(check.err);
  CHECK(check.exit_code == 0);  // the key is known and the config valid, not refused for another reason
  CHECK(check.err.find("hold the candidate") == std::string::npos);
  run_to_settled(s);
  auto cands = s.candidates();
  REQUIRE(cands.size() == 1);
  auto st = s.open_store()->stages(cands[0].id);
  REQUIRE(st.ok());
  REQUIRE_FALSE(st->empty());
  INFO(st->front().reason);
  CHECK(st->front().kind == StageKind::Smoke);
  CHECK(st->front().state == StageState::Passed);
  CHECK(st->size() >= 2);
}

TEST_CASE("a first build decoding at 2.8 tok/s is rejected at smoke with the floor in its reason") {
  Setup s;
  // A token every 357 ms: 2.8 tok/s (S1:108); short answers keep the smoke short.
  // The smoke's one pass takes seconds at that pace: its length leaves room for it.
  s.write(fake_launch(kFake, s.port, "healthy",
                      {"--build", "b500-slow", "--token-interval-ms", "357", "--reply-tokens", "6"}),
          "", R"({ "smoke": "90s", "canary": "4s", "gate": "6s", "soak": "4s" })");
  run_to_settled(s);
  auto cands = s.candidates();
  REQUIRE(cands.size() == 1);
  auto v = s.verdict(cands[0].id);
  REQUIRE(v);
  INFO(v->reason);
  CHECK(v->state == VerdictState::Rejected);
  CHECK(v->stage == "smoke");
  CHECK(v->reason.find("too slow to use: slo/decode_tps") != std::string::npos);
  CHECK(v->reason.find("slo.min_decode_tps 3 tok/s") != std::string::npos);
  CHECK(v->reason.find("S1:108") != std::string::npos);
  CHECK(v->baseline_mode == "none");
}
