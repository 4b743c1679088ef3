// Whole campaigns in virtual time: smoke -> 2 h canary -> 24 h gate -> 7-day
// soak, with scripted runtimes, against a real SQLite store. No sleeping: a
// simulated week takes well under a second.
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

TEST_CASE("a healthy candidate with a healthy baseline goes smoke -> canary -> gate -> soak -> promoted") {
  World w(base_and_cand());
  w.runner->at("base").build = "b9430";
  w.runner->at("cand").build = "b9502";
  w.run(10 * kDay);
  REQUIRE(w.camp->settled());
  auto v = w.verdict("cand");
  REQUIRE(v);
  INFO(v->reason);
  CHECK(v->state == VerdictState::Promoted);
  CHECK(v->stage == "soak");
  auto st = w.stages("cand");
  REQUIRE(st.size() == 4);
  for (size_t i = 0; i < 4; ++i) {
    CHECK(st[i].kind == kAllStages[i]);
    CHECK(st[i].state == StageState::Passed);
  }
  // Each stage ran its nominal length (smoke ends when its pass ends).
  CHECK(*st[1].ended_ms - st[1].started_ms >= 2 * kHour);
  CHECK(*st[2].ended_ms - st[2].started_ms >= 24 * kHour);
  CHECK(*st[3].ended_ms - st[3].started_ms >= 7 * kDay);
  // The canary was compared with the baseline's rows of the same period.
  auto all = *w.store->verdicts(w.row("cand")->id);
  bool canary_interleaved = false;
  for (const auto& x : all)
    if (x.stage == "canary" && x.baseline_mode == "interleaved") canary_interleaved = true;
  CHECK(canary_interleaved);
  // Heavy tasks never overlapped on the host.
  CHECK(w.runner->max_concurrent_heavy() == 1);
}

TEST_CASE("a regression versus the baseline rejects: 95 % acceptance does not excuse 10x slower decode") {
  World w(base_and_cand());
  w.runner->at("cand").behaviour = Behaviour::SlowDecode;
  w.run(10 * kDay);
  auto v = w.verdict("cand");
  REQUIRE(v);
  INFO(v->reason);
  CHECK(v->state == VerdictState::Rejected);
  CHECK(v->stage == "canary");
  CHECK(has_metric(*v, "decode_tps", MetricResult::Fail));
  // The healthy baseline is not harmed by the comparison.
  CHECK(w.verdict("base")->state != VerdictState::Rejected);
}

TEST_CASE("an unreachable runtime is blocked, not rejected") {
  World w(candidate("cand", 18432));
  w.runner->at("cand").behaviour = Behaviour::Unreachable;
  w.run(2 * kDay);
  auto v = w.verdict("cand");
  REQUIRE(v);
  INFO(v->reason);
  CHECK(v->state == VerdictState::Blocked);
  CHECK(w.row("cand")->build == "unknown");
}

TEST_CASE("a baseline that has no data leaves the canary inconclusive") {
  // The baseline is configured but never reachable, so it has no rows at all.
  World w(base_and_cand());
  w.runner->at("base").behaviour = Behaviour::Unreachable;
  w.run(10 * kDay);
  auto v = w.verdict("cand");
  REQUIRE(v);
  INFO(v->reason);
  CHECK(v->state == VerdictState::Inconclusive);
  CHECK(v->stage == "canary");
}

TEST_CASE("a configured baseline that is not running and never ran leaves the canary inconclusive") {
  // Not "the first build of this candidate": a baseline was asked for and none exists.
  World w(candidate("base", 18431, R"(, "enabled": false)") + "," +
          candidate("cand", 18432, R"(, "baseline": "base")"));
  w.run(10 * kDay);
  auto v = w.verdict("cand");
  REQUIRE(v);
  INFO(v->reason);
  CHECK(v->state == VerdictState::Inconclusive);
  CHECK(v->stage == "canary");
  CHECK(v->reason.find("configured baseline 'base'") != std::string::npos);
  CHECK_FALSE(w.row("base"));
}

TEST_CASE("a restart mid-gate resumes with the original start and deadline; missed slots stay missed") {
  World w(base_and_cand());
  // Run into the gate, then "crash": drop the campaign engine and the runner's queue.
  w.run(10 * kDay, [&] {
    auto r = w.row("cand");
    if (!r) return false;
    auto st = *w.store->stages(r->id);
    return !st.empty() && st.back().kind == StageKind::Gate && w.clock.wall_ms() - st.back().started_ms > 6 * kHour;
  });
  auto before = w.stages("cand").back();
  REQUIRE(before.kind == StageKind::Gate);
  REQUIRE(before.state == StageState::Running);
  w.runner = std::make_unique<SimRunner>(*w.store, w.clock, w.host, 7);  // in-flight work is gone
  w.clock.advance_ms(3 * kHour);                                         // soakd was down 3 h
  w.start();
  auto resumed = w.stages("cand").back();
  CHECK(resumed.id == before.id);
  CHECK(resumed.started_ms == before.started_ms);
  CHECK(resumed.deadline_ms == before.deadline_ms);
  EventQuery gq;
  gq.candidate_id = w.row("cand")->id;
  gq.kind = EventKind::Gap;
  auto gaps = *w.store->events(gq);
  REQUIRE(gaps.size() == 1);
  CHECK(gaps[0].duration_ms.value_or(0) >= 3 * kHour);
  // No burst of catch-up requests: the first minute after restart runs at most
  // one gate turn and one scrape.
  const int64_t max_before = w.store->max_ids()->probe;
  w.run(kMinute);
  ProbeQuery aq;
  aq.stage_id = before.id;
  aq.min_id = max_before + 1;
  auto after = *w.store->probe_results(aq);
  CHECK(after.size() <= 3);
  w.run(10 * kDay);
  auto v = w.verdict("cand");
  REQUIRE(v);
  INFO(v->reason);
  // 3 h of 24 h missing: 87.5 % coverage at the nominal end, so the gate was
  // extended to make it up and then passed.
  auto gate = (*w.store->stages(w.row("cand")->id))[2];
  CHECK(gate.state == StageState::Passed);
  CHECK(*gate.ended_ms > gate.started_ms + gate.length_ms);
  CHECK(*gate.ended_ms <= gate.deadline_ms);
  CHECK(v->state == VerdictState::Promoted);
}

TEST_CASE("gaps beyond the grace give inconclusive, never a pass") {
  World w(candidate("cand", 18432));
  w.run(10 * kDay, [&] {
    auto r = w.row("cand");
    if (!r) return false;
    auto st = *w.store->stages(r->id);
    return !st.empty() && st.back().kind == StageKind::Gate;
  });
  w.runner = std::make_unique<SimRunner>(*w.store, w.clock, w.host, 9);
  w.clock.advance_ms(12 * kHour);  // half the gate lost
  w.start();
  w.run(10 * kDay);
  auto st = w.stages("cand");
  REQUIRE(st.size() >= 3);
  CHECK(st[2].kind == StageKind::Gate);
  CHECK(st[2].state == StageState::Inconclusive);
  CHECK(w.verdict("cand")->state == VerdictState::Inconclusive);
}

TEST_CASE("recomputing a stored verdict from its rows gives the same verdict, byte for byte") {
  World w(base_and_cand());
  w.runner->at("cand").behaviour = Behaviour::Marginal;
  w.run(10 * kDay);
  auto stored = w.verdict("cand");
  REQUIRE(stored);
  auto recipe = recipe_from_json(stored->judge_input_json);
  REQUIRE(recipe.ok());
  auto again = judge_from_store(*w.store, *recipe);
  REQUIRE(again.ok());
  CHECK(again->state == stored->state);
  CHECK(again->reason == stored->reason);
  CHECK(metrics_to_json(again->metrics) == metrics_to_json(stored->metrics));
  CHECK(again->evidence_first_id == stored->evidence_first_id);
  CHECK(again->evidence_last_id == stored->evidence_last_id);
}

TEST_CASE("soakctl explain recomputes the stored verdict and shows every metric") {
  World w(base_and_cand());
  w.runner->at("cand").behaviour = Behaviour::SlowDecode;
  w.run(10 * kDay);
  std::ostringstream out, err;
  const std::string db = w.tmp.path() + "/s.db";
  int code = soakctl_main({"--db", db, "explain", "cand"}, out, err, w.clock);
  INFO(out.str() << err.str());
  CHECK(code == kCtlExitOk);
  CHECK(out.str().find("verdict: rejected (canary)") != std::string::npos);
  CHECK(out.str().find("recomputed from the stored rows: identical") != std::string::npos);
  CHECK(out.str().find("decode_tps") != std::string::npos);
  std::ostringstream js;
  CHECK(soakctl_main({"--db", db, "explain", "cand", "--json"}, js, err, w.clock) == kCtlExitOk);
  auto j = nlohmann::json::parse(js.str());
  CHECK(j["recomputed"]["identical"] == true);
  CHECK(j["metrics"].size() == w.verdict("cand")->metrics.size());
}

TEST_CASE("soakctl explain shows a soak's week as judged at once, and recomputes it when asked") {
  // Soak traffic every 3 minutes: a week of more rows than explain judges again unasked.
  const std::string busy = R"(, "cadence": {"soak_traffic": "3m"})";
  World w(candidate("base", 18431, busy) + "," + candidate("cand", 18432, busy + R"(, "baseline": "base")"));
  w.run(10 * kDay);
  auto v = w.verdict("cand");
  REQUIRE(v);
  REQUIRE(v->stage == "soak");
  const std::string db = w.tmp.path() + "/s.db";
  auto ctl = [&](std::vector<std::string> args, std::string* out) {
    args.insert(args.begin(), {"--db", db, "explain", "cand"});
    std::ostringstream o, e;
    const int rc = soakctl_main(args, o, e, w.clock);
    *out = o.str() + e.str();
    return rc;
  };
  // The soak's own rows, as a recompute would read them.
  const auto soak = w.stages("cand").back();
  ProbeQuery q;
  q.stage_id = soak.id;
  const auto own = w.store->probe_results(q)->size();
  REQUIRE(own > 4000);

  std::string out;
  CHECK(ctl({}, &out) == kCtlExitOk);
  INFO(out);
  CHECK(out.find("shown as judged: its " + std::to_string(own) + " probe rows and about ") != std::string::npos);
  CHECK(out.find("`soakctl explain cand --recompute` judges them again") != std::string::npos);
  CHECK(out.find("recomputed from the stored rows") == std::string::npos);
  CHECK(out.find("sequential test (reject when") == std::string::npos);  // the path is the recompute's
  auto j = nlohmann::json::parse([&] {
    std::string js;
    ctl({"--json"}, &js);
    return js;
  }());
  CHECK(j["recomputed"].is_null());
  CHECK(j["as_judged"]["rows"] == own);
  CHECK(j["as_judged"]["baseline_rows"].get<int64_t>() + static_cast<int64_t>(own) > 8000);
  CHECK(j["metrics"].size() == v->metrics.size());
  CHECK_FALSE(j.contains("sequential"));

  CHECK(ctl({"--recompute"}, &out) == kCtlExitOk);
  CHECK(out.find("recomputed from the stored rows: identical") != std::string::npos);
  CHECK(out.find("sequential test (reject when") != std::string::npos);

  // A stored verdict its rows no longer give: shown as stored, and only a
  // recompute finds the difference (exit 5).
  {
    sqlite3* raw = nullptr;
    REQUIRE(sqlite3_open(db.c_str(), &raw) == SQLITE_OK);
    const std::string sql = "UPDATE verdicts SET reason = 'edited by hand' WHERE id = " + std::to_string(v->id);
    REQUIRE(sqlite3_exec(raw, sql.c_str(), nullptr, nullptr, nullptr) == SQLITE_OK);
    sqlite3_close(raw);
  }
  CHECK(ctl({}, &out) == kCtlExitOk);
  CHECK(out.find("verdict: promoted (soak) — edited by hand") != std::string::npos);
  CHECK(ctl({"--recompute"}, &out) == kCtlExitMismatch);
  CHECK(out.find("recomputed from the stored rows: DIFFERENT: promoted") != std::string::npos);
  CHECK(ctl({"--recompute", "--stored"}, &out) == kCtlExitUsage);
  CHECK(out.find("give one of them") != std::string::npos);
}

TEST_CASE("soakctl explain --stored shows a small stage as judged too") {
  World w(base_and_cand());
  w.runner->at("cand").behaviour = Behaviour::SlowDecode;
  w.run(10 * kDay);
  const std::string db = w.tmp.path() + "/s.db";
  std::ostringstream out, err;
  CHECK(soakctl_main({"--db", db, "explain", "cand", "--stored"}, out, err, w.clock) == kCtlExitOk);
  INFO(out.str() << err.str());
  CHECK(out.str().find("verdict: rejected (canary)") != std::string::npos);
  CHECK(out.str().find("shown as judged; `soakctl explain cand --recompute` judges them again\n") != std::string::npos);
  CHECK(out.str().find("recomputed from the stored rows") == std::string::npos);
  CHECK(out.str().find("decode_tps") != std::string::npos);
}

TEST_CASE("soakctl start/abort/promote reach the daemon through the store") {
  World w(candidate("cand", 18432));
  const std::string db = w.tmp.path() + "/s.db";
  // Let smoke and the canary start.
  w.run(kDay, [&] {
    auto r = w.row("cand");
    return r && !w.stages("cand").empty() && w.stages("cand").back().kind == StageKind::Canary;
  });
  std::ostringstream out, err;
  CHECK(soakctl_main({"--db", db, "promote", "cand", "--why", "x"}, out, err, w.clock) == kCtlExitUsage);
  CHECK(soakctl_main({"--db", db, "abort", "cand", "--who", "ops", "--why", "runtime needs a reboot"}, out, err,
                     w.clock) == kCtlExitOk);
  w.control_tick();
  auto v = w.verdict("cand");
  REQUIRE(v);
  CHECK(v->state == VerdictState::Inconclusive);
  CHECK(v->reason == "aborted by ops: runtime needs a reboot");
  CHECK(w.stages("cand").back().state == StageState::Aborted);

  CHECK(soakctl_main({"--db", db, "promote", "cand", "--override", "--who", "ops", "--why", "benchmarked by hand"}, out,
                     err, w.clock) == kCtlExitOk);
  w.control_tick();
  v = w.verdict("cand");
  CHECK(v->state == VerdictState::Promoted);
  CHECK(v->is_override);
  CHECK(v->who == "ops");
  CHECK(v->why == "benchmarked by hand");
  CHECK(w.store->pending_controls()->empty());

  CHECK(soakctl_main({"--db", db, "start", "cand"}, out, err, w.clock) == kCtlExitOk);
  w.control_tick();
  CHECK(w.stages("cand").back().kind == StageKind::Smoke);
  CHECK(w.verdict("cand")->state == VerdictState::Running);
}

TEST_CASE("context reach: sizes beyond the runtime's own context hold the canary, stored and shown per build") {
  World w(candidate("cand", 18432));
  w.runner->at("cand").behaviour = Behaviour::ContextLimit;
  w.runner->at("cand").runtime_ctx = 8192;  // configured sizes: 1024, 32768
  w.run(10 * kDay);
  auto v = w.verdict("cand");
  REQUIRE(v);
  INFO(v->reason);
  CHECK(v->state == VerdictState::Hold);
  CHECK(v->stage == "canary");
  CHECK(v->reason.find("context reach 1K, configured 32K") != std::string::npos);
  auto reach = w.store->context_reach(w.row("cand")->id);
  REQUIRE(reach.ok());
  REQUIRE(*reach);
  CHECK((*reach)->reach_tokens == 1024);
  CHECK((*reach)->configured_tokens == 32768);
  CHECK((*reach)->runtime_ctx_tokens == 8192);
  CHECK((*reach)->runtime_ctx_source == "/props n_ctx");

  const std::string db = w.tmp.path() + "/s.db";
  std::ostringstream out, err;
  CHECK(soakctl_main({"--db", db, "status"}, out, err, w.clock) == kCtlExitOk);
  CHECK(out.str().find("[reach 1K/32K]") != std::string::npos);
  std::ostringstream ex;
  CHECK(soakctl_main({"--db", db, "explain", "cand"}, ex, err, w.clock) == kCtlExitOk);
  CHECK(ex.str().find("context reach 1K, configured 32K; runtime context 8192 per slot, from /props n_ctx") !=
        std::string::npos);
  std::ostringstream vj;
  soakctl_main({"--db", db, "verdict", "--model", "qwen3.6-35b-a3b", "--runtime", "llama.cpp", "--json"}, vj, err,
               w.clock);
  auto j = nlohmann::json::parse(vj.str());
  CHECK(j["context_reach"]["reach_tokens"] == 1024);
}

TEST_CASE("a runtime failing only at the largest size with HTTP 500 is rejected in the canary") {
  World w(candidate("cand", 18432));
  w.runner->at("cand").behaviour = Behaviour::LargestFails;
  w.run(10 * kDay);
  auto v = w.verdict("cand");
  REQUIRE(v);
  INFO(v->reason);
  CHECK(v->state == VerdictState::Rejected);
  CHECK(v->stage == "canary");
  CHECK(has_metric(*v, "long_context/32768", MetricResult::Fail));
  CHECK((*w.store->context_reach(w.row("cand")->id))->reach_tokens == 1024);
}

TEST_CASE("a runtime failing 1 in 8 completions with HTTP 500 is rejected before its canary's end") {
  World w(candidate("cand", 18432));
  w.runner->at("cand").behaviour = Behaviour::Flaky5xx;
  w.run(10 * kDay);
  auto v = w.verdict("cand");
  REQUIRE(v);
  INFO(v->reason);
  CHECK(v->state == VerdictState::Rejected);
  CHECK(v->stage == "canary");
  CHECK(has_metric(*v, "sequential/pooled", MetricResult::Fail));
  // The sequential test stops it as the rows arrive, not at the canary's end
  // (this scripted runner's canary makes a few dozen completions an hour; the
  // first quarter is proven through the fake runtime, integration_daemon_early_verdict).
  const auto st = w.stages("cand");
  REQUIRE(st.back().ended_ms);
  CHECK(*st.back().ended_ms - st.back().started_ms < st.back().length_ms);
}

TEST_CASE("SOLO: a second engine resident makes the stage inconclusive; allow_coexisting judges it anyway") {
  {
    World w(candidate("cand", 18432));
    w.runner->at("cand").behaviour = Behaviour::SecondEngine;
    w.runner->at("cand").fault_after = 5;
    w.run(10 * kDay);
    auto v = w.verdict("cand");
    REQUIRE(v);
    INFO(v->reason);
    CHECK(v->state == VerdictState::Inconclusive);
    CHECK(v->stage == "canary");
    CHECK(v->reason.find("ollama pid 777") != std::string::npos);
  }
  {
    World w(candidate("cand", 18432, R"(, "allow_coexisting": true)"));
    w.runner->at("cand").behaviour = Behaviour::SecondEngine;
    w.runner->at("cand").fault_after = 5;
    w.run(10 * kDay);
    auto v = w.verdict("cand");
    REQUIRE(v);
    INFO(v->reason);
    CHECK(v->state == VerdictState::Promoted);
    CHECK(v->stage == "soak");
    // The recipe carries allow_coexisting: explain recomputes the same verdict.
    std::ostringstream out, err;
    CHECK(soakctl_main({"--db", w.tmp.path() + "/s.db", "explain", "cand"}, out, err, w.clock) == kCtlExitOk);
    CHECK(out.str().find("recomputed from the stored rows: identical") != std::string::npos);
  }
}

TEST_CASE("a build answering under half as long as its baseline is rejected in the canary, though faster") {
  World w(base_and_cand());
  w.runner->at("base").build = "b9430";
  w.runner->at("cand").build = "b9502";
  w.runner->at("cand").behaviour = Behaviour::ShortAnswers;
  w.run(10 * kDay);
  auto v = w.verdict("cand");
  REQUIRE(v);
  INFO(v->reason);
  CHECK(v->state == VerdictState::Rejected);
  CHECK(v->stage == "canary");
  CHECK(v->reason.find("answers stop early") != std::string::npos);
  CHECK(v->reason.find("S4:271") != std::string::npos);
  CHECK(has_metric(*v, "completion_length/", MetricResult::Fail));
  // Half the tokens in less time: no speed figure regressed.
  CHECK_FALSE(has_metric(*v, "wall_ms/", MetricResult::Fail));
  CHECK_FALSE(has_metric(*v, "decode_tps/", MetricResult::Fail));
}

TEST_CASE("the largest long-context size failing only in the soak is rejected early by its task's measure") {
  World w(candidate("cand", 18432));
  w.runner->at("cand").behaviour = Behaviour::SoakLargestFails;
  w.run(10 * kDay);
  auto v = w.verdict("cand");
  REQUIRE(v);
  INFO(v->reason);
  CHECK(v->state == VerdictState::Rejected);
  CHECK(v->stage == "soak");
  // One size failing every round is a third of the soak's long-context
  // requests: the sequential test stops the soak long before the per-size
  // rule would judge it at the end (that rule: unit_judge_stages).
  CHECK(v->reason.find("sequential task/long_context") != std::string::npos);
  CHECK(has_metric(*v, "sequential/task/long_context", MetricResult::Fail));
  auto st = w.stages("cand");
  REQUIRE(st.size() == 4);
  CHECK(st[1].state == StageState::Passed);  // the canary saw the size clean
  REQUIRE(st[3].ended_ms);
  CHECK(*st[3].ended_ms - st[3].started_ms < st[3].length_ms / 4);
}

TEST_CASE("a loop in the soak's agent traffic is caught, under the failure ratio") {
  World w(candidate("cand", 18432));
  w.runner->at("cand").behaviour = Behaviour::SoakLoops;
  w.run(10 * kDay);
  auto v = w.verdict("cand");
  REQUIRE(v);
  INFO(v->reason);
  CHECK(v->state == VerdictState::Rejected);
  CHECK(v->stage == "soak");
  CHECK(v->reason.find("answers loop") != std::string::npos);
  CHECK(has_metric(*v, "answers/loops", MetricResult::Fail));
  CHECK(has_metric(*v, "failure_ratio", MetricResult::Pass));
}
