// Outstanding work is evidence (campaigns/liveness.h, docs/DESIGN.md §3.4):
// the bound, how long nothing was served, the event's detail, and whole
// campaigns in virtual time where a runtime stops serving in its gate while
// its health routes answer. Scripted runtimes, a real SQLite store, no
// sleeping.
#include <nlohmann/json.hpp>

#include "campaigns/liveness.h"
#include "core/limits.h"
#include "tests/catch.h"
#include "tests/support/sim_world.h"

using namespace soak;
using namespace soak::sim;

namespace {

constexpr int64_t kNow = 1'767'225'600'000;
constexpr int64_t kTimeout = kDefaultUnservedTimeoutMs;  // 5 min

probes::ServingState serving(int64_t outstanding, int64_t oldest_age_ms, std::optional<int64_t> served_age_ms,
                             int64_t budget_ms = 2 * kMinute) {
  probes::ServingState s;
  s.outstanding = outstanding;
  s.oldest_age_ms = oldest_age_ms;
  s.served_age_ms = served_age_ms;
  s.silent_budget_ms = budget_ms;
  return s;
}

}  // namespace

TEST_CASE("liveness: nothing served counts from the later of the last served and the oldest request's send") {
  // Idle for an hour, then a request 30 s ago: 30 s, not an hour.
  CHECK(unserved_for_ms(serving(1, 30 * kSecond, kHour)) == 30 * kSecond);
  // A request sent 10 min ago, the last thing served 4 min ago (another of its requests answered).
  CHECK(unserved_for_ms(serving(2, 10 * kMinute, 4 * kMinute)) == 4 * kMinute);
  // Never served.
  CHECK(unserved_for_ms(serving(3, 7 * kMinute, std::nullopt)) == 7 * kMinute);
  CHECK(unserved_for_ms(serving(0, 0, kHour)) == 0);  // nothing outstanding: nothing waits
}

TEST_CASE("liveness: the bound is the timeout or the largest silent budget, and at the stage's end the budget") {
  CHECK(liveness_bound_ms(serving(1, 0, 0, 2 * kMinute), kTimeout, false) == kTimeout);
  // A 131K fresh prefill's budget (2 min + 1,311 s) is longer than the timeout: it gets it.
  const int64_t long_budget = 2 * kMinute + prefill_allowance_ms(131072, kDefaultPrefillFloorTps);
  CHECK(liveness_bound_ms(serving(1, 0, 0, long_budget), kTimeout, false) == long_budget);
  // Past the nominal end: its own budget and no more.
  CHECK(liveness_bound_ms(serving(1, 0, 0, 2 * kMinute), kTimeout, true) == 2 * kMinute);
}

TEST_CASE("liveness: past the bound with requests outstanding is a finding, at the bound or with nothing out is not") {
  CHECK_FALSE(check_liveness(serving(0, 0, std::nullopt), kTimeout, false, kNow));
  CHECK_FALSE(check_liveness(serving(2, kTimeout, std::nullopt), kTimeout, false, kNow));  // at the bound
  CHECK_FALSE(check_liveness(serving(2, kHour, kTimeout - 1), kTimeout, false, kNow));     // served just inside it
  auto u =
      check_liveness(serving(3, 5 * kMinute + 50 * kSecond, 4 * kMinute + 10 * kSecond + 1), kTimeout, false, kNow);
  CHECK_FALSE(u);  // 4m10s unserved: inside the 5-minute timeout
  u = check_liveness(serving(3, 7 * kMinute, 5 * kMinute + 10 * kSecond), kTimeout, false, kNow);
  REQUIRE(u);
  CHECK(u->outstanding == 3);
  CHECK(u->unserved_ms == 5 * kMinute + 10 * kSecond);
  CHECK(u->oldest_sent_ms == kNow - 7 * kMinute);
  CHECK(u->last_served_ms == kNow - 5 * kMinute - 10 * kSecond);
  CHECK(u->bound_ms == kTimeout);
  CHECK(u->bound == "limits.unserved_timeout");
  // The same 2m10s wait is nothing in the stage, and past its own budget at its end.
  const auto mid = serving(1, 2 * kMinute + 10 * kSecond, std::nullopt);
  CHECK_FALSE(check_liveness(mid, kTimeout, false, kNow));
  auto end = check_liveness(mid, kTimeout, true, kNow);
  REQUIRE(end);
  CHECK(end->bound == "stall timeout + prefill allowance");
  CHECK_FALSE(end->last_served_ms);
}

TEST_CASE("liveness: the campaign wakes when the bound would pass, not later") {
  CHECK_FALSE(liveness_due_ms(serving(0, 0, std::nullopt), kTimeout, false, kNow));
  CHECK(liveness_due_ms(serving(1, kMinute, std::nullopt), kTimeout, false, kNow) == kNow + 4 * kMinute + 1);
  CHECK(liveness_due_ms(serving(1, kHour, std::nullopt), kTimeout, false, kNow) == kNow + 1);  // overdue: now
}

TEST_CASE("liveness: the event's detail holds what the judge and soakctl explain read back") {
  Unserved u;
  u.outstanding = 3;
  u.queued = 2;
  u.oldest_sent_ms = kNow - 5 * kMinute;
  u.unserved_ms = 4 * kMinute + 10 * kSecond;
  u.bound_ms = 4 * kMinute;
  u.bound = "limits.unserved_timeout";
  auto j = nlohmann::json::parse(unserved_detail(u, StageKind::Gate, 42));
  CHECK(j["outstanding"] == 3);
  CHECK(j["queued"] == 2);
  CHECK(j["oldest_sent_ms"] == kNow - 5 * kMinute);
  CHECK(j["unserved_ms"] == 250'000);
  CHECK(j["last_served_ms"].is_null());
  CHECK(j["bound_ms"] == 240'000);
  CHECK(j["stage"] == "gate");
  CHECK(j["stage_id"] == 42);
}

TEST_CASE("liveness: a runtime that stops serving in its gate, health still answering, is rejected in the gate") {
  World w(candidate("cand", 18432));
  w.runner->at("cand").behaviour = Behaviour::StopServing;
  w.runner->at("cand").fault_after = 40;
  w.run(10 * kDay);
  auto v = w.verdict("cand");
  REQUIRE(v);
  INFO(v->reason);
  CHECK(v->state == VerdictState::Rejected);
  CHECK(v->stage == "gate");
  CHECK(has_metric(*v, "hard/unserved", MetricResult::Fail));
  CHECK(v->reason.find("nothing served for 5m") != std::string::npos);
  CHECK(v->reason.find("its scrape routes still answered") != std::string::npos);
  // Rejected where it stopped, long before the gate's 24 hours, and the event is stored.
  auto st = w.stages("cand");
  REQUIRE(st.size() == 3);
  CHECK(st[1].state == StageState::Passed);
  CHECK(st.back().state == StageState::Failed);
  CHECK(*st.back().ended_ms - st.back().started_ms < kHour);
  EventQuery q;
  q.kind = EventKind::Unserved;
  auto ev = w.store->events(q);
  REQUIRE(ev.ok());
  REQUIRE(ev->size() == 1);
  auto d = nlohmann::json::parse(ev->front().detail_json);
  CHECK(d["stage"] == "gate");
  CHECK(d["outstanding"] == 1);
}

TEST_CASE("liveness: a healthy runtime three times as slow is never called unserved") {
  // Its long-context runs take minutes, each request within its own budget
  // and served at its first byte and its end: liveness never speaks.
  World w(candidate("cand", 18432));
  w.runner->at("cand").speed = 3;
  w.run(10 * kDay);
  auto v = w.verdict("cand");
  REQUIRE(v);
  INFO(v->reason);
  CHECK(v->state == VerdictState::Promoted);
  CHECK_FALSE(has_metric(*v, "hard/unserved", MetricResult::Fail));
  EventQuery q;
  q.kind = EventKind::Unserved;
  CHECK(w.store->events(q)->empty());
}
