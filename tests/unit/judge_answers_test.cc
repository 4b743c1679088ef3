// Answers judged over the stage (judges/answers.cc: loops in any stage's
// traffic, completion length against the baseline's, S4:271) and the gate's
// and soak's per-workload rounds (judges/rounds.cc: the last round at every
// size clean, a size failing on more than one round rejects, S1:197).
#include <functional>

#include "judges/judge.h"
#include "tests/catch.h"
#include "tests/unit/judge_rows.h"

using namespace soak;
using namespace soak::testing;

namespace {

constexpr int64_t kTurnEveryMs = kMinuteMs;
constexpr int kTurns = 7 * 24 * 60;  // a week of agent traffic, one turn a minute

// A quiet soak: agent turns, flat footprint; `round` (when given) adds its rows
// `rounds` times, spread evenly over the week (a heavy task's rounds).
using RoundFn = std::function<void(Rows&, int round)>;
JudgeInput soak_week(int rounds = 0, const RoundFn& round = nullptr) {
  auto in = input_for(StageKind::Soak);
  Rows rows{kCandidate, 1, kT0, kTurnEveryMs};
  const int every = rounds > 0 ? kTurns / rounds : kTurns + 1;
  for (int i = 0; i < kTurns; ++i) {
    if (round && i % every == every / 2) round(rows, i / every);
    rows.perf(ProbeKind::Agent, "agent/7k", jittered(Perf{}, i));
  }
  in.candidate_rows = rows.rows;
  for (int64_t i = 0; i < 7 * 24; ++i) {
    in.process_samples.push_back(process_sample(i + 1, kT0 + i * kHourMs, 20'000 * (1 + 0.01 * wobble(i))));
    in.host_samples.push_back(host_sample(i + 1, kT0 + i * kHourMs, 100));
  }
  return in;
}

// One soak long-context round per 6 h: fresh then, when it was clean, the exact repeat.
void long_context_round(Rows& rows, int64_t size, Outcome fresh) {
  ProbeResult& f = rows.add(ProbeKind::LongContext, "long_context/" + std::to_string(size) + "/fresh", fresh);
  f.size_tokens = size;
  f.cache_state = CacheState::Fresh;
  if (fresh != Outcome::Clean) return;
  ProbeResult& r = rows.add(ProbeKind::LongContext, "long_context/" + std::to_string(size) + "/repeat");
  r.size_tokens = size;
  r.cache_state = CacheState::Repeat;
}

}  // namespace

TEST_CASE("loops: two looping answers in the soak's traffic reject, under a 1 % failure ratio") {
  auto in = soak_week();
  for (int i : {100, 7000}) {
    ProbeResult& r = in.candidate_rows[i];
    r.outcome = Outcome::Repetition;
    r.detail = "the last 1140 bytes repeat a 19-byte unit: ' and the same again'";
  }
  auto v = judge_stage(in);
  INFO(v.reason);
  CHECK(v.state == VerdictState::Rejected);
  CHECK(contains(v.reason, "answers loop: 2 of 10080 answers ended in a loop"));
  CHECK(contains(v.reason, "S0:85, S1:214"));
  CHECK(contains(v.reason, "19-byte unit"));
  const auto* loops = find_metric(v, "answers/loops");
  REQUIRE(loops);
  CHECK(loops->result == MetricResult::Fail);
  CHECK(loops->estimate == 2);
  CHECK(loops->threshold == 2);
  CHECK(find_metric(v, "failure_ratio")->result == MetricResult::Pass);  // 0.2 %: the ratio alone passes

  SECTION("one loop is counted as any failure, not a rejection") {
    in.candidate_rows[7000].outcome = Outcome::Clean;
    auto one = judge_stage(in);
    INFO(one.reason);
    CHECK(one.state == VerdictState::Promoted);
    CHECK(find_metric(one, "answers/loops")->result == MetricResult::Pass);
    CHECK(find_metric(one, "answers/loops")->estimate == 1);
  }
}

TEST_CASE("completion length: answers half as long as the baseline's reject, though faster") {
  auto in = input_for(StageKind::Canary);
  Rows cand{kCandidate, 1};
  Rows base{kBaseline, 10'000};
  for (int i = 0; i < 12; ++i) {
    base.perf(ProbeKind::Stream, "stream", jittered(Perf{}, i)).completion_tokens = 100 + i % 3;
    // Half the tokens, so half the decode time: every speed figure is as good or better.
    Perf p = jittered(Perf{}, i + 50);
    p.wall_ms = 200 + (p.wall_ms - 200) / 2;
    cand.perf(ProbeKind::Stream, "stream", p).completion_tokens = 48 + i % 3;
  }
  in.candidate_rows = cand.rows;
  in.baseline_rows = base.rows;
  auto v = judge_stage(in);
  INFO(v.reason);
  CHECK(v.state == VerdictState::Rejected);
  CHECK(contains(v.reason, "answers stop early: stream"));
  CHECK(contains(v.reason, "median completion 49 tokens against the baseline's 101"));
  CHECK(contains(v.reason, "12 of 12 runs under half"));
  CHECK(contains(v.reason, "S4:271"));
  const auto* m = find_metric(v, "completion_length/stream{");
  REQUIRE(m);
  CHECK(m->result == MetricResult::Fail);
  CHECK(m->estimate == 49);
  CHECK(m->baseline == 101);
  CHECK(m->n == 12);
  CHECK(m->n_baseline == 12);
  CHECK(find_metric(v, "completion_length")->result == MetricResult::Fail);
  // The speed comparison alone would pass it.
  CHECK(find_metric(v, "wall_ms/stream{")->result == MetricResult::Pass);

  SECTION("one short run among ordinary ones does not reject") {
    for (int i = 0; i < 12; ++i) in.candidate_rows[i].completion_tokens = i == 3 ? 30 : 99;
    auto ok = judge_stage(in);
    INFO(ok.reason);
    CHECK(ok.state == VerdictState::Promoted);
    CHECK(find_metric(ok, "completion_length")->result == MetricResult::Pass);
    CHECK(find_metric(ok, "completion_length/") == nullptr);
  }
  SECTION("a median under half with only one short run does not reject either") {
    // Ten short answers in one burst (one run) and two ordinary ones.
    for (int i = 0; i < 12; ++i) {
      in.candidate_rows[i].completion_tokens = i < 10 ? 40 : 100;
      if (i < 10) in.candidate_rows[i].group_id = 77;
    }
    auto ok = judge_stage(in);
    INFO(ok.reason);
    CHECK(find_metric(ok, "completion_length")->result == MetricResult::Pass);
    CHECK(find_metric(ok, "completion_length/") == nullptr);
  }
  SECTION("rows of one group are one run") {
    // The twelve short answers as one burst: a single run, too little for the rule.
    for (auto& r : in.candidate_rows) r.group_id = 77;
    auto one_run = judge_stage(in);
    CHECK(find_metric(one_run, "completion_length")->result == MetricResult::Insufficient);
  }
  SECTION("no baseline rows: nothing to compare") {
    in.baseline_rows.clear();
    auto none = judge_stage(in);
    CHECK(find_metric(none, "completion_length") == nullptr);
  }
}

TEST_CASE("soak rounds: a 131K failing on every round rejects whatever the pooled ratio says") {
  // Every 6 h, as the soak schedules it: 28 rounds of a week.
  auto in = soak_week(28, [](Rows& rows, int) {
    long_context_round(rows, 32768, Outcome::Clean);
    long_context_round(rows, 131072, Outcome::Http5xx);
  });
  auto v = judge_stage(in);
  INFO(v.reason);
  CHECK(v.state == VerdictState::Rejected);
  CHECK(contains(v.reason, "long context 131K: 0 of 28 rounds clean; the last round"));
  CHECK(contains(v.reason, "S1:197"));
  CHECK(find_metric(v, "long_context/131072")->result == MetricResult::Fail);
  CHECK(find_metric(v, "long_context/131072")->n == 28);
  CHECK(find_metric(v, "long_context/32768")->result == MetricResult::Pass);
  // 28 failures among ~10,000 completions: the failure ratio alone would not reject.
  CHECK(find_metric(v, "failure_ratio")->result == MetricResult::Pass);
}

TEST_CASE("soak rounds: the last round must be clean; two failed rounds reject; one earlier is counted") {
  auto with_rounds = [](std::vector<Outcome> fresh) {
    return soak_week(static_cast<int>(fresh.size()),
                     [fresh](Rows& rows, int round) { long_context_round(rows, 131072, fresh[round]); });
  };
  SECTION("only the last round failed") {
    auto v = judge_stage(with_rounds({Outcome::Clean, Outcome::Clean, Outcome::Clean, Outcome::Http5xx}));
    INFO(v.reason);
    CHECK(v.state == VerdictState::Rejected);
    CHECK(contains(v.reason, "3 of 4 rounds clean; the last round"));
    CHECK(contains(v.reason, "fresh http_5xx"));
    CHECK(find_metric(v, "failure_ratio")->result == MetricResult::Pass);
  }
  SECTION("two earlier rounds failed, the last is clean") {
    auto v = judge_stage(with_rounds({Outcome::Http5xx, Outcome::Clean, Outcome::Timeout, Outcome::Clean}));
    INFO(v.reason);
    CHECK(v.state == VerdictState::Rejected);
    CHECK(contains(v.reason, "failed on 2 rounds, first fresh http_5xx"));
    CHECK(find_metric(v, "long_context/131072")->result == MetricResult::Fail);
  }
  SECTION("one earlier round failed: counted in the ratio, not a rejection") {
    auto v = judge_stage(with_rounds({Outcome::Clean, Outcome::Timeout, Outcome::Clean, Outcome::Clean}));
    INFO(v.reason);
    CHECK(v.state == VerdictState::Promoted);
    const auto* m = find_metric(v, "long_context/131072");
    REQUIRE(m);
    CHECK(m->result == MetricResult::Pass);
    CHECK(contains(m->reason, "one earlier round failed"));
  }
  SECTION("a repeat failing counts for its round") {
    auto in = soak_week(2, [](Rows& rows, int round) {
      long_context_round(rows, 131072, Outcome::Clean);
      if (round == 1) {
        rows.rows.back().outcome = Outcome::Http5xx;  // the last round's repeat
        rows.rows.back().detail = "HTTP 500";
      }
    });
    auto v = judge_stage(in);
    INFO(v.reason);
    CHECK(v.state == VerdictState::Rejected);
    CHECK(contains(v.reason, "1 of 2 rounds clean; the last round"));
    CHECK(contains(v.reason, "repeat http_5xx"));
  }
}

TEST_CASE("soak rounds: capacity per size x concurrency, one released group a round") {
  auto in = soak_week(3, [](Rows& rows, int round) {
    for (int k = 0; k < 4; ++k) {
      const bool fail = round > 0 && k == 3;  // the last member of the last two rounds
      ProbeResult& r =
          rows.add(ProbeKind::Capacity, "capacity/32768/fresh/x4", fail ? Outcome::Timeout : Outcome::Clean);
      r.size_tokens = 32768;
      r.client_concurrency = 4;
      r.cache_state = CacheState::Fresh;
      r.group_id = 500 + round;
    }
  });
  auto v = judge_stage(in);
  INFO(v.reason);
  CHECK(v.state == VerdictState::Rejected);
  CHECK(contains(v.reason, "capacity 32K x 4: 1 of 3 rounds clean; the last round"));
  CHECK(find_metric(v, "capacity/32768x4")->n == 3);
}

TEST_CASE("soak rounds: a refusal beyond the runtime's own context holds, as in the canary") {
  auto in = soak_week(3, [](Rows& rows, int) {
    long_context_round(rows, 131072, Outcome::ContextExceeded);
    rows.rows.back().extra_json = R"({"runtime_ctx":65536,"runtime_ctx_source":"/props n_ctx"})";
  });
  auto v = judge_stage(in);
  INFO(v.reason);
  CHECK(v.state != VerdictState::Promoted);
  CHECK(find_metric(v, "long_context/131072")->result == MetricResult::Marginal);
  CHECK(contains(v.reason, "long context 131K is beyond the runtime's own context"));
}

TEST_CASE("gate: a stage without long-context rounds has no round metrics") {
  auto in = soak_week();
  in.recipe.stage = StageKind::Gate;
  auto v = judge_stage(in);
  CHECK(find_metric(v, "long_context/") == nullptr);
  CHECK(find_metric(v, "capacity/") == nullptr);
  CHECK(find_metric(v, "answers/loops")->result == MetricResult::Pass);
}
