// soak-fake-runtime as a child process, the way integration tests and the demo
// run it: the parent waits for "listening on 127.0.0.1:PORT" (never a sleep),
// the crash scenario really kills the process, SIGTERM exits cleanly and SIGHUP
// re-reads the config file.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <string>
#include <vector>

#include "tests/catch.h"
#include "tests/fake_runtime/scenario.h"
#include "tests/fake_runtime/test_support.h"
#include "tests/support/temp_dir.h"

using namespace soak::fake;
using namespace soak::fake::testing;
using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

constexpr auto kDeadline = std::chrono::seconds(10);

class Child {
 public:
  explicit Child(std::vector<std::string> args) {
    int fds[2];
    REQUIRE(::pipe(fds) == 0);
    pid_ = ::fork();
    REQUIRE(pid_ >= 0);
    if (pid_ == 0) {
      ::dup2(fds[1], STDOUT_FILENO);
      ::close(fds[0]);
      ::close(fds[1]);
      std::vector<char*> argv;
      std::string bin = SOAK_FAKE_RUNTIME_BIN;
      argv.push_back(bin.data());
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      ::execv(bin.c_str(), argv.data());
      ::_exit(127);
    }
    ::close(fds[1]);
    out_ = fds[0];
  }
  ~Child() {
    if (pid_ > 0 && !reaped_) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    if (out_ >= 0) ::close(out_);
  }

  // The next stdout line, or "" at EOF or after the deadline.
  std::string line() {
    auto until = Clock::now() + kDeadline;
    while (true) {
      size_t nl = buf_.find('\n');
      if (nl != std::string::npos) {
        std::string l = buf_.substr(0, nl);
        buf_.erase(0, nl + 1);
        return l;
      }
      if (!read_some(until)) return "";
    }
  }

  // Waits for the child to exit (its stdout closes), then reaps it.
  int wait_status() {
    auto until = Clock::now() + kDeadline;
    while (read_some(until)) {
    }
    int status = 0;
    REQUIRE(::waitpid(pid_, &status, 0) == pid_);
    reaped_ = true;
    return status;
  }

  void signal(int sig) { ::kill(pid_, sig); }
  const std::string& rest() const { return buf_; }

 private:
  bool read_some(Clock::time_point until) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now()).count();
    if (left <= 0) return false;
    pollfd p{out_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left)) <= 0) return false;
    char chunk[512];
    ssize_t n = ::read(out_, chunk, sizeof chunk);
    if (n <= 0) return false;
    buf_.append(chunk, static_cast<size_t>(n));
    return true;
  }

  pid_t pid_ = -1;
  int out_ = -1;
  bool reaped_ = false;
  std::string buf_;
};

int port_of(const std::string& line) {
  const std::string prefix = "listening on 127.0.0.1:";
  REQUIRE(line.rfind(prefix, 0) == 0);
  return std::stoi(line.substr(prefix.size()));
}

std::string base(int port) { return "http://127.0.0.1:" + std::to_string(port); }

}  // namespace

TEST_CASE("child: one 'listening on' line per listener, each with its own scenario; SIGTERM exits 0") {
  Child c({"--listen", "127.0.0.1:0", "--listen", "127.0.0.1:0:no-done:omlx", "--token-interval-ms", "0"});
  int first = port_of(c.line());
  int second = port_of(c.line());
  CHECK(first != second);
  CHECK(fetch(base(first) + "/health").body == R"({"status":"ok"})");
  CHECK(json::parse(fetch(base(second) + "/health").body)["status"] == "healthy");
  auto events = sse_data(fetch(base(second) + "/v1/chat/completions", chat_body("hi", true).dump()).body);
  REQUIRE(!events.empty());
  CHECK(events.back() != "[DONE]");
  c.signal(SIGTERM);
  int status = c.wait_status();
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK(c.rest().empty());  // nothing but the listening lines on stdout
}

TEST_CASE("child: the crash scenario kills the process abruptly after N requests") {
  Child c({"--listen", "127.0.0.1:0:crash", "--crash-after", "1", "--token-interval-ms", "0"});
  int port = port_of(c.line());
  CHECK(fetch(base(port) + "/v1/chat/completions", chat_body("hi", false).dump()).status == 200);
  CHECK(fetch(base(port) + "/v1/chat/completions", chat_body("hi", false).dump()).code != CURLE_OK);
  int status = c.wait_status();
  REQUIRE(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGKILL);
}

TEST_CASE("child: SIGHUP re-reads the config file and applies the new build") {
  soak::TempDir dir;
  std::string path = dir.path() + "/fake.json";
  auto write = [&](const std::string& build) {
    std::ofstream(path) << R"({"listeners": [{"port": 0, "build": ")" << build << R"("}]})";
  };
  write("b9430");
  Child c({"--config", path});
  int port = port_of(c.line());
  auto build_info = [&] { return json::parse(fetch(base(port) + "/props").body)["build_info"].get<std::string>(); };
  CHECK(build_info().rfind("b9430-", 0) == 0);
  write("b9502");
  c.signal(SIGHUP);
  // The change lands on the loop thread shortly after the signal: poll, bounded.
  auto until = Clock::now() + kDeadline;
  std::string seen = build_info();
  while (seen.rfind("b9502-", 0) != 0 && Clock::now() < until) seen = build_info();
  CHECK(seen.rfind("b9502-", 0) == 0);
}

TEST_CASE("child: --help names every scenario and flavour; a bad option exits 2") {
  Child help({"--help"});
  int help_status = help.wait_status();
  CHECK(WEXITSTATUS(help_status) == 0);
  std::string text = help.rest();  // all of stdout, read until it closed
  for (const auto& name :
       {"healthy",         "prefill-cost", "fifo",           "ok-no-body",      "no-done",      "stall",
        "keepalives-only", "burst-5xx",    "model-alias",    "empty-tool-args", "invalid-json", "repetition",
        "stuck-slot",      "crash",        "draft-slowdown", "memory-leak",     "loading",      "llama.cpp",
        "mlx-lm",          "omlx",         "ollama"})
    CHECK(text.find(name) != std::string::npos);
  Child bad({"--scenario", "bogus"});
  int status = bad.wait_status();
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 2);
}
