// Managed candidates end to end (docs/DESIGN.md §4.8): the soakd binary starts
// the fake runtime (tests/fake_runtime) from a launch block, waits for its
// health, captures its output, samples its pid, judges it, and stops it; a
// runtime killed mid-gate is rejected with its exit signal and log tail; a
// port held by a process soakd did not start blocks the candidate and leaves
// that process alone; a footprint above memory_budget is rejected.
#include "tests/integration/managed_harness.h"

using namespace soak;
using namespace soak::managed_test;

TEST_CASE("a managed runtime is started, ready, logged, sampled by pid, judged and stopped when settled") {
  Setup s;
  s.write(fake_launch(kFake, s.port, "healthy", {"--build", "b100-managed"}), R"(, "memory_budget": "4GiB")");
  auto d = start_soakd(s, true);
  REQUIRE(d);
  const int pid = ready_pid(*d);
  CHECK(alive(pid));
  auto st = d->wait_exit(kRunMs);
  INFO(d->err());
  REQUIRE(st);
  REQUIRE(WIFEXITED(*st));
  CHECK(WEXITSTATUS(*st) == 0);

  // Stopped when its campaign settled, before soakd exited.
  CHECK_FALSE(alive(pid));
  auto cands = s.candidates();
  REQUIRE(cands.size() == 1);
  CHECK(cands[0].build == "b100-managed");  // read from the launched runtime's /props
  auto v = s.verdict(cands[0].id);
  REQUIRE(v);
  INFO(v->reason);
  CHECK(v->state == VerdictState::Promoted);
  CHECK(v->judge_input_json.find("\"managed\":true") != std::string::npos);

  auto ls = s.launches();
  REQUIRE(ls.size() == 1);
  CHECK(ls[0].pid == pid);
  CHECK(ls[0].candidate_id == cands[0].id);
  CHECK(ls[0].ready_ms);
  CHECK(ls[0].state == LaunchState::Stopped);
  CHECK(ls[0].detail.find("campaign settled") != std::string::npos);
  CHECK(ls[0].term_signal.value_or(0) == 0);  // SIGTERM: the fake exits 0
  CHECK(ls[0].exe_hash.size() == 16);
  CHECK(ls[0].argv_json.find("--listen") != std::string::npos);

  // Its stdout and stderr went to the runtime log, after soakd's marker.
  const std::string log = s.read_runtime_log();
  CHECK(log.find("---- soakd: starting ") != std::string::npos);
  CHECK(log.find("listening on 127.0.0.1:" + std::to_string(s.port)) != std::string::npos);

  // The sampler sampled the launched pid (no port or name search).
  SampleQuery q;
  q.candidate_id = cands[0].id;
  auto samples = *s.open_store()->process_samples(q);
  REQUIRE(samples.size() >= 10);
  for (const auto& p : samples) CHECK(p.pid == pid);
  // ...as the launched process: a search by the port would find the same pid.
  CHECK(d->err().find("runtime process " + std::to_string(pid) + " (launched by soakd)") != std::string::npos);

  // soakctl history shows the launch with the build.
  auto h =
      run_program({std::string(SOAKD_BINARY_DIR) + "/soakctl/soakctl", "--config", s.cfg, "history", "m"}, kStepMs);
  INFO(h.err);
  CHECK(h.exit_code == 0);
  CHECK(h.out.find("runtime launched") != std::string::npos);
  CHECK(h.out.find("pid " + std::to_string(pid)) != std::string::npos);
  // ... and so does soakctl explain, with the build's verdict (JSON: the launches array).
  auto e = run_program(
      {std::string(SOAKD_BINARY_DIR) + "/soakctl/soakctl", "--config", s.cfg, "explain", "m", "--json"}, kStepMs);
  INFO(e.err);
  CHECK(e.exit_code == 0);
  CHECK(e.out.find("\"launches\"") != std::string::npos);
  CHECK(e.out.find("\"pid\": " + std::to_string(pid)) != std::string::npos);
}

TEST_CASE("a managed runtime killed mid-gate is rejected with its exit signal and log tail") {
  Setup s;
  s.write(fake_launch(kFake, s.port, "healthy", {"--build", "b200-crash"}), "",
          R"({ "smoke": "4s", "canary": "4s", "gate": "60s", "soak": "4s" })");
  auto d = start_soakd(s, true);
  REQUIRE(d);
  const int pid = ready_pid(*d);
  REQUIRE(d->wait_for_line("gate started", kRunMs));
  REQUIRE(::kill(pid, SIGKILL) == 0);
  auto st = d->wait_exit(kRunMs);
  INFO(d->err());
  REQUIRE(st);
  CHECK(WIFEXITED(*st));

  auto cands = s.candidates();
  REQUIRE(cands.size() == 1);
  auto v = s.verdict(cands[0].id);
  REQUIRE(v);
  INFO(v->reason);
  CHECK(v->state == VerdictState::Rejected);
  CHECK(v->stage == "gate");
  CHECK(v->reason.find("SIGKILL") != std::string::npos);
  CHECK(v->reason.find("listening on") != std::string::npos);  // the log tail

  EventQuery eq;
  eq.candidate_id = cands[0].id;
  int gone = 0;
  for (const auto& e : *s.open_store()->events(eq)) {
    if (e.kind != EventKind::ProcessGone) continue;
    ++gone;
    CHECK(e.detail_json.find("\"term_signal\":9") != std::string::npos);
    CHECK(e.detail_json.find("listening on") != std::string::npos);
  }
  CHECK(gone == 1);
  auto ls = s.launches();
  REQUIRE(ls.size() == 1);  // never restarted inside the stage
  CHECK(ls[0].state == LaunchState::Exited);
  CHECK(ls[0].term_signal == SIGKILL);
}

TEST_CASE("a port held by a process soakd did not start blocks the candidate; that process is untouched") {
  Setup s;
  auto foreign = ChildProcess::spawn({kFake, "--listen", "127.0.0.1:" + std::to_string(s.port)});
  REQUIRE(foreign);
  REQUIRE(foreign->wait_for_line("listening on", kStepMs));
  s.write(fake_launch(kFake, s.port, "healthy", {"--build", "b300-never"}));
  auto d = start_soakd(s, true);
  REQUIRE(d);
  auto st = d->wait_exit(kRunMs);
  INFO(d->err());
  REQUIRE(st);
  CHECK(WIFEXITED(*st));

  auto cands = s.candidates();
  REQUIRE(cands.size() == 1);
  auto v = s.verdict(cands[0].id);
  REQUIRE(v);
  INFO(v->reason);
  CHECK(v->state == VerdictState::Blocked);
  CHECK(v->reason.find("pid " + std::to_string(foreign->pid())) != std::string::npos);
  CHECK(v->reason.find("soak-fake-runti") != std::string::npos);
  CHECK(alive(foreign->pid()));  // never signalled
  // Nothing was spawned.
  CHECK(s.launches().empty());
  CHECK(s.read_runtime_log().find("---- soakd: starting") == std::string::npos);
}

TEST_CASE("a managed runtime whose footprint goes above memory_budget is rejected with the samples") {
  Setup s;
  s.write(fake_launch(kFake, s.port, "memory-leak", {"--build", "b400-leak", "--leak-mb", "24"}),
          R"(, "memory_budget": "128MiB")");
  auto d = start_soakd(s, true);
  REQUIRE(d);
  auto st = d->wait_exit(kRunMs);
  INFO(d->err());
  REQUIRE(st);
  CHECK(WIFEXITED(*st));

  auto cands = s.candidates();
  REQUIRE(cands.size() == 1);
  auto v = s.verdict(cands[0].id);
  REQUIRE(v);
  INFO(v->reason);
  CHECK(v->state == VerdictState::Rejected);
  CHECK(v->reason.find("memory_budget") != std::string::npos);
  CHECK(v->reason.find("128.0 MiB") != std::string::npos);
  EventQuery eq;
  eq.candidate_id = cands[0].id;
  int over = 0;
  for (const auto& e : *s.open_store()->events(eq)) over += e.kind == EventKind::MemoryBudget;
  CHECK(over == 1);
  // Stopped once the campaign ended.
  auto ls = s.launches();
  REQUIRE(ls.size() == 1);
  CHECK_FALSE(alive(ls[0].pid));
}

TEST_CASE("a managed runtime not ready within ready_timeout is stopped and blocks the candidate, quoting its log") {
  Setup s;
  s.write("{\"argv\": " + fake_argv(kFake, s.port, "healthy", {"--build", "b800-slow", "--loading-ms", "60000"}) +
          ", \"ready_timeout\": \"2s\", \"stop_timeout\": \"5s\"}");
  auto d = start_soakd(s, true);
  REQUIRE(d);
  auto st = d->wait_exit(kRunMs);
  INFO(d->err());
  REQUIRE(st);
  CHECK(WIFEXITED(*st));
  auto cands = s.candidates();
  REQUIRE(cands.size() == 1);
  auto v = s.verdict(cands[0].id);
  REQUIRE(v);
  INFO(v->reason);
  CHECK(v->state == VerdictState::Blocked);
  CHECK(v->reason.find("not ready within 2s") != std::string::npos);
  CHECK(v->reason.find("listening on 127.0.0.1:" + std::to_string(s.port)) != std::string::npos);  // its log
  auto ls = s.launches();
  REQUIRE(ls.size() == 1);
  CHECK_FALSE(ls[0].ready_ms);
  CHECK(ls[0].state == LaunchState::Stopped);
  CHECK(ls[0].candidate_id == cands[0].id);
  CHECK_FALSE(alive(ls[0].pid));
}
