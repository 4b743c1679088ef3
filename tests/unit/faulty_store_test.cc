// FaultyStore around a real SqliteStore: faults by method, counted or standing,
// every write, and by rule (virtual time windows); what a failed call leaves
// behind (nothing), and the per-method counts.
#include <string>

#include "core/clock.h"
#include "storage/sqlite_store.h"
#include "tests/catch.h"
#include "tests/support/faulty_store.h"
#include "tests/support/temp_dir.h"

using namespace soak;
using namespace soak::test;

namespace {

struct Fixture {
  TempDir tmp;
  std::unique_ptr<SqliteStore> real;
  int64_t host = 0, cand = 0;

  Fixture() {
    auto s = SqliteStore::open(tmp.path() + "/s.db", OpenMode::ReadWrite, Durability::Fast);
    REQUIRE(s.ok());
    real = std::move(*s);
    auto h = real->upsert_host(HostInfo{"studio", "Mac15,14", 1LL << 30, "macOS 15.5"}, 1000);
    REQUIRE(h.ok());
    host = *h;
    CandidateRow c;
    c.host_id = host;
    c.name = "cand";
    c.model = "m";
    c.runtime = RuntimeKind::LlamaCpp;
    c.build = "b1";
    c.base_url = "http://127.0.0.1:8080";
    auto id = real->upsert_candidate(c, 1000);
    REQUIRE(id.ok());
    cand = *id;
  }

  ProbeResult probe(int64_t at_ms) const {
    ProbeResult r;
    r.candidate_id = cand;
    r.host_id = host;
    r.started_wall_ms = at_ms;
    r.kind = ProbeKind::Health;
    r.workload_id = "health";
    r.outcome = Outcome::Clean;
    return r;
  }
  HostSample host_sample(int64_t at_ms) const {
    HostSample h;
    h.host_id = host;
    h.wall_ms = at_ms;
    return h;
  }
  size_t stored_probes() const { return real->probe_results({})->size(); }
};

// Calls `m` once on `s` with arguments valid for the fixture's store; returns
// the call's error text ("" when it succeeded).
std::string call(Store& s, StoreMethod m, const Fixture& f) {
  auto err = [](const auto& r) { return r.ok() ? std::string() : r.message(); };
  StageRow stage{0, f.cand, StageKind::Smoke, StageState::Running, 1, 2, 3, std::nullopt, ""};
  VerdictRow verdict;
  verdict.candidate_id = f.cand;
  verdict.judge_version = "1";
  verdict.config_hash = "h";
  ControlRequest control;
  control.candidate = "cand";
  CandidateRow c = *f.real->candidate(f.cand).value();
  RuntimeLaunch launch;
  launch.id = 1;  // the row InsertLaunch wrote just before UpdateLaunch
  launch.host_id = f.host;
  launch.name = "cand";
  launch.pid = 42;
  launch.executable = "/usr/bin/llama-server";
  launch.argv_json = "[]";
  switch (m) {
    case StoreMethod::UpsertHost:
      return err(s.upsert_host(HostInfo{"studio", "Mac15,14", 1LL << 30, "macOS 15.5"}, 2000));
    case StoreMethod::UpsertCandidate: return err(s.upsert_candidate(c, 2000));
    case StoreMethod::SetBaseline: return err(s.set_baseline(f.cand, std::nullopt));
    case StoreMethod::SetFingerprint: return err(s.set_fingerprint(f.cand, R"({"slots":2})"));
    case StoreMethod::Candidate: return err(s.candidate(f.cand));
    case StoreMethod::Candidates: return err(s.candidates());
    case StoreMethod::InsertProbeResult: return err(s.insert_probe_result(f.probe(5)));
    case StoreMethod::InsertHostSample: return err(s.insert_host_sample(f.host_sample(5)));
    case StoreMethod::InsertProcessSample:
      return err(s.insert_process_sample(ProcessSample{0, f.host, f.cand, 5, 42, "p", {}, {}, {}, {}, {}, ""}));
    case StoreMethod::InsertEvent: return err(s.insert_event(Event{0, 5, f.host, f.cand, EventKind::Gap, "{}", 1}));
    case StoreMethod::InsertStage: return err(s.insert_stage(stage));
    case StoreMethod::UpdateStage: return err(s.update_stage(stage));
    case StoreMethod::Stages: return err(s.stages(f.cand));
    case StoreMethod::InsertVerdict: return err(s.insert_verdict(verdict));
    case StoreMethod::LatestVerdict: return err(s.latest_verdict(f.cand));
    case StoreMethod::Verdicts: return err(s.verdicts(f.cand));
    case StoreMethod::InsertContextReach: {
      ContextReach reach;
      reach.candidate_id = f.cand;
      reach.reach_tokens = 32768;
      reach.configured_tokens = 131072;
      return err(s.insert_context_reach(reach));
    }
    case StoreMethod::ContextReach: return err(s.context_reach(f.cand));
    case StoreMethod::InsertGoldenAnswer: {
      GoldenAnswerRow g;
      g.candidate_id = f.cand;
      g.run = "run";
      g.prompt_id = "factual/00";
      return err(s.insert_golden_answer(g));
    }
    case StoreMethod::GoldenAnswers: return err(s.golden_answers(f.cand));
    case StoreMethod::PutStageEvidence: return err(s.put_stage_evidence(StageEvidence{1, f.cand, 5, 0, "[]"}));
    case StoreMethod::StageEvidenceOf: return err(s.stage_evidence(1));
    case StoreMethod::InsertControl: return err(s.insert_control(control));
    case StoreMethod::PendingControls: return err(s.pending_controls());
    case StoreMethod::MarkControlHandled: return err(s.mark_control_handled(1, 9, "done"));
    case StoreMethod::InsertLaunch: return err(s.insert_launch(launch));
    case StoreMethod::UpdateLaunch: return err(s.update_launch(launch));
    case StoreMethod::Launches: return err(s.launches({}));
    case StoreMethod::ProbeResults: return err(s.probe_results({}));
    case StoreMethod::ProbeCounts: return err(s.probe_counts({}));
    case StoreMethod::ProbeRowCount: return err(s.probe_row_count({}));
    case StoreMethod::HostSamples: return err(s.host_samples({}));
    case StoreMethod::ProcessSamples: return err(s.process_samples({}));
    case StoreMethod::Events: return err(s.events({}));
    case StoreMethod::Status: return err(s.status());
    case StoreMethod::MaxIds: return err(s.max_ids());
  }
  return "unknown method";
}

}  // namespace

TEST_CASE("without faults every Store method reaches the real store, and each is counted as itself") {
  Fixture f;
  FaultyStore s(*f.real);
  for (StoreMethod m : all_store_methods()) {
    INFO(to_string(m));
    CHECK(call(s, m, f).empty());
    // Exactly this method's count moved: the enum, the names and the forwarding agree.
    for (StoreMethod other : all_store_methods()) CHECK(s.calls(other) == (other <= m ? 1 : 0));
  }
  CHECK(s.failures(StoreAccess::Read) + s.failures(StoreAccess::Write) == 0);
  CHECK(s.calls(StoreAccess::Write) + s.calls(StoreAccess::Read) == static_cast<int64_t>(kStoreMethodCount));
  // The writes landed in the real store.
  auto max = f.real->max_ids();
  REQUIRE(max.ok());
  CHECK(max->probe == 1);
  CHECK(max->host_sample == 1);
  CHECK(max->process_sample == 1);
  CHECK(max->event == 1);
  CHECK(f.real->pending_controls()->empty());  // insert_control, then mark_control_handled
}

TEST_CASE("every method can be made to fail, with its name and the text in the error") {
  Fixture f;
  FaultyStore s(*f.real);
  for (StoreMethod m : all_store_methods()) {
    INFO(to_string(m));
    s.fail_next(m, 1, kLocked);
    CHECK(call(s, m, f) == std::string(to_string(m)) + ": database is locked");
    CHECK(s.failures(m) == 1);
    CHECK(call(s, m, f).empty());  // only the next one
    CHECK(s.calls(m) == 2);
  }
  CHECK(to_string(StoreMethod::InsertProbeResult) == "insert_probe_result");
  CHECK(access_of(StoreMethod::UpdateStage) == StoreAccess::Write);
  CHECK(access_of(StoreMethod::MaxIds) == StoreAccess::Read);
}

TEST_CASE("a failed insert writes nothing; the next N calls fail, then calls go through") {
  Fixture f;
  FaultyStore s(*f.real);
  s.fail_next(StoreMethod::InsertProbeResult, 2);
  auto first = s.insert_probe_result(f.probe(1));
  REQUIRE_FALSE(first.ok());
  CHECK(first.message() == "insert_probe_result: database or disk is full");
  CHECK(first.code() == ErrorCode::StoreFull);  // the code the real store gives it
  CHECK_FALSE(s.insert_probe_result(f.probe(2)).ok());
  CHECK(f.stored_probes() == 0);
  CHECK(f.real->max_ids()->probe == 0);  // not even a rolled-back id was taken

  auto third = s.insert_probe_result(f.probe(3));
  REQUIRE(third.ok());
  auto rows = f.real->probe_results({});
  REQUIRE(rows->size() == 1);
  CHECK(rows->front().id == *third);
  CHECK(rows->front().started_wall_ms == 3);
  CHECK(s.calls(StoreMethod::InsertProbeResult) == 3);
  CHECK(s.failures(StoreMethod::InsertProbeResult) == 2);
  CHECK(s.calls(StoreMethod::InsertEvent) == 0);
}

TEST_CASE("while writes fail, reads still answer from the real store; clearing restores writes") {
  Fixture f;
  FaultyStore s(*f.real);
  REQUIRE(s.insert_probe_result(f.probe(1)).ok());
  s.fail_writes();
  for (StoreMethod m : all_store_methods()) {
    INFO(to_string(m));
    std::string e = call(s, m, f);
    if (access_of(m) == StoreAccess::Write)
      CHECK(e == std::string(to_string(m)) + ": database or disk is full");
    else
      CHECK(e.empty());
  }
  auto rows = s.probe_results({});
  REQUIRE(rows.ok());
  CHECK(rows->size() == 1);  // the row written before, and nothing since
  CHECK(f.real->max_ids()->event == 0);
  CHECK(f.real->stages(f.cand)->empty());
  CHECK(f.real->pending_controls()->empty());

  s.clear();
  REQUIRE(s.insert_probe_result(f.probe(2)).ok());
  CHECK(f.stored_probes() == 2);
  CHECK(s.failures(StoreAccess::Write) == 18);  // every write method failed once
  CHECK(s.failures(StoreAccess::Read) == 0);
  s.reset_counts();
  CHECK(s.calls(StoreAccess::Write) == 0);
}

TEST_CASE("a standing fault on one method lasts until that method is cleared") {
  Fixture f;
  FaultyStore s(*f.real);
  s.fail(StoreMethod::InsertEvent, kLocked);
  s.fail(StoreMethod::Events, kLocked);
  for (int i = 0; i < 3; ++i) CHECK_FALSE(s.insert_event(Event{0, i, f.host, f.cand, EventKind::Gap, "{}", 1}).ok());
  CHECK(s.insert_probe_result(f.probe(1)).ok());  // other methods unaffected
  s.clear(StoreMethod::InsertEvent);
  CHECK(s.insert_event(Event{0, 9, f.host, f.cand, EventKind::Gap, "{}", 1}).ok());
  CHECK_FALSE(s.events({}).ok());  // still failing: only InsertEvent was cleared
  CHECK(s.failures(StoreMethod::InsertEvent) == 3);
  CHECK(s.calls(StoreMethod::InsertEvent) == 4);
  CHECK(f.real->events({})->size() == 1);
}

TEST_CASE("a rule fails every write while virtual time is inside a window") {
  Fixture f;
  FaultyStore s(*f.real);
  VirtualClock clock;
  const int64_t t0 = clock.wall_ms();
  const int64_t t1 = t0 + 10'000, t2 = t0 + 20'000;
  std::vector<StoreCall> seen;
  s.fail_when([&](const StoreCall& c) -> std::optional<Error> {
    seen.push_back(c);
    const int64_t now = clock.wall_ms();
    if (c.access == StoreAccess::Write && now >= t1 && now < t2) return kDiskFull;
    return std::nullopt;
  });
  int expected_failures = 0;
  for (int step = 0; step < 30; ++step) {  // one sample a second for 30 s
    const int64_t now = clock.wall_ms();
    const bool inside = now >= t1 && now < t2;
    auto id = s.insert_host_sample(f.host_sample(now));
    CHECK(id.ok() == !inside);
    if (inside) {
      ++expected_failures;
      CHECK(id.message() == "insert_host_sample: database or disk is full");
    }
    CHECK(s.host_samples({}).ok());  // reads are never in the rule
    clock.advance_ms(1000);
  }
  CHECK(expected_failures == 10);
  CHECK(s.failures(StoreMethod::InsertHostSample) == 10);
  CHECK(s.calls(StoreMethod::InsertHostSample) == 30);
  auto stored = f.real->host_samples({});
  REQUIRE(stored.ok());
  REQUIRE(stored->size() == 20);
  for (const HostSample& h : *stored) CHECK((h.wall_ms < t1 || h.wall_ms >= t2));
  // The rule saw each call with its method, access and ordinal.
  REQUIRE(seen.size() == 60);
  CHECK(seen[0].method == StoreMethod::InsertHostSample);
  CHECK(seen[0].access == StoreAccess::Write);
  CHECK(seen[0].nth == 1);
  CHECK(seen[59].method == StoreMethod::HostSamples);
  CHECK(seen[59].access == StoreAccess::Read);
  CHECK(seen[59].nth == 30);

  s.clear();  // rules go too
  CHECK(s.insert_host_sample(f.host_sample(clock.wall_ms())).ok());
  CHECK(seen.size() == 60);
}

TEST_CASE("counted faults come before standing ones, and standing ones before rules") {
  Fixture f;
  FaultyStore s(*f.real);
  s.fail_when([](const StoreCall&) -> std::optional<Error> { return make_error("rule"); });
  s.fail(StoreMethod::InsertEvent, make_error("standing"));
  s.fail_next(StoreMethod::InsertEvent, 1, make_error("counted"));
  Event e{0, 1, f.host, f.cand, EventKind::Gap, "{}", 1};
  CHECK(s.insert_event(e).message() == "insert_event: counted");
  CHECK(s.insert_event(e).message() == "insert_event: standing");
  s.clear(StoreMethod::InsertEvent);
  CHECK(s.insert_event(e).message() == "insert_event: rule");
  s.clear();
  CHECK(s.insert_event(e).ok());
}
