// The golden set in compressed campaigns through the real daemon
// (docs/DESIGN.md §3.13). A baseline build with steady answers runs every
// stage and is promoted: its canary runs the set at its start and end, its
// soak at its end. Then, on copies of that store, the next build of the same
// candidate comes in with each answer flavour of the fake runtime
// (tests/fake_runtime/logprobs.h), all four at once (their own daemon, store
// and runtime each): a changed answer rejects the canary naming the prompt,
// and `soakctl explain` shows its fork; a greedy token below its top-1
// rejects; near-tie forks pass; a runtime without logprobs passes on text.
#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "storage/sqlite_store.h"
#include "tests/catch.h"
#include "tests/support/child_process.h"
#include "tests/support/temp_dir.h"

using namespace soak;

namespace {

const std::string kSoakd = std::string(SOAKD_BINARY_DIR) + "/daemon/soakd";
const std::string kSoakctl = std::string(SOAKD_BINARY_DIR) + "/soakctl/soakctl";
constexpr int kStartMs = 10'000;
constexpr int kBaselineMs = 60'000;  // the baseline's campaign (about 15 s unloaded)
constexpr int kNextMs = 60'000;      // the next builds' canaries (about 10 s unloaded)

std::optional<ChildProcess> fake(const std::string& build, const std::string& answers, int& port) {
  auto c = ChildProcess::spawn({SOAK_FAKE_RUNTIME_BIN, "--listen", "127.0.0.1:0:healthy", "--build", build, "--answers",
                                answers, "--token-interval-ms", "1", "--reply-tokens", "12"});
  REQUIRE(c);
  auto p = c->wait_for_port("listening on", kStartMs);
  REQUIRE(p);
  port = *p;
  return c;
}

// One candidate "llama" on the fake at `port`, stages compressed to seconds:
// the baseline's as short as its own rules allow, the next builds' canary
// long enough to compare a few samples with the baseline's, and their gate
// longer than the test (it stops each daemon once its canary has ended, so
// that explain recomputes the canary's verdict).
const std::string kBaselineStages = R"({ "smoke": "10s", "canary": "4s", "gate": "2s", "soak": "3s", "grace": 1 })";
const std::string kNextStages = R"({ "smoke": "10s", "canary": "6s", "gate": "5m", "soak": "5m", "grace": 1 })";

// The golden set's opening run holds the heartbeat for a second or two (as
// the warm-up does): a sizeable share of an 8-second canary, 2-3 % of a 2-hour
// one; min_coverage is lowered for that, not the golden set turned off. The
// next builds run four at once on a host where the baseline ran alone: their
// speed is not what is tested, so the effect floor is wide (10x) and a few
// samples are enough to compare.
std::string write_config(const std::string& dir, int port, const std::string& stages) {
  const std::string path = dir + "/soakd.json";
  std::ofstream(path) << R"({
    "store": "store/soakd.db",
    "log": "soakd.log",
    "defaults": {
      "stages": )" + stages + R"(,
      "cadence": { "scrape": "1s", "functional": "1s", "long_context": "3s", "burst": "3s", "cancel": "3s",
                   "gate_pause": "100ms", "soak_traffic": "500ms", "soak_heavy": "3s", "build_poll": "1s" },
      "limits": { "wall_timeout": "20s", "stall_timeout": "5s", "connect_timeout": "1s" },
      "gate": { "min_completed": 3, "min_coverage": 0.5 },
      "judge": { "effect_floor": 9, "min_samples": 3 },
      "soak": { "max_footprint_slope_mb_per_h": 1000000, "max_footprint_growth": 10 },
      "long_context_sizes": [1024],
      "burst_sizes": [1, 2]
    },
    "sampler": { "interval": "250ms", "process_every": "750ms", "keep_awake": false },
    "schedule": { "nightly_window": "now" },
    "candidates": [
      { "name": "llama", "model": "qwen3.6-35b-a3b", "runtime": "llama.cpp", "allow_coexisting": true,
        "base_url": "http://127.0.0.1:)"
                      << port << R"(" }
    ]
  })";
  return path;
}

std::optional<CandidateRow> row_of(Store& st, const std::string& build_prefix) {
  auto rows = st.candidates();
  if (!rows) return std::nullopt;
  for (const auto& c : *rows)
    if (c.build.rfind(build_prefix, 0) == 0) return c;
  return std::nullopt;
}

// The next build's canary, once it has ended: its stage row.
std::optional<StageRow> ended_canary(const std::string& db) {
  auto opened = SqliteStore::open(db, OpenMode::ReadOnly);
  if (!opened.ok()) return std::nullopt;
  auto row = row_of(**opened, "b9502");
  if (!row) return std::nullopt;
  auto stages = (*opened)->stages(row->id);
  if (!stages) return std::nullopt;
  for (const auto& s : *stages)
    if (s.kind == StageKind::Canary && s.state != StageState::Running) return s;
  return std::nullopt;
}

struct Next {
  std::string answers;
  std::string dir;
  int port = 0;
  std::optional<ChildProcess> runtime, daemon;
  std::optional<StageRow> canary;
};

}  // namespace

TEST_CASE("golden set: a baseline promoted, then each answer flavour as the next build reaches its verdict") {
  TempDir tmp;
  const std::string base_dir = tmp.path() + "/baseline";
  std::filesystem::create_directories(base_dir);
  {
    int port = 0;
    auto runtime = fake("b9430-5bec353", "steady", port);
    auto d = ChildProcess::spawn({kSoakd, "run", "--config", write_config(base_dir, port, kBaselineStages),
                                  "--log-stderr", "--exit-when-settled"});
    REQUIRE(d);
    auto st = d->wait_exit(kBaselineMs);
    INFO(d->err());
    REQUIRE(st);
    REQUIRE(WIFEXITED(*st));
    REQUIRE(WEXITSTATUS(*st) == 0);

    auto opened = SqliteStore::open(base_dir + "/store/soakd.db", OpenMode::ReadOnly);
    REQUIRE(opened.ok());
    auto row = row_of(**opened, "b9430");
    REQUIRE(row);
    auto v = *(*opened)->latest_verdict(row->id);
    REQUIRE(v);
    INFO(v->reason);
    REQUIRE(v->state == VerdictState::Promoted);
    // Three runs of the set: the canary's start and end, the soak's end.
    const auto runs = group_golden_runs(*(*opened)->golden_answers(row->id));
    REQUIRE(runs.size() == 3);
    for (const auto& r : runs) CHECK(r.answers.answers.size() == 32);
    CHECK(runs[0].stage_id == runs[1].stage_id);
    CHECK(runs[2].stage_id != runs[1].stage_id);
  }

  std::vector<Next> next;
  for (const std::string answers : {"changed", "near-tie", "not-top1", "no-logprobs"}) {
    Next n;
    n.answers = answers;
    n.dir = tmp.path() + "/" + answers;
    std::filesystem::create_directories(n.dir);
    std::filesystem::copy(base_dir + "/store", n.dir + "/store", std::filesystem::copy_options::recursive);
    auto runtime = fake("b9502-1a2b3c4", answers, n.port);
    n.runtime.emplace(std::move(*runtime));
    auto d = ChildProcess::spawn({kSoakd, "run", "--config", write_config(n.dir, n.port, kNextStages), "--log-stderr"});
    REQUIRE(d);
    n.daemon.emplace(std::move(*d));
    next.push_back(std::move(n));
  }
  // Each canary ends (rejected, or passed and the gate begun); then its daemon stops.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kNextMs);
  for (bool waiting = true; waiting && std::chrono::steady_clock::now() < deadline;) {
    waiting = false;
    for (Next& n : next) {
      if (n.canary) continue;
      n.canary = ended_canary(n.dir + "/store/soakd.db");
      if (n.canary) n.daemon->signal(SIGTERM);
      waiting = waiting || !n.canary;
    }
    if (waiting) std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  for (Next& n : next) {
    n.daemon->signal(SIGTERM);
    CHECK(n.daemon->wait_exit(kStartMs));
  }

  auto explain = [&](const Next& n) {
    RunResult r = run_program({kSoakctl, "--db", n.dir + "/store/soakd.db", "explain", "llama"}, kStartMs);
    INFO(r.err);
    CHECK(r.exit_code == 0);  // recomputed from the stored rows: identical
    CHECK(r.out.find("recomputed from the stored rows: identical") != std::string::npos);
    return r.out;
  };
  for (const Next& n : next) {
    INFO(n.answers << ": "
                   << n.daemon->err().substr(n.daemon->err().size() > 4000 ? n.daemon->err().size() - 4000 : 0));
    REQUIRE(n.canary);
    INFO("canary: " << n.canary->reason);
    const std::string out = explain(n);
    INFO(out);
    if (n.answers == "changed") {
      CHECK(n.canary->state == StageState::Failed);
      CHECK(n.canary->reason.find("equivalence/json_schema/00: fork at token 1") != std::string::npos);
      // explain names each failing prompt with its fork: position, both tokens, both margins.
      for (int i = 0; i < 4; ++i) CHECK(out.find("equivalence/json_schema/0" + std::to_string(i)) != std::string::npos);
      CHECK(out.find("fork at token 1: ") != std::string::npos);
      CHECK(out.find("vs \" CHANGED\" (margin 3.150)") != std::string::npos);
      CHECK(out.find("equivalence/factual") == std::string::npos);  // answered the same
      // soakctl equivalence judges the two builds by the rules the canary stored.
      RunResult e = run_program({kSoakctl, "--db", n.dir + "/store/soakd.db", "equivalence", "llama", "llama",
                                 "--build-a", "b9430-5bec353", "--build-b", "b9502-1a2b3c4"},
                                kStartMs);
      INFO(e.out << e.err);
      CHECK(e.exit_code == 1);
      CHECK(e.out.find("(from the recipe of llama's canary verdict") != std::string::npos);
      // The HTML report's table of prompts x status for the latest comparison.
      const std::string html = n.dir + "/report.html";
      RunResult rep =
          run_program({kSoakctl, "--db", n.dir + "/store/soakd.db", "report", "llama", "--html", html}, kStartMs);
      INFO(rep.out << rep.err);
      CHECK(rep.exit_code == 0);
      std::ifstream in(html);
      const std::string page((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      CHECK(page.find("Same answers (golden set)") != std::string::npos);
      CHECK(page.find("<tr class=\"r-fail\"><td class=\"mono\">json_schema/00</td><td>fork (fails)</td>") !=
            std::string::npos);
      CHECK(page.find("<td class=\"mono\">factual/00</td><td>equal</td>") != std::string::npos);
    } else if (n.answers == "not-top1") {
      CHECK(n.canary->state == StageState::Failed);
      CHECK(n.canary->reason.find("is not its top-1") != std::string::npos);
      CHECK(out.find("equivalence/factual/00") != std::string::npos);
    } else if (n.answers == "near-tie") {
      CHECK(n.canary->state == StageState::Passed);
      CHECK(out.find("recorded, not failed") != std::string::npos);
      CHECK(out.find("near_tie at token 2") != std::string::npos);
    } else {
      CHECK(n.canary->state == StageState::Passed);
      CHECK(out.find("32 of 32 prompts compared (answered on both sides), 32 equal") !=
            std::string::npos);  // on text alone
    }
  }
}
