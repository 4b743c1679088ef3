// Agent sessions and pooling candidates through whole campaigns in virtual
// time (tests/support/sim_world.h): the gate's traffic is the seeds' agent
// loop (context growing turn by turn to the ceiling, tool results fed back,
// thinking on and off per session), and an embedding server is a candidate
// of its own that never sees a chat probe.
#include <map>
#include <set>

#include <sstream>

#include <nlohmann/json.hpp>

#include "soakctl/soakctl.h"
#include "tests/support/sim_world.h"

using namespace soak;
using namespace soak::sim;

namespace {

const MetricEvidence* find_metric(const VerdictRow& v, const std::string& name) {
  for (const auto& m : v.metrics)
    if (m.metric == name) return &m;
  return nullptr;
}

std::vector<ProbeResult> rows_of(World& w, const std::string& name) {
  ProbeQuery q;
  q.candidate_id = w.row(name)->id;
  return *w.store->probe_results(q);
}

}  // namespace

TEST_CASE("gate agent sessions grow their context to the ceiling, then start again; every turn names its band") {
  World w(candidate("cand", 18432));
  w.run(10 * kDay);
  auto v = w.verdict("cand");
  REQUIRE(v);
  INFO(v->reason);
  CHECK(v->state == VerdictState::Promoted);
  std::map<int64_t, std::vector<std::pair<int64_t, int64_t>>> by_session;  // session -> (turn, context)
  std::set<bool> thinking;
  for (const auto& r : rows_of(w, "cand")) {
    if (r.kind != ProbeKind::Agent || r.task != "agent") continue;
    auto j = nlohmann::json::parse(r.extra_json);
    by_session[j["session"].get<int64_t>()].emplace_back(j["turn"].get<int64_t>(), j["context_tokens"].get<int64_t>());
    thinking.insert(j["thinking"].get<bool>());
    // The band is the row's size and part of its workload: comparisons key on it.
    CHECK(*r.size_tokens == j["context_tokens"].get<int64_t>() / 10'000 * 10'000);
    CHECK(r.workload_id.find("agent/" + std::to_string(*r.size_tokens) + "/") == 0);
    CHECK(r.thinking == j["thinking"].get<bool>());
  }
  REQUIRE(by_session.size() >= 3);
  CHECK(thinking == std::set<bool>{false, true});  // both variants, as thinking_share 0.5 says
  // A completed session: turns 1..n in order, context growing every turn from
  // the system prompt (~2K) to near the 50K ceiling, over the seeds' 60-80 calls.
  const auto& s = by_session.begin()->second;
  for (size_t i = 1; i < s.size(); ++i) {
    CHECK(s[i].first == s[i - 1].first + 1);
    CHECK(s[i].second > s[i - 1].second);
  }
  CHECK(s.front().second < 5'000);
  CHECK(s.back().second > 40'000);
  CHECK(s.back().second <= 50'000);
  CHECK(s.size() >= 40);
  CHECK(s.size() <= 120);
  const MetricEvidence* ctx = find_metric(*v, "session/context");  // the soak's traffic is sessions too
  REQUIRE(ctx);
  CHECK(ctx->estimate > 40'000);
  const auto all = *w.store->verdicts(w.row("cand")->id);
  bool gate_bands = false;  // the gate's verdict (a passed stage is recorded as the campaign running on)
  for (const auto& x : all)
    if (x.stage == "gate") {
      const MetricEvidence* m = find_metric(x, "session/tool_calls/40K-50K");
      gate_bands = gate_bands || (m && m->result == MetricResult::Pass && m->n >= 5);
    }
  CHECK(gate_bands);
}

TEST_CASE("a runtime that drops tool calls only past 30K context is rejected in the gate, the band named") {
  World w(candidate("cand", 18432));
  w.runner->at("cand").behaviour = Behaviour::DeepToolDrop;
  w.runner->at("cand").drop_tools_above = 30'000;
  w.run(10 * kDay);
  auto v = w.verdict("cand");
  REQUIRE(v);
  INFO(v->reason);
  CHECK(v->state == VerdictState::Rejected);
  CHECK(v->stage == "gate");
  CHECK(v->reason.find("tool calls fail from context band 30K-40K on") != std::string::npos);
  CHECK(v->reason.find("missing_tool_call") != std::string::npos);
  // Shallow bands are clean and say so.
  for (const char* band : {"0-10K", "10K-20K", "20K-30K"}) {
    const MetricEvidence* m = find_metric(*v, std::string("session/tool_calls/") + band);
    REQUIRE(m);
    CHECK(m->result == MetricResult::Pass);
    CHECK(m->estimate == 0);
  }
  const MetricEvidence* deep = find_metric(*v, "session/tool_calls/30K-40K");
  REQUIRE(deep);
  CHECK(deep->result == MetricResult::Fail);
  // Rejected once the band had enough turns, long before the gate's 24 h.
  auto st = w.stages("cand");
  CHECK(*st.back().ended_ms - st.back().started_ms < 12 * kHour);
}

TEST_CASE("a runtime that answers HTTP 500 from the fifth thinking turn is rejected with that turn") {
  World w(candidate("cand", 18432));
  w.runner->at("cand").behaviour = Behaviour::Thinking5xx;
  w.runner->at("cand").thinking_fail_turn = 5;
  w.run(10 * kDay);
  auto v = w.verdict("cand");
  REQUIRE(v);
  INFO(v->reason);
  CHECK(v->state == VerdictState::Rejected);
  CHECK(v->stage == "gate");
  CHECK(v->reason.find("HTTP 5xx with thinking on from turn 5 of a session") != std::string::npos);
  const MetricEvidence* m = find_metric(*v, "session/thinking_5xx");
  REQUIRE(m);
  CHECK(m->result == MetricResult::Fail);
  // Thinking-off sessions ran clean beside it.
  CHECK(m->reason.find(" 0 of ") != std::string::npos);
}

TEST_CASE("the same runtime with thinking off in every session passes the gate") {
  World w(candidate("cand", 18432, R"(, "agent": {"thinking_share": 0})"));
  w.runner->at("cand").behaviour = Behaviour::Thinking5xx;
  w.run(10 * kDay);
  auto v = w.verdict("cand");
  REQUIRE(v);
  INFO(v->reason);
  CHECK(v->state == VerdictState::Promoted);
}

TEST_CASE("prefix reuse runs in the canary: cold, warm, prefix 1-3, the 0.2 rule in the verdict") {
  World w(base_and_cand());
  w.run(10 * kDay);
  for (const auto& x : *w.store->verdicts(w.row("cand")->id)) {
    if (x.stage != "canary" || x.reason == "canary running") continue;  // the stage's opening row
    const MetricEvidence* m = find_metric(x, "prefix_reuse");
    REQUIRE(m);
    INFO(m->reason);
    CHECK(m->reason.find("reuse yes (median prefix/cold") == 0);
    CHECK(m->reason.find("baseline reuse yes") != std::string::npos);
    CHECK(m->n >= 5);
  }
  int64_t prefix_rows = 0;
  for (const auto& r : rows_of(w, "cand")) prefix_rows += r.kind == ProbeKind::SharedPrefix ? 1 : 0;
  CHECK(prefix_rows >= 5 * 8);  // 5 rows a run, a run every 15 min of the 2 h canary
  // soakctl status says it too, after the canary.
  std::ostringstream out, err;
  CHECK(soakctl_main({"--db", w.tmp.path() + "/s.db", "status"}, out, err, w.clock) == kCtlExitOk);
  INFO(out.str());
  CHECK(out.str().find("[prefix reuse yes 0.") != std::string::npos);
  std::ostringstream js;
  CHECK(soakctl_main({"--db", w.tmp.path() + "/s.db", "status", "--json"}, js, err, w.clock) == kCtlExitOk);
  auto j = nlohmann::json::parse(js.str());
  bool said = false;
  for (const auto& c : j)
    if (c["candidate"] == "cand") said = c["prefix_reuse"]["reuse"] == true && c["prefix_reuse"]["runs"] >= 5;
  CHECK(said);
}

TEST_CASE("an embedding server goes smoke -> canary -> gate -> soak to a verdict without one chat probe") {
  const std::string pooled = R"(, "kind": "embedding", "slots": 4, "cadence": {"burst": "20m"})";
  World w(candidate("base", 18431, pooled) + "," + candidate("cand", 18432, pooled + R"(, "baseline": "base")"));
  w.run(10 * kDay);
  auto v = w.verdict("cand");
  REQUIRE(v);
  INFO(v->reason);
  CHECK(v->state == VerdictState::Promoted);
  CHECK(v->stage == "soak");
  auto st = w.stages("cand");
  REQUIRE(st.size() == 4);
  std::set<ProbeKind> kinds;
  for (const auto& r : rows_of(w, "cand")) kinds.insert(r.kind);
  CHECK(kinds == std::set<ProbeKind>{ProbeKind::Health, ProbeKind::Scrape, ProbeKind::Embeddings, ProbeKind::Burst});
  for (const auto& x : *w.store->verdicts(w.row("cand")->id)) {
    if (x.reason == x.stage + " running") continue;  // the stage's opening row
    INFO(x.stage << ": " << x.reason);
    if (x.stage == "smoke") CHECK(find_metric(x, "smoke/embeddings"));
    if (x.stage == "canary") {
      const MetricEvidence* rps = find_metric(x, "rps/burst/4/embedding/summary");
      REQUIRE(rps);
      CHECK(rps->result == MetricResult::Pass);
      CHECK(rps->estimate > 0);
    }
    if (x.stage == "gate") {
      const MetricEvidence* g = find_metric(x, "gate_completed");
      REQUIRE(g);
      CHECK(g->reason.find("completed pooling requests") != std::string::npos);
      CHECK(find_metric(x, "failure_ratio"));
    }
  }
}

TEST_CASE("an embedding server at half its baseline's requests/s is rejected in the canary") {
  // Bursts every 20 min (the default): six a side in the 2 h canary.
  const std::string pooled = R"(, "kind": "embedding", "slots": 4, "cadence": {"burst": "20m"})";
  World w(candidate("base", 18431, pooled) + "," + candidate("cand", 18432, pooled + R"(, "baseline": "base")"));
  w.runner->at("cand").behaviour = Behaviour::SlowPooling;
  w.run(10 * kDay);
  auto v = w.verdict("cand");
  REQUIRE(v);
  INFO(v->reason);
  CHECK(v->state == VerdictState::Rejected);
  CHECK(v->stage == "canary");
  CHECK(v->reason.find("throughput: median") != std::string::npos);
  const MetricEvidence* rps = find_metric(*v, "rps/burst/4/embedding/summary");
  REQUIRE(rps);
  CHECK(rps->result == MetricResult::Fail);
  CHECK(rps->estimate < rps->baseline * 0.6);
}
