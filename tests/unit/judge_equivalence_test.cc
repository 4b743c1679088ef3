// The golden-set comparison across builds (judges/equivalence.cc,
// docs/DESIGN.md §3.13) on hand-built token and logprob sequences: the fork
// and its margins, near ties, a greedy token that is not its top-1, the top-k
// KL with its tail bucket, the noise floor, and text-only runtimes.
#include <cmath>
#include <string>
#include <vector>

#include "judges/equivalence.h"
#include "tests/catch.h"

using namespace soak;

namespace {

// A position whose top-k is `top` (token, probability) and whose chosen token
// is `chosen` (its probability read from the list, else `chosen_p`).
TokenStep step(const std::string& chosen, std::vector<std::pair<std::string, double>> top, double chosen_p = 0.01) {
  TokenStep s;
  s.chosen.token = chosen;
  s.chosen.logprob = std::log(chosen_p);
  for (const auto& [t, p] : top) {
    s.top.push_back(TokenChoice{t, std::nullopt, std::log(p)});
    if (t == chosen) s.chosen.logprob = std::log(p);
  }
  sort_top(s);
  return s;
}

// A confident greedy position: `t` at 0.9, a runner-up at 0.05.
TokenStep sure(const std::string& t) { return step(t, {{t, 0.9}, {"~" + t, 0.05}}); }

GoldenAnswer answer(const std::string& id, std::vector<TokenStep> steps) {
  GoldenAnswer a;
  a.prompt_id = id;
  a.logprobs = LogprobShape::TopK;
  std::string text;
  for (const TokenStep& s : steps) text += s.chosen.token;
  a.text_hash = text;  // a stand-in: equal texts, equal hashes
  a.steps = std::move(steps);
  return a;
}

GoldenAnswer text_only(const std::string& id, const std::string& text) {
  GoldenAnswer a;
  a.prompt_id = id;
  a.text_hash = text;
  return a;
}

// `n` prompts answered "The sky is blue" with confident tokens.
GoldenRun confident_run(int n) {
  GoldenRun r;
  for (int i = 0; i < n; ++i)
    r.answers.push_back(answer("p" + std::to_string(i), {sure("The"), sure(" sky"), sure(" is"), sure(" blue")}));
  return r;
}

const EquivalenceSettings kRules{};

}  // namespace

TEST_CASE("a run against itself is equivalent, with every top-1 agreeing and no divergence") {
  const GoldenRun a = confident_run(32);
  const EquivalenceResult r = compare_runs(a, a, kRules, std::nullopt);
  CHECK(r.verdict == EquivalenceVerdict::Equivalent);
  REQUIRE(r.prompts.size() == 32);
  for (const PromptComparison& c : r.prompts) {
    CHECK(c.status == PromptStatus::Equal);
    CHECK_FALSE(c.fork_index);
    CHECK(c.compared_positions == 4);
    CHECK(c.top1_agreement == 1.0);
  }
  CHECK(r.positions == 32 * 4);
  CHECK(r.mean_kl == Approx(0).margin(1e-12));
  CHECK(r.reasons.empty());
}

TEST_CASE("a fork with a clear margin is a changed answer, found at its position with both margins") {
  GoldenRun a = confident_run(4);
  GoldenRun b = a;
  // Prompt p2, position 3: the baseline said " blue" (0.9 vs 0.05), the candidate " green" (0.7 vs 0.2).
  b.answers[2].steps[3] = step(" green", {{" green", 0.7}, {" blue", 0.2}});
  b.answers[2].text_hash = "The sky is green";
  const EquivalenceResult r = compare_runs(a, b, kRules, std::nullopt);
  CHECK(r.verdict == EquivalenceVerdict::NotEquivalent);
  const PromptComparison& c = r.prompts[2];
  CHECK(c.status == PromptStatus::Fork);
  REQUIRE(c.fork_index);
  CHECK(*c.fork_index == 3);
  CHECK(c.a.token == " blue");
  CHECK(c.b.token == " green");
  REQUIRE(c.a.margin);
  REQUIRE(c.b.margin);
  CHECK(*c.a.margin == Approx(std::log(0.9 / 0.05)));
  CHECK(*c.b.margin == Approx(std::log(0.7 / 0.2)));
  CHECK(c.compared_positions == 3);  // only the positions before the fork
  REQUIRE(r.reasons.size() == 1);
  CHECK(r.reasons[0].find("prompt p2") != std::string::npos);
  CHECK(r.reasons[0].find("\" blue\"") != std::string::npos);
  CHECK(r.reasons[0].find("\" green\"") != std::string::npos);
  CHECK(describe(c) == "fork at token 3: \" blue\" (margin 2.890) vs \" green\" (margin 1.253)");
  // The other prompts are untouched.
  CHECK(r.prompts[0].status == PromptStatus::Equal);
}

TEST_CASE("a fork where both margins are within max_fork_margin is a near tie: recorded, not failed") {
  GoldenRun a = confident_run(3);
  GoldenRun b = a;
  a.answers[1].steps[1] = step(" sky", {{" sky", 0.46}, {" air", 0.44}});
  b.answers[1].steps[1] = step(" air", {{" air", 0.46}, {" sky", 0.44}});
  const EquivalenceResult r = compare_runs(a, b, kRules, std::nullopt);
  CHECK(r.prompts[1].status == PromptStatus::NearTie);
  REQUIRE(r.prompts[1].fork_index);
  CHECK(*r.prompts[1].fork_index == 1);
  CHECK(*r.prompts[1].a.margin == Approx(std::log(0.46 / 0.44)));
  CHECK(r.verdict == EquivalenceVerdict::Equivalent);
  CHECK(r.summary().find("1 near tie(s)") != std::string::npos);

  SECTION("one side's clear margin makes it a fork") {
    b.answers[1].steps[1] = step(" air", {{" air", 0.8}, {" sky", 0.1}});
    const EquivalenceResult r2 = compare_runs(a, b, kRules, std::nullopt);
    CHECK(r2.prompts[1].status == PromptStatus::Fork);
    CHECK(r2.verdict == EquivalenceVerdict::NotEquivalent);
  }
  SECTION("a tighter threshold turns the near tie into a fork") {
    EquivalenceSettings tight;
    tight.max_fork_margin = 0.01;
    CHECK(compare_runs(a, b, tight, std::nullopt).prompts[1].status == PromptStatus::Fork);
  }
}

TEST_CASE("a greedy token that is not its side's top-1 fails, unless within the margin") {
  GoldenRun a = confident_run(2);
  GoldenRun b = a;
  // The candidate answered " blue" while ranking " grey" first by ln(0.8/0.1) = 2.08 nats.
  b.answers[0].steps[3] = step(" blue", {{" grey", 0.8}, {" blue", 0.1}});
  EquivalenceResult r = compare_runs(a, b, kRules, std::nullopt);
  CHECK(r.prompts[0].status == PromptStatus::NotTop1);
  REQUIRE(r.prompts[0].not_top1);
  CHECK(r.prompts[0].not_top1->side == 'b');
  CHECK(r.prompts[0].not_top1->index == 3);
  CHECK(r.prompts[0].not_top1->top1 == " grey");
  CHECK(r.prompts[0].not_top1->gap == Approx(std::log(8.0)));
  CHECK_FALSE(r.prompts[0].fork_index);  // same tokens as the baseline: no fork
  CHECK(r.verdict == EquivalenceVerdict::NotEquivalent);
  CHECK(r.reasons[0].find("is not its top-1 \" grey\"") != std::string::npos);

  // A tie within max_fork_margin (0.51 vs 0.49) is a tie the runtime broke its own way.
  b.answers[0].steps[3] = step(" blue", {{" grey", 0.51}, {" blue", 0.49}});
  r = compare_runs(a, b, kRules, std::nullopt);
  CHECK(r.prompts[0].status == PromptStatus::Equal);
  // A chosen token outside the top-k is below all of it.
  b.answers[0].steps[3] = step(" blue", {{" grey", 0.6}, {" gray", 0.3}}, 0.001);
  CHECK(compare_runs(a, b, kRules, std::nullopt).prompts[0].status == PromptStatus::NotTop1);
}

TEST_CASE("top-k KL puts what a side does not list in a tail bucket") {
  const std::vector<TokenChoice> p{{"A", {}, std::log(0.6)}, {"B", {}, std::log(0.3)}};
  const std::vector<TokenChoice> q{{"A", {}, std::log(0.5)}, {"C", {}, std::log(0.4)}};
  // p's tail: 0.1. q leaves 0.1 unlisted, shared between B (which it does not
  // list) and its tail, each at most q's least listed 0.4: B 0.05, q's tail 1 − 0.55.
  const double want = 0.6 * std::log(0.6 / 0.5) + 0.3 * std::log(0.3 / 0.05) + 0.1 * std::log(0.1 / 0.45);
  CHECK(topk_kl(p, q) == Approx(want));
  CHECK(topk_kl(p, p) == Approx(0).margin(1e-12));
  CHECK(topk_kl({}, q) == 0);
  // Token ids decide over text pieces where both sides have them.
  const std::vector<TokenChoice> by_id_a{{"x", 7, std::log(0.9)}};
  const std::vector<TokenChoice> by_id_b{{"y", 7, std::log(0.9)}};
  CHECK(topk_kl(by_id_a, by_id_b) == Approx(0).margin(1e-12));
  CHECK(topk_kl(by_id_a, {{"x", 8, std::log(0.9)}}) > 1);
}

TEST_CASE("divergence is judged against the noise floor times kl_factor, never below min_kl") {
  // The reference's confident positions; the other run shifts each position's
  // probabilities a little (as MLX or a batched runtime does between runs).
  const auto run_with = [](double top, double second) {
    GoldenRun r;
    for (int i = 0; i < 8; ++i)
      r.answers.push_back(answer("p" + std::to_string(i),
                                 {step("a", {{"a", top}, {"b", second}}), step("c", {{"c", top}, {"d", second}})}));
    return r;
  };
  const GoldenRun base = run_with(0.9, 0.05);
  const GoldenRun wobble = run_with(0.85, 0.08);
  const double per_position = topk_kl(base.answers[0].steps[0].top, wobble.answers[0].steps[0].top);
  REQUIRE(per_position > kRules.min_kl);

  // Without a floor the divergence is above min_kl: not equivalent.
  EquivalenceResult r = compare_runs(base, wobble, kRules, std::nullopt);
  CHECK(r.mean_kl == Approx(per_position));
  CHECK(r.kl_threshold == kRules.min_kl);
  CHECK(r.verdict == EquivalenceVerdict::NotEquivalent);

  // The build against itself wobbles as much: the floor covers it.
  const NoiseFloor floor = noise_floor(base, wobble, kRules);
  CHECK(floor.prompts == 8);
  CHECK(floor.text_differences == 0);
  CHECK(floor.mean_kl == Approx(per_position));
  r = compare_runs(base, wobble, kRules, floor);
  CHECK(r.kl_threshold == Approx(kRules.kl_factor * per_position));
  CHECK(r.verdict == EquivalenceVerdict::Equivalent);

  // A candidate that moves the numbers far more than the floor fails, though no token changes.
  const GoldenRun moved = run_with(0.55, 0.4);
  r = compare_runs(base, moved, kRules, floor);
  CHECK(r.mean_kl > kRules.kl_factor * floor.mean_kl);
  CHECK(r.verdict == EquivalenceVerdict::NotEquivalent);
  REQUIRE(r.reasons.size() == 1);
  CHECK(r.reasons[0].find("mean top-k KL") != std::string::npos);
  for (const PromptComparison& c : r.prompts) CHECK(c.status == PromptStatus::Equal);
}

TEST_CASE("without logprobs the texts are compared, within the noise floor's rate of differences") {
  GoldenRun a, b;
  for (int i = 0; i < 32; ++i) {
    a.answers.push_back(text_only("p" + std::to_string(i), "answer " + std::to_string(i)));
    b.answers.push_back(text_only("p" + std::to_string(i), "answer " + std::to_string(i)));
  }
  b.answers[5].text_hash = "changed";
  EquivalenceResult r = compare_runs(a, b, kRules, std::nullopt);
  CHECK(r.text_prompts == 32);
  CHECK(r.text_differences == 1);
  CHECK(r.prompts[5].status == PromptStatus::TextDiffers);
  CHECK(r.verdict == EquivalenceVerdict::NotEquivalent);  // a bit-stable floor: any difference fails

  NoiseFloor floor;  // the build itself differed on one prompt of 32 between its runs
  floor.prompts = 32;
  floor.text_differences = 1;
  r = compare_runs(a, b, kRules, floor);
  CHECK(r.text_rate_limit == Approx(1.0 / 32));
  CHECK(r.verdict == EquivalenceVerdict::Equivalent);

  b.answers[6].text_hash = "changed too";
  r = compare_runs(a, b, kRules, floor);
  CHECK(r.verdict == EquivalenceVerdict::NotEquivalent);
  CHECK(r.reasons[0].find("2 of 32 prompts judged on text differ") != std::string::npos);
}

TEST_CASE("an answer that ends early forks where it ends") {
  GoldenRun a = confident_run(1);
  GoldenRun b = a;
  b.answers[0].steps.resize(2);
  const PromptComparison c = compare_answers(a.answers[0], b.answers[0], kRules);
  REQUIRE(c.fork_index);
  CHECK(*c.fork_index == 2);
  CHECK(c.a.token == " is");
  CHECK(c.b.token == "<end>");
  CHECK_FALSE(c.b.margin);
  CHECK(c.status == PromptStatus::Fork);  // the reference was sure of " is"
}

TEST_CASE("prompts in one run only are missing; no prompt in common is insufficient") {
  GoldenRun a = confident_run(3);
  GoldenRun b = confident_run(2);
  b.answers.push_back(answer("extra", {sure("x")}));
  EquivalenceResult r = compare_runs(a, b, kRules, std::nullopt);
  REQUIRE(r.prompts.size() == 4);
  CHECK(r.prompts[2].status == PromptStatus::Missing);
  CHECK(r.prompts[3].prompt_id == "extra");
  CHECK(r.prompts[3].status == PromptStatus::Missing);
  CHECK(r.prompts[2].in_a == Presence::Answered);
  CHECK(r.prompts[2].in_b == Presence::Absent);
  CHECK(r.prompts[3].in_a == Presence::Absent);
  CHECK(describe(r.prompts[3]) == "missing: run a not asked, run b answered");
  CHECK(r.compared() == 2);
  CHECK(r.summary().find("2 of 4 prompts compared") != std::string::npos);
  CHECK(r.verdict == EquivalenceVerdict::Equivalent);

  GoldenRun other;
  other.answers.push_back(answer("elsewhere", {sure("x")}));
  CHECK(compare_runs(a, other, kRules, std::nullopt).verdict == EquivalenceVerdict::Insufficient);
  CHECK(compare_runs(a, GoldenRun{}, kRules, std::nullopt).verdict == EquivalenceVerdict::Insufficient);
}

TEST_CASE("sort_top puts the most likely token first, whatever order the runtime sent") {
  TokenStep s;
  s.top = {{"b", {}, -2.0}, {"a", {}, -0.1}, {"c", {}, -3.0}};
  sort_top(s);
  CHECK(s.top[0].token == "a");
  CHECK(s.top[1].token == "b");
  CHECK(s.top[2].token == "c");
}

TEST_CASE("a prompt asked and not answered is missing on that side, never an equal or a text difference") {
  // Both runs asked all three; run b's second request brought no answer (refused, stalled):
  // it is stored with no text hash (core/golden.h unanswered_golden).
  GoldenRun a = confident_run(3);
  GoldenRun b = confident_run(3);
  b.answers[1] = unanswered_golden("p1");
  CHECK_FALSE(b.answers[1].answered());
  EquivalenceResult r = compare_runs(a, b, kRules, std::nullopt);
  REQUIRE(r.prompts.size() == 3);
  CHECK(r.prompts[1].status == PromptStatus::Missing);
  CHECK(r.prompts[1].in_a == Presence::Answered);
  CHECK(r.prompts[1].in_b == Presence::Unanswered);
  CHECK(describe(r.prompts[1]) == "missing: run a answered, run b asked, not answered");
  CHECK(r.compared() == 2);
  CHECK(r.text_prompts == 0);  // not counted as a text difference
  CHECK(r.verdict == EquivalenceVerdict::Equivalent);

  // Unanswered on both sides: still listed, still missing (the old runs left such a prompt out of both).
  a.answers[1] = unanswered_golden("p1");
  r = compare_runs(a, b, kRules, std::nullopt);
  CHECK(r.prompts[1].status == PromptStatus::Missing);
  CHECK(r.prompts[1].in_a == Presence::Unanswered);
  CHECK(r.compared() == 2);
  CHECK(compare_answers(a.answers[1], b.answers[1], kRules).status == PromptStatus::Missing);

  // The noise floor counts only prompts answered on both sides.
  const NoiseFloor f = noise_floor(a, b, kRules);
  CHECK(f.prompts == 2);
  CHECK(f.text_differences == 0);

  // Nothing answered on one side: nothing compared, insufficient.
  GoldenRun none;
  for (int i = 0; i < 3; ++i) none.answers.push_back(unanswered_golden("p" + std::to_string(i)));
  const EquivalenceResult n = compare_runs(confident_run(3), none, kRules, std::nullopt);
  CHECK(n.prompts.size() == 3);
  CHECK(n.compared() == 0);
  CHECK(n.verdict == EquivalenceVerdict::Insufficient);
}

TEST_CASE("an unanswered prompt survives the store: its row has no text hash and decodes as unanswered") {
  GoldenAnswerRow row = golden_row(unanswered_golden("context/8192/0"));
  row.run = "r1";
  row.set_hash = "s";
  CHECK(row.text_hash.empty());
  GoldenAnswerRow answered = golden_row(answer("factual/00", {sure("The")}));
  answered.run = "r1";
  answered.set_hash = "s";
  const auto runs = group_golden_runs({answered, row});
  REQUIRE(runs.size() == 1);
  REQUIRE(runs[0].answers.answers.size() == 2);
  CHECK(runs[0].answers.answers[0].answered());
  CHECK_FALSE(runs[0].answers.answers[1].answered());
  CHECK(runs[0].answers.answers[1].steps.empty());
}
