// Engine recognition, duplicate engines, locating a candidate's process and
// the `sample --once` report, over literal process tables and a fake sampler.
#include <map>
#include <nlohmann/json.hpp>

#include "platform/runtime_processes.h"
#include "platform/sample_report.h"
#include "tests/catch.h"
#include "tests/support/runtime_signatures.h"

using namespace soak;

namespace {

ProcessInfo proc(int pid, int ppid, std::string name, std::vector<std::string> argv, std::string path = "") {
  ProcessInfo p;
  p.pid = pid;
  p.ppid = ppid;
  p.name = std::move(name);
  p.argv = std::move(argv);
  p.path = std::move(path);
  return p;
}

std::optional<RuntimeKind> kind_of(std::vector<std::string> argv, std::string name = "", std::string path = "") {
  if (name.empty() && !argv.empty()) name = argv[0].substr(argv[0].rfind('/') + 1);
  return identify_engine(proc(100, 1, name, std::move(argv), std::move(path)), test::builtin_signatures());
}

class FakeSampler final : public Sampler {
 public:
  FakeSampler() : Sampler(test::builtin_signatures()) {}
  std::vector<ProcessInfo> processes;
  std::map<uint16_t, Result<std::optional<int>>> listeners;
  std::map<int, ProcessSample> samples;
  int list_calls = 0;

  Result<HostInfo> host_info() override { return HostInfo{"studio", "Mac15,14", 512LL << 30, "macOS 15.3.1"}; }
  HostSample sample_host(int64_t wall_ms) override {
    HostSample s;
    s.wall_ms = wall_ms;
    s.total_bytes = 512LL << 30;
    s.swap_used_bytes = 0;
    s.swap_total_bytes = 0;
    s.pressure_level = 4;
    s.memorystatus_level = 7;
    return s;
  }
  ProcessSample sample_process(int pid, int64_t wall_ms) override {
    ProcessSample s = samples.count(pid) ? samples[pid] : ProcessSample{};
    s.pid = pid;
    s.wall_ms = wall_ms;
    return s;
  }
  Result<std::vector<ProcessInfo>> list_processes() override {
    ++list_calls;
    return processes;
  }
  Result<std::optional<int>> find_listening_pid(uint16_t port) override {
    auto it = listeners.find(port);
    return it == listeners.end() ? Result<std::optional<int>>(std::optional<int>{}) : it->second;
  }
};

CandidateConfig candidate(std::string name, RuntimeKind kind, std::string url) {
  CandidateConfig c;
  c.name = std::move(name);
  c.runtime = kind;
  c.base_url = std::move(url);
  c.model = "m";
  return c;
}

}  // namespace

TEST_CASE("engines are recognised by program, module and subcommand") {
  CHECK(kind_of({"/opt/homebrew/bin/llama-server", "-m", "x.gguf"}) == RuntimeKind::LlamaCpp);
  CHECK(kind_of({"python3", "-m", "mlx_lm.server", "--model", "q"}) == RuntimeKind::MlxLm);
  CHECK(kind_of({"python3.12", "-u", "-m", "mlx_lm", "server"}) == RuntimeKind::MlxLm);
  CHECK(kind_of({"/Users/me/venv/bin/python3.12", "/Users/me/venv/bin/mlx_lm.server", "--port", "8080"}) ==
        RuntimeKind::MlxLm);
  CHECK(kind_of({"mlx_lm", "server", "--model", "q"}) == RuntimeKind::MlxLm);
  CHECK(kind_of({"/Library/Frameworks/Python.framework/Versions/3.12/Resources/Python.app/Contents/MacOS/Python", "-X",
                 "utf8", "-m", "mlx_lm.server"}) == RuntimeKind::MlxLm);
  CHECK(kind_of({"omlx", "serve"}) == RuntimeKind::Omlx);
  CHECK(kind_of({"python3", "-m", "omlx.server"}) == RuntimeKind::Omlx);
  CHECK(kind_of({"vllm", "serve", "Qwen/Qwen3"}) == RuntimeKind::Vllm);
  CHECK(kind_of({"python", "-m", "vllm.entrypoints.openai.api_server"}) == RuntimeKind::Vllm);
  CHECK(kind_of({"rapid-mlx", "serve"}) == RuntimeKind::RapidMlx);
  CHECK(kind_of({"vllm-mlx", "serve", "m"}) == RuntimeKind::RapidMlx);
  CHECK(kind_of({"/usr/local/bin/ollama", "serve"}) == RuntimeKind::Ollama);
  CHECK(kind_of({"/usr/local/bin/ollama", "runner", "--model", "/x"}) == RuntimeKind::Ollama);
  CHECK(kind_of({"/tmp/ollama123/runners/metal/ollama_llama_server", "--model", "/x"}) == RuntimeKind::Ollama);
  CHECK(kind_of({}, "LM Studio") == RuntimeKind::LmStudio);
  CHECK(kind_of({"/Applications/LM Studio.app/Contents/MacOS/LM Studio Helper"}, "LM Studio Helper",
                "/Applications/LM Studio.app/Contents/MacOS/LM Studio Helper") == RuntimeKind::LmStudio);
  // argv hidden (another user's process): the executable still names llama-server.
  CHECK(kind_of({}, "llama-server", "/usr/bin/llama-server") == RuntimeKind::LlamaCpp);
}

TEST_CASE("clients and lookalikes are not engines") {
  CHECK_FALSE(kind_of({"ollama", "run", "qwen3"}).has_value());
  CHECK_FALSE(kind_of({"ollama", "ps"}).has_value());
  CHECK_FALSE(kind_of({"vllm", "bench", "serve"}).has_value());
  CHECK_FALSE(kind_of({"python3", "-c", "import mlx_lm.server"}).has_value());
  CHECK_FALSE(kind_of({"python3", "-m", "http.server"}).has_value());
  CHECK_FALSE(kind_of({"python3", "/home/me/llama-server-wrapper.py"}).has_value());
  CHECK_FALSE(kind_of({"grep", "llama-server"}).has_value());
  CHECK_FALSE(kind_of({"bash", "-c", "llama-server -m x"}).has_value());
  CHECK_FALSE(kind_of({"soakd", "run"}).has_value());
  CHECK_FALSE(kind_of({}, "kworker/0:1").has_value());
}

TEST_CASE("duplicates: engines outside the candidate's process tree") {
  std::vector<ProcessInfo> table = {
      proc(1, 0, "launchd", {"/sbin/launchd"}),
      proc(10, 1, "ollama", {"/usr/local/bin/ollama", "serve"}),
      proc(11, 10, "ollama", {"/usr/local/bin/ollama", "runner", "--model", "a"}),
      proc(20, 1, "llama-server", {"llama-server", "-m", "b.gguf"}),
      proc(30, 1, "zsh", {"-zsh"}),
      proc(31, 30, "python3", {"python3", "-m", "mlx_lm.server"}),
  };
  auto all = other_engines(table, std::nullopt, test::builtin_signatures());
  CHECK(all.size() == 4);

  // Candidate: the Ollama runner. Its parent `ollama serve` is its own tree.
  auto dup = other_engines(table, 11, test::builtin_signatures());
  REQUIRE(dup.size() == 2);
  CHECK(dup[0].process.pid == 20);
  CHECK(dup[1].process.pid == 31);
  CHECK(dup[1].kind == RuntimeKind::MlxLm);

  // Candidate: `ollama serve`; its runner child is not a duplicate.
  auto dup2 = other_engines(table, 10, test::builtin_signatures());
  REQUIRE(dup2.size() == 2);
  CHECK(dup2[0].process.pid == 20);

  // A ppid cycle (pid reuse mid-walk) terminates.
  std::vector<ProcessInfo> cyc = {proc(5, 6, "llama-server", {"llama-server"}), proc(6, 5, "x", {"x"})};
  CHECK(other_engines(cyc, 99, test::builtin_signatures()).size() == 1);
}

TEST_CASE("display command: bounded, secrets masked") {
  auto p = proc(1, 0, "llama-server",
                {"llama-server", "--api-key", "sk-123", "--hf-token=hf_abc", "-m", "model.gguf", "--port", "8080"});
  std::string c = display_command(p, 300);
  CHECK(c == "llama-server --api-key *** --hf-token=*** -m model.gguf --port 8080");
  CHECK(c.find("sk-123") == std::string::npos);
  CHECK(c.find("hf_abc") == std::string::npos);
  std::string cut = display_command(p, 10);
  CHECK(cut == "llama-serv...");
  CHECK(display_command(proc(2, 0, "kthreadd", {}), 10) == "kthreadd");
}

TEST_CASE("local port of a base URL") {
  CHECK(local_port_of("http://127.0.0.1:8080") == 8080);
  CHECK(local_port_of("http://localhost:11434/v1") == 11434);
  CHECK(local_port_of("http://[::1]:1234/api") == 1234);
  CHECK(local_port_of("http://localhost") == 80);
  CHECK(local_port_of("https://127.0.0.1") == 443);
  CHECK(local_port_of("http://user:pw@127.0.0.1:9000/x") == 9000);
  CHECK(local_port_of("http://0.0.0.0:8000") == 8000);
  CHECK_FALSE(local_port_of("http://10.0.0.5:8080").has_value());  // remote: not ours to look up
  CHECK_FALSE(local_port_of("http://studio.lan:8080").has_value());
  CHECK_FALSE(local_port_of("http://127.0.0.1:99999").has_value());
  CHECK_FALSE(local_port_of("ftp://127.0.0.1:21").has_value());
  CHECK_FALSE(local_port_of("http://[::1:80").has_value());
}

TEST_CASE("locating a candidate: config pid, then port, then name, then runtime") {
  FakeSampler fs;
  fs.processes = {proc(1, 0, "init", {"init"}),
                  proc(40, 1, "llama-server", {"/usr/bin/llama-server", "--port", "8080"}),
                  proc(41, 40, "llama-server", {"/usr/bin/llama-server", "--port", "8080"}),  // a worker
                  proc(50, 1, "python3", {"python3", "-m", "mlx_lm.server", "--port", "8081"}),
                  proc(60, 1, "mlx_lm.server", {"python3", "/venv/bin/mlx_lm.server"})};
  auto c = candidate("tiny", RuntimeKind::LlamaCpp, "http://127.0.0.1:8080");

  c.pid = 777;
  auto byconfig = locate_candidate_process(fs, c);
  CHECK(byconfig.pid == 777);
  CHECK(byconfig.source == PidSource::Config);
  CHECK(fs.list_calls == 0);

  c.pid.reset();
  fs.listeners.emplace(8080, std::optional<int>{40});
  auto byport = locate_candidate_process(fs, c);
  CHECK(byport.pid == 40);
  CHECK(byport.source == PidSource::Port);
  CHECK(byport.detail.find("port 8080") != std::string::npos);

  // Nothing on the port: the one llama-server tree (40 and its worker 41) is the answer.
  fs.listeners.clear();
  auto byruntime = locate_candidate_process(fs, c);
  CHECK(byruntime.pid == 40);
  CHECK(byruntime.source == PidSource::Runtime);

  // Two mlx-lm servers: ambiguous, so not found, and the pids are named.
  auto mlx = candidate("mlx", RuntimeKind::MlxLm, "http://127.0.0.1:9999");
  auto amb = locate_candidate_process(fs, mlx);
  CHECK_FALSE(amb.pid.has_value());
  CHECK(amb.detail.find("nothing listens on port 9999") != std::string::npos);
  CHECK(amb.detail.find("pids 50 60") != std::string::npos);

  mlx.process_name = "mlx_lm.server";
  auto byname = locate_candidate_process(fs, mlx);
  CHECK(byname.pid == 60);
  CHECK(byname.source == PidSource::Name);

  auto generic = candidate("gen", RuntimeKind::OpenAI, "http://10.1.1.1:8000");
  auto none = locate_candidate_process(fs, generic);
  CHECK_FALSE(none.pid.has_value());
  CHECK(none.detail.find("set pid or process_name") != std::string::npos);

  // A listener whose owner is hidden is reported, and the search goes on.
  fs.listeners.emplace(8080, make_error("port 8080: no visible process holds the listener"));
  auto hidden = locate_candidate_process(fs, c);
  CHECK(hidden.pid == 40);
}

TEST_CASE("listener search outcome") {
  CHECK(*listener_search_result(12, 3, ListenerInTable::Yes, 80) == 12);
  CHECK_FALSE(listener_search_result(std::nullopt, 0, ListenerInTable::Unknown, 80)->has_value());
  auto hidden = listener_search_result(std::nullopt, 2, ListenerInTable::Unknown, 80);
  REQUIRE_FALSE(hidden.ok());
  CHECK(hidden.message().find("2 processes could not be inspected") != std::string::npos);
  // The table shows a listener nobody visible holds: say so, not "nothing listens".
  auto orphan = listener_search_result(std::nullopt, 0, ListenerInTable::Yes, 80);
  REQUIRE_FALSE(orphan.ok());
  CHECK(orphan.message().find("no process visible here holds it") != std::string::npos);
}

TEST_CASE("sample --once report: text and JSON") {
  FakeSampler fs;
  fs.processes = {proc(40, 1, "llama-server", {"/usr/bin/llama-server", "--api-key", "sk-9", "-m", "t.gguf"}),
                  proc(50, 1, "ollama", {"ollama", "serve"})};
  fs.listeners.emplace(8080, std::optional<int>{40});
  ProcessSample ps;
  ps.name = "llama-server";
  ps.footprint_bytes = 3LL << 30;
  ps.resident_bytes = 2LL << 30;
  ps.start_time = 123;
  fs.samples[40] = ps;

  Config cfg;
  cfg.candidates.push_back(candidate("tiny-llama", RuntimeKind::LlamaCpp, "http://127.0.0.1:8080"));
  cfg.candidates.push_back(candidate("qwen-mlx", RuntimeKind::MlxLm, "http://127.0.0.1:8081"));
  auto off = candidate("disabled", RuntimeKind::Vllm, "http://127.0.0.1:8000");
  off.enabled = false;
  cfg.candidates.push_back(off);

  SampleReport r = collect_sample_report(fs, cfg, 1'767'225'600'000);
  REQUIRE(r.candidates.size() == 2);
  CHECK(r.candidates[0].located.pid == 40);
  REQUIRE(r.candidates[0].sample.has_value());
  CHECK(r.candidates[0].sample->footprint_bytes == (3LL << 30));
  CHECK_FALSE(r.candidates[1].located.pid.has_value());
  CHECK(r.engines.size() == 2);

  std::string text = render_sample_text(r);
  CHECK(text.find("studio — Mac15,14, 512.0 GiB memory, macOS 15.3.1") != std::string::npos);
  CHECK(text.find("2026-01-01T00:00:00Z") != std::string::npos);
  CHECK(text.find("level CRITICAL") != std::string::npos);
  CHECK(text.find("memorystatus 7% free") != std::string::npos);
  CHECK(text.find("tiny-llama") != std::string::npos);
  CHECK(text.find("3.0 GiB") != std::string::npos);
  CHECK(text.find("no process running mlx-lm") != std::string::npos);
  CHECK(text.find("disabled") == std::string::npos);
  CHECK(text.find("engines running: 2") != std::string::npos);
  CHECK(text.find("more than one engine is resident") != std::string::npos);
  CHECK(text.find("sk-9") == std::string::npos);

  auto j = nlohmann::json::parse(render_sample_json(r));
  CHECK(j["host"]["hw_model"] == "Mac15,14");
  CHECK(j["sample"]["pressure_level"] == 4);
  CHECK(j["sample"]["available_bytes"].is_null());  // unknown stays null, never 0
  CHECK(j["candidates"][0]["pid"] == 40);
  CHECK(j["candidates"][0]["found_by"] == "port");
  CHECK(j["candidates"][0]["process"]["footprint_bytes"] == (3LL << 30));
  CHECK(j["candidates"][1]["pid"].is_null());
  CHECK(j["engines"].size() == 2);
  CHECK(j.dump().find("sk-9") == std::string::npos);
}

TEST_CASE("byte formatting") {
  CHECK(format_bytes(std::nullopt) == "-");
  CHECK(format_bytes(0) == "0 B");
  CHECK(format_bytes(1023) == "1023 B");
  CHECK(format_bytes(1536) == "1.5 KiB");
  CHECK(format_bytes(24683620LL * 1024) == "23.5 GiB");
  CHECK(format_bytes(INT64_MAX) == "8.0 EiB");
}
