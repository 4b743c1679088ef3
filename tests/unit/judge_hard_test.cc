// Hard failures reject at once, each with its evidence; harness errors never
// count against the candidate.
#include <algorithm>

#include "judges/judge.h"
#include "tests/catch.h"
#include "tests/unit/judge_rows.h"

using namespace soak;
using namespace soak::testing;

namespace {

// A canary that would be promoted on its own.
struct Healthy {
  Rows cand{kCandidate, 1};
  Rows base{kBaseline, 100'000};
  JudgeInput in = input_for(StageKind::Canary);

  Healthy() {
    add_perf(cand, 30, Perf{}, 1);
    add_perf(base, 30, Perf{}, 5000);
  }
  VerdictRow judge() {
    in.candidate_rows = cand.rows;
    in.baseline_rows = base.rows;
    return judge_stage(in);
  }
};

void expect_hard(const VerdictRow& v, const std::string& cls) {
  INFO(v.reason);
  CHECK(v.state == VerdictState::Rejected);
  CHECK(contains(v.reason, "hard failure"));
  CHECK(contains(v.reason, cls));
  const auto* m = find_metric(v, "hard/" + cls);
  REQUIRE(m);
  CHECK(m->result == MetricResult::Fail);
}

}  // namespace

TEST_CASE("the healthy canary used below is promoted and every hard check is listed as passing") {
  Healthy h;
  auto v = h.judge();
  INFO(v.reason);
  CHECK(v.state == VerdictState::Promoted);
  for (const char* cls : {"hung_stream", "no_terminal", "identity_mismatch", "stale_slot", "process_restart",
                          "guard_trip", "invalid_json", "invalid_tool_call", "empty_tool_args"}) {
    const auto* m = find_metric(v, std::string("hard/") + cls);
    REQUIRE(m);
    CHECK(m->result == MetricResult::Pass);
  }
}

TEST_CASE("a single row of a hard-failure class rejects with the row ids") {
  struct Case {
    Outcome outcome;
    const char* cls;
  };
  for (const Case& k : {Case{Outcome::NoBody, "hung_stream"}, Case{Outcome::Stalled, "hung_stream"},
                        Case{Outcome::NoTerminal, "no_terminal"}, Case{Outcome::IdentityMismatch, "identity_mismatch"},
                        Case{Outcome::StaleSlot, "stale_slot"}}) {
    DYNAMIC_SECTION(to_string(k.outcome)) {
      Healthy h;
      const int64_t bad_id = h.cand.add(ProbeKind::Stream, "stream/1k", k.outcome).id;
      auto v = h.judge();
      expect_hard(v, k.cls);
      const auto* m = find_metric(v, std::string("hard/") + k.cls);
      CHECK(m->n == 1);
      CHECK(contains(m->reason, std::to_string(bad_id)));
      CHECK(contains(m->reason, "synthetic"));
    }
  }
}

TEST_CASE("5xx are a measure of the sequential test: how many, not the run they finished in") {
  Healthy h;
  SECTION("two in a row, then clean, then two: no rejection, the run is no rule of its own") {
    h.cand.add(ProbeKind::Stream, "stream/1k", Outcome::Http5xx);
    h.cand.add(ProbeKind::Stream, "stream/1k", Outcome::Http5xx);
    h.cand.perf(ProbeKind::Stream, "stream/1k", Perf{});
    h.cand.add(ProbeKind::Stream, "stream/1k", Outcome::Http5xx);
    h.cand.add(ProbeKind::Stream, "stream/1k", Outcome::Http5xx);
    auto v = h.judge();
    CHECK(!find_metric(v, "hard/repeated_5xx"));
    const auto* m = find_metric(v, "sequential/http_5xx");
    REQUIRE(m);
    CHECK(m->result == MetricResult::Pass);
    CHECK(m->n == 35);
    CHECK(m->estimate == Approx(4.0 / 35));
  }
  SECTION("harness errors and health checks are not attempts") {
    for (int i = 0; i < 3; ++i) h.cand.add(ProbeKind::Stream, "stream/1k", Outcome::HarnessError);
    for (int i = 0; i < 3; ++i) h.cand.add(ProbeKind::Health, "health", Outcome::Http5xx);
    auto v = h.judge();
    const auto* m = find_metric(v, "sequential/http_5xx");
    REQUIRE(m);
    CHECK(m->n == 30);
    CHECK(m->estimate == 0);
  }
  SECTION("rejected at once when they come often enough, whatever order the input holds them in") {
    for (int i = 0; i < 8; ++i) h.cand.add(ProbeKind::Stream, "stream/1k", Outcome::Http5xx);
    std::reverse(h.cand.rows.begin(), h.cand.rows.end());
    auto v = h.judge();
    INFO(v.reason);
    CHECK(v.state == VerdictState::Rejected);
    CHECK(contains(v.reason, "hard failure"));
    CHECK(find_metric(v, "sequential/http_5xx")->result == MetricResult::Fail);
  }
}

TEST_CASE("crash/restart: an event or a pid change in the process samples") {
  Healthy h;
  SECTION("process_restart event") {
    h.in.events.push_back(event(11, kT0 + kHourMs, EventKind::ProcessRestart));
    auto v = h.judge();
    expect_hard(v, "process_restart");
    CHECK(contains(find_metric(v, "hard/process_restart")->reason, "events 11"));
  }
  SECTION("another candidate's restart does not count") {
    h.in.events.push_back(event(11, kT0 + kHourMs, EventKind::ProcessRestart, 99));
    CHECK(h.judge().state == VerdictState::Promoted);
  }
  SECTION("pid changes between samples") {
    h.in.process_samples.push_back(process_sample(1, kT0, 20'000, 100));
    h.in.process_samples.push_back(process_sample(2, kT0 + kMinuteMs, 20'000, 100));
    h.in.process_samples.push_back(process_sample(3, kT0 + 2 * kMinuteMs, 20'000, 200));
    auto v = h.judge();
    expect_hard(v, "process_restart");
    CHECK(contains(find_metric(v, "hard/process_restart")->reason, "samples 3"));
  }
  SECTION("two processes side by side are not a restart") {
    for (int i = 0; i < 10; ++i) {
      h.in.process_samples.push_back(process_sample(2 * i + 1, kT0 + i * kMinuteMs, 20'000, 100));
      h.in.process_samples.push_back(process_sample(2 * i + 2, kT0 + i * kMinuteMs, 3'000, 101));
    }
    auto v = h.judge();
    CHECK(v.state == VerdictState::Promoted);
    CHECK(find_metric(v, "hard/process_restart")->result == MetricResult::Pass);
  }
}

TEST_CASE("memory guard trip, also when written host-wide") {
  Healthy h;
  SECTION("for the candidate") { h.in.events.push_back(event(5, kT0, EventKind::GuardTrip)); }
  SECTION("host-wide") { h.in.events.push_back(event(5, kT0, EventKind::GuardTrip, std::nullopt)); }
  expect_hard(h.judge(), "guard_trip");
}

TEST_CASE("invalid JSON / tool calls / empty tool args: tolerated up to max_invalid_ratio") {
  struct Case {
    Outcome outcome;
    ProbeKind kind;
    const char* cls;
  };
  for (const Case& k : {Case{Outcome::InvalidJson, ProbeKind::StrictJson, "invalid_json"},
                        Case{Outcome::InvalidToolCall, ProbeKind::ToolCall, "invalid_tool_call"},
                        Case{Outcome::EmptyToolArgs, ProbeKind::ToolCall, "empty_tool_args"}}) {
    DYNAMIC_SECTION(k.cls) {
      Healthy h;
      h.in.recipe.judge.max_invalid_ratio = 0.05;
      for (int i = 0; i < 38; ++i) h.cand.add(k.kind, "structured");
      h.cand.add(k.kind, "structured", k.outcome);
      h.cand.add(k.kind, "structured", k.outcome);
      // 2 of 40 = 5%: within tolerance (the rule is "beyond").
      auto within = h.judge();
      const auto* m = find_metric(within, std::string("hard/") + k.cls);
      REQUIRE(m);
      CHECK(m->result == MetricResult::Pass);
      CHECK(m->n == 40);
      CHECK(m->estimate == Approx(0.05));
      CHECK(within.state != VerdictState::Rejected);  // stage rules may still hold it
      h.cand.add(k.kind, "structured", k.outcome);
      expect_hard(h.judge(), k.cls);
    }
  }
}

TEST_CASE("interim check: hard failures are found before the stage ends, nothing else is decided") {
  Healthy h;
  h.in.candidate_rows = h.cand.rows;
  CHECK_FALSE(judge_hard_failures(h.in).has_value());
  h.cand.add(ProbeKind::Stream, "stream/1k", Outcome::Stalled);
  h.in.candidate_rows = h.cand.rows;
  auto v = judge_hard_failures(h.in);
  REQUIRE(v);
  CHECK(v->state == VerdictState::Rejected);
  CHECK(contains(v->reason, "hung_stream"));
  CHECK(v->judge_version == kJudgeVersion);
}

TEST_CASE("harness errors are reported apart and never count against the candidate") {
  Rows cand{kCandidate, 1};
  auto in = input_for(StageKind::Gate);
  in.recipe.gate.min_completed = 100;
  in.recipe.gate.max_failure_ratio = 0.01;
  for (int i = 0; i < 120; ++i) cand.add(ProbeKind::Agent, "agent/7k");
  for (int i = 0; i < 40; ++i) cand.add(ProbeKind::Agent, "agent/7k", Outcome::HarnessError);
  for (int i = 0; i < 10; ++i) cand.add(ProbeKind::Agent, "agent/7k", Outcome::CancelledByDaemon);
  in.candidate_rows = cand.rows;
  auto v = judge_stage(in);
  INFO(v.reason);
  CHECK(v.state == VerdictState::Promoted);
  const auto* h = find_metric(v, "harness_errors");
  REQUIRE(h);
  CHECK(h->n == 50);
  CHECK(contains(h->reason, "cancelled_by_daemon 10"));
  CHECK(contains(h->reason, "harness_error 40"));
  const auto* f = find_metric(v, "failure_ratio");
  REQUIRE(f);
  CHECK(f->n == 120);
  CHECK(f->estimate == 0);
}

TEST_CASE("a server token cap is a hard failure whose reason carries how to lift it") {
  Healthy h;
  const std::string lift = "MLX-LM caps answers at 512 tokens: start mlx_lm.server with --max-tokens 32768";
  ProbeResult& r = h.cand.add(ProbeKind::Thinking, "thinking/on", Outcome::ServerTokenCap);
  r.completion_tokens = 512;
  r.detail = lift + " (finish_reason length after 512 completion tokens; soakd sent no max_tokens)";
  auto v = h.judge();
  expect_hard(v, "server_token_cap");
  CHECK(contains(v.reason, lift));
  CHECK(find_metric(v, "hard/server_token_cap")->n == 1);
}

TEST_CASE("a server token cap fails the smoke with the lift in the verdict's reason") {
  Rows cand{kCandidate, 1};
  JudgeInput in = input_for(StageKind::Smoke);
  in.recipe.baseline_mode = BaselineMode::None;
  in.recipe.baseline_id.reset();
  in.smoke_required = {ProbeKind::Health, ProbeKind::Stream};
  cand.add(ProbeKind::Health, "health");
  const std::string lift = "llama-server was started with -n 64: start it without -n or with -n -1";
  cand.add(ProbeKind::Stream, "stream", Outcome::ServerTokenCap).detail =
      lift + " (finish_reason length after 64 completion tokens; soakd sent no max_tokens)";
  in.candidate_rows = cand.rows;
  auto v = judge_stage(in);
  INFO(v.reason);
  CHECK(v.state == VerdictState::Rejected);
  CHECK(contains(v.reason, "smoke rejected"));
  CHECK(contains(v.reason, lift));
  const auto* smoke_stream = find_metric(v, "smoke/stream");
  REQUIRE(smoke_stream);
  CHECK(smoke_stream->result == MetricResult::Fail);
}

TEST_CASE(
    "without server-capped rows the verdict lists no server_token_cap metric (earlier verdicts recompute the same)") {
  Healthy h;
  auto v = h.judge();
  CHECK(v.state == VerdictState::Promoted);
  CHECK(find_metric(v, "hard/server_token_cap") == nullptr);
}

// A runtime whose answers only echo the requested model, with nothing it
// exposes naming the weights (docs/DESIGN.md §7.2): never a pass, and not a
// broken candidate either. It is held with the row's reason; anything that
// rejects still rejects.
TEST_CASE("identity_unproven holds the candidate: never promoted, not rejected, the reason says why") {
  Healthy h;
  const std::string why = "identity: echo only - ... (its argv could not be read: pid 77's argv is not visible)";
  h.cand.add(ProbeKind::Identity, "identity", Outcome::IdentityUnproven).detail = why;
  SECTION("alone: hold, with the row's detail") {
    auto v = h.judge();
    INFO(v.reason);
    CHECK(v.state == VerdictState::Hold);
    CHECK(contains(v.reason, "identity_unproven (held, not promoted)"));
    CHECK(contains(v.reason, "pid 77's argv is not visible"));
    const auto* m = find_metric(v, "hard/identity_unproven");
    REQUIRE(m);
    CHECK(m->result == MetricResult::Marginal);
    // Not a failed request in the ratios, and it does not end the stage early.
    h.in.candidate_rows = h.cand.rows;
    CHECK_FALSE(judge_hard_failures(h.in).has_value());
  }
  SECTION("with a hard failure: rejected") {
    h.cand.add(ProbeKind::Identity, "identity", Outcome::IdentityMismatch);
    expect_hard(h.judge(), "identity_mismatch");
  }
}

TEST_CASE("a smoke whose identity cannot be proven is held, not rejected and not inconclusive") {
  Rows cand{kCandidate, 1};
  JudgeInput in = input_for(StageKind::Smoke);
  in.recipe.baseline_mode = BaselineMode::None;
  in.recipe.baseline_id.reset();
  in.smoke_required = {ProbeKind::Health, ProbeKind::Identity, ProbeKind::Stream};
  cand.add(ProbeKind::Health, "health");
  cand.add(ProbeKind::Identity, "identity", Outcome::IdentityUnproven).detail =
      "identity: echo only (this oMLX's /api/status has no loaded_models)";
  cand.add(ProbeKind::Stream, "stream");
  in.candidate_rows = cand.rows;
  auto v = judge_stage(in);
  INFO(v.reason);
  CHECK(v.state == VerdictState::Hold);
  CHECK(contains(v.reason, "no loaded_models"));
  const auto* smoke_identity = find_metric(v, "smoke/identity");
  REQUIRE(smoke_identity);
  CHECK(smoke_identity->result == MetricResult::Marginal);
  CHECK(contains(smoke_identity->reason, "identity unproven (held)"));
}
