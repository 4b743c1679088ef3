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
  s.cadence.gate_pause_ms = 2000;
  // The cases here are about the periodic tasks' slots and the heavy gate;
  // the golden set's opening and closing runs have their own cases below.
  s.equivalence.enabled = EquivalenceSwitch::Off;
  return s;
}

std::vector<TaskKind> kinds(const StagePlan& p, const DueSet& d) {
  std::vector<TaskKind> out;
  for (const auto& x : d.due) out.push_back(p.tasks[x.task].kind);
  return out;
}
}  // namespace

TEST_CASE("canary plan: everything is due at the stage start, heavy tasks one at a time") {
  StagePlan p = plan_for(StageKind::Canary, settings());
  std::vector<TaskState> st(p.tasks.size());
  DueSet d = next_due(p, st, 0, 0, HeavyGate::Free);
  CHECK(kinds(p, d) ==
        std::vector<TaskKind>{TaskKind::Scrape, TaskKind::Functional, TaskKind::LongContext,
                              TaskKind::Cancel});  // burst and prefix reuse wait for the long-context prefill
  DueSet busy = next_due(p, st, 0, 0, HeavyGate::Busy);
  CHECK(kinds(p, busy) == std::vector<TaskKind>{TaskKind::Scrape, TaskKind::Functional, TaskKind::Cancel});
}

TEST_CASE("capacity: a heavy task in the canary (with the long-context cadence) and in the soak") {
  for (StageKind k : {StageKind::Canary, StageKind::Soak}) {
    StagePlan p = plan_for(k, settings());
    const TaskSpec* cap = nullptr;
    for (const auto& t : p.tasks)
      if (t.kind == TaskKind::Capacity) cap = &t;
    REQUIRE(cap);
    CHECK(cap->weight == Weight::Heavy);
    CHECK(cap->every_ms ==
          (k == StageKind::Canary ? settings().cadence.long_context_ms : settings().cadence.soak_heavy_ms));
  }
  CHECK(probe_kinds_for(TaskKind::Capacity) == std::vector<ProbeKind>{ProbeKind::Capacity});
  CHECK(parse_task_kind("capacity") == TaskKind::Capacity);
  // The default entry follows the runtime's slots.
  CampaignSettings s;
  CHECK(capacity_entries(s, 8) == std::vector<CapacityEntry>{{32768, 8}});
  CHECK(capacity_entries(s, 1).empty());
  CHECK(capacity_entries(s, std::nullopt).empty());
  s.capacity = std::vector<CapacityEntry>{{65536, 4}};
  CHECK(capacity_entries(s, 8) == std::vector<CapacityEntry>{{65536, 4}});
}

TEST_CASE("periodic tasks serve each slot once and wake at the next slot") {
  StagePlan p = plan_for(StageKind::Canary, settings());
  std::vector<TaskState> st(p.tasks.size());
  const int64_t t0 = 1'000'000;
  for (const auto& d : next_due(p, st, t0, t0, HeavyGate::Free).due) {
    mark_started(st, d);
    mark_finished(st, d.task, t0 + 500);
  }
  DueSet d = next_due(p, st, t0, t0 + 30'000, HeavyGate::Free);
  CHECK(kinds(p, d) == std::vector<TaskKind>{TaskKind::Burst});  // burst was held back, now runs
  REQUIRE(d.next_wake_ms);
  CHECK(*d.next_wake_ms == t0 + kMinute);  // the next scrape slot
  CHECK(kinds(p, next_due(p, st, t0, t0 + kMinute, HeavyGate::Busy)) == std::vector<TaskKind>{TaskKind::Scrape});
}

TEST_CASE("missed slots are never backfilled") {
  StagePlan p = plan_for(StageKind::Canary, settings());
  std::vector<TaskState> st(p.tasks.size());
  Due first{0, 0};
  mark_started(st, first);
  mark_finished(st, 0, 1000);
  // The daemon was down for 45 minutes: one scrape is due, for the current slot only.
  DueSet d = next_due(p, st, 0, 45 * kMinute + 5, HeavyGate::Busy);
  int scrapes = 0;
  for (const auto& x : d.due)
    if (p.tasks[x.task].kind == TaskKind::Scrape) {
      ++scrapes;
      CHECK(x.slot == 45);
      mark_started(st, x);
      mark_finished(st, x.task, 45 * kMinute + 10);
    }
  CHECK(scrapes == 1);
  CHECK(st[0].runs == 2);
  // Coverage over a 2 h stage: 2 of 120 heartbeat slots.
  CHECK(coverage(p, st, 2 * kHour) == Approx(2.0 / 120));
}

TEST_CASE("continuous gate traffic runs back to back with the configured pause") {
  StagePlan p = plan_for(StageKind::Gate, settings());
  REQUIRE(p.tasks[1].kind == TaskKind::Agent);
  // The gate's long-context rounds (every 4 h, heavy) come third.
  REQUIRE(p.tasks[2].kind == TaskKind::LongContext);
  CHECK(p.tasks[2].every_ms == 4 * kHour);
  CHECK(p.tasks[2].weight == Weight::Heavy);
  std::vector<TaskState> st(p.tasks.size());
  st[0].last_slot = 0;  // scrape already served
  st[2].last_slot = 0;  // and the first long-context round
  DueSet d = next_due(p, st, 0, 0, HeavyGate::Free);
  REQUIRE(kinds(p, d) == std::vector<TaskKind>{TaskKind::Agent});
  mark_started(st, d.due[0]);
  CHECK(next_due(p, st, 0, 100, HeavyGate::Free).due.empty());  // still running
  mark_finished(st, 1, 7000);
  DueSet after = next_due(p, st, 0, 8000, HeavyGate::Free);
  CHECK(after.due.empty());
  CHECK(after.next_wake_ms == std::optional<int64_t>(9000));
  CHECK(kinds(p, next_due(p, st, 0, 9000, HeavyGate::Free)) == std::vector<TaskKind>{TaskKind::Agent});
}

TEST_CASE("smoke runs once") {
  StagePlan p = plan_for(StageKind::Smoke, settings());
  std::vector<TaskState> st(p.tasks.size());
  REQUIRE(next_due(p, st, 0, 0, HeavyGate::Free).due.size() == 1);
  mark_started(st, Due{0, 0});
  mark_finished(st, 0, 10);
  CHECK(next_due(p, st, 0, kDay, HeavyGate::Free).due.empty());
}

TEST_CASE("stage clock: complete, extended to make up gaps, then deadline") {
  StageRow s;
  s.started_ms = 0;
  s.length_ms = 2 * kHour;
  s.deadline_ms = stage_deadline(0, s.length_ms, 0.25);
  CHECK(s.deadline_ms == 2 * kHour + 30 * kMinute);
  CHECK(stage_clock(s, 1.0, 0.9, kHour) == StageClock::Running);
  CHECK(stage_clock(s, 0.95, 0.9, 2 * kHour) == StageClock::Complete);
  CHECK(stage_clock(s, 0.8, 0.9, 2 * kHour) == StageClock::Extended);
  CHECK(stage_clock(s, 0.8, 0.9, s.deadline_ms) == StageClock::DeadlineHit);
}

TEST_CASE("nightly window: inside it now, else the next opening, in local time") {
  const int64_t day = 1'767'225'600'000;  // 2026-01-01T00:00Z
  CHECK(next_window_start(day + 5 * kHour, "now", 0) == day + 5 * kHour);
  // 01:00 local -> 02:00 today.
  CHECK(next_window_start(day + kHour, "02:00", 0) == day + 2 * kHour);
  // 03:00 local is inside 02:00 + 4 h: go now.
  CHECK(next_window_start(day + 3 * kHour, "02:00", 0) == day + 3 * kHour);
  // 07:00 local: the window closed, next is tomorrow 02:00.
  CHECK(next_window_start(day + 7 * kHour, "02:00", 0) == day + kDay + 2 * kHour);
  // UTC+9 (Seoul): 02:00 local is 17:00Z the day before.
  CHECK(next_window_start(day + 12 * kHour, "02:00", 9 * 60) == day + 17 * kHour);
}

TEST_CASE("prefix reuse runs in the canary at the functional cadence: cold, warm and prefix turns") {
  StagePlan p = plan_for(StageKind::Canary, settings());
  const TaskSpec* prefix = nullptr;
  for (const auto& t : p.tasks)
    if (t.kind == TaskKind::PrefixReuse) prefix = &t;
  REQUIRE(prefix);
  CHECK(prefix->every_ms == settings().cadence.functional_ms);
  CHECK(prefix->weight == Weight::Heavy);  // never beside a burst or a long prefill
  CHECK(probe_kinds_for(TaskKind::PrefixReuse) == std::vector<ProbeKind>{ProbeKind::SharedPrefix});
  CHECK(parse_task_kind("prefix_reuse") == TaskKind::PrefixReuse);
}

TEST_CASE("a pooling candidate's plans hold no task that would send it a chat request") {
  for (WorkloadKind w : {WorkloadKind::Embedding, WorkloadKind::Rerank}) {
    const ProbeKind pooled = w == WorkloadKind::Embedding ? ProbeKind::Embeddings : ProbeKind::Rerank;
    CHECK(probe_kinds_for(TaskKind::Smoke, w) == std::vector<ProbeKind>{ProbeKind::Health, pooled});
    CHECK(probe_kinds_for(TaskKind::Agent, w) == std::vector<ProbeKind>{pooled});
    for (StageKind k : kAllStages) {
      StagePlan p = plan_for(k, settings(), w);
      REQUIRE(p.heartbeat.value_or(0) < std::max<size_t>(1, p.tasks.size()));
      for (const auto& t : p.tasks) {
        INFO(to_string(k) << " " << to_string(t.kind));
        CHECK_FALSE(probe_kinds_for(t.kind, w).empty());
        for (ProbeKind pk : probe_kinds_for(t.kind, w))
          CHECK((pk == ProbeKind::Health || pk == ProbeKind::Scrape || pk == pooled || pk == ProbeKind::Burst));
      }
      if (k != StageKind::Smoke) CHECK(p.tasks[*p.heartbeat].kind == TaskKind::Scrape);
    }
    std::vector<TaskKind> canary;
    for (const auto& t : plan_for(StageKind::Canary, settings(), w).tasks) canary.push_back(t.kind);
    CHECK(canary == std::vector<TaskKind>{TaskKind::Scrape, TaskKind::Functional, TaskKind::Burst});
  }
}

TEST_CASE("canary warm-up: it opens the stage with only the heartbeat beside it; the rest once it has ended") {
  StagePlan p = plan_for(StageKind::Canary, settings(), WorkloadKind::Chat, Warmup::Opening);
  REQUIRE(p.tasks.back().kind == TaskKind::Warmup);
  CHECK(p.tasks.back().repeat == Repeat::Opening);
  CHECK(p.tasks.back().weight == Weight::Heavy);
  CHECK(p.heartbeat == 0);  // the heartbeat keeps its place
  CHECK(p.tasks[0].kind == TaskKind::Scrape);
  const size_t w = p.tasks.size() - 1;
  std::vector<TaskState> st(p.tasks.size());
  CHECK(kinds(p, next_due(p, st, 0, 0, HeavyGate::Free)) == std::vector<TaskKind>{TaskKind::Scrape, TaskKind::Warmup});
  // Another candidate's heavy work on the host: the warm-up waits, and so
  // does everything else but the heartbeat (once per slot); the heavy tasks
  // count the wait.
  DueSet held = next_due(p, st, 0, 0, HeavyGate::Busy);
  CHECK(kinds(p, held) == std::vector<TaskKind>{TaskKind::Scrape});
  REQUIRE_FALSE(held.held.empty());
  CHECK(held.held[0] == w);
  CHECK(held.held.size() == 5);  // the warm-up, long context, burst, capacity, prefix reuse
  for (size_t i : held.held) CHECK(p.tasks[i].weight == Weight::Heavy);
  mark_started(st, held.due[0], 0);
  mark_finished(st, 0, 1'000);
  CHECK(next_due(p, st, 0, 2'000, HeavyGate::Busy).due.empty());
  CHECK(kinds(p, next_due(p, st, 0, p.tasks[0].every_ms, HeavyGate::Busy)) == std::vector<TaskKind>{TaskKind::Scrape});
  st[0] = TaskState{};
  mark_started(st, Due{w, 0}, 0);
  // Running: nothing else starts but the heartbeat, on its slots (its health
  // and scrape send no inference request).
  CHECK(kinds(p, next_due(p, st, 0, 20'000, HeavyGate::Free)) == std::vector<TaskKind>{TaskKind::Scrape});
  mark_started(st, Due{0, 0}, 20'000);
  mark_finished(st, 0, 21'000);
  CHECK(next_due(p, st, 0, 22'000, HeavyGate::Free).due.empty());
  mark_finished(st, w, 30'000);
  CHECK(kinds(p, next_due(p, st, 0, 30'000, HeavyGate::Free)) ==
        std::vector<TaskKind>{TaskKind::Functional, TaskKind::LongContext, TaskKind::Cancel});
  // It never runs again in the stage.
  for (size_t i = 0; i + 1 < st.size(); ++i) st[i].last_slot = 100;
  CHECK(next_due(p, st, 0, 2 * kHour, HeavyGate::Free).due.size() < p.tasks.size() - 1);
  for (const Due& d : next_due(p, st, 0, 200 * kHour, HeavyGate::Free).due) CHECK(d.task != w);
  // Two short completions; a pooling candidate warms up with its pooling probe.
  CHECK(probe_kinds_for(TaskKind::Warmup) == std::vector<ProbeKind>{ProbeKind::Marker, ProbeKind::Stream});
  CHECK(probe_kinds_for(TaskKind::Warmup, WorkloadKind::Embedding) == std::vector<ProbeKind>{ProbeKind::Embeddings});
  CHECK(parse_task_kind("warmup") == TaskKind::Warmup);
  // Only a canary opens with it.
  for (StageKind k : {StageKind::Smoke, StageKind::Gate, StageKind::Soak})
    for (const auto& t : plan_for(k, settings(), WorkloadKind::Chat, Warmup::Opening).tasks)
      CHECK(t.kind != TaskKind::Warmup);
  for (const auto& t : plan_for(StageKind::Canary, settings()).tasks) CHECK(t.kind != TaskKind::Warmup);
}

namespace {
CampaignSettings golden_on() {
  CampaignSettings s = settings();
  s.equivalence.enabled = EquivalenceSwitch::On;  // the default
  return s;
}
std::vector<std::pair<TaskKind, Repeat>> golden_tasks(const StagePlan& p) {
  std::vector<std::pair<TaskKind, Repeat>> out;
  for (const auto& t : p.tasks)
    if (t.kind == TaskKind::GoldenStart || t.kind == TaskKind::GoldenEnd) {
      CHECK(t.weight == Weight::Heavy);  // 2K and 8K prompts: never beside another heavy task
      out.emplace_back(t.kind, t.repeat);
    }
  return out;
}
}  // namespace

TEST_CASE("golden set: a chat canary runs it at its start and end, a soak at its end; off or pooling: never") {
  CHECK(CampaignSettings{}.equivalence.enabled == EquivalenceSwitch::On);  // on by default
  using G = std::vector<std::pair<TaskKind, Repeat>>;
  const G canary{{TaskKind::GoldenStart, Repeat::Opening}, {TaskKind::GoldenEnd, Repeat::Closing}};
  const G soak{{TaskKind::GoldenEnd, Repeat::Closing}};
  CHECK(golden_tasks(plan_for(StageKind::Canary, golden_on())) == canary);
  CHECK(golden_tasks(plan_for(StageKind::Soak, golden_on())) == soak);
  CHECK(golden_tasks(plan_for(StageKind::Smoke, golden_on())).empty());
  CHECK(golden_tasks(plan_for(StageKind::Gate, golden_on())).empty());
  // equivalence.enabled off: none anywhere.
  for (StageKind k : {StageKind::Smoke, StageKind::Canary, StageKind::Gate, StageKind::Soak})
    CHECK(golden_tasks(plan_for(k, settings())).empty());
  // A pooling candidate is never sent a chat prompt.
  for (WorkloadKind w : {WorkloadKind::Embedding, WorkloadKind::Rerank})
    for (StageKind k : {StageKind::Canary, StageKind::Soak}) CHECK(golden_tasks(plan_for(k, golden_on(), w)).empty());
  CHECK(probe_kinds_for(TaskKind::GoldenStart) == std::vector<ProbeKind>{ProbeKind::Equivalence});
  CHECK(probe_kinds_for(TaskKind::GoldenEnd) == std::vector<ProbeKind>{ProbeKind::Equivalence});
  CHECK(parse_task_kind("golden_start") == TaskKind::GoldenStart);
  CHECK(parse_task_kind("golden_end") == TaskKind::GoldenEnd);
  // The heartbeat keeps its index.
  CHECK(plan_for(StageKind::Canary, golden_on()).heartbeat == 0);
}

TEST_CASE("golden set: the canary's first run follows the warm-up, alone but for the heartbeat; never mid-stage") {
  StagePlan p = plan_for(StageKind::Canary, golden_on(), WorkloadKind::Chat, Warmup::Opening);
  std::vector<TaskState> st(p.tasks.size());
  auto only = [&](const DueSet& d, TaskKind k) {
    for (const Due& x : d.due)
      if (p.tasks[x.task].kind == k) return x;
    FAIL("not due: " << to_string(k));
    return Due{};
  };
  CHECK(kinds(p, next_due(p, st, 0, 0, HeavyGate::Free)) == std::vector<TaskKind>{TaskKind::Scrape, TaskKind::Warmup});
  const Due warm = only(next_due(p, st, 0, 0, HeavyGate::Free), TaskKind::Warmup);
  mark_started(st, warm, 0);
  mark_started(st, Due{0, 0}, 0);
  mark_finished(st, 0, 10);
  CHECK(next_due(p, st, 0, 10, HeavyGate::Free).due.empty());  // the warm-up runs: nothing else
  mark_finished(st, warm.task, 30'000);
  // Then the golden set, alone but for the heartbeat (slot 0 served).
  DueSet g = next_due(p, st, 0, 30'000, HeavyGate::Free);
  CHECK(kinds(p, g) == std::vector<TaskKind>{TaskKind::GoldenStart});
  // Another candidate's heavy work on the host: it waits, the heartbeat does not.
  DueSet held = next_due(p, st, 0, kMinute, HeavyGate::Busy);
  CHECK(kinds(p, held) == std::vector<TaskKind>{TaskKind::Scrape});
  REQUIRE_FALSE(held.held.empty());
  CHECK(p.tasks[held.held[0]].kind == TaskKind::GoldenStart);
  mark_started(st, g.due[0], 30'000);
  // While it runs the stage's heavy work is held by it (and counts the wait: a
  // stage whose heavy work never ran is extended to make it up).
  DueSet during = next_due(p, st, 0, 40'000, HeavyGate::Busy);
  CHECK(during.due.empty());
  std::vector<TaskKind> waiting;
  for (size_t i : during.held) waiting.push_back(p.tasks[i].kind);
  CHECK(waiting ==
        std::vector<TaskKind>{TaskKind::LongContext, TaskKind::Burst, TaskKind::Capacity, TaskKind::PrefixReuse});
  mark_finished(st, g.due[0].task, 90'000);
  // Then the stage's periodic work; never the end run, whatever the time.
  for (int64_t now : {int64_t{90'000}, 2 * kHour, 30 * kDay}) {
    std::vector<TaskState> copy = st;
    for (const Due& d : next_due(p, copy, 0, now, HeavyGate::Free).due) {
      CHECK(p.tasks[d.task].kind != TaskKind::GoldenEnd);
      CHECK(p.tasks[d.task].kind != TaskKind::GoldenStart);
    }
  }
  // closing_due() serves it (the campaign track asks at the stage's end), once.
  const auto end = closing_due(p, st);
  REQUIRE(end);
  CHECK(p.tasks[*end].kind == TaskKind::GoldenEnd);
  mark_started(st, Due{*end, 0}, 2 * kHour);
  CHECK_FALSE(closing_due(p, st));  // running
  mark_finished(st, *end, 2 * kHour + kMinute);
  CHECK_FALSE(closing_due(p, st));  // ran
}
