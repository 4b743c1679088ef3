// Every probe kind against the fake runtime (in-process, 127.0.0.1, ephemeral
// port): the healthy runtime gives clean rows for every kind, and each
// injected fault lands in its own outcome class. Waits are the loop's; the
// fake paces itself with timers; nothing sleeps.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "probes/engine_rows.h"
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

struct Fake {
  explicit Fake(ListenerConfig cfg) : rt({std::move(cfg)}) { REQUIRE(rt.start().ok()); }
  explicit Fake(Scenario s, Flavour f = Flavour::LlamaCpp) : Fake(ListenerConfig::make(s, f)) {}
  std::string url() const { return rt.base_url(0); }
  FakeRuntime rt;
};

ListenerConfig fast(Scenario s, Flavour f = Flavour::LlamaCpp) {
  ListenerConfig c = ListenerConfig::make(s, f);
  c.knobs.token_interval_ms = 1;
  return c;
}

// A port on 127.0.0.1 nobody listens on: bound, never listening, then closed.
int refused_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

ProbeResult only(const std::vector<ProbeResult>& rows, ProbeKind kind) {
  INFO(describe(rows));
  const ProbeResult* r = find_row(rows, kind);
  REQUIRE(r != nullptr);
  return *r;
}

nlohmann::json extra(const ProbeResult& r) { return nlohmann::json::parse(r.extra_json); }

}  // namespace

TEST_CASE("healthy runtime: every probe kind is clean, with timings, tokens and locators") {
  Fake f(fast(Scenario::Healthy));
  Harness h;
  CandidateConfig c = candidate(f.url());
  std::vector<ProbeKind> kinds = probes::all_probe_kinds();
  kinds.push_back(ProbeKind::Embeddings);
  kinds.push_back(ProbeKind::Rerank);
  auto rows = h.run(c, kinds);
  INFO(describe(rows));
  for (ProbeKind k : kinds) CHECK(find_row(rows, k) != nullptr);
  for (const auto& r : rows) {
    INFO(to_string(r.kind) << " " << r.workload_id << ": " << r.detail);
    CHECK(r.outcome == Outcome::Clean);
    CHECK(r.excerpt.empty());
    CHECK_FALSE(r.body_hash.empty());
    CHECK(r.runtime_slots == fake::kDefaultSlots);  // from /props
    CHECK(r.started_wall_ms > 0);
  }
  const ProbeResult stream = only(rows, ProbeKind::Stream);
  CHECK(stream.http_status == 200);
  REQUIRE(stream.t_first_token_us);
  CHECK(*stream.t_first_token_us >= *stream.t_first_event_us);
  CHECK(stream.t_terminal_us);
  CHECK(stream.completion_tokens == fake::kDefaultReplyTokens);
  CHECK(stream.server_predicted_n == fake::kDefaultReplyTokens);
  CHECK(stream.finish_reason == "stop");
  CHECK(stream.response_model == fake::kDefaultModel);
  CHECK(stream.workload_id == "stream");
  CHECK(stream.sampling_json == Sampling{}.to_json());
  // Every chat row names its prompt fixture; rows of one fixed prompt share it.
  for (const auto& r : rows)
    if (r.kind != ProbeKind::Health && r.kind != ProbeKind::Scrape && r.kind != ProbeKind::Identity &&
        r.kind != ProbeKind::Embeddings && r.kind != ProbeKind::Rerank)
      CHECK_FALSE(r.fixture_hash.empty());
  const ProbeResult* first_member = find_row(rows, ProbeKind::Burst, "burst/4");
  REQUIRE(first_member);
  for (const auto& r : rows)
    if (r.workload_id == "burst/4") CHECK(r.fixture_hash == first_member->fixture_hash);

  const ProbeResult* on = find_row(rows, ProbeKind::Thinking, "thinking/on");
  const ProbeResult* off = find_row(rows, ProbeKind::Thinking, "thinking/off");
  REQUIRE(on);
  REQUIRE(off);
  CHECK(on->thinking == true);
  CHECK(off->thinking == false);
  CHECK(on->reasoning_events == fake::kDefaultReasoningTokens);
  CHECK(off->reasoning_events == 0);

  const ProbeResult* fresh = find_row(rows, ProbeKind::LongContext, "long_context/1024/fresh");
  const ProbeResult* repeat = find_row(rows, ProbeKind::LongContext, "long_context/1024/repeat");
  REQUIRE(fresh);
  REQUIRE(repeat);
  CHECK(fresh->cache_state == CacheState::Fresh);
  CHECK(repeat->cache_state == CacheState::Repeat);
  CHECK(fresh->size_tokens == 1024);
  CHECK(fresh->fixture_hash == repeat->fixture_hash);
  CHECK(extra(*fresh)["sized_by"] == "tokenize");

  // Burst of 4 on two slots: members grouped, summary not serialized.
  int members = 0;
  for (const auto& r : rows)
    if (r.kind == ProbeKind::Burst && r.workload_id == "burst/4") {
      ++members;
      CHECK(r.client_concurrency == 4);
    }
  CHECK(members == 4);
  const ProbeResult* summary = find_row(rows, ProbeKind::Burst, "burst/4/summary");
  REQUIRE(summary);
  CHECK(extra(*summary)["n"] == 4);
  CHECK(extra(*summary)["serialized"] == false);
  CHECK(extra(*summary)["peak_decoding"] == 2);

  const ProbeResult cancel = only(rows, ProbeKind::Cancel);
  CHECK(extra(cancel)["cut"] == true);
  CHECK(extra(cancel)["checked_by"] == "slots");

  const ProbeResult* last_turn = nullptr;  // the session's last turn carries the reuse ratio
  for (const auto& r : rows)
    if (r.kind == ProbeKind::SharedPrefix) last_turn = &r;
  REQUIRE(last_turn);
  CHECK(last_turn->cache_state == CacheState::SharedPrefix);
  CHECK(extra(*last_turn)["prefix_turns"] == probes::kSharedPrefixTurns);
  CHECK(extra(*last_turn)["reuse_ratio"].is_number());
  const ProbeResult scrape = only(rows, ProbeKind::Scrape);
  CHECK(extra(scrape)["slots"]["total"] == fake::kDefaultSlots);
  CHECK(extra(scrape)["metrics"].contains("llamacpp:prompt_tokens_total"));
}

TEST_CASE("stream contract faults: no body, no [DONE], stalls, keep-alives, 5xx, loading, refused") {
  CandidateConfig c = candidate("");
  c.settings.limits.stall_timeout_ms = 300;
  Harness h;

  SECTION("200 then no body -> no_body") {
    Fake f(Scenario::OkNoBody);
    c.base_url = f.url();
    CHECK(only(h.run(c, {ProbeKind::Stream}), ProbeKind::Stream).outcome == Outcome::NoBody);
  }
  SECTION("no [DONE] -> no_terminal") {
    Fake f(fast(Scenario::NoDone));
    c.base_url = f.url();
    const ProbeResult r = only(h.run(c, {ProbeKind::Stream}), ProbeKind::Stream);
    CHECK(r.outcome == Outcome::NoTerminal);
    CHECK_FALSE(r.excerpt.empty());  // failures keep a short excerpt
  }
  SECTION("stall mid-stream -> stalled, with the first token recorded") {
    Fake f(fast(Scenario::StallMidStream));
    c.base_url = f.url();
    const ProbeResult r = only(h.run(c, {ProbeKind::Stream}), ProbeKind::Stream);
    CHECK(r.outcome == Outcome::Stalled);
    CHECK(r.t_first_token_us);
  }
  SECTION("keep-alives only (llama.cpp pings, oMLX keep-alive chunks) -> stalled, no first token") {
    for (Flavour fl : {Flavour::LlamaCpp, Flavour::Omlx}) {
      ListenerConfig lc = ListenerConfig::make(Scenario::KeepalivesOnly, fl);
      lc.knobs.keepalive_interval_ms = 50;  // several keep-alives inside the stall window
      Fake f(lc);
      CandidateConfig k = c;
      k.base_url = f.url();
      k.runtime = fl == Flavour::Omlx ? RuntimeKind::Omlx : RuntimeKind::LlamaCpp;
      const ProbeResult r = only(h.run(k, {ProbeKind::Stream}), ProbeKind::Stream);
      INFO(to_string(fl) << ": " << r.detail);
      CHECK(r.outcome == Outcome::Stalled);  // not a wall timeout: keep-alives did not reset the clock
      CHECK_FALSE(r.t_first_token_us);
      CHECK(r.content_events == 0);
    }
  }
  SECTION("wall timeout -> timeout; response-size cap -> truncated") {
    ListenerConfig held = ListenerConfig::make(Scenario::KeepalivesOnly);
    held.knobs.keepalive_interval_ms = 50;
    Fake f(held);
    CandidateConfig k = c;
    k.base_url = f.url();
    k.settings.limits.wall_timeout_ms = 300;
    k.settings.limits.stall_timeout_ms = 5'000;
    CHECK(only(h.run(k, {ProbeKind::Stream}), ProbeKind::Stream).outcome == Outcome::Timeout);

    Fake loop(fast(Scenario::RepetitionLoop));  // 256 tokens: far more than 1 KiB of SSE
    CandidateConfig capped = c;
    capped.base_url = loop.url();
    capped.settings.limits.max_response_bytes = 1024;
    const ProbeResult r = only(h.run(capped, {ProbeKind::Repetition}), ProbeKind::Repetition);
    CHECK(r.outcome == Outcome::Truncated);
    CHECK(r.bytes_received <= 1024);
  }
  SECTION("5xx -> http_5xx") {
    ListenerConfig lc = ListenerConfig::make(Scenario::Burst5xx);
    lc.knobs.error_every = 1;
    lc.knobs.error_run = 1;
    Fake f(lc);
    c.base_url = f.url();
    const ProbeResult r = only(h.run(c, {ProbeKind::Stream}), ProbeKind::Stream);
    CHECK(r.outcome == Outcome::Http5xx);
    CHECK(r.http_status == 500);
  }
  SECTION("loading -> loading, on health and on chat") {
    Fake f(Scenario::Loading);
    c.base_url = f.url();
    auto rows = h.run(c, {ProbeKind::Health, ProbeKind::Stream});
    CHECK(only(rows, ProbeKind::Health).outcome == Outcome::Loading);
    CHECK(only(rows, ProbeKind::Stream).outcome == Outcome::Loading);
  }
  SECTION("refused port -> connect_refused") {
    c.base_url = "http://127.0.0.1:" + std::to_string(refused_port());
    auto rows = h.run(c, {ProbeKind::Health, ProbeKind::Stream});
    CHECK(only(rows, ProbeKind::Health).outcome == Outcome::ConnectRefused);
    CHECK(only(rows, ProbeKind::Stream).outcome == Outcome::ConnectRefused);
  }
}

TEST_CASE("content faults: alias, empty tool args, invalid JSON, repetition") {
  CandidateConfig c = candidate("");
  Harness h;
  SECTION("model alias -> identity_mismatch (identity and any chat probe)") {
    Fake f(fast(Scenario::ModelAlias));
    c.base_url = f.url();
    auto rows = h.run(c, {ProbeKind::Identity, ProbeKind::Marker});
    CHECK(only(rows, ProbeKind::Identity).outcome == Outcome::IdentityMismatch);
    CHECK(only(rows, ProbeKind::Marker).outcome == Outcome::IdentityMismatch);
  }
  SECTION("empty tool args -> empty_tool_args") {
    Fake f(fast(Scenario::EmptyToolArgs));
    c.base_url = f.url();
    CHECK(only(h.run(c, {ProbeKind::ToolCall}), ProbeKind::ToolCall).outcome == Outcome::EmptyToolArgs);
  }
  SECTION("invalid JSON under json_schema -> invalid_json") {
    Fake f(fast(Scenario::InvalidJson));
    c.base_url = f.url();
    CHECK(only(h.run(c, {ProbeKind::StrictJson}), ProbeKind::StrictJson).outcome == Outcome::InvalidJson);
  }
  SECTION("repetition loop -> repetition") {
    Fake f(fast(Scenario::RepetitionLoop));
    c.base_url = f.url();
    CHECK(only(h.run(c, {ProbeKind::Repetition}), ProbeKind::Repetition).outcome == Outcome::Repetition);
  }
}

TEST_CASE("slot stuck after a cancel -> stale_slot; the healthy runtime frees it") {
  probes::EngineOptions o;
  o.slot_free_bound_ms = 400;
  o.slot_poll_ms = 20;
  Harness h(o);
  Fake stuck(fast(Scenario::StuckSlotAfterCancel));
  const ProbeResult r = only(h.run(candidate(stuck.url()), {ProbeKind::Cancel}), ProbeKind::Cancel);
  CHECK(r.outcome == Outcome::StaleSlot);
  CHECK(extra(r)["cut"] == true);

  // Without /slots (mlx-lm's adapter has none) the follow-up request is the proof.
  ListenerConfig lc = fast(Scenario::StuckSlotAfterCancel, Flavour::MlxLm);
  lc.knobs.server_max_tokens = 0;
  Fake mlx(lc);
  const ProbeResult m = only(h.run(candidate(mlx.url(), RuntimeKind::MlxLm), {ProbeKind::Cancel}), ProbeKind::Cancel);
  CHECK(m.outcome == Outcome::StaleSlot);
  CHECK(extra(m)["checked_by"] == "follow_up");

  ListenerConfig ok = fast(Scenario::Healthy, Flavour::MlxLm);
  ok.knobs.server_max_tokens = 0;
  Fake healthy(ok);
  const ProbeResult g =
      only(h.run(candidate(healthy.url(), RuntimeKind::MlxLm), {ProbeKind::Cancel}), ProbeKind::Cancel);
  CHECK(g.outcome == Outcome::Clean);
  CHECK(extra(g)["checked_by"] == "follow_up");
}

TEST_CASE("single-slot FIFO: the expected queue, recorded and clean; members stay clean") {
  Fake f(Scenario::FifoSerial);
  Harness h;
  CandidateConfig c = candidate(f.url());
  c.settings.burst_sizes = {3};
  auto rows = h.run(c, {ProbeKind::Health, ProbeKind::Scrape, ProbeKind::Burst});
  INFO(describe(rows));
  const ProbeResult* summary = find_row(rows, ProbeKind::Burst, "burst/3/summary");
  REQUIRE(summary);
  CHECK(summary->outcome == Outcome::Clean);
  CHECK(summary->runtime_slots == 1);  // read from /props total_slots
  auto s = extra(*summary);
  CHECK(s["serialized"] == true);
  CHECK(s["fifo"] == "expected");
  CHECK(s["runtime_slots"] == 1);
  CHECK(s["queue_ratio"].get<double>() >= probes::kSerializedQueueRatio);
  CHECK(s["clean"] == 3);
  for (const auto& r : rows) {
    if (r.kind != ProbeKind::Burst) continue;
    CHECK(r.group_id == summary->group_id);
    CHECK(r.client_concurrency == 3);
    CHECK(r.outcome == Outcome::Clean);
  }
}

TEST_CASE("FIFO on a runtime configured with two slots: the burst summary is serialized_burst") {
  Fake f(Scenario::FifoSerial);
  Harness h;
  CandidateConfig c = candidate(f.url());
  c.slots = 2;
  c.settings.burst_sizes = {3};
  auto rows = h.run(c, {ProbeKind::Burst});
  INFO(describe(rows));
  REQUIRE(rows.size() == 4);
  const ProbeResult* summary = find_row(rows, ProbeKind::Burst, "burst/3/summary");
  REQUIRE(summary);
  CHECK(summary->outcome == Outcome::SerializedBurst);
  CHECK(summary->detail.find("2 slots") != std::string::npos);
  auto s = extra(*summary);
  CHECK(s["serialized"] == true);
  CHECK(s["fifo"] == "failure");
  CHECK(s["peak_decoding"] == 1);
  CHECK(s["clean"] == 3);
  for (const auto& r : rows) {
    CHECK(r.group_id == summary->group_id);
    CHECK(r.client_concurrency == 3);
    if (&r != summary) CHECK(r.outcome == Outcome::Clean);
  }
}

TEST_CASE("prefill cost with a prefix cache: the exact repeat is served from cache, fresh is not") {
  Fake f(Scenario::PrefillCost);
  Harness h;
  CandidateConfig c = candidate(f.url());
  c.settings.long_context_sizes = {2048};
  auto rows = h.run(c, {ProbeKind::LongContext});
  INFO(describe(rows));
  const ProbeResult* fresh = find_row(rows, ProbeKind::LongContext, "long_context/2048/fresh");
  const ProbeResult* repeat = find_row(rows, ProbeKind::LongContext, "long_context/2048/repeat");
  REQUIRE(fresh);
  REQUIRE(repeat);
  CHECK(fresh->outcome == Outcome::Clean);
  CHECK(repeat->outcome == Outcome::Clean);
  CHECK(fresh->cache_state == CacheState::Fresh);
  CHECK(repeat->cache_state == CacheState::Repeat);
  REQUIRE(fresh->prompt_tokens);
  CHECK(*fresh->prompt_tokens >= 2048);  // the real count, sized by /tokenize
  CHECK(fresh->server_cache_n.value_or(-1) == 0);
  CHECK(repeat->server_cache_n.value_or(0) == *fresh->prompt_tokens - 1);
  CHECK(repeat->server_prompt_n.value_or(0) == 1);
  // 250 ms per 1K uncached tokens against one token: the repeat is far faster.
  REQUIRE(fresh->t_first_token_us);
  REQUIRE(repeat->t_first_token_us);
  CHECK(*repeat->t_first_token_us * 4 < *fresh->t_first_token_us);
  CHECK(*repeat->server_prompt_ms * 4 < *fresh->server_prompt_ms);
}

TEST_CASE("decode slowdown with high draft acceptance: acceptance recorded, decode slower") {
  ListenerConfig slow = ListenerConfig::make(Scenario::DraftSlowdown);
  slow.knobs.reply_tokens = 8;
  ListenerConfig quick = ListenerConfig::make(Scenario::Healthy);
  quick.knobs.reply_tokens = 8;
  Fake fs(slow), fq(quick);
  Harness h;
  const ProbeResult s = only(h.run(candidate(fs.url()), {ProbeKind::Stream}), ProbeKind::Stream);
  const ProbeResult q = only(h.run(candidate(fq.url()), {ProbeKind::Stream}), ProbeKind::Stream);
  CHECK(s.outcome == Outcome::Clean);
  REQUIRE(s.server_draft_n);
  REQUIRE(s.server_draft_accepted);
  CHECK(static_cast<double>(*s.server_draft_accepted) / static_cast<double>(*s.server_draft_n) > 0.8);
  CHECK_FALSE(q.server_draft_n);
  // The fake decodes ten times slower per token here; half is a wide margin.
  REQUIRE(s.server_predicted_tps);
  REQUIRE(q.server_predicted_tps);
  CHECK(*s.server_predicted_tps * 2 < *q.server_predicted_tps);
  REQUIRE(s.client_decode_tps);
  REQUIRE(q.client_decode_tps);
  CHECK(*s.client_decode_tps * 2 < *q.client_decode_tps);
}

TEST_CASE("a missing API key variable is soakd's own error, and nothing is sent") {
  Fake f(Scenario::Healthy);
  probes::EngineOptions o;
  o.env = [](const std::string&) -> std::optional<std::string> { return std::nullopt; };
  Harness h(o);
  CandidateConfig c = candidate(f.url());
  c.api_key_env = "SOAKD_TEST_KEY";
  auto rows = h.run(c, {ProbeKind::Health, ProbeKind::Stream});
  REQUIRE(rows.size() == 2);
  for (const auto& r : rows) {
    CHECK(r.outcome == Outcome::HarnessError);
    CHECK(r.detail.find("SOAKD_TEST_KEY") != std::string::npos);
  }
  CHECK(f.rt.stats(0).http_requests == 0);
}

TEST_CASE("a burst of 80, as the field reports fire them: released within 200 ms, every member answered") {
  ListenerConfig cfg = ListenerConfig::make(Scenario::Healthy);
  cfg.knobs.slots = 8;
  cfg.knobs.token_interval_ms = 1;
  Fake f(cfg);
  Harness h;
  CandidateConfig c = candidate(f.url());
  // Queued members wait for a slot before their first token: time enough on a loaded host.
  c.settings.limits.stall_timeout_ms = 20'000;
  c.settings.limits.wall_timeout_ms = 25'000;
  c.settings.burst_sizes = {80};
  auto rows = h.run(c, {ProbeKind::Burst});
  INFO(describe(rows));
  REQUIRE(rows.size() == 81);
  const ProbeResult* summary = find_row(rows, ProbeKind::Burst, "burst/80/summary");
  REQUIRE(summary);
  CHECK(summary->outcome == Outcome::Clean);
  auto s = extra(*summary);
  CHECK(s["clean"] == 80);
  CHECK(s["send_spread_ms"].get<double>() < 200);
  CHECK(s["serialized"] == false);
  CHECK(f.rt.stats(0).max_processing == 8);
}

TEST_CASE("capacity: by default 32K x the runtime's slots at once, members and a summary") {
  Fake f(fast(Scenario::Healthy));
  Harness h;
  CandidateConfig c = candidate(f.url());  // no capacity configured: 32768 x slots (2, from /props)
  auto rows = h.run(c, {ProbeKind::Capacity});
  INFO(describe(rows));
  REQUIRE(rows.size() == 3);
  int members = 0;
  for (const auto& r : rows)
    if (r.workload_id == "capacity/32768/fresh/x2") {
      ++members;
      CHECK(r.kind == ProbeKind::Capacity);
      CHECK(r.outcome == Outcome::Clean);
      CHECK(r.cache_state == CacheState::Fresh);
      CHECK(r.size_tokens == 32768);
      CHECK(r.client_concurrency == 2);
      CHECK(r.prompt_tokens.value_or(0) > 30000);
    }
  CHECK(members == 2);
  const ProbeResult* summary = find_row(rows, ProbeKind::Capacity, "capacity/32768/fresh/x2/summary");
  REQUIRE(summary);
  CHECK(summary->outcome == Outcome::Clean);
  CHECK(summary->group_id == rows.front().group_id);
  auto s = extra(*summary);
  CHECK(s["clean"] == 2);
  CHECK(s["runtime_slots"] == 2);
  CHECK(s["ttft_p95_ms"].get<double>() > 0);
  CHECK(s["aggregate_tps"].get<double>() > 0);
  CHECK(f.rt.stats(0).max_processing == 2);  // both prefilled at once

  SECTION("configured entries replace the default; one slot and nothing configured runs nothing") {
    c.settings.capacity = std::vector<CapacityEntry>{{2048, 3}};
    auto conf = h.run(c, {ProbeKind::Capacity});
    INFO(describe(conf));
    CHECK(find_row(conf, ProbeKind::Capacity, "capacity/2048/fresh/x3/summary"));
    Fake one(fast(Scenario::FifoSerial));
    Harness h1;
    CHECK(h1.run(candidate(one.url()), {ProbeKind::Capacity}).empty());
  }
}
