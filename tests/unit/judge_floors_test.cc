// The slo floors (docs/DESIGN.md §3.11): absolute limits that reject with or
// without a baseline, in every stage, and how many breaching rows make a
// failure. Synthetic rows, virtual time.
#include <nlohmann/json.hpp>

#include "judges/judge.h"
#include "judges/recipe.h"
#include "tests/catch.h"
#include "tests/unit/judge_rows.h"

using namespace soak;
using namespace soak::testing;

namespace {

// A stage with the default floors in force and no baseline (a first build).
JudgeInput first_build(StageKind stage) {
  JudgeInput in = input_for(stage);
  in.recipe.baseline_mode = BaselineMode::None;
  in.recipe.baseline_id.reset();
  in.recipe.slo = SloSettings{};
  return in;
}

VerdictRow judge(JudgeInput in, const Rows& rows) {
  in.candidate_rows = rows.rows;
  return judge_stage(in);
}

const MetricEvidence* exact(const VerdictRow& v, const std::string& name) {
  for (const auto& m : v.metrics)
    if (m.metric == name) return &m;
  return nullptr;
}

// `n` clean marker rows decoding at `tps` (thinking off, one at a time).
void decoding(Rows& rows, int n, double tps, ProbeKind kind = ProbeKind::Marker) {
  for (int i = 0; i < n; ++i) rows.perf(kind, "marker", Perf{200, 3000, tps * (1 + 0.01 * wobble(i)), 1000});
}

}  // namespace

TEST_CASE("floors: the line of a floor that grows with the prompt") {
  const std::vector<SloPoint> line{{0, 90'000}, {12'288, 300'000}};
  CHECK(slo_floor_ms(line, 0) == 90'000);
  CHECK(slo_floor_ms(line, 12'288) == 300'000);
  CHECK(slo_floor_ms(line, 6'144) == 195'000);  // halfway
  // Past the last point it keeps the last segment's slope: the 27B's 65,538-token
  // fresh prefill took 494 s (S1), well inside 1,210 s.
  CHECK(slo_floor_ms(line, 65'536) == 90'000 + 210'000LL * 65'536 / 12'288);
  CHECK(slo_floor_ms(line, 65'536) > 494'000);
  CHECK(slo_floor_ms({{1024, 60'000}}, 131'072) == 60'000);  // one point: flat
  CHECK(slo_floor_ms({{1024, 60'000}, {2048, 90'000}}, 0) == 60'000);
}

TEST_CASE("floors: a first build decoding at 2.8 tok/s is rejected at smoke with the floor and its seed line") {
  JudgeInput in = first_build(StageKind::Smoke);
  Rows rows(kCandidate);
  decoding(rows, 5, 2.8);
  auto v = judge(in, rows);
  INFO(v.reason);
  CHECK(v.state == VerdictState::Rejected);
  CHECK(contains(v.reason, "too slow to use: slo/decode_tps"));
  CHECK(contains(v.reason, "5 of 5 rows"));
  CHECK(contains(v.reason, "2.8"));
  CHECK(contains(v.reason, "slo.min_decode_tps 3 tok/s"));
  CHECK(contains(v.reason, "S1:108"));
  const auto* m = exact(v, "slo/decode_tps");
  REQUIRE(m);
  CHECK(m->result == MetricResult::Fail);
  CHECK(m->n == 5);
  CHECK(m->threshold == 3);
  CHECK(m->estimate == Approx(2.8).epsilon(0.02));

  SECTION("the same rows at 8.76 tok/s, the slowest build the field reports kept, pass") {
    Rows ok(kCandidate);
    decoding(ok, 5, 8.76);
    auto p = judge(first_build(StageKind::Smoke), ok);
    INFO(p.reason);
    CHECK(exact(p, "slo/decode_tps")->result == MetricResult::Pass);
    CHECK_FALSE(contains(p.reason, "too slow"));
  }
  SECTION("a configured floor says so instead of the seed line") {
    in.recipe.slo->min_decode_tps = 2.5;
    auto c = judge(in, rows);
    CHECK(exact(c, "slo/decode_tps")->result == MetricResult::Pass);
    CHECK(contains(exact(c, "slo/decode_tps")->reason, "slo.min_decode_tps 2.5 tok/s (configured)"));
  }
  SECTION("a recipe stored before the floors judges none") {
    in.recipe.slo.reset();
    auto old = judge(in, rows);
    CHECK(exact(old, "slo/decode_tps") == nullptr);
  }
}

TEST_CASE("floors: the canary's warm-up rows are not measured against a floor") {
  // A cold model paged in by the warm-up decodes slowly at first: five such
  // rows breach the decode floor unless they are the warm-up's.
  JudgeInput in = first_build(StageKind::Canary);
  Rows rows(kCandidate);
  decoding(rows, 5, 2.0);
  decoding(rows, 5, 20.0);
  const auto* slow = exact(judge(in, rows), "slo/decode_tps");
  REQUIRE(slow);
  CHECK(slow->result == MetricResult::Fail);
  for (size_t i = 0; i < 5; ++i) rows.rows[i].task = std::string(to_string(TaskKind::Warmup));
  const auto* warm = exact(judge(in, rows), "slo/decode_tps");
  REQUIRE(warm);
  CHECK(warm->result == MetricResult::Pass);
  CHECK(warm->n == 5);
}

TEST_CASE("floors: how many breaching rows make a failure") {
  // At least min_breaches (3) rows past the floor, and at least 10 % of the rows.
  struct Case {
    int slow, fast;
    MetricResult want;
  };
  for (const Case& k : {Case{1, 9999, MetricResult::Pass},  // one slow row never rejects a week
                        Case{1, 0, MetricResult::Pass},     // not even alone
                        Case{2, 0, MetricResult::Fail},     // fewer rows than min_breaches: every one
                        Case{2, 1, MetricResult::Pass}, Case{3, 17, MetricResult::Fail},  // 15 %
                        Case{3, 97, MetricResult::Pass},                                  // 3 %
                        Case{60, 9940, MetricResult::Pass},                               // a bad hour in a week: 0.6 %
                        Case{1500, 8500, MetricResult::Fail}}) {
    DYNAMIC_SECTION(k.slow << " slow of " << k.slow + k.fast) {
      Rows rows(kCandidate, 1, kT0, 60'000);
      decoding(rows, k.fast, 40);
      decoding(rows, k.slow, 1.5);
      auto v = judge(first_build(StageKind::Soak), rows);
      const auto* m = exact(v, "slo/decode_tps");
      REQUIRE(m);
      INFO(m->reason);
      CHECK(m->result == k.want);
      CHECK(m->n == k.slow + k.fast);
      CHECK(m->baseline == Approx(static_cast<double>(k.slow) / (k.slow + k.fast)));
      if (k.want == MetricResult::Pass) CHECK(contains(m->reason, "past it"));
    }
  }
}

TEST_CASE("floors: time to first token by prompt size") {
  JudgeInput in = first_build(StageKind::Canary);
  Rows rows(kCandidate);
  auto lc = [&](int64_t size, double ttft_ms, CacheState cache = CacheState::Fresh) {
    ProbeResult& r = rows.perf(ProbeKind::LongContext, "long_context/" + std::to_string(size),
                               Perf{ttft_ms, ttft_ms + 5000, 30, 500}, cache);
    r.size_tokens = size;
    r.prompt_tokens = size;
  };
  // 12K fresh past 300 s on both runs (S1:117), 65K at the 27B's 494 s twice:
  // the first is too slow, the second a healthy slow prefill.
  lc(12'288, 320'000);
  lc(12'288, 330'000);
  lc(65'536, 494'000);
  lc(65'536, 494'000);
  // The exact repeats are judged by the warm-retry floor, not by size.
  lc(12'288, 2'000, CacheState::Repeat);
  lc(12'288, 2'000, CacheState::Repeat);
  auto v = judge(in, rows);
  INFO(v.reason);
  CHECK(v.state == VerdictState::Rejected);
  const auto* at12 = exact(v, "slo/ttft/12K");
  REQUIRE(at12);
  CHECK(at12->result == MetricResult::Fail);
  CHECK(at12->n == 2);
  CHECK(at12->threshold == 300'000);
  CHECK(contains(at12->reason, "slo.ttft at 12K"));
  CHECK(contains(at12->reason, "= 300 s"));
  CHECK(contains(at12->reason, "S1:117"));
  const auto* at65 = exact(v, "slo/ttft/65K");
  REQUIRE(at65);
  CHECK(at65->result == MetricResult::Pass);
  CHECK(exact(v, "slo/warm_ttft")->result == MetricResult::Pass);
  CHECK(exact(v, "slo/warm_ttft")->n == 2);

  SECTION("one slow 12K run of two is not enough") {
    rows.rows.erase(rows.rows.begin() + 1);
    auto w = judge(in, rows);
    CHECK(exact(w, "slo/ttft/12K")->result == MetricResult::Pass);
  }
}

TEST_CASE("floors: short prompts get 90 s to their first token, a short answer 180 s in all") {
  JudgeInput in = first_build(StageKind::Smoke);
  Rows rows(kCandidate);
  for (ProbeKind k : {ProbeKind::Identity, ProbeKind::Marker, ProbeKind::Stream, ProbeKind::StrictJson}) {
    ProbeResult& r = rows.perf(k, std::string(to_string(k)), Perf{95'000, 200'000, 30, 2});
    r.prompt_tokens = 120;
  }
  // A thinking answer may take longer than a short one: not a short answer.
  ProbeResult& t = rows.perf(ProbeKind::Thinking, "thinking/on", Perf{1'000, 400'000, 30, 200});
  t.thinking = true;
  auto v = judge(in, rows);
  INFO(v.reason);
  CHECK(v.state == VerdictState::Rejected);
  const auto* ttft = exact(v, "slo/ttft/short");
  REQUIRE(ttft);
  CHECK(ttft->result == MetricResult::Fail);
  CHECK(ttft->n == 5);  // the thinking row's first token was quick and counts here
  CHECK(contains(ttft->reason, "4 of 5 rows"));
  const auto* wall = exact(v, "slo/short_wall");
  REQUIRE(wall);
  CHECK(wall->result == MetricResult::Fail);
  CHECK(wall->n == 4);
  CHECK(contains(wall->reason, "slo.short_wall 180 s"));
  CHECK(contains(wall->reason, "S1:108"));
}

TEST_CASE("floors: an agent turn's wall per context band, taken at the band's top") {
  JudgeInput in = first_build(StageKind::Gate);
  in.recipe.gate.min_completed = 1;
  Rows rows(kCandidate);
  auto turn = [&](int64_t band_lo, double wall_ms) {
    ProbeResult& r = rows.perf(ProbeKind::Agent, "agent/" + std::to_string(band_lo), Perf{2'000, wall_ms, 30, 900});
    r.task = "agent";
    r.size_tokens = band_lo;
    r.extra_json = R"({"session":1,"turn":1,"context_tokens":)" + std::to_string(band_lo + 10) +
                   R"(,"band":"x","tool_required":false,"recovery":false,"thinking":false})";
  };
  // 0-10K: 250 s is inside 180 s + 120 s x 10K/12K = 278 s; 40K-50K: 700 s
  // is past 668 s at 50K.
  for (int i = 0; i < 4; ++i) turn(0, 250'000);
  for (int i = 0; i < 4; ++i) turn(40'000, 700'000);
  auto v = judge(in, rows);
  INFO(v.reason);
  const auto* low = exact(v, "slo/turn_wall/0-10K");
  const auto* deep = exact(v, "slo/turn_wall/40K-50K");
  REQUIRE(low);
  REQUIRE(deep);
  CHECK(low->result == MetricResult::Pass);
  CHECK(low->threshold == slo_floor_ms(SloSettings{}.max_turn_wall, 10'000));
  CHECK(deep->result == MetricResult::Fail);
  CHECK(deep->threshold == slo_floor_ms(SloSettings{}.max_turn_wall, 50'000));
  CHECK(contains(deep->reason, "slo.turn_wall at 50K tokens"));
  CHECK(v.state == VerdictState::Rejected);
  CHECK(contains(v.reason, "slo/turn_wall/40K-50K"));
  // Agent turns are judged by their wall, not by the short-prompt TTFT floor.
  CHECK(exact(v, "slo/ttft/short") == nullptr);
}

TEST_CASE("floors: a warm retry with no first token in 90 s (S1:106)") {
  JudgeInput in = first_build(StageKind::Canary);
  Rows rows(kCandidate);
  for (int i = 0; i < 3; ++i)
    rows.perf(ProbeKind::SharedPrefix, "prefix/warm", Perf{95'000, 96'000, 30, 1}, CacheState::Repeat);
  auto v = judge(in, rows);
  const auto* warm = exact(v, "slo/warm_ttft");
  REQUIRE(warm);
  INFO(warm->reason);
  CHECK(warm->result == MetricResult::Fail);
  CHECK(contains(warm->reason, "slo.warm_ttft 90 s"));
  CHECK(contains(warm->reason, "S1:106"));
}

TEST_CASE("floors: requests that wait for each other by design are not judged by them") {
  // A burst member of 80 on two slots waits for 39 service times; a capacity
  // member shares its prefill. Neither is one request on its own.
  JudgeInput in = first_build(StageKind::Canary);
  Rows rows(kCandidate);
  for (int i = 0; i < 10; ++i) {
    ProbeResult& r = rows.perf(ProbeKind::Burst, "burst/80/member", Perf{400'000, 500'000, 1.0, 100});
    r.client_concurrency = 80;
  }
  auto v = judge(in, rows);
  INFO(v.reason);
  CHECK(exact(v, "slo/decode_tps") == nullptr);
  CHECK(exact(v, "slo/ttft/short") == nullptr);
  CHECK_FALSE(contains(v.reason, "too slow"));

  // The same figures on requests made one at a time do fail the floor: it is
  // the concurrency that keeps the burst members out, not their figures.
  Rows alone(kCandidate);
  for (int i = 0; i < 10; ++i) alone.perf(ProbeKind::Burst, "burst/1/member", Perf{400'000, 500'000, 1.0, 100});
  auto v1 = judge(first_build(StageKind::Canary), alone);
  const auto* decode = exact(v1, "slo/decode_tps");
  REQUIRE(decode);
  CHECK(decode->result == MetricResult::Fail);
}

TEST_CASE("floors and the launch cap survive the stored recipe") {
  StoredRecipe r;
  r.recipe = first_build(StageKind::Soak).recipe;
  r.recipe.slo->max_ttft = {{0, 60'000}, {8192, 200'000}};
  r.recipe.slo->min_breaches = 5;
  r.recipe.launch_cap = LaunchCap{512, 8192, false, "start it with --max-tokens 32768"};
  auto back = recipe_from_json(recipe_to_json(r));
  REQUIRE(back.ok());
  REQUIRE(back->recipe.slo);
  CHECK(*back->recipe.slo == *r.recipe.slo);
  REQUIRE(back->recipe.launch_cap);
  CHECK(*back->recipe.launch_cap == *r.recipe.launch_cap);

  SECTION("a recipe stored before them has neither") {
    StoredRecipe old = r;
    old.recipe.slo.reset();
    old.recipe.launch_cap.reset();
    const std::string text = recipe_to_json(old);
    CHECK(text.find("\"slo\"") == std::string::npos);
    CHECK(text.find("launch_cap") == std::string::npos);
    auto o = recipe_from_json(text);
    REQUIRE(o.ok());
    CHECK_FALSE(o->recipe.slo);
    CHECK_FALSE(o->recipe.launch_cap);
  }
}
