// `soakd init`'s pure parts: which runtime gave a set of answers, which model
// a candidate takes, and the config text written from hand-built survey
// results, read back by the config loader as `soakd check-config` reads it;
// and which ports it asks, over a scripted sampler.
#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/config.h"
#include "daemon/init_cli.h"
#include "daemon/init_config.h"
#include "probes/runtimes/catalog.h"
#include "tests/catch.h"
#include "tests/support/runtime_signatures.h"

using namespace soak;

namespace {

// Every path init asks, answered 404 (what llama.cpp, vLLM or MLX-LM say to a
// route they lack), then the given ones.
InitAnswers answers(std::initializer_list<std::pair<const std::string, InitAnswer>> given,
                    InitAnswer rest = {404, "Not Found", ""}) {
  InitAnswers a;
  for (const auto& p : init_paths(probes::builtin_runtimes())) a[p] = rest;
  for (const auto& g : given) a[g.first] = g.second;
  return a;
}

const std::string kModels = R"({"object":"list","data":[{"id":"qwen3.6-35b-a3b","object":"model"}]})";

RuntimeKind recognised(const InitAnswers& a) {
  auto r = recognise_runtime(probes::builtin_runtimes(), a);
  REQUIRE(r);
  return r->runtime->kind;
}

ServedModels served(std::vector<std::string> listed, std::vector<std::string> loaded) {
  ServedModels m;
  m.listed = std::move(listed);
  m.loaded = std::move(loaded);
  return m;
}

Config parsed(const std::string& text) {
  auto cfg = parse_config(text, "init.json", "/tmp");
  INFO(text);
  if (!cfg) FAIL(cfg.message());
  return *cfg;
}

}  // namespace

TEST_CASE("init asks each path once: build, served-state, health and model list routes") {
  auto paths = init_paths(probes::builtin_runtimes());
  for (const char* p : {"/props", "/api/version", "/version", "/api/status", "/metrics", "/api/ps", "/api/v0/models",
                        "/health", "/healthz", "/", "/v1/models"})
    CHECK(std::count(paths.begin(), paths.end(), std::string(p)) == 1);
  for (const auto& p : paths) CHECK(p.rfind("/", 0) == 0);
  CHECK(std::find(paths.begin(), paths.end(), "/api/v0/chat/completions") == paths.end());  // a POST: never asked
}

TEST_CASE("a runtime is recognised by its own routes, strongest evidence first") {
  SECTION("llama.cpp: /props names a build") {
    auto a = answers({{"/props", {200, R"({"build_info":"b9430-81ff7abe5","total_slots":4})", ""}},
                      {"/health", {200, R"({"status":"ok"})", ""}},
                      {"/v1/models", {200, kModels, ""}}});
    auto r = recognise_runtime(probes::builtin_runtimes(), a);
    REQUIRE(r);
    CHECK(r->runtime->kind == RuntimeKind::LlamaCpp);
    CHECK(r->how == "GET /props names its build b9430-81ff7abe5");
  }
  SECTION("Ollama: /api/version, /api/ps names what is loaded") {
    auto a = answers({{"/api/version", {200, R"({"version":"0.12.6"})", ""}},
                      {"/", {200, "Ollama is running", ""}},
                      {"/api/ps", {200, R"({"models":[{"name":"qwen3:8b","model":"qwen3:8b","digest":"ab12"}]})", ""}},
                      {"/v1/models", {200, R"({"data":[{"id":"llama3:8b"},{"id":"qwen3:8b"}]})", ""}}});
    CHECK(recognised(a) == RuntimeKind::Ollama);
    ServedModels m = served_models(probes::builtin_runtime(RuntimeKind::Ollama), a);
    CHECK(m.listed == std::vector<std::string>{"llama3:8b", "qwen3:8b"});
    CHECK(m.loaded == std::vector<std::string>{"qwen3:8b"});
    CHECK(pick_model(m) == "qwen3:8b");  // the loaded one, not the first listed
  }
  SECTION("LM Studio, which answers 200 {\"error\"} on every route it lacks") {
    auto a = answers(
        {{"/api/v0/models",
          {200, R"({"data":[{"id":"other","state":"not-loaded"},{"id":"qwen/qwen3-8b","state":"loaded"}]})", ""}},
         {"/v1/models", {200, R"({"data":[{"id":"other"},{"id":"qwen/qwen3-8b"}]})", ""}}},
        InitAnswer{200, R"j({"error":"Unexpected endpoint or method. (GET /props)"})j", ""});
    CHECK(recognised(a) == RuntimeKind::LmStudio);  // its /props answer is an object, but names no build
    CHECK(pick_model(served_models(probes::builtin_runtime(RuntimeKind::LmStudio), a)) == "qwen/qwen3-8b");
  }
  SECTION("vLLM: /version; oMLX: /api/status") {
    CHECK(recognised(answers({{"/version", {200, R"({"version":"0.11.0"})", ""}},
                              {"/health", {200, "", ""}},
                              {"/v1/models", {200, kModels, ""}}})) == RuntimeKind::Vllm);
    CHECK(recognised(answers({{"/api/status", {200, R"({"status":"ok","version":"0.3.9"})", ""}},
                              {"/health", {200, R"({"status":"healthy"})", ""}},
                              {"/v1/models", {200, kModels, ""}}})) == RuntimeKind::Omlx);
  }
  SECTION("MLX-LM: only its health route, and the reason says it is weak") {
    auto a = answers({{"/health", {200, R"({"status":"ok"})", ""}}, {"/v1/models", {200, kModels, ""}}});
    auto r = recognise_runtime(probes::builtin_runtimes(), a);
    REQUIRE(r);
    CHECK(r->runtime->kind == RuntimeKind::MlxLm);  // llama.cpp's /props said 404: not llama.cpp
    CHECK(r->how.find("weak evidence") != std::string::npos);
  }
  SECTION("a key-protected llama.cpp (/props, /slots, /metrics 401) is not ruled out by its 401s") {
    const InitAnswer key{401, R"({"error":{"message":"Invalid API Key"}})", ""};
    CHECK(recognised(answers({{"/props", key},
                              {"/slots", key},
                              {"/metrics", key},
                              {"/health", {200, R"({"status":"ok"})", ""}},
                              {"/v1/models", {200, kModels, ""}}})) == RuntimeKind::LlamaCpp);
  }
  SECTION("a model list and nothing else: the plain OpenAI-compatible entry") {
    CHECK(recognised(answers({{"/v1/models", {200, kModels, ""}}})) == RuntimeKind::OpenAI);
  }
  SECTION("no model list: not a server to test") {
    CHECK_FALSE(
        recognise_runtime(probes::builtin_runtimes(), answers({{"/props", {200, R"({"build_info":"b1"})", ""}}})));
    CHECK_FALSE(recognise_runtime(probes::builtin_runtimes(), answers({}, InitAnswer{0, "", "connection refused"})));
  }
}

TEST_CASE("pick_model: loaded and listed, else loaded, else listed, else none") {
  CHECK(pick_model(served({"a", "b"}, {"/models/b.gguf", "b"})) == "b");
  CHECK(pick_model(served({"a"}, {"/models/b.gguf"})) == "/models/b.gguf");
  CHECK(pick_model(served({"a", "b"}, {})) == "a");
  CHECK(pick_model({}).empty());
  ServedModels only = served({"a", "b"}, {});
  only.only_loaded = true;  // a runtime whose list is not what it serves: never a listed id
  CHECK(pick_model(only).empty());
}

TEST_CASE("the config written from what was found passes the loader, its warnings as comments") {
  InitSurvey s;
  s.looked_at = "ports 8080, 8081 (--ports)";
  s.notes = {"port 8000: nothing answered (connect_refused)"};
  s.store_path = "/tmp/init-test/soakd.db";
  s.log_path = "/tmp/init-test/soakd.log";
  FoundRuntime llama;
  llama.kind = RuntimeKind::LlamaCpp;
  llama.port = 8080;
  llama.base_url = "http://127.0.0.1:8080";
  llama.how = "GET /props names its build b9430-81ff7abe5";
  llama.models = served({"qwen3.6-35b-a3b"}, {"qwen3.6-35b-a3b", "/models/q.gguf"});
  llama.model = "qwen3.6-35b-a3b";
  llama.build = "b9430-81ff7abe5";
  llama.slots = 4;
  llama.server_cap = -1;
  llama.launch_summary = "ctx 8192/slot (32768 total), 4 slots";
  FoundRuntime mlx;
  mlx.kind = RuntimeKind::MlxLm;
  mlx.port = 8081;
  mlx.base_url = "http://127.0.0.1:8081";
  mlx.how = "only its health route GET /health answered as it does (weak evidence: check \"runtime\")";
  mlx.models = served({"mlx-community/Qwen3.6-27B-4bit", "a \"quoted\" id"}, {});
  mlx.model = "a \"quoted\" id";
  mlx.build_error = "/v1/chat/completions: timeout";
  mlx.server_cap = 512;
  mlx.warnings = {"asked for an API key at /props (HTTP 401): set \"api_key_env\""};
  s.found = {llama, mlx};

  const std::string text = render_init_config(s, probes::builtin_runtimes());
  Config cfg = parsed(text);
  REQUIRE(cfg.candidates.size() == 2);
  CHECK(cfg.store_path == "/tmp/init-test/soakd.db");
  CHECK(cfg.log_path == "/tmp/init-test/soakd.log");
  const CandidateConfig& a = cfg.candidates[0];
  CHECK(a.name == "llama.cpp-8080");
  CHECK(a.runtime == RuntimeKind::LlamaCpp);
  CHECK(a.model == "qwen3.6-35b-a3b");
  CHECK(a.base_url == "http://127.0.0.1:8080");
  CHECK(a.slots == 4);
  CHECK(a.enabled);
  CHECK(a.build.source == BuildSource::Http);
  const CandidateConfig& b = cfg.candidates[1];
  CHECK(b.name == "mlx-lm-8081");
  CHECK(b.model == "a \"quoted\" id");  // escaped as JSON
  CHECK_FALSE(b.slots);
  CHECK(b.enabled);

  auto has = [&](const std::string& needle) {
    INFO(needle);
    CHECK(text.find(needle) != std::string::npos);
  };
  has("// Looked at: ports 8080, 8081 (--ports).");
  has("//   port 8000: nothing answered (connect_refused)");
  has("// llama.cpp at http://127.0.0.1:8080: GET /props names its build b9430-81ff7abe5");
  has("// build now: b9430-81ff7abe5");
  has("// launch: ctx 8192/slot (32768 total), 4 slots");
  has("// slots: 4, as the runtime reports them");
  has("// server cap: none");
  has("// models listed: mlx-community/Qwen3.6-27B-4bit, a \"quoted\" id");
  has("weak evidence");
  // What MLX-LM could not tell, and its cap with the entry's own advice.
  has("// warning: its build could not be read now (/v1/chat/completions: timeout)");
  has("// warning: slot count unknown");
  has("// warning: server cap: MLX-LM caps answers at 512 tokens: start mlx_lm.server with --max-tokens");
  has("held at smoke");
  has("// warning: asked for an API key at /props (HTTP 401)");
  // Only the llama.cpp candidate's comment block says slots are known.
  CHECK(text.find("slot count unknown") > text.find("\"llama.cpp-8080\""));
}

TEST_CASE("a runtime that lists no model is written disabled, and one without a build route gets a fixed build") {
  InitSurvey s;
  s.store_path = "/tmp/init-test/soakd.db";
  s.log_path = "/tmp/init-test/soakd.log";
  FoundRuntime o;
  o.kind = RuntimeKind::Ollama;
  o.port = 11434;
  o.base_url = "http://127.0.0.1:11434";
  o.how = "GET /api/version names its build 0.12.6";
  o.build_error = "no model to ask with";
  FoundRuntime p;
  p.kind = RuntimeKind::OpenAI;
  p.port = 9000;
  p.base_url = "http://127.0.0.1:9000";
  p.how = "GET /v1/models answers";
  p.models = served({"m"}, {});
  p.model = "m";
  s.found = {o, p};
  const std::string text = render_init_config(s, probes::builtin_runtimes());
  Config cfg = parsed(text);
  REQUIRE(cfg.candidates.size() == 2);
  CHECK_FALSE(cfg.candidates[0].enabled);
  CHECK(cfg.candidates[0].model == "MODEL-ID");
  CHECK(text.find("warning: it lists no model") != std::string::npos);
  CHECK(cfg.candidates[1].build.source == BuildSource::Fixed);
  CHECK(text.find("warning: it tells no build over HTTP") != std::string::npos);
}

TEST_CASE("nothing found: one disabled example per runtime with a default port, and the file still loads") {
  InitSurvey s;
  s.looked_at = "no port of a running engine and the runtimes' default ports (8080, 8000, 11434, 1234)";
  s.store_path = "/tmp/init-test/soakd.db";
  s.log_path = "/tmp/init-test/soakd.log";
  const std::string text = render_init_config(s, probes::builtin_runtimes());
  Config cfg = parsed(text);
  size_t with_port = 0;
  for (const auto* rt : probes::builtin_runtimes()) with_port += rt->default_port ? 1 : 0;
  CHECK(with_port == 7);
  REQUIRE(cfg.candidates.size() == with_port);
  std::set<RuntimeKind> kinds;
  for (const auto& c : cfg.candidates) {
    CHECK_FALSE(c.enabled);
    CHECK(c.name.rfind("example-", 0) == 0);
    kinds.insert(c.runtime);
  }
  CHECK(kinds.size() == with_port);  // one per runtime
  CHECK(cfg.find("example-ollama-11434")->base_url == "http://127.0.0.1:11434");
  CHECK(cfg.find("example-lmstudio-1234")->base_url == "http://127.0.0.1:1234");
  CHECK(cfg.find("example-llama.cpp-8080"));
  CHECK(cfg.find("example-mlx-lm-8080"));  // the same default port: names stay apart by runtime
  CHECK(text.find("No runtime answered on this host") != std::string::npos);
  CHECK(text.find("warning: server cap: MLX-LM caps answers at 512 tokens") != std::string::npos);
}

// mlx_lm/server.py (v0.32.0): /v1/models lists the Hugging Face cache with the
// --model path appended last, and a request naming any other id loads it
// (RUNTIME_FACTS #2): the model is the --model argument, never a listed id.
namespace {
// A survey that found one runtime of `kind` on `port`, set up further by `set`.
InitSurvey one_found(RuntimeKind kind, int port, const std::function<void(FoundRuntime&)>& set) {
  InitSurvey s;
  s.store_path = "/tmp/init-test/soakd.db";
  s.log_path = "/tmp/init-test/soakd.log";
  FoundRuntime f;
  f.kind = kind;
  f.port = static_cast<uint16_t>(port);
  f.base_url = "http://127.0.0.1:" + std::to_string(port);
  set(f);
  s.found = {f};
  return s;
}
// One llama-server on its default port, serving "m" at `build`.
InitSurvey one_llama(const std::string& build, const std::function<void(FoundRuntime&)>& set) {
  return one_found(RuntimeKind::LlamaCpp, 8080, [&](FoundRuntime& f) {
    f.model = "m";
    f.build = build;
    set(f);
  });
}
}  // namespace

TEST_CASE("MLX-LM's model is its --model argv; without the argv it is a placeholder and no chat is sent") {
  const probes::Runtime& mlx = probes::builtin_runtime(RuntimeKind::MlxLm);
  auto a = answers({{"/health", {200, R"({"status":"ok"})", ""}},
                    {"/v1/models", {200, R"({"data":[{"id":"mlx-community/cached-1"},{"id":"/models/q4"}]})", ""}}});
  ServedModels with_argv =
      served_models(mlx, a, {"python3", "-m", "mlx_lm.server", "--model", "/models/q4", "--port", "8080"});
  CHECK(pick_model(with_argv) == "/models/q4");
  CHECK(may_read_build(mlx, with_argv, "/models/q4"));
  ServedModels no_argv = served_models(mlx, a);
  CHECK(no_argv.only_loaded);
  CHECK(pick_model(no_argv).empty());  // not "mlx-community/cached-1": asking with it would load it
  CHECK_FALSE(may_read_build(mlx, no_argv, "mlx-community/cached-1"));
  CHECK(no_argv.unproven_reason == "its process's argv was not read");
  CHECK(served_models(mlx, a, {"mlx_lm.server", "--port", "8080"}).unproven_reason == "its argv has no --model");

  const InitSurvey s = one_found(RuntimeKind::MlxLm, 8080, [&](FoundRuntime& f) {
    f.models = no_argv;
    f.build_error = "no model to ask with";
  });
  const std::string text = render_init_config(s, probes::builtin_runtimes());
  Config cfg = parsed(text);
  REQUIRE(cfg.candidates.size() == 1);
  CHECK_FALSE(cfg.candidates[0].enabled);
  CHECK(cfg.candidates[0].model == "MODEL-ID");
  CHECK(text.find("put its --model value in \"model\"") != std::string::npos);
  CHECK(text.find("it lists no model") == std::string::npos);
}

TEST_CASE("LM Studio with nothing loaded: no build-reading chat, which would load a model") {
  const probes::Runtime& lms = probes::builtin_runtime(RuntimeKind::LmStudio);
  auto idle = answers({{"/api/v0/models", {200, R"({"data":[{"id":"qwen/qwen3-8b","state":"not-loaded"}]})", ""}},
                       {"/v1/models", {200, R"({"data":[{"id":"qwen/qwen3-8b"}]})", ""}}},
                      InitAnswer{200, R"({"error":"Unexpected endpoint or method."})", ""});
  ServedModels m = served_models(lms, idle);
  CHECK(pick_model(m) == "qwen/qwen3-8b");
  CHECK_FALSE(may_read_build(lms, m, "qwen/qwen3-8b"));
  auto busy = answers({{"/api/v0/models", {200, R"({"data":[{"id":"qwen/qwen3-8b","state":"loaded"}]})", ""}},
                       {"/v1/models", {200, R"({"data":[{"id":"qwen/qwen3-8b"}]})", ""}}},
                      InitAnswer{200, R"({"error":"Unexpected endpoint or method."})", ""});
  CHECK(may_read_build(lms, served_models(lms, busy), "qwen/qwen3-8b"));
  // A build route (a GET) loads nothing.
  CHECK(may_read_build(probes::builtin_runtime(RuntimeKind::LlamaCpp), {}, "m"));
}

TEST_CASE("a model list that wants an API key: recognised from other routes, written disabled with api_key_env") {
  const InitAnswer key{401, R"({"error":{"message":"Invalid API key"}})", ""};
  // vLLM --api-key guards /v1/*; /version and /health stay public.
  auto a =
      answers({{"/v1/models", key}, {"/version", {200, R"({"version":"0.11.0"})", ""}}, {"/health", {200, "", ""}}});
  auto r = recognise_runtime(probes::builtin_runtimes(), a);
  REQUIRE(r);
  CHECK(r->runtime->kind == RuntimeKind::Vllm);
  CHECK(r->key_needed);
  auto plain = recognise_runtime(probes::builtin_runtimes(), answers({{"/v1/models", {403, "Forbidden", ""}}}));
  REQUIRE(plain);
  CHECK(plain->runtime->kind == RuntimeKind::OpenAI);
  CHECK(plain->key_needed);
  CHECK(plain->how.find("wants an API key") != std::string::npos);

  const InitSurvey s = one_found(RuntimeKind::Vllm, 8000, [&](FoundRuntime& f) {
    f.how = r->how;
    f.key_needed = true;
    f.build_error = "not asked: its model list wants an API key";
  });
  const std::string text = render_init_config(s, probes::builtin_runtimes());
  Config cfg = parsed(text);
  REQUIRE(cfg.candidates.size() == 1);
  CHECK_FALSE(cfg.candidates[0].enabled);
  CHECK(cfg.candidates[0].model == "MODEL-ID");
  CHECK(cfg.candidates[0].api_key_env == std::optional<std::string>("SOAKD_API_KEY"));
  CHECK(text.find("warning: its model list GET /v1/models wants an API key") != std::string::npos);
  CHECK(text.find("it lists no model") == std::string::npos);
}

TEST_CASE("a runtime still loading is said to be loading, with what to do") {
  // tests/fixtures/llama-server/get-health-during-model-load.http: every route answers this while loading.
  const InitAnswer loading{503, R"({"error":{"message":"Loading model","type":"unavailable_error","code":503}})", ""};
  auto a = answers({}, loading);
  CHECK_FALSE(recognise_runtime(probes::builtin_runtimes(), a));
  auto note = loading_note(a);
  REQUIRE(note);
  CHECK(note->find("still loading (GET ") != std::string::npos);
  CHECK(note->find("HTTP 503: Loading model") != std::string::npos);
  CHECK(note->find("run soakd init again when it is ready") != std::string::npos);
  CHECK_FALSE(loading_note(answers({{"/v1/models", {200, kModels, ""}}})));
  CHECK_FALSE(loading_note(answers({}, InitAnswer{503, R"({"error":{"message":"engine dead"}})", ""})));
}

TEST_CASE("the server cap: unknown, not none, when the command line leaves it to an environment init did not read") {
  const probes::Runtime& llama = probes::builtin_runtime(RuntimeKind::LlamaCpp);
  CHECK(cap_may_come_from_env(llama, {"/opt/homebrew/bin/llama-server", "-m", "q.gguf"}));
  CHECK(cap_may_come_from_env(llama, {}));
  CHECK_FALSE(cap_may_come_from_env(llama, {"llama-server", "-m", "q.gguf", "-n", "4096"}));
  CHECK_FALSE(cap_may_come_from_env(probes::builtin_runtime(RuntimeKind::MlxLm), {"mlx_lm.server"}));

  InitSurvey s = one_llama("b9430-81ff7abe5", [](FoundRuntime& f) {
    f.server_cap = -1;
    f.server_cap_env_unread = true;
  });
  std::string text = render_init_config(s, probes::builtin_runtimes());
  CHECK(text.find("warning: server cap unknown: its command line sets none") != std::string::npos);
  CHECK(text.find("server cap: none") == std::string::npos);
  s.found[0].server_cap_env_unread = false;  // -n -1 on the command line: none, as it says
  CHECK(render_init_config(s, probes::builtin_runtimes()).find("server cap: none") != std::string::npos);
}

TEST_CASE("a context per slot below the minimum server cap is flagged") {
  InitSurvey s = one_llama("b9430-81ff7abe5", [](FoundRuntime& f) { f.ctx_per_slot = 512; });  // -c 512
  const std::string warning = "warning: its context is 512 tokens per slot, below 8192 (limits.min_server_cap)";
  CHECK(render_init_config(s, probes::builtin_runtimes()).find(warning) != std::string::npos);
  s.found[0].ctx_per_slot = kDefaultMinServerCap;
  CHECK(render_init_config(s, probes::builtin_runtimes()).find("tokens per slot, below") == std::string::npos);
}

TEST_CASE("a build without version information is flagged: an upgrade would not show") {
  CHECK(build_without_version("b0-unknown"));
  CHECK_FALSE(build_without_version("b9430-81ff7abe5"));
  CHECK_FALSE(build_without_version("mlx-lm 0.32.0 mlx 0.29.2"));
  const std::string text =
      render_init_config(one_llama("b0-unknown", [](FoundRuntime&) {}), probes::builtin_runtimes());
  CHECK(text.find("warning: build \"b0-unknown\" carries no version") != std::string::npos);
  CHECK(text.find("soakd cannot see an upgrade; build it from a git checkout or use a release") != std::string::npos);
}

TEST_CASE("a port that connected but answered too slowly is not said to have answered nothing") {
  InitAnswer slow{0, "", "timeout"};
  slow.connected = true;
  const std::string note = unanswered_note(answers({}, slow));
  CHECK(note.find("connected, but the answer took longer than the 3 s limit") != std::string::npos);
  CHECK(note.find("nothing answered") == std::string::npos);
  CHECK(unanswered_note(answers({}, InitAnswer{0, "", "connect_refused"})) == "nothing answered (connect_refused)");
}

namespace {

// A host with a llama-server and an Ollama running, a shell, and an engine
// whose sockets cannot be read.
class InitSampler final : public Sampler {
 public:
  InitSampler() : Sampler(test::builtin_signatures()) {}
  std::vector<ProcessInfo> processes{
      {10, 1, "llama-server", "/opt/homebrew/bin/llama-server", {"/opt/homebrew/bin/llama-server", "-m", "q.gguf"}},
      {11, 1, "ollama", "/usr/local/bin/ollama", {"/usr/local/bin/ollama", "serve"}},
      {12, 1, "bash", "/bin/bash", {"bash"}},
      {13, 1, "mlx_lm.server", "/usr/bin/python3", {"python3", "-m", "mlx_lm.server", "--port", "8090"}},
  };
  std::map<int, Result<std::vector<LocalPort>>> ports{
      {10, std::vector<LocalPort>{{18080, true}}},
      {11, std::vector<LocalPort>{{11434, true}, {40001, false}}},
      {13, make_error("pid 13: its sockets cannot be read: Permission denied")},
  };
  std::map<uint16_t, int> listeners{{18080, 10}, {11434, 11}, {40001, 11}};

  Result<HostInfo> host_info() override { return HostInfo{"studio", "Mac15,14", 512LL << 30, "macOS 15.3.1"}; }
  HostSample sample_host(int64_t) override { return {}; }
  ProcessSample sample_process(int pid, int64_t) override { return begin_process_sample(pid, 0); }
  Result<std::vector<ProcessInfo>> list_processes() override { return processes; }
  Result<std::optional<int>> find_listening_pid(uint16_t port) override {
    auto it = listeners.find(port);
    return it == listeners.end() ? std::optional<int>{} : std::optional<int>(it->second);
  }
  Result<std::vector<LocalPort>> local_listening_ports(int pid) override {
    auto it = ports.find(pid);
    return it == ports.end() ? Result<std::vector<LocalPort>>(std::vector<LocalPort>{}) : it->second;
  }
};

std::vector<uint16_t> ports_of(const std::vector<InitTarget>& t) {
  std::vector<uint16_t> out;
  for (const auto& x : t) out.push_back(x.port);
  return out;
}

}  // namespace

TEST_CASE("init's ports: the running engines' loopback ports, then each default port once") {
  InitSampler sampler;
  InitSurvey survey;
  auto t = init_targets(sampler, std::nullopt, probes::builtin_runtimes(), survey);
  // llama-server's, Ollama's two (one reached at [::1] only), then 8080, 8000, 1234 (11434 is there already).
  CHECK(ports_of(t) == std::vector<uint16_t>{18080, 11434, 40001, 8080, 8000, 1234});
  REQUIRE(t.size() == 6);
  CHECK(t[0].process_kind == RuntimeKind::LlamaCpp);
  CHECK(t[0].process == "/opt/homebrew/bin/llama-server -m q.gguf (pid 10)");
  CHECK(t[1].process_kind == RuntimeKind::Ollama);
  CHECK_FALSE(t[2].ipv4);
  CHECK_FALSE(t[3].process_kind);  // nothing recognised listens on 8080
  CHECK(survey.looked_at ==
        "the ports of the running engines (18080, 11434, 40001) and the runtimes' default ports (8080, 8000, 1234)");
  REQUIRE(survey.notes.size() == 1);
  CHECK(survey.notes[0] ==
        "mlx-lm python3 -m mlx_lm.server --port 8090 (pid 13): its ports are not known: pid 13: its sockets cannot "
        "be read: Permission denied");
}

TEST_CASE("init's ports with --ports: those only, each with the engine listening there") {
  InitSampler sampler;
  InitSurvey survey;
  auto t = init_targets(sampler, std::vector<uint16_t>{18080, 9999}, probes::builtin_runtimes(), survey);
  CHECK(ports_of(t) == std::vector<uint16_t>{18080, 9999});
  CHECK(t[0].process_kind == RuntimeKind::LlamaCpp);
  CHECK_FALSE(t[1].process_kind);
  CHECK(survey.looked_at == "ports 18080, 9999 (--ports)");
  CHECK(survey.notes.empty());
}

TEST_CASE("init's ports are bounded: past kMaxInitPorts the rest is named, not asked") {
  InitSampler sampler;
  std::vector<LocalPort> many;
  for (uint16_t p = 20000; p < 20030; ++p) many.push_back({p, true});
  sampler.ports.insert_or_assign(10, many);
  InitSurvey survey;
  auto t = init_targets(sampler, std::nullopt, probes::builtin_runtimes(), survey);
  CHECK(t.size() == kMaxInitPorts);
  REQUIRE_FALSE(survey.notes.empty());
  CHECK(survey.notes.back().find("more port(s) not asked (at most 16; name them with --ports)") != std::string::npos);
}

TEST_CASE("init's ports: the same port on 127.0.0.1 and ::1 from two engines is asked at both") {
  InitSampler sampler;
  sampler.ports.insert_or_assign(13, std::vector<LocalPort>{{18080, false}});  // mlx_lm.server on [::1]:18080
  sampler.ports.insert_or_assign(11, std::vector<LocalPort>{{11434, true}, {11434, false}});  // one Ollama, both
  InitSurvey survey;
  auto t = init_targets(sampler, std::nullopt, probes::builtin_runtimes(), survey);
  CHECK(ports_of(t) == std::vector<uint16_t>{18080, 11434, 18080, 8080, 8000, 1234});
  REQUIRE(t.size() == 6);
  CHECK(t[0].ipv4);
  CHECK(t[0].process_kind == RuntimeKind::LlamaCpp);
  CHECK_FALSE(t[2].ipv4);
  CHECK(t[2].process_kind == RuntimeKind::MlxLm);
  CHECK(t[2].argv == std::vector<std::string>{"python3", "-m", "mlx_lm.server", "--port", "8090"});
}
