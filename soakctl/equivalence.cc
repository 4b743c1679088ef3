// `soakctl equivalence A B`: the latest stored golden-set runs of two
// candidates (or two builds of one) compared prompt by prompt
// (judges/equivalence.h, docs/DESIGN.md §3.13); exit 0 when equivalent, 1 when
// not, like `verdict`. The rules are B's as its stages judge it: those its
// latest judged canary or soak stored in its recipe, else its config's (with
// --config), else the defaults; the output says which.
#include <cstdio>
#include <string>

#include "judges/equivalence.h"
#include "judges/recipe.h"
#include "probes/runtimes/catalog.h"
#include "soakctl/common.h"

namespace soak::soakctl {

namespace {

struct Side {
  CandidateRow cand;
  std::vector<StoredGoldenRun> runs;
};

std::optional<Side> load(const Ctl& c, Store& st, const std::string& name, const std::optional<std::string>& build,
                         bool& store_failed) {
  auto row = lookup_candidate(c, st, name, build);
  if (!row) return std::nullopt;
  auto answers = st.golden_answers(row->id);
  if (!answers) {
    c.err << "soakctl: " << answers.message() << "\n";
    store_failed = true;
    return std::nullopt;
  }
  return Side{*row, group_golden_runs(*answers)};
}

std::string label(const CandidateRow& r) { return r.name + " at " + r.build; }

std::string fmt_number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

struct Rules {
  EquivalenceSettings rules;
  TopOneRule top1 = TopOneRule::AllPrompts;
  std::string from = "the defaults";
};

// B's rules: its latest stored recipe with a golden-set block, else its
// config's when soakctl was given the config, else the defaults.
Result<Rules> rules_for(Store& st, const Args& a, const CandidateRow& b) {
  Rules out;
  // The runtime's own: whether its logprobs come before a grammar.
  if (probes::builtin_runtime(b.runtime).dialect.grammar_logprobs == probes::GrammarLogprobs::BeforeGrammar)
    out.top1 = TopOneRule::UnconstrainedOnly;
  auto verdicts = st.verdicts(b.id);
  if (!verdicts) return verdicts.error();
  for (auto it = verdicts->rbegin(); it != verdicts->rend(); ++it) {
    auto recipe = recipe_from_json(it->judge_input_json);
    if (!recipe || !recipe->recipe.equivalence) continue;
    out.rules = recipe->recipe.equivalence->rules;
    out.top1 = recipe->recipe.equivalence->top1;
    out.from = "the recipe of " + b.name + "'s " + it->stage + " verdict (" + iso_utc(it->wall_ms) + ")";
    return out;
  }
  const auto cfg_path = a.get("config");
  if (!cfg_path) return out;
  auto cfg = load_config(*cfg_path);
  if (!cfg) return cfg.error();
  for (const CandidateConfig& c : cfg->candidates) {
    if (c.name != b.name) continue;
    out.rules = c.settings.equivalence;
    out.from = b.name + "'s config (" + *cfg_path + ")";
  }
  return out;
}

json prompt_json(const PromptComparison& p) {
  json j;
  j["prompt"] = p.prompt_id;
  j["status"] = to_string(p.status);
  j["fork_index"] = p.fork_index ? json(*p.fork_index) : json(nullptr);
  j["a"] = {{"token", p.a.token}, {"margin", p.a.margin ? json(*p.a.margin) : json(nullptr)}};
  j["b"] = {{"token", p.b.token}, {"margin", p.b.margin ? json(*p.b.margin) : json(nullptr)}};
  j["compared_positions"] = p.compared_positions;
  j["top1_agreement"] = p.top1_agreement;
  j["mean_kl"] = p.mean_kl();
  j["detail"] = describe(p);
  return j;
}

int cmd_equivalence(const Ctl& c, const Args& a, Store& st) {
  const auto& names = a.positionals();  // the dispatcher checked: command, A, B
  bool store_failed = false;
  auto side_a = load(c, st, names[1], a.get("build-a"), store_failed);
  if (!side_a) return kCtlExitStore;
  auto side_b = load(c, st, names[2], a.get("build-b"), store_failed);
  if (!side_b) return kCtlExitStore;
  for (const Side* s : {&*side_a, &*side_b}) {
    if (s->runs.empty()) {
      c.err << "soakctl equivalence: " << label(s->cand)
            << " has no stored golden-set run (soakd probe --kind equivalence runs one; the canary runs it when "
               "equivalence.enabled)\n";
      return kCtlExitUndecided;
    }
  }
  const StoredGoldenRun& run_a = side_a->runs.back();
  const StoredGoldenRun& run_b = side_b->runs.back();
  if (run_a.set_hash != run_b.set_hash) {
    c.err << "soakctl equivalence: the latest runs asked different golden sets (" << run_a.set_hash << " vs "
          << run_b.set_hash << "): a changed fixture seed or generator; nothing to compare\n";
    return kCtlExitUndecided;
  }
  const auto chosen = rules_for(st, a, side_b->cand);
  if (!chosen) {
    c.err << "soakctl: " << chosen.message() << "\n";
    return kCtlExitStore;
  }
  const EquivalenceSettings& rules = chosen->rules;
  // The noise floor: B's own last two runs of the same set, else A's.
  std::optional<NoiseFloor> floor;
  std::string floor_from = "none (neither side has two runs of this set): a floor of zero";
  for (const Side* s : {&*side_b, &*side_a}) {
    std::vector<const StoredGoldenRun*> same;
    for (const auto& r : s->runs)
      if (r.set_hash == run_a.set_hash) same.push_back(&r);
    if (same.size() < 2) continue;
    floor = noise_floor(same[same.size() - 2]->answers, same.back()->answers, rules, chosen->top1);
    floor_from =
        label(s->cand) + " against itself (runs " + same[same.size() - 2]->run + " and " + same.back()->run + ")";
    break;
  }
  const EquivalenceResult r = compare_runs(run_a.answers, run_b.answers, rules, floor, chosen->top1);
  const std::string rules_text =
      "max_fork_margin " + fmt_number(rules.max_fork_margin) + ", kl_factor " + fmt_number(rules.kl_factor) +
      ", min_kl " + fmt_number(rules.min_kl) +
      (chosen->top1 == TopOneRule::UnconstrainedOnly ? ", tool-call and JSON-schema prompts exempt from not-top-1"
                                                     : "") +
      " (from " + chosen->from + ")";
  const int code = r.verdict == EquivalenceVerdict::Equivalent      ? kCtlExitOk
                   : r.verdict == EquivalenceVerdict::NotEquivalent ? kCtlExitRejected
                                                                    : kCtlExitUndecided;
  if (a.flag("json")) {
    json j;
    j["a"] = {{"candidate", side_a->cand.name}, {"build", side_a->cand.build}, {"run", run_a.run}};
    j["b"] = {{"candidate", side_b->cand.name}, {"build", side_b->cand.build}, {"run", run_b.run}};
    j["verdict"] = to_string(r.verdict);
    j["noise_floor_from"] = floor_from;
    j["rules"] = {{"max_fork_margin", rules.max_fork_margin},
                  {"kl_factor", rules.kl_factor},
                  {"min_kl", rules.min_kl},
                  {"constrained_exempt_from_top1", chosen->top1 == TopOneRule::UnconstrainedOnly},
                  {"from", chosen->from}};
    j["summary"] = r.summary();
    j["compared"] = r.compared();  // answered on both sides, of j["prompts"]'s size
    j["reasons"] = r.reasons;
    j["prompts"] = json::array();
    for (const auto& p : r.prompts) j["prompts"].push_back(prompt_json(p));
    j["exit_code"] = code;
    c.out << j.dump(2) << "\n";
    return code;
  }
  c.out << label(side_a->cand) << " (run " << run_a.run << ", " << iso_utc(run_a.wall_ms) << ") vs "
        << label(side_b->cand) << " (run " << run_b.run << ", " << iso_utc(run_b.wall_ms) << ")\n";
  c.out << "rules: " << rules_text << "\n";
  c.out << "noise floor: " << floor_from << "\n";
  c.out << r.summary() << "\n";
  for (const auto& p : r.prompts)
    if (p.status != PromptStatus::Equal) c.out << "  " << p.prompt_id << ": " << describe(p) << "\n";
  for (const auto& reason : r.reasons) c.out << "fails: " << reason << "\n";
  return code;
}

}  // namespace

const Command kEquivalenceCommand{
    "equivalence", Operand::TwoCandidates, {{"json"}, {"build-a", "build-b"}}, OpenMode::ReadOnly, cmd_equivalence};

}  // namespace soak::soakctl
