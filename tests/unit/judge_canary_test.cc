// The canary's own rules on literal rows: the pooled failure ratio over
// functional, long-context and burst completions, which rows are attempts at
// all, the long-context gate with its context reach, and a burst served one at
// a time judged with its effect floors.
#include <nlohmann/json.hpp>

#include "judges/judge.h"
#include "judges/recipe.h"
#include "tests/catch.h"
#include "tests/unit/judge_rows.h"

using namespace soak;
using namespace soak::testing;

namespace {

// A canary as the scheduler runs it for two hours, without a baseline: health
// and scrape every minute, the functional probes every ten minutes.
struct Canary {
  Rows cand{kCandidate, 1};
  JudgeInput in = input_for(StageKind::Canary);

  Canary() {
    in.recipe.baseline_mode = BaselineMode::None;
    in.recipe.baseline_id.reset();
  }
  // `n` functional passes; every `fail_every`-th completion (0: none) is `bad`.
  void functional(int n, int fail_every = 0, Outcome bad = Outcome::Http5xx) {
    int k = 0;
    for (int i = 0; i < n; ++i)
      for (ProbeKind kind : probe_kinds_for(TaskKind::Functional)) {
        ++k;
        if (fail_every && k % fail_every == 0)
          cand.add(kind, std::string(to_string(kind)), bad);
        else
          cand.perf(kind, std::string(to_string(kind)), jittered(Perf{}, k));
      }
  }
  void heartbeats(int n) {
    for (int i = 0; i < n; ++i) {
      cand.add(ProbeKind::Health, "health");
      cand.add(ProbeKind::Scrape, "scrape");
    }
  }
  VerdictRow judge() {
    in.candidate_rows = cand.rows;
    return judge_stage(in);
  }
};

}  // namespace

TEST_CASE("canary pooled failure ratio: 1 in 8 completions with HTTP 500 rejects") {
  Canary c;
  c.heartbeats(120);
  c.functional(12, 8);  // 72 completions, 9 of them HTTP 500, never 3 in a row
  auto v = c.judge();
  INFO(v.reason);
  CHECK(v.state == VerdictState::Rejected);
  // The sequential test saw it first (judges/sequential.h); the pooled ratio agrees.
  CHECK(contains(v.reason, "sequential pooled"));
  const auto* m = find_metric(v, "failure_ratio/pooled");
  REQUIRE(m);
  CHECK(m->result == MetricResult::Fail);
  CHECK(m->n == 72);  // health and scrape rows are not attempts
  CHECK(m->estimate == Approx(9.0 / 72));
  CHECK(m->lo > 0.01);
  CHECK(find_metric(v, "sequential/pooled")->result == MetricResult::Fail);
}

TEST_CASE("canary pooled failure ratio: a single transient does not reject") {
  Canary c;
  c.heartbeats(120);
  c.functional(12, 72);  // one HTTP 500 in 72
  auto v = c.judge();
  INFO(v.reason);
  CHECK(v.state == VerdictState::Promoted);
  const auto* m = find_metric(v, "failure_ratio/pooled");
  REQUIRE(m);
  CHECK(m->result == MetricResult::Pass);
  CHECK(m->estimate > 0.01);  // the point estimate alone would have rejected
  CHECK(m->lo <= 0.01);
}

TEST_CASE("canary pooled failure ratio: long-context rows and burst members count, summaries do not") {
  Canary c;
  c.functional(2);  // 12 clean
  for (int i = 0; i < 4; ++i) c.cand.add(ProbeKind::LongContext, "long_context/1024/fresh", Outcome::Timeout);
  c.cand.add(ProbeKind::Burst, "burst/8", Outcome::Clean);  // a member: an attempt
  c.cand.add(ProbeKind::Burst, "burst/8/summary", Outcome::SerializedBurst);
  auto v = c.judge();
  const auto* m = find_metric(v, "failure_ratio/pooled");
  REQUIRE(m);
  CHECK(m->n == 17);
  CHECK(m->estimate == Approx(4.0 / 17));
  // The summary is judged by its own rule: served one at a time on a multi-slot runtime.
  const auto* b = find_metric(v, "burst_serialization");
  REQUIRE(b);
  CHECK(b->result == MetricResult::Fail);
  CHECK(b->n == 1);
  CHECK(v.state == VerdictState::Rejected);
}

TEST_CASE("gate failure ratio: health and scrape rows are not attempts") {
  auto in = input_for(StageKind::Gate);
  in.recipe.gate.min_completed = 100;
  Rows r{kCandidate, 1};
  for (int i = 0; i < 150; ++i) r.perf(ProbeKind::Agent, "agent/7k", jittered(Perf{}, i));
  r.add(ProbeKind::Agent, "agent/7k", Outcome::Timeout);
  r.add(ProbeKind::Agent, "agent/7k", Outcome::Timeout);  // 2 in 152: 1.3 %
  for (int i = 0; i < 300; ++i) {
    r.add(ProbeKind::Health, "health");
    r.add(ProbeKind::Scrape, "scrape");
  }
  in.candidate_rows = r.rows;
  auto v = judge_stage(in);
  INFO(v.reason);
  const auto* m = find_metric(v, "failure_ratio");
  REQUIRE(m);
  CHECK(m->n == 152);
  CHECK(m->result == MetricResult::Fail);
  CHECK(v.state == VerdictState::Rejected);
}

namespace {

// Long-context rows of one size: a fresh and, after a clean fresh, a repeat.
// `ctx` is what the probe learnt of the runtime's context (0: nothing).
void long_context(Canary& c, int64_t size, Outcome fresh = Outcome::Clean, int64_t ctx = 0,
                  const char* source = "/props n_ctx") {
  const std::string extra = ctx ? "{\"sized_by\":\"tokenize\",\"runtime_ctx\":" + std::to_string(ctx) +
                                      ",\"runtime_ctx_source\":\"" + source + "\"}"
                                : std::string("{\"sized_by\":\"tokenize\"}");
  const std::string w = "long_context/" + std::to_string(size);
  ProbeResult* r = nullptr;
  if (fresh == Outcome::Clean)
    r = &c.cand.perf(ProbeKind::LongContext, w + "/fresh", Perf{.ttft_ms = 5000}, CacheState::Fresh);
  else
    r = &c.cand.add(ProbeKind::LongContext, w + "/fresh", fresh);
  r->cache_state = CacheState::Fresh;
  r->size_tokens = size;
  r->extra_json = extra;
  if (fresh != Outcome::Clean) return;
  ProbeResult& rep = c.cand.perf(ProbeKind::LongContext, w + "/repeat", Perf{.ttft_ms = 300}, CacheState::Repeat);
  rep.size_tokens = size;
  rep.extra_json = extra;
}

const std::vector<int64_t> kSizes{1024, 8192, 32768, 131072};

Canary long_context_canary() {
  Canary c;
  c.in.recipe.long_context_sizes = kSizes;
  c.heartbeats(10);
  c.functional(20);
  return c;
}

}  // namespace

TEST_CASE("long-context gate: every size clean fresh and repeat passes with full reach") {
  Canary c = long_context_canary();
  for (int64_t s : kSizes) long_context(c, s, Outcome::Clean, 262144);
  auto v = c.judge();
  INFO(v.reason);
  CHECK(v.state == VerdictState::Promoted);
  const auto* m = find_metric(v, "context_reach");
  REQUIRE(m);
  CHECK(m->result == MetricResult::Pass);
  CHECK(m->estimate == 131072);
  CHECK(contains(m->reason, "context reach 131K, configured 131K"));
  CHECK(contains(m->reason, "262144 per slot, from /props n_ctx"));
}

TEST_CASE("long-context gate: context_exceeded beyond the runtime's own context is a hold with the reach") {
  Canary c = long_context_canary();
  for (int64_t s : {1024, 8192, 32768}) long_context(c, s, Outcome::Clean, 32768);
  long_context(c, 131072, Outcome::ContextExceeded, 32768, "error n_ctx");
  auto v = c.judge();
  INFO(v.reason);
  CHECK(v.state == VerdictState::Hold);
  CHECK(contains(v.reason, "context reach 32K, configured 131K"));
  CHECK(contains(v.reason, "from error n_ctx"));
  CHECK(find_metric(v, "context_reach")->estimate == 32768);
  CHECK(find_metric(v, "long_context/131072")->result == MetricResult::Marginal);
  // The refusal is not a failure of the build: the pooled ratio does not reject
  // on it alone.
  CHECK(find_metric(v, "failure_ratio/pooled")->result == MetricResult::Pass);
}

TEST_CASE("long-context gate: a size failing with 5xx or a timeout rejects") {
  for (Outcome o : {Outcome::Http5xx, Outcome::Timeout}) {
    Canary c = long_context_canary();
    for (int64_t s : {1024, 8192, 32768}) long_context(c, s, Outcome::Clean, 262144);
    long_context(c, 131072, o, 262144);
    auto v = c.judge();
    INFO(v.reason);
    CHECK(v.state == VerdictState::Rejected);
    CHECK(contains(v.reason, "long context 131K"));
    CHECK(find_metric(v, "long_context/131072")->result == MetricResult::Fail);
    CHECK(find_metric(v, "context_reach")->estimate == 32768);
  }
}

TEST_CASE("long-context gate: context_exceeded within the runtime's own context rejects") {
  Canary c = long_context_canary();
  for (int64_t s : {1024, 8192, 32768}) long_context(c, s, Outcome::Clean, 262144);
  long_context(c, 131072, Outcome::ContextExceeded, 262144);
  auto v = c.judge();
  INFO(v.reason);
  CHECK(v.state == VerdictState::Rejected);
  CHECK(contains(v.reason, "context_exceeded"));
}

TEST_CASE("long-context gate: a size that never ran is inconclusive") {
  Canary c = long_context_canary();
  for (int64_t s : {1024, 8192, 32768}) long_context(c, s, Outcome::Clean, 262144);
  auto v = c.judge();
  INFO(v.reason);
  CHECK(v.state == VerdictState::Inconclusive);
  CHECK(contains(v.reason, "long context 131K"));
  CHECK(find_metric(v, "long_context/131072")->result == MetricResult::Insufficient);
}

TEST_CASE("context reach: the latest row that reports the runtime's context wins") {
  Canary c;
  long_context(c, 1024, Outcome::Clean, 4096, "/slots n_ctx");
  long_context(c, 8192, Outcome::ContextExceeded, 2048, "error text");
  ContextReach r = context_reach(c.cand.rows, {1024, 8192});
  CHECK(r.reach_tokens == 1024);
  CHECK(r.configured_tokens == 8192);
  REQUIRE(r.runtime_ctx_tokens);
  CHECK(*r.runtime_ctx_tokens == 2048);
  CHECK(r.runtime_ctx_source == "error text");
  CHECK(size_label(131072) == "131K");
  CHECK(size_label(100000) == "100K");
  CHECK(size_label(512) == "512");
}

TEST_CASE("context reach of a judgment: the canary's configured sizes served clean fresh, with its recipe's ids") {
  Canary c;
  c.in.recipe.long_context_sizes = {1024, 8192};
  c.in.recipe.stage_id = 77;
  long_context(c, 1024, Outcome::Clean, 32768);
  // 8K: the fresh prompt timed out, only a cache-warm repeat came back clean;
  // 64K is not a configured size. Neither is reach.
  long_context(c, 8192, Outcome::Timeout, 32768);
  ProbeResult& warm =
      c.cand.perf(ProbeKind::LongContext, "long_context/8192/repeat", Perf{.ttft_ms = 300}, CacheState::Repeat);
  warm.size_tokens = 8192;
  long_context(c, 65536, Outcome::Clean, 131072);
  auto v = c.judge();
  auto reach = judged_context_reach(c.in);
  REQUIRE(reach);
  CHECK(reach->reach_tokens == 1024);
  CHECK(reach->configured_tokens == 8192);
  CHECK(reach->runtime_ctx_tokens == 131072);
  CHECK(reach->candidate_id == c.in.recipe.candidate_id);
  CHECK(reach->stage_id == std::optional<int64_t>(77));
  CHECK(reach->wall_ms == c.in.recipe.now_ms);
  // The verdict's own metric is the same reach.
  CHECK(find_metric(v, "context_reach")->estimate == 1024);
  CHECK(find_metric(v, "context_reach")->threshold == 8192);

  // Only a canary with configured sizes has one.
  c.in.recipe.long_context_sizes.clear();
  CHECK(!judged_context_reach(c.in));
  c.in.recipe.long_context_sizes = {1024, 8192};
  c.in.recipe.stage = StageKind::Soak;
  CHECK(!judged_context_reach(c.in));
}

namespace {

// A gate that passes on its rows: 150 completed agent requests over 24 h.
JudgeInput passing_gate() {
  auto in = input_for(StageKind::Gate);
  in.recipe.gate.min_completed = 100;
  Rows r{kCandidate, 1, kT0, 24 * kHourMs / 150};
  for (int i = 0; i < 150; ++i) r.perf(ProbeKind::Agent, "agent/7k", jittered(Perf{}, i));
  in.candidate_rows = r.rows;
  return in;
}

// Host samples every `every_ms` over `length_ms`, swap used rising linearly by
// `growth_mb` and the swapout counter by `swapouts` in all.
std::vector<HostSample> host_samples(int64_t length_ms, int64_t every_ms, double growth_mb, int64_t swapouts) {
  std::vector<HostSample> out;
  const int64_t n = length_ms / every_ms;
  for (int64_t i = 0; i <= n; ++i) {
    const double f = static_cast<double>(i) / static_cast<double>(n);
    HostSample h = host_sample(i + 1, kT0 + i * every_ms, 200 + growth_mb * f);
    h.swapouts = 5000 + static_cast<int64_t>(static_cast<double>(swapouts) * f);
    out.push_back(h);
  }
  return out;
}

}  // namespace

TEST_CASE("memory over the stage: swap creeping through a gate rejects though no 10-minute window sees it") {
  auto in = passing_gate();
  // +800 MB over 24 h: 5.6 MB per 10 minutes, far under the guard's 500 MB.
  in.host_samples = host_samples(24 * kHourMs, kMinuteMs, 800, 0);
  auto v = judge_stage(in);
  INFO(v.reason);
  CHECK(v.state == VerdictState::Rejected);
  CHECK(contains(v.reason, "stage_swap_growth_mb"));
  const auto* m = find_metric(v, "stage_swap_growth_mb");
  REQUIRE(m);
  CHECK(m->result == MetricResult::Fail);
  CHECK(m->threshold == Approx(500));

  SECTION("flat swap passes") {
    in.host_samples = host_samples(24 * kHourMs, kMinuteMs, 0, 0);
    auto ok = judge_stage(in);
    INFO(ok.reason);
    CHECK(ok.state == VerdictState::Promoted);
    CHECK(find_metric(ok, "stage_swap_growth_mb")->result == MetricResult::Pass);
    CHECK(find_metric(ok, "stage_swapouts")->result == MetricResult::Pass);
  }
}

TEST_CASE("memory over the stage: swapouts summed from the stage start, counter resets ignored") {
  auto in = passing_gate();
  in.host_samples = host_samples(24 * kHourMs, kMinuteMs, 0, 1500);
  auto v = judge_stage(in);
  INFO(v.reason);
  CHECK(v.state == VerdictState::Rejected);
  const auto* m = find_metric(v, "stage_swapouts");
  REQUIRE(m);
  CHECK(m->result == MetricResult::Fail);
  CHECK(m->estimate == Approx(1500).margin(2));

  SECTION("a counter reset (reboot) is not growth") {
    auto flat = passing_gate();
    flat.host_samples = host_samples(24 * kHourMs, kMinuteMs, 0, 100);
    for (size_t i = flat.host_samples.size() / 2; i < flat.host_samples.size(); ++i)
      *flat.host_samples[i].swapouts -= 5000;
    auto ok = judge_stage(flat);
    CHECK(find_metric(ok, "stage_swapouts")->result == MetricResult::Pass);
    CHECK(find_metric(ok, "stage_swapouts")->estimate < 150);
  }
}

TEST_CASE("SOLO: another engine resident makes the stage inconclusive unless allow_coexisting") {
  Canary c;
  c.functional(12);
  Event e = event(1, kT0 + kMinuteMs, EventKind::DuplicateEngine);
  e.detail_json = R"({"pid":777,"runtime":"ollama","command":"ollama serve"})";
  c.in.events.push_back(e);
  auto v = c.judge();
  INFO(v.reason);
  CHECK(v.state == VerdictState::Inconclusive);
  CHECK(contains(v.reason, "ollama pid 777"));
  CHECK(contains(v.reason, "allow_coexisting"));
  CHECK(find_metric(v, "duplicate_engine")->result == MetricResult::Insufficient);

  c.in.recipe.allow_coexisting = true;
  auto ok = c.judge();
  INFO(ok.reason);
  CHECK(ok.state == VerdictState::Promoted);
  CHECK(find_metric(ok, "duplicate_engine")->result == MetricResult::Pass);
  CHECK(contains(find_metric(ok, "duplicate_engine")->reason, "allowed by allow_coexisting"));
}

TEST_CASE("capacity: every concurrent long prompt must complete clean") {
  Canary c;
  c.functional(12);
  auto member = [&](Outcome o) -> ProbeResult& {
    ProbeResult& r = o == Outcome::Clean ? c.cand.perf(ProbeKind::Capacity, "capacity/32768/fresh/x8",
                                                       Perf{.ttft_ms = 90'000}, CacheState::Fresh)
                                         : c.cand.add(ProbeKind::Capacity, "capacity/32768/fresh/x8", o);
    r.cache_state = CacheState::Fresh;
    r.size_tokens = 32768;
    r.client_concurrency = 8;
    return r;
  };
  for (int i = 0; i < 8; ++i) member(Outcome::Clean);
  ProbeResult& summary = c.cand.add(ProbeKind::Capacity, "capacity/32768/fresh/x8/summary");
  summary.size_tokens = 32768;
  summary.client_concurrency = 8;
  auto ok = c.judge();
  INFO(ok.reason);
  CHECK(ok.state == VerdictState::Promoted);
  const auto* m = find_metric(ok, "capacity/32768x8");
  REQUIRE(m);
  CHECK(m->result == MetricResult::Pass);
  CHECK(m->n == 8);  // the summary is not a member

  member(Outcome::Timeout);
  auto v = c.judge();
  INFO(v.reason);
  CHECK(v.state == VerdictState::Rejected);
  CHECK(contains(v.reason, "capacity 32K x 8"));
  CHECK(find_metric(v, "capacity/32768x8")->result == MetricResult::Fail);
}

TEST_CASE("ab interleaved: the note is the baseline/ab metric, and in the reason when the canary fell back") {
  Canary c;
  c.heartbeats(12);
  c.functional(6);
  c.in.recipe.baseline_id = kBaseline;
  Rows base{kBaseline, 500};
  for (int i = 0; i < 6; ++i)
    for (ProbeKind kind : probe_kinds_for(TaskKind::Functional))
      base.perf(kind, std::string(to_string(kind)), jittered(Perf{}, i));
  c.in.baseline_rows = base.rows;
  const std::string fell_back =
      "ab interleaved fell back to history: the previous build b9430 cannot run beside it: its program "
      "/cellar/9430/llama-server is no longer on disk as it ran";
  SECTION("history: said in the reason and the metric") {
    c.in.recipe.baseline_mode = BaselineMode::History;
    c.in.recipe.baseline_note = fell_back;
    auto v = c.judge();
    INFO(v.reason);
    CHECK(v.state == VerdictState::Promoted);
    CHECK(contains(v.reason, "baseline history; " + fell_back));
    const auto* m = find_metric(v, "baseline/ab");
    REQUIRE(m);
    CHECK(m->reason == fell_back);
    // Stored with the recipe, so that explain recomputes the same words.
    StoredRecipe r;
    r.recipe = c.in.recipe;
    auto back = recipe_from_json(recipe_to_json(r));
    REQUIRE(back.ok());
    CHECK(back->recipe.baseline_note == fell_back);
  }
  SECTION("interleaved: the metric only") {
    c.in.recipe.baseline_mode = BaselineMode::Interleaved;
    c.in.recipe.baseline_note = "the previous build b9430 (/cellar/9430/llama-server) on port 40123 ran beside it";
    auto v = c.judge();
    CHECK_FALSE(contains(v.reason, "ran beside it"));
    REQUIRE(find_metric(v, "baseline/ab"));
  }
  SECTION("no note: no metric, the reason as before") {
    c.in.recipe.baseline_mode = BaselineMode::History;
    auto v = c.judge();
    CHECK_FALSE(find_metric(v, "baseline/ab"));
    CHECK(v.reason.substr(v.reason.size() - 16) == "baseline history");
    StoredRecipe r;
    r.recipe = c.in.recipe;
    CHECK_FALSE(contains(recipe_to_json(r), "baseline_note"));
  }
}

// ---------------------------------------------------------------- burst serialization

namespace {

// A burst summary row as the burst probe stores it (probes/engine_rows.h
// BurstSummary::to_json): `n` members each answered, never two decoding at
// once, TTFT rising by `rise_ms` a place, one answer's
// service time `service_ms`, on a runtime with `slots` slots.
ProbeResult& burst_summary(Rows& rows, int n, double rise_ms, double service_ms, int slots, Outcome outcome) {
  ProbeResult& r = rows.add(ProbeKind::Burst, "burst/" + std::to_string(n) + "/summary", outcome);
  r.client_concurrency = n;
  r.runtime_slots = slots;
  const double span = rise_ms * (n - 1);
  nlohmann::ordered_json j;
  j["n"] = n;
  j["clean"] = n;
  j["peak_decoding"] = 1;
  j["service_ms"] = service_ms;
  j["queue_span_ms"] = span;
  j["queue_ratio"] = span / ((n - 1) * service_ms);
  j["rise_per_place_ms"] = rise_ms;
  j["answered"] = n;
  j["serialized"] = true;
  j["runtime_slots"] = slots;
  j["fifo"] = outcome == Outcome::SerializedBurst ? "failure" : "under_floor";
  r.extra_json = j.dump();
  return r;
}

}  // namespace

TEST_CASE("burst serialization: a 2 ms answer's staircase on a busy host is under the floor, not serial") {
  Canary c;
  c.functional(2);
  // Six bursts of 6 on 4 slots; two drew a staircase of ~2 ms steps (the host's
  // scheduling: a member that found the loop late), as the field's compiler-loaded
  // host did. The probe of an earlier release marked them serialized_burst.
  for (int i = 0; i < 4; ++i) burst_summary(c.cand, 6, 0.3, 2.0, 4, Outcome::Clean);
  burst_summary(c.cand, 6, 2.1, 2.0, 4, Outcome::SerializedBurst);
  burst_summary(c.cand, 6, 2.4, 2.1, 4, Outcome::SerializedBurst);
  const VerdictRow v = c.judge();
  INFO(v.reason);
  const auto* b = find_metric(v, "burst_serialization");
  REQUIRE(b);
  CHECK(b->result == MetricResult::Pass);
  CHECK(b->n == 6);
  CHECK(contains(b->reason, "0 of 6 bursts served one at a time on a multi-slot runtime"));
  CHECK(contains(b->reason, "2 more were, but their time to first token rose by at most 2.4 ms per place"));
  CHECK(contains(b->reason, "under the floor: an effect nobody would feel"));
  CHECK(contains(b->reason,
                 "floors: 0.75 of the service time (judge.serial_min_share) and 50 ms "
                 "(judge.serial_min_effect_ms)"));
  CHECK_FALSE(contains(v.reason, "burst:"));
  CHECK(v.state != VerdictState::Rejected);
}

TEST_CASE("burst serialization: 150 ms answers served one at a time on 2 slots still reject, naming the rise") {
  Canary c;
  c.functional(2);
  burst_summary(c.cand, 8, 152, 150, 2, Outcome::SerializedBurst);
  burst_summary(c.cand, 8, 40, 150, 2, Outcome::Clean).extra_json = R"({"n": 8, "answered": 8,
    "peak_decoding": 2, "service_ms": 150, "queue_span_ms": 280, "queue_ratio": 0.27, "runtime_slots": 2})";
  const VerdictRow v = c.judge();
  INFO(v.reason);
  const auto* b = find_metric(v, "burst_serialization");
  REQUIRE(b);
  CHECK(b->result == MetricResult::Fail);
  CHECK(b->estimate == 1);
  CHECK(contains(b->reason, "1 of 2 bursts served one at a time on a multi-slot runtime"));
  CHECK(contains(b->reason,
                 "burst/8/summary: 8 requests served one at a time on a runtime with 2 slots (time to "
                 "first token rose by 152 ms per place in the queue, 1.01 of one answer's service time "
                 "(150 ms))"));
  CHECK(contains(b->reason, "floors: 0.75 of the service time"));
  CHECK(v.state == VerdictState::Rejected);
  CHECK(contains(v.reason, "burst: 1 of 2 bursts"));
}

TEST_CASE("burst serialization: the floors are the recipe's; a recipe stored before them judges as it did") {
  Canary c;
  c.functional(2);
  burst_summary(c.cand, 6, 1.9, 2.1, 4, Outcome::Clean);                               // 0.90 of a service time a place
  CHECK(find_metric(c.judge(), "burst_serialization")->result == MetricResult::Pass);  // 1.9 ms: under 50 ms
  // Configured floors: 1 ms lets the 1.9 ms rise reject ...
  c.in.recipe.judge.serial_min_effect_ms = 1;
  CHECK(find_metric(c.judge(), "burst_serialization")->result == MetricResult::Fail);
  // ... unless each place must add a whole service time: 0.90 is not served one at a time.
  c.in.recipe.judge.serial_min_share = 1.0;
  const VerdictRow share = c.judge();
  CHECK(find_metric(share, "burst_serialization")->result == MetricResult::Pass);
  CHECK(contains(find_metric(share, "burst_serialization")->reason, "floors: 1.00 of the service time"));

  // Stored and read back: the floors travel with the recipe.
  StoredRecipe r;
  r.recipe = c.in.recipe;
  r.recipe.judge.serial_min_share = 0.8;
  r.recipe.judge.serial_min_effect_ms = 120;
  auto back = recipe_from_json(recipe_to_json(r));
  REQUIRE(back.ok());
  CHECK(back->recipe.judge.serial_min_share == 0.8);
  CHECK(back->recipe.judge.serial_min_effect_ms == 120);
  // A recipe stored before the floors: the share built in then, no floor in ms,
  // so explain recomputes the old rejection of the 2 ms staircase.
  auto j = nlohmann::json::parse(recipe_to_json(r));
  j["judge"].erase("serial_min_share");
  j["judge"].erase("serial_min_effect_ms");
  auto old = recipe_from_json(j.dump());
  REQUIRE(old.ok());
  CHECK(old->recipe.judge.serial_min_share == 0.75);
  CHECK(old->recipe.judge.serial_min_effect_ms == 0);
  Canary before;
  before.functional(2);
  burst_summary(before.cand, 6, 2.4, 2.1, 4, Outcome::SerializedBurst);
  before.in.recipe.judge = old->recipe.judge;
  CHECK(find_metric(before.judge(), "burst_serialization")->result == MetricResult::Fail);
}

TEST_CASE("burst serialization: one slot is the expected FIFO whatever the rise; no figures, the probe's call") {
  Canary c;
  c.functional(2);
  burst_summary(c.cand, 8, 152, 150, 1, Outcome::Clean);
  CHECK(find_metric(c.judge(), "burst_serialization")->result == MetricResult::Pass);
  // A summary without figures (hand-made, or a store's oldest rows): its outcome stands.
  c.cand.add(ProbeKind::Burst, "burst/8/summary", Outcome::SerializedBurst).detail = "8 requests served one at a time";
  const VerdictRow v = c.judge();
  const auto* b = find_metric(v, "burst_serialization");
  REQUIRE(b);
  CHECK(b->result == MetricResult::Fail);
  CHECK(contains(b->reason, "(no queue figures stored)"));
}
