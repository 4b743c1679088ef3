// The probe engine against a REAL llama-server, when one is configured:
//   SOAKD_LLAMA_SERVER=/path/to/llama-server  (required, else the test is skipped)
//   SOAKD_LLAMA_MODEL=/path/to/model.gguf     (default: ../shared/models/tiny-qwen3.gguf)
// Each server is started on 127.0.0.1 on a free port and the engine waits for
// its "listening" line, then for /health to answer 200 (re-trying on a loop
// timer, bounded). The random-weight model never samples EOS:
// - started with -n 64, every answer stops at 64 tokens with finish_reason
//   length, which soakd (sending no max_tokens) reports as server_token_cap,
//   naming -n 64; a marker or a schema it cannot follow is classified too;
// - started with a grammar that spells the code words the long prompts ask
//   for (code_word_grammar: root ::= "ok WORD-1234 ..."), an answer carries
//   them and ends with EOS, so the answer check passes on what the server
//   really sent and a long fresh prefill can be judged on its own: with a large -c,
//   --parallel 1 and the model's context overridden, a 32K prompt takes far
//   longer than a 2 s stall timeout to its first token, and is clean, both on
//   the default prefill floor and on progress reports alone.
// Without the variables the program exits with kSkipExitCode, which ctest
// reports as skipped (SKIP_RETURN_CODE).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/limits.h"
#include "daemon/probe_cli.h"
#include "daemon/wiring.h"
#include "judges/judge.h"
#include "platform/sampler.h"
#include "probes/prompts.h"
#include "probes/served_state.h"
#include "schedules/plan.h"
#include "storage/sqlite_store.h"
#include "tests/catch.h"
#include "tests/fake_runtime/test_support.h"
#include "tests/integration/probe_harness.h"
#include "tests/support/child_process.h"
#include "tests/support/runtime_signatures.h"
#include "tests/support/temp_dir.h"

using namespace soak;
using namespace soak::probe_test;

namespace {

constexpr int kSkipExitCode = 77;
constexpr int kStartupMs = 60'000;
constexpr int64_t kHealthRetryMs = 50;
constexpr const char* kAlias = "tiny-qwen3";
// A run against the real server on a shared 2-core host: every probe kind with
// 64-token answers can take minutes when other builds compete for the cores.
constexpr int64_t kRealRunGuardMs = 400'000;

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

// Re-runs the health probe on a loop timer until it is clean or the deadline passes.
bool wait_healthy(Harness& h, const CandidateConfig& c) {
  const int64_t deadline = h.clock().wall_ms() + kStartupMs;
  while (h.clock().wall_ms() < deadline) {
    auto rows = h.run(c, {ProbeKind::Health});
    if (!rows.empty() && rows[0].outcome == Outcome::Clean) return true;
    bool waited = false;
    Timer t(h.loop());
    t.start(kHealthRetryMs, 0, [&] { waited = true; });
    h.spin_until(waited);
  }
  return false;
}

// The server binary and model, or a skip.
struct Server {
  std::string bin, model;
};
Server server_or_skip() {
  const char* bin = std::getenv("SOAKD_LLAMA_SERVER");
  if (!bin || !*bin) skip("SOAKD_LLAMA_SERVER not set");
  const char* model_env = std::getenv("SOAKD_LLAMA_MODEL");
  const std::string model =
      model_env && *model_env ? model_env : std::string(SOAKD_SOURCE_DIR) + "/../shared/models/tiny-qwen3.gguf";
  if (!std::filesystem::exists(model)) skip("model " + model + " not found (set SOAKD_LLAMA_MODEL)");
  return {bin, model};
}

std::optional<ChildProcess> start_server(const Server& s, int port, std::vector<std::string> extra) {
  std::vector<std::string> argv{s.bin,     "-m",   s.model,   "--host",    "127.0.0.1", "--port", std::to_string(port),
                                "--alias", kAlias, "--jinja", "--metrics", "--slots"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  return ChildProcess::spawn(argv);
}

// A grammar whose only answer is "ok" and the code word of every long prompt
// of these sizes (probes/prompts.cc fixture_marker), then EOS: the random
// model cannot recall a word, so the answer check (S4:208) would fail every
// row; this way it passes on the server's own answer, and a grammar that
// spelled a wrong word would fail it.
std::string code_word_grammar(const std::vector<int64_t>& sizes) {
  std::string answer = "ok";
  for (int64_t size : sizes) answer += " " + probes::fixture_marker(probes::long_context_fixture(size));
  return "root ::= \"" + answer + "\"";
}

}  // namespace

TEST_CASE("a real llama-server: every probe kind runs and classifies what it answers") {
  const Server srv = server_or_skip();
  const int port = free_port();
  auto server = start_server(srv, port, {"--parallel", "2", "-c", "8192", "-n", "64", "-ctk", "f32"});
  REQUIRE(server);
  REQUIRE(server->wait_for_line("listening", kStartupMs));

  CandidateConfig c = candidate("http://127.0.0.1:" + std::to_string(port));
  c.model = kAlias;
  c.settings.limits.wall_timeout_ms = 60'000;
  c.settings.limits.stall_timeout_ms = 20'000;
  c.settings.burst_sizes = {1, 2};
  c.settings.capacity = std::vector<CapacityEntry>{};  // its own test below
  // The daemon's own argv reader (daemon/wiring.h): the process listening on
  // the candidate's port, found through the system sampler.
  const std::unique_ptr<Sampler> sampler = make_system_sampler(test::builtin_signatures());
  Harness h(engine_options(*sampler), kRealRunGuardMs);
  REQUIRE(wait_healthy(h, c));

  auto build = h.read_build(c);
  REQUIRE(build.ok());
  CHECK(build->build.rfind("b", 0) == 0);
  CHECK(build->model == std::string(kAlias));
  // The launch fingerprint, as the server itself reports it (/props, /slots):
  // -c 8192 shared by --parallel 2, no draft model. -n 64 and -ctk f32 are
  // in no route (/props n_predict is the sampling default, -1): they come from
  // the argv of the process serving the port; -ctv was not given: f16.
  auto fp = probes::parse_fingerprint_json(build->fingerprint);
  REQUIRE(fp.ok());
  INFO(build->fingerprint);
  CHECK(fp->slots == 2);
  CHECK(fp->ctx_per_slot == 4096);
  CHECK(fp->ctx_total == 8192);
  CHECK(fp->max_tokens_default == 64);
  CHECK(fp->kv_cache_type == "k=f32 v=f16");  // (q8_0 needs a head size the tiny model lacks)
  CHECK(fp->speculative == false);
  CHECK(fp->model == srv.model);

  auto rows = h.run(c, probes::all_probe_kinds());
  std::printf("%s", format_probe_table(rows).c_str());
  INFO(describe(rows));
  // What a random model cannot do is classified, never a harness error; what
  // -n 64 cuts is the server's cap. Its random tokens are bytes, control
  // characters among them: leaked markup, which names the cap too.
  const std::set<Outcome> classified{Outcome::Clean,           Outcome::MissingMarker, Outcome::InvalidJson,
                                     Outcome::InvalidToolCall, Outcome::EmptyToolArgs, Outcome::Repetition,
                                     Outcome::ServerTokenCap,  Outcome::LeakedMarkup};
  for (const auto& r : rows) {
    INFO(to_string(r.kind) << " " << r.workload_id << ": " << r.detail);
    CHECK(classified.count(r.outcome) == 1);
    CHECK(r.runtime_slots == 2);
    if (r.outcome == Outcome::ServerTokenCap) {
      CHECK(r.completion_tokens == 64);
      CHECK(r.detail.rfind("llama-server was started with -n 64: start it without -n or with -n -1", 0) == 0);
    }
  }
  for (ProbeKind k : {ProbeKind::Health, ProbeKind::Scrape, ProbeKind::Cancel}) {
    const ProbeResult* r = find_row(rows, k);
    REQUIRE(r);
    INFO(to_string(k) << ": " << r->detail);
    CHECK(r->outcome == Outcome::Clean);
  }
  {
    // The queue as the server counts it (server-context.cpp metrics:
    // requests_processing, requests_deferred): nothing else runs during the scrape.
    const ProbeResult* scrape = find_row(rows, ProbeKind::Scrape);
    CHECK(scrape->server_running == 0);
    CHECK(scrape->server_waiting == 0);
  }
  // Every answer that runs to the limit is the server's cap, whatever the probe.
  for (ProbeKind k : {ProbeKind::Identity, ProbeKind::Stream, ProbeKind::LongContext, ProbeKind::SharedPrefix}) {
    const ProbeResult* r = find_row(rows, k);
    REQUIRE(r);
    INFO(to_string(k) << ": " << r->detail);
    if (r->outcome == Outcome::LeakedMarkup)
      CHECK(r->detail.find("the runtime's own cap also cut it (server_token_cap)") != std::string::npos);
    else
      CHECK(r->outcome == Outcome::ServerTokenCap);
    CHECK(r->finish_reason == "length");
  }
  const ProbeResult* stream = find_row(rows, ProbeKind::Stream);
  CHECK(stream->completion_tokens == 64);  // -n 64: a random model never stops earlier
  CHECK(stream->server_predicted_n == 64);
  CHECK(stream->t_first_token_us);
  // The cap cut the answer, not the prefill: the exact repeat still follows and hits the cache.
  const ProbeResult* repeat = find_row(rows, ProbeKind::LongContext, "long_context/1024/repeat");
  REQUIRE(repeat);
  // The runtime itself confirms the repeat was served from its cache: its
  // timings.cache_n covers nearly the whole prompt.
  CHECK(repeat->server_cache_n.value_or(0) > 0);
  CHECK(repeat->server_cache_n.value_or(0) + 8 >= repeat->prompt_tokens.value_or(INT64_MAX));
  // Identity proven by the server's own name for what it loaded.
  const ProbeResult* id = find_row(rows, ProbeKind::Identity);
  REQUIRE(id);
  CHECK(nlohmann::json::parse(id->extra_json)["proof"] == "served name");
  const ProbeResult* summary = find_row(rows, ProbeKind::Burst, "burst/2/summary");
  REQUIRE(summary);
  CHECK(summary->outcome == Outcome::Clean);  // two slots: the pair decodes together
}

TEST_CASE("a real llama-server started with -c below the largest size: the canary holds with its context reach") {
  const Server srv = server_or_skip();
  const int port = free_port();
  // One slot of 4096 tokens (the model's own limit lifted to 16384 so -c decides);
  // the grammar makes every answer a short natural stop, no -n cap.
  auto server = start_server(srv, port,
                             {"--parallel", "1", "-c", "4096", "--override-kv", "qwen3.context_length=int:16384",
                              "--grammar", code_word_grammar({1024, 2048, 8192})});
  REQUIRE(server);
  REQUIRE(server->wait_for_line("listening", kStartupMs));

  CandidateConfig c = candidate("http://127.0.0.1:" + std::to_string(port));
  c.model = kAlias;
  c.settings.limits.wall_timeout_ms = 60'000;
  c.settings.limits.stall_timeout_ms = 20'000;
  c.settings.long_context_sizes = {1024, 2048, 8192};
  Harness h({}, kRealRunGuardMs);
  REQUIRE(wait_healthy(h, c));
  std::vector<ProbeResult> rows;
  for (TaskKind t : {TaskKind::Scrape, TaskKind::LongContext})
    for (auto& r : h.run(c, probe_kinds_for(t))) rows.push_back(std::move(r));
  for (size_t i = 0; i < rows.size(); ++i) {
    rows[i].id = static_cast<int64_t>(i + 1);
    rows[i].candidate_id = 1;
    rows[i].host_id = 1;
  }
  std::printf("%s", format_probe_table(rows).c_str());
  INFO(describe(rows));
  const ProbeResult* refused = find_row(rows, ProbeKind::LongContext, "long_context/8192/fresh");
  REQUIRE(refused);
  CHECK(refused->outcome == Outcome::ContextExceeded);

  JudgeInput in;
  in.recipe.stage = StageKind::Canary;
  in.recipe.candidate_id = 1;
  in.recipe.host_id = 1;
  in.recipe.slots_planned = 1;
  in.recipe.slots_run = 1;
  in.recipe.long_context_sizes = c.settings.long_context_sizes;
  // Only the long-context sizes ran here: a whole canary's functional probes
  // give its pooled failure ratio the evidence these four completions lack.
  in.recipe.judge.min_samples = 2;
  in.candidate_rows = rows;
  VerdictRow v = judge_stage(in);
  std::printf("verdict: %s: %s\n", std::string(to_string(v.state)).c_str(), v.reason.c_str());
  CHECK(v.state == VerdictState::Hold);
  CHECK(v.reason.find("context reach 2K, configured 8K") != std::string::npos);
  CHECK(v.reason.find("runtime context 4096 per slot, from /props n_ctx") != std::string::npos);
}

TEST_CASE("a real llama-server at --parallel 2: a capacity check of two 1K prompts at once completes") {
  const Server srv = server_or_skip();
  const int port = free_port();
  auto server = start_server(srv, port, {"--parallel", "2", "-c", "8192", "--grammar", code_word_grammar({1024})});
  REQUIRE(server);
  REQUIRE(server->wait_for_line("listening", kStartupMs));
  CandidateConfig c = candidate("http://127.0.0.1:" + std::to_string(port));
  c.model = kAlias;
  c.settings.limits.wall_timeout_ms = 25'000;
  c.settings.limits.stall_timeout_ms = 20'000;
  c.settings.capacity = std::vector<CapacityEntry>{{1024, 2}};  // within the tiny model's context
  Harness h({}, kRealRunGuardMs);
  REQUIRE(wait_healthy(h, c));
  auto rows = h.run(c, {ProbeKind::Capacity});
  std::printf("%s", format_probe_table(rows).c_str());
  INFO(describe(rows));
  int capacity_members = 0;
  for (const auto& r : rows)
    if (r.kind == ProbeKind::Capacity && r.workload_id == "capacity/1024/fresh/x2") {
      ++capacity_members;
      CHECK(r.outcome == Outcome::Clean);
      CHECK(r.client_concurrency == 2);
      CHECK(r.size_tokens == 1024);
    }
  CHECK(capacity_members == 2);
  const ProbeResult* cap = find_row(rows, ProbeKind::Capacity, "capacity/1024/fresh/x2/summary");
  REQUIRE(cap);
  CHECK(cap->outcome == Outcome::Clean);
  auto cs = nlohmann::json::parse(cap->extra_json);
  CHECK(cs["clean"] == 2);
  CHECK(cs["ttft_max_ms"].get<double>() > 0);
  std::printf("capacity 1K x 2 at --parallel 2: %s\n", cap->extra_json.c_str());
}

TEST_CASE("a real llama-server at --parallel 2: a lone request behind another client's two answers is queued") {
  // Another client holds both slots; llama-server defers soakd's request and
  // writes nothing to it until a slot frees (server-context.cpp: the status
  // line comes with the first result). Its stall timeout is half of one
  // answer's time on this host, so its wait is longer than its budget: queued,
  // read from /metrics requests_deferred, not stalled (docs/DESIGN.md §2.2).
  const Server srv = server_or_skip();
  const int port = free_port();
  auto server = start_server(srv, port, {"--parallel", "2", "-c", "4096", "-n", "200"});
  REQUIRE(server);
  REQUIRE(server->wait_for_line("listening", kStartupMs));
  const std::string url = "http://127.0.0.1:" + std::to_string(port);
  CandidateConfig c = candidate(url);
  c.model = kAlias;
  Harness h({}, kRealRunGuardMs);
  REQUIRE(wait_healthy(h, c));
  fake::testing::FetchOptions another;  // another client's answer, bounded by its own timeout
  // Its answers long (1,500 tokens, past -n 200: a request's own max_tokens
  // wins), so a wait behind two is seconds on any host, past the 1 s floor
  // of the stall timeout below.
  auto body = fake::testing::chat_body("another client", false);
  body["max_tokens"] = 1500;
  another.body = body.dump();
  another.timeout_ms = 600'000;
  const auto t0 = std::chrono::steady_clock::now();
  REQUIRE(fake::testing::fetch(url + "/v1/chat/completions", another).status == 200);
  const auto answer_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
  // Half an answer: shorter than the wait behind two, and once in its slot a
  // token's time (a fraction of it) is all it needs, even on a loaded host.
  c.settings.limits.stall_timeout_ms = std::max<int64_t>(1'000, answer_ms / 2);
  c.settings.limits.wall_timeout_ms = 30 * answer_ms + 60'000;
  std::printf("one 1500-token answer: %lld ms; stall timeout %lld ms\n", static_cast<long long>(answer_ms),
              static_cast<long long>(c.settings.limits.stall_timeout_ms));

  struct Joined {
    std::vector<std::thread> v;
    ~Joined() {
      for (auto& t : v) t.join();
    }
  } other;
  for (int i = 0; i < 2; ++i)
    other.v.emplace_back([&] { fake::testing::fetch(url + "/v1/chat/completions", another); });
  // Both slots taken before soakd's request goes.
  bool busy = false;
  for (int i = 0; i < 200 && !busy; ++i) {
    auto scrape = h.run(c, {ProbeKind::Scrape});
    busy = !scrape.empty() && scrape[0].server_running == 2;
  }
  REQUIRE(busy);
  auto rows = h.run(c, {ProbeKind::Stream});
  INFO(describe(rows));
  const ProbeResult* r = find_row(rows, ProbeKind::Stream);
  REQUIRE(r);
  // -n 200 cuts the answer: the server's cap, not a hang (or, when the
  // random bytes hold a control character, leaked markup naming the cap).
  CHECK((r->outcome == Outcome::ServerTokenCap ||
         (r->outcome == Outcome::LeakedMarkup && r->detail.find("(server_token_cap)") != std::string::npos)));
  REQUIRE(r->queue_wait_us);
  CHECK(*r->queue_wait_us > c.settings.limits.stall_timeout_ms * 1000);
  CHECK(r->detail.find("in the runtime's queue (/metrics: 1 request waiting)") != std::string::npos);
  std::printf("queued %lld ms behind the other client's answers\n", static_cast<long long>(*r->queue_wait_us / 1000));
}

TEST_CASE("a real llama-server: a fresh prefill far longer than the stall timeout is clean, not stalled") {
  const Server srv = server_or_skip();
  const int port = free_port();
  constexpr int kCtx = 140'000;
  constexpr int64_t kSize = 32'768;
  constexpr int64_t kStallMs = 2'000;
  // One slot with a large context (the model's own context overridden), and a
  // grammar that makes every answer "ok" and the code word then EOS, so nothing but the prefill
  // decides the row. Batches of 512 make a progress report every 512 prompt
  // tokens (llama.cpp sends one per batch).
  auto server = start_server(srv, port,
                             {"--parallel", "1", "-c", std::to_string(kCtx), "--override-kv",
                              "qwen3.context_length=int:" + std::to_string(kCtx), "--grammar",
                              code_word_grammar({kSize}), "-b", "512", "-ub", "512"});
  REQUIRE(server);
  REQUIRE(server->wait_for_line("listening", kStartupMs));

  CandidateConfig c = candidate("http://127.0.0.1:" + std::to_string(port));
  c.model = kAlias;
  c.settings.long_context_sizes = {kSize};
  c.settings.limits.stall_timeout_ms = kStallMs;
  c.settings.limits.wall_timeout_ms = 600'000;
  Harness h({}, kRealRunGuardMs);
  REQUIRE(wait_healthy(h, c));

  // The fresh row's first token, and whether the stall timeout alone would have cut it.
  auto run_fresh = [&](const char* label) -> int64_t {
    auto rows = h.run(c, {ProbeKind::LongContext});
    std::printf("%s", format_probe_table(rows).c_str());
    INFO(label << "\n" << describe(rows));
    const ProbeResult* fresh = find_row(rows, ProbeKind::LongContext, "long_context/32768/fresh");
    REQUIRE(fresh);
    INFO(fresh->detail);
    CHECK(fresh->outcome == Outcome::Clean);
    CHECK(fresh->finish_reason == "stop");
    REQUIRE(fresh->t_first_token_us);
    std::printf(
        "%s: fresh %lld: %lld prompt tokens, first token after %.1f s, stall timeout %.1f s, prefill "
        "allowance %.1f s, server prefill %.0f tok/s\n",
        label, static_cast<long long>(kSize), static_cast<long long>(fresh->prompt_tokens.value_or(0)),
        *fresh->t_first_token_us / 1e6, c.settings.limits.stall_timeout_ms / 1e3,
        prefill_allowance_ms(fresh->prompt_tokens.value_or(0), c.settings.limits.prefill_floor_tps) / 1e3,
        fresh->server_prompt_tps.value_or(0));
    CHECK(*fresh->t_first_token_us >
          c.settings.limits.stall_timeout_ms * 1000);  // the stall timeout alone would cut it
    const ProbeResult* repeat = find_row(rows, ProbeKind::LongContext, "long_context/32768/repeat");
    REQUIRE(repeat);
    CHECK(repeat->outcome == Outcome::Clean);
    return *fresh->t_first_token_us;
  };

  // The default floor (100 tok/s) gives 32K an allowance of 328 s.
  c.settings.limits.prefill_floor_tps = kDefaultPrefillFloorTps;
  const int64_t first_us = run_fresh("default floor");
  // A floor of 10^7 tok/s gives 3 ms: only the prompt_progress chunks (asked
  // for with return_progress) keep the stall clock off. The stall timeout is a
  // fifth of the prefill just measured (at least 2 s): many batches long, and
  // still far shorter than the prefill.
  c.settings.limits.prefill_floor_tps = 1e7;
  c.settings.limits.stall_timeout_ms = std::max<int64_t>(kStallMs, first_us / 1000 / 5);
  run_fresh("progress reports only");
}

// The agent session against the real server: the history grows turn by turn,
// so the prompt tokens llama-server counts grow too, as the stored rows show.
// (Answers stop at -n 16 as server_token_cap; an agent keeps a cut answer.)
TEST_CASE("a real llama-server: an agent session's prompt tokens grow turn by turn in the stored rows") {
  const Server srv = server_or_skip();
  const int port = free_port();
  auto server = start_server(
      srv, port, {"--parallel", "1", "-c", "8192", "-n", "16", "--override-kv", "qwen3.context_length=int:8192"});
  REQUIRE(server);
  REQUIRE(server->wait_for_line("listening", kStartupMs));
  CandidateConfig c = candidate("http://127.0.0.1:" + std::to_string(port));
  c.model = kAlias;
  c.settings.limits.wall_timeout_ms = 120'000;
  c.settings.limits.stall_timeout_ms = 60'000;
  c.settings.agent.thinking_share = 0;
  c.settings.agent.tool_every = 1000;  // no forced tool turn: the random model cannot follow one
  Harness h({}, kRealRunGuardMs);
  REQUIRE(wait_healthy(h, c));

  TempDir tmp;
  auto store = SqliteStore::open(tmp.path() + "/s.db", OpenMode::ReadWrite, Durability::Fast);
  REQUIRE(store.ok());
  const int64_t host = *(*store)->upsert_host(HostInfo{"h", "m", 1, "os"}, 1);
  CandidateRow row;
  row.host_id = host;
  row.name = c.name;
  row.model = c.model;
  row.runtime = c.runtime;
  row.build = "b1";
  row.base_url = c.base_url;
  const int64_t cid = *(*store)->upsert_candidate(row, 1);
  for (int turn = 0; turn < 5; ++turn)
    for (auto r : h.run(c, {ProbeKind::Agent})) {
      INFO(r.detail);
      // The random model's bytes hold control characters now and then: leaked markup.
      CHECK(
          (r.outcome == Outcome::Clean || r.outcome == Outcome::ServerTokenCap || r.outcome == Outcome::LeakedMarkup));
      r.candidate_id = cid;
      r.host_id = host;
      REQUIRE((*store)->insert_probe_result(r).ok());
    }
  ProbeQuery q;
  q.candidate_id = cid;
  const auto rows = *(*store)->probe_results(q);
  REQUIRE(rows.size() == 5);
  int64_t last = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    const auto j = nlohmann::json::parse(rows[i].extra_json);
    INFO("turn " << i + 1 << ": " << rows[i].extra_json);
    CHECK(j["turn"] == static_cast<int64_t>(i + 1));
    CHECK(j["session"] == 0);
    REQUIRE(rows[i].prompt_tokens);
    std::printf("agent turn %zu: %lld prompt tokens\n", i + 1, static_cast<long long>(*rows[i].prompt_tokens));
    CHECK(*rows[i].prompt_tokens > last + 100);  // a 150-200-token user turn and the last answer were added
    CHECK(j["context_tokens"] == *rows[i].prompt_tokens);
    last = *rows[i].prompt_tokens;
  }
}

TEST_CASE("a real llama-server --embedding as an embedding candidate passes its smoke") {
  const Server srv = server_or_skip();
  const int port = free_port();
  auto server = start_server(srv, port, {"--embedding", "--pooling", "mean", "--parallel", "2", "-c", "4096"});
  REQUIRE(server);
  REQUIRE(server->wait_for_line("listening", kStartupMs));
  CandidateConfig c = candidate("http://127.0.0.1:" + std::to_string(port));
  c.model = kAlias;
  c.kind = WorkloadKind::Embedding;
  Harness h({}, kRealRunGuardMs);
  REQUIRE(wait_healthy(h, c));
  auto rows = h.run(c, probe_kinds_for(TaskKind::Smoke, c.kind));
  std::printf("%s", format_probe_table(rows).c_str());
  INFO(describe(rows));
  REQUIRE(rows.size() == 3);
  for (const auto& r : rows) CHECK(r.outcome == Outcome::Clean);
  const ProbeResult* first = find_row(rows, ProbeKind::Embeddings, "embeddings");
  REQUIRE(first);
  const auto j = nlohmann::json::parse(first->extra_json);
  CHECK(j["dimension"].get<int64_t>() > 0);
  JudgeInput in;
  in.recipe.stage = StageKind::Smoke;
  in.recipe.slots_planned = 1;
  in.recipe.slots_run = 1;
  in.recipe.workload = c.kind;
  in.smoke_required = probe_kinds_for(TaskKind::Smoke, c.kind);
  int64_t id = 1;
  for (auto& r : rows) {
    r.id = id++;
    in.candidate_rows.push_back(r);
  }
  const VerdictRow v = judge_stage(in);
  INFO(v.reason);
  CHECK(v.state == VerdictState::Promoted);
}
