// The fake runtime in-process on 127.0.0.1:0, fetched with blocking libcurl:
// its answers have the captured llama-server shapes, and each fault scenario
// does what it says. Waits are on server-side conditions with bounded
// deadlines, never on sleeps.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/catch.h"
#include "tests/fake_runtime/fake_runtime.h"
#include "tests/fake_runtime/test_support.h"

using namespace soak::fake;
using namespace soak::fake::testing;
using json = nlohmann::json;
using namespace std::chrono_literals;

namespace {

constexpr auto kWait = 5s;

// A listener that answers quickly: no pacing, no prefill cost.
ListenerConfig quick(Scenario s, Flavour f = Flavour::LlamaCpp) {
  ListenerConfig c = ListenerConfig::make(s, f);
  c.knobs.token_interval_ms = 0;
  c.knobs.prefill_ms_per_1k = 0;
  return c;
}

struct Running {
  explicit Running(std::vector<ListenerConfig> cfgs) : rt(std::move(cfgs)) { REQUIRE(rt.start().ok()); }
  explicit Running(ListenerConfig cfg) : Running(std::vector<ListenerConfig>{std::move(cfg)}) {}
  std::string url(const std::string& path, size_t i = 0) const { return rt.base_url(i) + path; }
  FakeRuntime rt;
};

Response chat(const Running& r, const json& body, size_t i = 0) {
  return fetch(r.url("/v1/chat/completions", i), body.dump());
}

json last_json_event(const std::vector<std::string>& events, size_t from_end) {
  return json::parse(events[events.size() - 1 - from_end]);
}

long rss_kb() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  return -1;
}

bool has_header(const Response& r, const std::string& line) {
  return r.headers.find(line + "\r\n") != std::string::npos;
}

}  // namespace

TEST_CASE("healthy stream: capture keys, role chunk first, usage chunk with choices [], then [DONE]") {
  Running r(quick(Scenario::Healthy));
  Response res = chat(r, chat_body("Count from one to five.", true, true));
  REQUIRE(res.code == CURLE_OK);
  CHECK(res.status == 200);
  CHECK(has_header(res, "Transfer-Encoding: chunked"));
  CHECK(has_header(res, "Content-Type: text/event-stream"));
  CHECK(has_header(res, "Responder: llama.cpp"));

  auto mine = sse_data(res.body);
  auto real = sse_data(read_capture("post-v1-chat-completions-stream-include-usage.sse.http").body);
  REQUIRE(mine.size() >= 5);
  CHECK(mine.back() == "[DONE]");
  CHECK(keys(json::parse(mine.front())) == keys(json::parse(real.front())));
  CHECK(json::parse(mine.front())["choices"][0]["delta"] == json::parse(real.front())["choices"][0]["delta"]);
  json finish = last_json_event(mine, 2);
  json usage = last_json_event(mine, 1);
  CHECK(keys(finish) == keys(last_json_event(real, 2)));
  CHECK(finish["choices"][0]["finish_reason"] == "stop");
  CHECK(usage["choices"] == json::array());
  CHECK(keys(usage) == keys(last_json_event(real, 1)));
  CHECK(keys(usage["timings"]) == keys(last_json_event(real, 1)["timings"]));
  int content_events = 0;
  for (size_t i = 1; i + 3 < mine.size(); ++i) {  // between the role chunk and finish, usage, [DONE]
    json e = json::parse(mine[i]);
    CHECK(keys(e["choices"][0]["delta"]) == std::set<std::string>{"content"});
    ++content_events;
  }
  CHECK(usage["usage"]["completion_tokens"] == content_events);
  CHECK(usage["usage"]["prompt_tokens"] ==
        usage["timings"]["prompt_n"].get<int>() + usage["timings"]["cache_n"].get<int>());

  // Without include_usage llama.cpp puts timings on the finish chunk and sends no usage chunk.
  auto plain = sse_data(chat(r, chat_body("Count from one to five.", true)).body);
  CHECK(plain.back() == "[DONE]");
  CHECK(last_json_event(plain, 1).contains("timings"));
  CHECK(last_json_event(plain, 1)["choices"].size() == 1);
}

TEST_CASE("healthy non-stream answer has the captured keys; a marker prompt echoes the marker") {
  Running r(quick(Scenario::Healthy));
  Response res = chat(r, chat_body("Reply with exactly: MARKER-q9", false));
  REQUIRE(res.status == 200);
  CHECK(has_header(res, "Keep-Alive: timeout=5, max=100"));
  json mine = json::parse(res.body);
  json real = json::parse(read_capture("post-v1-chat-completions-nonstream.http").body);
  CHECK(keys(mine) == keys(real));
  CHECK(keys(mine["usage"]) == keys(real["usage"]));
  CHECK(keys(mine["timings"]) == keys(real["timings"]));
  CHECK(mine["choices"][0]["message"]["content"] == "MARKER-q9");
  CHECK(mine["model"] == kDefaultModel);
  CHECK(mine["system_fingerprint"].get<std::string>().rfind(std::string(kDefaultBuild) + "-", 0) == 0);
}

TEST_CASE("loading: 503 'Loading model' on every route until loaded, then 200 {\"status\":\"ok\"}") {
  ListenerConfig c = quick(Scenario::Loading);
  c.knobs.loading_ms = 600000;  // ended explicitly below, not by waiting
  Running r(c);
  Response health = fetch(r.url("/health"));
  CHECK(health.status == 503);
  CHECK(json::parse(health.body) == json::parse(read_capture("get-health-during-model-load.http").body));
  CHECK(has_header(health, "Connection: close"));
  CHECK(fetch(r.url("/v1/models")).status == 503);
  CHECK(chat(r, chat_body("hi", false)).status == 503);
  CHECK(r.rt.stats().loading_rejections == 3);

  Response ctl = fetch(r.url("/fake/control"), R"({"loading_ms": 0})");
  CHECK(ctl.status == 200);
  Response ok = fetch(r.url("/health"));
  CHECK(ok.status == 200);
  CHECK(ok.body == read_capture("get-health.http").body);
}

TEST_CASE("tools: one call whose arguments parse; empty-tool-args gives {}") {
  json req = json::parse(read_file(std::string(SOAKD_FIXTURES_DIR) +
                                   "/llama-server/post-v1-chat-completions-tools-required-enum.request.json"));
  req.erase("max_tokens");
  Running r({quick(Scenario::Healthy), quick(Scenario::EmptyToolArgs)});
  json full = json::parse(chat(r, req).body);
  json call = full["choices"][0]["message"]["tool_calls"][0];
  CHECK(full["choices"][0]["finish_reason"] == "tool_calls");
  CHECK(call["function"]["name"] == "lookup_weather");
  json args = json::parse(call["function"]["arguments"].get<std::string>());
  CHECK(args.contains("city"));
  CHECK(args.contains("unit"));

  req["stream"] = true;
  auto events = sse_data(chat(r, req).body);
  std::string streamed;
  for (const auto& e : events) {
    if (e == "[DONE]") continue;
    json j = json::parse(e);
    if (!j["choices"].empty() && j["choices"][0]["delta"].contains("tool_calls"))
      streamed += j["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"].get<std::string>();
  }
  CHECK(json::parse(streamed) == args);

  req["stream"] = false;
  json empty = json::parse(chat(r, req, 1).body);
  CHECK(empty["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"] == "{}");
}

TEST_CASE("json_schema answers parse; invalid-json answers do not") {
  json req = json::parse(read_file(std::string(SOAKD_FIXTURES_DIR) +
                                   "/llama-server/post-v1-chat-completions-json-schema-bounded.request.json"));
  Running r({quick(Scenario::Healthy), quick(Scenario::InvalidJson)});
  json good = json::parse(chat(r, req).body);
  CHECK(json::accept(good["choices"][0]["message"]["content"].get<std::string>()));
  json bad = json::parse(chat(r, req, 1).body);
  CHECK_FALSE(json::accept(bad["choices"][0]["message"]["content"].get<std::string>()));
}

TEST_CASE("thinking: enable_thinking true streams reasoning_content before content, false none") {
  Running r(quick(Scenario::Healthy));
  json body = chat_body("Why is the sky blue?", true);
  body["chat_template_kwargs"] = {{"enable_thinking", true}};
  auto events = sse_data(chat(r, body).body);
  std::vector<std::string> order;
  for (const auto& e : events) {
    if (e == "[DONE]") continue;
    json ev = json::parse(e);
    const json& d = ev["choices"][0]["delta"];
    if (d.contains("reasoning_content")) order.push_back("r");
    if (d.contains("content") && d["content"].is_string()) order.push_back("c");
  }
  REQUIRE(order.size() > 2);
  CHECK(order.front() == "r");
  CHECK(order.back() == "c");
  CHECK(std::is_sorted(order.rbegin(), order.rend()));  // every r before every c

  body["chat_template_kwargs"] = {{"enable_thinking", false}};
  CHECK(chat(r, body).body.find("reasoning_content") == std::string::npos);
}

TEST_CASE("no-done: a complete stream that never sends [DONE]") {
  Running r({quick(Scenario::NoDone), quick(Scenario::Healthy)});
  Response res = chat(r, chat_body("hi", true, true));
  CHECK(res.code == CURLE_OK);  // the transfer itself ends cleanly
  auto events = sse_data(res.body);
  REQUIRE(!events.empty());
  CHECK(events.back() != "[DONE]");
  CHECK(json::parse(events.back())["choices"] == json::array());
  CHECK(sse_data(chat(r, chat_body("hi", true), 1).body).back() == "[DONE]");
}

TEST_CASE("ok-no-body: HTTP 200 and an empty body") {
  Running r(quick(Scenario::OkNoBody));
  Response res = chat(r, chat_body("hi", false));
  CHECK(res.code == CURLE_OK);
  CHECK(res.status == 200);
  CHECK(res.body.empty());
}

TEST_CASE("model-alias: responses carry another model string than /v1/models") {
  Running r(quick(Scenario::ModelAlias));
  json models = json::parse(fetch(r.url("/v1/models")).body);
  CHECK(models["data"][0]["id"] == kDefaultModel);
  json res = json::parse(chat(r, chat_body("hi", false)).body);
  CHECK(res["model"] != kDefaultModel);
  CHECK_FALSE(res["model"].get<std::string>().empty());
}

TEST_CASE("burst-5xx: every Nth inference request starts a run of 500s") {
  ListenerConfig c = quick(Scenario::Burst5xx);
  c.knobs.error_every = 3;
  c.knobs.error_run = 2;
  Running r(c);
  std::vector<long> statuses;
  for (int i = 0; i < 7; ++i) statuses.push_back(chat(r, chat_body("hi", false)).status);
  CHECK(statuses == std::vector<long>{200, 200, 500, 500, 200, 500, 500});
  CHECK(r.rt.stats().errors_5xx == 4);
  CHECK(fetch(r.url("/health")).status == 200);  // health stays fine
}

TEST_CASE("memory-leak: each request allocates and touches memory, so RSS really grows") {
  ListenerConfig c = quick(Scenario::MemoryLeak);
  c.knobs.leak_mb_per_request = 16;
  Running r(c);
  const long before = rss_kb();
  for (int i = 0; i < 4; ++i) REQUIRE(chat(r, chat_body("hi", false)).status == 200);
  CHECK(r.rt.stats().leaked_bytes == 4ull * 16 * 1024 * 1024);
#ifdef __linux__
  // The resident set read from /proc/self/status (Linux only; elsewhere the
  // fake's own count above is what is checked).
  REQUIRE(before >= 0);
  CHECK(rss_kb() - before >= 3 * 16 * 1024);  // 64 MB allocated; allow for allocator slack
#else
  (void)before;
#endif
}

TEST_CASE("fifo: one slot serves requests strictly one after another") {
  ListenerConfig c = quick(Scenario::FifoSerial);
  c.knobs.token_interval_ms = 10;
  c.knobs.reply_tokens = 60;
  Running r(c);
  std::vector<std::thread> clients;
  std::vector<Response> out(3);
  for (int i = 0; i < 3; ++i)
    clients.emplace_back([&, i] { out[i] = chat(r, chat_body("hi " + std::to_string(i), true)); });
  // All three arrive; one is processed while two wait for the slot.
  CHECK(r.rt.wait_for(
      0, [](const ListenerStats& s) { return s.processing == 1 && s.deferred == 2; }, kWait));
  for (auto& t : clients) t.join();
  for (const auto& o : out) CHECK(sse_data(o.body).back() == "[DONE]");
  ListenerStats s = r.rt.stats();
  CHECK(s.max_processing == 1);
  CHECK(s.deferred_total == 2);
  CHECK(s.completed == 3);
}

TEST_CASE("cancel frees the slot; stuck-slot keeps it busy and blocks the next request") {
  FetchOptions hang_up;
  hang_up.body = chat_body("hi", true).dump();
  hang_up.stop_when = [](const std::string& body) { return body.find("\"content\":\"") != std::string::npos; };
  ListenerConfig healthy = quick(Scenario::Healthy);
  healthy.knobs.token_interval_ms = 20;
  ListenerConfig stuck = quick(Scenario::StuckSlotAfterCancel);
  stuck.knobs.token_interval_ms = 20;
  stuck.knobs.stuck_slot_ms = 1500;
  Running r({healthy, stuck});

  Response cut = fetch(r.url("/v1/chat/completions", 0), hang_up);
  CHECK(cut.code == CURLE_WRITE_ERROR);
  CHECK(r.rt.wait_for(
      0, [](const ListenerStats& s) { return s.cancels_seen == 1 && s.processing == 0; }, kWait));

  fetch(r.url("/v1/chat/completions", 1), hang_up);
  CHECK(r.rt.wait_for(
      1, [](const ListenerStats& s) { return s.cancels_seen == 1; }, kWait));
  json slots = json::parse(fetch(r.url("/slots", 1)).body);
  CHECK(slots[0]["is_processing"] == true);
  // The next request waits for the stuck slot, then is served.
  long next_status = 0;
  std::thread next([&] { next_status = chat(r, chat_body("again", false), 1).status; });
  CHECK(r.rt.wait_for(
      1, [](const ListenerStats& s) { return s.deferred == 1; }, kWait));
  next.join();
  CHECK(next_status == 200);
  CHECK(r.rt.stats(1).stuck_releases == 1);
  CHECK(json::parse(fetch(r.url("/slots", 1)).body)[0]["is_processing"] == false);
}

TEST_CASE("stall: content stops after K tokens and the connection is held") {
  ListenerConfig c = quick(Scenario::StallMidStream);
  c.knobs.stall_after_tokens = 3;
  Running r(c);
  std::atomic<bool> hang_up{false};
  FetchOptions o;
  o.body = chat_body("hi", true).dump();
  o.cancel = &hang_up;
  Response res;
  std::thread client([&] { res = fetch(r.url("/v1/chat/completions"), o); });
  CHECK(r.rt.wait_for(
      0, [](const ListenerStats& s) { return s.held == 1; }, kWait));
  hang_up = true;
  client.join();
  CHECK(res.code == CURLE_ABORTED_BY_CALLBACK);
  size_t contents = 0;
  for (const auto& e : sse_data(res.body))
    contents += json::parse(e)["choices"][0]["delta"].value("content", json()).is_string();
  CHECK(contents == 3);
  CHECK(res.body.find("[DONE]") == std::string::npos);
  CHECK(r.rt.wait_for(
      0, [](const ListenerStats& s) { return s.cancels_seen == 1 && s.processing == 0; }, kWait));
}

TEST_CASE("keepalives-only (oMLX): keepalive chunks with model \"keepalive\", never content") {
  ListenerConfig c = quick(Scenario::KeepalivesOnly, Flavour::Omlx);
  c.knobs.keepalive_interval_ms = 5;
  Running r(c);
  FetchOptions o;
  o.body = chat_body("hi", true).dump();
  o.stop_when = [](const std::string& b) { return sse_data(b).size() >= 4; };
  Response res = fetch(r.url("/v1/chat/completions"), o);
  auto events = sse_data(res.body);
  REQUIRE(events.size() >= 4);
  for (const auto& e : events) {
    json j = json::parse(e);
    CHECK(j["model"] == "keepalive");
    CHECK(j["choices"][0]["delta"]["content"] == "");
  }
}

TEST_CASE("prefill-cost: exact repeats and shared prefixes come from the prefix cache") {
  ListenerConfig c = quick(Scenario::PrefillCost);
  c.knobs.prefill_ms_per_1k = 50;
  c.knobs.slots = 1;
  Running r(c);
  std::string system(16000, 'x');
  for (size_t i = 0; i < system.size(); i += 7) system[i] = ' ';
  auto body = [&](const std::string& user) {
    json b = chat_body(user, false);
    b["messages"].insert(b["messages"].begin(), json{{"role", "system"}, {"content", system}});
    return b;
  };
  json fresh = json::parse(chat(r, body("nonce-1 first question")).body)["timings"];
  json repeat = json::parse(chat(r, body("nonce-1 first question")).body)["timings"];
  json shared = json::parse(chat(r, body("another question")).body)["timings"];
  CHECK(fresh["cache_n"] == 0);
  CHECK(repeat["prompt_n"] == 1);
  CHECK(repeat["cache_n"] == fresh["prompt_n"].get<int>() - 1);
  CHECK(repeat["prompt_ms"].get<double>() < fresh["prompt_ms"].get<double>());
  CHECK(shared["cache_n"].get<int>() > fresh["prompt_n"].get<int>() / 2);
  CHECK(shared["prompt_n"].get<int>() < fresh["prompt_n"].get<int>() / 10);
}

TEST_CASE("draft-slowdown: timings report ~95 % draft acceptance") {
  Running r(quick(Scenario::DraftSlowdown));
  json t = json::parse(chat(r, chat_body("hi", false)).body)["timings"];
  REQUIRE(t.contains("draft_n"));
  double acceptance = t["draft_n_accepted"].get<double>() / t["draft_n"].get<double>();
  CHECK(acceptance == Approx(kDraftAcceptance).margin(0.02));
  CHECK(json::parse(fetch(r.url("/slots")).body)[0]["speculative"] == true);
}

TEST_CASE("crash (in-process): the (N+1)-th request kills the listener and it is reported") {
  ListenerConfig c = quick(Scenario::CrashAfterN);
  c.knobs.crash_after = 1;
  Running r(c);
  CHECK(chat(r, chat_body("hi", false)).status == 200);
  Response dead = chat(r, chat_body("hi", false));
  CHECK(dead.code != CURLE_OK);
  CHECK(r.rt.stats().crashed);
  CHECK(fetch(r.url("/health")).code == CURLE_COULDNT_CONNECT);
}

TEST_CASE("/metrics counters count, /tokenize and the build can be changed at runtime") {
  Running r(quick(Scenario::Healthy));
  int predicted = 0;
  for (int i = 0; i < 3; ++i)
    predicted += json::parse(chat(r, chat_body("hi", false)).body)["usage"]["completion_tokens"].get<int>();
  std::string metrics = fetch(r.url("/metrics")).body;
  CHECK(metrics.find("llamacpp:tokens_predicted_total " + std::to_string(predicted) + "\n") != std::string::npos);

  json tok = json::parse(fetch(r.url("/tokenize"), R"({"content": "Hello world", "with_pieces": true})").body);
  REQUIRE(tok["tokens"].size() == 4);
  CHECK(tok["tokens"][0]["piece"] == "Hell");

  CHECK(json::parse(fetch(r.url("/props")).body)["build_info"].get<std::string>().rfind("b9430-", 0) == 0);
  r.rt.set_build(0, "b9502-abcdef123");
  CHECK(r.rt.wait_for(
      0, [](const ListenerStats& s) { return s.build == "b9502-abcdef123"; }, kWait));
  CHECK(json::parse(fetch(r.url("/props")).body)["build_info"] == "b9502-abcdef123");
  CHECK(fetch(r.url("/fake/control"), R"({"build": "b9600"})").status == 200);
  CHECK(json::parse(fetch(r.url("/fake/stats")).body)["build"] == "b9600");
}

TEST_CASE("flavours: mlx-lm echoes the model, keeps alive during prefill, has no /props") {
  ListenerConfig mlx = quick(Scenario::Healthy, Flavour::MlxLm);
  mlx.knobs.prefill_ms_per_1k = 1;
  Running r({mlx, quick(Scenario::Healthy, Flavour::Ollama), quick(Scenario::Healthy, Flavour::Omlx)});
  json body = chat_body(std::string(9000, 'y'), true, true);
  body["model"] = "mlx-community/Some-Model-4bit";
  body["chat_template_kwargs"] = {{"enable_thinking", true}};
  Response res = chat(r, body);
  auto comments = sse_comments(res.body);
  REQUIRE(!comments.empty());
  CHECK(comments.front().rfind(": keepalive ", 0) == 0);
  auto events = sse_data(res.body);
  CHECK(events.back() == "[DONE]");
  CHECK(json::parse(events.front())["model"] == "mlx-community/Some-Model-4bit");
  CHECK(json::parse(events.front())["choices"][0]["delta"].contains("reasoning"));
  CHECK(fetch(r.url("/props")).status == 404);
  CHECK(json::parse(fetch(r.url("/health")).body) == json{{"status", "ok"}});

  CHECK(fetch(r.url("/", 1)).body == "Ollama is running");
  CHECK(json::parse(fetch(r.url("/api/version", 1)).body)["version"] == kDefaultBuild);
  CHECK(json::parse(fetch(r.url("/api/ps", 1)).body)["models"][0].contains("size_vram"));

  CHECK(json::parse(fetch(r.url("/health", 2)).body)["status"] == "healthy");
  CHECK(json::parse(fetch(r.url("/api/status", 2)).body)["version"] == kDefaultBuild);
  auto omlx = sse_data(chat(r, chat_body("hi", true, true), 2).body);
  CHECK(json::parse(omlx.front())["model"] == "keepalive");
  json usage = last_json_event(omlx, 1)["usage"];
  CHECK(usage.contains("time_to_first_token"));
  CHECK(usage.contains("generation_tokens_per_second"));
}

TEST_CASE("errors: invalid JSON is a 500 and a missing route a 404, as llama-server answers") {
  Running r(quick(Scenario::Healthy));
  Response bad = fetch(r.url("/v1/chat/completions"), "{\"messages\": [");
  CHECK(bad.status == 500);
  CHECK(json::parse(bad.body)["error"]["type"] == "server_error");
  CHECK(fetch(r.url("/v1/chat/completions"), R"({"model": "x"})").status == 400);
  Response missing = fetch(r.url("/v1/does-not-exist"));
  CHECK(missing.status == 404);
  CHECK(missing.body == read_capture("error-unknown-endpoint.http").body);
  CHECK(fetch(r.url("/v1/chat/completions")).status == 404);  // GET on a POST route
}

TEST_CASE("pooling routes: embeddings are stable unit vectors, rerank orders by relevance") {
  Running r(quick(Scenario::Healthy));
  json emb = json::parse(fetch(r.url("/v1/embeddings"), R"({"input": ["a cat", "a dog", "a cat"]})").body);
  REQUIRE(emb["data"].size() == 3);
  CHECK(emb["object"] == "list");
  CHECK(emb["data"][0]["embedding"] == emb["data"][2]["embedding"]);
  CHECK(emb["data"][0]["embedding"] != emb["data"][1]["embedding"]);
  double norm = 0;
  for (double x : emb["data"][0]["embedding"]) norm += x * x;
  CHECK(norm == Approx(1.0).margin(1e-3));
  CHECK(emb["usage"]["prompt_tokens"].get<int>() > 0);

  json rr = json::parse(
      fetch(r.url("/v1/rerank"),
            R"({"query": "weather in Paris", "documents": ["stock prices", "Paris weather today"], "top_n": 2})")
          .body);
  REQUIRE(rr["results"].size() == 2);
  CHECK(rr["results"][0]["index"] == 1);
  CHECK(rr["results"][0]["relevance_score"].get<double>() > rr["results"][1]["relevance_score"].get<double>());
}
