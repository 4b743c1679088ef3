// Probe rows from the fake runtime on 127.0.0.1, judged by the canary's rules:
// the whole chain from what a runtime does to the verdict it earns. The probes
// run as the canary's tasks run them (scrape first, so the runtime's slots and
// context are read the way the daemon reads them), and judge_stage() gets the
// rows as the daemon would hand them over.
#include <nlohmann/json.hpp>

#include "core/burst_serial.h"
#include "judges/judge.h"
#include "schedules/plan.h"
#include "tests/catch.h"
#include "tests/fake_runtime/fake_runtime.h"
#include "tests/integration/probe_harness.h"

using namespace soak;
using namespace soak::probe_test;
using fake::FakeRuntime;
using fake::ListenerConfig;
using fake::Scenario;

namespace {

constexpr int64_t kCandidateId = 1;
constexpr int64_t kHostId = 1;

struct Fake {
  explicit Fake(ListenerConfig cfg) : rt({std::move(cfg)}) { REQUIRE(rt.start().ok()); }
  std::string url() const { return rt.base_url(0); }
  FakeRuntime rt;
};

// Quick answers: the tests are about outcomes, not speed.
ListenerConfig quick(Scenario s) {
  ListenerConfig c = ListenerConfig::make(s);
  c.knobs.token_interval_ms = 1;
  c.knobs.prefill_ms_per_1k = 1;
  return c;
}

// `passes` canary task passes: scrape, functional, long context, burst.
std::vector<ProbeResult> canary_rows(const CandidateConfig& c, int passes) {
  Harness h;
  std::vector<ProbeResult> rows;
  int64_t id = 1;
  for (int i = 0; i < passes; ++i)
    for (TaskKind t : {TaskKind::Scrape, TaskKind::Functional, TaskKind::LongContext, TaskKind::Burst}) {
      for (auto& r : h.run(c, probe_kinds_for(t))) {
        r.id = id++;
        r.candidate_id = kCandidateId;
        r.host_id = kHostId;
        rows.push_back(std::move(r));
      }
    }
  return rows;
}

VerdictRow judge_canary(const CandidateConfig& c, std::vector<ProbeResult> rows) {
  JudgeInput in;
  in.recipe.stage = StageKind::Canary;
  in.recipe.candidate_id = kCandidateId;
  in.recipe.host_id = kHostId;
  in.recipe.slots_planned = 1;
  in.recipe.slots_run = 1;
  in.recipe.judge = c.settings.judge;
  in.recipe.gate = c.settings.gate;
  in.recipe.long_context_sizes = c.settings.long_context_sizes;
  in.candidate_rows = std::move(rows);
  return judge_stage(in);
}

const MetricEvidence* metric(const VerdictRow& v, const std::string& name) {
  for (const auto& m : v.metrics)
    if (m.metric == name) return &m;
  return nullptr;
}

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("a runtime whose own context is smaller than the largest size: hold, with its context reach") {
  ListenerConfig cfg = quick(Scenario::Healthy);
  cfg.knobs.ctx_per_slot = 4096;
  Fake f(cfg);
  CandidateConfig c = candidate(f.url());
  c.settings.long_context_sizes = {1024, 2048, 8192};
  auto rows = canary_rows(c, 1);
  auto v = judge_canary(c, rows);
  INFO(describe(rows) << v.reason);
  CHECK(v.state == VerdictState::Hold);
  CHECK(has(v.reason, "context reach 2K, configured 8K"));
  CHECK(has(v.reason, "runtime context 4096 per slot, from /props n_ctx"));
  const auto* reach = metric(v, "context_reach");
  REQUIRE(reach);
  CHECK(reach->estimate == 2048);
  CHECK(reach->baseline == 4096);

  SECTION("not asked through /props: llama-server's refusal itself says the context") {
    // An OpenAI-compatible candidate pointed at llama-server: soakd reads no
    // /props, and the exceed_context_size_error body carries n_ctx.
    ListenerConfig llama = ListenerConfig::make(Scenario::Healthy, fake::Flavour::LlamaCpp);
    llama.knobs.ctx_per_slot = 4096;
    llama.knobs.token_interval_ms = 1;
    Fake m(llama);
    CandidateConfig mc = candidate(m.url(), RuntimeKind::OpenAI);
    mc.settings.long_context_sizes = c.settings.long_context_sizes;
    Harness h;
    auto lc = h.run(mc, {ProbeKind::LongContext});
    for (size_t i = 0; i < lc.size(); ++i) lc[i].id = static_cast<int64_t>(i + 1);
    auto r = context_reach(lc, c.settings.long_context_sizes);
    REQUIRE(r.runtime_ctx_tokens);
    CHECK(*r.runtime_ctx_tokens == 4096);
    CHECK(r.runtime_ctx_source == "error n_ctx");
  }
}

TEST_CASE("a runtime failing only at the largest size with HTTP 500 within its context: rejected") {
  ListenerConfig cfg = quick(Scenario::LargePrompt5xx);
  cfg.knobs.fail_above_tokens = 4096;
  Fake f(cfg);
  CandidateConfig c = candidate(f.url());
  c.settings.long_context_sizes = {1024, 2048, 8192};
  auto rows = canary_rows(c, 1);
  auto v = judge_canary(c, rows);
  INFO(describe(rows) << v.reason);
  CHECK(v.state == VerdictState::Rejected);
  CHECK(has(v.reason, "long context 8K"));
  CHECK(metric(v, "long_context/8192")->result == MetricResult::Fail);
  CHECK(metric(v, "context_reach")->estimate == 2048);
}

TEST_CASE("a one-slot runtime: bursts queue FIFO as expected, not a failure") {
  Fake f(quick(Scenario::FifoSerial));
  CandidateConfig c = candidate(f.url());
  c.settings.burst_sizes = {1, 4};
  auto rows = canary_rows(c, 1);
  auto v = judge_canary(c, rows);
  INFO(describe(rows) << v.reason);
  const ProbeResult* summary = find_row(rows, ProbeKind::Burst, "burst/4/summary");
  REQUIRE(summary);
  auto s = nlohmann::json::parse(summary->extra_json);
  CHECK(s["serialized"] == true);
  CHECK(s["fifo"] == "expected");
  CHECK(summary->outcome == Outcome::Clean);
  CHECK(v.state == VerdictState::Promoted);
  CHECK(metric(v, "burst_serialization")->result == MetricResult::Pass);
}

TEST_CASE("a runtime failing 1 in 8 completions with HTTP 500 is rejected in the canary") {
  ListenerConfig cfg = quick(Scenario::Burst5xx);
  cfg.knobs.error_every = 8;
  cfg.knobs.error_run = 1;
  Fake f(cfg);
  CandidateConfig c = candidate(f.url());
  c.settings.burst_sizes = {1};
  auto rows = canary_rows(c, 4);
  auto v = judge_canary(c, rows);
  INFO(describe(rows) << v.reason);
  CHECK(v.state == VerdictState::Rejected);
  const auto* m = metric(v, "failure_ratio/pooled");
  REQUIRE(m);
  CHECK(m->result == MetricResult::Fail);
  CHECK(m->estimate == Approx(1.0 / 8).margin(0.04));
  REQUIRE(metric(v, "sequential/pooled"));
  CHECK(metric(v, "sequential/pooled")->n > 0);

  SECTION("the same runtime without the fault passes") {
    Fake ok(quick(Scenario::Healthy));
    CandidateConfig h = candidate(ok.url());
    h.settings.burst_sizes = {1};
    auto v2 = judge_canary(h, canary_rows(h, 4));
    INFO(v2.reason);
    CHECK(v2.state == VerdictState::Promoted);
  }
}

// The burst rule's effect floor (core/burst_serial.h, docs/DESIGN.md §2.4):
// the same one-at-a-time runtime, configured with 2 slots, whose answers take
// about 2 ms, 100 ms (with a floor of 200 ms) and 150 ms. The first two
// draw staircases of steps under the floor; the second makes the last of 6 wait
// most of a second.
namespace {

struct SerialRun {
  const ProbeResult* summary = nullptr;
  nlohmann::json extra;
  VerdictRow verdict;
  std::vector<ProbeResult> rows;
};

SerialRun serial_canary(int answer_ms, int64_t min_effect_ms = kDefaultSerialMinEffectMs) {
  ListenerConfig cfg = ListenerConfig::make(Scenario::FifoSerial);  // one slot serves the queue in order
  cfg.knobs.token_interval_ms = 0;
  cfg.knobs.prefill_ms_per_1k = 0;
  cfg.knobs.first_token_delay_ms = answer_ms;  // held in the slot, before the first token
  Fake f(cfg);
  CandidateConfig c = candidate(f.url());
  c.slots = 2;  // what the operator configured: 2 slots, so one at a time is a failure when felt
  c.settings.burst_sizes = {6};
  c.settings.judge.serial_min_effect_ms = min_effect_ms;
  SerialRun run;
  run.rows = canary_rows(c, 1);
  run.verdict = judge_canary(c, run.rows);
  for (const auto& r : run.rows)
    if (r.workload_id == "burst/6/summary") run.summary = &r;
  if (run.summary) run.extra = nlohmann::json::parse(run.summary->extra_json);
  return run;
}

}  // namespace

TEST_CASE("served one at a time on 2 slots, 2 ms answers: not rejected; 100 ms under a 200 ms floor: recorded") {
  // 2 ms at the default floor (50 ms): the fastest answer's own time
  // (connection and parse included) is about as long as the rise per place,
  // so the staircase may not even read; either way no rejection. 100 ms
  // answers with judge.serial_min_effect_ms at 200: a clear staircase of about
  // one service time per place, under the configured floor: recorded, clean.
  for (const auto& [answer_ms, floor_ms] : {std::pair<int, int64_t>{2, 50}, {100, 200}}) {
    const SerialRun run = serial_canary(answer_ms, floor_ms);
    INFO(answer_ms << " ms answers, floor " << floor_ms << " ms\n" << describe(run.rows) << run.verdict.reason);
    REQUIRE(run.summary);
    INFO(run.extra.dump());
    CHECK(run.summary->outcome == Outcome::Clean);
    CHECK(run.extra["fifo"] != "failure");
    CHECK(run.extra["rise_per_place_ms"].get<double>() < static_cast<double>(floor_ms));
    const MetricEvidence* m = metric(run.verdict, "burst_serialization");
    REQUIRE(m);
    CHECK(m->result == MetricResult::Pass);
    CHECK_FALSE(has(run.verdict.reason, "burst:"));
    CHECK(run.verdict.state == VerdictState::Promoted);
    if (answer_ms < 100) continue;
    CHECK(run.extra["serialized"] == true);
    CHECK(run.extra["fifo"] == "under_floor");
    CHECK(has(run.summary->detail, "under the floor 200 ms per place"));
    CHECK(has(m->reason, "under the floor: an effect nobody would feel"));
    CHECK(has(m->reason, "and 200 ms (judge.serial_min_effect_ms)"));
  }
}

TEST_CASE("served one at a time on 2 slots, 150 ms answers: rejected, naming the rise per place and the floors") {
  const SerialRun run = serial_canary(150);
  INFO(describe(run.rows) << run.verdict.reason);
  REQUIRE(run.summary);
  INFO(run.extra.dump());
  CHECK(run.summary->outcome == Outcome::SerializedBurst);
  CHECK(run.extra["fifo"] == "failure");
  CHECK(run.extra["rise_per_place_ms"].get<double>() >= 140);
  const MetricEvidence* m = metric(run.verdict, "burst_serialization");
  REQUIRE(m);
  CHECK(m->result == MetricResult::Fail);
  CHECK(has(m->reason, "per place in the queue"));
  CHECK(has(m->reason, "judge.serial_min_effect_ms"));
  CHECK(run.verdict.state == VerdictState::Rejected);
  CHECK(has(run.verdict.reason, "burst: 1 of 1 bursts served one at a time on a multi-slot runtime"));
}
