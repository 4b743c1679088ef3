// A promotion rests on evidence, through whole campaigns in virtual time
// (docs/DESIGN.md §3.2): a runtime that turns 1000x slower a third of the way
// into its soak is rejected in the soak, with a baseline and without one; a
// soak whose decisive rules are short runs on into its grace and then ends
// inconclusive, naming the rule.
#include <nlohmann/json.hpp>

#include "campaigns/campaigns.h"
#include "storage/sqlite_store.h"
#include "tests/catch.h"
#include "tests/support/sim_runner.h"
#include "tests/support/sim_world.h"

using namespace soak;
using namespace soak::sim;

namespace {

bool has_failing(const VerdictRow& v, const std::string& prefix) {
  for (const auto& m : v.metrics)
    if (m.metric.rfind(prefix, 0) == 0 && m.result == MetricResult::Fail) return true;
  return false;
}

}  // namespace

TEST_CASE("a first build whose first token turns 1000x slower a third into its soak is rejected in the soak") {
  // A runtime of a few ms a request, as the report's (5 ms to its first byte,
  // then 5 s), so the slow part still answers every turn on time.
  World w(candidate("cand", 18432));
  w.runner->at("cand").speed = 0.005;
  w.runner->at("cand").late_soak_ttft = 1000;
  w.run(12 * kDay);
  REQUIRE(w.camp->settled());
  auto v = w.verdict("cand");
  REQUIRE(v);
  INFO(v->reason);
  CHECK(v->state == VerdictState::Rejected);
  CHECK(v->stage == "soak");
  // The drift pooled over the session's bands, and each band's own quarters.
  CHECK(has_failing(*v, "ttft_drift/pooled"));
  CHECK(has_failing(*v, "ttft_drift/agent"));
  // The golden set's end run (every prompt 1000x slower too) is no drift locator.
  for (const auto& m : v->metrics) CHECK(m.metric.find("drift/golden") == std::string::npos);
}

TEST_CASE("the same slowdown with a baseline is rejected against the baseline as well") {
  World w(base_and_cand());
  w.runner->at("base").build = "b9430";
  w.runner->at("cand").build = "b9502";
  w.runner->at("base").speed = w.runner->at("cand").speed = 0.005;
  w.runner->at("cand").late_soak_ttft = 1000;
  w.run(12 * kDay);
  auto v = w.verdict("cand");
  REQUIRE(v);
  INFO(v->reason);
  CHECK(v->state == VerdictState::Rejected);
  CHECK(v->stage == "soak");
  CHECK(has_failing(*v, "ttft_ms/pooled"));  // against the baseline's own soak
}

TEST_CASE("a first build that is far slower through its soak than in its gate is rejected against itself") {
  // Slower from the soak's first request on: no drift inside the soak to see,
  // and no baseline; its own gate's rows of the same locators are the reference.
  World w(candidate("cand", 18432));
  w.runner->at("cand").late_soak_ttft = 3;
  w.runner->at("cand").late_soak_ttft_from = 0;
  w.run(12 * kDay);
  REQUIRE(w.camp->settled());
  auto v = w.verdict("cand");
  REQUIRE(v);
  INFO(v->reason);
  CHECK(v->state == VerdictState::Rejected);
  CHECK(v->stage == "soak");
  CHECK(has_failing(*v, "self/ttft_ms"));
  CHECK(v->reason.find("its own earlier stages") != std::string::npos);
  for (const auto& m : v->metrics)
    if (m.metric.rfind("ttft_drift/", 0) == 0) CHECK(m.result != MetricResult::Fail);
}

TEST_CASE("a soak 40 % slower than its gate, as a busier host makes it, is no regression against itself") {
  World w(candidate("cand", 18432));
  w.runner->at("cand").late_soak_ttft = 1.4;
  w.runner->at("cand").late_soak_ttft_from = 0;
  w.run(12 * kDay);
  auto v = w.verdict("cand");
  REQUIRE(v);
  INFO(v->reason);
  CHECK(v->state == VerdictState::Promoted);
  // Seen, and under judge.self_factor (2x): named in the pooled row.
  bool seen = false;
  for (const auto& m : v->metrics)
    if (m.metric == "self/ttft_ms/pooled") {
      seen = true;
      CHECK(m.result == MetricResult::Pass);
      CHECK(m.estimate > 0.2);
      CHECK(m.reason.find("judge.self_factor 2x") != std::string::npos);
    }
  CHECK(seen);
}

TEST_CASE("a soak too thin to decide its drift runs on into its grace, then is inconclusive naming the rule") {
  // One agent turn every 3 h through a 12-hour soak, its heavy work once at
  // its start: four turns over the session's bands, a row or none in each
  // band's quarters, and no more of them until its deadline.
  World w(candidate("cand", 18432,
                    R"(, "stages": { "soak": "12h" }, "cadence": { "soak_traffic": "3h", "soak_heavy": "24h" })"));
  w.run(6 * kDay);
  REQUIRE(w.camp->settled());
  auto v = w.verdict("cand");
  REQUIRE(v);
  INFO(v->reason);
  CHECK(v->state == VerdictState::Inconclusive);
  CHECK(v->stage == "soak");
  CHECK(v->reason.find("evidence short: ttft_drift had") != std::string::npos);
  CHECK(v->reason.find("needs 5") != std::string::npos);
  // It ran on first: a stage_extended event names the rules, and the soak
  // ended after its nominal 12 h, by its deadline.
  auto st = w.stages("cand");
  REQUIRE(st.size() == 4);
  const StageRow& soak = st[3];
  CHECK(*soak.ended_ms - soak.started_ms > 12 * kHour);
  CHECK(*soak.ended_ms <= soak.deadline_ms + kHour);
  EventQuery q;
  q.candidate_id = w.row("cand")->id;
  q.kind = EventKind::StageExtended;
  bool named = false;
  for (const auto& e : *w.store->events(q)) {
    const auto d = nlohmann::json::parse(e.detail_json);
    if (d.value("stage", "") == "soak" && d.contains("rules"))
      for (const auto& r : d["rules"]) named = named || r == "ttft_drift";
  }
  CHECK(named);
}
