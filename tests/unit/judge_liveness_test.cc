// The unserved hard failure (judges/liveness.cc, docs/DESIGN.md §3.4): an
// `unserved` event in the stage rejects it, the reason naming how long
// nothing was served, how many requests waited and since when, and what still
// answered; no event, no metric row (verdicts judged before the rule
// recompute the same).
#include <nlohmann/json.hpp>

#include "judges/judge.h"
#include "tests/catch.h"
#include "tests/unit/judge_rows.h"

using namespace soak;
using namespace soak::testing;

namespace {

Event unserved_event(int64_t id, int64_t wall_ms, int64_t unserved_ms, int64_t outstanding, int64_t oldest_age_ms,
                     bool served_before = true) {
  Event e = event(id, wall_ms, EventKind::Unserved);
  nlohmann::ordered_json d;
  d["outstanding"] = outstanding;
  d["queued"] = outstanding - 1;
  d["oldest_sent_ms"] = wall_ms - oldest_age_ms;
  d["unserved_ms"] = unserved_ms;
  d["last_served_ms"] = served_before ? nlohmann::ordered_json(wall_ms - unserved_ms) : nlohmann::ordered_json();
  d["bound_ms"] = 4 * kMinuteMs;
  d["bound"] = "limits.unserved_timeout";
  d["stage"] = "gate";
  d["stage_id"] = 7;
  e.detail_json = d.dump();
  e.duration_ms = unserved_ms;
  return e;
}

// A gate that passes on its own: agent turns, clean scrapes.
struct Gate {
  Rows cand{kCandidate, 1, kT0, 10'000};
  JudgeInput in = input_for(StageKind::Gate);
  Gate() {
    in.recipe.gate.min_completed = 20;
    in.recipe.baseline_mode = BaselineMode::None;
    in.recipe.baseline_id.reset();
    for (int i = 0; i < 40; ++i) {
      cand.perf(ProbeKind::Agent, "agent/7k", jittered(Perf{}, i));
      cand.add(ProbeKind::Scrape, "scrape");
    }
  }
  VerdictRow judge() {
    in.candidate_rows = cand.rows;
    return judge_stage(in);
  }
};

}  // namespace

TEST_CASE("unserved: no event, no metric row and no finding") {
  Gate g;
  auto v = g.judge();
  INFO(v.reason);
  CHECK(v.state != VerdictState::Rejected);
  CHECK_FALSE(find_metric(v, "hard/unserved"));
}

TEST_CASE("unserved: the event rejects the stage, naming how long nothing was served and what still answered") {
  Gate g;
  // The runtime stopped serving after the 40th turn; the scrapes after it still answered.
  const int64_t stopped = g.cand.now_ms();
  for (int i = 0; i < 30; ++i) g.cand.add(ProbeKind::Scrape, "scrape");
  g.in.events.push_back(unserved_event(31, stopped + 250'000, 250'000, 3, 300'000));
  auto v = g.judge();
  INFO(v.reason);
  CHECK(v.state == VerdictState::Rejected);
  CHECK(contains(v.reason, "hard failure"));
  CHECK(contains(v.reason,
                 "unserved: nothing served for 4m 10s while 3 requests waited (oldest sent 5m ago), 2 held in "
                 "the runtime's queue; its scrape routes still answered (bound 4m, limits.unserved_timeout; "
                 "event 31)"));
  const auto* m = find_metric(v, "hard/unserved");
  REQUIRE(m);
  CHECK(m->result == MetricResult::Fail);
  CHECK(m->estimate == 250'000);
  CHECK(m->threshold == 240'000);
  // Checked while the stage runs, as every hard failure.
  auto early = judge_hard_failures(g.in);
  REQUIRE(early);
  CHECK(early->state == VerdictState::Rejected);
  CHECK(contains(early->reason, "unserved"));
}

TEST_CASE(
    "unserved: health rows since the silence say /health still answered; another candidate's event is not this one's") {
  Gate g;
  const int64_t stopped = g.cand.now_ms();
  for (int i = 0; i < 3; ++i) g.cand.add(ProbeKind::Health, "health");
  SECTION("its own event") {
    g.in.events.push_back(unserved_event(9, stopped + 40'000, 40'000, 1, 40'000, false));
    auto v = g.judge();
    INFO(v.reason);
    CHECK(v.state == VerdictState::Rejected);
    CHECK(contains(v.reason, "nothing served for 40.0s while 1 request waited"));
    CHECK(contains(v.reason, "nothing of its requests was ever served"));
    CHECK(contains(v.reason, "/health and its scrape still answered") == false);
    CHECK(contains(v.reason, "/health still answered"));
  }
  SECTION("another candidate's") {
    Event e = unserved_event(9, stopped + 40'000, 40'000, 1, 40'000);
    e.candidate_id = kBaseline;
    g.in.events.push_back(e);
    auto v = g.judge();
    CHECK(v.state != VerdictState::Rejected);
    CHECK_FALSE(find_metric(v, "hard/unserved"));
  }
}
