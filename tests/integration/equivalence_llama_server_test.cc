// Same answers across builds (docs/DESIGN.md §3.13) against a REAL
// llama-server, when one is configured:
//   SOAKD_LLAMA_SERVER=/path/to/llama-server  (required, else the test is skipped)
//   SOAKD_LLAMA_MODEL=/path/to/model.gguf     (default: ../shared/models/tiny-qwen3.gguf)
// Three servers of the same binary on loopback: two with the model as it is,
// one with a float of the model overridden so that the numbers move
// (--override-kv qwen3.rope.freq_base=float:1, from 1e6: every position past
// the first is encoded another way; a milder 1e4 moved only near ties on this
// model, which the rule records and passes). `soakd probe --kind equivalence`
// stores each one's golden set (the random-weight model never samples EOS:
// every answer runs to -n 64 and is stored as the server cut it), then:
//   - the same binary and model twice is equivalent (`soakctl equivalence`
//     exits 0);
//   - the changed model forks, with a margin above max_fork_margin on some
//     prompt (exit 1), and the canary's golden rule on those stored rows
//     (judges/same_answers.h, the function the daemon's judgment runs)
//     rejects, naming the prompt.
// Without the variables the program exits 77, which ctest reports as skipped.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "judges/judge.h"
#include "judges/same_answers.h"
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
// (its own context raised to match), answers cut at 64 tokens.
Server start(const std::string& bin, const std::string& model, const std::vector<std::string>& extra) {
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
                                "--parallel",
                                "1",
                                "-c",
                                "16384",
                                "-n",
                                "64",
                                "--override-kv",
                                "qwen3.context_length=int:16384"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  auto c = ChildProcess::spawn(argv);
  REQUIRE(c);
  s.child.emplace(std::move(*c));
  REQUIRE(s.child->wait_for_line("listening", kStartMs));
  return s;
}

}  // namespace

TEST_CASE("a real llama-server: the same model twice is equivalent; a model whose numbers moved forks") {
  const char* bin = std::getenv("SOAKD_LLAMA_SERVER");
  if (!bin || !*bin) skip("SOAKD_LLAMA_SERVER is not set");
  if (!std::filesystem::exists(bin)) skip(std::string(bin) + " does not exist");
  const char* model_env = std::getenv("SOAKD_LLAMA_MODEL");
  const std::string model =
      model_env && *model_env ? model_env : std::string(SOAKD_SOURCE_DIR) + "/../shared/models/tiny-qwen3.gguf";
  if (!std::filesystem::exists(model)) skip(model + " does not exist (set SOAKD_LLAMA_MODEL)");

  Server a = start(bin, model, {});
  Server b = start(bin, model, {});
  Server moved = start(bin, model, {"--override-kv", "qwen3.rope.freq_base=float:1"});

  TempDir tmp;
  const std::string cfg = tmp.path() + "/soakd.json";
  auto entry = [](const std::string& name, int port) {
    return R"({"name": ")" + name + R"(", "model": "qwen3.6-35b-a3b", "runtime": "llama.cpp", "accept_server_cap": true,
               "base_url": "http://127.0.0.1:)" +
           std::to_string(port) + R"("})";
  };
  std::ofstream(cfg) << R"({"store": ")" << tmp.path() << R"(/soakd.db", "log": ")" << tmp.path()
                     << R"(/soakd.log", "defaults": {"limits": {"stall_timeout": "60s", "wall_timeout": "30m"}},
    "candidates": [)" << entry("a", a.port)
                     << ", " << entry("b", b.port) << ", " << entry("moved", moved.port) << "]}";
  // The baseline build twice (its noise floor), the others once each.
  for (const char* name : {"a", "a", "b", "moved"}) {
    RunResult r =
        run_program({kSoakd, "probe", "--config", cfg, "--candidate", name, "--kind", "equivalence"}, kProbeMs);
    INFO(name << ": " << r.out << r.err);
    REQUIRE(r.exit_code != 2);  // ran (its answers are cut at -n 64: server_token_cap, still stored)
  }

  auto opened = SqliteStore::open(tmp.path() + "/soakd.db", OpenMode::ReadOnly);
  REQUIRE(opened.ok());
  Store& st = **opened;
  std::map<std::string, CandidateRow> rows;
  for (const auto& c : *st.candidates()) rows[c.name] = c;
  REQUIRE(rows.size() == 3);
  for (const auto& [name, row] : rows) {
    const auto runs = group_golden_runs(*st.golden_answers(row.id));
    INFO(name);
    REQUIRE_FALSE(runs.empty());
    CHECK(runs.back().answers.answers.size() == 32);
    for (const auto& ans : runs.back().answers.answers) CHECK(ans.logprobs == LogprobShape::TopK);
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
