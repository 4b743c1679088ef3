// Fair heavy work (docs/DESIGN.md §3.7) in virtual time: within a track the
// heavy task that has waited longest goes first, waits are counted and timed,
// and across tracks the one whose heavy work waited longest is served first,
// then the one served least recently.
#include "schedules/campaign_track.h"
#include "schedules/plan.h"
#include "tests/catch.h"

using namespace soak;

namespace {
CampaignSettings settings() {
  CampaignSettings s;
  s.cadence.scrape_ms = kMinute;
  s.cadence.functional_ms = 10 * kMinute;
  s.cadence.long_context_ms = kHour;
  s.cadence.burst_ms = 30 * kMinute;
  s.cadence.cancel_ms = 30 * kMinute;
  // Fair turns among the periodic heavy tasks; the golden set's opening run
  // (which holds everything else) is plan_test.cc's.
  s.equivalence.enabled = EquivalenceSwitch::Off;
  return s;
}

size_t index_of(const StagePlan& p, TaskKind k) {
  for (size_t i = 0; i < p.tasks.size(); ++i)
    if (p.tasks[i].kind == k) return i;
  FAIL("no task " << to_string(k));
  return 0;
}

std::vector<TaskKind> heavy_due(const StagePlan& p, const DueSet& d) {
  std::vector<TaskKind> out;
  for (const auto& x : d.due)
    if (p.tasks[x.task].weight == Weight::Heavy) out.push_back(p.tasks[x.task].kind);
  return out;
}

Track staged(const std::string& name, const StagePlan& p) {
  Track t;
  t.name = name;
  t.phase = Phase::Staged;
  t.plan = p;
  t.tasks.assign(p.tasks.size(), TaskState{});
  return t;
}
}  // namespace

TEST_CASE("heavy turns: a busy gate holds every due heavy task and the holds are counted and timed") {
  StagePlan p = plan_for(StageKind::Canary, settings());
  std::vector<TaskState> st(p.tasks.size());
  DueSet d = next_due(p, st, 0, 0, HeavyGate::Busy);
  CHECK(heavy_due(p, d).empty());
  CHECK(d.held.size() == 4);  // long context, burst, capacity, prefix reuse
  mark_held(st, d.held, 0);
  mark_held(st, d.held, 5 * kMinute);  // still held: the same wait, not a second one
  const size_t lc = index_of(p, TaskKind::LongContext);
  CHECK(st[lc].waits == 1);
  CHECK(st[lc].waiting_since_ms == 0);
  DueSet free = next_due(p, st, 0, 20 * kMinute, HeavyGate::Free);
  REQUIRE(heavy_due(p, free) == std::vector<TaskKind>{TaskKind::LongContext});
  for (const Due& x : free.due)
    if (x.task == lc) mark_started(st, x, 20 * kMinute);
  CHECK_FALSE(st[lc].waiting_since_ms);
  CHECK(st[lc].waited_ms == 20 * kMinute);
  CHECK(st[lc].longest_wait_ms == 20 * kMinute);
}

TEST_CASE("heavy turns: of two due heavy tasks the one that waited longer goes first, not plan order") {
  StagePlan p = plan_for(StageKind::Canary, settings());
  std::vector<TaskState> st(p.tasks.size());
  const size_t lc = index_of(p, TaskKind::LongContext), burst = index_of(p, TaskKind::Burst);
  st[lc].last_slot = 0;  // served this hour's slot already
  mark_held(st, {burst}, 0);
  // Next hour both are due: the burst has waited since 0, the long context became due now.
  DueSet d = next_due(p, st, 0, kHour, HeavyGate::Free);
  CHECK(heavy_due(p, d) == std::vector<TaskKind>{TaskKind::Burst});
  CHECK(std::find(d.held.begin(), d.held.end(), lc) != d.held.end());
}

TEST_CASE("heavy turns: across candidates the longest wait goes first, then the least recently served") {
  StagePlan p = plan_for(StageKind::Canary, settings());
  const size_t lc = index_of(p, TaskKind::LongContext);
  Track a = staged("a", p), b = staged("b", p), z = staged("z", p);
  // Nobody waits: the one never served first, then by name.
  a.last_heavy_start_ms = 10;
  CHECK(heavy_turn_before(b, a));
  CHECK(heavy_turn_before(z, a));
  CHECK(heavy_turn_before(b, z));
  // z's heavy work has waited since 100, b's since 200: z first, whatever the names.
  mark_held(z.tasks, {lc}, 100);
  mark_held(b.tasks, {lc}, 200);
  CHECK(heavy_turn_before(z, b));
  CHECK(heavy_turn_before(b, a));  // a waiting track before one that does not wait
  CHECK_FALSE(heavy_turn_before(a, z));
  CHECK(heavy_waiting_since(z) == 100);
  // A track that is not staged claims nothing.
  z.phase = Phase::Done;
  CHECK_FALSE(heavy_waiting_since(z));
}

TEST_CASE("heavy gate: exclusive_heavy false lets candidates' heavy work overlap, never a canary's") {
  StagePlan p = plan_for(StageKind::Soak, settings());
  Track soak = staged("soak", p), canary = staged("canary", p);
  soak.stage = StageRow{};
  soak.stage->kind = StageKind::Soak;
  canary.stage = StageRow{};
  canary.stage->kind = StageKind::Canary;
  const std::vector<RunningTask> other_heavy{{"other", Weight::Heavy, false}};
  const std::vector<RunningTask> other_light{{"other", Weight::Light, false}};
  const std::vector<RunningTask> canary_heavy{{"canary", Weight::Heavy, true}};
  const std::vector<RunningTask> own_heavy{{"soak", Weight::Heavy, false}};
  // One heavy task per host by default.
  CHECK(heavy_gate_for(soak, other_heavy, true) == HeavyGate::Busy);
  CHECK(heavy_gate_for(soak, other_light, true) == HeavyGate::Free);
  // exclusive_heavy false: another soak's heavy work may overlap...
  CHECK(heavy_gate_for(soak, other_heavy, false) == HeavyGate::Free);
  // ...but not a canary's, and never two of one candidate's own.
  CHECK(heavy_gate_for(soak, canary_heavy, false) == HeavyGate::Busy);
  CHECK(heavy_gate_for(soak, own_heavy, false) == HeavyGate::Busy);
  // A canary's heavy work waits for gate and soak traffic, light included.
  CHECK(heavy_gate_for(canary, other_light, false) == HeavyGate::Busy);
  CHECK(heavy_gate_for(canary, other_light, true) == HeavyGate::Busy);
  CHECK(heavy_gate_for(canary, {}, true) == HeavyGate::Free);
  // Another canary's light probes are held to the heavy rule only.
  CHECK(heavy_gate_for(canary, {{"other", Weight::Light, true}}, true) == HeavyGate::Free);
  CHECK(heavy_gate_for(canary, {{"other", Weight::Heavy, true}}, false) == HeavyGate::Busy);
}

TEST_CASE("heavy gate: another candidate's heartbeat scrape does not hold a canary's heavy work") {
  StagePlan p = plan_for(StageKind::Canary, settings());
  Track canary = staged("canary", p);
  canary.stage = StageRow{};
  canary.stage->kind = StageKind::Canary;
  CHECK(heavy_gate_for(canary, {{"other", Weight::Light, false, false}}, true) == HeavyGate::Free);
  CHECK(heavy_gate_for(canary, {{"other", Weight::Light, false, true}}, true) == HeavyGate::Busy);
}
