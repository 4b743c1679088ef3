// Outcomes named for what happened, through the fake llama-server on
// 127.0.0.1: a burst far larger than the runtime's slots waits in its queue
// (llama-server writes nothing until a slot takes a request) and is not read
// as hangs; a runtime that drops what it cannot admit gives connection_reset
// rows, not no_body or stalled (docs/DESIGN.md §2.1, §2.2).
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
