// Stage rules and the verdict row: smoke, gate, blocked, stopped/timed-out
// stages, coverage, the row's bookkeeping fields and determinism.
#include <algorithm>
#include <cmath>
#include <cstddef>

#include "judges/judge.h"
#include "storage/sqlite_store.h"
#include "tests/catch.h"
#include "tests/unit/judge_rows.h"

using namespace soak;
using namespace soak::testing;

namespace {

Rows smoke_rows() {
  Rows r{kCandidate, 1};
  for (ProbeKind k : probe_kinds_for(TaskKind::Smoke)) r.add(k, std::string(to_string(k)));
  return r;
}

JudgeInput gate_input(int completed) {
  auto in = input_for(StageKind::Gate);
  in.recipe.gate.min_completed = 100;
  Rows r{kCandidate, 1};
  for (int i = 0; i < completed; ++i) r.perf(ProbeKind::Agent, "agent/7k", jittered(Perf{}, i));
  in.candidate_rows = r.rows;
  return in;
}

// A canary with several locators, tails, drafts, failures and harness rows: as
// much of the judge's output as one input can exercise.
JudgeInput rich_canary() {
  auto in = input_for(StageKind::Canary);
  Rows cand{kCandidate, 1}, base{kBaseline, 100'000};
  add_perf(cand, 150, Perf{.ttft_ms = 230}, 1);
  add_perf(base, 150, Perf{}, 5000);
  add_perf(cand, 20, Perf{.ttft_ms = 30'000, .prompt_tps = 1050}, 300, "long_context/32768/fresh", CacheState::Fresh,
           ProbeKind::LongContext);
  add_perf(base, 20, Perf{.ttft_ms = 31'000, .prompt_tps = 1000}, 7000, "long_context/32768/fresh", CacheState::Fresh,
           ProbeKind::LongContext);
  for (int i = 0; i < 30; ++i) {
    auto& r = cand.perf(ProbeKind::Stream, "spec/1k", jittered(Perf{.wall_ms = 1900}, 900 + i));
    r.server_draft_n = 64;
    r.server_draft_accepted = 40 + i % 7;
  }
  add_perf(base, 30, Perf{}, 8000, "spec/1k");
  for (int i = 0; i < 4; ++i) cand.add(ProbeKind::Stream, "stream/1k", Outcome::MissingMarker);
  cand.add(ProbeKind::Stream, "stream/1k", Outcome::HarnessError);
  cand.rows[3].timing_artifact = true;
  in.candidate_rows = cand.rows;
  in.baseline_rows = base.rows;
  in.events.push_back(event(1, kT0, EventKind::DaemonStart));
  return in;
}

std::string serialized(const VerdictRow& v) {
  return std::string(to_string(v.state)) + "|" + v.reason + "|" + metrics_to_json(v.metrics);
}

template <class T>
void scramble(std::vector<T>& v) {
  std::reverse(v.begin(), v.end());
  std::rotate(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 3), v.end());
}

}  // namespace

TEST_CASE("smoke: every required probe clean is a pass") {
  auto in = input_for(StageKind::Smoke);
  in.candidate_rows = smoke_rows().rows;
  auto v = judge_stage(in);
  INFO(v.reason);
  CHECK(v.state == VerdictState::Promoted);
  CHECK(v.stage == "smoke");
  const auto* m = find_metric(v, "smoke/tool_call");
  REQUIRE(m);
  CHECK(m->result == MetricResult::Pass);
}

TEST_CASE("smoke: any candidate failure rejects, a missing probe is inconclusive") {
  auto in = input_for(StageKind::Smoke);
  Rows rows = smoke_rows();
  SECTION("missing marker") {
    rows.add(ProbeKind::Marker, "marker", Outcome::MissingMarker);
    in.candidate_rows = rows.rows;
    auto v = judge_stage(in);
    CHECK(v.state == VerdictState::Rejected);
    CHECK(contains(v.reason, "smoke/marker"));
    CHECK(contains(v.reason, "missing_marker"));
  }
  SECTION("tool call never ran") {
    rows.rows.erase(std::remove_if(rows.rows.begin(), rows.rows.end(),
                                   [](const ProbeResult& r) { return r.kind == ProbeKind::ToolCall; }),
                    rows.rows.end());
    in.candidate_rows = rows.rows;
    auto v = judge_stage(in);
    CHECK(v.state == VerdictState::Inconclusive);
    CHECK(find_metric(v, "smoke/tool_call")->result == MetricResult::Insufficient);
  }
  SECTION("harness errors alone do not fail it") {
    rows.add(ProbeKind::Stream, "stream", Outcome::HarnessError);
    in.candidate_rows = rows.rows;
    CHECK(judge_stage(in).state == VerdictState::Promoted);
  }
}

TEST_CASE("blocked: nothing but connect failures and loading") {
  auto in = input_for(StageKind::Smoke);
  Rows rows{kCandidate, 1};
  rows.add(ProbeKind::Health, "health", Outcome::ConnectRefused);
  rows.add(ProbeKind::Health, "health", Outcome::Loading);
  rows.add(ProbeKind::Health, "health", Outcome::ConnectTimeout);
  in.candidate_rows = rows.rows;
  auto v = judge_stage(in);
  CHECK(v.state == VerdictState::Blocked);
  CHECK(contains(v.reason, "unreachable"));
}

TEST_CASE("gate: completed requests, failure ratio and coverage") {
  SECTION("enough completed, no failures: passes") {
    auto v = judge_stage(gate_input(120));
    INFO(v.reason);
    CHECK(v.state == VerdictState::Promoted);
    CHECK(find_metric(v, "gate_completed")->estimate == 120);
  }
  SECTION("failure ratio at or over the threshold rejects") {
    auto in = gate_input(120);
    Rows extra{kCandidate, 10'000};
    extra.add(ProbeKind::Agent, "agent/7k", Outcome::Timeout);
    extra.add(ProbeKind::Agent, "agent/7k", Outcome::Timeout);
    in.candidate_rows.insert(in.candidate_rows.end(), extra.rows.begin(), extra.rows.end());
    auto v = judge_stage(in);
    CHECK(v.state == VerdictState::Rejected);
    const auto* f = find_metric(v, "failure_ratio");
    CHECK(f->result == MetricResult::Fail);
    CHECK(f->estimate == Approx(2.0 / 122));
  }
  SECTION("too few completed with full coverage rejects") {
    auto v = judge_stage(gate_input(60));
    CHECK(v.state == VerdictState::Rejected);
    CHECK(contains(v.reason, "60 completed agent requests, need 100"));
  }
  SECTION("a coverage gap is inconclusive, never a pass") {
    auto in = gate_input(120);
    in.recipe.slots_run = 50;
    auto v = judge_stage(in);
    CHECK(v.state == VerdictState::Inconclusive);
    CHECK(contains(v.reason, "coverage gap"));
    CHECK(find_metric(v, "coverage")->estimate == Approx(0.5));
  }
  SECTION("too few completed because of a coverage gap is inconclusive, not rejected") {
    auto in = gate_input(60);
    in.recipe.slots_run = 50;
    CHECK(judge_stage(in).state == VerdictState::Inconclusive);
  }
}

TEST_CASE("a stopped or timed-out stage never passes") {
  auto in = gate_input(120);
  SECTION("stopped") {
    in.recipe.end = StageEnd::Stopped;
    auto v = judge_stage(in);
    CHECK(v.state == VerdictState::Inconclusive);
    CHECK(contains(v.reason, "stopped"));
  }
  SECTION("timed out") {
    in.recipe.end = StageEnd::TimedOut;
    auto v = judge_stage(in);
    CHECK(v.state == VerdictState::Inconclusive);
    CHECK(contains(v.reason, "deadline"));
  }
  SECTION("hard failures still reject a stopped stage") {
    in.recipe.end = StageEnd::Stopped;
    Rows extra{kCandidate, 10'000};
    extra.add(ProbeKind::Agent, "agent/7k", Outcome::IdentityMismatch);
    in.candidate_rows.push_back(extra.rows.front());
    CHECK(judge_stage(in).state == VerdictState::Rejected);
  }
}

TEST_CASE("no planned slots or no rows at all is inconclusive") {
  auto in = gate_input(120);
  in.recipe.slots_planned = 0;
  in.recipe.slots_run = 0;
  CHECK(judge_stage(in).state == VerdictState::Inconclusive);
  auto empty = input_for(StageKind::Smoke);
  auto v = judge_stage(empty);
  CHECK(v.state == VerdictState::Inconclusive);
  CHECK(contains(v.reason, "no probe results"));
}

TEST_CASE("the verdict row carries its bookkeeping") {
  auto in = rich_canary();
  auto v = judge_stage(in);
  CHECK(v.candidate_id == kCandidate);
  CHECK(v.stage_id == 7);
  CHECK(v.wall_ms == in.recipe.now_ms);
  CHECK(v.stage == "canary");
  CHECK(v.judge_version == kJudgeVersion);
  CHECK(v.config_hash == "c0ffee");
  CHECK(v.baseline_id == kBaseline);
  CHECK(v.baseline_mode == "interleaved");
  int64_t lo = INT64_MAX, hi = 0;
  for (const auto& r : in.candidate_rows) lo = std::min(lo, r.id), hi = std::max(hi, r.id);
  CHECK(v.evidence_first_id == lo);
  CHECK(v.evidence_last_id == hi);
  CHECK(v.state != VerdictState::Running);
  for (const auto& m : v.metrics) {
    INFO(m.metric);
    CHECK(std::isfinite(m.estimate));
    CHECK(std::isfinite(m.lo));
    CHECK(std::isfinite(m.hi));
    CHECK(std::isfinite(m.p_value));
    CHECK((m.result == MetricResult::Pass || m.result == MetricResult::Fail || m.result == MetricResult::Marginal ||
           m.result == MetricResult::Insufficient));
    CHECK_FALSE(m.reason.empty());
  }
}

TEST_CASE("determinism: the same rows give byte-identical verdicts, in any order") {
  const auto in = rich_canary();
  const auto first = judge_stage(in);
  CHECK(serialized(judge_stage(in)) == serialized(first));

  auto shuffled = in;
  scramble(shuffled.candidate_rows);
  scramble(shuffled.baseline_rows);
  CHECK(serialized(judge_stage(shuffled)) == serialized(first));

  // A stored and reloaded metric list serializes to the same bytes.
  auto reloaded = metrics_from_json(metrics_to_json(first.metrics));
  REQUIRE(reloaded.ok());
  CHECK(metrics_to_json(*reloaded) == metrics_to_json(first.metrics));
}
