// The golden set's stage rule (judges/same_answers.cc, docs/DESIGN.md §3.13)
// on hand-built stored runs: a canary's last run against the baseline build's
// latest stored run with its own first and last runs as the noise floor, a
// soak's against its canary's runs. A changed answer rejects naming the
// prompt, a near tie passes recorded, text-only answers stand on the floor's
// rate, a greedy token below its top-1 fails (constrained prompts exempt where
// the runtime's logprobs come before the grammar), and a baseline without
// stored runs skips the rule with a note.
#include <cmath>

#include "judges/judge.h"
#include "judges/recipe.h"
#include "judges/same_answers.h"
#include "tests/catch.h"
#include "tests/unit/judge_rows.h"

using namespace soak;
using namespace soak::testing;

namespace {

constexpr int64_t kCanaryStage = 7;  // input_for's stage id
constexpr int64_t kSoakStage = 9;
const std::string kSet = "set-1";

TokenChoice choice(const std::string& t, double p) { return TokenChoice{t, std::nullopt, std::log(p)}; }

// A confident greedy position: `t` at 0.9, a runner-up at 0.05 (a margin of 2.9 nats).
TokenStep sure(const std::string& t) {
  TokenStep s;
  s.chosen = choice(t, 0.9);
  s.top = {choice(t, 0.9), choice(t + "~", 0.05)};
  return s;
}
// A near tie: `t` at 0.49 over `other` at 0.47 (a margin of 0.04 nats).
TokenStep tie(const std::string& t, const std::string& other) {
  TokenStep s;
  s.chosen = choice(t, 0.49);
  s.top = {choice(t, 0.49), choice(other, 0.47)};
  return s;
}
// A greedy token the runtime ranks below `first` by 2.4 nats.
TokenStep below(const std::string& t, const std::string& first) {
  TokenStep s;
  s.chosen = choice(t, 0.08);
  s.top = {choice(first, 0.88), choice(t, 0.08)};
  return s;
}

enum class Flavour { Steady, Changed, NearTie, NotTop1 };

// A prompt's answer in a build of `f`: "The sky is blue" with a near tie at
// token 2; changed answers json_schema/00 another way at token 1.
GoldenAnswer answer(const std::string& id, Flavour f) {
  GoldenAnswer a;
  a.prompt_id = id;
  a.logprobs = LogprobShape::TopK;
  const bool changed = f == Flavour::Changed && id == "json_schema/00";
  a.steps = {sure("The"), changed ? sure(" CHANGED") : sure(" sky"),
             f == Flavour::NearTie ? tie(" was", " is") : tie(" is", " was"),
             f == Flavour::NotTop1 ? below(" blue", " green") : sure(" blue")};
  std::string text;
  for (const auto& s : a.steps) text += s.chosen.token;
  a.text_hash = text;  // a stand-in: equal texts, equal hashes
  return a;
}

const std::vector<std::string> kPrompts{"factual/00", "factual/01", "json_schema/00", "tool_call/00"};

int64_t next_id = 1;

// One stored run: a row per prompt.
std::vector<GoldenAnswerRow> run(int64_t candidate, std::optional<int64_t> stage, const std::string& name, Flavour f) {
  std::vector<GoldenAnswerRow> rows;
  for (const auto& p : kPrompts) {
    GoldenAnswerRow r = golden_row(answer(p, f));
    r.id = next_id++;
    r.candidate_id = candidate;
    r.stage_id = stage;
    r.run = name;
    r.set_hash = kSet;
    rows.push_back(std::move(r));
  }
  return rows;
}
// A text-only run (LM Studio, oMLX): hashes only; `differ` answers another text.
std::vector<GoldenAnswerRow> text_run(int64_t candidate, std::optional<int64_t> stage, const std::string& name,
                                      const std::string& differ = "") {
  std::vector<GoldenAnswerRow> rows;
  for (const auto& p : kPrompts) {
    GoldenAnswerRow r;
    r.id = next_id++;
    r.candidate_id = candidate;
    r.stage_id = stage;
    r.run = name;
    r.set_hash = kSet;
    r.prompt_id = p;
    r.text_hash = p == differ ? "other" : "hash-" + p;
    rows.push_back(std::move(r));
  }
  return rows;
}

void append(std::vector<GoldenAnswerRow>& to, const std::vector<GoldenAnswerRow>& rows) {
  to.insert(to.end(), rows.begin(), rows.end());
}

// A clean two-hour canary of a later build (no speed baseline: the golden set
// has its own reference), whose golden rule compares with candidate row kBaseline.
struct Canary {
  Rows cand{kCandidate, 1};
  JudgeInput in = input_for(StageKind::Canary);
  Canary() {
    in.recipe.baseline_mode = BaselineMode::None;
    in.recipe.baseline_id.reset();
    in.recipe.equivalence = EquivalenceRecipe{};
    in.recipe.equivalence->reference_id = kBaseline;
    for (int i = 0; i < 120; ++i) {
      cand.add(ProbeKind::Health, "health");
      cand.add(ProbeKind::Scrape, "scrape");
    }
    for (int i = 0; i < 12; ++i)
      for (ProbeKind kind : probe_kinds_for(TaskKind::Functional))
        cand.perf(kind, std::string(to_string(kind)), jittered(Perf{}, i));
  }
  // The baseline's stored runs (its canary's two and its soak's), this canary's two.
  void builds(Flavour candidate, Flavour baseline = Flavour::Steady) {
    append(in.reference_golden, run(kBaseline, 3, "b1", baseline));
    append(in.reference_golden, run(kBaseline, 3, "b2", baseline));
    append(in.reference_golden, run(kBaseline, 5, "b3", baseline));
    append(in.golden, run(kCandidate, kCanaryStage, "c1", candidate));
    append(in.golden, run(kCandidate, kCanaryStage, "c2", candidate));
  }
  VerdictRow judge() {
    in.candidate_rows = cand.rows;
    return judge_stage(in);
  }
};

}  // namespace

TEST_CASE("golden canary: the baseline's own answers again pass, and say what they were compared with") {
  Canary c;
  c.builds(Flavour::Steady);
  const VerdictRow v = c.judge();
  INFO(v.reason);
  CHECK(v.state == VerdictState::Promoted);
  const auto* m = find_metric(v, "equivalence");
  REQUIRE(m);
  CHECK(m->metric == "equivalence");
  CHECK(m->result == MetricResult::Pass);
  CHECK(contains(m->reason, "run c2 against the baseline (candidate row 2) run b3"));
  CHECK(contains(m->reason, "noise floor from this canary's runs c1 and c2"));
  CHECK(m->n == 4);
  // Equal prompts are not listed one by one.
  for (const auto& x : v.metrics) CHECK(x.metric.rfind("equivalence/factual", 0) != 0);
}

TEST_CASE("golden canary: a changed answer with a clear margin rejects, naming the prompt and its fork") {
  Canary c;
  c.builds(Flavour::Changed);
  const VerdictRow v = c.judge();
  INFO(v.reason);
  CHECK(v.state == VerdictState::Rejected);
  CHECK(contains(v.reason, "equivalence/json_schema/00: fork at token 1"));
  const auto* m = find_metric(v, "equivalence/json_schema/00");
  REQUIRE(m);
  CHECK(m->result == MetricResult::Fail);
  CHECK(contains(m->reason, "\" sky\" (margin 2.890) vs \" CHANGED\" (margin 2.890)"));
  CHECK(find_metric(v, "equivalence")->result == MetricResult::Fail);
  // The other prompts answered the same: no row of their own.
  CHECK_FALSE(find_metric(v, "equivalence/factual/00"));
}

TEST_CASE("golden canary: near-tie forks pass and are recorded") {
  Canary c;
  c.builds(Flavour::NearTie);
  const VerdictRow v = c.judge();
  INFO(v.reason);
  CHECK(v.state == VerdictState::Promoted);
  for (const auto& p : kPrompts) {
    const auto* m = find_metric(v, "equivalence/" + p);
    REQUIRE(m);
    CHECK(m->result == MetricResult::Pass);
    CHECK(contains(m->reason, "recorded, not failed"));
    CHECK(contains(m->reason, "near_tie at token 2"));
  }
  // Before the forks the distributions agree: no divergence.
  const auto* kl = find_metric(v, "equivalence/kl");
  REQUIRE(kl);
  CHECK(kl->result == MetricResult::Pass);
  CHECK(kl->estimate == Approx(0).margin(1e-12));
}

TEST_CASE("golden canary: a greedy token below its top-1 fails; constrained prompts exempt before a grammar") {
  Canary c;
  c.builds(Flavour::NotTop1);
  const VerdictRow v = c.judge();
  INFO(v.reason);
  CHECK(v.state == VerdictState::Rejected);
  const auto* m = find_metric(v, "equivalence/factual/00");
  REQUIRE(m);
  CHECK(m->result == MetricResult::Fail);
  CHECK(contains(m->reason, "greedy \" blue\" is not its top-1 \" green\""));
  CHECK(find_metric(v, "equivalence/json_schema/00")->result == MetricResult::Fail);

  // llama-server reports the raw logits' probabilities, before the grammar: a
  // tool call's or a JSON schema's token below its top-1 is the grammar's doing.
  Canary pre;
  pre.builds(Flavour::NotTop1);
  pre.in.recipe.equivalence->top1 = TopOneRule::UnconstrainedOnly;
  const VerdictRow w = pre.judge();
  CHECK(w.state == VerdictState::Rejected);
  CHECK(find_metric(w, "equivalence/factual/00")->result == MetricResult::Fail);
  CHECK_FALSE(find_metric(w, "equivalence/json_schema/00"));
  CHECK_FALSE(find_metric(w, "equivalence/tool_call/00"));
}

TEST_CASE("golden canary: text-only answers stand on the noise floor's rate of differences") {
  // The build differs from itself on one prompt of four: one difference from the baseline is within it.
  Canary within;
  append(within.in.reference_golden, text_run(kBaseline, 3, "b1"));
  append(within.in.golden, text_run(kCandidate, kCanaryStage, "c1", "factual/01"));
  append(within.in.golden, text_run(kCandidate, kCanaryStage, "c2"));
  append(within.in.golden, text_run(kCandidate, kCanaryStage, "c3", "factual/00"));
  VerdictRow v = within.judge();
  INFO(v.reason);
  CHECK(v.state == VerdictState::Promoted);
  REQUIRE(find_metric(v, "equivalence/text"));
  CHECK(find_metric(v, "equivalence/text")->result == MetricResult::Pass);
  CHECK(find_metric(v, "equivalence/factual/00")->result == MetricResult::Pass);  // recorded
  CHECK(contains(find_metric(v, "equivalence/factual/00")->reason, "within the noise floor's rate"));

  // A bit-stable build (its two runs agree): any difference from the baseline is over its floor.
  Canary over;
  append(over.in.reference_golden, text_run(kBaseline, 3, "b1"));
  append(over.in.golden, text_run(kCandidate, kCanaryStage, "c1", "factual/00"));
  append(over.in.golden, text_run(kCandidate, kCanaryStage, "c2", "factual/00"));
  v = over.judge();
  INFO(v.reason);
  CHECK(v.state == VerdictState::Rejected);
  CHECK(contains(v.reason, "equivalence: 1 of 4 prompts without logprobs answer another text"));
  CHECK(find_metric(v, "equivalence/text")->result == MetricResult::Fail);
  CHECK(find_metric(v, "equivalence/factual/00")->result == MetricResult::Fail);
}

TEST_CASE("golden canary: without the baseline's stored runs the rule is skipped with a note") {
  Canary c;
  append(c.in.golden, run(kCandidate, kCanaryStage, "c1", Flavour::Changed));
  append(c.in.golden, run(kCandidate, kCanaryStage, "c2", Flavour::Changed));
  const VerdictRow v = c.judge();
  INFO(v.reason);
  CHECK(v.state == VerdictState::Promoted);
  const auto* m = find_metric(v, "equivalence");
  REQUIRE(m);
  CHECK(m->result == MetricResult::Insufficient);
  CHECK(contains(m->reason, "the baseline (candidate row 2) has no stored golden-set run"));
  // A first build: nothing to compare with, its runs are stored for the next.
  Canary first;
  first.in.recipe.equivalence->reference_id.reset();
  append(first.in.golden, run(kCandidate, kCanaryStage, "c1", Flavour::Steady));
  const VerdictRow f = first.judge();
  CHECK(f.state == VerdictState::Promoted);
  CHECK(contains(find_metric(f, "equivalence")->reason, "first build"));
  // No equivalence block (disabled, pooling, an older recipe): no rule at all.
  Canary off;
  off.in.recipe.equivalence.reset();
  append(off.in.golden, run(kCandidate, kCanaryStage, "c1", Flavour::Changed));
  CHECK_FALSE(find_metric(off.judge(), "equivalence"));
}

TEST_CASE("golden soak: its end run against its own canary's runs (drift over a week)") {
  auto soak = [](Flavour end) {
    JudgeInput in = input_for(StageKind::Soak);
    in.recipe.stage_id = kSoakStage;
    in.recipe.equivalence = EquivalenceRecipe{};
    in.recipe.equivalence->reference_id = kCandidate;
    append(in.golden, run(kCandidate, kCanaryStage, "c1", Flavour::Steady));
    append(in.golden, run(kCandidate, kCanaryStage, "c2", Flavour::Steady));
    append(in.golden, run(kCandidate, kSoakStage, "s1", end));
    return in;
  };
  const auto same = compare_golden(soak(Flavour::Steady).recipe, soak(Flavour::Steady).golden, {});
  REQUIRE(same);
  REQUIRE(same->result);
  CHECK(same->result->verdict == EquivalenceVerdict::Equivalent);
  CHECK(same->reference == "its canary (stage 7)");
  CHECK(same->reference_run == "c2");
  CHECK(same->floor_from == "its canary's runs c1 and c2");

  const VerdictRow v = judge_stage(soak(Flavour::Changed));
  INFO(v.reason);
  CHECK(v.state == VerdictState::Rejected);
  CHECK(contains(v.reason, "equivalence/json_schema/00"));
  // The same stored rows, the same verdict (explain recomputes it).
  const VerdictRow again = judge_stage(soak(Flavour::Changed));
  CHECK(again.reason == v.reason);
  CHECK(again.metrics.size() == v.metrics.size());
}

TEST_CASE("golden recipe: the rules, the reference and the golden rows' bound are stored for a recompute") {
  StoredRecipe s;
  s.recipe = input_for(StageKind::Canary).recipe;
  EquivalenceRecipe e;
  e.rules.max_fork_margin = 0.25;
  e.rules.kl_factor = 3;
  e.rules.min_kl = 0.002;
  e.reference_id = kBaseline;
  e.top1 = TopOneRule::UnconstrainedOnly;
  s.recipe.equivalence = e;
  s.rows.max_ids.golden = 4242;
  auto back = recipe_from_json(recipe_to_json(s));
  REQUIRE(back.ok());
  REQUIRE(back->recipe.equivalence);
  CHECK(*back->recipe.equivalence == e);
  CHECK(back->rows.max_ids.golden == 4242);
  // A first build's canary: no reference.
  s.recipe.equivalence->reference_id.reset();
  back = recipe_from_json(recipe_to_json(s));
  REQUIRE(back.ok());
  CHECK_FALSE(back->recipe.equivalence->reference_id);
  // A recipe without the golden set keeps the shape earlier verdicts have.
  StoredRecipe plain;
  plain.recipe = input_for(StageKind::Canary).recipe;
  CHECK_FALSE(contains(recipe_to_json(plain), "equivalence"));
  CHECK_FALSE(contains(recipe_to_json(plain), "golden"));
}

TEST_CASE("golden canary: a prompt its last run asked and got no answer to is counted missing, named, not dropped") {
  Canary c;
  c.builds(Flavour::Steady);
  // The canary's last run: tool_call/00 refused (stored as asked, not answered).
  for (auto& r : c.in.golden)
    if (r.run == "c2" && r.prompt_id == "tool_call/00") {
      r.text_hash.clear();
      r.logprobs = LogprobShape::None;
      r.steps = encode_steps({});
    }
  const VerdictRow v = c.judge();
  INFO(v.reason);
  const auto* m = find_metric(v, "equivalence");
  REQUIRE(m);
  CHECK(m->n == 3);  // the prompts compared, of the 4 asked
  CHECK(contains(m->reason, "3 of 4 prompts compared (answered on both sides)"));
  CHECK(contains(m->reason, "1 missing"));
  const auto* p = find_metric(v, "equivalence/tool_call/00");
  REQUIRE(p);
  CHECK(p->result == MetricResult::Insufficient);
  CHECK(contains(p->reason, "not compared: missing: run a answered, run b asked, not answered"));
}
