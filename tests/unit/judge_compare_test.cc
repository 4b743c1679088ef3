// Canary versus baseline: regressions, the effect floor, the hold band, tails,
// error rates, speculative decoding, fresh/repeat separation and missing
// baselines.
#include <nlohmann/json.hpp>

#include "judges/judge.h"
#include "judges/recipe.h"
#include "tests/catch.h"
#include "tests/unit/judge_rows.h"

using namespace soak;
using namespace soak::testing;

namespace {

constexpr int kN = 40;

struct Canary {
  Rows cand{kCandidate, 1};
  Rows base{kBaseline, 100'000};

  VerdictRow judge(JudgeInput in = input_for(StageKind::Canary)) {
    in.candidate_rows = cand.rows;
    in.baseline_rows = base.rows;
    return judge_stage(in);
  }
};

}  // namespace

TEST_CASE("canary: same performance as the baseline is promoted") {
  Canary c;
  add_perf(c.cand, kN, Perf{}, 1);
  add_perf(c.base, kN, Perf{}, 5000);
  auto v = c.judge();
  INFO(v.reason);
  CHECK(v.state == VerdictState::Promoted);
  CHECK(contains(v.reason, "baseline interleaved"));
  const auto* ttft = find_metric(v, "ttft_ms/stream/1k{");
  REQUIRE(ttft);
  CHECK(ttft->result == MetricResult::Pass);
  CHECK(ttft->n == kN);
  CHECK(ttft->n_baseline == kN);
  CHECK(ttft->threshold == Approx(0.10));
  CHECK(ttft->lo <= 0);
  CHECK(ttft->hi >= 0);
  CHECK(find_metric(v, "wall_ms/stream/1k{"));
  CHECK(find_metric(v, "decode_tps/stream/1k{"));
  CHECK(find_metric(v, "ttft_ms.p95/stream/1k{"));
  CHECK(find_metric(v, "decode_tps.p5/stream/1k{"));
  CHECK(find_metric(v, "error_rate/stream/1k{"));
  // Prompt throughput is only ever judged on fresh prompts.
  CHECK_FALSE(find_metric(v, "prompt_tps/"));
}

TEST_CASE("canary: a clear TTFT regression is rejected with its evidence") {
  Canary c;
  add_perf(c.cand, kN, Perf{.ttft_ms = 280}, 1);
  add_perf(c.base, kN, Perf{}, 5000);
  auto v = c.judge();
  CHECK(v.state == VerdictState::Rejected);
  // The verdict names the metric, the workload and the size of the change...
  CHECK(contains(v.reason, "ttft_ms stream/1k +40.0% vs baseline"));
  const auto* m = find_metric(v, "ttft_ms/stream/1k{");
  REQUIRE(m);
  CHECK(m->result == MetricResult::Fail);
  // ...and the metric row carries the whole argument.
  CHECK(contains(m->reason, "regression beyond effect floor"));
  CHECK(m->estimate == Approx(280).epsilon(0.05));
  CHECK(m->baseline == Approx(200).epsilon(0.05));
  CHECK(m->lo > 0.3);  // the whole interval of the shift is a slowdown
  CHECK(m->p_value < 0.001);
}

TEST_CASE("canary: a regression between the effect floor and floor + hold band is a hold") {
  Canary c;
  add_perf(c.cand, kN, Perf{.wall_ms = 2240}, 1);  // +12%: above 10%, below 15%
  add_perf(c.base, kN, Perf{}, 5000);
  auto v = c.judge();
  INFO(v.reason);
  CHECK(v.state == VerdictState::Hold);
  const auto* m = find_metric(v, "wall_ms/stream/1k{");
  REQUIRE(m);
  CHECK(m->result == MetricResult::Marginal);
}

TEST_CASE("canary: a significant change smaller than the effect floor stays promoted") {
  Canary c;
  add_perf(c.cand, 600, Perf{.ttft_ms = 206}, 1, "stream/1k", CacheState::None);  // +3%
  add_perf(c.base, 600, Perf{}, 9000);
  auto v = c.judge();
  INFO(v.reason);
  CHECK(v.state == VerdictState::Promoted);
  const auto* m = find_metric(v, "ttft_ms/stream/1k{");
  REQUIRE(m);
  CHECK(m->p_value < 1e-6);                // statistically clear...
  CHECK(m->result == MetricResult::Pass);  // ...and too small to matter
  CHECK(contains(m->reason, "within the effect floor"));
}

TEST_CASE("canary: a latency a few milliseconds longer is under the absolute floor, whatever its ratio") {
  Canary c;
  add_perf(c.cand, kN, Perf{.ttft_ms = 8}, 1);  // a cached first token: +60 %, 3 ms
  add_perf(c.base, kN, Perf{.ttft_ms = 5}, 5000);
  JudgeInput in = input_for(StageKind::Canary);
  REQUIRE(in.recipe.judge.min_effect_ms == 10);  // the default
  auto v = c.judge(in);
  INFO(v.reason);
  CHECK(v.state == VerdictState::Promoted);
  const auto* m = find_metric(v, "ttft_ms/stream/1k{");
  REQUIRE(m);
  CHECK(m->p_value < 0.001);
  CHECK(m->result == MetricResult::Pass);
  CHECK(contains(m->reason, "under the absolute floor 10 ms (judge.min_effect_ms)"));

  // The same rows without the floor: a regression.
  in.recipe.judge.min_effect_ms = 0;
  v = c.judge(in);
  CHECK(v.state == VerdictState::Rejected);
  m = find_metric(v, "ttft_ms/stream/1k{");
  REQUIRE(m);
  CHECK(m->result == MetricResult::Fail);

  // 30 ms against 5 ms is past the floor: a regression at the default.
  Canary slow;
  add_perf(slow.cand, kN, Perf{.ttft_ms = 30}, 1);
  add_perf(slow.base, kN, Perf{.ttft_ms = 5}, 5000);
  v = slow.judge();
  CHECK(v.state == VerdictState::Rejected);
}

TEST_CASE("the absolute floor is stored with the recipe; a recipe stored before it had none") {
  StoredRecipe r;
  r.recipe = input_for(StageKind::Canary).recipe;
  r.recipe.judge.min_effect_ms = 25;
  auto back = recipe_from_json(recipe_to_json(r));
  REQUIRE(back.ok());
  CHECK(back->recipe.judge.min_effect_ms == 25);
  // A judge-8 verdict's recipe: explain recomputes it without the floor.
  auto j = nlohmann::json::parse(recipe_to_json(r));
  j["judge"].erase("min_effect_ms");
  auto old = recipe_from_json(j.dump());
  REQUIRE(old.ok());
  CHECK(old->recipe.judge.min_effect_ms == 0);
}

TEST_CASE("canary: a tail-only regression is a hold") {
  Canary c;
  // Same bulk; one request in six is three times slower on the candidate.
  for (int i = 0; i < 600; ++i) {
    Perf p = jittered(Perf{}, i);
    if (i % 6 == 0) p.ttft_ms *= 3;
    c.cand.perf(ProbeKind::Stream, "stream/1k", p);
  }
  add_perf(c.base, 600, Perf{}, 9000);
  auto v = c.judge();
  INFO(v.reason);
  CHECK(v.state == VerdictState::Hold);
  const auto* central = find_metric(v, "ttft_ms/stream/1k{");
  REQUIRE(central);
  CHECK(central->result == MetricResult::Pass);
  const auto* p95 = find_metric(v, "ttft_ms.p95/stream/1k{");
  REQUIRE(p95);
  CHECK(p95->result == MetricResult::Marginal);
  CHECK(p95->estimate > 2 * p95->baseline);
  CHECK(find_metric(v, "ttft_ms.p99/stream/1k{"));  // enough samples for p99 too
}

TEST_CASE("canary: higher error rate than the baseline is rejected by the count test") {
  Canary c;
  add_perf(c.cand, 300, Perf{}, 1);
  add_perf(c.base, 300, Perf{}, 5000);
  for (int i = 0; i < 30; ++i) c.cand.add(ProbeKind::Stream, "stream/1k", Outcome::MissingMarker);
  auto v = c.judge();
  INFO(v.reason);
  CHECK(v.state == VerdictState::Rejected);
  const auto* m = find_metric(v, "error_rate/stream/1k{");
  REQUIRE(m);
  CHECK(m->result == MetricResult::Fail);
  CHECK(m->estimate == Approx(30.0 / 330));
  CHECK(m->baseline == 0);
  CHECK(m->p_value < 0.01);
}

TEST_CASE("canary: high draft acceptance with slower decode is a regression") {
  Canary c;
  for (int i = 0; i < kN; ++i) {
    auto& r = c.cand.perf(ProbeKind::Stream, "stream/1k", jittered(Perf{.wall_ms = 2800, .decode_tps = 35}, i));
    r.server_draft_n = 100;
    r.server_draft_accepted = 95;
  }
  add_perf(c.base, kN, Perf{}, 5000);
  auto v = c.judge();
  CHECK(v.state == VerdictState::Rejected);
  CHECK(contains(v.reason, "despite 95.0% draft acceptance"));
  const auto* acc = find_metric(v, "draft_acceptance/stream/1k{");
  REQUIRE(acc);
  CHECK(acc->estimate == Approx(0.95));
  CHECK(acc->n == kN);
  const auto* wall = find_metric(v, "wall_ms/stream/1k{");
  REQUIRE(wall);
  CHECK(wall->result == MetricResult::Fail);
  CHECK(find_metric(v, "decode_tps/stream/1k{")->result == MetricResult::Fail);
}

TEST_CASE("canary: a fast repeat never rescues a slow fresh prompt") {
  Canary c;
  const std::string fresh = "long_context/32768/fresh", repeat = "long_context/32768/repeat";
  add_perf(c.base, kN, Perf{.ttft_ms = 30'000, .prompt_tps = 1100}, 5000, fresh, CacheState::Fresh,
           ProbeKind::LongContext);
  add_perf(c.base, kN, Perf{.ttft_ms = 3'000}, 6000, repeat, CacheState::Repeat, ProbeKind::LongContext);
  add_perf(c.cand, kN, Perf{.ttft_ms = 45'000, .prompt_tps = 730}, 1, fresh, CacheState::Fresh, ProbeKind::LongContext);
  add_perf(c.cand, kN, Perf{.ttft_ms = 300}, 100, repeat, CacheState::Repeat, ProbeKind::LongContext);
  auto v = c.judge();
  INFO(v.reason);
  CHECK(v.state == VerdictState::Rejected);
  const auto* fresh_ttft = find_metric(v, "ttft_ms/" + fresh + "{");
  const auto* repeat_ttft = find_metric(v, "ttft_ms/" + repeat + "{");
  const auto* fresh_prompt = find_metric(v, "prompt_tps/" + fresh + "{");
  REQUIRE(fresh_ttft);
  REQUIRE(repeat_ttft);
  REQUIRE(fresh_prompt);
  CHECK(fresh_ttft->result == MetricResult::Fail);
  CHECK(fresh_ttft->n == kN);  // only fresh rows in the fresh pool
  CHECK(fresh_prompt->result == MetricResult::Fail);
  CHECK(fresh_prompt->estimate == Approx(730).epsilon(0.05));
  CHECK(repeat_ttft->result == MetricResult::Pass);
  CHECK(repeat_ttft->n == kN);
  CHECK_FALSE(find_metric(v, "prompt_tps/" + repeat));
}

TEST_CASE("canary: throughput falls back to client figures unless every row has the server's") {
  Canary c;
  add_perf(c.cand, kN, Perf{}, 1);
  add_perf(c.base, kN, Perf{}, 5000);
  c.base.rows.front().server_predicted_tps.reset();
  auto v = c.judge();
  const auto* m = find_metric(v, "decode_tps/stream/1k{");
  REQUIRE(m);
  CHECK(contains(m->reason, "source client"));
  CHECK(m->n_baseline == kN);
}

TEST_CASE("canary: timing artifacts are excluded from rates but reported") {
  Canary c;
  add_perf(c.cand, kN, Perf{}, 1);
  add_perf(c.base, kN, Perf{}, 5000);
  for (int i = 0; i < 5; ++i) c.cand.rows[static_cast<size_t>(i)].timing_artifact = true;
  auto v = c.judge();
  CHECK(find_metric(v, "decode_tps/stream/1k{")->n == kN - 5);
  CHECK(find_metric(v, "ttft_ms/stream/1k{")->n == kN);
  CHECK(find_metric(v, "timing_artifacts")->n == 5);
}

TEST_CASE("canary: a baseline without data is inconclusive; the first build stands on absolute rules") {
  Canary c;
  add_perf(c.cand, kN, Perf{}, 1);
  SECTION("no baseline exists at all: the first build of its kind") {
    auto in = input_for(StageKind::Canary);
    in.recipe.baseline_mode = BaselineMode::None;
    in.recipe.baseline_id.reset();
    auto v = c.judge(in);
    CHECK(v.state == VerdictState::Promoted);
    const auto* m = find_metric(v, "baseline");
    REQUIRE(m);
    CHECK(contains(m->reason, "first build"));
    CHECK(v.baseline_mode == "none");
  }
  SECTION("a baseline exists but has no stored rows") {
    auto in = input_for(StageKind::Canary);
    in.recipe.baseline_mode = BaselineMode::None;
    auto v = c.judge(in);
    CHECK(v.state == VerdictState::Inconclusive);
    CHECK(contains(v.reason, "no baseline data"));
  }
  SECTION("baseline from history without rows") {
    auto in = input_for(StageKind::Canary);
    in.recipe.baseline_mode = BaselineMode::History;
    auto v = c.judge(in);
    CHECK(v.state == VerdictState::Inconclusive);
    CHECK(contains(v.reason, "no baseline data (history baseline had no rows)"));
    CHECK(v.baseline_mode == "history");
  }
  SECTION("baseline rows under a different locator are not comparable") {
    for (int i = 0; i < kN; ++i) {
      auto& r = c.base.perf(ProbeKind::Stream, "stream/1k", jittered(Perf{}, i));
      r.sampling_json = R"({"temperature":0.0,"top_p":1.0,"top_k":0})";
    }
    auto v = c.judge();
    CHECK(v.state == VerdictState::Inconclusive);
    CHECK(contains(v.reason, "same locator"));
    const auto* m = find_metric(v, "ttft_ms/stream/1k{");
    REQUIRE(m);
    CHECK(m->result == MetricResult::Insufficient);
    CHECK(m->n_baseline == 0);
  }
  SECTION("too few samples on one side") {
    add_perf(c.base, 3, Perf{}, 5000);
    auto v = c.judge();
    CHECK(v.state == VerdictState::Inconclusive);
    CHECK(find_metric(v, "ttft_ms/stream/1k{")->result == MetricResult::Insufficient);
  }
}

TEST_CASE("canary: a history baseline is compared and the verdict says so") {
  Canary c;
  add_perf(c.cand, kN, Perf{}, 1);
  add_perf(c.base, kN, Perf{}, 5000);
  auto in = input_for(StageKind::Canary);
  in.recipe.baseline_mode = BaselineMode::History;
  auto v = c.judge(in);
  CHECK(v.state == VerdictState::Promoted);
  CHECK(v.baseline_mode == "history");
  CHECK(v.baseline_id == kBaseline);
  CHECK(contains(v.reason, "baseline history"));
}

TEST_CASE("canary: rows that waited for a cold model load stay out of TTFT, not out of decode") {
  // oMLX loads a model inside the request (usage.model_load_duration): such a
  // TTFT measures the load. Ten candidate rows carry a 30 s load in their TTFT.
  Canary c;
  add_perf(c.cand, kN, Perf{}, 1);
  for (int i = 0; i < 10; ++i) {
    add_perf(c.cand, 1, Perf{.ttft_ms = 30'200}, 500 + i);
    c.cand.rows.back().server_load_ms = 30'000;
  }
  add_perf(c.base, kN, Perf{}, 5000);
  auto v = c.judge();
  INFO(v.reason);
  CHECK(v.state == VerdictState::Promoted);
  const auto* ttft = find_metric(v, "ttft_ms/stream/1k{");
  REQUIRE(ttft);
  CHECK(ttft->n == kN);  // the loaded rows are not in it
  const auto* decode = find_metric(v, "decode_tps/stream/1k{");
  REQUIRE(decode);
  CHECK(decode->n == kN + 10);  // decode after the load is still a decode
}

TEST_CASE("canary: a warm-up's rows never enter the comparison, on either side") {
  auto canary = [](const std::string& task) {
    Canary c;
    // The first completions page the model in: three times slower.
    for (int i = 0; i < 10; ++i)
      c.cand.perf(ProbeKind::Stream, "stream/1k", jittered(Perf{.ttft_ms = 600}, i)).task = task;
    for (int i = 0; i < 10; ++i) c.base.perf(ProbeKind::Stream, "stream/1k", jittered(Perf{}, 900 + i)).task = task;
    add_perf(c.cand, kN, Perf{}, 1);
    add_perf(c.base, kN, Perf{}, 5000);
    return c.judge();
  };
  const VerdictRow timed = canary("functional");
  CHECK(timed.state == VerdictState::Hold);  // counted, the page-in reads as a tail regression
  const VerdictRow warm = canary(std::string(to_string(TaskKind::Warmup)));
  INFO(warm.reason);
  CHECK(warm.state == VerdictState::Promoted);
  const auto* ttft = find_metric(warm, "ttft_ms/stream/1k{");
  REQUIRE(ttft);
  CHECK(ttft->n == kN);
  CHECK(ttft->n_baseline == kN);
}
