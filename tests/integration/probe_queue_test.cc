// Outcomes named for what happened, through the fake llama-server on
// 127.0.0.1: a burst far larger than the runtime's slots waits in its queue
// (llama-server writes nothing until a slot takes a request) and is not read
// as hangs; a lone request waiting behind another client's answers is queued,
// not hung, and a queue that never drains is queue_timeout; a runtime that
// drops what it cannot admit gives connection_reset rows, not no_body or
// stalled (docs/DESIGN.md §2.1, §2.2).
#include <nlohmann/json.hpp>

#include <thread>

#include "tests/catch.h"
#include "tests/fake_runtime/fake_runtime.h"
#include "tests/fake_runtime/test_support.h"
#include "tests/integration/probe_harness.h"

using namespace soak;
using namespace soak::probe_test;
using fake::FakeRuntime;
using fake::Flavour;
using fake::ListenerConfig;
using fake::Scenario;

namespace {

struct Fake {
  explicit Fake(ListenerConfig cfg) : rt({std::move(cfg)}) { REQUIRE(rt.start().ok()); }
  std::string url() const { return rt.base_url(0); }
  FakeRuntime rt;
};

ListenerConfig two_slots(Scenario s) {
  ListenerConfig c = ListenerConfig::make(s, Flavour::LlamaCpp);
  c.knobs.slots = 2;
  c.knobs.token_interval_ms = 1;
  return c;
}

// Chat rows (no health, model list or summary).
std::vector<const ProbeResult*> chat_rows(const std::vector<ProbeResult>& rows) {
  std::vector<const ProbeResult*> out;
  for (const auto& r : rows)
    if (r.kind == ProbeKind::Identity || r.kind == ProbeKind::Marker || r.kind == ProbeKind::Stream ||
        r.kind == ProbeKind::Burst)
      if (r.workload_id.find("summary") == std::string::npos) out.push_back(&r);
  return out;
}

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

int count(const std::vector<ProbeResult>& rows, Outcome o) {
  int n = 0;
  for (const auto& r : rows)
    if (r.kind == ProbeKind::Burst && r.workload_id.find("summary") == std::string::npos && r.outcome == o) ++n;
  return n;
}

}  // namespace

TEST_CASE("queue: a burst of 80 on --parallel 2 waits in the runtime's queue and is not read as 78 hangs") {
  Fake f(two_slots(Scenario::Healthy));
  Harness h;
  CandidateConfig c = candidate(f.url());
  // 40 rounds of two answers take well over this stall timeout; each round is far inside it.
  c.settings.limits.stall_timeout_ms = 500;
  c.settings.burst_sizes = {80};
  auto rows = h.run(c, {ProbeKind::Burst});
  INFO(describe(rows));
  REQUIRE(rows.size() == 81);
  CHECK(count(rows, Outcome::Clean) == 80);
  CHECK(count(rows, Outcome::Stalled) == 0);
  const ProbeResult* summary = find_row(rows, ProbeKind::Burst, "burst/80/summary");
  REQUIRE(summary);
  auto s = nlohmann::json::parse(summary->extra_json);
  CHECK(s["clean"] == 80);
  // The queue really was longer than the stall timeout: the last first token came after it.
  int64_t latest_ttft_us = 0;
  for (const auto& r : rows)
    if (r.t_first_token_us) latest_ttft_us = std::max(latest_ttft_us, *r.t_first_token_us);
  CHECK(latest_ttft_us > c.settings.limits.stall_timeout_ms * 1000);
}

TEST_CASE("queue: another client's requests ahead in the queue: the runtime's own queue state shows it moving") {
  // Eight requests of another client hold both slots for four rounds of
  // ~300 ms; the burst of 4 queues behind them with a 600 ms stall timeout.
  // Nothing of soakd's is served for ~1.2 s: only the runtime's /slots (a
  // slot taking the next task) says the queue moves.
  ListenerConfig cfg = two_slots(Scenario::Healthy);
  cfg.knobs.token_interval_ms = 20;
  cfg.knobs.reply_tokens = 15;
  Fake f(cfg);
  constexpr int kForeign = 8;
  struct Joined {
    std::vector<std::thread> v;
    ~Joined() {
      for (auto& t : v) t.join();
    }
  } foreign;
  for (int i = 0; i < kForeign; ++i)
    foreign.v.emplace_back([&f, i] {
      fake::testing::fetch(f.url() + "/v1/chat/completions",
                           fake::testing::chat_body("another client " + std::to_string(i), false).dump());
    });
  REQUIRE(f.rt.wait_for(
      0, [](const fake::ListenerStats& s) { return s.processing == 2 && s.deferred == kForeign - 2; },
      std::chrono::milliseconds(5'000)));
  auto burst = [&](RuntimeKind kind) {
    Harness h;
    CandidateConfig c = candidate(f.url(), kind);
    c.settings.limits.stall_timeout_ms = 600;
    c.settings.burst_sizes = {4};
    return h.run(c, {ProbeKind::Burst});
  };
  SECTION("llama.cpp: /slots read while the members wait; none is stalled") {
    auto rows = burst(RuntimeKind::LlamaCpp);
    INFO(describe(rows));
    CHECK(count(rows, Outcome::Clean) == 4);
    CHECK(count(rows, Outcome::Stalled) == 0);
    CHECK(f.rt.stats().deferred_total >= kForeign - 2 + 4);  // the members really waited in its queue
  }
  SECTION("a runtime with no queue route: the same wait reads as stalls") {
    auto rows = burst(RuntimeKind::OpenAI);
    INFO(describe(rows));
    CHECK(count(rows, Outcome::Stalled) >= 2);
  }
}

TEST_CASE("queue: a runtime that stops serving its queue is still stalled") {
  // keepalives-only never answers: nothing ahead finishes, so nothing extends the budget.
  ListenerConfig cfg = two_slots(Scenario::KeepalivesOnly);
  cfg.knobs.keepalive_interval_ms = 50;
  Fake f(cfg);
  Harness h;
  CandidateConfig c = candidate(f.url());
  c.settings.limits.stall_timeout_ms = 300;
  c.settings.burst_sizes = {6};
  auto rows = h.run(c, {ProbeKind::Burst});
  INFO(describe(rows));
  CHECK(count(rows, Outcome::Stalled) == 6);
}

TEST_CASE("reset: connections dropped before any status line are connection_reset, not no_body or stalled") {
  Fake f(two_slots(Scenario::ResetOverSlots));
  Harness h;
  CandidateConfig c = candidate(f.url());
  c.settings.limits.stall_timeout_ms = 1'000;
  c.settings.burst_sizes = {8};
  auto rows = h.run(c, {ProbeKind::Burst});
  INFO(describe(rows));
  const int resets = count(rows, Outcome::ConnectionReset);
  CHECK(resets >= 1);
  CHECK(resets + count(rows, Outcome::Clean) == 8);
  CHECK(count(rows, Outcome::NoBody) == 0);
  CHECK(count(rows, Outcome::Stalled) == 0);
  for (const auto& r : rows)
    if (r.outcome == Outcome::ConnectionReset) {
      CHECK(r.detail.rfind("connection closed or reset before any status line", 0) == 0);  // the classifier's words
      CHECK_FALSE(r.http_status.has_value());
    }
}

// ---------------------------------------------------------------- queued is not hung (docs/DESIGN.md §2.2)
// A lone request — not a burst, no group watching the queue — waiting behind
// another client's requests in llama-server's queue. The fake's background
// load is that other client: two requests always in the runtime, each holding
// a slot for 3 s, then queueing again behind what waits. Each of soakd's
// requests waits up to 3 s for a slot, longer than its 2 s stall timeout, and
// llama-server writes nothing to it meanwhile (tools/server/server-context.cpp
// sends the status line with the first result).

TEST_CASE("queue: a lone request behind another client's answers on 2 slots is queued, not hung") {
  ListenerConfig cfg = two_slots(Scenario::Healthy);
  cfg.knobs.background_load = 2;
  cfg.knobs.background_ms = 3'000;
  Fake f(cfg);
  REQUIRE(f.rt.wait_for(
      0, [](const fake::ListenerStats& s) { return s.processing == 2; }, std::chrono::milliseconds(5'000)));
  auto probe = [&](RuntimeKind kind, std::vector<ProbeKind> kinds) {
    Harness h;
    CandidateConfig c = candidate(f.url(), kind);
    c.settings.limits.stall_timeout_ms = 2'000;
    c.settings.limits.wall_timeout_ms = 15'000;
    return h.run(c, std::move(kinds));
  };
  SECTION("llama.cpp: its /metrics says a request waits; every row clean, the wait beside its TTFT") {
    auto rows = probe(RuntimeKind::LlamaCpp, {ProbeKind::Identity, ProbeKind::Marker, ProbeKind::Stream});
    INFO(describe(rows));
    const auto chats = chat_rows(rows);
    REQUIRE(chats.size() == 3);
    int queued = 0;
    for (const ProbeResult* r : chats) {
      CHECK(r->outcome == Outcome::Clean);
      if (!r->queue_wait_us) continue;
      ++queued;
      CHECK(*r->queue_wait_us > 2'000'000);  // longer than its stall timeout
      CHECK(*r->queue_wait_us < 3'500'000);  // no longer than another client's answer
      // The first byte came when a slot took it: the wait is inside it, and inside TTFT.
      REQUIRE(r->t_first_byte_us);
      CHECK(*r->t_first_byte_us >= *r->queue_wait_us - 100'000);
      if (r->t_first_token_us) CHECK(*r->t_first_token_us >= *r->t_first_byte_us);
      CHECK(has(r->detail, "in the runtime's queue (/metrics: "));
    }
    CHECK(queued >= 2);  // each request after the first found both slots taken
  }
  SECTION("a runtime that shows no queue and whose slots are unknown: the same wait is still a stall") {
    auto rows = probe(RuntimeKind::OpenAI, {ProbeKind::Stream});
    INFO(describe(rows));
    const auto chats = chat_rows(rows);
    REQUIRE(chats.size() == 1);
    CHECK(chats[0]->outcome == Outcome::Stalled);
    CHECK_FALSE(chats[0]->queue_wait_us);
  }
}

TEST_CASE("queue: a queue that never drains is queue_timeout at the wall timeout, not a hung stream") {
  // The runtime stopped serving: every slot busy, the queue growing, /health still 200.
  ListenerConfig cfg = two_slots(Scenario::StopServing);
  Fake f(cfg);
  Harness h;
  CandidateConfig c = candidate(f.url());
  c.settings.limits.stall_timeout_ms = 500;
  c.settings.limits.wall_timeout_ms = 3'000;
  auto rows = h.run(c, {ProbeKind::Health, ProbeKind::Stream});
  INFO(describe(rows));
  const ProbeResult* health = find_row(rows, ProbeKind::Health, "health");
  REQUIRE(health);
  CHECK(health->outcome == Outcome::Clean);
  const auto chats = chat_rows(rows);
  REQUIRE(chats.size() == 1);
  const ProbeResult& r = *chats[0];
  CHECK(r.outcome == Outcome::QueueTimeout);
  CHECK(category_of(r.outcome) == OutcomeCategory::CandidateFailure);  // counted, but not a hung stream
  CHECK(has(r.detail, "no first byte within the wall timeout of 3000 ms"));
  CHECK(has(r.detail, "/metrics: 1 request waiting"));
  REQUIRE(r.queue_wait_us);
  CHECK(*r.queue_wait_us >= 2'500'000);  // waited from its budget's end to the wall, never let in
  CHECK_FALSE(r.t_first_byte_us);
}

TEST_CASE("queue: soakd's own requests filling the slots hold the ones behind them, on a runtime that shows no queue") {
  // A burst of 4 on 2 slots whose answers stream for ~1.5 s: members 3 and 4
  // wait longer than the 1 s stall timeout with nothing written to them. The
  // runtime (an OpenAI-compatible server) shows no queue; only the slot count
  // says they wait.
  ListenerConfig cfg = two_slots(Scenario::Healthy);
  cfg.knobs.token_interval_ms = 50;
  cfg.knobs.reply_tokens = 30;
  Fake f(cfg);
  auto burst = [&](std::optional<int> slots) {
    Harness h;
    CandidateConfig c = candidate(f.url(), RuntimeKind::OpenAI);
    c.slots = slots;
    c.settings.limits.stall_timeout_ms = 1'000;
    c.settings.burst_sizes = {4};
    return h.run(c, {ProbeKind::Burst});
  };
  SECTION("its slots known: none stalled, the two behind say they waited") {
    auto rows = burst(2);
    INFO(describe(rows));
    CHECK(count(rows, Outcome::Clean) == 4);
    int queued = 0;
    for (const ProbeResult* r : chat_rows(rows))
      if (r->queue_wait_us) {
        ++queued;
        CHECK(has(r->detail, "2 of soakd's own requests in its 2 slots"));
      }
    CHECK(queued == 2);
  }
  SECTION("its slots unknown: the two behind are stalled, as before") {
    auto rows = burst(std::nullopt);
    INFO(describe(rows));
    CHECK(count(rows, Outcome::Stalled) == 2);
  }
}
