// The candidate's lifecycle as a state machine, held to its invariants over
// random event sequences in virtual time (docs/DESIGN.md §3.1, §4.6): seeded
// random behaviours of the candidate, crashes of soakd at random moments with
// random downtimes (the runner's in-flight work lost, the campaigns resumed
// from the store), and operator controls. Whatever the sequence:
//   - at no moment does a candidate row have two stages running, and its
//     stages follow smoke, canary, gate, soak, each started after the one
//     before it ended;
//   - once settled no stage is left open (running, or without an end);
//   - every verdict the judge made rests on rows of its own stage, and the
//     stored recipe judges those rows again to the same state;
//   - a crash with a short downtime, anywhere, ends the campaign where the
//     same sequence without it ends.
#include <algorithm>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "campaigns/campaigns.h"
#include "campaigns/recipe_store.h"
#include "soakctl/soakctl.h"
#include "storage/sqlite_store.h"
#include "tests/catch.h"
#include "tests/support/sim_runner.h"
#include "tests/support/sim_world.h"

using namespace soak;
using namespace soak::sim;

namespace {

// splitmix64: the sequence of a seed, the same on every machine.
struct Rng {
  uint64_t s;
  uint64_t next() {
    uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  int64_t between(int64_t lo, int64_t hi) {
    return lo + static_cast<int64_t>(next() % static_cast<uint64_t>(hi - lo + 1));
  }
  template <class T>
  const T& pick(const std::vector<T>& v) {
    return v[next() % v.size()];
  }
};

// Behaviours whose verdict does not hang on the figures' noise: the same
// sequence ends the same way whatever jitter a fresh runner draws.
const std::vector<Behaviour> kClear = {Behaviour::Healthy,     Behaviour::SlowDecode,  Behaviour::HungStream,
                                       Behaviour::Repeated5xx, Behaviour::Unreachable, Behaviour::IdentityMismatch};

constexpr int64_t kHorizonMs = 12 * kDay;

struct Crash {
  int64_t at_ms = 0;        // virtual time after the world's start
  int64_t downtime_ms = 0;  // soakd down this long before it resumes
};

void behave(World& w, Behaviour b) { w.runner->at("cand").behaviour = b; }

// At any moment: one running stage at most per candidate row, and the
// stages in their order, each after the one before it ended.
void check_stage_order(World& w) {
  for (const CandidateRow& c : *w.store->candidates()) {
    const auto stages = *w.store->stages(c.id);
    int running = 0;
    for (size_t i = 0; i < stages.size(); ++i) {
      const StageRow& s = stages[i];
      INFO(c.name << " " << c.build << " stage " << i << " " << to_string(s.kind) << " " << to_string(s.state));
      if (s.state == StageState::Running) ++running;
      if (i == 0) continue;
      const StageRow& before = stages[i - 1];
      // A campaign started again (soakctl start) begins at smoke; otherwise the next stage in order.
      if (s.kind != StageKind::Smoke) {
        REQUIRE(next_stage(before.kind).has_value());
        CHECK(s.kind == *next_stage(before.kind));
      }
      REQUIRE(before.ended_ms.has_value());
      CHECK(s.started_ms >= *before.ended_ms);
    }
    CHECK(running <= 1);
  }
}

// Once settled: no stage open; every judged verdict rests on its stage's rows
// and judges again, from its stored recipe, to the same state.
void check_settled(World& w) {
  check_stage_order(w);
  for (const CandidateRow& c : *w.store->candidates()) {
    for (const StageRow& s : *w.store->stages(c.id)) {
      INFO(c.name << " " << to_string(s.kind) << " " << to_string(s.state) << ": " << s.reason);
      CHECK(s.state != StageState::Running);
      CHECK(s.state != StageState::Pending);
      CHECK(s.ended_ms.has_value());
    }
    for (const VerdictRow& v : *w.store->verdicts(c.id)) {
      if (v.is_override || !v.stage_id || v.judge_input_json.empty()) continue;
      // A stage's start writes a "running" verdict before any row: nothing judged yet.
      if (v.state == VerdictState::Running && v.evidence_last_id == 0) continue;
      INFO(c.name << " verdict " << v.id << " " << to_string(v.state) << " (" << v.stage << "): " << v.reason);
      CHECK(v.evidence_first_id > 0);
      CHECK(v.evidence_last_id >= v.evidence_first_id);
      ProbeQuery q;
      q.stage_id = *v.stage_id;
      q.max_id = v.evidence_last_id;
      CHECK_FALSE(w.store->probe_results(q)->empty());
      const auto recipe = recipe_from_json(v.judge_input_json);
      REQUIRE(recipe.ok());
      const auto again = judge_from_store(*w.store, *recipe);
      REQUIRE(again.ok());
      // A stage that passed short of the campaign's end is stored "running"
      // (the campaign goes on): its judgment said promoted.
      CHECK(to_string(again->state) == to_string(v.state == VerdictState::Running ? VerdictState::Promoted : v.state));
    }
  }
}

// Runs the world to its horizon, crashing soakd at each of `crashes` (in
// order); checks the stage order at each crash. The candidate's final state.
VerdictState run_with(World& w, Behaviour b, const std::vector<Crash>& crashes, uint64_t seed) {
  const int64_t t0 = w.clock.wall_ms();
  behave(w, b);
  uint64_t runner_seed = seed * 101;
  for (const Crash& c : crashes) {
    w.run(t0 + c.at_ms - w.clock.wall_ms(), nullptr, World::UntilSettled::GoOn);
    check_stage_order(w);
    // soakd dies: what it had in flight is gone; it comes back after the downtime.
    w.runner = std::make_unique<SimRunner>(*w.store, w.clock, w.host, ++runner_seed);
    behave(w, b);
    w.clock.advance_ms(c.downtime_ms);
    w.start();
  }
  w.run(t0 + kHorizonMs - w.clock.wall_ms());
  REQUIRE(w.camp->settled());
  check_settled(w);
  const auto v = w.verdict("cand");
  REQUIRE(v);
  return v->state;
}

}  // namespace

TEST_CASE("lifecycle: a crash at any moment, with a short downtime, ends where the run without it ends") {
  for (uint64_t seed = 1; seed <= 7; ++seed) {
    Rng rng{seed};
    // Each clear behaviour in turn, a healthy one (the whole week) twice.
    const Behaviour b = seed == 7 ? Behaviour::Healthy : kClear[(seed - 1) % kClear.size()];
    World plain(base_and_cand());
    const int64_t t0 = plain.clock.wall_ms();
    const VerdictState expected = run_with(plain, b, {}, seed);
    const int64_t settled_after = plain.verdict("cand")->wall_ms - t0;  // the candidate's end, not its baseline's
    // Crashes anywhere in the campaign's life as the plain run lived it, each
    // down up to five minutes: well inside every stage's grace.
    std::vector<Crash> crashes;
    const int n = static_cast<int>(rng.between(1, 3));
    int64_t at = 0;
    constexpr int64_t kStepMs = 1000;  // a smoke rejected in its first minute still has its crashes
    for (int i = 0; i < n && at + kStepMs < settled_after; ++i) {
      at = rng.between(at + kStepMs, std::max(at + kStepMs, settled_after - kStepMs));
      crashes.push_back({at, rng.between(0, 5) * kMinute});
    }
    std::string story = "seed " + std::to_string(seed) + ", behaviour " + std::to_string(static_cast<int>(b)) +
                        ", settled after " + std::to_string(settled_after / kMinute) + " min:";
    for (const Crash& c : crashes)
      story += " crash at " + std::to_string(c.at_ms / 1000) + " s, down " + std::to_string(c.downtime_ms / kMinute) +
               " min;";
    INFO(story);
    REQUIRE_FALSE(crashes.empty());
    World crashed(base_and_cand());
    const VerdictState got = run_with(crashed, b, crashes, seed);
    CHECK(to_string(got) == to_string(expected));
  }
}

TEST_CASE("lifecycle: operator controls at random moments leave no stage open and no verdict without rows") {
  for (uint64_t seed = 11; seed <= 14; ++seed) {
    Rng rng{seed};
    World w(base_and_cand());
    behave(w, rng.pick(kClear));
    const std::string db = w.tmp.path() + "/s.db";
    const int64_t t0 = w.clock.wall_ms();
    int64_t at = 0;
    for (int i = 0; i < 3; ++i) {
      at = rng.between(at + kMinute, at + 2 * kDay);
      w.run(t0 + at - w.clock.wall_ms(), nullptr, World::UntilSettled::GoOn);
      check_stage_order(w);
      std::ostringstream out, err;
      const int what = static_cast<int>(rng.between(0, 2));
      if (what == 0)
        soakctl_main({"--db", db, "abort", "cand", "--who", "ops", "--why", "a reboot"}, out, err, w.clock);
      if (what == 1) soakctl_main({"--db", db, "start", "cand"}, out, err, w.clock);
      if (what == 2)
        soakctl_main({"--db", db, "promote", "cand", "--override", "--who", "ops", "--why", "by hand"}, out, err,
                     w.clock);
      INFO("seed " << seed << ", control " << what << " at " << at / kMinute << " min: " << err.str());
      w.control_tick();
      check_stage_order(w);
    }
    w.run(t0 + 20 * kDay - w.clock.wall_ms());
    INFO("seed " << seed);
    REQUIRE(w.camp->settled());
    check_settled(w);
  }
}
