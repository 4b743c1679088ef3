// Whole campaigns in virtual time that end in a fault: hard failures, a
// marginal or tiny regression, a leak and a spike, swap creeping through the
// gate. Scripted runtimes, a real SQLite store, no sleeping (the healthy path
// and the rest: campaign_sim_test.cc).
#include <algorithm>
#include <cstdlib>
#include <functional>
#include <memory>
#include <sstream>

#include <sqlite3.h>
#include <nlohmann/json.hpp>

#include "campaigns/campaigns.h"
#include "campaigns/recipe_store.h"
#include "soakctl/soakctl.h"
#include "storage/sqlite_store.h"
#include "tests/catch.h"
#include "tests/support/sim_runner.h"
#include "tests/support/sim_world.h"
#include "tests/support/temp_dir.h"

using namespace soak;

using namespace soak::sim;

TEST_CASE("hard failures reject at once, with the evidence") {
  struct Case {
    Behaviour b;
    const char* metric;
    StageKind stage;
  };
  const Case cases[] = {
      {Behaviour::HungStream, "hard/hung_stream", StageKind::Gate},
      {Behaviour::NoTerminal, "hard/no_terminal", StageKind::Gate},
      {Behaviour::IdentityMismatch, "hard/identity_mismatch", StageKind::Smoke},
      // The 5xx and the pooled measures see the same three failures; the
      // golden set's clean opening rows count toward the 5xx measure's n
      // only, so the pooled one may cross first.
      {Behaviour::Repeated5xx, "sequential/", StageKind::Canary},
      {Behaviour::StaleSlot, "hard/stale_slot", StageKind::Canary},
      {Behaviour::InvalidJson, "hard/invalid_json", StageKind::Smoke},
      {Behaviour::Crash, "hard/", StageKind::Canary},
      {Behaviour::GuardTrip, "hard/", StageKind::Canary},
  };
  for (const auto& c : cases) {
    INFO("behaviour " << static_cast<int>(c.b));
    World w(base_and_cand());
    w.runner->at("cand").behaviour = c.b;
    w.runner->at("cand").fault_after = 5;
    w.run(10 * kDay);
    auto v = w.verdict("cand");
    REQUIRE(v);
    INFO(v->reason);
    CHECK(v->state == VerdictState::Rejected);
    CHECK(v->stage == std::string(to_string(c.stage)));
    CHECK(has_metric(*v, c.metric, MetricResult::Fail));
    CHECK_FALSE(v->judge_input_json.empty());
    // Rejected at once: the stage ended long before its nominal length.
    auto st = w.stages("cand");
    CHECK(st.back().state == StageState::Failed);
    if (c.stage != StageKind::Smoke) CHECK(*st.back().ended_ms - st.back().started_ms < st.back().length_ms);
  }
}

TEST_CASE("a candidate rejected mid-stage has its work in flight cut, so it holds the host's heavy gate no longer") {
  // Its runs last eight times as long: when a 5xx rejects it, heavy work
  // of its canary is still in flight. Left running, it would keep the other
  // canary's heavy work waiting (the heavy gate serves one canary at a time).
  World w(base_and_cand() + "," + candidate("other", 18433));
  w.runner->at("cand").behaviour = Behaviour::Repeated5xx;
  w.runner->at("cand").fault_after = 5;
  w.runner->at("cand").speed = 8;
  w.run(10 * kDay, [&] {
    auto v = w.verdict("cand");
    return v && v->state == VerdictState::Rejected;
  });
  auto v = w.verdict("cand");
  REQUIRE(v);
  INFO(v->reason);
  REQUIRE(v->state == VerdictState::Rejected);
  CHECK(v->stage == "canary");
  CHECK(w.runner->cancels_of("cand") >= 1);
  CHECK(w.runner->cancels_of("other") == 0);
}

TEST_CASE("a marginal regression holds for a person to decide; a tiny one stays below the effect floor") {
  {
    World w(base_and_cand());
    w.runner->at("cand").behaviour = Behaviour::Marginal;
    w.runner->at("cand").noise = 0.02;
    w.runner->at("base").noise = 0.02;
    w.run(10 * kDay);
    auto v = w.verdict("cand");
    REQUIRE(v);
    INFO(v->reason);
    CHECK(v->state == VerdictState::Hold);
    CHECK(v->stage == "canary");
  }
  {
    World w(base_and_cand());
    w.runner->at("cand").behaviour = Behaviour::TinySlower;
    w.run(10 * kDay);
    auto v = w.verdict("cand");
    REQUIRE(v);
    INFO(v->reason);
    CHECK(v->state == VerdictState::Promoted);
  }
}

TEST_CASE("a leak through the soak rejects; a single spike does not") {
  {
    World w(base_and_cand());
    w.runner->at("cand").behaviour = Behaviour::Leak;
    w.run(10 * kDay);
    auto v = w.verdict("cand");
    REQUIRE(v);
    INFO(v->reason);
    CHECK(v->state == VerdictState::Rejected);
    CHECK(v->stage == "soak");
  }
  {
    World w(base_and_cand());
    w.runner->at("cand").behaviour = Behaviour::LeakSpike;
    w.run(10 * kDay);
    auto v = w.verdict("cand");
    REQUIRE(v);
    INFO(v->reason);
    CHECK(v->state == VerdictState::Promoted);
  }
}

TEST_CASE("swap creeping slowly through the gate rejects it, though the guard's window never sees it") {
  World w(candidate("cand", 18432));
  w.runner->at("cand").behaviour = Behaviour::SwapCreep;
  w.runner->at("cand").swap_mb_per_hour = 40;  // ~6.7 MB per 10-minute window, ~960 MB a day
  w.run(10 * kDay);
  auto v = w.verdict("cand");
  REQUIRE(v);
  INFO(v->reason);
  CHECK(v->state == VerdictState::Rejected);
  CHECK(v->stage == "gate");
  CHECK(has_metric(*v, "stage_swap_growth_mb", MetricResult::Fail));
  CHECK(has_metric(*v, "hard/guard_trip", MetricResult::Pass));
}
