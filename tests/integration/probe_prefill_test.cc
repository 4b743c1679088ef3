// Slow prefills and server caps through the whole probe path, against the
// in-process fake runtime on 127.0.0.1 (docs/DESIGN.md §2.2):
// - a long fresh prompt whose prefill outlasts the stall timeout is clean when
//   the runtime reports progress (MLX-LM keep-alive counts, llama.cpp
//   prompt_progress chunks) or when the prefill fits the floor-rate allowance,
//   and still stalled when it only pings beyond that budget;
// - an answer the runtime cuts with its own cap is server_token_cap, and the
//   smoke verdict on those rows says how to lift it.
// Real time stays a few seconds: the fake reads the long prompt (~75K of its
// tokens) at 40 ms per 1K, about 3 s in 2048-token steps; the stall timeout is
// 600 ms; the floors give an allowance either well short of the prefill (1.3 s:
// enough for the fake to parse the request in a Debug build, not to read the
// prompt) or well past it (13 s).
#include <string>

#include "judges/judge.h"
#include "tests/catch.h"
#include "tests/fake_runtime/fake_runtime.h"
#include "tests/integration/probe_harness.h"

using namespace soak;
using namespace soak::probe_test;
using fake::FakeRuntime;
using fake::Flavour;
using fake::ListenerConfig;
using fake::Scenario;

namespace {

constexpr int64_t kLongPrompt = 65536;  // target tokens of the long-context fixture
constexpr int64_t kStallMs = 1500;
constexpr double kShortAllowance = 50'000;  // 65,536 tokens at this floor: 1.3 s of allowance
constexpr double kWideAllowance = 5'000;    // 65,536 tokens at this floor: 13 s of allowance

struct Fake {
  explicit Fake(ListenerConfig cfg) : rt({std::move(cfg)}) { REQUIRE(rt.start().ok()); }
  std::string url() const { return rt.base_url(0); }
  FakeRuntime rt;
};

// A listener whose prefill of the long prompt takes about 5 s, in steps much
// shorter than the stall timeout. The stall timeout leaves a loaded test host
// (two cores, sanitizers, tests in parallel) time to answer at all; the
// prefill stays well past stall + the short allowance.
ListenerConfig slow_prefill(Flavour f) {
  ListenerConfig c = ListenerConfig::make(Scenario::Healthy, f);
  c.knobs.token_interval_ms = 1;
  c.knobs.prefill_ms_per_1k = 80;
  return c;
}

CandidateConfig long_prompt(const std::string& url, RuntimeKind kind, double floor_tps) {
  CandidateConfig c = candidate(url, kind);
  c.settings.long_context_sizes = {kLongPrompt};
  c.settings.limits.stall_timeout_ms = kStallMs;
  c.settings.limits.prefill_floor_tps = floor_tps;
  return c;
}

const ProbeResult& fresh_row(const std::vector<ProbeResult>& rows) {
  INFO(describe(rows));
  const ProbeResult* r = find_row(rows, ProbeKind::LongContext, "long_context/65536/fresh");
  REQUIRE(r);
  return *r;
}

// The fresh row waited for its first token past the budget without progress
// (the stall timeout plus the short allowance).
void check_slow_first_token(const ProbeResult& r) {
  REQUIRE(r.t_first_token_us);
  CHECK(*r.t_first_token_us > kStallMs * 1000 + prefill_allowance_ms(kLongPrompt, kShortAllowance) * 1000);
}

VerdictRow judge_smoke(std::vector<ProbeResult> rows, std::vector<ProbeKind> required) {
  JudgeInput in;
  in.recipe.stage = StageKind::Smoke;
  in.recipe.candidate_id = 1;
  in.recipe.slots_planned = 1;
  in.recipe.slots_run = 1;
  in.smoke_required = std::move(required);
  int64_t id = 0;
  for (auto& r : rows) {
    r.id = ++id;
    r.candidate_id = 1;
  }
  in.candidate_rows = std::move(rows);
  return judge_stage(in);
}

}  // namespace

TEST_CASE("prefill: MLX-LM keep-alive counts carry a prefill far past the stall timeout; the fresh row is clean") {
  Fake mlx(slow_prefill(Flavour::MlxLm));
  Harness h;
  // An allowance far short of the prefill: only the rising `: keepalive n/m` counts keep the stall clock off.
  auto rows = h.run(long_prompt(mlx.url(), RuntimeKind::MlxLm, kShortAllowance), {ProbeKind::LongContext});
  const ProbeResult& r = fresh_row(rows);
  INFO(r.detail);
  CHECK(r.outcome == Outcome::Clean);
  check_slow_first_token(r);
  CHECK(r.prompt_tokens.value_or(0) > kLongPrompt);  // the fake's tokens are shorter than a BPE token
}

TEST_CASE("prefill: llama.cpp prompt_progress chunks, asked for on the stream, do the same and are not content") {
  Fake llama(slow_prefill(Flavour::LlamaCpp));
  Harness h;
  auto rows = h.run(long_prompt(llama.url(), RuntimeKind::LlamaCpp, kShortAllowance), {ProbeKind::LongContext});
  const ProbeResult& r = fresh_row(rows);
  INFO(r.detail);
  CHECK(r.outcome == Outcome::Clean);
  check_slow_first_token(r);
  // The reports opened the stream at once, yet the answer's first event is the
  // role chunk after the prefill, not the first report.
  REQUIRE(r.t_first_byte_us);
  REQUIRE(r.t_first_event_us);
  CHECK(*r.t_first_byte_us < kStallMs * 1000 + prefill_allowance_ms(kLongPrompt, kShortAllowance) * 1000);
  CHECK(*r.t_first_event_us > kStallMs * 1000 + prefill_allowance_ms(kLongPrompt, kShortAllowance) * 1000);
  CHECK(*r.t_first_event_us <= *r.t_first_token_us);
}

TEST_CASE("prefill: plain pings never count; the floor-rate allowance decides a runtime that reports nothing") {
  // llama-server's SSE pings (`:` every 50 ms from the slot start), to a client
  // that does not ask it for progress reports (an OpenAI-compatible candidate).
  ListenerConfig cfg = slow_prefill(Flavour::LlamaCpp);
  cfg.knobs.prefill_ping_ms = 50;
  Fake pings(cfg);
  Harness h;
  SECTION("beyond the budget: stalled, however many pings came") {
    auto rows = h.run(long_prompt(pings.url(), RuntimeKind::OpenAI, kShortAllowance), {ProbeKind::LongContext});
    const ProbeResult& r = fresh_row(rows);
    CHECK(r.outcome == Outcome::Stalled);
    CHECK(r.detail.find("no prefill progress reported") != std::string::npos);
    CHECK_FALSE(r.t_first_token_us.has_value());
  }
  SECTION("within the allowance: the same prefill is clean") {
    auto rows = h.run(long_prompt(pings.url(), RuntimeKind::OpenAI, kWideAllowance), {ProbeKind::LongContext});
    const ProbeResult& r = fresh_row(rows);
    INFO(r.detail);
    CHECK(r.outcome == Outcome::Clean);
    check_slow_first_token(r);
  }
}

TEST_CASE("server cap: mlx-lm's 512 default cuts long answers; the smoke fails and says how to lift it") {
  ListenerConfig cfg = ListenerConfig::make(Scenario::Healthy, Flavour::MlxLm);  // server_max_tokens 512
  cfg.knobs.token_interval_ms = 0;
  cfg.knobs.reply_tokens = 600;  // an ordinary answer is longer than the cap
  Fake mlx(cfg);
  Harness h;
  const std::vector<ProbeKind> kinds{ProbeKind::Health, ProbeKind::Marker, ProbeKind::Stream};
  auto rows = h.run(candidate(mlx.url(), RuntimeKind::MlxLm), kinds);
  INFO(describe(rows));
  const ProbeResult* stream = find_row(rows, ProbeKind::Stream);
  REQUIRE(stream);
  CHECK(stream->outcome == Outcome::ServerTokenCap);
  CHECK(stream->completion_tokens == 512);
  CHECK(stream->finish_reason == "length");
  const std::string lift = "MLX-LM caps answers at 512 tokens: start mlx_lm.server with --max-tokens 32768";
  CHECK(stream->detail.rfind(lift, 0) == 0);
  CHECK(find_row(rows, ProbeKind::Marker)->outcome == Outcome::Clean);  // a short answer stops on its own

  VerdictRow v = judge_smoke(rows, kinds);
  INFO(v.reason);
  CHECK(v.state == VerdictState::Rejected);
  CHECK(v.reason.find("smoke rejected") != std::string::npos);
  CHECK(v.reason.find(lift) != std::string::npos);
}

TEST_CASE("server cap: llama-server started with -n 64 is named, with how to start it instead") {
  ListenerConfig cfg = ListenerConfig::make(Scenario::Healthy, Flavour::LlamaCpp);
  cfg.knobs.token_interval_ms = 0;
  cfg.knobs.server_max_tokens = 64;  // llama-server -n 64
  cfg.knobs.reply_tokens = 100;
  Fake llama(cfg);
  Harness h;
  auto rows = h.run(candidate(llama.url(), RuntimeKind::LlamaCpp), {ProbeKind::Stream, ProbeKind::Repetition});
  INFO(describe(rows));
  for (ProbeKind k : {ProbeKind::Stream, ProbeKind::Repetition}) {
    const ProbeResult* r = find_row(rows, k);
    REQUIRE(r);
    CHECK(r->outcome == Outcome::ServerTokenCap);
    CHECK(r->completion_tokens == 64);
    CHECK(r->detail.rfind("llama-server was started with -n 64: start it without -n or with -n -1", 0) == 0);
  }
  // Without the cap the same answers are clean: the outcome is the cap, not the answer.
  ListenerConfig uncapped = cfg;
  uncapped.knobs.server_max_tokens = 0;
  Fake free(uncapped);
  auto clean = h.run(candidate(free.url(), RuntimeKind::LlamaCpp), {ProbeKind::Stream});
  INFO(describe(clean));
  CHECK(find_row(clean, ProbeKind::Stream)->outcome == Outcome::Clean);
}
