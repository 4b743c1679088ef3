// ProbeTaskRunner against the fake runtime and a real SQLite store: rows are
// stored as each probe finishes with the task's locators; the TaskRunner
// contract holds (done once, never inside run(), in_flight() already lower);
// cancel_all() stores the in-flight probe as cancelled_by_daemon. Build
// identity per adapter and per BuildSpec (HTTP, command without a shell,
// bounded in time, fixed).
#include <memory>

#include "core/log.h"
#include "daemon/probe_task_runner.h"
#include "storage/sqlite_store.h"
#include "tests/catch.h"
#include "tests/fake_runtime/fake_runtime.h"
#include "tests/integration/probe_harness.h"
#include "tests/support/temp_dir.h"

using namespace soak;
using namespace soak::probe_test;
using fake::FakeRuntime;
using fake::ListenerConfig;
using fake::Scenario;

namespace {

struct World {
  explicit World(Scenario s) : rt({fast(s)}) {
    REQUIRE(rt.start().ok());
    auto st = SqliteStore::open(tmp.path() + "/soakd.db", OpenMode::ReadWrite, Durability::Fast);
    REQUIRE(st.ok());
    store = std::move(*st);
    HostInfo host{"h", "m", 1, "os"};
    host_id = *store->upsert_host(host, 1);
    CandidateRow c;
    c.host_id = host_id;
    c.name = "fake";
    c.model = fake::kDefaultModel;
    c.runtime = RuntimeKind::LlamaCpp;
    c.build = "b9430";
    c.base_url = rt.base_url(0);
    candidate_id = *store->upsert_candidate(c, 1);
    StageRow stage;
    stage.candidate_id = candidate_id;
    stage.state = StageState::Running;
    stage_id = *store->insert_stage(stage);
    cand = candidate(rt.base_url(0));
  }
  static ListenerConfig fast(Scenario s) {
    ListenerConfig c = ListenerConfig::make(s);
    c.knobs.token_interval_ms = 1;
    return c;
  }
  TaskRequest request(TaskKind task) const {
    TaskRequest r;
    r.work_id = 7;
    r.candidate = std::make_shared<const CandidateConfig>(cand);
    r.candidate_id = candidate_id;
    r.host_id = host_id;
    r.stage_id = stage_id;
    r.task = task;
    r.group_id = 3;
    return r;
  }

  TempDir tmp;
  FakeRuntime rt;
  std::unique_ptr<SqliteStore> store;
  int64_t host_id = 0, candidate_id = 0, stage_id = 0;
  CandidateConfig cand;
};

}  // namespace

TEST_CASE("a smoke task stores one row per probe with the task's locators") {
  World w(Scenario::Healthy);
  Harness h;
  Outbox outbox(*w.store, h.clock(), make_null_logger(), w.host_id);
  ProbeTaskRunner runner(h.engine(), outbox);
  bool inside_run = true, done = false;
  TaskReport report;
  runner.run(w.request(TaskKind::Smoke), [&](TaskReport r) {
    CHECK_FALSE(inside_run);
    CHECK(runner.in_flight() == 0);
    CHECK_FALSE(done);
    report = std::move(r);
    done = true;
  });
  inside_run = false;
  CHECK(runner.in_flight() == 1);
  h.spin_until(done);

  const std::vector<ProbeKind> expected = probe_kinds_for(TaskKind::Smoke);
  REQUIRE(report.kinds == expected);
  ProbeQuery q;
  q.stage_id = w.stage_id;
  auto rows = *w.store->probe_results(q);
  REQUIRE(rows.size() == expected.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    INFO(to_string(rows[i].kind) << ": " << rows[i].detail);
    CHECK(rows[i].id == report.row_ids[i]);
    CHECK(rows[i].kind == expected[i]);
    CHECK(rows[i].outcome == Outcome::Clean);
    CHECK(report.outcomes[i] == Outcome::Clean);
    CHECK(rows[i].task == "smoke");
    CHECK(rows[i].candidate_id == w.candidate_id);
    CHECK(rows[i].host_id == w.host_id);
    CHECK(rows[i].group_id == 3);
  }
  CHECK(report.detail.find("6 row(s), 6 clean") != std::string::npos);
}

TEST_CASE("the free heap is trimmed after each row and after the task, outside their callbacks") {
  World w(Scenario::Healthy);
  Harness h;
  Outbox outbox(*w.store, h.clock(), make_null_logger(), w.host_id);
  int trims = 0, trims_at_report = -1;
  bool done = false, trimmed = false, trimmed_after_report = false;
  DeferredTrim trim(h.loop(), 0, [&] {
    ++trims;
    trimmed = true;
    trimmed_after_report = trimmed_after_report || done;
  });
  ProbeTaskRunner runner(h.engine(), outbox, &trim);
  runner.run(w.request(TaskKind::Smoke), [&](TaskReport) {
    trims_at_report = trims;
    done = true;
  });
  h.spin_until(done);
  // Rows ended one by one over the task: their trims ran while it went on.
  CHECK(trims_at_report >= 1);
  h.spin_until(trimmed_after_report);  // and once the task reported, not inside its callback
  CHECK(trims > trims_at_report);
  // Asked three times before it runs: one trim.
  const int before = trims;
  trimmed = false;
  for (int i = 0; i < 3; ++i) trim.soon();
  h.spin_until(trimmed);
  CHECK(trims == before + 1);
}

TEST_CASE("cancel_all stores the in-flight probe as cancelled_by_daemon and still reports") {
  World w(Scenario::KeepalivesOnly);  // every answer is held open: the probe is in flight until cancelled
  w.cand.settings.limits.stall_timeout_ms = 60'000;
  Harness h;
  Outbox outbox(*w.store, h.clock(), make_null_logger(), w.host_id);
  ProbeTaskRunner runner(h.engine(), outbox);
  bool done = false;
  TaskReport report;
  runner.run(w.request(TaskKind::Functional), [&](TaskReport r) {
    report = std::move(r);
    done = true;
  });
  // Cancel once the fake holds the request.
  bool held = false;
  Timer poll(h.loop());
  poll.start(5, 5, [&] {
    if (held || w.rt.stats(0).held == 0) return;
    held = true;
    runner.cancel_all();
  });
  h.spin_until(done);
  poll.stop();
  REQUIRE(held);
  REQUIRE(report.outcomes.size() == 1);  // the kinds after it never started
  CHECK(report.outcomes[0] == Outcome::CancelledByDaemon);
  CHECK(category_of(report.outcomes[0]) == OutcomeCategory::Harness);
  auto rows = *w.store->probe_results(ProbeQuery{});
  REQUIRE(rows.size() == 1);
  CHECK(rows[0].outcome == Outcome::CancelledByDaemon);
  CHECK(rows[0].task == "functional");
  CHECK(runner.in_flight() == 0);
}

TEST_CASE("build identity: HTTP per adapter, a version command without a shell, bounded, or fixed") {
  World w(Scenario::Healthy);
  probes::EngineOptions o;
  o.version_command_timeout_ms = 300;
  Harness h(o);

  auto http = h.read_build(w.cand);
  REQUIRE(http.ok());
  CHECK(http->build.rfind(std::string(fake::kDefaultBuild) + "-", 0) == 0);  // /props build_info b<N>-<commit>
  CHECK(http->model == std::string(fake::kDefaultModel));

  CandidateConfig c = w.cand;
  c.build.source = BuildSource::Command;
  // Arguments reach the program verbatim: no shell would keep "(" and the
  // double space, and none interprets the `;`.
  c.build.command = {"/bin/echo", "version: 9928 (81ff7abe5); echo  hacked"};
  auto cmd = h.read_build(c);
  REQUIRE(cmd.ok());
  CHECK(cmd->build == "b9928-81ff7abe5");

  c.runtime = RuntimeKind::OpenAI;
  c.build.command = {"/bin/echo", "  runtime 1.2.3  "};
  auto plain = h.read_build(c);
  REQUIRE(plain.ok());
  CHECK(plain->build == "runtime 1.2.3");

  c.build.command = {"/bin/sleep", "30"};
  auto slow = h.read_build(c);
  REQUIRE_FALSE(slow.ok());
  CHECK(slow.message().find("did not finish within 300 ms") != std::string::npos);

  c.build.command = {"/nonexistent/runtime-version"};
  auto missing = h.read_build(c);
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.message().find("cannot run") != std::string::npos);

  c.build.command = {"/bin/false"};
  auto failing = h.read_build(c);
  REQUIRE_FALSE(failing.ok());
  CHECK(failing.message().find("exited with status 1") != std::string::npos);

  c.build.source = BuildSource::Fixed;
  c.build.fixed = "mlx-lm-0.28.0";
  auto fixed = h.read_build(c);
  REQUIRE(fixed.ok());
  CHECK(fixed->build == "mlx-lm-0.28.0");

  c.build.source = BuildSource::Http;
  c.runtime = RuntimeKind::OpenAI;  // the generic adapter has no build route
  auto none = h.read_build(c);
  REQUIRE_FALSE(none.ok());
  CHECK(none.message().find("build.command or build.fixed") != std::string::npos);
}
