// The `launch` block and `memory_budget` of a candidate (core/launch.h,
// core/config_launch.cc, core/byte_size.h): parsing, the secrets rule, the
// port in the argv against base_url, the warnings for flags a runtime needs.
#include <string>

#include "core/byte_size.h"
#include "core/config.h"
#include "core/launch.h"
#include "probes/runtimes/catalog.h"
#include "tests/catch.h"

using namespace soak;

namespace {

Result<Config> parse(const std::string& text) { return parse_config(text, "test.json", "/etc/soakd"); }

std::string managed(const std::string& runtime, const std::string& base_url, const std::string& launch,
                    const std::string& extra = "") {
  return R"({"candidates": [{"name":"m","model":"qwen","runtime":")" + runtime + R"(","base_url":")" + base_url +
         R"(","launch":)" + launch + extra + "}]}";
}

void expect_error(const std::string& text, std::initializer_list<std::string> needles) {
  auto r = parse(text);
  REQUIRE_FALSE(r.ok());
  INFO(r.message());
  for (const auto& n : needles) CHECK(r.message().find(n) != std::string::npos);
}

}  // namespace

TEST_CASE("memory sizes parse with binary and decimal units, and reject bare numbers") {
  CHECK(*parse_byte_size("64GiB") == 64LL * 1024 * 1024 * 1024);
  CHECK(*parse_byte_size("48GB") == 48'000'000'000LL);
  CHECK(*parse_byte_size("512MiB") == 512LL * 1024 * 1024);
  CHECK(*parse_byte_size("1.5GiB") == 1536LL * 1024 * 1024);
  CHECK(*parse_byte_size("900B") == 900);
  CHECK_FALSE(parse_byte_size("64").ok());
  CHECK_FALSE(parse_byte_size("64gb").ok());
  CHECK_FALSE(parse_byte_size("GiB").ok());
  CHECK_FALSE(parse_byte_size("1..5GiB").ok());
  CHECK(format_bytes(64LL * 1024 * 1024 * 1024) == "64.0 GiB");
  CHECK(format_bytes(512LL * 1024 * 1024) == "512.0 MiB");
  CHECK(format_bytes(900) == "900 B");
}

TEST_CASE("a launch block parses: argv, env from soakd's environment by name, timeouts, keep_running") {
  auto r = parse(
      managed("llama.cpp", "http://127.0.0.1:8081",
              R"({"argv": ["llama-server", "-m", "/m.gguf", "--port", "8081", "--api-key", {"from_env": "LLAMA_KEY"}],
                             "env": {"LLAMA_ARG_N_GPU_LAYERS": "99", "HF_TOKEN": {"from_env": "HF_TOKEN"}},
                             "cwd": "models", "ready_timeout": "2m", "stop_timeout": "5s", "keep_running": true})",
              R"(, "memory_budget": "48GB")"));
  REQUIRE(r.ok());
  const CandidateConfig& c = r->candidates[0];
  REQUIRE(c.launch);
  CHECK(c.launch->argv.size() == 7);
  CHECK(c.launch->argv[6].from_env == "LLAMA_KEY");
  CHECK(c.launch->argv[6].text.empty());
  CHECK(c.launch->env.at("HF_TOKEN").from_env == "HF_TOKEN");
  CHECK(c.launch->env.at("LLAMA_ARG_N_GPU_LAYERS").text == "99");
  CHECK(c.launch->cwd == "/etc/soakd/models");
  CHECK(c.launch->ready_timeout_ms == 2 * kMinute);
  CHECK(c.launch->stop_timeout_ms == 5 * kSecond);
  CHECK(c.launch->keep_running == KeepRunning::Yes);
  CHECK(c.memory_budget_bytes == 48'000'000'000LL);
  // Stored and shown with the secret as its variable's name, never its value.
  CHECK(display_argv(*c.launch).back() == "${LLAMA_KEY}");
  CHECK(argv_json(*c.launch).find("{\"from_env\":\"LLAMA_KEY\"}") != std::string::npos);

  auto d = parse(managed("llama.cpp", "http://127.0.0.1:8081", R"({"argv": ["llama-server", "--port", "8081"]})"));
  REQUIRE(d.ok());
  CHECK(d->candidates[0].launch->ready_timeout_ms == kDefaultReadyTimeoutMs);
  CHECK(d->candidates[0].launch->stop_timeout_ms == kDefaultStopTimeoutMs);
  CHECK(d->candidates[0].launch->keep_running == KeepRunning::No);
  CHECK_FALSE(d->candidates[0].memory_budget_bytes);
}

TEST_CASE("a secret written in the launch block is refused, without repeating it") {
  expect_error(managed("llama.cpp", "http://127.0.0.1:8081",
                       R"({"argv": ["llama-server", "--port", "8081", "--api-key", "hunter2"]})"),
               {"candidates[0].launch.argv[4]", "--api-key", "from_env"});
  auto r = parse(managed("llama.cpp", "http://127.0.0.1:8081",
                         R"({"argv": ["llama-server", "--port", "8081", "--api-key=hunter2"]})"));
  REQUIRE_FALSE(r.ok());
  CHECK(r.message().find("hunter2") == std::string::npos);
  expect_error(managed("mlx-lm", "http://127.0.0.1:8081",
                       R"({"argv": ["mlx_lm.server", "--port", "8081"], "env": {"HF_TOKEN": "hf_abc"}})"),
               {"launch.env.HF_TOKEN", "secret"});
  // A file holding a key is not a secret; a word that merely contains "key" is not one either.
  CHECK(parse(managed("llama.cpp", "http://127.0.0.1:8081",
                      R"({"argv": ["llama-server", "--port", "8081", "--ssl-key-file", "/k.pem", "--keep", "4"]})"))
            .ok());
  CHECK(names_a_secret("--api-key"));
  CHECK(names_a_secret("HF_TOKEN"));
  CHECK_FALSE(names_a_secret("TOKENIZERS_PARALLELISM"));
  CHECK_FALSE(names_a_secret("--ssl-key-file"));
  CHECK_FALSE(names_a_secret("--token-interval-ms"));
  CHECK(names_a_secret("AWS_SECRET_ACCESS_KEY"));
}

TEST_CASE("base_url's port must be the port the launch argv gives, naming the flag") {
  expect_error(managed("llama.cpp", "http://127.0.0.1:8080", R"({"argv": ["llama-server", "--port", "8081"]})"),
               {"candidates[0].base_url", "8080", "--port 8081"});
  expect_error(managed("vllm", "http://127.0.0.1:8080", R"({"argv": ["vllm", "serve", "-p", "9000"]})"), {"-p 9000"});
  expect_error(managed("mlx-lm", "http://127.0.0.1:8080", R"({"argv": ["server", "--host", "127.0.0.1:7000"]})"),
               {"--host 127.0.0.1:7000"});
  expect_error(
      managed("llama.cpp", "http://127.0.0.1:8080", R"({"argv": ["llama-server"], "env": {"LLAMA_ARG_PORT": "8090"}})"),
      {"LLAMA_ARG_PORT"});
  // llama.cpp's -p is the prompt, not a port; no port given at all is fine.
  CHECK(parse(managed("llama.cpp", "http://127.0.0.1:8080", R"({"argv": ["llama-server", "-p", "9000"]})")).ok());
  CHECK(parse(managed("llama.cpp", "http://127.0.0.1:8080", R"({"argv": ["llama-server", "--port=8080"]})")).ok());
  // Managed runtimes run on this machine; they are sampled by pid, not found by name.
  expect_error(managed("llama.cpp", "http://10.0.0.2:8080", R"({"argv": ["llama-server"]})"), {"loopback"});
  expect_error(managed("llama.cpp", "http://127.0.0.1:8080", R"({"argv": ["llama-server"]})", R"(, "pid": 12)"),
               {"pid"});
  expect_error(managed("llama.cpp", "http://127.0.0.1:8080", R"({"argv": []})"), {"launch.argv"});
  expect_error(managed("llama.cpp", "http://127.0.0.1:8080", R"({"argv": ["x"], "ready_timeout": "10"})"),
               {"ready_timeout"});
  expect_error(R"({"candidates": [{"name":"m","model":"q","runtime":"llama.cpp","base_url":"http://127.0.0.1:1",
                  "memory_budget": "64"}]})",
               {"memory_budget", "GiB"});
}

// The warnings are each runtime's entry's (probes/runtimes/), no longer core's.
TEST_CASE("flags a runtime needs for soak testing are warned about") {
  auto mlx = parse(managed("mlx-lm", "http://127.0.0.1:8080", R"({"argv": ["mlx_lm.server", "--port", "8080"]})"));
  REQUIRE(mlx.ok());
  auto w = probes::builtin_runtime(RuntimeKind::MlxLm).launch_warnings(*mlx->candidates[0].launch);
  REQUIRE(w.size() == 1);
  CHECK(w[0].find("--max-tokens") != std::string::npos);
  auto mlx_ok = parse(managed("mlx-lm", "http://127.0.0.1:8080",
                              R"({"argv": ["mlx_lm.server", "--port", "8080", "--max-tokens", "32768"]})"));
  CHECK(probes::builtin_runtime(RuntimeKind::MlxLm).launch_warnings(*mlx_ok->candidates[0].launch).empty());

  auto ls = parse(managed("llama.cpp", "http://127.0.0.1:8080", R"({"argv": ["/opt/bin/llama-server"]})"));
  REQUIRE(ls.ok());
  auto lw = probes::builtin_runtime(RuntimeKind::LlamaCpp).launch_warnings(*ls->candidates[0].launch);
  REQUIRE(lw.size() == 2);
  CHECK(lw[0].find("-n") != std::string::npos);
  CHECK(lw[1].find("-c") != std::string::npos);
  auto ls_ok = parse(
      managed("llama.cpp", "http://127.0.0.1:8080", R"({"argv": ["llama-server", "-n", "8192", "--ctx-size=65536"]})"));
  CHECK(probes::builtin_runtime(RuntimeKind::LlamaCpp).launch_warnings(*ls_ok->candidates[0].launch).empty());
}

TEST_CASE("a launch block and a budget change the candidate's config hash; none keeps the old one") {
  auto a = parse(managed("llama.cpp", "http://127.0.0.1:8081", R"({"argv": ["llama-server", "--port", "8081"]})"));
  auto b = parse(
      managed("llama.cpp", "http://127.0.0.1:8081", R"({"argv": ["llama-server", "--port", "8081", "-n", "1"]})"));
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  CHECK(a->candidate_hash(a->candidates[0]) != b->candidate_hash(b->candidates[0]));
  auto plain = parse(
      R"({"candidates": [{"name":"m","model":"qwen","runtime":"llama.cpp","base_url":"http://127.0.0.1:8081"}]})");
  auto budget =
      parse(R"({"candidates": [{"name":"m","model":"qwen","runtime":"llama.cpp","base_url":"http://127.0.0.1:8081",
                          "memory_budget": "8GiB"}]})");
  REQUIRE(plain.ok());
  REQUIRE(budget.ok());
  CHECK(plain->candidate_hash(plain->candidates[0]) != budget->candidate_hash(budget->candidates[0]));
}

TEST_CASE("ab: history or interleaved, interleaved only where soakd can start the previous build beside the new one") {
  const std::string launch = R"({"argv": ["llama-server", "-m", "/m.gguf", "--port", "8081"]})";
  SECTION("history by default; interleaved read, and in the config hash only when set") {
    auto plain = parse(managed("llama.cpp", "http://127.0.0.1:8081", launch));
    auto ab = parse(managed("llama.cpp", "http://127.0.0.1:8081", launch, R"(, "ab": "interleaved")"));
    auto history = parse(managed("llama.cpp", "http://127.0.0.1:8081", launch, R"(, "ab": "history")"));
    REQUIRE(plain.ok());
    REQUIRE(ab.ok());
    REQUIRE(history.ok());
    CHECK(plain->candidates[0].ab == AbMode::History);
    CHECK(ab->candidates[0].ab == AbMode::Interleaved);
    CHECK(history->candidates[0].ab == AbMode::History);
    CHECK(plain->candidate_hash(plain->candidates[0]) == history->candidate_hash(history->candidates[0]));
    CHECK(plain->candidate_hash(plain->candidates[0]) != ab->candidate_hash(ab->candidates[0]));
  }
  SECTION("an unknown value") {
    expect_error(managed("llama.cpp", "http://127.0.0.1:8081", launch, R"(, "ab": "live")"),
                 {"test.json: candidates[0].ab", "unknown value \"live\"", "history, interleaved"});
  }
  SECTION("on a candidate soakd does not start") {
    expect_error(
        R"({"candidates": [{"name":"u","model":"qwen","runtime":"llama.cpp","base_url":"http://127.0.0.1:8080",
                            "ab": "interleaved"}]})",
        {"test.json: candidates[0].ab", "only a managed candidate", "add a launch block, or drop \"ab\"",
         "\"baseline\""});
  }
  SECTION("a launch that gives no port to replace") {
    expect_error(managed("llama.cpp", "http://127.0.0.1:8080", R"({"argv": ["llama-server", "-m", "/m.gguf"]})",
                         R"(, "ab": "interleaved")"),
                 {"candidates[0].ab", "no port soakd can replace", "\"--port\", \"8081\""});
  }
  SECTION("an interpreter: the previous build's program cannot be known") {
    expect_error(
        managed("mlx-lm", "http://127.0.0.1:8081",
                R"({"argv": ["python3.12", "-m", "mlx_lm.server", "--port", "8081"]})", R"(, "ab": "interleaved")"),
        {"candidates[0].ab", "runs python3.12, an interpreter", "previous build's program cannot be known",
         "\"history\""});
    expect_error(
        managed("mlx-lm", "http://127.0.0.1:8081",
                R"({"argv": ["/usr/local/bin/uvx", "mlx_lm.server", "--port", "8081"]})", R"(, "ab": "interleaved")"),
        {"runs uvx, an interpreter"});
  }
}

TEST_CASE("the previous build's runtime: the same argv and environment with its own port and program") {
  auto r = parse(managed("llama.cpp", "http://127.0.0.1:8081/llama",
                         R"({"argv": ["llama-server", "-m", "/m.gguf", "--port=8081", "--host", "127.0.0.1:8081"],
                             "env": {"LLAMA_ARG_PORT": "8081", "LLAMA_ARG_CTX_SIZE": "8081"}, "keep_running": true})",
                         R"(, "ab": "interleaved", "memory_budget": "48GB")"));
  INFO((r.ok() ? "" : r.message()));
  REQUIRE(r.ok());
  const CandidateConfig p =
      previous_build_candidate(r->candidates[0], "/opt/homebrew/Cellar/llama.cpp/9430/bin/llama-server", 40123);
  CHECK(p.name == "m@previous");
  CHECK(p.base_url == "http://127.0.0.1:40123/llama");
  REQUIRE(p.launch);
  CHECK(display_argv(*p.launch) == std::vector<std::string>{"/opt/homebrew/Cellar/llama.cpp/9430/bin/llama-server",
                                                            "-m", "/m.gguf", "--port=40123", "--host",
                                                            "127.0.0.1:40123"});
  CHECK(p.launch->env.at("LLAMA_ARG_PORT").text == "40123");
  CHECK(p.launch->env.at("LLAMA_ARG_CTX_SIZE").text == "8081");  // not a port
  CHECK(p.launch->keep_running == KeepRunning::No);
  CHECK_FALSE(p.memory_budget_bytes);
  CHECK(p.ab == AbMode::History);
  // The candidate's own config is untouched.
  CHECK(r->candidates[0].base_url == "http://127.0.0.1:8081/llama");
  CHECK(argv_ports(*r->candidates[0].launch, RuntimeKind::LlamaCpp).front().port == 8081);
  // Hosts of every shape keep their host.
  CHECK(url_with_port("http://[::1]:8081", 9) == "http://[::1]:9");
  CHECK(url_with_port("http://localhost", 9) == "http://localhost:9");
  LaunchSpec ollama;
  ollama.argv = {LaunchValue{"ollama", {}}, LaunchValue{"serve", {}}};
  ollama.env["OLLAMA_HOST"] = LaunchValue{"127.0.0.1:11434", {}};
  CHECK(with_port(ollama, RuntimeKind::Ollama, 40123).env.at("OLLAMA_HOST").text == "127.0.0.1:40123");
}
