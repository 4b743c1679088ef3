// Whole campaigns in virtual time, across builds: a new build or a new launch
// of a candidate is a new candidate row, judged against the previous promoted
// build's stored history. Scripted runtimes, a real SQLite store, no sleeping
// (the campaigns of one candidate: campaign_sim_test.cc).
#include <algorithm>
#include <cstdlib>
#include <functional>
#include <memory>
#include <sstream>

#include <sqlite3.h>
#include <nlohmann/json.hpp>

#include "campaigns/campaigns.h"
#include "campaigns/recipe_store.h"
#include "soakctl/soakctl.h"
#include "storage/sqlite_store.h"
#include "tests/catch.h"
#include "tests/support/sim_runner.h"
#include "tests/support/sim_world.h"
#include "tests/support/temp_dir.h"

using namespace soak;

using namespace soak::sim;

TEST_CASE("a new build is a new candidate, judged against the previous promoted build") {
  World w(candidate("llama", 18431));
  w.runner->at("llama").build = "b9430";
  w.run(10 * kDay);
  REQUIRE(w.verdict("llama", "b9430")->state == VerdictState::Promoted);
  const int64_t old_id = w.row("llama", "b9430")->id;
  w.runner->at("llama").build = "b9502";  // Homebrew upgraded it overnight
  w.run(
      10 * kDay,
      [&] {
        auto v = w.verdict("llama", "b9502");
        return v && v->state != VerdictState::Running;
      },
      World::UntilSettled::GoOn);
  auto fresh = w.row("llama", "b9502");
  REQUIRE(fresh);
  CHECK(fresh->id != old_id);
  CHECK(fresh->baseline_id == std::optional<int64_t>(old_id));
  EventQuery bq;
  bq.candidate_id = old_id;
  bq.kind = EventKind::BuildChange;
  auto ev = *w.store->events(bq);
  CHECK(ev.size() == 1);
  // The old build keeps its verdict.
  CHECK(w.verdict("llama", "b9430")->state == VerdictState::Promoted);
  auto v = w.verdict("llama", "b9502");
  REQUIRE(v);
  INFO(v->reason);
  CHECK(v->state != VerdictState::Running);
}

TEST_CASE("a launch fingerprint change under the same build is a new candidate row, judged like a new build") {
  // llama-server restarted by hand with another -c / --parallel: the same
  // binary, a different launch (probes/served_state.h LaunchFingerprint).
  const std::string launch_a = R"({"model":"m.gguf","ctx_per_slot":131072,"ctx_total":1048576,"slots":8})";
  const std::string launch_b = R"({"model":"m.gguf","ctx_per_slot":262144,"ctx_total":262144,"slots":1})";
  World w(candidate("llama", 18431));
  w.runner->at("llama").fingerprint = launch_a;
  w.run(10 * kDay);
  REQUIRE(w.verdict("llama")->state == VerdictState::Promoted);
  const CandidateRow first = *w.row("llama");
  CHECK(first.fingerprint == launch_a);
  w.runner->at("llama").fingerprint = launch_b;
  w.run(
      10 * kDay,
      [&] {
        auto r = w.row("llama");
        if (!r || r->id == first.id) return false;
        auto v = *w.store->latest_verdict(r->id);
        return v && v->state != VerdictState::Running;
      },
      World::UntilSettled::GoOn);
  const CandidateRow second = *w.row("llama");
  CHECK(second.id != first.id);
  CHECK(second.build == first.build);
  CHECK(second.fingerprint == launch_b);
  CHECK(second.baseline_id == std::optional<int64_t>(first.id));  // the previous promoted launch
  EventQuery q;
  q.candidate_id = first.id;
  q.kind = EventKind::BuildChange;
  auto ev = *w.store->events(q);
  REQUIRE(ev.size() == 1);
  CHECK(ev[0].detail_json.find("from_fingerprint") != std::string::npos);
  CHECK(ev[0].detail_json.find("1 slot") != std::string::npos);
  CHECK((*w.store->latest_verdict(first.id))->state == VerdictState::Promoted);  // the old launch keeps its verdict

  // status shows what the newest row serves with and counts the earlier
  // launch; history and explain say what each row serves with.
  std::ostringstream out, err;
  const std::string db = w.tmp.path() + "/s.db";
  REQUIRE(soakctl_main({"--db", db, "status"}, out, err, w.clock) == kCtlExitOk);
  INFO(out.str());
  CHECK(out.str().find("launch: ctx 262144/slot (262144 total), 1 slot") != std::string::npos);
  CHECK(out.str().find("1 earlier build or launch (soakctl history llama)") != std::string::npos);
  if ((*w.store->latest_verdict(second.id))->state != VerdictState::Promoted)
    CHECK(out.str().find("last promoted: " + first.build + ", another launch") != std::string::npos);
  std::ostringstream hist;
  REQUIRE(soakctl_main({"--db", db, "history", "llama"}, hist, err, w.clock) == kCtlExitOk);
  INFO(hist.str());
  CHECK(hist.str().find("ctx 131072/slot (1048576 total), 8 slots") != std::string::npos);
  CHECK(hist.str().find("ctx 262144/slot (262144 total), 1 slot") != std::string::npos);
  std::ostringstream ex;
  REQUIRE(soakctl_main({"--db", db, "explain", "llama"}, ex, err, w.clock) == kCtlExitOk);
  CHECK(ex.str().find("launch: ctx 262144/slot") != std::string::npos);
}

TEST_CASE("a fingerprint first known after registration is set on the row, not a new one") {
  // An Ollama tag loads on demand: /api/ps names it only after a request.
  World w(candidate("ollama", 18431));
  w.run(kHour, [&] { return w.row("ollama").has_value(); });
  const int64_t id = w.row("ollama")->id;
  CHECK(w.row("ollama")->fingerprint.empty());
  w.runner->at("ollama").fingerprint = R"({"model":"sha256:aa","ctx_per_slot":4096})";
  w.run(10 * kDay);
  CHECK(w.row("ollama")->id == id);
  CHECK(w.row("ollama")->fingerprint == R"({"model":"sha256:aa","ctx_per_slot":4096})");
  CHECK(w.store->candidates()->size() == 1);
}

TEST_CASE("a fingerprint read with a field missing is not a new launch; a field first known is added to the row") {
  // /slots timed out under load (speculative unknown this time), then the
  // argv became readable (kv type known): the same launch. Only a field both
  // reads know that differs is a new one.
  const std::string full =
      R"({"model":"m.gguf","ctx_per_slot":131072,"ctx_total":1048576,"slots":8,"speculative":false})";
  const std::string partial = R"({"model":"m.gguf","ctx_per_slot":131072,"ctx_total":1048576,"slots":8})";
  const std::string more = R"({"model":"m.gguf","ctx_per_slot":131072,"slots":8,"kv_cache_type":"q8_0"})";
  World w(candidate("llama", 18431));
  w.runner->at("llama").fingerprint = full;
  w.run(kHour, [&] { return w.row("llama").has_value(); });
  const int64_t id = w.row("llama")->id;
  CHECK(w.row("llama")->fingerprint == full);
  w.runner->at("llama").fingerprint = partial;
  w.run(kDay);
  CHECK(w.row("llama")->id == id);
  CHECK(w.row("llama")->fingerprint == full);
  w.runner->at("llama").fingerprint = more;
  w.run(kDay);
  CHECK(w.row("llama")->id == id);
  CHECK(
      w.row("llama")->fingerprint ==
      R"({"model":"m.gguf","ctx_per_slot":131072,"ctx_total":1048576,"slots":8,"kv_cache_type":"q8_0","speculative":false})");
  CHECK(w.store->candidates()->size() == 1);
  w.runner->at("llama").fingerprint = R"({"model":"m.gguf","ctx_per_slot":131072,"slots":8,"kv_cache_type":"q4_0"})";
  w.run(
      kDay, [&] { return w.row("llama")->id != id; }, World::UntilSettled::GoOn);
  CHECK(w.row("llama")->id != id);  // a known field changed: another launch
  CHECK(w.store->candidates()->size() == 2);
}

TEST_CASE("a fixed build still has its fingerprint read; a launch change under it is a new candidate row") {
  // build: {"fixed": ...} names the binary, not how it was started.
  const std::string launch_a = R"({"model":"m.gguf","ctx_per_slot":131072,"ctx_total":1048576,"slots":8})";
  const std::string launch_b = R"({"model":"m.gguf","ctx_per_slot":262144,"ctx_total":262144,"slots":1})";
  World w(candidate("llama", 18431, R"(, "build": {"fixed": "b9000-local"})"));
  w.runner->at("llama").fingerprint = launch_a;
  w.run(10 * kDay);
  INFO(w.verdict("llama")->reason);
  REQUIRE(w.verdict("llama")->state == VerdictState::Promoted);
  const CandidateRow first = *w.row("llama");
  CHECK(first.build == "b9000-local");
  CHECK(first.fingerprint == launch_a);
  w.runner->at("llama").fingerprint = launch_b;
  w.run(
      10 * kDay,
      [&] {
        auto r = w.row("llama");
        return r && r->id != first.id;
      },
      World::UntilSettled::GoOn);
  const CandidateRow second = *w.row("llama");
  CHECK(second.id != first.id);
  CHECK(second.build == "b9000-local");
  CHECK(second.fingerprint == launch_b);
}

TEST_CASE("a new build 3x slower than its promoted history is stopped by latency_slo before its canary's end") {
  // Nothing fails: every row is clean, only slow. The early check after clean
  // work (schedules/campaign_track.h kEarlyCheckMinRows) finds the crossing
  // while the canary runs; without it the canary would run to its end.
  World w(candidate("llama", 18431));
  w.runner->at("llama").build = "b9430";
  w.run(10 * kDay);
  REQUIRE(w.verdict("llama", "b9430")->state == VerdictState::Promoted);
  w.runner->at("llama").build = "b9502";
  w.runner->at("llama").speed = 3.0;
  w.run(
      10 * kDay,
      [&] {
        auto v = w.verdict("llama", "b9502");
        return v && v->state != VerdictState::Running;
      },
      World::UntilSettled::GoOn);
  auto v = w.verdict("llama", "b9502");
  REQUIRE(v);
  INFO(v->reason);
  CHECK(v->state == VerdictState::Rejected);
  CHECK(v->stage == "canary");
  CHECK(has_metric(*v, "sequential/latency_slo", MetricResult::Fail));
  const auto st = w.stages("llama");  // the newest row: b9502's
  REQUIRE(st.back().ended_ms);
  CHECK(*st.back().ended_ms - st.back().started_ms < st.back().length_ms);
}
