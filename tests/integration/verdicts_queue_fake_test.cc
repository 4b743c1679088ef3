// Promote on evidence, never on its absence (docs/DESIGN.md §2.2 "Queued is
// not hung", §3.4 "unserved"), through soakd and the fake llama-server on
// loopback, stages compressed to seconds:
//   - a runtime whose 2 slots are held by another client's answers (3 s
//     each, the stall timeout 2 s), requests beyond them waiting silently, is
//     not hung: its smoke passes, every request that waited says how long,
//     and it is promoted;
//   - one that stops serving at the start of its gate, /health and its
//     scrape routes still answering, is rejected in the gate, the reason
//     naming how long nothing was served;
//   - one whose queue never drains (it serves nothing from the start) is
//     rejected in its smoke: queue_timeout, not a hung stream.
// (One soakd each: another candidate's smoke traffic holds a canary's heavy work.)
#include "tests/integration/verdicts_harness.h"

using namespace soak;
using namespace soak::verdicts_test;

namespace {

// The stages and cadences these scenarios share; a soak long enough for the
// evidence a promotion needs (judge.min_samples rows in each pooled quarter).
std::string defaults() {
  Compressed c;
  c.smoke = "90s";
  c.gate = seconds(5);
  c.burst = "3s";
  c.soak_heavy = "1h";
  return c.text();
}

std::vector<ProbeResult> rows_of(const Run& run, const std::string& name, StageKind stage) {
  auto st = run.open_store();
  std::vector<ProbeResult> out;
  for (const StageRow& s : *st->stages(run.row(name).id)) {
    if (s.kind != stage) continue;
    ProbeQuery q;
    q.stage_id = s.id;
    for (auto& r : *st->probe_results(q)) out.push_back(std::move(r));
  }
  return out;
}

}  // namespace

TEST_CASE("queued behind another client's answers on 2 slots is not hung: the smoke passes and it is promoted") {
  // Another client keeps both slots busy with answers of 3 s; soakd's
  // requests wait behind them with nothing written, longer than their 2 s
  // stall timeout. Its queue shows on /metrics (requests_deferred). The
  // other client stops when the canary starts, so the later stages measure
  // the runtime alone.
  Fake f = start_fake("healthy", {"--build", "b9460-0a1b2c3", "--token-interval-ms", "2", "--prefill-ms-per-1k", "1",
                                  "--background-load", "2", "--background-ms", "3000"});
  Run run;
  run.write(defaults(), {candidate("q", f.port, R"(, "limits": { "stall_timeout": "2s" })")});
  auto d = run.start();
  on_stage_start(d, "q", "b9460-0a1b2c3", "canary", f.port, R"({"background_load": 0})");
  wait_settled(d);

  const VerdictRow v = run.verdict("q");
  INFO(v.reason << "\n" << metric_lines(v));
  CHECK(v.state == VerdictState::Promoted);
  const auto st = run.stages("q");
  REQUIRE_FALSE(st.empty());
  CHECK(st.front().kind == StageKind::Smoke);
  CHECK(st.front().state == StageState::Passed);
  // The smoke's requests really waited in the queue, longer than the stall timeout, and say so.
  int waited = 0;
  for (const ProbeResult& r : rows_of(run, "q", StageKind::Smoke)) {
    INFO(to_string(r.kind) << " " << to_string(r.outcome) << ": " << r.detail);
    CHECK(r.outcome == Outcome::Clean);
    if (r.queue_wait_us && *r.queue_wait_us > 2'000'000) {
      ++waited;
      CHECK(has(r.detail, "in the runtime's queue"));
    }
  }
  CHECK(waited >= 3);
}

TEST_CASE("a runtime that stops serving mid-gate, its health still answering, is rejected in the gate") {
  // Healthy through smoke and canary; from the gate's start it accepts
  // inference requests and never answers, /health and /v1/models 200, every
  // slot busy and the queue growing on /metrics.
  Fake f = start_fake("healthy", {"--build", "b9461-0a1b2c3", "--token-interval-ms", "2"});
  Run run;
  run.write(defaults(),
            {candidate("mid", f.port, R"(, "limits": { "stall_timeout": "2s", "unserved_timeout": "3s" })")});
  auto d = run.start();
  on_stage_start(d, "mid", "b9461-0a1b2c3", "gate", f.port, R"({"scenario": "stop-serving"})");
  wait_settled(d);

  const VerdictRow v = run.verdict("mid");
  INFO(v.reason << "\n" << metric_lines(v));
  CHECK(v.state == VerdictState::Rejected);
  CHECK(v.stage == "gate");
  CHECK(has(v.reason, "unserved: nothing served for"));
  CHECK(has(v.reason, "held in the runtime's queue"));
  CHECK(has(v.reason, "still answered"));  // its health and scrape routes, meanwhile
  CHECK_FALSE(has(v.reason, "hung_stream"));
  const MetricEvidence* m = find_metric(v, "hard/unserved");
  REQUIRE(m);
  CHECK(m->result == MetricResult::Fail);
  CHECK(m->estimate > 3000);  // past the 3 s bound
  const auto st = run.stages("mid");
  REQUIRE(st.size() == 3);
  CHECK(st[0].state == StageState::Passed);
  CHECK(st[1].state == StageState::Passed);
  CHECK(st[2].state == StageState::Failed);
  // Rejected where it stopped, well before the gate's deadline.
  REQUIRE(st[2].ended_ms);
  CHECK(*st[2].ended_ms < st[2].deadline_ms);
  // The event is stored: soakctl explain reads the same.
  EventQuery q;
  q.kind = EventKind::Unserved;
  q.candidate_id = run.row("mid").id;
  auto ev = run.open_store()->events(q);
  REQUIRE(ev.ok());
  CHECK(ev->size() == 1);
}

TEST_CASE("a queue that never drains is queue_timeout and rejects the smoke, not as a hung stream") {
  // The runtime serves nothing from its start; its wall timeout inside its
  // liveness bound, so each request ends first, held in the queue to the wall.
  Fake f = start_fake("stop-serving", {"--build", "b9462-0a1b2c3", "--token-interval-ms", "2"});
  Run run;
  run.write(defaults(), {candidate("never", f.port,
                                   R"(, "limits": { "stall_timeout": "1s", "wall_timeout": "4s", )"
                                   R"("unserved_timeout": "20s" })")});
  auto d = run.start();
  wait_settled(d);

  const VerdictRow v = run.verdict("never");
  INFO(v.reason << "\n" << metric_lines(v));
  CHECK(v.state == VerdictState::Rejected);
  CHECK(v.stage == "smoke");
  CHECK(has(v.reason, "queue_timeout"));
  CHECK_FALSE(has(v.reason, "hung_stream"));
  int queue_timeouts = 0;
  for (const ProbeResult& r : rows_of(run, "never", StageKind::Smoke))
    if (r.outcome == Outcome::QueueTimeout) {
      ++queue_timeouts;
      CHECK(has(r.detail, "the request waited in the runtime's queue"));
      CHECK(r.queue_wait_us.has_value());
    }
  CHECK(queue_timeouts >= 1);
}
