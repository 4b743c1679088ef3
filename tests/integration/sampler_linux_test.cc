// The real Linux sampler on this machine's /proc: host figures, this process,
// a loopback listener found by port, engine-like children found by argv, and
// a restart seen through pid and start time. Children are waited for through
// pipes (exec is confirmed by a close-on-exec pipe), never by sleeping.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <filesystem>

#include <algorithm>
#include <cerrno>
#include <string>
#include <vector>

#include "core/files.h"
#include "detectors/process_watch.h"
#include "platform/runtime_processes.h"
#include "platform/sampler.h"
#include "tests/catch.h"
#include "tests/support/runtime_signatures.h"

using namespace soak;

namespace {

// A child under a chosen argv[0] and arguments, blocked on its stdin pipe
// until this object closes it: bash reading commands from stdin (-s), with the
// arguments after "--" as positional parameters it never looks at.
class BlockedChild {
 public:
  BlockedChild(std::string argv0, std::vector<std::string> args) {
    std::vector<std::string> argv = {std::move(argv0), "-s", "--"};
    argv.insert(argv.end(), args.begin(), args.end());
    int in[2], exec_check[2];
    // Close-on-exec, so a later child does not keep this one's stdin open.
    REQUIRE(::pipe2(in, O_CLOEXEC) == 0);
    REQUIRE(::pipe2(exec_check, O_CLOEXEC) == 0);
    pid_ = ::fork();
    REQUIRE(pid_ >= 0);
    if (pid_ == 0) {
      ::dup2(in[0], 0);
      ::close(in[0]);
      ::close(in[1]);
      ::close(exec_check[0]);
      std::vector<char*> args;
      for (auto& a : argv) args.push_back(a.data());
      args.push_back(nullptr);
      ::execv("/bin/bash", args.data());
      char fail = 1;
      (void)!::write(exec_check[1], &fail, 1);
      ::_exit(127);
    }
    ::close(in[0]);
    ::close(exec_check[1]);
    stdin_ = in[1];
    // EOF without a byte: the exec happened and closed the pipe.
    char buf;
    ssize_t n;
    do n = ::read(exec_check[0], &buf, 1);
    while (n < 0 && errno == EINTR);
    ::close(exec_check[0]);
    REQUIRE(n == 0);
  }
  ~BlockedChild() { stop(); }
  BlockedChild(const BlockedChild&) = delete;
  BlockedChild& operator=(const BlockedChild&) = delete;

  int pid() const { return pid_; }
  // Ends the child and reaps it: afterwards its pid names no process.
  void stop() {
    if (stdin_ >= 0) ::close(stdin_);
    stdin_ = -1;
    if (pid_ > 0) {
      int status = 0;
      ::waitpid(pid_, &status, 0);
      pid_ = -1;
    }
  }

 private:
  pid_t pid_ = -1;
  int stdin_ = -1;
};

// Whether the kernel has ::1 on the loopback (/proc/net/if_inet6 lists it;
// the file is absent with IPv6 off): then binding ::1 must work.
bool ipv6_loopback() {
  const auto table = read_file_whole("/proc/net/if_inet6");
  return table && table->find("00000000000000000000000000000001") != std::string::npos;
}

std::optional<uint16_t> listen_loopback(int family, int& fd) {
  fd = ::socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return std::nullopt;
  sockaddr_storage ss{};
  socklen_t len = 0;
  if (family == AF_INET) {
    auto* a = reinterpret_cast<sockaddr_in*>(&ss);
    a->sin_family = AF_INET;
    a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    len = sizeof *a;
  } else {
    auto* a = reinterpret_cast<sockaddr_in6*>(&ss);
    a->sin6_family = AF_INET6;
    a->sin6_addr = in6addr_loopback;
    len = sizeof *a;
  }
  if (::bind(fd, reinterpret_cast<sockaddr*>(&ss), len) != 0 || ::listen(fd, 4) != 0) return std::nullopt;
  len = sizeof ss;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return std::nullopt;
  return ntohs(family == AF_INET ? reinterpret_cast<sockaddr_in*>(&ss)->sin_port
                                 : reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port);
}

const ProcessInfo* find_pid(const std::vector<ProcessInfo>& v, int pid) {
  auto it = std::find_if(v.begin(), v.end(), [&](const ProcessInfo& p) { return p.pid == pid; });
  return it == v.end() ? nullptr : &*it;
}

}  // namespace

TEST_CASE("real host sample: every Linux figure read, nothing invented") {
  auto sampler = make_system_sampler(test::builtin_signatures());
  HostSample s = sampler->sample_host(1);
  INFO(s.error);
  CHECK(s.error.empty());
  REQUIRE(s.total_bytes.has_value());
  CHECK(*s.total_bytes > 0);
  REQUIRE(s.available_bytes.has_value());
  CHECK(*s.available_bytes <= *s.total_bytes);
  CHECK(s.swap_used_bytes.has_value());
  CHECK(s.swapouts.has_value());
  CHECK(s.pageins.has_value());
  auto info = sampler->host_info();
  REQUIRE(info);
  CHECK_FALSE(info->hostname.empty());
  CHECK(info->mem_bytes == *s.total_bytes);
  CHECK(info->os_version.find("Linux ") != std::string::npos);
}

TEST_CASE("real process sample: this test process, stable identity") {
  auto sampler = make_system_sampler(test::builtin_signatures());
  ProcessSample a = sampler->sample_process(::getpid(), 1);
  ProcessSample b = sampler->sample_process(::getpid(), 2);
  INFO(a.error);
  CHECK(a.error.empty());
  REQUIRE(a.footprint_bytes.has_value());
  CHECK(*a.footprint_bytes > 0);
  CHECK(a.resident_bytes.has_value());
  CHECK(a.pss_bytes.has_value());
  REQUIRE(identity_of(a).has_value());
  CHECK(identity_of(a) == identity_of(b));
  CHECK(a.name == "integration_sam");  // comm: the executable name cut to 15 characters
}

TEST_CASE("real listener lookup: a loopback socket of this process, IPv4 and IPv6") {
  auto sampler = make_system_sampler(test::builtin_signatures());
  int fd4 = -1;
  auto port4 = listen_loopback(AF_INET, fd4);
  REQUIRE(port4.has_value());
  auto r4 = sampler->find_listening_pid(*port4);
  REQUIRE(r4);
  CHECK(*r4 == ::getpid());
  ::close(fd4);
  auto closed = sampler->find_listening_pid(*port4);
  REQUIRE(closed);
  CHECK_FALSE(closed->has_value());

  int fd6 = -1;
  auto port6 = listen_loopback(AF_INET6, fd6);
  // Without IPv6 on the loopback the kernel says so; with it, ::1 must bind.
  REQUIRE(port6.has_value() == ipv6_loopback());
  if (port6) {
    auto r6 = sampler->find_listening_pid(*port6);
    REQUIRE(r6);
    CHECK(*r6 == ::getpid());
  }
  if (fd6 >= 0) ::close(fd6);
}

TEST_CASE("real loopback ports of this process for soakd init: 127.0.0.1 and ::1, not 127.0.0.2") {
  auto sampler = make_system_sampler(test::builtin_signatures());
  int fd4 = -1, fd6 = -1;
  auto port4 = listen_loopback(AF_INET, fd4);
  REQUIRE(port4.has_value());
  // Bound to another loopback address: 127.0.0.1 does not reach it.
  int other = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  REQUIRE(other >= 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(0x7F000002);
  REQUIRE(::bind(other, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  REQUIRE(::listen(other, 4) == 0);
  socklen_t len = sizeof a;
  REQUIRE(::getsockname(other, reinterpret_cast<sockaddr*>(&a), &len) == 0);
  const uint16_t other_port = ntohs(a.sin_port);
  auto port6 = listen_loopback(AF_INET6, fd6);

  auto ports = sampler->local_listening_ports(::getpid());
  REQUIRE(ports);
  auto has = [&](uint16_t p) {
    return std::find_if(ports->begin(), ports->end(), [&](const LocalPort& l) { return l.port == p; }) != ports->end();
  };
  CHECK(std::find(ports->begin(), ports->end(), LocalPort{*port4, true}) != ports->end());
  CHECK_FALSE(has(other_port));
  REQUIRE(port6.has_value() == ipv6_loopback());
  if (port6) CHECK(std::find(ports->begin(), ports->end(), LocalPort{*port6, false}) != ports->end());
  CHECK(std::is_sorted(ports->begin(), ports->end(),
                       [](const LocalPort& x, const LocalPort& y) { return x.port < y.port; }));
  // Another user's process (pid 1, unless this runs as root): its sockets cannot be read, and it says so.
  if (::geteuid() != 0) CHECK_FALSE(sampler->local_listening_ports(1));
  ::close(fd4);
  ::close(other);
  if (fd6 >= 0) ::close(fd6);
  auto after = sampler->local_listening_ports(::getpid());
  REQUIRE(after);
  CHECK(std::none_of(after->begin(), after->end(), [&](const LocalPort& l) { return l.port == *port4; }));
}

TEST_CASE("real discovery: engines found by argv, duplicates flagged, a restart seen") {
  auto sampler = make_system_sampler(test::builtin_signatures());
  BlockedChild llama("llama-server", {"-m", "tiny.gguf", "--api-key", "sk-test"});
  BlockedChild mlx("python3", {"-m", "mlx_lm.server", "--port", "18082"});

  auto procs = sampler->list_processes();
  REQUIRE(procs);
  const ProcessInfo* l = find_pid(*procs, llama.pid());
  const ProcessInfo* m = find_pid(*procs, mlx.pid());
  REQUIRE(l);
  REQUIRE(m);
  CHECK(l->ppid == ::getpid());
  CHECK(l->path == std::filesystem::canonical("/bin/bash").string());  // /proc/PID/exe is resolved
  CHECK(l->argv[0] == "llama-server");
  CHECK(identify_engine(*l, sampler->runtimes()) == RuntimeKind::LlamaCpp);
  CHECK(identify_engine(*m, sampler->runtimes()) == RuntimeKind::MlxLm);

  // Candidate: the mlx child. The llama child is a duplicate engine, and its
  // API key stays out of the event.
  DuplicateEngineDetector dup(1, 1, sampler->runtimes());
  auto ev = dup.observe(*procs, mlx.pid(), 100);
  auto mine = std::find_if(ev.begin(), ev.end(), [&](const Event& e) {
    return e.detail_json.find("\"pid\":" + std::to_string(llama.pid())) != std::string::npos;
  });
  REQUIRE(mine != ev.end());
  CHECK(mine->detail_json.find("llama-server") != std::string::npos);
  CHECK(mine->detail_json.find("--api-key ***") != std::string::npos);
  CHECK(mine->detail_json.find("sk-test") == std::string::npos);
  for (const auto& e : ev) CHECK(e.detail_json.find("\"pid\":" + std::to_string(mlx.pid())) == std::string::npos);

  // Restart: the llama child ends and another takes its place.
  RestartDetector restarts(1, 1);
  CHECK(restarts.observe(identity_of(sampler->sample_process(llama.pid(), 1)), 1).empty());
  int old_pid = llama.pid();
  llama.stop();
  ProcessSample gone = sampler->sample_process(old_pid, 2);
  CHECK(gone.error == "pid " + std::to_string(old_pid) + ": no such process");
  auto g = restarts.observe(identity_of(gone), 2);
  REQUIRE(g.size() == 1);
  CHECK(g[0].kind == EventKind::ProcessGone);
  BlockedChild again("llama-server", {"-m", "tiny.gguf"});
  auto r = restarts.observe(identity_of(sampler->sample_process(again.pid(), 3)), 3);
  REQUIRE(r.size() == 1);
  CHECK(r[0].kind == EventKind::ProcessRestart);
}
