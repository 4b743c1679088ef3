// Same answers across builds (docs/DESIGN.md §3.13) against a REAL
// llama-server, when one is configured:
//   SOAKD_LLAMA_SERVER=/path/to/llama-server  (required, else the test is skipped)
//   SOAKD_LLAMA_MODEL=/path/to/model.gguf     (default: ../shared/models/tiny-qwen3.gguf)
// Three servers of the same binary on loopback: two with the model as it is,
// one with a float of the model overridden so that the numbers move
// (--override-kv qwen3.rope.freq_base=float:1, from 1e6: every position past
// the first is encoded another way; a milder 1e4 moved only near ties on this
// model, which the rule records and passes). `soakd probe --kind equivalence`
// stores each one's golden set whole: the random-weight model never samples
// EOS, and the golden request's own bound (max_tokens 256, which replaces the
// server's -n 64) cuts every prose answer, a third of them in a greedy loop
// (rows `repetition`, judged by the answer rules, their answers stored all
// the same; before the loop was stored, a -n 1024 launch stored 7 of 32), then:
//   - the same binary and model twice is equivalent (`soakctl equivalence`
//     exits 0);
//   - the changed model forks, with a margin above max_fork_margin on some
//     prompt (exit 1), and the canary's golden rule on those stored rows
//     (judges/same_answers.h, the function the daemon's judgment runs)
//     rejects, naming the prompt.
// The second case starts it the ways users get it wrong: a slot too small for
// the 8K prompts' answers (-c 7168: the runtime cuts them short of the bound,
// server_token_cap, still stored) and slots too small for the 8K prompts
// (--parallel 2 -c 4096: refused, stored as asked and not answered).
// Without the variables the program exits 77, which ctest reports as skipped.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>

#include <nlohmann/json.hpp>

#include "judges/judge.h"
#include "judges/same_answers.h"
#include "probes/golden_set.h"
#include "storage/sqlite_store.h"
#include "tests/catch.h"
#include "tests/support/child_process.h"
#include "tests/support/temp_dir.h"

using namespace soak;

namespace {

constexpr int kSkipExitCode = 77;
constexpr int kStartMs = 60'000;
constexpr int kProbeMs = 600'000;  // 32 answers of 64 tokens, two 8K prefills, on a shared 2-core host
const std::string kSoakd = std::string(SOAKD_BINARY_DIR) + "/daemon/soakd";
const std::string kSoakctl = std::string(SOAKD_BINARY_DIR) + "/soakctl/soakctl";

[[noreturn]] void skip(const std::string& why) {
  std::printf("skipped: %s\n", why.c_str());
  std::fflush(stdout);
  std::_Exit(kSkipExitCode);
}

int free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

struct Server {
  int port = 0;
  std::optional<ChildProcess> child;
};

// The tiny model with room for the golden set's 8K prompts: one slot of 16K
// (its own context raised to match), answers cut at 64 tokens where a request
// sends no bound. `launch` replaces those four flags.
const std::vector<std::string> kRoomy{"--parallel", "1", "-c", "16384", "-n", "64"};

Server start(const std::string& bin, const std::string& model, const std::vector<std::string>& extra,
             const std::vector<std::string>& launch = kRoomy) {
  Server s;
  s.port = free_port();
  std::vector<std::string> argv{bin,
                                "-m",
                                model,
                                "--host",
                                "127.0.0.1",
                                "--port",
                                std::to_string(s.port),
                                "--alias",
                                "qwen3.6-35b-a3b",
                                "--jinja",
                                "--metrics",
                                "--slots",
                                "--override-kv",
                                "qwen3.context_length=int:16384"};
  argv.insert(argv.end(), launch.begin(), launch.end());
  argv.insert(argv.end(), extra.begin(), extra.end());
  auto c = ChildProcess::spawn(argv);
  REQUIRE(c);
  s.child.emplace(std::move(*c));
  REQUIRE(s.child->wait_for_line("listening", kStartMs));
  return s;
}

struct Binaries {
  std::string server, model;
};

Binaries binaries() {
  const char* bin = std::getenv("SOAKD_LLAMA_SERVER");
  if (!bin || !*bin) skip("SOAKD_LLAMA_SERVER is not set");
  if (!std::filesystem::exists(bin)) skip(std::string(bin) + " does not exist");
  const char* model_env = std::getenv("SOAKD_LLAMA_MODEL");
  const std::string model =
      model_env && *model_env ? model_env : std::string(SOAKD_SOURCE_DIR) + "/../shared/models/tiny-qwen3.gguf";
  if (!std::filesystem::exists(model)) skip(model + " does not exist (set SOAKD_LLAMA_MODEL)");
  return {bin, model};
}

std::string entry(const std::string& name, int port) {
  return R"({"name": ")" + name + R"(", "model": "qwen3.6-35b-a3b", "runtime": "llama.cpp", "accept_server_cap": true,
               "base_url": "http://127.0.0.1:)" +
         std::to_string(port) + R"("})";
}

std::string write_config(const TempDir& tmp, const std::vector<std::pair<std::string, int>>& candidates) {
  const std::string cfg = tmp.path() + "/soakd.json";
  std::ofstream out(cfg);
  out << R"({"store": ")" << tmp.path() << R"(/soakd.db", "log": ")" << tmp.path()
      << R"(/soakd.log", "defaults": {"limits": {"stall_timeout": "60s", "wall_timeout": "30m"}}, "candidates": [)";
  for (size_t i = 0; i < candidates.size(); ++i)
    out << (i ? ", " : "") << entry(candidates[i].first, candidates[i].second);
  out << "]}";
  return cfg;
}

void probe(const std::string& cfg, const std::string& name) {
  const auto t0 = std::chrono::steady_clock::now();
  RunResult r = run_program({kSoakd, "probe", "--config", cfg, "--candidate", name, "--kind", "equivalence"}, kProbeMs);
  INFO(name << ": " << r.out << r.err);
  REQUIRE(r.exit_code != 2);  // ran (loops and caps are rows that are not clean: exit 1)
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0);
  std::printf("golden run of %s: %lld ms\n", name.c_str(), static_cast<long long>(ms.count()));
}

// A candidate's rows and its latest stored run, with its rows' outcomes counted.
struct Stored {
  std::vector<ProbeResult> rows;
  StoredGoldenRun run;
  std::map<Outcome, int> outcomes;
  int answered = 0;
};

Stored stored(Store& st, const CandidateRow& c) {
  Stored s;
  ProbeQuery q;
  q.candidate_id = c.id;
  s.rows = *st.probe_results(q);
  const auto runs = group_golden_runs(*st.golden_answers(c.id));
  REQUIRE_FALSE(runs.empty());
  s.run = runs.back();
  for (const auto& r : s.rows) ++s.outcomes[r.outcome];
  for (const auto& a : s.run.answers.answers) s.answered += a.answered();
  std::string counts;
  for (const auto& [o, n] : s.outcomes) counts += std::string(to_string(o)) + " " + std::to_string(n) + "; ";
  std::printf("%s: %d of %zu stored answered; rows: %s\n", c.name.c_str(), s.answered, s.run.answers.answers.size(),
              counts.c_str());
  return s;
}

}  // namespace

TEST_CASE("a real llama-server: the same model twice is equivalent; a model whose numbers moved forks") {
  const Binaries b = binaries();
  Server a = start(b.server, b.model, {});
  Server twin = start(b.server, b.model, {});
  Server moved = start(b.server, b.model, {"--override-kv", "qwen3.rope.freq_base=float:1"});

  TempDir tmp;
  const std::string cfg = write_config(tmp, {{"a", a.port}, {"b", twin.port}, {"moved", moved.port}});
  // The baseline build twice (its noise floor), the others once each.
  for (const char* name : {"a", "a", "b", "moved"}) probe(cfg, name);

  auto opened = SqliteStore::open(tmp.path() + "/soakd.db", OpenMode::ReadOnly);
  REQUIRE(opened.ok());
  Store& st = **opened;
  std::map<std::string, CandidateRow> rows;
  for (const auto& c : *st.candidates()) rows[c.name] = c;
  REQUIRE(rows.size() == 3);
  for (const auto& [name, row] : rows) {
    INFO(name);
    const Stored s = stored(st, row);
    // 32 of 32 stored, each with its tokens and logprobs, loops included.
    CHECK(s.run.answers.answers.size() == 32);
    CHECK(s.answered == 32);
    for (const auto& ans : s.run.answers.answers) {
      INFO(ans.prompt_id);
      CHECK(ans.logprobs == LogprobShape::TopK);
      CHECK_FALSE(ans.steps.empty());
    }
    // Every answer ran to its natural end or to soakd's bound, never to -n 64:
    // no runtime cap; the loops are repetition rows.
    CHECK(s.outcomes.count(Outcome::ServerTokenCap) == 0);
    for (const auto& r : s.rows) {
      INFO(r.workload_id << " " << r.extra_json);
      CHECK((r.outcome == Outcome::Clean || r.outcome == Outcome::Repetition));
      if (r.finish_reason == "length") CHECK(r.completion_tokens == probes::kGoldenMaxTokens);
    }
  }

  // The same binary and model: the same answers, within the floor.
  RunResult same = run_program({kSoakctl, "--db", tmp.path() + "/soakd.db", "equivalence", "a", "b"}, kStartMs);
  INFO(same.out << same.err);
  CHECK(same.exit_code == 0);

  // The moved model: a fork with a clear margin.
  RunResult diff = run_program({kSoakctl, "--db", tmp.path() + "/soakd.db", "equivalence", "a", "moved"}, kStartMs);
  INFO(diff.out << diff.err);
  CHECK(diff.exit_code == 1);
  CHECK(diff.out.find(": fork at token ") != std::string::npos);

  // The canary's rule on the stored rows: the moved build against the baseline's runs.
  JudgeInput in;
  in.recipe.stage = StageKind::Canary;
  in.recipe.end = StageEnd::Completed;
  in.recipe.candidate_id = rows["moved"].id;
  in.recipe.slots_planned = in.recipe.slots_run = 1;
  EquivalenceRecipe e;
  e.reference_id = rows["a"].id;
  e.top1 = TopOneRule::UnconstrainedOnly;  // llama-server's logprobs come before the grammar
  in.recipe.equivalence = e;
  ProbeQuery q;
  q.candidate_id = rows["moved"].id;
  in.candidate_rows = *st.probe_results(q);
  REQUIRE(in.candidate_rows.size() == 32);
  in.golden = *st.golden_answers(rows["moved"].id);
  in.reference_golden = *st.golden_answers(rows["a"].id);
  const VerdictRow v = judge_stage(in);
  INFO(v.reason);
  CHECK(v.state == VerdictState::Rejected);
  bool named = false;
  for (const auto& m : v.metrics)
    if (m.metric.rfind("equivalence/", 0) == 0 && m.metric != "equivalence/kl" && m.metric != "equivalence/text" &&
        m.result == MetricResult::Fail && m.reason.find("fork at token") != std::string::npos)
      named = true;
  CHECK(named);
  CHECK(v.reason.find("equivalence/") != std::string::npos);
}

TEST_CASE("a real llama-server started the ways users get it wrong: every prompt asked is stored") {
  const Binaries b = binaries();
  // One slot of 7168: the 8K prompts' answers fill it before soakd's bound.
  Server small = start(b.server, b.model, {}, {"--parallel", "1", "-c", "7168"});
  // Two slots of 2048: the 8K prompts do not fit.
  Server split = start(b.server, b.model, {}, {"--parallel", "2", "-c", "4096"});
  TempDir tmp;
  const std::string cfg = write_config(tmp, {{"small", small.port}, {"split", split.port}});
  probe(cfg, "small");
  probe(cfg, "split");

  auto opened = SqliteStore::open(tmp.path() + "/soakd.db", OpenMode::ReadOnly);
  REQUIRE(opened.ok());
  Store& st = **opened;
  for (const auto& c : *st.candidates()) {
    INFO(c.name);
    const Stored s = stored(st, c);
    REQUIRE(s.run.answers.answers.size() == 32);
    std::map<std::string, const ProbeResult*> row_of;
    for (const auto& r : s.rows) row_of[r.workload_id] = &r;
    for (const auto& ans : s.run.answers.answers) {
      INFO(ans.prompt_id);
      const ProbeResult* r = row_of["equivalence/" + ans.prompt_id];
      REQUIRE(r);
      const bool large = ans.prompt_id.rfind("context/8192/", 0) == 0;
      if (!large) {
        CHECK(ans.answered());
        CHECK((r->outcome == Outcome::Clean || r->outcome == Outcome::Repetition));
      } else if (c.name == "small") {
        // Cut by the full slot short of the bound: the runtime's cap, the answer stored as far as it ran.
        CHECK(r->outcome == Outcome::ServerTokenCap);
        CHECK(r->detail.find("slot context is full") != std::string::npos);
        REQUIRE(ans.answered());
        CHECK(static_cast<int64_t>(ans.steps.size()) == r->completion_tokens);
        CHECK(static_cast<int64_t>(ans.steps.size()) < probes::kGoldenMaxTokens);
      } else {
        // Refused: asked, not answered, and said so.
        CHECK(r->outcome == Outcome::ContextExceeded);
        CHECK_FALSE(ans.answered());
      }
    }
    CHECK(s.answered == (c.name == "small" ? 32 : 30));
  }
  // The refused prompts are missing from the comparison, counted, not dropped.
  RunResult cmp =
      run_program({kSoakctl, "--db", tmp.path() + "/soakd.db", "equivalence", "small", "split", "--json"}, kStartMs);
  INFO(cmp.out << cmp.err);
  const auto j = nlohmann::json::parse(cmp.out.substr(cmp.out.find('{')));
  CHECK(j["compared"] == 30);
  CHECK(j["prompts"].size() == 32);
}
