// Answer hygiene through soakd and the fake runtime (docs/DESIGN.md §2.1,
// §3.4): a build whose answers start carrying <|im_end|> at its canary is
// rejected in that canary on hard/leaked_markup, the excerpt in the reason;
// a healthy build beside it, its reasoning in reasoning_content, is promoted.
#include "tests/integration/verdicts_harness.h"

using namespace soak;
using namespace soak::verdicts_test;

TEST_CASE("a build leaking its end-of-turn token from the canary on is rejected in it; a healthy one is promoted") {
  // Both fakes healthy through the smoke; from the leaky one's canary start
  // every answer with text ends in <|im_end|> (markup-leak keeps --leak), as
  // llama-server does when the EOS is not taken as the end of the turn.
  Fake clean = start_fake("healthy", {"--build", "b9450-0a1b2c3", "--token-interval-ms", "2"});
  Fake leaky = start_fake("healthy", {"--build", "b9451-0a1b2c3", "--token-interval-ms", "2", "--leak", "im-end"});
  Run run;
  Compressed stages;
  stages.soak = "6s";
  stages.gate = "6s";
  stages.soak_traffic = "300ms";
  run.write(stages.text(), {candidate("clean", clean.port), candidate("leaky", leaky.port)});
  auto d = run.start();
  on_stage_start(d, "leaky", "b9451-0a1b2c3", "canary", leaky.port, R"({"scenario": "markup-leak"})");
  wait_settled(d);

  const VerdictRow v = run.verdict("leaky");
  INFO(v.reason << "\n" << metric_lines(v));
  CHECK(v.state == VerdictState::Rejected);
  CHECK(v.stage == "canary");
  CHECK(v.reason.rfind("canary rejected: hard failure, leaked_markup beyond tolerance: ", 0) == 0);
  CHECK(has(v.reason, "chat-template token <|im_end|> at char "));
  CHECK(has(v.reason, "<|im_end|>"));
  CHECK(has(v.reason, "; excerpt: "));
  const MetricEvidence* m = find_metric(v, "hard/leaked_markup");
  REQUIRE(m);
  CHECK(m->result == MetricResult::Fail);
  CHECK(m->estimate > m->threshold);
  const auto st = run.stages("leaky");
  REQUIRE(st.size() == 2);
  CHECK(st[0].state == StageState::Passed);  // the smoke's answers were clean
  CHECK(st[1].state == StageState::Failed);

  const VerdictRow ok = run.verdict("clean");
  INFO(ok.reason << "\n" << metric_lines(ok));
  CHECK(ok.state == VerdictState::Promoted);
  for (const auto& cv : run.verdicts("clean")) CHECK_FALSE(find_metric(cv, "leaked_markup"));
}
