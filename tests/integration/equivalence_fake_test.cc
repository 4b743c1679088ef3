// Same answers across builds through the fake runtime (docs/DESIGN.md §3.13):
// `soakd probe --kind equivalence` runs the golden set against a steady build
// (twice: its noise floor) and against a build of each kind the fake has
// (tests/fake_runtime/logprobs.h), then `soakctl equivalence` compares the
// stored runs: a changed answer and a greedy token that is not its top-1
// fail, near-tie forks and a runtime without logprobs pass, and the output
// names the fork. A build whose greedy answers loop has every answer stored
// whole (its rows say repetition); a prompt a runtime refused is stored as
// asked and not answered, and the comparison counts it missing.
#include <fstream>
#include <map>

#include <nlohmann/json.hpp>

#include "core/golden.h"
#include "probes/golden_set.h"
#include "storage/sqlite_store.h"
#include "tests/catch.h"
#include "tests/support/child_process.h"
#include "tests/support/temp_dir.h"

using namespace soak;

namespace {

const std::string kSoakd = std::string(SOAKD_BINARY_DIR) + "/daemon/soakd";
const std::string kSoakctl = std::string(SOAKD_BINARY_DIR) + "/soakctl/soakctl";
const std::string kFake = std::string(SOAKD_BINARY_DIR) + "/tests/fake_runtime/soak-fake-runtime";
constexpr int kWaitMs = 60'000;

struct FakeChild {
  FakeChild(const std::string& answers, const std::string& build, const std::vector<std::string>& more = {}) {
    std::vector<std::string> argv{kFake,   "--scenario", "healthy", "--token-interval-ms", "1", "--answers",
                                  answers, "--build",    build};
    argv.insert(argv.end(), more.begin(), more.end());
    auto c = ChildProcess::spawn(argv);
    REQUIRE(c);
    child.emplace(std::move(*c));
    auto line = child->wait_for_line("listening on 127.0.0.1:", kWaitMs);
    REQUIRE(line);
    url = "http://" + line->substr(line->find("127.0.0.1:"));
    while (!url.empty() && (url.back() == '\n' || url.back() == '\r')) url.pop_back();
  }
  std::optional<ChildProcess> child;
  std::string url;
};

// Two candidates, "base" and "cand", each on its own fake.
std::string write_config(const TempDir& tmp, const std::string& base_url, const std::string& cand_url,
                         const std::string& base_rules = "") {
  const std::string path = tmp.path() + "/soakd.json";
  std::ofstream(path) << R"({"store": ")" << tmp.path() << R"(/soakd.db", "log": ")" << tmp.path() << R"(/soakd.log",
    "defaults": {"long_context_sizes": [1024], "limits": {"stall_timeout": "5s", "wall_timeout": "20s"}},
    "candidates": [
      {"name": "base", "model": "qwen3.6-35b-a3b", "runtime": "llama.cpp", "base_url": ")"
                      << base_url << R"(", "build": {"from": "http"})" << base_rules << R"(},
      {"name": "cand", "model": "qwen3.6-35b-a3b", "runtime": "llama.cpp", "base_url": ")"
                      << cand_url << R"(", "build": {"from": "http"}}]})";
  return path;
}

void probe(const std::string& cfg, const std::string& name) {
  RunResult r = run_program({kSoakd, "probe", "--config", cfg, "--candidate", name, "--kind", "equivalence"}, kWaitMs);
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find(std::to_string(probes::kGoldenSetSize) + " row(s), " + std::to_string(probes::kGoldenSetSize) +
                   " clean") != std::string::npos);
}

struct Compared {
  int exit_code;
  std::string out;
};

// The base build twice (its floor), the other build once, then soakctl; with
// `base_rules` (an "equivalence" member of base's entry) soakctl reads the
// rules from the config.
Compared run_flavour(const std::string& answers, const std::string& base_rules = "") {
  FakeChild base("steady", "b9430");
  FakeChild cand(answers, "b9502");
  TempDir tmp;
  const std::string cfg = write_config(tmp, base.url, cand.url, base_rules);
  probe(cfg, "base");
  probe(cfg, "base");
  probe(cfg, "cand");

  auto st = SqliteStore::open(tmp.path() + "/soakd.db", OpenMode::ReadOnly);
  REQUIRE(st.ok());
  auto cands = *(*st)->candidates();
  REQUIRE(cands.size() == 2);
  for (const auto& c : cands) {
    auto rows = (*st)->golden_answers(c.id);
    REQUIRE(rows.ok());
    const auto runs = group_golden_runs(*rows);
    REQUIRE(runs.size() == (c.name == "base" ? 2u : 1u));
    CHECK(runs.back().answers.answers.size() == static_cast<size_t>(probes::kGoldenSetSize));
    CHECK(runs.back().set_hash == probes::golden_set_hash(probes::golden_set()));
  }

  // The floor is the second side's own runs when it has two: base is B here.
  RunResult r = base_rules.empty()
                    ? run_program({kSoakctl, "--db", tmp.path() + "/soakd.db", "equivalence", "cand", "base"}, kWaitMs)
                    : run_program({kSoakctl, "--config", cfg, "equivalence", "cand", "base"}, kWaitMs);
  INFO(r.out << r.err);
  return {r.exit_code, r.out};
}

}  // namespace

TEST_CASE("equivalence through the fake: the same answers from another build are equivalent") {
  const Compared c = run_flavour("steady");
  CHECK(c.exit_code == 0);
  CHECK(c.out.find("equivalent: 32 of 32 prompts compared (answered on both sides), 32 equal") != std::string::npos);
  CHECK(c.out.find("noise floor: base at b9430") != std::string::npos);
  CHECK(c.out.find("rules: max_fork_margin 0.1, kl_factor 2, min_kl 0.001, tool-call and JSON-schema prompts exempt "
                   "from not-top-1 (from the defaults)") != std::string::npos);
}

TEST_CASE("equivalence through the fake: a changed answer with a clear margin fails, naming the fork") {
  const Compared c = run_flavour("changed");
  CHECK(c.exit_code == 1);
  CHECK(c.out.find("not_equivalent") != std::string::npos);
  // The JSON-schema prompts changed at their second token; each is named with both tokens and margins.
  CHECK(c.out.find("prompt json_schema/00: fork at token 1: \" CHANGED\" (margin 3.150)") != std::string::npos);
  CHECK(c.out.find("prompt factual/00") == std::string::npos);
}

TEST_CASE("equivalence through the fake: forks at near ties only are recorded and pass") {
  const Compared c = run_flavour("near-tie");
  CHECK(c.exit_code == 0);
  CHECK(c.out.find("32 near tie(s)") != std::string::npos);
  CHECK(c.out.find("near_tie at token 2") != std::string::npos);
}

TEST_CASE("equivalence through the fake: the rules come from the candidate's config") {
  // A margin of 0.01 nats: the near ties' 0.04 are clear forks under it.
  const Compared c = run_flavour("near-tie", R"(, "equivalence": {"max_fork_margin": 0.01})");
  CHECK(c.exit_code == 1);
  CHECK(c.out.find("rules: max_fork_margin 0.01, kl_factor 2, min_kl 0.001") != std::string::npos);
  CHECK(c.out.find("(from base's config") != std::string::npos);
  CHECK(c.out.find("fork at token 2") != std::string::npos);
}

TEST_CASE("equivalence through the fake: without logprobs the texts are compared") {
  const Compared c = run_flavour("no-logprobs");
  CHECK(c.exit_code == 0);
  CHECK(c.out.find("text 0/32 differ") != std::string::npos);
}

TEST_CASE("equivalence through the fake: a greedy token that is not its own top-1 fails") {
  const Compared c = run_flavour("not-top1");
  CHECK(c.exit_code == 1);
  CHECK(c.out.find("is not its top-1") != std::string::npos);
}

TEST_CASE("equivalence through the fake: greedy answers that loop are stored whole and compared") {
  FakeChild base("looping", "b9430");
  FakeChild cand("looping", "b9502");
  TempDir tmp;
  const std::string cfg = write_config(tmp, base.url, cand.url);
  for (const char* name : {"base", "cand"}) {
    RunResult r =
        run_program({kSoakd, "probe", "--config", cfg, "--candidate", name, "--kind", "equivalence"}, kWaitMs);
    INFO(r.out << r.err);
    CHECK(r.exit_code == 1);  // the loops are not clean rows
  }
  auto st = SqliteStore::open(tmp.path() + "/soakd.db", OpenMode::ReadOnly);
  REQUIRE(st.ok());
  for (const auto& c : *(*st)->candidates()) {
    INFO(c.name);
    ProbeQuery q;
    q.candidate_id = c.id;
    const auto rows = *(*st)->probe_results(q);
    REQUIRE(rows.size() == static_cast<size_t>(probes::kGoldenSetSize));
    std::map<Outcome, int> outcomes;
    for (const auto& r : rows) {
      ++outcomes[r.outcome];
      const auto extra = nlohmann::json::parse(r.extra_json);
      INFO(r.workload_id << " " << r.extra_json);
      if (r.outcome == Outcome::Repetition) {
        // Cut at soakd's own bound: not a runtime cap, and every token is a stored step.
        CHECK(r.finish_reason == "length");
        CHECK(r.completion_tokens == probes::kGoldenMaxTokens);
        CHECK(extra["stopped_by"] == "soakd_bound");
        CHECK(extra["steps"] == probes::kGoldenMaxTokens);
      }
    }
    // The prose prompts loop (factual, code, context); tool calls and JSON documents stop.
    CHECK(outcomes[Outcome::Repetition] ==
          probes::kGoldenFactual + probes::kGoldenCode + probes::kGoldenContext2K + probes::kGoldenContext8K);
    CHECK(outcomes[Outcome::Clean] == probes::kGoldenToolCall + probes::kGoldenJsonSchema);
    const auto runs = group_golden_runs(*(*st)->golden_answers(c.id));
    REQUIRE(runs.size() == 1);
    CHECK(runs.back().answers.answers.size() == static_cast<size_t>(probes::kGoldenSetSize));
    for (const auto& a : runs.back().answers.answers) {
      CHECK(a.answered());
      CHECK(a.logprobs == LogprobShape::TopK);
    }
  }
  RunResult r = run_program({kSoakctl, "--db", tmp.path() + "/soakd.db", "equivalence", "cand", "base"}, kWaitMs);
  INFO(r.out << r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("equivalent: 32 of 32 prompts compared") != std::string::npos);
}

TEST_CASE("equivalence through the fake: a prompt one runtime refused is missing, counted, never dropped") {
  // 4096 tokens a slot: the two 8K prompts are refused (exceed_context_size_error).
  FakeChild base("steady", "b9430", {"--ctx", "4096"});
  FakeChild cand("steady", "b9502");
  TempDir tmp;
  const std::string cfg = write_config(tmp, base.url, cand.url);
  RunResult refused =
      run_program({kSoakd, "probe", "--config", cfg, "--candidate", "base", "--kind", "equivalence"}, kWaitMs);
  INFO(refused.out << refused.err);
  CHECK(refused.out.find("context_exceeded") != std::string::npos);
  probe(cfg, "cand");
  auto st = SqliteStore::open(tmp.path() + "/soakd.db", OpenMode::ReadOnly);
  REQUIRE(st.ok());
  for (const auto& c : *(*st)->candidates()) {
    if (c.name != "base") continue;
    const auto runs = group_golden_runs(*(*st)->golden_answers(c.id));
    REQUIRE(runs.size() == 1);
    // Every prompt asked is stored; the refused ones without an answer.
    REQUIRE(runs.back().answers.answers.size() == static_cast<size_t>(probes::kGoldenSetSize));
    int unanswered = 0;
    for (const auto& a : runs.back().answers.answers)
      if (!a.answered()) {
        ++unanswered;
        CHECK(a.prompt_id.rfind("context/8192/", 0) == 0);
      }
    CHECK(unanswered == probes::kGoldenContext8K);
  }
  RunResult r =
      run_program({kSoakctl, "--db", tmp.path() + "/soakd.db", "equivalence", "cand", "base", "--json"}, kWaitMs);
  INFO(r.out << r.err);
  const auto j = nlohmann::json::parse(r.out.substr(r.out.find('{')));
  CHECK(j["compared"] == probes::kGoldenSetSize - probes::kGoldenContext8K);
  CHECK(j["prompts"].size() == static_cast<size_t>(probes::kGoldenSetSize));
  int missing = 0;
  for (const auto& p : j["prompts"])
    if (p["status"] == "missing") {
      ++missing;
      CHECK(p["detail"] == "missing: run a answered, run b asked, not answered");
    }
  CHECK(missing == probes::kGoldenContext8K);
  CHECK(j["summary"].get<std::string>().find("30 of 32 prompts compared") != std::string::npos);
}
