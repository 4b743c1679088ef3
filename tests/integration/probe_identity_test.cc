// Runtime truth through the fake runtime's flavours (in-process, 127.0.0.1):
// identity that fails when the weights change, each health state as the
// runtime shows it, and the launch fingerprint the build read stores. The
// shapes each flavour serves are checked key by key against upstream in
// tests/fake_runtime/flavour_served.cc and tests/unit/probes_served_test.cc.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "probes/served_state.h"
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
  explicit Fake(Flavour f, Scenario s = Scenario::Healthy) : rt({fast(s, f)}) { REQUIRE(rt.start().ok()); }
  static ListenerConfig fast(Scenario s, Flavour f) {
    ListenerConfig c = ListenerConfig::make(s, f);
    c.knobs.token_interval_ms = 1;
    return c;
  }
  std::string url() const { return rt.base_url(0); }
  FakeRuntime rt;
};

ProbeResult identity(Harness& h, const CandidateConfig& c, const std::string& expect_model = "") {
  auto rows = h.run(c, probes::RunSpec{{ProbeKind::Identity}, std::nullopt, expect_model});
  INFO(describe(rows));
  REQUIRE(rows.size() == 1);
  return rows[0];
}

ProbeResult health(Harness& h, const CandidateConfig& c) {
  auto rows = h.run(c, {ProbeKind::Health});
  REQUIRE(rows.size() == 1);
  return rows[0];
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

nlohmann::json extra(const ProbeResult& r) { return nlohmann::json::parse(r.extra_json); }

probes::LaunchFingerprint fingerprint(Harness& h, const CandidateConfig& c) {
  auto b = h.read_build(c);
  INFO((b.ok() ? b->fingerprint : b.message()));
  REQUIRE(b.ok());
  auto f = probes::parse_fingerprint_json(b->fingerprint);
  REQUIRE(f.ok());
  return *f;
}

// Engine options whose runtime-argv reader answers what `seen` holds then.
probes::EngineOptions reading_argv(const probes::RuntimeArgv& seen) {
  probes::EngineOptions o;
  o.runtime_argv = [&seen](const CandidateConfig&) { return seen; };
  return o;
}

}  // namespace

TEST_CASE("ollama: /api/ps digest proves the weights; a re-pull under the same tag is caught") {
  Fake f(Flavour::Ollama);
  Harness h;
  CandidateConfig c = candidate(f.url(), RuntimeKind::Ollama);
  ProbeResult ok = identity(h, c);
  INFO(ok.detail);
  REQUIRE(ok.outcome == Outcome::Clean);
  CHECK(extra(ok)["proof"] == "served digest");
  CHECK(ok.detail.find("served digest") != std::string::npos);
  probes::LaunchFingerprint before = fingerprint(h, c);
  CHECK_FALSE(before.model.empty());
  CHECK(before.ctx_per_slot == fake::kDefaultCtxPerSlot);

  f.rt.control(0, R"({"digest":"sha256:0000repulled"})");  // `ollama pull` of the same tag, other weights
  probes::LaunchFingerprint after = fingerprint(h, c);
  CHECK(after.model == "sha256:0000repulled");
  CHECK(after.to_json() != before.to_json());  // the campaign registers a new row for it
  ProbeResult changed = identity(h, c, before.model);
  CHECK(changed.outcome == Outcome::IdentityMismatch);
  CHECK(changed.detail.find("weights changed") != std::string::npos);
  CHECK(identity(h, c, after.model).outcome == Outcome::Clean);

  c.model = "llama3:8b";  // not loaded: the answer would echo it, /api/ps does not list it
  CHECK(identity(h, c).outcome == Outcome::IdentityMismatch);
}

TEST_CASE("mlx-lm: identity from its --model; a config id that differs fails before any request loads it") {
  Fake f(Flavour::MlxLm);
  Harness h;
  CandidateConfig c = candidate(f.url(), RuntimeKind::MlxLm);
  SECTION("no argv known: echo only, never a pass") {
    ProbeResult r = identity(h, c);
    CHECK(r.outcome == Outcome::IdentityUnproven);
    CHECK(r.detail.find("echo only") != std::string::npos);
    CHECK(r.detail.find("cannot discover runtime processes") != std::string::npos);
  }
  SECTION("argv --model is the config id: proven, the fingerprint has its max-tokens default") {
    c.launch = LaunchSpec{};
    c.launch->argv = {{"mlx_lm.server", ""}, {"--model", ""}, {fake::kDefaultModel, ""}, {"--port", ""}, {"8080", ""}};
    ProbeResult r = identity(h, c);
    INFO(r.detail);
    CHECK(r.outcome == Outcome::Clean);
    CHECK(extra(r)["proof"] == "runtime argv");
    CHECK(f.rt.stats().model_loads == 0);
    f.rt.control(0, R"({"build":"0.28.3"})");  // mlx-lm's version leads its system_fingerprint
    probes::LaunchFingerprint fp = fingerprint(h, c);
    CHECK(fp.model == fake::kDefaultModel);
    CHECK(fp.max_tokens_default == 512);
  }
  SECTION("argv --model differs from the config id: identity_mismatch, and no request made it load other weights") {
    c.launch = LaunchSpec{};
    c.launch->argv = {{"mlx_lm.server", ""}, {"--model", ""}, {"/abs/path/" + std::string(fake::kDefaultModel), ""}};
    ProbeResult r = identity(h, c);
    CHECK(r.outcome == Outcome::IdentityMismatch);
    CHECK(r.detail.find("--model") != std::string::npos);
    CHECK(f.rt.stats().inference_requests == 0);
    CHECK(f.rt.stats().model_loads == 0);
  }
  SECTION("the fake loads what the request names (upstream behaviour the check guards against)") {
    auto rows = h.run(c, {ProbeKind::Marker});
    REQUIRE(rows.size() == 1);
    CHECK(rows[0].outcome == Outcome::Clean);
    CHECK(f.rt.stats().model_loads == 0);  // the canonical id is the fake's --model
    c.model = "mlx-community/other-4bit";
    h.run(c, {ProbeKind::Marker});
    CHECK(f.rt.stats().model_loads == 1);
  }
}

// An MLX-LM soakd did not launch: the discovered process's argv (the daemon's
// reader, daemon/wiring.cc; end to end in probe_cli_test.cc).
TEST_CASE("mlx-lm unmanaged: the discovered process's --model proves identity; an unreadable argv is said") {
  Fake f(Flavour::MlxLm);
  probes::RuntimeArgv seen;
  Harness h(reading_argv(seen));
  CandidateConfig c = candidate(f.url(), RuntimeKind::MlxLm);
  SECTION("argv --model is the config id: clean, with the process named") {
    seen = {{"python", "-m", "mlx_lm", "server", "--model", fake::kDefaultModel}, "pid 77 listening on port 8080", ""};
    ProbeResult r = identity(h, c);
    INFO(r.detail);
    CHECK(r.outcome == Outcome::Clean);
    CHECK(extra(r)["proof"] == "runtime argv");
    CHECK(r.detail.find("pid 77") != std::string::npos);
    f.rt.control(0, R"({"build":"0.28.3"})");  // mlx-lm's version leads its system_fingerprint
    CHECK(fingerprint(h, c).model == fake::kDefaultModel);
  }
  SECTION("argv --model is another model: identity_mismatch") {
    seen = {{"mlx_lm.server", "--model=mlx-community/Other-4bit"}, "pid 77", ""};
    ProbeResult r = identity(h, c);
    CHECK(r.outcome == Outcome::IdentityMismatch);
    CHECK(r.detail.find("Other-4bit") != std::string::npos);
    CHECK(f.rt.stats().model_loads == 0);
  }
  SECTION("argv unreadable: identity_unproven, and the row says why") {
    seen = {{}, "", "pid 77's argv is not visible to this user"};
    ProbeResult r = identity(h, c);
    CHECK(r.outcome == Outcome::IdentityUnproven);
    CHECK(r.detail.find("argv could not be read: pid 77's argv is not visible") != std::string::npos);
  }
}

TEST_CASE("lm studio: loaded state from /api/v0/models, build and fingerprint from v0") {
  Fake f(Flavour::LmStudio);
  Harness h;
  CandidateConfig c = candidate(f.url(), RuntimeKind::LmStudio);
  ProbeResult r = identity(h, c);
  INFO(r.detail);
  CHECK(r.outcome == Outcome::Clean);
  CHECK(extra(r)["proof"] == "loaded state");
  auto b = h.read_build(c);
  REQUIRE(b.ok());
  CHECK(b->build == "llama.cpp-mac-arm64-apple-metal-advsimd@1.52.0");
  probes::LaunchFingerprint fp = fingerprint(h, c);
  CHECK(fp.ctx_per_slot == fake::kDefaultCtxPerSlot);
  CHECK(fp.model == std::string(fake::kDefaultModel) + " Q4_K_M");
  CHECK(fp.slots == fake::kDefaultSlots);            // /api/v1/models loaded_instances[].config.parallel
  c.model = "text-embedding-nomic-embed-text-v1.5";  // listed, not loaded
  CHECK(identity(h, c).outcome == Outcome::IdentityMismatch);
}

// lmstudio docs 1_developer/2_rest/endpoints.mdx: POST /api/v0/chat/completions
// answers with stats{tokens_per_second, time_to_first_token, generation_time,
// stop_reason}; its OpenAI route /v1/chat/completions has no stats. Chat
// probes use the v0 route, so the row's server columns are filled.
TEST_CASE("lm studio: chat probes use /api/v0, so its stats reach the row's server columns") {
  Fake f(Flavour::LmStudio);
  Harness h;
  ProbeResult r = identity(h, candidate(f.url(), RuntimeKind::LmStudio));
  INFO(r.detail);
  CHECK(r.outcome == Outcome::Clean);
  REQUIRE(r.server_predicted_tps);
  CHECK(*r.server_predicted_tps > 0);
  REQUIRE(r.server_ttft_ms);
  CHECK(*r.server_ttft_ms >= 0);
  REQUIRE(r.server_predicted_ms);
  CHECK(*r.server_predicted_ms > 0);
}

TEST_CASE("vllm: served name and max_model_len from /v1/models") {
  Fake f(Flavour::Vllm);
  Harness h;
  CandidateConfig c = candidate(f.url(), RuntimeKind::Vllm);
  CHECK(health(h, c).outcome == Outcome::Clean);
  ProbeResult r = identity(h, c);
  INFO(r.detail);
  CHECK(r.outcome == Outcome::Clean);
  CHECK(extra(r)["proof"] == "served name");
  auto b = h.read_build(c);
  REQUIRE(b.ok());
  CHECK(b->build == "0.11.0");
  probes::LaunchFingerprint fp = fingerprint(h, c);
  CHECK(fp.ctx_per_slot == fake::kDefaultCtxPerSlot);
  CHECK(fp.model == "/models/" + std::string(fake::kDefaultModel));
  CHECK(fp.kv_cache_type == "bf16");  // /metrics vllm:cache_config_info{cache_dtype}
  // /metrics failing (a proxy passing only /v1, a timeout under load): identity
  // still stands on /v1/models, the row says what was unavailable, and the
  // build read leaves only the KV type unknown (not a change, field by field).
  f.rt.control(0, R"({"failing_path": "/metrics"})");
  ProbeResult partial = identity(h, c);
  INFO(partial.detail << " " << partial.extra_json);
  CHECK(partial.outcome == Outcome::Clean);
  REQUIRE(extra(partial).contains("unavailable"));
  CHECK(extra(partial)["unavailable"][0].get<std::string>().rfind("/metrics: ", 0) == 0);
  probes::LaunchFingerprint without = fingerprint(h, c);
  CHECK(without.kv_cache_type.empty());
  CHECK(without.ctx_per_slot == fake::kDefaultCtxPerSlot);
  CHECK_FALSE(probes::compare_fingerprints(fp, without).changed);
  f.rt.control(0, R"({"failing_path": ""})");
  f.rt.control(0, R"({"kv_cache_type": "fp8"})");  // restarted with --kv-cache-dtype fp8
  probes::LaunchFingerprint after = fingerprint(h, c);
  CHECK(after.kv_cache_type == "fp8");
  CHECK(after.to_json() != fp.to_json());
}

TEST_CASE("rapid-mlx: loaded model and KV type from /metrics; /healthz tells loading from draining") {
  Fake f(Flavour::RapidMlx);
  Harness h;
  CandidateConfig c = candidate(f.url(), RuntimeKind::RapidMlx);
  CHECK(health(h, c).outcome == Outcome::Clean);
  ProbeResult r = identity(h, c);
  INFO(r.detail);
  CHECK(r.outcome == Outcome::Clean);
  CHECK(extra(r)["proof"] == "loaded state");
  probes::LaunchFingerprint fp = fingerprint(h, c);
  CHECK(fp.model == fake::kDefaultModel);
  CHECK(fp.kv_cache_type == "bf16");
  c.model = "other";
  CHECK(identity(h, c).outcome == Outcome::IdentityMismatch);

  f.rt.control(0, R"({"loading_ms": 60000})");
  ProbeResult loading = health(h, c);
  CHECK(loading.outcome == Outcome::Loading);
  f.rt.control(0, R"({"loading_ms": 0, "draining": true})");
  ProbeResult draining = health(h, c);
  CHECK(draining.outcome == Outcome::Http5xx);
  CHECK(draining.detail.find("draining") != std::string::npos);
}

// omlx/server.py server_status() GET /api/status "loaded_models":
// pool.get_loaded_model_ids(); its /v1/models lists every discovered model.
TEST_CASE("omlx: /api/status loaded_models proves identity; another loaded model is a mismatch") {
  Fake f(Flavour::Omlx);
  Harness h;
  CandidateConfig c = candidate(f.url(), RuntimeKind::Omlx);
  ProbeResult r = identity(h, c);
  INFO(r.detail);
  CHECK(r.outcome == Outcome::Clean);
  CHECK(extra(r)["proof"] == "loaded state");
  CHECK(r.detail.find("/api/status") != std::string::npos);

  // The request string is answered and echoed, but the pool holds other weights
  // (an alias resolved elsewhere, or the model evicted and another loaded).
  f.rt.control(0, R"({"loaded_models":["mlx-community/Other-4bit"]})");
  ProbeResult other = identity(h, c);
  CHECK(other.outcome == Outcome::IdentityMismatch);
  CHECK(other.detail.find("Other-4bit") != std::string::npos);

  // While another request loads the model: /health 503 "loading", and a
  // request gets 409 "Model '...' is already being loaded": both loading.
  f.rt.control(0, R"({"loading_ms": 60000})");
  CHECK(health(h, c).outcome == Outcome::Loading);
  auto rows = h.run(c, {ProbeKind::Marker});
  REQUIRE(rows.size() == 1);
  CHECK(rows[0].http_status == 409);
  CHECK(rows[0].outcome == Outcome::Loading);
}

// omlx/engine_pool.py get_engine(): a model not loaded is loaded under the
// pool's lock inside the request, before the stream opens; the usage object
// then carries model_load_duration (seconds). The load lands in the client's
// TTFT, so the row keeps it in server_load_ms, and the canary leaves such rows
// out of TTFT comparisons (judges/pools.cc; judge_compare_test.cc).
TEST_CASE("omlx: a cold load fills server_load_ms on the request that waited for it, and only that one") {
  ListenerConfig lc = Fake::fast(Scenario::Healthy, Flavour::Omlx);
  lc.knobs.cold_load_ms = 300;
  FakeRuntime rt({lc});
  REQUIRE(rt.start().ok());
  Harness h;
  CandidateConfig c = candidate(rt.base_url(0), RuntimeKind::Omlx);
  auto marker = [&] {
    auto rows = h.run(c, {ProbeKind::Marker});
    INFO(describe(rows));
    REQUIRE(rows.size() == 1);
    CHECK(rows[0].outcome == Outcome::Clean);
    return rows[0];
  };
  ProbeResult cold = marker();
  REQUIRE(cold.server_load_ms);
  CHECK(*cold.server_load_ms == Approx(300.0));
  REQUIRE(cold.t_first_token_us);
  CHECK(*cold.t_first_token_us >= 300'000);  // the load is inside the client's TTFT

  ProbeResult warm = marker();
  CHECK_FALSE(warm.server_load_ms);

  rt.control(0, R"({"unload": true})");  // POST /v1/models/{id}/unload
  ProbeResult reloaded = marker();
  REQUIRE(reloaded.server_load_ms);
  CHECK(*reloaded.server_load_ms == Approx(300.0));
}

TEST_CASE("llama.cpp: the fingerprint holds -c per slot and in total, --parallel, the draft setting") {
  Fake f(Flavour::LlamaCpp);
  Harness h;
  CandidateConfig c = candidate(f.url(), RuntimeKind::LlamaCpp);
  probes::LaunchFingerprint fp = fingerprint(h, c);
  CHECK(fp.slots == fake::kDefaultSlots);
  CHECK(fp.ctx_per_slot == fake::kDefaultCtxPerSlot);
  CHECK(fp.ctx_total == int64_t{fake::kDefaultSlots} * fake::kDefaultCtxPerSlot);
  CHECK_FALSE(fp.max_tokens_default);  // /props does not show -n
  CHECK(fp.speculative == false);
  f.rt.control(0, R"({"ctx_per_slot": 4096})");  // restarted with another -c
  CHECK(fingerprint(h, c).ctx_per_slot == 4096);
  ProbeResult r = identity(h, c);
  CHECK(r.outcome == Outcome::Clean);
  CHECK(extra(r)["proof"] == "served name");
}

// What only llama-server's argv says (KV cache type, -n): from the launch argv
// of a managed candidate, from the discovered process's argv otherwise.
TEST_CASE("llama.cpp: the fingerprint adds the KV cache type and -n from the runtime's argv; a change is a change") {
  Fake f(Flavour::LlamaCpp);
  probes::RuntimeArgv seen;
  Harness h(reading_argv(seen));
  CandidateConfig c = candidate(f.url(), RuntimeKind::LlamaCpp);
  SECTION("discovered process") {
    seen = {{"llama-server", "-m", "q.gguf", "-ctk", "q8_0", "-ctv", "q8_0", "-n", "64"}, "pid 77", ""};
    probes::LaunchFingerprint fp = fingerprint(h, c);
    CHECK(fp.kv_cache_type == "q8_0");
    CHECK(fp.max_tokens_default == 64);
    CHECK(fp.slots == fake::kDefaultSlots);  // still from /props
    const std::string before = fp.to_json();
    seen.argv = {"llama-server", "-m", "q.gguf", "-ctk", "q4_0", "-ctv", "q4_0", "-n", "64"};  // restarted
    CHECK(fingerprint(h, c).kv_cache_type == "q4_0");
    CHECK(fingerprint(h, c).to_json() != before);
    seen.argv = {"llama-server", "-m", "q.gguf"};  // restarted without the flags: upstream's defaults
    CHECK(fingerprint(h, c).kv_cache_type == "f16");
    CHECK(fingerprint(h, c).max_tokens_default == -1);
    seen = {{}, "", "pid 77's argv is not visible to this user"};  // unreadable: unknown
    CHECK(fingerprint(h, c).kv_cache_type.empty());
  }
  SECTION("managed: the launch argv, without asking the process table") {
    seen = {{"llama-server", "-ctk", "f16"}, "pid 77", ""};  // must not be read
    c.launch = LaunchSpec{};
    c.launch->argv = {{"llama-server", ""}, {"--cache-type-k", ""}, {"q8_0", ""}, {"--n-predict", ""}, {"512", ""}};
    probes::LaunchFingerprint fp = fingerprint(h, c);
    CHECK(fp.kv_cache_type == "k=q8_0 v=f16");
    CHECK(fp.max_tokens_default == 512);
  }
}

TEST_CASE("vllm: refused connections while its engine starts are loading within the startup grace") {
  // vLLM's API server listens only once the engine is up; a refusal streak
  // shorter than the grace is a start, longer is a dead runtime.
  const std::string url = "http://127.0.0.1:" + std::to_string(refused_port());
  CandidateConfig c = candidate(url, RuntimeKind::Vllm);
  {
    Harness h;
    ProbeResult r = health(h, c);
    CHECK(r.outcome == Outcome::Loading);
    CHECK(r.detail.find("startup grace") != std::string::npos);
  }
  {
    probes::EngineOptions past_grace;
    past_grace.startup_grace_ms = 0;
    Harness h(past_grace);
    CHECK(health(h, c).outcome == Outcome::ConnectRefused);
  }
  {
    Harness h;  // another runtime refusing is refused at once
    CHECK(health(h, candidate(url, RuntimeKind::LlamaCpp)).outcome == Outcome::ConnectRefused);
  }
}

TEST_CASE("rapid-mlx: the cancel probe's proof is the runtime's own disconnect-cancel counter") {
  // vllm_mlx/routes/metrics.py rapid_mlx_requests_cancelled_via_disconnect_total:
  // the abort of a request whose client left, counted by the runtime itself.
  Fake f(Flavour::RapidMlx);
  Harness h;
  CandidateConfig c = candidate(f.url(), RuntimeKind::RapidMlx);
  auto rows = h.run(c, {ProbeKind::Cancel});
  INFO(describe(rows));
  REQUIRE(rows.size() == 1);
  CHECK(rows[0].outcome == Outcome::Clean);
  nlohmann::json e = extra(rows[0]);
  CHECK(e["checked_by"] == "disconnect_counter");
  CHECK(e["cut"] == true);
  CHECK(f.rt.stats().cancels_seen == 1);
}

// Queue depth where each runtime exposes it, on the scrape row: llama.cpp
// /metrics requests_processing / requests_deferred, vLLM vllm:num_requests_*,
// Rapid-MLX rapid_mlx_requests_* (vllm_mlx/routes/metrics.py), oMLX
// /api/status active_requests / waiting_requests (omlx/server.py server_status).
TEST_CASE("queue depth: scrape rows carry running and waiting from the runtime's own route") {
  for (Flavour fl : {Flavour::LlamaCpp, Flavour::Vllm, Flavour::RapidMlx, Flavour::Omlx}) {
    Fake f(fl);
    Harness h;
    const RuntimeKind kind = fl == Flavour::LlamaCpp ? RuntimeKind::LlamaCpp
                             : fl == Flavour::Vllm   ? RuntimeKind::Vllm
                             : fl == Flavour::Omlx   ? RuntimeKind::Omlx
                                                     : RuntimeKind::RapidMlx;
    INFO(to_string(kind));
    auto rows = h.run(candidate(f.url(), kind), {ProbeKind::Scrape});
    INFO(describe(rows));
    REQUIRE(rows.size() == 1);
    CHECK(rows[0].outcome == Outcome::Clean);
    CHECK(rows[0].server_running == 0);
    CHECK(rows[0].server_waiting == 0);
  }
  // oMLX's identity row reads /api/status too.
  Fake omlx(Flavour::Omlx);
  Harness h;
  ProbeResult r = identity(h, candidate(omlx.url(), RuntimeKind::Omlx));
  CHECK(r.server_running == 0);
  CHECK(r.server_waiting == 0);
}

// vLLM (vllm/v1/spec_decode/metrics.py) and Rapid-MLX (vllm_mlx/routes/metrics.py
// _render_spec_decode_mtp_counters) count drafted and accepted tokens since
// start; a scrape row carries what was drafted and accepted since the previous
// scrape, in the columns llama.cpp's per-answer draft_n / draft_n_accepted go to.
TEST_CASE("speculative counters: a scrape row carries the tokens drafted and accepted since the last scrape") {
  for (Flavour fl : {Flavour::Vllm, Flavour::RapidMlx}) {
    Fake f(fl, Scenario::DraftSlowdown);
    Harness h;
    CandidateConfig c = candidate(f.url(), fl == Flavour::Vllm ? RuntimeKind::Vllm : RuntimeKind::RapidMlx);
    INFO(to_string(c.runtime));
    auto first = h.run(c, {ProbeKind::Scrape});
    REQUIRE(first.size() == 1);
    CHECK_FALSE(first[0].server_draft_n);  // nothing to compare with yet
    auto answer = h.run(c, {ProbeKind::Marker});
    REQUIRE(answer.size() == 1);
    REQUIRE(answer[0].completion_tokens);
    auto second = h.run(c, {ProbeKind::Scrape});
    REQUIRE(second.size() == 1);
    INFO(second[0].extra_json);
    REQUIRE(second[0].server_draft_n);
    CHECK(*second[0].server_draft_n == *answer[0].completion_tokens);  // the fake drafts every token
    REQUIRE(second[0].server_draft_accepted);
    CHECK(*second[0].server_draft_accepted > 0);
    CHECK(*second[0].server_draft_accepted <= *second[0].server_draft_n);
    CHECK(extra(second[0]).contains("spec_decode"));
  }
}
