// `soakd init` end to end, as a new user runs it: the fake runtime as a child
// process with one listener per flavour, `soakd init --print --ports` on
// exactly those ports (never a default-port scan: what else runs on this
// host must not matter), the text it writes, `soakd check-config` on it and
// `soakd probe` on candidates from it. Then a host with nothing running.
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>
#include <iterator>
#include <map>

#include "tests/catch.h"
#include "tests/support/child_process.h"
#include "tests/support/temp_dir.h"

using namespace soak;

namespace {

const std::string kSoakd = std::string(SOAKD_BINARY_DIR) + "/daemon/soakd";
const std::string kFake = std::string(SOAKD_BINARY_DIR) + "/tests/fake_runtime/soak-fake-runtime";
constexpr int kWaitMs = 60'000;
const char* const kFlavours[] = {"llama.cpp", "ollama", "lm-studio", "vllm", "mlx-lm", "omlx", "rapid-mlx"};
// The config's runtime names of those flavours (core/types.cc).
const char* const kRuntimeNames[] = {"llama.cpp", "ollama", "lmstudio", "vllm", "mlx-lm", "omlx", "rapid-mlx"};

std::string read_all(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

// soakd with its state folder (the store and log defaults) inside `tmp`.
RunResult soakd(const TempDir& tmp, std::vector<std::string> args) {
  std::vector<std::string> argv{"/usr/bin/env", "HOME=" + tmp.path(), "XDG_STATE_HOME=" + tmp.path() + "/state",
                                "XDG_CONFIG_HOME=" + tmp.path() + "/config", kSoakd};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_program(argv, kWaitMs);
}

// A loopback port nothing listens on (bound, then closed).
int closed_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  socklen_t len = sizeof a;
  REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0);
  ::close(fd);
  return ntohs(a.sin_port);
}

}  // namespace

TEST_CASE("soakd init against every flavour of the fake: a config check-config accepts and probe reaches") {
  // One fake per flavour (each prints its one "listening on" line).
  std::vector<ChildProcess> fakes;
  fakes.reserve(std::size(kFlavours));
  std::map<std::string, int> port_of;  // runtime name -> port
  std::string ports;
  for (size_t i = 0; i < std::size(kFlavours); ++i) {
    auto child = ChildProcess::spawn({kFake, "--model", "qwen3.6-35b-a3b", "--token-interval-ms", "1", "--listen",
                                      std::string("127.0.0.1:0:healthy:") + kFlavours[i]});
    REQUIRE(child);
    auto port = child->wait_for_port("listening on 127.0.0.1:", kWaitMs);
    REQUIRE(port);
    fakes.push_back(std::move(*child));
    port_of[kRuntimeNames[i]] = *port;
    ports += (ports.empty() ? "" : ",") + std::to_string(*port);
  }
  TempDir tmp;

  RunResult printed = soakd(tmp, {"init", "--print", "--ports", ports});
  INFO(printed.out << printed.err);
  REQUIRE(printed.exit_code == 0);
  const std::string& text = printed.out;
  CHECK(text.find("// Looked at: ports " + ports.substr(0, ports.find(',')) + ", ") != std::string::npos);
  for (const auto& [runtime, port] : port_of) {
    INFO(runtime);
    const std::string name = runtime + "-" + std::to_string(port);
    CHECK(text.find("\"name\": \"" + name + "\"") != std::string::npos);
    CHECK(text.find("\"base_url\": \"http://127.0.0.1:" + std::to_string(port) + "\"") != std::string::npos);
    CHECK(text.find("// " + runtime + " at http://127.0.0.1:" + std::to_string(port) + ": ") != std::string::npos);
  }
  // Each recognised by its own routes, its model as it names it, its build read over HTTP.
  CHECK(text.find("GET /props names its build b9430") != std::string::npos);
  CHECK(text.find("GET /api/version names its build") != std::string::npos);
  CHECK(text.find("GET /version names its build") != std::string::npos);
  CHECK(text.find("GET /api/v0/models answers as its own") != std::string::npos);
  CHECK(text.find("only its health route GET /health answered") != std::string::npos);  // MLX-LM
  CHECK(text.find("\"model\": \"qwen3.6-35b-a3b\"") != std::string::npos);
  CHECK(text.find("\"model\": \"MODEL-ID\"") == std::string::npos);
  // What it could not learn: MLX-LM's 512-token cap, a slot count somewhere.
  CHECK(text.find("warning: server cap: MLX-LM caps answers at 512 tokens") != std::string::npos);
  CHECK(text.find("warning: slot count unknown") != std::string::npos);
  CHECK(text.find("No runtime answered") == std::string::npos);

  // Written to a file, which a second init leaves alone.
  const std::string file = tmp.path() + "/soakd.json";
  RunResult wrote = soakd(tmp, {"init", file, "--ports", ports});
  INFO(wrote.out << wrote.err);
  REQUIRE(wrote.exit_code == 0);
  CHECK(wrote.out.find("7 runtime(s) found") != std::string::npos);
  const std::string written = read_all(file);
  CHECK(written.find("\"name\": \"llama.cpp-" + std::to_string(port_of["llama.cpp"]) + "\"") != std::string::npos);
  RunResult again = soakd(tmp, {"init", file, "--ports", ports});
  CHECK(again.exit_code == 1);
  CHECK(again.err.find(file + " exists") != std::string::npos);
  CHECK(again.err.find("never overwrites") != std::string::npos);
  CHECK(read_all(file) == written);

  RunResult checked = soakd(tmp, {"check-config", file});
  INFO(checked.out << checked.err);
  CHECK(checked.exit_code == 0);
  CHECK(checked.out.find(": ok — 7 candidate(s)") != std::string::npos);

  // A candidate from it, probed as a user would next.
  const std::string llama = "llama.cpp-" + std::to_string(port_of["llama.cpp"]);
  RunResult probed = soakd(tmp, {"probe", "--config", file, "--candidate", llama});
  INFO(probed.out << probed.err);
  CHECK(probed.exit_code == 0);
  CHECK(probed.out.find("build b9430-") != std::string::npos);
  CHECK(probed.out.find("not clean") != std::string::npos);
  CHECK(probed.out.find(", 0 not clean") != std::string::npos);
  const std::string ollama = "ollama-" + std::to_string(port_of["ollama"]);
  RunResult identity = soakd(tmp, {"probe", "--config", file, "--candidate", ollama, "--kind", "identity"});
  INFO(identity.out << identity.err);
  CHECK(identity.exit_code == 0);
}

TEST_CASE("soakd init on a host with nothing running: a disabled example per runtime, and check-config passes") {
  TempDir tmp;
  const std::string port = std::to_string(closed_port());
  RunResult printed = soakd(tmp, {"init", "--print", "--ports", port});
  INFO(printed.out << printed.err);
  REQUIRE(printed.exit_code == 0);
  CHECK(printed.out.find("port " + port + ": nothing answered") != std::string::npos);
  CHECK(printed.out.find("No runtime answered on this host") != std::string::npos);
  CHECK(printed.out.find("\"name\": \"example-ollama-11434\"") != std::string::npos);
  CHECK(printed.out.find("\"store\": \"" + tmp.path() + "/state/soakd/soakd.db\"") != std::string::npos);

  const std::string file = tmp.path() + "/config/soakd/soakd.json";  // the default place
  RunResult wrote = soakd(tmp, {"init", "--ports", port});
  INFO(wrote.out << wrote.err);
  REQUIRE(wrote.exit_code == 0);
  CHECK(read_all(file) == printed.out);
  RunResult checked = soakd(tmp, {"check-config", file});
  INFO(checked.out << checked.err);
  CHECK(checked.exit_code == 0);
  CHECK(checked.out.find(": ok — 7 candidate(s)") != std::string::npos);
}

TEST_CASE("soakd init usage errors exit 2") {
  TempDir tmp;
  CHECK(soakd(tmp, {"init", "--print", "--ports", "80,x"}).exit_code == 2);
  CHECK(soakd(tmp, {"init", "--print", "--ports", "0"}).exit_code == 2);
  CHECK(soakd(tmp, {"init", "--print", "--ports", "1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17"}).exit_code == 2);
  CHECK(soakd(tmp, {"init", "--print", tmp.path() + "/x.json"}).exit_code == 2);
  CHECK(soakd(tmp, {"init", "a.json", "b.json"}).exit_code == 2);
}
