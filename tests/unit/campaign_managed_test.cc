// Campaigns with managed candidates (campaigns/managed_runtimes.cc) in virtual
// time: a scripted RuntimeControl stands in for the processes, the SimRunner
// for the probes, a real SQLite store holds the rows. Checks what the process
// tests cannot in seconds: a new executable waits for the nightly window, a
// runtime is never restarted inside a stage, a failed launch blocks once and
// is not retried in a loop, keep_running leaves the runtime up, and with ab
// "interleaved" the previous build runs beside the new build's canary (or the
// canary falls back to history and says why).
#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <vector>

#include "campaigns/campaigns.h"
#include "campaigns/runtime_control.h"
#include "storage/outbox.h"
#include "storage/sqlite_store.h"
#include "tests/catch.h"
#include "tests/support/sim_runner.h"
#include "tests/support/temp_dir.h"

using namespace soak;

namespace {

constexpr int64_t kStartupMs = 30 * kSecond;  // how long the scripted runtime takes to be ready
const std::string kPreviousProgram = "/opt/homebrew/Cellar/llama.cpp/9430/bin/llama-server";
constexpr uint16_t kPreviousPort = 40123;

// The processes, scripted. Callbacks are queued and delivered by the World's
// loop as virtual time passes, never from inside the call.
class ScriptedRuntimes final : public RuntimeControl {
 public:
  explicit ScriptedRuntimes(VirtualClock& clock) : clock_(clock) {}

  void start(const CandidateSnapshot& c, std::function<void(Result<RuntimeUp>)> ready) override {
    const std::string name = c->name;
    if (name != "m") {  // the previous build beside a canary
      previous_started.push_back(c);
      previous_start_times.push_back(clock_.wall_ms());
      if (!fail_previous_with.empty()) {
        const std::string why = fail_previous_with;
        queue(clock_.wall_ms() + kStartupMs, [ready, why] { ready(make_error(why)); });
        return;
      }
      const int pid = next_pid++;
      queue(clock_.wall_ms() + kStartupMs, [this, ready, name, pid] {
        up[name] = pid;
        ready(RuntimeUp{pid, RuntimeOrigin::Launched});
      });
      return;
    }
    ++starts;
    start_times.push_back(clock_.wall_ms());
    exe_change.clear();  // the executable as it is now is the one launched
    if (!fail_with.empty()) {
      const std::string why = fail_with;
      queue(clock_.wall_ms(), [ready, why] { ready(make_error(why)); });
      return;
    }
    const int pid = next_pid++;
    queue(clock_.wall_ms() + kStartupMs, [this, ready, name, pid] {
      up[name] = pid;
      ready(RuntimeUp{pid, RuntimeOrigin::Launched});
    });
  }
  void stop(const std::string& name, const std::string& why) override {
    stops.push_back(why);
    stopped.push_back(name);
    up.erase(name);
  }
  void set_on_exit(std::function<void(const std::string&, const RuntimeExit&)> f) override { on_exit_ = std::move(f); }
  void link(const std::string& name, int64_t candidate_id) override { links[name] = candidate_id; }
  std::string executable_change(const CandidateConfig&) override { return exe_change; }
  Result<PreviousBuild> previous_build(const CandidateConfig&, int64_t previous_candidate_id) override {
    previous_asked.push_back(previous_candidate_id);
    if (!previous_error.empty()) return make_error(previous_error);
    return PreviousBuild{kPreviousProgram, kPreviousPort};
  }

  // The runtime dies; soakd learns of its exit `exit_after_ms` later.
  void crash(const std::string& name, int64_t exit_after_ms = 0) {
    RuntimeExit x{up.at(name), "killed by SIGKILL (signal 9)", std::nullopt, 9, "loading model\nsegfault in ggml\n"};
    up.erase(name);
    queue(clock_.wall_ms() + exit_after_ms, [this, name, x] { on_exit_(name, x); });
  }

  void deliver(int64_t now) {
    std::vector<std::function<void()>> due;
    for (auto it = pending_.begin(); it != pending_.end();) {
      if (it->first <= now) {
        due.push_back(std::move(it->second));
        it = pending_.erase(it);
      } else {
        ++it;
      }
    }
    for (auto& f : due) f();
  }
  std::optional<int64_t> next_ms() const {
    std::optional<int64_t> n;
    for (const auto& [at, f] : pending_)
      if (!n || at < *n) n = at;
    return n;
  }

  int starts = 0;
  std::vector<int64_t> start_times;
  std::vector<std::string> stops;
  std::vector<std::string> stopped;  // names, in the order stopped
  // The previous build's runtime (ab "interleaved"): asked for, started, failing.
  std::vector<int64_t> previous_asked;
  std::vector<CandidateSnapshot> previous_started;
  std::vector<int64_t> previous_start_times;
  std::string previous_error;      // previous_build() fails with this
  std::string fail_previous_with;  // its start fails with this
  std::map<std::string, int> up;
  std::map<std::string, int64_t> links;
  std::string exe_change;  // what the next executable_change() reports
  std::string fail_with;   // the next starts fail with this
  int next_pid = 1000;

 private:
  void queue(int64_t at, std::function<void()> f) { pending_.emplace_back(at, std::move(f)); }
  VirtualClock& clock_;
  std::vector<std::pair<int64_t, std::function<void()>>> pending_;
  std::function<void(const std::string&, const RuntimeExit&)> on_exit_;
};

struct World {
  TempDir tmp;
  VirtualClock clock{1'767'225'600'000};  // 2026-01-01 00:00 UTC
  std::unique_ptr<SqliteStore> store;
  int64_t host = 0;
  std::unique_ptr<SimRunner> runner;
  std::unique_ptr<Outbox> outbox;
  std::unique_ptr<ScriptedRuntimes> runtimes;
  std::shared_ptr<const Config> cfg;
  std::unique_ptr<Campaigns> camp;

  World(const std::string& window, const std::string& launch_extra = "", const std::string& candidate_extra = "") {
    auto st = SqliteStore::open(tmp.path() + "/s.db", OpenMode::ReadWrite, Durability::Fast);
    REQUIRE(st.ok());
    store = std::move(*st);
    host = *store->upsert_host(HostInfo{"studio", "Mac15,14", 512LL << 30, "macOS 15.5"}, clock.wall_ms());
    const std::string text = R"({
      "defaults": {
        "stages": { "smoke": "15m", "canary": "2h", "gate": "6h", "soak": "12h" },
        "cadence": { "scrape": "5m", "functional": "15m", "long_context": "1h", "burst": "1h", "cancel": "1h",
                     "gate_pause": "30s", "soak_traffic": "10m", "soak_heavy": "6h", "build_poll": "30m" },
        "gate": { "min_completed": 100 },
        "long_context_sizes": [1024], "burst_sizes": [1, 4]
      },
      "schedule": { "nightly_window": ")" +
                             window + R"(" },
      "candidates": [{ "name": "m", "model": "qwen3.6-35b-a3b", "runtime": "llama.cpp",
                       "base_url": "http://127.0.0.1:8081",
                       "launch": { "argv": ["llama-server", "--port", "8081"])" +
                             launch_extra + R"( })" + candidate_extra + R"( }]
    })";
    auto c = parse_config(text, "sim.json", tmp.path());
    INFO((c.ok() ? "" : c.message()));
    REQUIRE(c.ok());
    cfg = std::make_shared<const Config>(std::move(*c));
    runner = std::make_unique<SimRunner>(*store, clock, host);
    runner->at("m").build = "b9430";
    runtimes = std::make_unique<ScriptedRuntimes>(clock);
    outbox = std::make_unique<Outbox>(*store, clock, make_null_logger(), host);
    camp = std::make_unique<Campaigns>(cfg, Deps{*store, *outbox, clock, make_null_logger(), nullptr, host}, *runner,
                                       [](int64_t) { return 0; });
    camp->set_runtime_control(runtimes.get());
    REQUIRE(camp->resume(clock.wall_ms()).ok());
  }

  // Runs `limit_ms` of virtual time, or until `stop` holds.
  void run(int64_t limit_ms, const std::function<bool()>& stop = nullptr) {
    const int64_t end = clock.wall_ms() + limit_ms;
    while (clock.wall_ms() < end) {
      const int64_t now = clock.wall_ms();
      runner->deliver(now);
      runtimes->deliver(now);
      camp->tick(now);
      if (stop && stop()) return;
      int64_t next = end;
      for (auto t : {runner->next_completion_ms(), runtimes->next_ms(), camp->next_wake_ms(now)})
        if (t) next = std::min(next, *t);
      if (next <= now) next = now + 1;
      clock.advance_ms(next - now);
    }
  }

  std::optional<CandidateRow> row(const std::string& build) {
    for (const auto& c : *store->candidates())
      if (c.build == build) return c;
    return std::nullopt;
  }
  std::optional<VerdictRow> verdict(const std::string& build) {
    auto r = row(build);
    if (!r) return std::nullopt;
    return *store->latest_verdict(r->id);
  }
  // The verdict a stage of `build` ended with (a passed one is written "running").
  std::optional<VerdictRow> stage_verdict(const std::string& build, const std::string& stage) {
    auto r = row(build);
    if (!r) return std::nullopt;
    std::optional<VerdictRow> out;
    for (const auto& v : *store->verdicts(r->id))
      if (v.stage == stage) out = v;
    return out;
  }
  std::optional<StageRow> stage(const std::string& build, StageKind kind) {
    auto r = row(build);
    if (!r) return std::nullopt;
    for (const auto& st : *store->stages(r->id))
      if (st.kind == kind) return st;
    return std::nullopt;
  }
  // The first build promoted, then `brew upgrade`: a new executable serving `build`.
  void promote_then_upgrade(const std::string& build, Behaviour b) {
    run(2 * kDay, [&] { return camp->settled(); });
    auto first = verdict("b9430");
    REQUIRE(first);
    REQUIRE(first->state == VerdictState::Promoted);
    CHECK(runtimes->previous_asked.empty());  // a first build has no previous build
    runtimes->exe_change = "path /Cellar/llama.cpp/9430/bin/llama-server -> /Cellar/llama.cpp/9502/bin/llama-server";
    runner->at("m").build = build;
    runner->at("m").behaviour = b;
    run(kDay, [&] { return row(build).has_value(); });  // found at the next build_poll, started at the window
    REQUIRE(row(build));
  }
};

const std::string kAbInterleaved = R"(, "ab": "interleaved")";

bool has_metric(const VerdictRow& v, const std::string& name, const std::string& says) {
  for (const auto& m : v.metrics)
    if (m.metric == name && m.reason.find(says) != std::string::npos) return true;
  return false;
}

}  // namespace

TEST_CASE("a managed runtime is started before its build is read, and stopped when its campaign settles") {
  World w("now");
  w.run(2 * kDay, [&] { return w.camp->settled(); });
  REQUIRE(w.camp->settled());
  CHECK(w.runtimes->starts == 1);
  auto v = w.verdict("b9430");
  REQUIRE(v);
  INFO(v->reason);
  CHECK(v->state == VerdictState::Promoted);
  CHECK(w.runtimes->links.at("m") == w.row("b9430")->id);  // the launch is recorded with its build
  REQUIRE(w.runtimes->stops.size() == 1);
  CHECK(w.runtimes->stops[0].find("campaign settled") != std::string::npos);
  // Nothing was probed before the runtime was ready.
  ProbeQuery q;
  for (const auto& r : *w.store->probe_results(q)) CHECK(r.started_wall_ms >= w.runtimes->start_times[0] + kStartupMs);
}

TEST_CASE("keep_running leaves the runtime up when the campaign settles") {
  World w("now", R"(, "keep_running": true)");
  w.run(2 * kDay, [&] { return w.camp->settled(); });
  REQUIRE(w.camp->settled());
  CHECK(w.runtimes->stops.empty());
  CHECK(w.runtimes->up.count("m") == 1);
}

TEST_CASE("a new executable is a new build: restarted at the nightly window, canaried against the promoted one") {
  World w("02:00");
  // The first build: smoke at once, its canary at the window (02:00), then gate and soak.
  w.run(3 * kDay, [&] { return w.camp->settled(); });
  auto first = w.verdict("b9430");
  REQUIRE(first);
  REQUIRE(first->state == VerdictState::Promoted);
  REQUIRE(w.runtimes->starts == 1);

  // `brew upgrade` at 10:00: found at the next build_poll, acted on at 02:00.
  const int64_t day = (w.clock.wall_ms() / kDay + 1) * kDay;
  w.clock.advance_ms(day + 10 * kHour - w.clock.wall_ms());
  w.runtimes->exe_change = "path /Cellar/llama.cpp/9430/bin/llama-server -> /Cellar/llama.cpp/9502/bin/llama-server";
  w.runner->at("m").build = "b9502";
  w.run(20 * kHour, [&] { return w.runtimes->starts == 2; });
  REQUIRE(w.runtimes->starts == 2);
  CHECK(w.runtimes->start_times[1] == day + kDay + 2 * kHour);  // not before the window
  w.run(kHour, [&] { return w.row("b9502").has_value(); });
  auto second = w.row("b9502");
  REQUIRE(second);
  CHECK(second->baseline_id == w.row("b9430")->id);
  w.run(6 * kHour, [&] {
    auto st = *w.store->stages(second->id);
    return !st.empty() && st.back().kind == StageKind::Canary;
  });
  auto st = *w.store->stages(second->id);
  REQUIRE_FALSE(st.empty());
  CHECK(st.back().kind == StageKind::Canary);
  CHECK(w.runtimes->previous_asked.empty());  // ab "history", the default: nothing started beside it
}

TEST_CASE("ab interleaved: the previous build runs beside the new build's canary, which is judged on its live rows") {
  World w("now", "", kAbInterleaved);
  w.promote_then_upgrade("b9502", Behaviour::SlowDecode);
  w.run(2 * kDay, [&] { return w.camp->settled(); });
  REQUIRE(w.camp->settled());
  const auto first = w.row("b9430");
  const auto second = w.row("b9502");
  REQUIRE(second);
  CHECK(second->baseline_id == first->id);

  // What ran b9430, asked once, started on its own port with the same argv.
  CHECK(w.runtimes->previous_asked == std::vector<int64_t>{first->id});
  REQUIRE(w.runtimes->previous_started.size() == 1);
  const CandidateConfig& prev = *w.runtimes->previous_started[0];
  CHECK(prev.name == "m@previous");
  CHECK(prev.base_url == "http://127.0.0.1:40123");
  REQUIRE(prev.launch);
  CHECK(display_argv(*prev.launch) == std::vector<std::string>{kPreviousProgram, "--port", "40123"});
  CHECK(prev.launch->keep_running == KeepRunning::No);
  CHECK(w.runtimes->links.at("m@previous") == first->id);  // its launch is recorded with b9430's row

  // The canary waited until it was ready, and its interleaved runs were repeated against it.
  const auto canary = w.stage("b9502", StageKind::Canary);
  REQUIRE(canary);
  CHECK(canary->started_ms >= w.runtimes->previous_start_times[0] + kStartupMs);
  CHECK(w.runner->runs_of("m@previous") > 0);
  ProbeQuery bq;
  bq.candidate_id = first->id;
  bq.since_ms = canary->started_ms;
  std::set<int64_t> shadow_groups;
  for (const auto& r : *w.store->probe_results(bq)) {
    CHECK_FALSE(r.stage_id);  // shadow runs belong to no stage of b9430
    if (r.group_id) shadow_groups.insert(*r.group_id);
  }
  REQUIRE_FALSE(shadow_groups.empty());
  ProbeQuery cq;
  cq.stage_id = canary->id;
  std::set<int64_t> canary_groups;
  for (const auto& r : *w.store->probe_results(cq))
    if (r.group_id) canary_groups.insert(*r.group_id);
  for (int64_t g : shadow_groups) CHECK(canary_groups.count(g));  // the same slots

  // A slower build rejected against the previous build's live rows.
  auto v = w.verdict("b9502");
  REQUIRE(v);
  INFO(v->reason);
  CHECK(v->state == VerdictState::Rejected);
  CHECK(v->stage == "canary");
  CHECK(v->baseline_mode == "interleaved");
  CHECK(has_metric(*v, "baseline/ab", "ran beside it"));
  CHECK(v->reason.find("fell back") == std::string::npos);

  // Stopped when the canary ended; the candidate's own runtime too, once settled.
  CHECK(std::count(w.runtimes->stopped.begin(), w.runtimes->stopped.end(), "m@previous") == 1);
  CHECK(w.runtimes->up.count("m@previous") == 0);
}

TEST_CASE("ab interleaved: the previous build's program gone, the canary compares with history and says why") {
  World w("now", "", kAbInterleaved);
  w.runtimes->previous_error =
      "its program /opt/homebrew/Cellar/llama.cpp/9430/bin/llama-server is no longer on disk as it ran "
      "(/opt/homebrew/Cellar/llama.cpp/9430/bin/llama-server does not exist)";
  w.promote_then_upgrade("b9502", Behaviour::SlowDecode);
  w.run(2 * kDay, [&] { return w.camp->settled(); });
  REQUIRE(w.camp->settled());
  CHECK(w.runtimes->previous_asked.size() == 1);
  CHECK(w.runtimes->previous_started.empty());
  auto v = w.verdict("b9502");
  REQUIRE(v);
  INFO(v->reason);
  CHECK(v->state == VerdictState::Rejected);  // never a failure of its own: the history still rejects it
  CHECK(v->stage == "canary");
  CHECK(v->baseline_mode == "history");
  CHECK(v->reason.find("ab interleaved fell back to history: the previous build b9430 cannot run beside it: its "
                       "program /opt/homebrew/Cellar/llama.cpp/9430/bin/llama-server is no longer on disk") !=
        std::string::npos);
  CHECK(has_metric(*v, "baseline/ab", "no longer on disk"));
}

TEST_CASE("ab interleaved: a previous build that does not start, or ends mid-canary, is no failure of the new one") {
  SECTION("does not start: history, said in the canary's verdict") {
    World w("now", "", kAbInterleaved);
    w.runtimes->fail_previous_with = "not ready within 10m (health: loading)";
    w.promote_then_upgrade("b9502", Behaviour::Healthy);
    w.run(kDay, [&] { return w.stage("b9502", StageKind::Gate).has_value(); });
    auto v = w.stage_verdict("b9502", "canary");
    REQUIRE(v);
    INFO(v->reason);
    CHECK(v->state == VerdictState::Running);  // passed: the gate runs
    CHECK(v->baseline_mode == "history");
    CHECK(v->reason.find("did not start: not ready within 10m") != std::string::npos);
    CHECK(w.runtimes->previous_started.size() == 1);
    CHECK(w.runtimes->up.count("m@previous") == 0);
  }
  SECTION("ends mid-canary: the runs it served stay the baseline, and the verdict says it ended") {
    World w("now", "", kAbInterleaved);
    w.promote_then_upgrade("b9502", Behaviour::Healthy);
    w.run(kDay, [&] {
      auto c = w.stage("b9502", StageKind::Canary);
      return c && w.clock.wall_ms() > c->started_ms + kHour;
    });
    REQUIRE(w.runtimes->up.count("m@previous"));
    w.runtimes->crash("m@previous");
    w.run(kDay, [&] { return w.stage("b9502", StageKind::Gate).has_value(); });
    auto v = w.stage_verdict("b9502", "canary");
    REQUIRE(v);
    INFO(v->reason);
    CHECK(v->state == VerdictState::Running);
    CHECK(v->baseline_mode == "interleaved");
    CHECK(has_metric(*v, "baseline/ab", "ended during the canary"));
    CHECK(w.runtimes->starts == 2);  // the candidate's own runtime was not touched
    CHECK(std::count(w.runtimes->stopped.begin(), w.runtimes->stopped.end(), "m@previous") == 0);
  }
}

namespace {

// Runs `w` until its build has been an hour in its gate, its runtime up.
void run_into_gate(World& w) {
  w.run(2 * kDay, [&] {
    auto r = w.row("b9430");
    if (!r) return false;
    auto st = *w.store->stages(r->id);
    return !st.empty() && st.back().kind == StageKind::Gate && w.clock.wall_ms() > st.back().started_ms + kHour;
  });
  REQUIRE(w.runtimes->up.count("m"));
}

// Runs `w` until settled: its build's verdict, a rejection of the gate.
VerdictRow rejected_gate(World& w) {
  w.run(kDay, [&] { return w.camp->settled(); });
  auto v = w.verdict("b9430");
  REQUIRE(v);
  INFO(v->reason);
  CHECK(v->state == VerdictState::Rejected);
  CHECK(v->stage == "gate");
  return *v;
}

}  // namespace

TEST_CASE("a runtime that ends mid-gate is rejected with its exit, and not restarted inside the stage") {
  World w("now");
  run_into_gate(w);
  w.runtimes->crash("m");
  const VerdictRow v = rejected_gate(w);
  INFO(v.reason);
  CHECK(v.reason.find("SIGKILL") != std::string::npos);
  bool exit_metric = false;
  for (const auto& m : v.metrics) exit_metric |= m.metric == "hard/runtime_exit" && m.result == MetricResult::Fail;
  CHECK(exit_metric);
  CHECK(w.runtimes->starts == 1);
  EventQuery eq;
  eq.kind = EventKind::ProcessGone;
  auto ev = *w.store->events(eq);
  REQUIRE(ev.size() == 1);
  CHECK(ev[0].detail_json.find("segfault in ggml") != std::string::npos);
}

namespace {

// Runs `w` into its gate, then every request's connection is reset, until the
// first reset row is stored: the runtime has died, its exit not seen yet.
int64_t run_until_reset_in_gate(World& w) {
  run_into_gate(w);
  w.runner->at("m").behaviour = Behaviour::ResetMidRequest;
  const auto reset_seen = [&] {
    for (const auto& r : *w.store->probe_results(ProbeQuery{}))
      if (r.outcome == Outcome::ConnectionReset) return true;
    return false;
  };
  w.run(kHour, reset_seen);
  REQUIRE(reset_seen());
  return w.clock.wall_ms();
}

}  // namespace

TEST_CASE("a runtime whose reset connections are seen before its exit is rejected naming the exit") {
  World w("now");
  const int64_t seen = run_until_reset_in_gate(w);
  CHECK_FALSE(w.camp->settled());  // the reset alone has not ended the gate yet
  w.runtimes->crash("m", kExitWaitMs / 2);
  const VerdictRow v = rejected_gate(w);
  INFO(v.reason);
  CHECK(v.reason.find("SIGKILL") != std::string::npos);
  CHECK(v.reason.find("segfault in ggml") != std::string::npos);
  CHECK(v.wall_ms == seen + kExitWaitMs / 2);
}

TEST_CASE("a reset connection with no exit behind it rejects once the wait for the exit is over") {
  World w("now");
  const int64_t seen = run_until_reset_in_gate(w);
  const VerdictRow v = rejected_gate(w);
  INFO(v.reason);
  CHECK(v.reason.find("connection_reset") != std::string::npos);
  CHECK(v.wall_ms == seen + kExitWaitMs);
}

TEST_CASE("a runtime that cannot start blocks the candidate once, with the reason, and is not retried in a loop") {
  World w("now");
  w.runtimes->fail_with = "not ready within 10m (health: loading); last lines of m.runtime.log: out of memory";
  w.run(kDay, [&] { return w.camp->settled(); });
  REQUIRE(w.camp->settled());
  CHECK(w.runtimes->starts == 1);
  auto r = w.row(std::string(kUnknownBuild));
  REQUIRE(r);
  auto v = *w.store->latest_verdict(r->id);
  REQUIRE(v);
  CHECK(v->state == VerdictState::Blocked);
  CHECK(v->reason.find("out of memory") != std::string::npos);
  w.run(kDay);
  CHECK(w.runtimes->starts == 1);
}
