// The runtimes' entries (probes/runtimes/): routes and quirks per runtime,
// health interpretation, build identity, props/slots/status parsing, model
// lists and tokenize counts — on the llama-server captures and on literal
// answers shaped like the other runtimes'.
#include <string>

#include "probes/runtimes/catalog.h"
#include "probes/runtimes/llama_cpp.h"
#include "probes/served_state.h"
#include "tests/catch.h"
#include "tests/unit/probes_capture_local.h"

using namespace soak;
using namespace soak::probes;

namespace {
std::string body(const std::string& capture) { return probes_local::load_capture(capture).body; }
}  // namespace

TEST_CASE("entries: each runtime's routes and quirks") {
  const Runtime& llama = builtin_runtime(RuntimeKind::LlamaCpp);
  CHECK(llama.kind == RuntimeKind::LlamaCpp);
  CHECK(llama.health.path == "/health");
  CHECK(llama.build->path == "/props");
  CHECK(llama.slots->path == "/slots");
  CHECK(llama.key_metrics.size() == 8);
  for (auto m : llama.key_metrics) CHECK(m.rfind("llamacpp:", 0) == 0);
  CHECK(llama.tokenize->method == "POST");
  CHECK(llama.identity == IdentityEvidence::ResponseModel);

  const Runtime& mlx = builtin_runtime(RuntimeKind::MlxLm);
  CHECK(mlx.default_max_tokens == 512);
  CHECK(mlx.identity == IdentityEvidence::EchoesRequest);
  CHECK_FALSE(mlx.build);
  CHECK(mlx.build_ask == BuildAsk::ChatAnswer);  // system_fingerprint
  CHECK_FALSE(mlx.metrics);
  CHECK_FALSE(mlx.tokenize);

  CHECK(builtin_runtime(RuntimeKind::Omlx).default_max_tokens == 32768);
  CHECK(builtin_runtime(RuntimeKind::Omlx).build->path == "/api/status");
  CHECK(builtin_runtime(RuntimeKind::Vllm).build->path == "/version");
  for (auto m : builtin_runtime(RuntimeKind::Vllm).key_metrics) CHECK(m.rfind("vllm:", 0) == 0);
  // /health/ready says "model loading" while draining too; /healthz tells them apart.
  CHECK(builtin_runtime(RuntimeKind::RapidMlx).health.path == "/healthz");
  // Ollama's OpenAI layer echoes the request's model (openai/openai.go).
  CHECK(builtin_runtime(RuntimeKind::Ollama).identity == IdentityEvidence::EchoesRequest);
  CHECK(builtin_runtime(RuntimeKind::RapidMlx).build_ask == BuildAsk::Route);  // the build-info metric
  CHECK(builtin_runtime(RuntimeKind::RapidMlx).build->path == "/metrics");
  CHECK(builtin_runtime(RuntimeKind::Ollama).health.path == "/");
  CHECK(builtin_runtime(RuntimeKind::Ollama).build->path == "/api/version");
  CHECK(builtin_runtime(RuntimeKind::Ollama).dialect.tool_choice == ToolChoice::Unsupported);
  CHECK(builtin_runtime(RuntimeKind::LmStudio).build_ask == BuildAsk::ChatAnswer);  // its runtime field
  CHECK(builtin_runtime(RuntimeKind::OpenAI).build_ask == BuildAsk::None);
  for (RuntimeKind k : {RuntimeKind::LlamaCpp, RuntimeKind::MlxLm, RuntimeKind::Omlx, RuntimeKind::Vllm,
                        RuntimeKind::RapidMlx, RuntimeKind::Ollama, RuntimeKind::LmStudio, RuntimeKind::OpenAI}) {
    CHECK(builtin_runtime(k).kind == k);
    CHECK_FALSE(builtin_runtime(k).models.path.empty());
  }
}

TEST_CASE("health: llama.cpp captures") {
  auto loading = probes_local::load_capture("get-health-during-model-load.http");
  HealthVerdict v = builtin_runtime(RuntimeKind::LlamaCpp).read_health(loading.status, loading.body);
  CHECK(v.state == HealthState::Loading);
  CHECK(v.detail.find("Loading model") != std::string::npos);
  auto ok = probes_local::load_capture("get-health.http");
  CHECK(builtin_runtime(RuntimeKind::LlamaCpp).read_health(ok.status, ok.body).state == HealthState::Up);
  auto busy = probes_local::load_capture("get-health-while-busy.http");
  CHECK(builtin_runtime(RuntimeKind::LlamaCpp).read_health(busy.status, busy.body).state == HealthState::Up);
  CHECK(builtin_runtime(RuntimeKind::LlamaCpp)
            .read_health(503, R"({"error":{"code":503,"message":"no slot available","type":"unavailable_error"}})")
            .state == HealthState::Up);
  CHECK(builtin_runtime(RuntimeKind::LlamaCpp).read_health(500, "").state == HealthState::Down);
}

TEST_CASE("health: the other runtimes") {
  CHECK(builtin_runtime(RuntimeKind::MlxLm).read_health(200, R"({"status": "ok"})").state == HealthState::Up);
  CHECK(builtin_runtime(RuntimeKind::Omlx)
            .read_health(200, R"({"status":"healthy","default_model":"m","engine_pool":{}})")
            .detail == "healthy");
  CHECK(builtin_runtime(RuntimeKind::Vllm).read_health(200, "").state == HealthState::Up);
  HealthVerdict dead = builtin_runtime(RuntimeKind::Vllm).read_health(503, "");
  CHECK(dead.state == HealthState::Down);
  CHECK(dead.detail.find("engine dead") != std::string::npos);
  CHECK(builtin_runtime(RuntimeKind::RapidMlx).read_health(503, R"({"detail":"model loading"})").state ==
        HealthState::Loading);
  CHECK(builtin_runtime(RuntimeKind::RapidMlx).read_health(200, R"({"ready":true,"model":"m"})").state ==
        HealthState::Up);
  CHECK(builtin_runtime(RuntimeKind::RapidMlx).read_health(503, R"({"status":"draining","ready":false})").state ==
        HealthState::Draining);
  CHECK(builtin_runtime(RuntimeKind::Ollama).read_health(200, "Ollama is running").state == HealthState::Up);
  CHECK(builtin_runtime(RuntimeKind::Ollama).read_health(200, "<html>nginx</html>").state == HealthState::Down);
  CHECK(builtin_runtime(RuntimeKind::LmStudio).read_health(200, R"({"data":[]})").state == HealthState::Up);
  CHECK(builtin_runtime(RuntimeKind::OpenAI).read_health(401, R"({"error":{"message":"bad key"}})").state ==
        HealthState::Down);
  CHECK(to_string(HealthState::Loading) == "loading");
}

TEST_CASE("build: llama.cpp /props, system_fingerprint and --version agree") {
  auto b = parse_build(builtin_runtime(RuntimeKind::LlamaCpp), body("get-props.http"));
  REQUIRE(b.ok());
  CHECK(*b == "b9928-81ff7abe5");
  auto parsed = parse_llamacpp_build_info(*b);
  REQUIRE(parsed);
  CHECK(parsed->number == 9928);
  CHECK(parsed->commit == "81ff7abe5");
  CHECK(parsed->text() == *b);

  auto version = parse_llama_server_version(probes_local::read_fixture("llama-server-version.txt"));
  REQUIRE(version.ok());
  CHECK(version->text() == *b);
  CHECK(*builtin_runtime(RuntimeKind::LlamaCpp)
             .read_version_output(probes_local::read_fixture("llama-server-version.txt")) == *b);

  ChatResult r = parse_chat_completion(body("post-v1-chat-completions-nonstream.http"), 0);
  CHECK(r.system_fingerprint == *b);

  auto distro = parse_llamacpp_build_info("b8681-Debian");
  REQUIRE(distro);
  CHECK(distro->commit == "Debian");
  CHECK(parse_llamacpp_build_info("b42")->text() == "b42");
  CHECK_FALSE(parse_llamacpp_build_info("9928-81ff"));
  CHECK_FALSE(parse_llamacpp_build_info("bX"));
  CHECK_FALSE(parse_llamacpp_build_info("b12-"));
  auto noisy =
      parse_llama_server_version("load_backend: loaded CPU backend\nversion: 7001 (abc1234)\nbuilt with clang\n");
  REQUIRE(noisy.ok());
  CHECK(noisy->text() == "b7001-abc1234");
  CHECK_FALSE(parse_llama_server_version("llama-server: command not found").ok());
}

TEST_CASE("build: vLLM, Ollama, oMLX, Rapid-MLX, LM Studio, mlx-lm") {
  CHECK(*parse_build(builtin_runtime(RuntimeKind::Vllm), R"({"version":"0.11.0"})") == "0.11.0");
  CHECK(*parse_build(builtin_runtime(RuntimeKind::Ollama), R"({"version":"0.12.6"})") == "0.12.6");
  CHECK_FALSE(parse_build(builtin_runtime(RuntimeKind::Ollama), "{}").ok());
  CHECK(*parse_build(builtin_runtime(RuntimeKind::Omlx),
                     R"({"status":"ok","version":"0.3.4","active_requests":1,"waiting_requests":2})") == "0.3.4");
  CHECK(*parse_build(builtin_runtime(RuntimeKind::RapidMlx),
                     "# HELP rapid_mlx_build_info Build info\n# TYPE rapid_mlx_build_info gauge\n"
                     "rapid_mlx_build_info{version=\"0.9.2\",model=\"mlx-community/Qwen3-8B-4bit\"} 1\n") == "0.9.2");
  CHECK_FALSE(parse_build(builtin_runtime(RuntimeKind::RapidMlx), "up 1\n").ok());
  CHECK(
      *parse_build(
          builtin_runtime(RuntimeKind::LmStudio),
          R"({"runtime":{"name":"llama.cpp-mac-arm64-apple-metal-advsimd","version":"1.3.0","supported_formats":["gguf"]}})") ==
      "llama.cpp-mac-arm64-apple-metal-advsimd@1.3.0");
  CHECK(*parse_build(
            builtin_runtime(RuntimeKind::MlxLm),
            R"({"system_fingerprint":"0.28.3-0.29.1-macOS-15.6.1-arm64-arm-64bit-applegpu_g15s","choices":[]})") ==
        "mlx-lm 0.28.3 mlx 0.29.1");
  CHECK_FALSE(parse_build(builtin_runtime(RuntimeKind::MlxLm), R"({"system_fingerprint":"fp_ollama"})").ok());
  auto none = parse_build(builtin_runtime(RuntimeKind::OpenAI), "{}");
  REQUIRE_FALSE(none.ok());
  CHECK(none.message().find("configure a version command") != std::string::npos);
}

TEST_CASE("props and slots captures") {
  const Runtime& llama = builtin_runtime(RuntimeKind::LlamaCpp);
  auto props = llama.read_props(body("get-props.http"));
  REQUIRE(props.ok());
  CHECK(props->total_slots == 2);
  CHECK(props->n_ctx == 2048);
  CHECK(props->model_alias == "tiny.gguf");
  CHECK(props->is_sleeping == false);
  // The Qwen3 template's tokens, then bos_token (eos_token <|im_end|> is one of them);
  // its <think>, <tool_call> and <tools> are text a template writes, not tokens.
  CHECK(props->template_tokens == std::vector<std::string>{"<|im_start|>", "<|im_end|>", "<|endoftext|>"});

  auto idle = llama.read_slots(body("get-slots-idle.http"));
  REQUIRE(idle.ok());
  CHECK(idle->size() == 2);
  CHECK(summarize_slots(*idle).all_idle());
  CHECK_FALSE((*idle)[0].n_decoded);

  auto busy = llama.read_slots(body("get-slots-while-busy.http"));
  REQUIRE(busy.ok());
  SlotSummary s = summarize_slots(*busy);
  CHECK(s.total == 2);
  CHECK(s.busy == 2);
  CHECK((*busy)[0].n_decoded == 200);
  CHECK((*busy)[1].n_decoded == 201);
  CHECK((*busy)[0].id_task == 711);

  auto during = llama.read_slots(body("get-slots-during-long-stream.http"));
  REQUIRE(during.ok());
  CHECK(summarize_slots(*during).busy == 1);
  CHECK((*during)[0].is_processing);

  // After the client dropped the stream the slot is free again; n_decoded is stale.
  auto after = llama.read_slots(body("get-slots-after-disconnect.http"));
  REQUIRE(after.ok());
  CHECK(summarize_slots(*after).all_idle());
  CHECK((*after)[0].n_decoded == 369);

  auto full = probes_local::load_capture("get-slots-fail-on-no-slot-while-busy.http");
  CHECK(full.status == 503);
  CHECK_FALSE(llama.read_slots(full.body).ok());
  CHECK_FALSE(llama.read_slots(R"([{"id":0}])").ok());
}

TEST_CASE("oMLX /api/status") {
  const auto read_status = builtin_runtime(RuntimeKind::Omlx).read_status;
  auto st = read_status(
      R"({"status":"ok","version":"0.3.4","models_loaded":1,"models_loading":0,"active_requests":2,"waiting_requests":5})");
  REQUIRE(st.ok());
  CHECK(st->active_requests == 2);
  CHECK(st->waiting_requests == 5);
  CHECK(st->models_loading == 0);
  CHECK_FALSE(read_status(R"({"detail":"API key required"})").ok());
}

TEST_CASE("model lists and the identity probe") {
  std::vector<std::string> ids = parse_model_ids(body("get-v1-models.http"));
  REQUIRE(ids.size() == 1);
  CHECK(ids[0] == "tiny.gguf");
  CHECK(check_model_list(ids, "tiny.gguf").outcome == Outcome::Clean);
  Verdict v = check_model_list(ids, "Qwen3-0.6B");
  CHECK(v.outcome == Outcome::IdentityMismatch);
  CHECK(v.detail.find("tiny.gguf") != std::string::npos);

  auto ollama = parse_model_ids(R"({"models":[{"name":"qwen3:8b","model":"qwen3:8b"},{"name":"llama3.2:latest"}]})");
  CHECK(ollama == std::vector<std::string>{"qwen3:8b", "llama3.2:latest"});
  auto aliases = parse_model_ids(R"({"data":[{"id":"/models/q.gguf","aliases":["qwen3-8b","q8"]}]})");
  CHECK(aliases == std::vector<std::string>{"/models/q.gguf", "qwen3-8b", "q8"});
  CHECK(parse_model_ids("not json").empty());
  CHECK(check_model_list({}, "x").detail.find("(empty)") != std::string::npos);
}

TEST_CASE("tokenize: request bodies and counts") {
  const Runtime& llama = builtin_runtime(RuntimeKind::LlamaCpp);
  const Runtime& vllm = builtin_runtime(RuntimeKind::Vllm);
  CHECK(llama.tokenize_body("m", "Hello") == R"({"content":"Hello"})");
  CHECK(vllm.tokenize_body("m", "Hello") == R"({"model":"m","prompt":"Hello"})");
  CHECK_FALSE(builtin_runtime(RuntimeKind::MlxLm).tokenize_body);  // no tokenize route, no body
  CHECK(*llama.tokenize_count(body("post-tokenize.http")) == 9);
  CHECK(*llama.tokenize_count(body("post-tokenize-with-pieces.http")) == 5);
  CHECK(*vllm.tokenize_count(R"({"count":42,"max_model_len":32768,"tokens":[1,2]})") == 42);
  CHECK_FALSE(llama.tokenize_count(R"({"error":"x"})").ok());
  CHECK_FALSE(llama.tokenize_count(R"({"tokens":[1,2,)").ok());  // cut short
  CHECK_FALSE(llama.tokenize_count("[1,2,3]").ok());
  // Nested values and other keys do not count; vLLM's max_model_len is read beside it.
  auto a = parse_tokenize_answer(R"({"tokens":[{"id":1,"piece":"a"},[7,8],3],"n":[1,2,3,4],"max_model_len":40960})");
  REQUIRE(a.has_value());
  CHECK(a->tokens == 3);
  CHECK_FALSE(a->count.has_value());
  CHECK(a->max_model_len == 40960);
  // A 131K-token answer: counted without a tree of 131K values.
  std::string big = R"({"tokens":[)";
  for (int i = 0; i < 131072; ++i) big += (i ? "," : "") + std::to_string(i % 151000);
  big += "]}";
  CHECK(*llama.tokenize_count(big) == 131072);
}

TEST_CASE("entries: the table holds each runtime once, with its default port") {
  // llama.cpp common/common.h port 8080; mlx_lm/server.py --port 8080; oMLX
  // settings.py ServerSettings 8000; vLLM cli_args.py 8000; Rapid-MLX
  // vllm_mlx/cli.py serve 8000; Ollama envconfig OLLAMA_HOST 127.0.0.1:11434;
  // LM Studio's documented 1234; a plain OpenAI server has none.
  const std::pair<RuntimeKind, std::optional<uint16_t>> ports[] = {
      {RuntimeKind::LlamaCpp, 8080}, {RuntimeKind::MlxLm, 8080},         {RuntimeKind::Omlx, 8000},
      {RuntimeKind::Vllm, 8000},     {RuntimeKind::RapidMlx, 8000},      {RuntimeKind::Ollama, 11434},
      {RuntimeKind::LmStudio, 1234}, {RuntimeKind::OpenAI, std::nullopt}};
  CHECK(builtin_runtimes().size() == std::size(ports));
  for (const auto& [kind, port] : ports) {
    INFO(to_string(kind));
    int seen = 0;
    for (const Runtime* r : builtin_runtimes()) seen += r->kind == kind ? 1 : 0;
    CHECK(seen == 1);
    CHECK(builtin_runtime(kind).default_port == port);
    CHECK_FALSE(builtin_runtime(kind).notes.empty());
  }
  // Every runtime but the plain one has a process signature.
  for (const Runtime* r : builtin_runtimes()) {
    INFO(to_string(r->kind));
    const bool named = !r->processes.programs.empty() || !r->processes.modules.empty() || !r->processes.app.empty();
    CHECK(named == (r->kind != RuntimeKind::OpenAI));
  }
}

TEST_CASE("special tokens a chat template names: <|name|> and full-width literals, not text it builds or writes") {
  // Phi-3: a role token built from parts gives nothing; its literals do.
  CHECK(special_tokens_in_template("{{'<|' + message['role'] + '|>' + '\\n' + message['content'] + '<|end|>'}}"
                                   "{% if add_generation_prompt %}{{ '<|assistant|>\\n' }}{% endif %}") ==
        std::vector<std::string>{"<|end|>", "<|assistant|>"});
  // gpt-oss's harmony headers, each once, in order of first appearance.
  CHECK(special_tokens_in_template("<|start|>system<|message|>x<|end|><|start|>assistant<|channel|>final<|message|>") ==
        std::vector<std::string>{"<|start|>", "<|message|>", "<|end|>", "<|channel|>"});
  // DeepSeek's full-width bars.
  CHECK(special_tokens_in_template("{{'<\xEF\xBD\x9C"
                                   "Assistant\xEF\xBD\x9C>' + content + "
                                   "'<\xEF\xBD\x9C"
                                   "end\xE2\x96\x81of\xE2\x96\x81sentence\xEF\xBD\x9C>'}}") ==
        std::vector<std::string>{"<\xEF\xBD\x9C"
                                 "Assistant\xEF\xBD\x9C>",
                                 "<\xEF\xBD\x9C"
                                 "end\xE2\x96\x81of\xE2\x96\x81sentence\xEF\xBD\x9C>"});
  // Tag-like text, comparisons and empty or overlong names are not tokens.
  CHECK(special_tokens_in_template("<tool_call>{% if a <|| b %}<||>x|> <|" + std::string(60, 'a') + "|>").empty());
  // At most kMaxTemplateTokens.
  std::string many;
  for (size_t i = 0; i < kMaxTemplateTokens + 10; ++i) many += "<|t" + std::to_string(i) + "|>";
  CHECK(special_tokens_in_template(many).size() == kMaxTemplateTokens);

  CHECK(looks_special("</s>"));
  CHECK(looks_special("<eos>"));
  CHECK(looks_special("[INST]"));
  CHECK_FALSE(looks_special(""));
  CHECK_FALSE(looks_special("<s"));
  CHECK_FALSE(looks_special("a b"));
  CHECK_FALSE(looks_special("<a b>"));
  CHECK_FALSE(looks_special("hello"));
}
