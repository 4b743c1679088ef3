// The probe engine's pure parts on literal values: transport end mapping,
// classification of plain and health answers, failure excerpts, the burst
// summary and its FIFO check, the reuse ratio, version-command output, and the
// HttpRequest an exchange builds.
#include <algorithm>

#include <nlohmann/json.hpp>

#include "probes/engine_exchange.h"
#include "probes/engine_rows.h"
#include "probes/probe_build.h"
#include "probes/runtimes/catalog.h"
#include "tests/catch.h"

using namespace soak;
using namespace soak::probes;

namespace {

constexpr int64_t kMs = 1'000'000;

TransferResult answered(int status, std::string body) {
  TransferResult t;
  t.reason = EndReason::Completed;
  t.head.status = status;
  t.body = std::move(body);
  t.bytes_received = static_cast<int64_t>(t.body.size());
  t.times.start_ns = 100 * kMs;
  t.times.connected_ns = 101 * kMs;
  t.times.first_byte_ns = 110 * kMs;
  t.times.done_ns = 120 * kMs;
  return t;
}

BurstMember member(int64_t start_ms, int64_t first_ms, int64_t last_ms, int64_t tokens = 10) {
  BurstMember m;
  m.outcome = Outcome::Clean;
  m.start_ns = start_ms * kMs;
  m.sent_ns = start_ms * kMs;
  m.first_token_ns = first_ms * kMs;
  m.last_token_ns = last_ms * kMs;
  m.done_ns = (last_ms + 1) * kMs;
  m.completion_tokens = tokens;
  return m;
}

}  // namespace

TEST_CASE("transport ends map onto the stream contract's ends") {
  CHECK(transport_end(EndReason::Completed, CutBy::Daemon) == TransportEnd::Completed);
  CHECK(transport_end(EndReason::Stalled, CutBy::Daemon) == TransportEnd::Stalled);
  CHECK(transport_end(EndReason::Timeout, CutBy::Daemon) == TransportEnd::WallTimeout);
  CHECK(transport_end(EndReason::Truncated, CutBy::Daemon) == TransportEnd::SizeCapped);
  CHECK(transport_end(EndReason::PeerClosed, CutBy::Daemon) == TransportEnd::ConnectionLost);
  CHECK(transport_end(EndReason::ConnectRefused, CutBy::Daemon) == TransportEnd::ConnectRefused);
  CHECK(transport_end(EndReason::Error, CutBy::Daemon) == TransportEnd::LocalError);
  // soakd stopping is its own class; the cancel probe's own cut is judged by the probe.
  CHECK(transport_end(EndReason::Cancelled, CutBy::Daemon) == TransportEnd::CancelledByDaemon);
  CHECK(transport_end(EndReason::Cancelled, CutBy::Probe) == TransportEnd::Completed);
}

TEST_CASE("plain routes: transport failures, status classes, a body cut short") {
  CHECK(classify_plain(TransportEnd::Completed, answered(200, "{}")).outcome == Outcome::Clean);
  CHECK(classify_plain(TransportEnd::Completed, answered(404, R"({"error":{"message":"File Not Found"}})")).outcome ==
        Outcome::Http4xx);
  CHECK(classify_plain(TransportEnd::Completed, answered(500, "boom")).outcome == Outcome::Http5xx);
  CHECK(classify_plain(TransportEnd::Completed,
                       answered(503, R"({"error":{"code":503,"message":"Loading model","type":"unavailable_error"}})"))
            .outcome == Outcome::Loading);
  CHECK(classify_plain(TransportEnd::ConnectionLost, answered(200, "{\"a\"")).outcome == Outcome::NoTerminal);
  TransferResult none;
  CHECK(classify_plain(TransportEnd::ConnectionLost, none).outcome == Outcome::ConnectionReset);
  CHECK(classify_plain(TransportEnd::ConnectRefused, none).outcome == Outcome::ConnectRefused);
  CHECK(classify_plain(TransportEnd::Stalled, none).outcome == Outcome::Stalled);
  CHECK(classify_plain(TransportEnd::CancelledByDaemon, none).outcome == Outcome::CancelledByDaemon);
  none.detail = "curl said no";
  Verdict local = classify_plain(TransportEnd::LocalError, none);
  CHECK(local.outcome == Outcome::HarnessError);
  CHECK(local.detail.find("curl said no") != std::string::npos);
}

TEST_CASE("health answers per adapter") {
  CHECK(classify_health(builtin_runtime(RuntimeKind::LlamaCpp), TransportEnd::Completed,
                        answered(200, R"({"status":"ok"})"))
            .outcome == Outcome::Clean);
  CHECK(classify_health(builtin_runtime(RuntimeKind::LlamaCpp), TransportEnd::Completed,
                        answered(503, R"({"error":{"code":503,"message":"Loading model","type":"unavailable_error"}})"))
            .outcome == Outcome::Loading);
  CHECK(classify_health(builtin_runtime(RuntimeKind::RapidMlx), TransportEnd::Completed,
                        answered(503, R"({"detail":"model loading"})"))
            .outcome == Outcome::Loading);
  CHECK(
      classify_health(builtin_runtime(RuntimeKind::Ollama), TransportEnd::Completed, answered(200, "Ollama is running"))
          .outcome == Outcome::Clean);
  CHECK(
      classify_health(builtin_runtime(RuntimeKind::Ollama), TransportEnd::Completed, answered(200, "nginx")).outcome ==
      Outcome::MalformedResponse);
  CHECK(classify_health(builtin_runtime(RuntimeKind::Vllm), TransportEnd::Completed, answered(503, "")).outcome ==
        Outcome::Http5xx);
  CHECK(
      classify_health(builtin_runtime(RuntimeKind::LlamaCpp), TransportEnd::ConnectRefused, TransferResult{}).outcome ==
      Outcome::ConnectRefused);
}

TEST_CASE("row transfer fields count from the request leaving, not from soakd's queueing") {
  SECTION("a reused connection: from the moment the request was about to be sent") {
    ProbeResult r = make_row(ProbeKind::Health, "health");
    fill_transfer(answered(200, "{}"), r);  // queued at 100 ms, connection ready at 101 ms
    CHECK(r.http_status == 200);
    CHECK(r.bytes_received == 2);
    CHECK(r.t_connect_us == 0);
    CHECK(r.t_first_byte_us == 9000);
    CHECK(r.t_done_us == 19000);
    CHECK(r.workload_id == "health");
  }
  SECTION("a new connection: from the request leaving; the connection's setup is its own column") {
    TransferResult t = answered(200, "{}");
    t.times.connect_start_ns = 100 * kMs + 600'000;  // socket created 0.6 ms after queueing, ready 0.4 ms later
    ProbeResult r = make_row(ProbeKind::Health, "health");
    fill_transfer(t, r);
    CHECK(r.t_connect_us == 400);
    CHECK(r.t_first_byte_us == 9000);
    CHECK(r.t_done_us == 19000);
    CHECK(request_origin_ns(t.times) == *t.times.connected_ns);
    RequestClock c = request_clock(t.times);
    CHECK(c.start_ns == *t.times.connected_ns);
    CHECK(c.connect_us == 400);
  }
  SECTION("no connection ever ready: from the socket's creation, else from start(); no setup time") {
    TransferResult t = answered(0, "");
    t.reason = EndReason::ConnectTimeout;
    t.times.connected_ns.reset();
    t.times.first_byte_ns.reset();
    t.times.connect_start_ns = 100 * kMs + 600'000;
    CHECK(request_origin_ns(t.times) == *t.times.connect_start_ns);
    CHECK_FALSE(connect_setup_us(t.times));
    ProbeResult r = make_row(ProbeKind::Health, "health");
    fill_transfer(t, r);
    CHECK_FALSE(r.t_connect_us);
    CHECK(r.t_done_us == 19400);
    t.times.connect_start_ns.reset();
    CHECK(request_origin_ns(t.times) == t.times.start_ns);
  }
}

TEST_CASE("failure excerpts are short, single-line and scrub bearer tokens") {
  ChatResult r;
  r.content = std::string(500, 'a') + "\nmore";
  std::string e = failure_excerpt(r, "");
  CHECK(e.size() <= kExcerptChars + 3);
  CHECK(e.find('\n') == std::string::npos);
  CHECK(failure_excerpt(r, R"({"error":"denied"})").find("denied") != std::string::npos);
  CHECK(failure_excerpt("Authorization: Bearer abc123secret").find("abc123secret") == std::string::npos);
  ChatResult tool;
  tool.tool_calls.push_back(ToolCall{0, "id", "function", "lookup_weather", "{}"});
  CHECK(failure_excerpt(tool, "") == "lookup_weather {}");
}

TEST_CASE("burst summary: serialization needs evidence that requests waited, not only disjoint decode windows") {
  // A runtime that writes each short answer in one go, all at once: the decode
  // windows never overlap (they are instants), but nobody waited.
  std::vector<BurstMember> one_go;
  for (int k = 0; k < 8; ++k) one_go.push_back(member(0, 50 + k, 50 + k));
  BurstSummary s = summarize_burst(one_go);
  CHECK(s.peak_decoding <= 1);
  REQUIRE(s.queue_ratio);
  CHECK(*s.queue_ratio < kSerializedQueueRatio);
  CHECK_FALSE(s.serialized);

  // The same one-go answers from a queue: each waits a whole service time.
  std::vector<BurstMember> queued;
  for (int k = 0; k < 8; ++k) queued.push_back(member(0, 50 * (k + 1), 50 * (k + 1)));
  BurstSummary q = summarize_burst(queued);
  REQUIRE(q.service_ms);
  CHECK(*q.service_ms == Approx(50));
  CHECK(*q.queue_span_ms == Approx(350));
  CHECK(*q.queue_ratio == Approx(1.0));
  CHECK(q.serialized);

  // Two slots, eight requests: pairs overlap and the queue is half as deep.
  std::vector<BurstMember> pairs;
  for (int k = 0; k < 8; ++k) pairs.push_back(member(0, 10 + 100 * (k / 2), 100 + 100 * (k / 2)));
  BurstSummary p = summarize_burst(pairs);
  CHECK(p.peak_decoding == 2);
  CHECK(*p.queue_ratio < kSerializedQueueRatio);
  CHECK_FALSE(p.serialized);
}

TEST_CASE("burst summary: FIFO serialization is a queue served one at a time") {
  // One slot: each member decodes only after the previous one finished.
  std::vector<BurstMember> fifo{member(0, 10, 100), member(0, 101, 190), member(0, 191, 280)};
  BurstSummary s = summarize_burst(fifo);
  CHECK(s.n == 3);
  CHECK(s.clean == 3);
  CHECK(s.peak_decoding == 1);
  CHECK(s.serialized);
  CHECK(s.ttft_p50_ms == Approx(101));
  CHECK(s.ttft_max_ms == Approx(191));
  CHECK(s.wall_max_ms == Approx(281));
  CHECK(s.aggregate_tps == Approx(30.0 / 0.281));
  CHECK(s.send_spread_ms == Approx(0));

  // Two slots: pairs overlap, so not serialized even with a queue behind them.
  std::vector<BurstMember> two{member(0, 10, 100), member(0, 12, 102), member(0, 101, 190)};
  BurstSummary t = summarize_burst(two);
  CHECK(t.peak_decoding == 2);
  CHECK_FALSE(t.serialized);

  // A single request, a pair, or members without two tokens, prove nothing:
  // a pair one after the other is also what a late second request looks like.
  CHECK_FALSE(summarize_burst({member(0, 10, 100)}).serialized);
  BurstSummary pair = summarize_burst({member(0, 10, 100), member(0, 101, 190)});
  REQUIRE(pair.queue_ratio);
  CHECK(*pair.queue_ratio >= kSerializedQueueRatio);
  CHECK(pair.peak_decoding == 1);
  CHECK_FALSE(pair.serialized);
  std::vector<BurstMember> failed{member(0, 10, 100), member(0, 101, 190)};
  failed[1].first_token_ns.reset();
  failed[1].last_token_ns.reset();
  failed[1].outcome = Outcome::Http5xx;
  BurstSummary f = summarize_burst(failed);
  CHECK_FALSE(f.serialized);
  CHECK(f.clean == 1);

  // Answers a server cap cut (llama-server -n, MLX-LM's 512) were still served
  // one after the other: the queue shows, and it is judged.
  std::vector<BurstMember> capped = fifo;
  for (auto& m : capped) m.outcome = Outcome::ServerTokenCap;
  BurstSummary c = summarize_burst(capped);
  CHECK(c.serialized);
  CHECK(c.clean == 0);

  auto j = nlohmann::json::parse(s.to_json());
  CHECK(j["serialized"] == true);
  CHECK(j["n"] == 3);
  CHECK(j["ttft_p95_ms"] == Approx(191));
}

TEST_CASE("burst summary: a staircase of 2 ms answers on a busy host is under the floor; 150 ms ones are serial") {
  const auto at_us = [](int64_t first_us, int64_t last_us) {
    BurstMember m;
    m.outcome = Outcome::Clean;
    m.start_ns = m.sent_ns.emplace(0);
    m.first_token_ns = first_us * 1000;
    m.last_token_ns = last_us * 1000;
    m.done_ns = (last_us + 100) * 1000;
    m.completion_tokens = 8;
    return m;
  };
  // A runtime whose whole answer takes about 2 ms (0.9 ms to the first token,
  // 0.8 ms of decode) on 4 slots, on a host busy with a compiler: the members
  // found the loop a few milliseconds apart, so their decodes never overlap
  // and TTFT climbs by about a service time a place, ~2 ms.
  std::vector<BurstMember> jittered;
  for (int64_t first : {900, 3000, 5300, 7100, 9400, 11000}) jittered.push_back(at_us(first, first + 800));
  BurstSummary s = summarize_burst(jittered);
  CHECK(s.serialized);  // the staircase is there ...
  CHECK(s.answered == 6);
  REQUIRE(s.service_ms);
  CHECK(*s.service_ms == Approx(1.7));
  const SerialCall call = read_serial(s.queue_figures(), SerialFloors{});
  CHECK(call.reading == SerialReading::UnderFloor);  // ... but 2 ms a place is nothing anyone feels
  REQUIRE(call.rise_ms);
  CHECK(*call.rise_ms == Approx(2.02));
  CHECK(describe_rise(call, s.queue_figures()) ==
        "time to first token rose by 2.0 ms per place in the queue, 1.19 of one answer's service time (1.7 ms)");
  // Only a floor of 0 calls it serial (what the rule did before it had one).
  CHECK(read_serial(s.queue_figures(), SerialFloors{0.75, 0}).reading == SerialReading::Serial);

  // 150 ms answers (20 ms to the first token, 130 ms of decode) truly served one at a time.
  std::vector<BurstMember> fifo;
  for (int64_t k = 0; k < 8; ++k) fifo.push_back(at_us(20'000 + k * 150'000, 150'000 + k * 150'000));
  BurstSummary f = summarize_burst(fifo);
  CHECK(f.serialized);
  const SerialCall serial = read_serial(f.queue_figures(), SerialFloors{});
  CHECK(serial.reading == SerialReading::Serial);
  CHECK(*serial.rise_ms == Approx(150));
  CHECK(*serial.share == Approx(1.0));
  // A share of a whole service time a place and more still holds it; 200 ms a place does not.
  CHECK(read_serial(f.queue_figures(), SerialFloors{1.0, 50}).reading == SerialReading::Serial);
  CHECK(read_serial(f.queue_figures(), SerialFloors{0.75, 200}).reading == SerialReading::UnderFloor);

  // The figures the judge reads back are in the summary's JSON.
  f.floors = SerialFloors{};
  auto j = nlohmann::json::parse(f.to_json());
  CHECK(j["answered"] == 8);
  CHECK(j["rise_per_place_ms"] == Approx(150));
  CHECK(j["serial_floors"]["min_share"] == Approx(0.75));
  CHECK(j["serial_floors"]["min_effect_ms"] == 50);
  // A member that failed: not every one answered, nothing served one at a time.
  fifo[3].outcome = Outcome::Http5xx;
  CHECK(read_serial(summarize_burst(fifo).queue_figures(), SerialFloors{}).reading == SerialReading::NotServedInTurn);
}

TEST_CASE("reuse ratio is median(prefix) / cold") {
  CHECK(reuse_ratio(1000, {100, 300, 200}) == Approx(0.2));
  CHECK(reuse_ratio(1000, {100, 300}) == Approx(0.2));
  CHECK_FALSE(reuse_ratio(std::nullopt, {100}));
  CHECK_FALSE(reuse_ratio(1000, {}));
  CHECK(nearest_rank({5, 1, 3, 2, 4}, 0.5) == Approx(3));
  CHECK(nearest_rank({5, 1, 3, 2, 4}, 0.95) == Approx(5));
  CHECK_FALSE(nearest_rank({}, 0.5));
}

TEST_CASE("version command output: llama-server's version line, else the first line") {
  auto l = build_from_command_output(builtin_runtime(RuntimeKind::LlamaCpp),
                                     "load_backend: loaded CPU backend\nversion: 9928 (81ff7abe5)\nbuilt with cc\n");
  REQUIRE(l.ok());
  CHECK(*l == "b9928-81ff7abe5");
  auto o = build_from_command_output(builtin_runtime(RuntimeKind::Ollama), "\n  ollama version is 0.12.6 \n");
  REQUIRE(o.ok());
  CHECK(*o == "ollama version is 0.12.6");
  CHECK_FALSE(build_from_command_output(builtin_runtime(RuntimeKind::OpenAI), " \n\n").ok());
}

TEST_CASE("the HTTP request of an exchange carries the candidate's limits and the key as a Bearer header") {
  Limits l;
  l.connect_timeout_ms = 1111;
  l.wall_timeout_ms = 2222;
  l.stall_timeout_ms = 3333;
  l.max_response_bytes = 4444;
  ExchangeSpec s;
  s.kind = ExchangeKind::ChatStream;
  s.method = "POST";
  s.path = "/v1/chat/completions";
  s.body = "{}";
  HttpRequest r = build_http_request("http://127.0.0.1:1", l, s, std::string("k3y"));
  CHECK(r.url == "http://127.0.0.1:1/v1/chat/completions");
  CHECK(r.connect_timeout_ms == 1111);
  CHECK(r.wall_timeout_ms == 2222);
  CHECK(r.stall_timeout_ms == 3333);
  CHECK(r.max_response_bytes == 4444);
  CHECK(r.body_mode == BodyMode::Stream);
  CHECK(std::find(r.headers.begin(), r.headers.end(), HttpHeader{"Authorization", "Bearer k3y"}) != r.headers.end());
  CHECK(r.queue_role == QueueRole::Slot);  // a chat request waits in the runtime's queue

  s.kind = ExchangeKind::Plain;
  s.body.clear();
  s.stall_timeout_ms = 10;
  HttpRequest g = build_http_request("http://h", l, s, std::nullopt);
  CHECK(g.body_mode == BodyMode::Buffer);
  CHECK(g.stall_timeout_ms == 10);
  CHECK(g.headers.empty());
  CHECK(g.queue_role == QueueRole::None);  // a route read beside the queue
}

TEST_CASE("exchange: prompts read ahead count from the start; after a queue move only its own prompt") {
  Limits l;
  l.prefill_floor_tps = 100;  // 10 ms a token
  ExchangeSpec s;
  s.kind = ExchangeKind::ChatStream;
  s.prompt_tokens = 1'000;
  HttpRequest one = build_http_request("http://h", l, s, std::nullopt);
  CHECK(one.prefill_allowance_ms == prefill_allowance_ms(1'000, 100));
  CHECK_FALSE(one.moved_prefill_allowance_ms);  // nothing ahead: the same allowance after a move
  s.prefill_rounds = 4;                         // 8 members on 2 slots
  HttpRequest last = build_http_request("http://h", l, s, std::nullopt);
  CHECK(last.prefill_allowance_ms == 4 * one.prefill_allowance_ms);
  REQUIRE(last.moved_prefill_allowance_ms);
  CHECK(*last.moved_prefill_allowance_ms == one.prefill_allowance_ms);
}
