// A launch whose default output cap is below limits.min_server_cap holds the
// candidate at smoke from its fingerprint alone (docs/DESIGN.md §3.11): before
// any answer, unless accepted. Synthetic inputs.
#include "judges/judge.h"
#include "tests/catch.h"
#include "tests/unit/judge_rows.h"

using namespace soak;
using namespace soak::testing;

namespace {

// A smoke judged at its start: no rows yet, the stage stopped.
JudgeInput smoke_at_start(std::optional<LaunchCap> cap) {
  JudgeInput in = input_for(StageKind::Smoke);
  in.recipe.end = StageEnd::Stopped;
  in.recipe.baseline_mode = BaselineMode::None;
  in.recipe.baseline_id.reset();
  in.recipe.slo = SloSettings{};
  in.recipe.launch_cap = std::move(cap);
  return in;
}

const std::string kMlxLift = "MLX-LM caps answers at 512 tokens: start mlx_lm.server with --max-tokens 32768";

}  // namespace

TEST_CASE("launch cap: MLX-LM's 512 default holds the smoke before any probe, saying how to lift it") {
  JudgeInput in = smoke_at_start(LaunchCap{512, 8192, false, kMlxLift});
  auto held = judge_launch_hold(in);
  REQUIRE(held);
  INFO(held->reason);
  CHECK(held->state == VerdictState::Hold);
  CHECK(held->stage == "smoke");
  CHECK(contains(held->reason, "smoke hold: server cap (held, not promoted)"));
  CHECK(contains(held->reason, "512 tokens"));
  CHECK(contains(held->reason, "limits.min_server_cap 8192"));
  CHECK(contains(held->reason, "--max-tokens 32768"));
  CHECK(contains(held->reason, "accept_server_cap: true"));
  CHECK(contains(held->reason, "S1:48"));
  // Missing evidence (no rows, a stopped stage) does not hide why it stopped.
  CHECK_FALSE(contains(held->reason, "inconclusive"));
  const auto* m = find_metric(*held, "launch/server_cap");
  REQUIRE(m);
  CHECK(m->result == MetricResult::Marginal);
  CHECK(m->estimate == 512);
  CHECK(m->threshold == 8192);
  // The same verdict judge_stage gives, which soakctl explain recomputes.
  auto again = judge_stage(in);
  CHECK(again.reason == held->reason);
  CHECK(again.metrics.size() == held->metrics.size());
}

TEST_CASE("launch cap: accepted, unlimited or large enough, it holds nothing") {
  struct Case {
    LaunchCap cap;
    const char* says;
  };
  for (const Case& k : {Case{{512, 8192, true, kMlxLift}, "accepted (accept_server_cap: true)"},
                        Case{{-1, 8192, false, ""}, "no default output cap (unlimited)"},
                        Case{{32768, 8192, false, ""}, "at or above limits.min_server_cap 8192"},
                        Case{{8192, 8192, false, ""}, "at or above"}}) {
    DYNAMIC_SECTION(k.says) {
      JudgeInput in = smoke_at_start(k.cap);
      CHECK_FALSE(judge_launch_hold(in));
      auto v = judge_stage(in);
      const auto* m = find_metric(v, "launch/server_cap");
      REQUIRE(m);
      INFO(m->reason);
      CHECK(m->result == MetricResult::Pass);
      CHECK(contains(m->reason, k.says));
      CHECK(v.state != VerdictState::Hold);  // inconclusive here: the smoke has no rows
    }
  }
}

TEST_CASE("launch cap: a fingerprint that does not know the cap, or a pooling server, is not judged on it") {
  JudgeInput none = smoke_at_start(std::nullopt);
  CHECK_FALSE(judge_launch_hold(none));
  CHECK(find_metric(judge_stage(none), "launch/server_cap") == nullptr);
  JudgeInput pooling = smoke_at_start(LaunchCap{64, 8192, false, "-n 64"});
  pooling.recipe.workload = WorkloadKind::Embedding;
  CHECK_FALSE(judge_launch_hold(pooling));
}

TEST_CASE("launch cap: a hard failure still rejects; the hold outranks a coverage gap") {
  JudgeInput in = input_for(StageKind::Canary);
  in.recipe.launch_cap = LaunchCap{64, 8192, false, "llama-server was started with -n 64: start it without -n"};
  Rows rows(kCandidate);
  add_perf(rows, 10, Perf{}, 1);
  SECTION("a hung stream rejects") {
    rows.add(ProbeKind::Stream, "stream/1k", Outcome::Stalled);
    in.candidate_rows = rows.rows;
    auto v = judge_stage(in);
    CHECK(v.state == VerdictState::Rejected);
    CHECK(contains(v.reason, "hung_stream"));
  }
  SECTION("short coverage: still held, naming -n") {
    in.recipe.slots_run = 10;
    in.candidate_rows = rows.rows;
    auto v = judge_stage(in);
    INFO(v.reason);
    CHECK(v.state == VerdictState::Hold);
    CHECK(contains(v.reason, "-n 64"));
    CHECK_FALSE(contains(v.reason, "coverage"));
  }
}
