// What each runtime says it serves (probes/served_state.h, and each runtime's
// served-state readers in probes/runtimes/): the readers on the llama-server
// captures and on literal answers shaped like the other runtimes' (each names
// the upstream file its keys come from), the launch fingerprint's JSON and
// summary, MLX-LM's and llama-server's argv, and the identity judgement.
#include <functional>
#include <string>
#include <vector>

#include "probes/runtimes/catalog.h"
#include "probes/served_state.h"
#include "tests/catch.h"
#include "tests/unit/probes_capture_local.h"

using namespace soak;
using namespace soak::probes;

namespace {

std::string body(const std::string& capture) { return probes_local::load_capture(capture).body; }

ServedState read(RuntimeKind k, const std::vector<std::pair<std::string, std::string>>& answers,
                 const std::string& model = "m") {
  ServedState s;
  for (const auto& [path, b] : answers) {
    Status st = read_served_answer(builtin_runtime(k), path, b, model, s);
    INFO(path << ": " << (st.ok() ? "" : st.message()));
    REQUIRE(st.ok());
  }
  return s;
}

ServedState mlx_lm_served_from_argv(const std::vector<std::string>& argv) {
  return builtin_runtime(RuntimeKind::MlxLm).served_from_argv(argv);
}

void add_llama_argv(const std::vector<std::string>& argv, LaunchFingerprint& f) {
  builtin_runtime(RuntimeKind::LlamaCpp).fingerprint_from_argv(argv, f);
}

}  // namespace

TEST_CASE("served: llama.cpp /props and /slots captures give the launch fingerprint") {
  ServedState s = read(RuntimeKind::LlamaCpp,
                       {{"/props", body("get-props.http")}, {"/slots", body("get-slots-idle.http")}}, "tiny.gguf");
  CHECK(s.proof == IdentityProof::ServedName);
  CHECK(s.fingerprint.model == "tiny.gguf");
  CHECK(s.fingerprint.slots == 2);
  CHECK(s.fingerprint.ctx_per_slot == 2048);
  CHECK(s.fingerprint.ctx_total == 4096);
  CHECK_FALSE(s.fingerprint.max_tokens_default);  // /props shows the sampling default, not -n
  CHECK(s.fingerprint.speculative == false);
  CHECK(s.fingerprint.source == "/props + /slots");
  CHECK(judge_served(s, "tiny.gguf", "").outcome == Outcome::Clean);
  CHECK(judge_served(s, "other.gguf", "").outcome == Outcome::IdentityMismatch);
  CHECK(s.fingerprint.to_json() ==
        R"({"model":"tiny.gguf","ctx_per_slot":2048,"ctx_total":4096,"slots":2,"speculative":false})");
}

TEST_CASE("served: Ollama /api/ps digest proves the weights; a re-pull under the tag fails identity") {
  // ollama server/routes.go PsHandler, api/types.go ProcessModelResponse.
  const std::string ps =
      R"({"models":[{"name":"qwen3:30b","model":"qwen3:30b","size":20000000000,"digest":"sha256:aaa","details":{"format":"gguf"},)"
      R"("expires_at":"2099-01-01T00:00:00Z","size_vram":20000000000,"context_length":8192}]})";
  ServedState s = read(RuntimeKind::Ollama, {{"/api/ps", ps}}, "qwen3:30b");
  CHECK(s.proof == IdentityProof::ServedDigest);
  CHECK(s.served_digest == "sha256:aaa");
  CHECK(s.fingerprint.model == "sha256:aaa");
  CHECK(s.fingerprint.ctx_per_slot == 8192);
  CHECK(judge_served(s, "qwen3:30b", "sha256:aaa").outcome == Outcome::Clean);
  Verdict changed = judge_served(s, "qwen3:30b", "sha256:bbb");
  CHECK(changed.outcome == Outcome::IdentityMismatch);
  CHECK(changed.detail.find("weights changed") != std::string::npos);
  // Not loaded (Ollama loads on demand, unloads after keep_alive): not served.
  ServedState empty = read(RuntimeKind::Ollama, {{"/api/ps", R"({"models":[]})"}}, "qwen3:30b");
  CHECK(judge_served(empty, "qwen3:30b", "").outcome == Outcome::IdentityMismatch);
  CHECK_FALSE(read_served_answer(builtin_runtime(RuntimeKind::Ollama), "/api/ps", "{}", "x", empty).ok());
}

TEST_CASE("served: LM Studio /api/v0/models state says what is loaded") {
  // lmstudio docs 1_developer/2_rest/endpoints.mdx, GET /api/v0/models.
  const std::string v0 =
      R"({"object":"list","data":[{"id":"qwen3-30b","object":"model","type":"llm","publisher":"lmstudio-community",)"
      R"("arch":"qwen3moe","compatibility_type":"gguf","quantization":"Q4_K_M","state":"loaded","max_context_length":262144,)"
      R"("loaded_context_length":32768},{"id":"gemma","object":"model","type":"llm","state":"not-loaded","max_context_length":8192}]})";
  ServedState s = read(RuntimeKind::LmStudio, {{"/api/v0/models", v0}}, "qwen3-30b");
  CHECK(s.proof == IdentityProof::LoadedState);
  CHECK(s.loaded == std::vector<std::string>{"qwen3-30b"});
  CHECK(s.fingerprint.model == "qwen3-30b Q4_K_M");
  CHECK(s.fingerprint.ctx_per_slot == 32768);
  CHECK(judge_served(s, "qwen3-30b", "").outcome == Outcome::Clean);
  // Listed but not loaded is not served.
  CHECK(judge_served(s, "gemma", "").outcome == Outcome::IdentityMismatch);
}

// lmstudio docs 1_developer/2_rest/list.mdx: GET /api/v1/models (LM Studio 0.4+).
TEST_CASE("served: LM Studio /api/v1/models gives the loaded instance's parallel slots") {
  const std::string v0 =
      R"({"object":"list","data":[{"id":"qwen3.6-35b","type":"llm","quantization":"Q4_K_M","state":"loaded",)"
      R"("max_context_length":262144,"loaded_context_length":32768}]})";
  const std::string v1 =
      R"({"models":[{"type":"embedding","key":"nomic-embed","loaded_instances":[{"id":"nomic-embed","config":{"context_length":2048}}]},)"
      R"({"type":"llm","key":"qwen3.6-35b","loaded_instances":[{"id":"qwen3.6-35b","config":{"context_length":65536,)"
      R"("eval_batch_size":512,"parallel":4,"flash_attention":true}}],"max_context_length":262144,"format":"gguf"}]})";
  ServedState s = read(RuntimeKind::LmStudio, {{"/api/v0/models", v0}, {"/api/v1/models", v1}}, "qwen3.6-35b");
  CHECK(s.fingerprint.slots == 4);
  CHECK(s.fingerprint.ctx_per_slot == 32768);  // v0's loaded_context_length stands
  ServedState only_v1 = read(RuntimeKind::LmStudio, {{"/api/v1/models", v1}}, "qwen3.6-35b");
  CHECK(only_v1.fingerprint.ctx_per_slot == 65536);
  // Without parallel (an older 0.4 build): slots unknown, not 1.
  ServedState old = read(
      RuntimeKind::LmStudio,
      {{"/api/v1/models",
        R"({"models":[{"key":"qwen3.6-35b","loaded_instances":[{"id":"qwen3.6-35b","config":{"context_length":4096}}]}]})"}},
      "qwen3.6-35b");
  CHECK_FALSE(old.fingerprint.slots);
  ServedState other = read(RuntimeKind::LmStudio, {{"/api/v1/models", v1}}, "nomic-embed-x");
  CHECK_FALSE(other.fingerprint.slots);
  // Before 0.4 the route does not exist, and LM Studio answers 200 with an
  // error for every route it lacks: unknown, not a failure.
  ServedState before =
      read(RuntimeKind::LmStudio,
           {{"/api/v0/models", v0},
            {"/api/v1/models", R"x({"error":"Unexpected endpoint or method. (GET /api/v1/models)"})x"}},
           "qwen3.6-35b");
  CHECK_FALSE(before.fingerprint.slots);
  CHECK(before.fingerprint.ctx_per_slot == 32768);
}

TEST_CASE("served: vLLM /v1/models and Rapid-MLX /metrics") {
  // vllm/entrypoints/openai/protocol.py ModelCard.
  const std::string models =
      R"({"object":"list","data":[{"id":"qwen","object":"model","created":1,"owned_by":"vllm","root":"/models/Qwen3",)"
      R"("parent":null,"max_model_len":32768,"permission":[]}]})";
  ServedState v = read(RuntimeKind::Vllm, {{"/v1/models", models}}, "qwen");
  CHECK(v.proof == IdentityProof::ServedName);
  CHECK(v.fingerprint.model == "/models/Qwen3");
  CHECK(v.fingerprint.ctx_per_slot == 32768);
  CHECK(judge_served(v, "qwen", "").outcome == Outcome::Clean);
  CHECK(v.fingerprint.kv_cache_type.empty());
  // vllm/v1/metrics/loggers.py log_metrics_info: CacheConfig as labels, one series per engine.
  const std::string vmetrics =
      "# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig\n# TYPE vllm:cache_config_info gauge\n"
      "vllm:cache_config_info{block_size=\"16\",cache_dtype=\"fp8_e4m3\",enable_prefix_caching=\"True\",engine=\"0\","
      "gpu_memory_utilization=\"0.9\",num_gpu_blocks=\"2048\"} 1.0\n"
      "vllm:num_requests_running{engine=\"0\",model_name=\"qwen\"} 0.0\n";
  ServedState vm = read(RuntimeKind::Vllm, {{"/v1/models", models}, {"/metrics", vmetrics}}, "qwen");
  CHECK(vm.fingerprint.kv_cache_type == "fp8_e4m3");
  CHECK(vm.fingerprint.ctx_per_slot == 32768);
  ServedState old =
      read(RuntimeKind::Vllm, {{"/v1/models", models}, {"/metrics", "vllm:num_requests_running 0\n"}}, "qwen");
  CHECK(old.fingerprint.kv_cache_type.empty());  // a build without the info gauge: unknown

  // Rapid-MLX vllm_mlx/routes/metrics.py _render_prometheus.
  const std::string metrics =
      "# TYPE rapid_mlx_build_info gauge\nrapid_mlx_build_info{version=\"0.6.1\",model=\"mlx-community/Qwen3\"} 1\n"
      "# TYPE rapid_mlx_kv_cache_dtype gauge\nrapid_mlx_kv_cache_dtype{dtype=\"bf16\"} 0\n"
      "rapid_mlx_kv_cache_dtype{dtype=\"int8\"} 1\nrapid_mlx_kv_cache_dtype{dtype=\"int4\"} 0\n"
      "rapid_mlx_requests_running 2\nrapid_mlx_requests_waiting 3\n";
  ServedState r = read(RuntimeKind::RapidMlx, {{"/metrics", metrics}}, "mlx-community/Qwen3");
  CHECK(r.proof == IdentityProof::LoadedState);
  CHECK(r.fingerprint.model == "mlx-community/Qwen3");
  CHECK(r.fingerprint.kv_cache_type == "int8");
  CHECK(r.running == 2);
  CHECK(r.waiting == 3);
  CHECK(judge_served(r, "mlx-community/Qwen3", "").outcome == Outcome::Clean);
  CHECK(judge_served(r, "other", "").outcome == Outcome::IdentityMismatch);
}

// omlx/server.py server_status(): "loaded_models": pool.get_loaded_model_ids(),
// "active_requests", "waiting_requests" (its /v1/models lists every
// discovered model, loaded or not).
TEST_CASE("served: oMLX /api/status loaded_models proves what is loaded; without the key: echo only") {
  ServedState s = read(RuntimeKind::Omlx, {{"/api/status", R"({"status":"ok","version":"0.3.9","models_loaded":1,
      "models_loading":0,"default_model":"Qwen3-4bit","loaded_models":["Qwen3-4bit"],
      "active_requests":1,"waiting_requests":2})"}},
                       "Qwen3-4bit");
  CHECK(s.proof == IdentityProof::LoadedState);
  CHECK(s.fingerprint.model == "Qwen3-4bit");
  CHECK(s.running == 1);
  CHECK(s.waiting == 2);
  CHECK(judge_served(s, "Qwen3-4bit", "").outcome == Outcome::Clean);
  Verdict other = judge_served(s, "Llama-8bit", "");
  CHECK(other.outcome == Outcome::IdentityMismatch);
  CHECK(other.detail.find("Qwen3-4bit") != std::string::npos);

  ServedState old = read(RuntimeKind::Omlx, {{"/api/status", R"({"status":"ok","version":"0.3.0","models_loaded":1,
      "active_requests":1,"waiting_requests":0})"}});
  CHECK(old.proof == IdentityProof::EchoOnly);
  Verdict v = judge_served(old, "m", "");
  CHECK(v.outcome == Outcome::IdentityUnproven);
  CHECK(v.detail.find("echo only") != std::string::npos);
  CHECK(v.detail.find("no loaded_models") != std::string::npos);
  CHECK(category_of(Outcome::IdentityUnproven) == OutcomeCategory::CandidateFailure);
}

TEST_CASE("served: MLX-LM argv names the served model; a config id that differs is a failure") {
  // mlx_lm/server.py main(): --model, --draft-model, --max-tokens (default 512).
  ServedState s =
      mlx_lm_served_from_argv({"mlx_lm.server", "--model", "/Users/me/models/Qwen3-4bit", "--port", "8080"});
  CHECK(s.proof == IdentityProof::ProcessArgv);
  CHECK(s.fingerprint.model == "/Users/me/models/Qwen3-4bit");
  CHECK(s.fingerprint.max_tokens_default == 512);
  CHECK(s.fingerprint.speculative == false);
  CHECK(judge_served(s, "/Users/me/models/Qwen3-4bit", "").outcome == Outcome::Clean);
  Verdict rel = judge_served(s, "models/Qwen3-4bit", "");  // relative vs absolute: other weights, a reload
  CHECK(rel.outcome == Outcome::IdentityMismatch);
  CHECK(rel.detail.find("--model") != std::string::npos);
  ServedState t = mlx_lm_served_from_argv(
      {"python", "-m", "mlx_lm", "server", "--model=q", "--max-tokens", "4096", "--draft-model", "d"});
  CHECK(t.fingerprint.model == "q");
  CHECK(t.fingerprint.max_tokens_default == 4096);
  CHECK(t.fingerprint.speculative == true);
  // Without its argv nothing says what it serves.
  ServedState none = mlx_lm_served_from_argv({});
  CHECK(none.proof == IdentityProof::EchoOnly);
  CHECK(judge_served(none, "q", "").outcome == Outcome::IdentityUnproven);
}

TEST_CASE("served: llama-server's argv gives the KV cache type and -n; a flag not given is upstream's default") {
  // common/arg.cpp: {"-ctk", "--cache-type-k"}, {"-ctv", "--cache-type-v"}, {"-n", "--predict", "--n-predict"};
  // common/common.h: cache_type_k / cache_type_v GGML_TYPE_F16, n_predict -1.
  LaunchFingerprint f;
  add_llama_argv({"llama-server", "-m", "q.gguf", "-ctk", "q8_0", "-ctv", "q8_0", "-n", "64", "--port", "8080"}, f);
  CHECK(f.kv_cache_type == "q8_0");
  CHECK(f.max_tokens_default == 64);
  CHECK(f.source == "argv");
  CHECK(f.summary().find("kv q8_0") != std::string::npos);
  CHECK(f.summary().find("max_tokens default 64") != std::string::npos);

  LaunchFingerprint mixed;  // '_' for '-' in a "--" option, as upstream accepts
  add_llama_argv({"llama-server", "--cache_type_k", "q4_0", "--n_predict", "-1"}, mixed);
  CHECK(mixed.kv_cache_type == "k=q4_0 v=f16");
  CHECK(mixed.max_tokens_default == -1);

  LaunchFingerprint only_k;  // -ctv not given: f16, so the same launch as "-ctk q8_0 -ctv f16"
  add_llama_argv({"llama-server", "-ctk", "q8_0", "--predict", "128", "-n", "256"}, only_k);
  CHECK(only_k.kv_cache_type == "k=q8_0 v=f16");
  CHECK(only_k.max_tokens_default == 256);  // the last one wins, as upstream
  LaunchFingerprint both;
  add_llama_argv({"llama-server", "-ctk", "q8_0", "-ctv", "f16", "-n", "256"}, both);
  CHECK(both.to_json() == only_k.to_json());

  // No flag: the defaults, so a relaunch that drops -ctk / -n is a change.
  LaunchFingerprint plain;
  plain.ctx_per_slot = 4096;
  add_llama_argv({"llama-server", "-m", "q.gguf", "-c", "8192", "--parallel", "2"}, plain);
  CHECK(plain.kv_cache_type == "f16");
  CHECK(plain.max_tokens_default == -1);
  CHECK(plain.ctx_per_slot == 4096);  // what the routes said is left alone
  CHECK(compare_fingerprints(f, plain).changed);
  // Not readable (empty), or a value soakd takes from its environment (empty text): unknown.
  LaunchFingerprint none;
  add_llama_argv({}, none);
  CHECK(none.kv_cache_type.empty());
  CHECK_FALSE(none.max_tokens_default);
  CHECK(none.source.empty());
  LaunchFingerprint secret;
  add_llama_argv({"llama-server", "-ctk", "", "-n", ""}, secret);
  CHECK(secret.kv_cache_type.empty());
  CHECK_FALSE(secret.max_tokens_default);
  LaunchFingerprint bad;
  add_llama_argv({"llama-server", "-n", "lots"}, bad);  // unparsable -n
  CHECK_FALSE(bad.max_tokens_default);
}

TEST_CASE("fingerprint comparison: a field both know that differs is a change; one side unknown is not") {
  LaunchFingerprint was;
  was.model = "m.gguf";
  was.slots = 8;
  was.ctx_per_slot = 131072;
  was.speculative = false;
  LaunchFingerprint now = was;
  now.speculative.reset();     // /slots failed this time
  now.kv_cache_type = "q8_0";  // argv read this time
  FingerprintComparison c = compare_fingerprints(was, now);
  CHECK_FALSE(c.changed);
  CHECK(c.merged.speculative == false);
  CHECK(c.merged.kv_cache_type == "q8_0");
  CHECK(c.merged.slots == 8);
  CHECK(compare_fingerprints(LaunchFingerprint{}, now).merged.to_json() == now.to_json());  // first known
  for (auto change : std::vector<std::function<void(LaunchFingerprint&)>>{
           [](LaunchFingerprint& f) { f.slots = 1; }, [](LaunchFingerprint& f) { f.ctx_per_slot = 4096; },
           [](LaunchFingerprint& f) { f.model = "other.gguf"; }, [](LaunchFingerprint& f) { f.speculative = true; }}) {
    LaunchFingerprint other = was;
    change(other);
    FingerprintComparison d = compare_fingerprints(was, other);
    CHECK(d.changed);
    CHECK(d.merged.to_json() == other.to_json());
  }
  LaunchFingerprint kv = now;
  kv.kv_cache_type = "q4_0";
  CHECK(compare_fingerprints(c.merged, kv).changed);
}

TEST_CASE("fingerprint: JSON round trip, summary, empty") {
  LaunchFingerprint f;
  f.model = "sha256:abc";
  f.ctx_per_slot = 131072;
  f.ctx_total = 1048576;
  f.slots = 8;
  f.kv_cache_type = "q8_0";
  f.speculative = true;
  auto back = parse_fingerprint_json(f.to_json());
  REQUIRE(back.ok());
  CHECK(back->to_json() == f.to_json());
  CHECK(f.summary() == "ctx 131072/slot (1048576 total), 8 slots, kv q8_0, speculative, model sha256:abc");
  CHECK(LaunchFingerprint{}.to_json().empty());
  CHECK(parse_fingerprint_json("").ok());
  CHECK_FALSE(parse_fingerprint_json("[1]").ok());
}

TEST_CASE("served: llama-server's argv gives its prompt-cache cap, 8192 MiB when not given") {
  // common/arg.cpp: {"-cram", "--cache-ram"}; common/common.h: cache_ram_mib = 8192 (-1 no limit, 0 off).
  LaunchFingerprint plain;
  add_llama_argv({"llama-server", "-m", "q.gguf"}, plain);
  CHECK(plain.cache_ram_mib == 8192);
  CHECK(plain.summary().find("prompt cache 8192 MiB") != std::string::npos);
  CHECK(plain.to_json().find("\"cache_ram_mib\":8192") != std::string::npos);

  LaunchFingerprint small, unlimited, off;
  add_llama_argv({"llama-server", "--cache-ram", "2048"}, small);
  add_llama_argv({"llama-server", "-cram", "-1"}, unlimited);
  add_llama_argv({"llama-server", "--cache_ram", "0"}, off);
  CHECK(small.cache_ram_mib == 2048);
  CHECK(unlimited.cache_ram_mib == -1);
  CHECK(unlimited.summary().find("prompt cache unlimited") != std::string::npos);
  CHECK(off.cache_ram_mib == 0);
  CHECK(off.summary().find("prompt cache off") != std::string::npos);

  // Stored and read back; another cap is another launch.
  auto back = parse_fingerprint_json(small.to_json());
  REQUIRE(back);
  CHECK(back->cache_ram_mib == 2048);
  CHECK(compare_fingerprints(plain, small).changed);
  LaunchFingerprint unread;  // an older row without the field: known now, not a change
  unread.kv_cache_type = "f16";
  unread.max_tokens_default = -1;
  const auto merged = compare_fingerprints(unread, plain);
  CHECK_FALSE(merged.changed);
  CHECK(merged.merged.cache_ram_mib == 8192);
}

TEST_CASE("served: a managed llama-server's LLAMA_ARG_N_PREDICT and LLAMA_ARG_CACHE_RAM are read, the argv winning") {
  // common/arg.cpp set_env: -n/--n-predict LLAMA_ARG_N_PREDICT, -cram/--cache-ram
  // LLAMA_ARG_CACHE_RAM; the environment is read first, the command line after.
  CandidateConfig c;
  c.runtime = RuntimeKind::LlamaCpp;
  LaunchSpec s;
  s.argv = {LaunchValue{"llama-server", ""}, LaunchValue{"-m", ""}, LaunchValue{"q.gguf", ""}};
  s.env["LLAMA_ARG_N_PREDICT"] = LaunchValue{"64", ""};
  s.env["LLAMA_ARG_CACHE_RAM"] = LaunchValue{"2048", ""};
  s.env["LLAMA_ARG_N_GPU_LAYERS"] = LaunchValue{"99", ""};  // not a fingerprint flag
  c.launch = s;
  const auto args = launch_argv_of(c);
  CHECK(args == std::vector<std::string>{"llama-server", "--n-predict", "64", "--cache-ram", "2048", "-m", "q.gguf"});
  LaunchFingerprint env_only;
  add_llama_argv(args, env_only);
  CHECK(env_only.max_tokens_default == 64);
  CHECK(env_only.cache_ram_mib == 2048);

  // The same flag in argv: the argv's value.
  c.launch->argv.push_back(LaunchValue{"-n", ""});
  c.launch->argv.push_back(LaunchValue{"8192", ""});
  LaunchFingerprint both;
  add_llama_argv(launch_argv_of(c), both);
  CHECK(both.max_tokens_default == 8192);
  CHECK(both.cache_ram_mib == 2048);

  // A value from soakd's own environment is unknown here: no cap read, not "unlimited".
  c.launch->argv.resize(3);
  c.launch->env["LLAMA_ARG_N_PREDICT"] = LaunchValue{"", "N_PREDICT"};
  LaunchFingerprint secret;
  add_llama_argv(launch_argv_of(c), secret);
  CHECK_FALSE(secret.max_tokens_default);

  // Other runtimes read no LLAMA_ARG_*; an unmanaged candidate has no launch argv.
  c.runtime = RuntimeKind::MlxLm;
  CHECK(launch_argv_of(c) == std::vector<std::string>{"llama-server", "-m", "q.gguf"});
  c.launch.reset();
  CHECK(launch_argv_of(c).empty());
}
