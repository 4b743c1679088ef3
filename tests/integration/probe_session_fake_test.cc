// Agent sessions and pooling candidates against the fake runtime on
// 127.0.0.1: the probe engine drives the session turn by turn as the gate
// does, and judge_stage() gets the rows as the daemon would hand them over.
//
// The pooling flavours are shaped like llama-server started with --embedding /
// --reranking: upstream tools/server/server.cpp registers /embedding,
// /embeddings, /v1/embeddings, /rerank, /reranking, /v1/rerank and
// /v1/reranking, and tools/server/server-context.cpp answers 501
// not_supported_error on the route the mode does not serve
// (tests/fake_runtime/pooling.h).
#include <set>

#include <nlohmann/json.hpp>

#include "judges/judge.h"
#include "schedules/plan.h"
#include "tests/catch.h"
#include "tests/fake_runtime/fake_runtime.h"
#include "tests/integration/probe_harness.h"

using namespace soak;
using namespace soak::probe_test;
using fake::FakeRuntime;
using fake::ListenerConfig;
using fake::Scenario;

namespace {

constexpr int64_t kCandidateId = 1;

ListenerConfig quick(Scenario s) {
  ListenerConfig c = ListenerConfig::make(s);
  c.knobs.token_interval_ms = 1;
  c.knobs.prefill_ms_per_1k = 1;
  return c;
}

// The agent settings of a small session: a 12K ceiling in bands of 3K.
CandidateConfig agent_candidate(const std::string& url, double thinking_share) {
  CandidateConfig c = candidate(url);
  c.settings.agent.context_ceiling_tokens = 12'000;
  c.settings.agent.band_tokens = 3'000;
  c.settings.agent.thinking_share = thinking_share;
  return c;
}

std::vector<ProbeResult> agent_turns(const CandidateConfig& c, int turns) {
  Harness h;
  std::vector<ProbeResult> rows;
  int64_t id = 1;
  for (int i = 0; i < turns; ++i)
    for (auto& r : h.run(c, probe_kinds_for(TaskKind::Agent))) {
      r.id = id++;
      r.candidate_id = kCandidateId;
      r.host_id = 1;
      r.started_wall_ms += i;  // keeps the order of turns
      rows.push_back(std::move(r));
    }
  return rows;
}

VerdictRow judge(StageKind stage, const CandidateConfig& c, std::vector<ProbeResult> rows) {
  JudgeInput in;
  in.recipe.stage = stage;
  in.recipe.candidate_id = kCandidateId;
  in.recipe.host_id = 1;
  in.recipe.slots_planned = 1;
  in.recipe.slots_run = 1;
  in.recipe.judge = c.settings.judge;
  in.recipe.gate = c.settings.gate;
  in.recipe.agent = c.settings.agent;
  in.recipe.workload = c.kind;
  in.smoke_required = probe_kinds_for(TaskKind::Smoke, c.kind);
  in.candidate_rows = std::move(rows);
  if (stage == StageKind::Soak) {
    // The soak judges the footprint's trend: a flat week of samples, as the sampler would store.
    for (int64_t i = 0; i < 7 * 24; ++i) {
      ProcessSample p;
      p.id = i + 1;
      p.host_id = 1;
      p.candidate_id = kCandidateId;
      p.wall_ms = i * kHour;
      p.pid = 4242;
      p.name = "llama-server";
      p.start_time = 1;
      p.footprint_bytes = 1LL << 30;
      in.process_samples.push_back(p);
    }
  }
  return judge_stage(in);
}

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("a session through the fake: the prompt grows turn by turn, tool results go back, a new session follows") {
  FakeRuntime rt({quick(Scenario::Healthy)});
  REQUIRE(rt.start().ok());
  const CandidateConfig c = agent_candidate(rt.base_url(), 0.5);
  const auto rows = agent_turns(c, 24);
  INFO(describe(rows));
  int64_t last_session = -1, last_prompt = 0, sessions = 0;
  for (const auto& r : rows) {
    CHECK(r.outcome == Outcome::Clean);
    REQUIRE(r.prompt_tokens);
    auto j = nlohmann::json::parse(r.extra_json);
    if (j["session"].get<int64_t>() != last_session) {
      last_session = j["session"].get<int64_t>();
      ++sessions;
      CHECK(j["turn"] == 1);
      CHECK(r.cache_state == CacheState::Fresh);
    } else {
      CHECK(*r.prompt_tokens > last_prompt);  // the history it carried grew
      CHECK(r.cache_state == CacheState::SharedPrefix);
    }
    last_prompt = *r.prompt_tokens;
    CHECK(*r.prompt_tokens <= 12'000);
    CHECK(*r.size_tokens == *r.prompt_tokens / 3'000 * 3'000);
  }
  CHECK(sessions >= 2);
  CHECK(judge(StageKind::Gate, c, rows).metrics.size() > 0);
}

TEST_CASE("a runtime that drops tool calls only past 6K context is rejected with the band named") {
  ListenerConfig cfg = quick(Scenario::DeepToolDrop);
  cfg.knobs.drop_tools_above_tokens = 6'000;
  FakeRuntime rt({cfg});
  REQUIRE(rt.start().ok());
  CandidateConfig c = agent_candidate(rt.base_url(), 0);
  c.settings.gate.min_completed = 10;
  const auto rows = agent_turns(c, 60);
  INFO(describe(rows));
  int64_t missing = 0;
  for (const auto& r : rows) {
    if (r.outcome != Outcome::MissingToolCall) continue;
    ++missing;
    CHECK(*r.prompt_tokens > 6'000);
  }
  CHECK(missing >= 5);
  const VerdictRow v = judge(StageKind::Gate, c, rows);
  INFO(v.reason);
  CHECK(v.state == VerdictState::Rejected);
  CHECK(has(v.reason, "tool calls fail from context band 6K-9K on"));
  CHECK(has(v.reason, "below it 0 of "));
}

TEST_CASE("a runtime that answers HTTP 500 from the fifth thinking turn is rejected with that turn") {
  ListenerConfig cfg = quick(Scenario::Thinking5xx);
  cfg.knobs.thinking_fail_turn = 5;
  cfg.knobs.ctx_per_slot = 65'536;
  FakeRuntime rt({cfg});
  REQUIRE(rt.start().ok());
  const CandidateConfig c = agent_candidate(rt.base_url(), 1.0);
  const auto rows = agent_turns(c, 14);
  INFO(describe(rows));
  for (const auto& r : rows) {
    auto j = nlohmann::json::parse(r.extra_json);
    CHECK(r.thinking == true);
    CHECK((r.outcome == Outcome::Http5xx) == (j["turn"].get<int64_t>() >= 5));
  }
  const VerdictRow v = judge(StageKind::Gate, c, rows);
  INFO(v.reason);
  CHECK(v.state == VerdictState::Rejected);
  CHECK(has(v.reason, "HTTP 5xx with thinking on from turn 5 of a session"));
}

TEST_CASE("an embedding-only server goes smoke, canary, gate and soak to verdicts without a chat request") {
  ListenerConfig cfg = quick(Scenario::Healthy);
  cfg.knobs.pooling = "embedding";
  FakeRuntime rt({cfg});
  REQUIRE(rt.start().ok());
  CandidateConfig c = candidate(rt.base_url(0));
  c.kind = WorkloadKind::Embedding;
  c.settings.gate.min_completed = 4;
  Harness h;
  int64_t id = 1;
  auto pass = [&](const CandidateConfig& who, StageKind stage, int times) {
    std::vector<ProbeResult> rows;
    for (int i = 0; i < times; ++i)
      for (const TaskSpec& t : plan_for(stage, who.settings, who.kind).tasks)
        for (auto& r : h.run(who, probe_kinds_for(t.kind, who.kind))) {
          r.id = id++;
          rows.push_back(std::move(r));
        }
    return rows;
  };
  for (StageKind stage : kAllStages) {
    const int times = stage == StageKind::Smoke ? 1 : 5;
    auto rows = pass(c, stage, times);
    INFO(to_string(stage) << "\n" << describe(rows));
    // A first build: no baseline, judged on the absolute rules (timings on a
    // shared loopback are no baseline comparison).
    const VerdictRow v = judge(stage, c, rows);
    INFO(v.reason);
    CHECK(v.state == VerdictState::Promoted);
    for (const auto& r : rows) CHECK(r.outcome == Outcome::Clean);
    if (stage == StageKind::Canary) {
      bool rps = false;
      for (const auto& m : v.metrics) rps = rps || (m.metric == "rps/burst/4/embedding/summary" && m.estimate > 0);
      CHECK(rps);
    }
    if (stage == StageKind::Gate) {
      bool counted = false;
      for (const auto& m : v.metrics) counted = counted || (m.metric == "gate_completed" && m.n >= 10);
      CHECK(counted);
    }
  }
  // What the fake saw: health, props/slots/metrics scrapes and embeddings; never a chat route.
  const std::set<std::string> allowed{"GET /health", "GET /props", "GET /slots", "GET /metrics", "POST /v1/embeddings"};
  const auto routes = rt.stats(0).routes;
  std::string seen;
  for (const auto& [route, n] : routes) seen += route + " x" + std::to_string(n) + "\n";
  INFO(seen);
  for (const auto& [route, n] : routes) CHECK(allowed.count(route) == 1);
  CHECK(routes.count("POST /v1/embeddings") == 1);
  CHECK(routes.count("POST /v1/chat/completions") == 0);
}

TEST_CASE("a rerank-only server passes its smoke; a chat candidate on it fails at the first chat probe") {
  ListenerConfig cfg = quick(Scenario::Healthy);
  cfg.knobs.pooling = "rerank";
  FakeRuntime rt({cfg});
  REQUIRE(rt.start().ok());
  CandidateConfig c = candidate(rt.base_url());
  c.kind = WorkloadKind::Rerank;
  Harness h;
  auto rows = h.run(c, probe_kinds_for(TaskKind::Smoke, c.kind));
  INFO(describe(rows));
  REQUIRE(rows.size() == 3);  // health, rerank, rerank/repeat (same order asked)
  for (const auto& r : rows) CHECK(r.outcome == Outcome::Clean);
  CHECK(find_row(rows, ProbeKind::Rerank, "rerank/repeat"));
  CHECK(rt.stats().routes.count("POST /v1/rerank") == 1);
  CHECK(rt.stats().routes.count("POST /v1/embeddings") == 0);

  // The same server as a chat candidate: upstream's 501 not_supported_error.
  CandidateConfig chat = candidate(rt.base_url());
  auto marker = h.run(chat, {ProbeKind::Marker});
  REQUIRE(marker.size() == 1);
  CHECK(marker[0].http_status == 501);
  CHECK(marker[0].outcome != Outcome::Clean);
}

TEST_CASE("a pooling server whose answers change for the same input fails its smoke, saying how") {
  for (WorkloadKind kind : {WorkloadKind::Embedding, WorkloadKind::Rerank}) {
    ListenerConfig cfg = quick(Scenario::UnstablePooling);
    cfg.knobs.pooling = kind == WorkloadKind::Embedding ? "embedding" : "rerank";
    FakeRuntime rt({cfg});
    REQUIRE(rt.start().ok());
    CandidateConfig c = candidate(rt.base_url());
    c.kind = kind;
    Harness h;
    const auto rows = h.run(c, probe_kinds_for(TaskKind::Smoke, kind));
    INFO(describe(rows));
    const ProbeKind pooled = kind == WorkloadKind::Embedding ? ProbeKind::Embeddings : ProbeKind::Rerank;
    const ProbeResult* first = find_row(rows, pooled, std::string(to_string(pooled)));
    const ProbeResult* repeat = find_row(rows, pooled, std::string(to_string(pooled)) + "/repeat");
    REQUIRE(first);
    REQUIRE(repeat);
    CHECK(first->outcome == Outcome::Clean);
    CHECK(repeat->outcome == Outcome::MalformedResponse);
    CHECK(has(repeat->detail, kind == WorkloadKind::Embedding ? "gave a different vector" : "in a different order"));
    const VerdictRow v = judge(StageKind::Smoke, c, rows);
    CHECK(v.state == VerdictState::Rejected);
  }
}
