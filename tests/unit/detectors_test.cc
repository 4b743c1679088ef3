// Memory guard, gap/sleep detection, restart and duplicate-engine detection,
// and the keep-awake policy: pure logic, virtual time, no sleeping.
#include <nlohmann/json.hpp>

#include "core/clock.h"
#include "detectors/gap_detector.h"
#include "detectors/memory_guard.h"
#include "detectors/process_watch.h"
#include "platform/keep_awake.h"
#include "tests/catch.h"
#include "tests/support/runtime_signatures.h"

using namespace soak;

namespace {

constexpr int64_t kMB = 1000 * 1000;
constexpr int64_t kStepMs = 5'000;
constexpr int64_t kT0 = 1'767'225'600'000;

HostSample host(int64_t wall_ms, std::optional<int64_t> swap_used, std::optional<int64_t> swapouts,
                std::optional<int> pressure = 1) {
  HostSample s;
  s.host_id = 3;
  s.wall_ms = wall_ms;
  s.swap_used_bytes = swap_used;
  s.swapouts = swapouts;
  s.pressure_level = pressure;
  return s;
}

nlohmann::json detail(const Event& e) { return nlohmann::json::parse(e.detail_json); }

ProcessInfo engine(int pid, int ppid, std::vector<std::string> argv) {
  ProcessInfo p;
  p.pid = pid;
  p.ppid = ppid;
  p.name = argv.empty() ? "" : argv[0];
  p.argv = std::move(argv);
  return p;
}

// Counts outlive the assertion, so a test can see what its owner did at
// destruction. Every call is counted, also one made while already held (or
// not held), so a test sees whether the owner asked twice.
struct AssertionLog {
  int acquires = 0, releases = 0;
  std::string last_reason;
};

class CountingAssertion final : public PowerAssertion {
 public:
  explicit CountingAssertion(AssertionLog& log) : log_(log) {}
  bool fail_next_acquire = false;
  Status acquire(const std::string& reason) override {
    ++log_.acquires;
    if (held_) return Status::Ok();
    if (fail_next_acquire) {
      fail_next_acquire = false;
      return make_error("denied");
    }
    log_.last_reason = reason;
    held_ = true;
    return Status::Ok();
  }
  Status release() override {
    ++log_.releases;
    held_ = false;
    return Status::Ok();
  }
  bool held() const override { return held_; }

 private:
  AssertionLog& log_;
  bool held_ = false;
};

}  // namespace

TEST_CASE("guard: swap growth above 500 MB within the window trips once per episode") {
  MemoryGuard g{GuardRules{}};
  int64_t t = kT0;
  CHECK(g.observe(host(t, 1000 * kMB, 0)).empty());
  // +400 MB: under the threshold.
  t += kStepMs;
  CHECK(g.observe(host(t, 1400 * kMB, 0)).empty());
  // +501 MB over the window's low point: trip.
  t += kStepMs;
  auto ev = g.observe(host(t, 1501 * kMB, 0));
  REQUIRE(ev.size() == 1);
  CHECK(ev[0].kind == EventKind::GuardTrip);
  CHECK(ev[0].host_id == 3);
  CHECK(ev[0].wall_ms == t);
  CHECK(ev[0].duration_ms == 2 * kStepMs);
  auto d = detail(ev[0]);
  CHECK(d["rule"] == "swap_growth");
  CHECK(d["growth"] == 501 * kMB);
  CHECK(d["threshold"] == 500 * kMB);
  CHECK(d["since_ms"] == kT0);
  CHECK(g.tripped(GuardRule::SwapGrowth));
  // Still growing: same episode, no second event.
  t += kStepMs;
  CHECK(g.observe(host(t, 1800 * kMB, 0)).empty());
  CHECK(g.tripped());
}

TEST_CASE("guard: growth spread over more than the window does not trip; the window slides") {
  GuardRules rules;
  rules.window_ms = 60'000;
  MemoryGuard g{rules};
  // +100 MB a minute for 10 minutes: 1 GB total, never 500 MB within one window.
  for (int i = 0; i <= 10; ++i) {
    CHECK(g.observe(host(kT0 + i * 60'000, (1000 + 100 * i) * kMB, 0)).empty());
  }
  CHECK_FALSE(g.tripped());
}

TEST_CASE("guard: the episode ends when growth leaves the window, and a new one trips again") {
  GuardRules rules;
  rules.window_ms = 20'000;
  MemoryGuard g{rules};
  int64_t t = kT0;
  g.observe(host(t, 0, 0));
  t += kStepMs;
  REQUIRE(g.observe(host(t, 600 * kMB, 0)).size() == 1);
  // Flat for longer than the window: the low point slides out, the trip clears.
  for (int i = 0; i < 6; ++i) {
    t += kStepMs;
    CHECK(g.observe(host(t, 600 * kMB, 0)).empty());
  }
  CHECK_FALSE(g.tripped());
  t += kStepMs;
  CHECK(g.observe(host(t, 1200 * kMB, 0)).size() == 1);
}

TEST_CASE("guard: swapouts growth above 1000 pages") {
  MemoryGuard g{GuardRules{}};
  g.observe(host(kT0, 0, 50'000));
  CHECK(g.observe(host(kT0 + kStepMs, 0, 51'000)).empty());  // exactly 1000: not above
  auto ev = g.observe(host(kT0 + 2 * kStepMs, 0, 51'001));
  REQUIRE(ev.size() == 1);
  CHECK(detail(ev[0])["rule"] == "swapouts_growth");
  CHECK(detail(ev[0])["growth"] == 1001);
  CHECK(detail(ev[0])["unit"] == "pages");
}

TEST_CASE("guard: pressure critical trips on entry, re-arms after it eases") {
  MemoryGuard g{GuardRules{}};
  CHECK(g.observe(host(kT0, 0, 0, 2)).empty());  // warn is not critical
  auto ev = g.observe(host(kT0 + kStepMs, 0, 0, 4));
  REQUIRE(ev.size() == 1);
  CHECK(detail(ev[0])["rule"] == "pressure_critical");
  CHECK(detail(ev[0])["level"] == 4);
  CHECK(g.observe(host(kT0 + 2 * kStepMs, 0, 0, 4)).empty());
  CHECK(g.observe(host(kT0 + 3 * kStepMs, 0, 0, 1)).empty());
  CHECK(g.observe(host(kT0 + 4 * kStepMs, 0, 0, 4)).size() == 1);

  GuardRules quiet;
  quiet.pressure_critical_trips = false;
  MemoryGuard q{quiet};
  CHECK(q.observe(host(kT0, 0, 0, 4)).empty());
}

TEST_CASE("guard: unknown figures never trip; a counter reset (reboot) is not growth") {
  MemoryGuard g{GuardRules{}};
  CHECK(g.observe(host(kT0, std::nullopt, std::nullopt, std::nullopt)).empty());
  CHECK(g.observe(host(kT0 + kStepMs, 2000 * kMB, 90'000, std::nullopt)).empty());
  // Counter fell: the window restarts from here.
  CHECK(g.observe(host(kT0 + 2 * kStepMs, 2000 * kMB, 10, std::nullopt)).empty());
  CHECK(g.observe(host(kT0 + 3 * kStepMs, 2000 * kMB, 900, std::nullopt)).empty());
  // The wall clock stepping back restarts the window too.
  CHECK(g.observe(host(kT0 - 60'000, 0, 900)).empty());
  CHECK(g.observe(host(kT0 - 55'000, 400 * kMB, 900)).empty());
}

TEST_CASE("guard: the window is bounded however dense the samples") {
  GuardRules rules;
  rules.window_ms = 1000 * kMinute;
  MemoryGuard g{rules};
  // One sample per millisecond: far more than kMaxGuardWindowPoints fit in the window.
  g.observe(host(kT0, 0, 0));
  for (int i = 1; i <= 2000; ++i) CHECK(g.observe(host(kT0 + i, 400 * kMB, 0)).size() == 0);
  // The low point at 0 was evicted by the bound: 600 MB is 200 MB over what is left...
  CHECK(g.observe(host(kT0 + 2001, 600 * kMB, 0)).empty());
  // ...and growth within the bounded window is still seen.
  CHECK(g.observe(host(kT0 + 2002, 1000 * kMB, 0)).size() == 1);
}

TEST_CASE("gaps: on-time ticks are quiet") {
  VirtualClock clock;
  GapDetector gaps(kStepMs, 3);
  CHECK(gaps.start(clock.now(), std::nullopt).empty());
  for (int i = 0; i < 100; ++i) {
    clock.advance_ms(kStepMs);
    CHECK(gaps.tick(clock.now()).empty());
  }
  // A tick a little late (under 1.5 intervals) is jitter, not a gap.
  clock.advance_ms(kStepMs + 2'000);
  CHECK(gaps.tick(clock.now()).empty());
  CHECK(gaps.gap_ms_total() == 0);
}

TEST_CASE("gaps: the host slept") {
  VirtualClock clock;
  GapDetector gaps(kStepMs, 3);
  gaps.start(clock.now(), std::nullopt);
  clock.advance_ms(1'000);
  clock.sleep_ms(3'600'000);  // an hour asleep: wall and boot move, mono does not
  clock.advance_ms(4'000);
  auto ev = gaps.tick(clock.now());
  REQUIRE(ev.size() == 1);
  CHECK(ev[0].kind == EventKind::Gap);
  CHECK(ev[0].duration_ms == 3'605'000);
  CHECK(ev[0].host_id == 3);
  auto d = detail(ev[0]);
  CHECK(d["cause"] == "sleep");
  CHECK(d["slept_ms"] == 3'600'000);
  CHECK(d["missed_slots"] == 3'605'000 / kStepMs - 1);
  CHECK(d["to_ms"] == clock.wall_ms());
  CHECK(d["from_ms"] == clock.wall_ms() - 3'605'000);
  CHECK(gaps.gap_ms_total() == 3'605'000);
}

TEST_CASE("gaps: the daemon stalled while the host was awake") {
  VirtualClock clock;
  GapDetector gaps(kStepMs, std::nullopt);
  gaps.start(clock.now(), std::nullopt);
  clock.advance_ms(60'000);  // a blocked loop, SIGSTOP, starvation
  auto ev = gaps.tick(clock.now());
  REQUIRE(ev.size() == 1);
  CHECK(detail(ev[0])["cause"] == "stall");
  CHECK(detail(ev[0])["slept_ms"] == 0);
  CHECK(detail(ev[0])["missed_slots"] == 11);
  CHECK_FALSE(ev[0].host_id.has_value());
}

TEST_CASE("gaps: a wall clock step is reported apart, and is not a gap") {
  VirtualClock clock;
  GapDetector gaps(kStepMs, 3);
  gaps.start(clock.now(), std::nullopt);
  clock.advance_ms(kStepMs);
  clock.step_wall_ms(-3'600'000);  // NTP or the user set the clock back an hour
  auto ev = gaps.tick(clock.now());
  REQUIRE(ev.size() == 1);
  CHECK(ev[0].kind == EventKind::ClockStep);
  CHECK(detail(ev[0])["step_ms"] == -3'600'000);
  // Small NTP slews are not steps.
  clock.advance_ms(kStepMs);
  clock.step_wall_ms(500);
  CHECK(gaps.tick(clock.now()).empty());
}

TEST_CASE("gaps: time the daemon was down, from the last stored sample") {
  VirtualClock clock;
  GapDetector gaps(kStepMs, 3);
  int64_t last = clock.wall_ms() - 600'000;
  auto ev = gaps.start(clock.now(), last);
  REQUIRE(ev.size() == 1);
  CHECK(ev[0].kind == EventKind::Gap);
  CHECK(ev[0].duration_ms == 600'000);
  CHECK(detail(ev[0])["cause"] == "daemon_down");
  CHECK(detail(ev[0])["missed_slots"] == 119);
  // A quick restart inside one interval is no gap.
  GapDetector quick(kStepMs, 3);
  CHECK(quick.start(clock.now(), clock.wall_ms() - 3'000).empty());
}

TEST_CASE("a week of 5 s ticks with one sleep runs in virtual time") {
  VirtualClock clock;
  GapDetector gaps(kStepMs, 3);
  gaps.start(clock.now(), std::nullopt);
  int events = 0;
  const int ticks = 7 * 24 * 3600 / 5;
  for (int i = 0; i < ticks; ++i) {
    if (i == ticks / 2) clock.sleep_ms(8 * 3'600'000);
    clock.advance_ms(kStepMs);
    events += static_cast<int>(gaps.tick(clock.now()).size());
  }
  CHECK(events == 1);
  CHECK(gaps.gap_ms_total() == 8 * 3'600'000 + kStepMs);
}

TEST_CASE("restart: a new pid or a new start time is a restart; vanishing is reported once") {
  RestartDetector r(7, 3);
  CHECK(r.observe(ProcessIdentity{100, 5000}, kT0).empty());
  CHECK(r.observe(ProcessIdentity{100, 5000}, kT0 + kStepMs).empty());

  // Gone: one event, not one per sample.
  auto gone = r.observe(std::nullopt, kT0 + 2 * kStepMs);
  REQUIRE(gone.size() == 1);
  CHECK(gone[0].kind == EventKind::ProcessGone);
  CHECK(gone[0].candidate_id == 7);
  CHECK(r.observe(std::nullopt, kT0 + 3 * kStepMs).empty());

  // Back under a new pid: a restart, compared with the last process seen.
  auto ev = r.observe(ProcessIdentity{200, 9000}, kT0 + 4 * kStepMs);
  REQUIRE(ev.size() == 1);
  CHECK(ev[0].kind == EventKind::ProcessRestart);
  auto d = detail(ev[0]);
  CHECK(d["old_pid"] == 100);
  CHECK(d["new_pid"] == 200);
  CHECK(d["new_start_time"] == 9000);

  // Same pid reused by a new process: the start time tells.
  auto reuse = r.observe(ProcessIdentity{200, 9500}, kT0 + 5 * kStepMs);
  REQUIRE(reuse.size() == 1);
  CHECK(reuse[0].kind == EventKind::ProcessRestart);
  CHECK(r.current() == ProcessIdentity{200, 9500});
}

TEST_CASE("restart: identity comes from a sample only when its start time was read") {
  ProcessSample s;
  s.pid = 12;
  CHECK_FALSE(identity_of(s).has_value());
  s.start_time = 99;
  CHECK(identity_of(s) == ProcessIdentity{12, 99});
  RestartDetector r(std::nullopt, std::nullopt);
  CHECK(r.observe(std::nullopt, kT0).empty());  // never seen: nothing gone
}

TEST_CASE("duplicate engines: reported once per process while resident") {
  DuplicateEngineDetector d(7, 3, test::builtin_signatures());
  std::vector<ProcessInfo> table = {engine(40, 1, {"llama-server", "-m", "a"})};
  CHECK(d.observe(table, 40, kT0).empty());

  table.push_back(engine(50, 1, {"ollama", "serve"}));
  auto ev = d.observe(table, 40, kT0 + kStepMs);
  REQUIRE(ev.size() == 1);
  CHECK(ev[0].kind == EventKind::DuplicateEngine);
  CHECK(ev[0].candidate_id == 7);
  auto j = detail(ev[0]);
  CHECK(j["pid"] == 50);
  CHECK(j["runtime"] == "ollama");
  CHECK(j["command"] == "ollama serve");
  CHECK(j["candidate_pid"] == 40);
  CHECK(d.current().size() == 1);

  CHECK(d.observe(table, 40, kT0 + 2 * kStepMs).empty());  // still there: already said
  table.pop_back();
  CHECK(d.observe(table, 40, kT0 + 3 * kStepMs).empty());
  CHECK(d.current().empty());
  table.push_back(engine(50, 1, {"ollama", "serve"}));
  CHECK(d.observe(table, 40, kT0 + 4 * kStepMs).size() == 1);  // came back: said again
}

TEST_CASE("keep-awake: held while a canary, gate or soak runs; smoke alone does not need it") {
  AssertionLog log;
  auto owned = std::make_unique<CountingAssertion>(log);
  CountingAssertion& a = *owned;
  KeepAwake k(std::move(owned), KeepAwakeMode::WhileStagesRun);

  const StageKind smoke[] = {StageKind::Smoke};
  CHECK(k.update(smoke).ok());
  CHECK_FALSE(k.held());

  const StageKind running[] = {StageKind::Smoke, StageKind::Canary, StageKind::Soak};
  CHECK(k.update(running).ok());
  CHECK(k.held());
  CHECK(log.last_reason.find("2 canary/gate/soak") != std::string::npos);
  CHECK(k.update(running).ok());  // idempotent
  CHECK(log.acquires == 1);

  CHECK(k.update({}).ok());
  CHECK_FALSE(k.held());
  CHECK(k.update({}).ok());
  CHECK(log.releases == 1);

  // A refused assertion is reported and retried on the next update.
  a.fail_next_acquire = true;
  CHECK_FALSE(k.update(running).ok());
  CHECK_FALSE(k.held());
  CHECK(k.update(running).ok());
  CHECK(k.held());
  CHECK(log.acquires == 3);  // the first, the refused one, the retry

  // Turned off in the config: released, never taken.
  k.set_mode(KeepAwakeMode::Off);
  CHECK(k.update(running).ok());
  CHECK_FALSE(k.held());
  CHECK(log.releases == 2);
}

TEST_CASE("keep-awake: released when the policy object goes away") {
  AssertionLog log;
  {
    KeepAwake k(std::make_unique<CountingAssertion>(log), KeepAwakeMode::WhileStagesRun);
    const StageKind gate[] = {StageKind::Gate};
    REQUIRE(k.update(gate).ok());
    REQUIRE(k.held());
    CHECK(log.releases == 0);
  }
  CHECK(log.releases == 1);
}

TEST_CASE("keep-awake on this platform: tracked and idempotent") {
  auto p = make_system_power_assertion(nullptr);
  CHECK_FALSE(p->held());
  CHECK(p->acquire("test").ok());
  CHECK(p->held());
  CHECK(p->acquire("test").ok());
  CHECK(p->release().ok());
  CHECK_FALSE(p->held());
  CHECK(p->release().ok());
}
