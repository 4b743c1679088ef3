// The campaign's stage transitions on their own: a track, `now` as a value, no
// store, no runner, no clock. Every stage's start, a stage completing and the
// next one starting, a stage extended by a coverage gap and inconclusive at its
// deadline, a hard failure ending the campaign, an unreachable smoke retried,
// an abort, and a restart in the middle of a stage.
#include <algorithm>

#include <nlohmann/json.hpp>

#include "schedules/campaign_track.h"
#include "tests/catch.h"

using namespace soak;

namespace {

constexpr int64_t kT0 = 1'767'225'600'000;  // 2026-01-01T00:00Z
constexpr int64_t kCandidateId = 11;
constexpr int64_t kHostId = 3;

ConfigSnapshot config(const std::string& schedule = R"({"nightly_window": "now"})", const std::string& more = "") {
  const std::string text = R"({
    "defaults": {)" + more +
                           R"(
      "stages": { "smoke": "15m", "canary": "2h", "gate": "24h", "soak": "7d", "grace": 0.25 },
      "cadence": { "scrape": "5m", "functional": "15m", "long_context": "1h", "burst": "1h", "cancel": "1h",
                   "gate_pause": "30s", "soak_traffic": "10m", "soak_heavy": "12h" },
      "gate": { "min_coverage": 0.9 }
    },
    "schedule": )" + schedule +
                           R"(,
    "candidates": [{"name": "llama", "model": "qwen3.6-35b-a3b", "runtime": "llama.cpp",
                    "base_url": "http://127.0.0.1:18431"}]})";
  auto c = parse_config(text, "track.json", "/tmp");
  INFO((c.ok() ? "" : c.message()));
  REQUIRE(c.ok());
  return std::make_shared<const Config>(std::move(*c));
}

// For the cases about other tasks' runs and waits: without the golden set,
// whose opening run would take the stage's first step (its own cases are
// below and in plan_test.cc).
ConfigSnapshot config_no_golden() {
  return config(R"({"nightly_window": "now"})", R"("equivalence": {"enabled": false},)");
}

struct World {
  ConfigSnapshot cfg;
  Track t;
  int64_t next_stage_id = 100;

  explicit World(ConfigSnapshot c = config()) : cfg(std::move(c)) {
    set_config(t, cfg, cfg->candidates[0]);
    CandidateRow row;
    row.id = kCandidateId;
    row.host_id = kHostId;
    row.name = "llama";
    row.build = "b9430";
    t.row = row;
  }

  // What Campaigns does: open, store (the store gives the id), enter.
  Transition start(StageKind kind, int64_t now) {
    StageRow st = open_stage(t, kind, now);
    st.id = next_stage_id++;
    return enter_stage(t, st, now);
  }

  // Runs every dispatched task to a clean finish at `now`.
  void finish_all(const Transition& tr, int64_t now, Outcome outcome = Outcome::Clean) {
    for (const Due& d : tr.dispatch) {
      TaskReport rep;
      rep.outcomes = {outcome};
      rep.kinds = {ProbeKind::Health};
      task_finished(t, d.task, rep, now);
    }
  }

  // Steps through the stage every `every_ms` from `from` to before `until`,
  // finishing what each step dispatches; returns the last transition.
  Transition run(int64_t from, int64_t until, int64_t every_ms) {
    Transition last;
    for (int64_t now = from; now < until; now += every_ms) {
      last = step_stage(t, StepInputs{}, now);
      REQUIRE_FALSE(last.judge);
      finish_all(last, now);
    }
    return last;
  }
};

size_t count_task(const Track& t, const Transition& tr, TaskKind kind) {
  return static_cast<size_t>(std::count_if(tr.dispatch.begin(), tr.dispatch.end(),
                                           [&](const Due& d) { return t.plan.tasks[d.task].kind == kind; }));
}

std::vector<Event> of_kind(const std::vector<Event>& events, EventKind kind) {
  std::vector<Event> out;
  for (const Event& e : events)
    if (e.kind == kind) out.push_back(e);
  return out;
}

VerdictRow verdict(VerdictState state, const std::string& reason) {
  VerdictRow v;
  v.candidate_id = kCandidateId;
  v.state = state;
  v.reason = reason;
  return v;
}

bool has_warmup(const Track& t) {
  return std::any_of(t.plan.tasks.begin(), t.plan.tasks.end(),
                     [](const TaskSpec& s) { return s.kind == TaskKind::Warmup; });
}

}  // namespace

TEST_CASE("each stage starts with its length, deadline, plan and a running verdict") {
  struct Case {
    StageKind kind;
    int64_t length_ms;
    size_t tasks;
  };
  // The track's build is the first (no baseline): its canary opens with a warm-up, an eighth task;
  // the golden set (equivalence.enabled by default) adds its start and end runs to the canary,
  // its end run to the soak.
  for (const Case& k : {Case{StageKind::Smoke, 15 * kMinute, 1}, Case{StageKind::Canary, 2 * kHour, 10},
                        Case{StageKind::Gate, 24 * kHour, 3}, Case{StageKind::Soak, 7 * kDay, 6}}) {
    INFO(to_string(k.kind));
    World w;
    const StageRow row = open_stage(w.t, k.kind, kT0);
    CHECK(row.id == 0);  // the store gives it one
    CHECK(row.candidate_id == kCandidateId);
    CHECK(row.kind == k.kind);
    CHECK(row.state == StageState::Running);
    CHECK(row.started_ms == kT0);
    CHECK(row.length_ms == k.length_ms);
    CHECK(row.deadline_ms == kT0 + k.length_ms + k.length_ms / 4);

    Transition tr = w.start(k.kind, kT0);
    CHECK(w.t.phase == Phase::Staged);
    REQUIRE(w.t.stage);
    CHECK(w.t.stage->id == 100);
    CHECK(w.t.plan.stage == k.kind);
    CHECK(w.t.plan.tasks.size() == k.tasks);
    CHECK(w.t.tasks.size() == k.tasks);
    REQUIRE(tr.verdicts.size() == 1);
    const VerdictRow& v = tr.verdicts[0];
    CHECK(v.state == VerdictState::Running);
    CHECK(v.stage == std::string(to_string(k.kind)));
    CHECK(v.stage_id == 100);
    CHECK(v.reason == std::string(to_string(k.kind)) + " running");
    CHECK(v.config_hash == w.cfg->candidate_hash(w.cfg->candidates[0]));
    CHECK(v.judge_version == std::string(kJudgeVersion));
    CHECK_FALSE(v.is_override);
    CHECK_FALSE(tr.close_stage);
    CHECK_FALSE(tr.start);
    CHECK_FALSE(tr.judge);

    // Frozen (shutting down): nothing is dispatched. Else the first step
    // dispatches what is due at the start, one heavy task at most.
    CHECK(step_stage(w.t, StepInputs{false, HeavyGate::Free, true}, kT0).dispatch.empty());
    Transition first = step_stage(w.t, StepInputs{}, kT0);
    CHECK_FALSE(first.dispatch.empty());
    size_t heavy = 0;
    for (const Due& d : first.dispatch) {
      CHECK(w.t.tasks[d.task].running);
      heavy += w.t.plan.tasks[d.task].weight == Weight::Heavy ? 1 : 0;
    }
    CHECK(heavy <= 1);
  }
}

TEST_CASE("a heavy task waits while another heavy task holds the host") {
  World w;
  w.t.baseline_id = kCandidateId - 1;  // a later build: no warm-up first
  w.start(StageKind::Canary, kT0);
  Transition tr = step_stage(w.t, StepInputs{false, HeavyGate::Busy, false}, kT0);
  CHECK(count_task(w.t, tr, TaskKind::Scrape) == 1);
  CHECK(count_task(w.t, tr, TaskKind::LongContext) == 0);
  CHECK(count_task(w.t, tr, TaskKind::Burst) == 0);
}

TEST_CASE("a first build's canary and a managed one's open with a warm-up; a later unmanaged build's does not") {
  World first;
  first.start(StageKind::Canary, kT0);
  CHECK(has_warmup(first.t));
  // Only the warm-up is dispatched at the start, beside the heartbeat (no
  // inference request): nothing is timed before it.
  Transition tr = step_stage(first.t, StepInputs{}, kT0);
  REQUIRE(tr.dispatch.size() == 2);
  CHECK(first.t.plan.tasks[tr.dispatch[0].task].kind == TaskKind::Scrape);
  CHECK(first.t.plan.tasks[tr.dispatch[1].task].kind == TaskKind::Warmup);

  World later;
  later.t.baseline_id = kCandidateId - 1;
  later.start(StageKind::Canary, kT0);
  CHECK_FALSE(has_warmup(later.t));
  later.start(StageKind::Gate, kT0);
  CHECK_FALSE(has_warmup(later.t));

  const std::string managed = R"({"defaults": {"cadence": {"scrape": "5m"}}, "schedule": {"nightly_window": "now"},
    "candidates": [{"name": "llama", "model": "qwen3.6-35b-a3b", "runtime": "llama.cpp",
                    "base_url": "http://127.0.0.1:18431",
                    "launch": {"argv": ["llama-server", "--port", "18431"]}}]})";
  auto c = parse_config(managed, "track.json", "/tmp");
  INFO((c.ok() ? "" : c.message()));
  REQUIRE(c.ok());
  World launched(std::make_shared<const Config>(std::move(*c)));
  launched.t.baseline_id = kCandidateId - 1;
  launched.start(StageKind::Canary, kT0);
  CHECK(has_warmup(launched.t));
}

TEST_CASE("a stage that completes is judged, and a pass starts the next stage") {
  World w;
  w.t.baseline_id = kCandidateId - 1;  // a later build: no warm-up opens its canary
  w.start(StageKind::Canary, kT0);
  const int64_t end = kT0 + 2 * kHour;
  w.run(kT0, end, 5 * kMinute);
  // Every scrape slot of 2 h: the heartbeat runs beside the golden set's
  // opening run, the one task that runs while it does.
  CHECK(w.t.tasks[0].runs == 24);

  // At the nominal end with full coverage: wait for what is in flight, then
  // run the golden set's end run alone (the noise floor), then judge.
  CHECK_FALSE(step_stage(w.t, StepInputs{true, HeavyGate::Free, false}, end).judge);
  Transition closing = step_stage(w.t, StepInputs{}, end);
  CHECK_FALSE(closing.judge);
  REQUIRE(closing.dispatch.size() == 1);
  CHECK(w.t.plan.tasks[closing.dispatch[0].task].kind == TaskKind::GoldenEnd);
  CHECK(step_stage(w.t, StepInputs{true, HeavyGate::Free, false}, end + kMinute).dispatch.empty());
  w.finish_all(closing, end + kMinute);
  Transition at_end = step_stage(w.t, StepInputs{}, end + kMinute);
  REQUIRE(at_end.judge);
  CHECK(*at_end.judge == StageEnd::Completed);
  CHECK(at_end.dispatch.empty());

  // The recipe the judge gets: the stage's rows up to now, full coverage.
  StoredRecipe r = recipe_for(w.t, StageEnd::Completed, BaselineChoice{BaselineMode::Interleaved, kT0, end}, end);
  CHECK(r.recipe.stage == StageKind::Canary);
  CHECK(r.recipe.stage_id == 100);
  CHECK(r.recipe.candidate_id == kCandidateId);
  CHECK(r.recipe.host_id == kHostId);
  CHECK(r.recipe.slots_planned == 24);
  CHECK(r.recipe.slots_run == 24);
  // The golden set's comparison: against the baseline build's stored runs, under the candidate's rules.
  REQUIRE(r.recipe.equivalence);
  CHECK(r.recipe.equivalence->reference_id == kCandidateId - 1);
  CHECK(r.recipe.equivalence->rules.max_fork_margin == w.cfg->candidates[0].settings.equivalence.max_fork_margin);
  CHECK(r.recipe.baseline_mode == BaselineMode::Interleaved);
  CHECK(r.rows.since_ms == kT0);
  CHECK(r.rows.until_ms == end);
  // The canary's long-context gate needs the configured sizes; SOLO the candidate's say.
  CHECK(r.recipe.long_context_sizes == w.cfg->candidates[0].settings.long_context_sizes);
  CHECK(r.recipe.allow_coexisting == w.cfg->candidates[0].allow_coexisting);

  Transition judged = stage_judged(w.t, verdict(VerdictState::Promoted, "canary passed"), w.cfg->schedule, 0, end);
  REQUIRE(judged.close_stage);
  CHECK(judged.close_stage->state == StageState::Passed);
  CHECK(judged.close_stage->ended_ms == end);
  REQUIRE(judged.verdicts.size() == 1);
  CHECK(judged.verdicts[0].state == VerdictState::Running);  // the campaign goes on
  CHECK(judged.verdicts[0].reason == "canary passed");
  REQUIRE(judged.start);
  CHECK(*judged.start == StageKind::Gate);

  // The soak is the last stage: its pass is the campaign's. Its golden set is
  // compared with its own canary's runs (drift over the week).
  w.start(StageKind::Soak, end);
  StoredRecipe soak = recipe_for(w.t, StageEnd::Completed, std::nullopt, end + 7 * kDay);
  REQUIRE(soak.recipe.equivalence);
  CHECK(soak.recipe.equivalence->reference_id == kCandidateId);
  Transition last =
      stage_judged(w.t, verdict(VerdictState::Promoted, "soak passed"), w.cfg->schedule, 0, end + 7 * kDay);
  CHECK_FALSE(last.start);
  REQUIRE(last.verdicts.size() == 1);
  CHECK(last.verdicts[0].state == VerdictState::Promoted);
  CHECK(w.t.phase == Phase::Done);
  CHECK(w.t.final_state == VerdictState::Promoted);
}

TEST_CASE("a passed smoke waits for the canary: at once, or for the nightly window after a build change") {
  {
    World w;
    w.start(StageKind::Smoke, kT0);
    Transition tr =
        stage_judged(w.t, verdict(VerdictState::Promoted, "smoke passed"), w.cfg->schedule, 0, kT0 + kMinute);
    CHECK_FALSE(tr.start);
    CHECK(w.t.phase == Phase::WaitingCanary);
    CHECK(w.t.canary_not_before_ms == kT0 + kMinute);
  }
  {
    World w(config(R"({"nightly_window": "02:00"})"));
    w.t.from_build_change = true;
    w.start(StageKind::Smoke, kT0 + 10 * kHour);
    const int64_t now = kT0 + 10 * kHour + kMinute;  // 10:01 UTC
    Transition tr = stage_judged(w.t, verdict(VerdictState::Promoted, "smoke passed"), w.cfg->schedule, 0, now);
    CHECK(w.t.phase == Phase::WaitingCanary);
    CHECK(w.t.canary_not_before_ms == kT0 + kDay + 2 * kHour);  // 02:00 the next night
    CHECK(std::any_of(tr.notes.begin(), tr.notes.end(),
                      [](const std::string& n) { return n.find("nightly window") != std::string::npos; }));
  }
}

TEST_CASE("a stage short of coverage is extended, noted once, then inconclusive at its deadline") {
  World w;
  w.t.baseline_id = kCandidateId - 1;  // a later build: no warm-up opens its canary
  w.start(StageKind::Canary, kT0);
  w.run(kT0, kT0 + 30 * kMinute, 5 * kMinute);  // six slots, then the host slept
  const int64_t nominal_end = kT0 + 2 * kHour, deadline = kT0 + 2 * kHour + 30 * kMinute;

  Transition ext = step_stage(w.t, StepInputs{}, nominal_end);
  CHECK_FALSE(ext.judge);
  const std::vector<Event> extended = of_kind(ext.events, EventKind::StageExtended);  // heavy waits aside
  REQUIRE(extended.size() == 1);
  const Event& e = extended[0];
  CHECK(e.kind == EventKind::StageExtended);
  CHECK(e.candidate_id == kCandidateId);
  CHECK(e.host_id == kHostId);
  CHECK(e.wall_ms == nominal_end);
  CHECK(e.duration_ms == deadline - nominal_end);
  auto detail = nlohmann::json::parse(e.detail_json);
  CHECK(detail["stage"] == "canary");
  CHECK(detail["stage_id"] == 100);
  CHECK(detail["coverage"].get<double>() == Approx(6.0 / 24));
  CHECK(count_task(w.t, ext, TaskKind::Scrape) == 1);  // making up the gap
  w.finish_all(ext, nominal_end);

  // Still short later on: running, no second event.
  Transition later = step_stage(w.t, StepInputs{}, nominal_end + 5 * kMinute);
  CHECK(of_kind(later.events, EventKind::StageExtended).empty());
  CHECK_FALSE(later.judge);
  w.finish_all(later, nominal_end + 5 * kMinute);

  // The deadline: what is in flight is cut first, then the stage is judged as timed out.
  Transition cut = step_stage(w.t, StepInputs{true, HeavyGate::Free, false}, deadline);
  CHECK(cut.cancel);
  CHECK_FALSE(cut.judge);
  Transition end = step_stage(w.t, StepInputs{}, deadline);
  REQUIRE(end.judge);
  CHECK(*end.judge == StageEnd::TimedOut);

  // The judge sees a timed-out stage with 8 of 24 slots: inconclusive.
  StoredRecipe r = recipe_for(w.t, StageEnd::TimedOut, std::nullopt, deadline);
  CHECK(r.recipe.slots_planned == 24);
  CHECK(r.recipe.slots_run == 8);
  CHECK(r.recipe.end == StageEnd::TimedOut);
  JudgeInput in;
  in.recipe = r.recipe;
  VerdictRow v = judge_stage(in);
  INFO(v.reason);
  CHECK(v.state == VerdictState::Inconclusive);

  Transition judged = stage_judged(w.t, v, w.cfg->schedule, 0, deadline);
  REQUIRE(judged.close_stage);
  CHECK(judged.close_stage->state == StageState::Inconclusive);
  CHECK_FALSE(judged.start);
  REQUIRE(judged.verdicts.size() == 1);
  CHECK(judged.verdicts[0].state == VerdictState::Inconclusive);
  CHECK(w.t.phase == Phase::Done);
  CHECK(w.t.final_state == VerdictState::Inconclusive);
}

TEST_CASE("a hard failure in a run ends the campaign rejected") {
  World w(config_no_golden());
  w.t.baseline_id = kCandidateId - 1;  // a later build: no warm-up opens its canary
  w.start(StageKind::Canary, kT0);
  Transition first = step_stage(w.t, StepInputs{}, kT0);
  REQUIRE_FALSE(first.dispatch.empty());

  // A clean run asks for nothing; a candidate failure asks for a hard-failure check.
  TaskReport clean;
  clean.outcomes = {Outcome::Clean};
  CHECK_FALSE(task_finished(w.t, first.dispatch[0].task, clean, kT0 + kMinute).check_hard_failures);
  TaskReport hung;
  hung.outcomes = {Outcome::Clean, Outcome::Stalled};
  Transition tr = task_finished(w.t, first.dispatch[1].task, hung, kT0 + 2 * kMinute);
  CHECK(tr.check_hard_failures);

  // The check: the stage's recipe (stopped) and its rows, judged for hard failures only.
  StoredRecipe r = recipe_for(w.t, StageEnd::Stopped, std::nullopt, kT0 + 2 * kMinute);
  JudgeInput in;
  in.recipe = r.recipe;
  ProbeResult row;
  row.id = 7;
  row.candidate_id = kCandidateId;
  row.host_id = kHostId;
  row.stage_id = 100;
  row.kind = ProbeKind::Stream;
  row.workload_id = "stream";
  row.outcome = Outcome::Stalled;
  row.started_wall_ms = kT0 + kMinute;
  in.candidate_rows = {row};
  auto hard = judge_hard_failures(in);
  REQUIRE(hard);
  CHECK(hard->state == VerdictState::Rejected);

  Transition judged = stage_judged(w.t, judge_stage(in), w.cfg->schedule, 0, kT0 + 2 * kMinute);
  REQUIRE(judged.close_stage);
  CHECK(judged.close_stage->state == StageState::Failed);
  CHECK_FALSE(judged.start);
  REQUIRE(judged.verdicts.size() == 1);
  CHECK(judged.verdicts[0].state == VerdictState::Rejected);
  CHECK(w.t.phase == Phase::Done);
  CHECK(w.t.final_state == VerdictState::Rejected);
  CHECK(step_stage(w.t, StepInputs{}, kT0 + 3 * kMinute).dispatch.empty());  // nothing more runs
}

TEST_CASE("clean work with a baseline asks for the early check, ever more rarely; without one, never") {
  // latency_slo and paired cross on clean rows: the check must come without a
  // failure, but a week's soak must not read its rows once a task.
  auto checks_over = [](World& w, int64_t rows) {
    Transition first = step_stage(w.t, StepInputs{}, kT0);
    REQUIRE_FALSE(first.dispatch.empty());
    TaskReport clean;
    clean.outcomes = {Outcome::Clean};
    clean.kinds = {ProbeKind::Stream};
    std::vector<int64_t> at;
    for (int64_t n = 1; n <= rows; ++n)
      if (task_finished(w.t, first.dispatch[0].task, clean, kT0 + n * kSecond).check_hard_failures) at.push_back(n);
    return at;
  };
  SECTION("with a baseline") {
    World w;
    w.t.baseline_id = kCandidateId - 1;
    w.start(StageKind::Canary, kT0);
    const auto at = checks_over(w, 100'000);
    REQUIRE(at.size() >= 3);
    CHECK(at[0] == kEarlyCheckMinRows);  // the first after 16 rows
    CHECK(at[1] == 2 * kEarlyCheckMinRows);
    // Never more than max(16, n/4) rows late, and O(log n) checks in all.
    int64_t prev = 0;
    for (int64_t n : at) {
      CHECK(n - prev <= std::max(kEarlyCheckMinRows, prev / kEarlyCheckGrowth));
      prev = n;
    }
    CHECK(100'000 - prev <= std::max(kEarlyCheckMinRows, prev / kEarlyCheckGrowth));
    CHECK(at.size() < 50);
  }
  SECTION("a failure asks at once and restarts the spacing") {
    World w;
    w.t.baseline_id = kCandidateId - 1;
    w.start(StageKind::Canary, kT0);
    Transition first = step_stage(w.t, StepInputs{}, kT0);
    TaskReport clean, hung;
    clean.outcomes = {Outcome::Clean};
    clean.kinds = {ProbeKind::Stream};
    hung.outcomes = {Outcome::Stalled};
    hung.kinds = {ProbeKind::Stream};
    for (int i = 0; i < 10; ++i)
      CHECK_FALSE(task_finished(w.t, first.dispatch[0].task, clean, kT0).check_hard_failures);
    CHECK(task_finished(w.t, first.dispatch[0].task, hung, kT0).check_hard_failures);
    for (int i = 0; i < 15; ++i)
      CHECK_FALSE(task_finished(w.t, first.dispatch[0].task, clean, kT0).check_hard_failures);
    CHECK(task_finished(w.t, first.dispatch[0].task, clean, kT0).check_hard_failures);
  }
  SECTION("a new stage starts the count again") {
    World w;
    w.t.baseline_id = kCandidateId - 1;
    w.start(StageKind::Canary, kT0);
    REQUIRE(checks_over(w, 40).size() == 2);
    w.start(StageKind::Gate, kT0);
    CHECK(checks_over(w, 15).empty());
  }
  SECTION("rows without a timing (the heartbeat's scrapes) do not count") {
    World w;
    w.t.baseline_id = kCandidateId - 1;
    w.start(StageKind::Canary, kT0);
    Transition first = step_stage(w.t, StepInputs{}, kT0);
    TaskReport scrape;
    scrape.outcomes = {Outcome::Clean, Outcome::Clean};
    scrape.kinds = {ProbeKind::Scrape, ProbeKind::Health};
    for (int i = 0; i < 100; ++i)
      CHECK_FALSE(task_finished(w.t, first.dispatch[0].task, scrape, kT0).check_hard_failures);
  }
  SECTION("without a baseline, or at smoke") {
    World none;
    none.start(StageKind::Canary, kT0);
    CHECK(checks_over(none, 1'000).empty());
    World smoke;
    smoke.t.baseline_id = kCandidateId - 1;
    smoke.start(StageKind::Smoke, kT0);
    CHECK(checks_over(smoke, 100).empty());
  }
}

TEST_CASE("an unreachable smoke is retried, and judged as timed out at its length") {
  World w;
  w.start(StageKind::Smoke, kT0);
  Transition first = step_stage(w.t, StepInputs{}, kT0);
  REQUIRE(first.dispatch.size() == 1);
  TaskReport refused;
  refused.outcomes = {Outcome::ConnectRefused, Outcome::Loading};
  refused.detail = "connection refused";
  Transition tr = task_finished(w.t, 0, refused, kT0 + kSecond);
  CHECK_FALSE(tr.check_hard_failures);
  CHECK(w.t.tasks[0].runs == 0);
  REQUIRE(w.t.smoke_retry_at_ms);
  CHECK(*w.t.smoke_retry_at_ms == kT0 + kSecond + kSmokeRetryMs);

  // Nothing before the retry time, the pass again at it.
  CHECK(step_stage(w.t, StepInputs{}, kT0 + 5 * kSecond).dispatch.empty());
  Transition again = step_stage(w.t, StepInputs{}, kT0 + kSecond + kSmokeRetryMs);
  CHECK(again.dispatch.size() == 1);
  CHECK_FALSE(w.t.smoke_retry_at_ms);

  // Still out at the smoke's length: cut, then judged as timed out.
  CHECK(step_stage(w.t, StepInputs{true, HeavyGate::Free, false}, kT0 + 15 * kMinute).cancel);
  Transition end = step_stage(w.t, StepInputs{}, kT0 + 15 * kMinute);
  REQUIRE(end.judge);
  CHECK(*end.judge == StageEnd::TimedOut);
}

TEST_CASE("a smoke whose pass ran is judged once nothing is in flight") {
  World w;
  w.start(StageKind::Smoke, kT0);
  Transition first = step_stage(w.t, StepInputs{}, kT0);
  TaskReport ok;
  ok.outcomes = {Outcome::Clean};
  task_finished(w.t, first.dispatch[0].task, ok, kT0 + 10 * kSecond);
  Transition tr = step_stage(w.t, StepInputs{}, kT0 + 10 * kSecond);
  REQUIRE(tr.judge);
  CHECK(*tr.judge == StageEnd::Completed);
  StoredRecipe r = recipe_for(w.t, StageEnd::Completed, std::nullopt, kT0 + 10 * kSecond);
  CHECK(r.recipe.slots_planned == 1);  // smoke has no heartbeat: coverage is not its measure
  CHECK(r.recipe.slots_run == 1);
}

TEST_CASE("an abort closes the running stage and writes the operator's verdict") {
  World w;
  w.start(StageKind::Gate, kT0);
  Transition tr =
      end_campaign(w.t, VerdictState::Inconclusive, "aborted by ana: rollback", kT0 + kHour, "ana", "rollback");
  REQUIRE(tr.close_stage);
  CHECK(tr.close_stage->state == StageState::Aborted);
  CHECK(tr.close_stage->ended_ms == kT0 + kHour);
  REQUIRE(tr.verdicts.size() == 1);
  CHECK(tr.verdicts[0].state == VerdictState::Inconclusive);
  CHECK(tr.verdicts[0].stage == "gate");
  CHECK(tr.verdicts[0].is_override);
  CHECK(tr.verdicts[0].who == "ana");
  CHECK(w.t.phase == Phase::Done);

  // Promoted by override: the stage counts as passed.
  World p;
  p.start(StageKind::Canary, kT0);
  Transition promoted = end_campaign(p.t, VerdictState::Promoted, "promoted by override", kT0 + kHour, "ana");
  REQUIRE(promoted.close_stage);
  CHECK(promoted.close_stage->state == StageState::Passed);
}

TEST_CASE("after a restart a stage resumes with its slots and a gap event") {
  World w;
  w.t.baseline_id = kCandidateId - 1;  // a later build: no warm-up opens its canary
  StageRow running = open_stage(w.t, StageKind::Canary, kT0);
  running.id = 42;
  std::vector<ProbeResult> rows;
  for (int slot : {0, 1, 2}) {  // three scrape slots ran, the last at +10 min
    ProbeResult r;
    r.id = 1 + slot;
    r.task = "scrape";
    r.started_wall_ms = kT0 + slot * 5 * kMinute + kSecond;
    rows.push_back(r);
  }
  const int64_t now = kT0 + kHour;
  Transition tr = resume_stage(w.t, running, rows, {}, now);
  CHECK(w.t.phase == Phase::Staged);
  CHECK(w.t.stage->started_ms == kT0);  // the original start and deadline
  CHECK(w.t.tasks[0].runs == 3);
  CHECK(w.t.tasks[0].last_slot == 2);
  REQUIRE(tr.events.size() == 1);
  CHECK(tr.events[0].kind == EventKind::Gap);
  CHECK(tr.events[0].duration_ms == now - (kT0 + 10 * kMinute + kSecond));
  CHECK(tr.verdicts.empty());

  // Missed slots are not backfilled: only the current one runs. The stage's
  // rows hold no golden-set run yet: its opening run comes beside it, before
  // anything else (late, it is still a second run of the build for the noise floor).
  Transition next = step_stage(w.t, StepInputs{}, now);
  CHECK(count_task(w.t, next, TaskKind::Scrape) == 1);
  CHECK(count_task(w.t, next, TaskKind::GoldenStart) == 1);
  CHECK(next.dispatch.size() == 2);
}

TEST_CASE("after a restart the warm-up is what the stage's rows say, not what the config would choose") {
  auto row = [](TaskKind task, int64_t at) {
    ProbeResult r;
    r.task = std::string(to_string(task));
    r.started_wall_ms = at;
    return r;
  };
  // A first build would open its canary with a warm-up today...
  World first;
  StageRow running = open_stage(first.t, StageKind::Canary, kT0);
  running.id = 7;
  // ...but this stage began without one (a baseline was known then): none mid-stage.
  resume_stage(first.t, running, {row(TaskKind::Scrape, kT0), row(TaskKind::Functional, kT0 + kMinute)}, {},
               kT0 + kHour);
  CHECK_FALSE(has_warmup(first.t));
  // A stage whose warm-up ran keeps it, done.
  World warmed;
  warmed.t.baseline_id = kCandidateId - 1;  // today: no warm-up would be chosen
  resume_stage(warmed.t, running, {row(TaskKind::Warmup, kT0), row(TaskKind::Functional, kT0 + kMinute)}, {},
               kT0 + kHour);
  REQUIRE(has_warmup(warmed.t));
  const auto warm_index = [](const Track& t) {
    return static_cast<size_t>(std::find_if(t.plan.tasks.begin(), t.plan.tasks.end(),
                                            [](const TaskSpec& s) { return s.kind == TaskKind::Warmup; }) -
                               t.plan.tasks.begin());
  };
  CHECK(warmed.t.tasks[warm_index(warmed.t)].runs == 1);
  // Only heartbeats so far (the warm-up waited for the heavy gate): the config decides.
  World waiting;
  resume_stage(waiting.t, running, {row(TaskKind::Scrape, kT0)}, {}, kT0 + kHour);
  CHECK(has_warmup(waiting.t));
  CHECK(waiting.t.tasks[warm_index(waiting.t)].runs == 0);
}

TEST_CASE("heavy waits survive a restart: the same waits from the stored heavy_wait events") {
  // Live: the canary's heavy tasks are held for 20 min by another candidate's
  // heavy work, then long context runs; burst is held again and still waits
  // when the daemon stops at +50 min.
  World live(config_no_golden());
  live.t.baseline_id = kCandidateId - 1;  // a later build: no warm-up opens its canary
  live.start(StageKind::Canary, kT0);
  std::vector<Event> stored;
  auto step = [&](HeavyGate heavy, int64_t now) {
    Transition tr = step_stage(live.t, StepInputs{false, heavy, false}, now);
    for (const Event& e : tr.events)
      if (e.kind == EventKind::HeavyWait) stored.push_back(e);
    return tr;
  };
  step(HeavyGate::Busy, kT0);
  step(HeavyGate::Busy, kT0 + 10 * kMinute);
  Transition freed = step(HeavyGate::Free, kT0 + 20 * kMinute);
  REQUIRE(count_task(live.t, freed, TaskKind::LongContext) == 1);
  live.finish_all(freed, kT0 + 30 * kMinute);
  step(HeavyGate::Busy, kT0 + 40 * kMinute);
  const int64_t stop = kT0 + 50 * kMinute;
  const std::vector<HeavyWait> before = recipe_for(live.t, StageEnd::Completed, std::nullopt, stop).recipe.heavy_waits;
  REQUIRE_FALSE(before.empty());
  REQUIRE_FALSE(stored.empty());
  for (const Event& e : stored) {
    const auto d = nlohmann::json::parse(e.detail_json);
    CHECK(d["stage_id"] == 100);
    CHECK((d["wait"] == "began" || (d["wait"] == "ended" && e.duration_ms)));
  }

  // The daemon comes back: the stage's rows (the long-context run, a scrape at +50 min) and its events.
  World back(config_no_golden());
  back.t.baseline_id = live.t.baseline_id;
  StageRow running = open_stage(back.t, StageKind::Canary, kT0);
  running.id = 100;
  std::vector<ProbeResult> rows(2);
  rows[0].task = std::string(to_string(TaskKind::LongContext));
  rows[0].started_wall_ms = kT0 + 20 * kMinute;
  rows[1].task = std::string(to_string(TaskKind::Scrape));
  rows[1].started_wall_ms = stop;
  const Transition resumed = resume_stage(back.t, running, rows, stored, kT0 + 2 * kHour);
  const std::vector<HeavyWait> after = recipe_for(back.t, StageEnd::Completed, std::nullopt, stop).recipe.heavy_waits;
  CHECK(after == before);

  // The wait the restart closed is stored as ended: held again after the
  // restart (a new wait of 10 min), a second restart counts the first wait
  // once, at the length the first resume gave it, not up to the new wait.
  int64_t closed = 0;
  for (const Event& e : resumed.events)
    if (e.kind == EventKind::HeavyWait) {
      CHECK(nlohmann::json::parse(e.detail_json)["wait"] == "ended");
      stored.push_back(e);
      ++closed;
    }
  CHECK(closed >= 1);  // every heavy task still held at the stop

  // Without the events the restarted daemon would have forgotten every wait.
  World forgot(config_no_golden());
  forgot.t.baseline_id = live.t.baseline_id;
  resume_stage(forgot.t, running, rows, {}, kT0 + 2 * kHour);
  CHECK(recipe_for(forgot.t, StageEnd::Completed, std::nullopt, stop).recipe.heavy_waits.empty());

  // Held again after the restart (Busy), then freed 10 min later; the daemon
  // stops once more. Its second resume counts the same waits.
  const int64_t again_stop = kT0 + 2 * kHour + 10 * kMinute;
  for (auto [heavy, at] : {std::pair{HeavyGate::Busy, kT0 + 2 * kHour}, std::pair{HeavyGate::Free, again_stop}}) {
    Transition tr = step_stage(back.t, StepInputs{false, heavy, false}, at);
    for (const Event& e : tr.events)
      if (e.kind == EventKind::HeavyWait) stored.push_back(e);
    for (const Due& d : tr.dispatch) {  // what ran, as its rows say
      rows.emplace_back();
      rows.back().task = std::string(to_string(back.t.plan.tasks[d.task].kind));
      rows.back().started_wall_ms = at;
    }
    back.finish_all(tr, at);
  }
  const std::vector<HeavyWait> twice =
      recipe_for(back.t, StageEnd::Completed, std::nullopt, again_stop).recipe.heavy_waits;
  World again(config_no_golden());
  again.t.baseline_id = live.t.baseline_id;
  resume_stage(again.t, running, rows, stored, kT0 + 3 * kHour);
  CHECK(recipe_for(again.t, StageEnd::Completed, std::nullopt, again_stop).recipe.heavy_waits == twice);
}

TEST_CASE("ab interleaved: the previous build is wanted from the canary's start to its end, decided once a canary") {
  auto parsed = parse_config(R"({
    "defaults": { "stages": { "smoke": "15m", "canary": "2h", "gate": "24h", "soak": "7d" } },
    "candidates": [{"name": "llama", "model": "qwen3.6-35b-a3b", "runtime": "llama.cpp",
                    "base_url": "http://127.0.0.1:18431", "ab": "interleaved",
                    "launch": {"argv": ["llama-server", "--port", "18431"]}}]})",
                             "track.json", "/tmp");
  REQUIRE(parsed.ok());
  World w(std::make_shared<const Config>(std::move(*parsed)));
  Track& t = w.t;
  t.baseline_id = 7;
  t.phase = Phase::WaitingCanary;
  CHECK(previous_action(t, false) == PreviousAction::None);  // the canary is not due: nothing starts hours early
  CHECK(previous_action(t, true) == PreviousAction::Start);

  // Started for this canary: the canary waits while it loads, and it stays wanted.
  PreviousRuntime& p = t.managed.previous;
  p.phase = PreviousPhase::Starting;
  p.for_row = kCandidateId;
  p.baseline_id = 7;
  p.note = "the previous build b9400 (/cellar/9400/llama-server) on port 40123 ran beside it as pid 9";
  CHECK(canary_waits_for_previous(t));
  CHECK(previous_action(t, false) == PreviousAction::None);
  p.phase = PreviousPhase::Up;
  CHECK_FALSE(canary_waits_for_previous(t));
  w.start(StageKind::Canary, kT0);
  CHECK(previous_action(t, false) == PreviousAction::None);
  CHECK(recipe_for(t, StageEnd::Completed, std::nullopt, kT0 + kHour).recipe.baseline_note == p.note);

  SECTION("decided against or ended: not tried again within the canary") {
    p.phase = PreviousPhase::Off;
    CHECK(previous_action(t, false) == PreviousAction::None);
  }
  SECTION("the baseline changed: started again for it") {
    t.baseline_id = 8;
    CHECK(previous_action(t, false) == PreviousAction::Start);
  }
  SECTION("the canary ended: stopped, whether the gate follows or the campaign ended") {
    w.start(StageKind::Gate, kT0 + 2 * kHour);
    CHECK(previous_action(t, false) == PreviousAction::Stop);
    CHECK(recipe_for(t, StageEnd::Completed, std::nullopt, kT0 + 3 * kHour).recipe.baseline_note.empty());
    t.phase = Phase::Done;
    CHECK(previous_action(t, false) == PreviousAction::Stop);
    t.managed.previous = PreviousRuntime{};
    CHECK(previous_action(t, false) == PreviousAction::None);
  }
  SECTION("ab history, or no previous build to compare with: never") {
    t.baseline_id.reset();
    t.managed.previous = PreviousRuntime{};
    CHECK(previous_action(t, false) == PreviousAction::None);
    World h;  // unmanaged, ab history
    h.t.baseline_id = 7;
    h.start(StageKind::Canary, kT0);
    CHECK(previous_action(h.t, true) == PreviousAction::None);
  }
}

// A promotion needs every decisive rule's evidence (docs/DESIGN.md §3.2): a
// judgment short of it runs the stage on while more of that work is coming.
TEST_CASE("a gate short of a decisive rule's evidence runs on, then is judged again, bounded by its deadline") {
  World w(config_no_golden());
  w.start(StageKind::Gate, kT0);
  const int64_t end = kT0 + 24 * kHour, deadline = w.t.stage->deadline_ms;
  w.run(kT0, end, 30 * kSecond);
  Transition at_end = step_stage(w.t, StepInputs{}, end);
  REQUIRE(at_end.judge == StageEnd::Completed);

  VerdictRow v = verdict(VerdictState::Inconclusive, "gate inconclusive: evidence short: self/ttft_ms ...");
  v.awaiting_evidence = {EvidenceGap{"failure_ratio", {ProbeKind::Agent}}};
  auto wait = wait_for_evidence(w.t, v, end);
  REQUIRE(wait);
  const auto ext = of_kind(wait->events, EventKind::StageExtended);
  REQUIRE(ext.size() == 1);
  const auto d = nlohmann::json::parse(ext[0].detail_json);
  CHECK(d["rules"] == nlohmann::json::array({"failure_ratio"}));
  CHECK(ext[0].duration_ms == deadline - end);
  REQUIRE(w.t.evidence_wait);

  // The stage runs on: its agent traffic keeps being dispatched, no judgment.
  Transition next = step_stage(w.t, StepInputs{}, end + kMinute);
  CHECK_FALSE(next.judge);
  CHECK(count_task(w.t, next, TaskKind::Agent) == 1);
  w.finish_all(next, end + kMinute);

  // Judged again once an eighth of the time to the deadline has passed.
  const int64_t recheck = w.t.evidence_wait->recheck_ms;
  CHECK(recheck == end + (deadline - end) / 8);
  w.run(end + 2 * kMinute, recheck, 30 * kSecond);
  CHECK(step_stage(w.t, StepInputs{}, recheck).judge == StageEnd::Completed);
  // Short again: it waits again, with no second event.
  auto again = wait_for_evidence(w.t, v, recheck);
  REQUIRE(again);
  CHECK(of_kind(again->events, EventKind::StageExtended).empty());
  // At the deadline the judgment stands, whatever it says.
  CHECK_FALSE(wait_for_evidence(w.t, v, deadline));
}

TEST_CASE("a stage short of evidence no plan task brings again is judged at once") {
  World w(config_no_golden());
  w.start(StageKind::Soak, kT0);
  VerdictRow v = verdict(VerdictState::Inconclusive, "soak inconclusive: evidence short: equivalence ...");
  // The golden set runs only at a stage's end: nothing more of it is coming.
  v.awaiting_evidence = {EvidenceGap{"equivalence", {ProbeKind::Equivalence}}};
  CHECK_FALSE(wait_for_evidence(w.t, v, kT0 + 7 * kDay));
  CHECK_FALSE(w.t.evidence_wait);
  // Samples (no kinds) come with time.
  v.awaiting_evidence = {EvidenceGap{"footprint", {}}};
  CHECK(wait_for_evidence(w.t, v, kT0 + 7 * kDay));
  // A verdict inconclusive for other reasons too names no gaps: it stands.
  v.awaiting_evidence.clear();
  World other(config_no_golden());
  other.start(StageKind::Soak, kT0);
  CHECK_FALSE(wait_for_evidence(other.t, v, kT0 + 7 * kDay));
}
