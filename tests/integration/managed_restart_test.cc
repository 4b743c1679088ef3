// Managed runtimes across soakd's own stops and the runtime's updates
// (docs/DESIGN.md §4.8), with the same signals launchd sends:
//   - SIGKILL to soakd leaves its runtime running (own session); the next
//     soakd finds it by pid + start time + argv, stops it, and launches one
//     new runtime: never two;
//   - SIGTERM to soakd stops its runtime within the graceful stop;
//   - the launched executable replaced (a wrapper script standing in for
//     `brew upgrade llama.cpp`) is a new build: soakd restarts the runtime at
//     the nightly window ("now" here), reads the new build and starts its
//     canary against the promoted one.
#include <dirent.h>
#include <sys/stat.h>

#include <cstdio>
#include <filesystem>

#include "tests/integration/managed_harness.h"

using namespace soak;
using namespace soak::managed_test;

namespace {

// Live (not zombie) processes whose argv has `arg`.
std::vector<int> pids_with_arg(const std::string& arg) {
  std::vector<int> out;
  DIR* dir = ::opendir("/proc");
  if (!dir) return out;
  while (dirent* e = ::readdir(dir)) {
    const int pid = std::atoi(e->d_name);
    if (pid <= 0) continue;
    const std::string cmd = test::process_cmdline(pid);  // empty once it has ended
    size_t start = 0;
    while (start < cmd.size()) {
      size_t end = cmd.find('\0', start);
      if (end == std::string::npos) end = cmd.size();
      if (cmd.compare(start, end - start, arg) == 0 && alive(pid)) {
        out.push_back(pid);
        break;
      }
      start = end + 1;
    }
  }
  ::closedir(dir);
  return out;
}

void write_wrapper(const std::string& path, const std::string& build) {
  // Written beside and renamed over, as a package manager replaces a file.
  const std::string tmp = path + ".new";
  std::ofstream(tmp) << "#!/bin/sh\n# the runtime, build " << build << "\nexec " << kFake << " --build " << build
                     << " \"$@\"\n";
  ::chmod(tmp.c_str(), 0755);
  REQUIRE(std::rename(tmp.c_str(), path.c_str()) == 0);
}

}  // namespace

TEST_CASE("after SIGKILL the next soakd stops the runtime it launched before and runs exactly one; SIGTERM stops it") {
  Setup s;
  s.write(fake_launch(kFake, s.port, "healthy", {"--build", "b500-orphan"}), "",
          R"({ "smoke": "4s", "canary": "4s", "gate": "120s", "soak": "4s" })");
  const std::string listen = "127.0.0.1:" + std::to_string(s.port) + ":healthy";

  auto first = start_soakd(s, false);
  REQUIRE(first);
  const int orphan = ready_pid(*first);
  REQUIRE(first->signal(SIGKILL));
  REQUIRE(first->wait_exit(kStepMs));
  // Its own session: soakd's death did not take the runtime with it.
  CHECK(alive(orphan));
  CHECK(pids_with_arg(listen) == std::vector<int>{orphan});

  auto second = start_soakd(s, false);
  REQUIRE(second);
  auto found = second->wait_for_line("stopping it before launching again", kStepMs);
  INFO(second->err());
  REQUIRE(found);
  CHECK(found->find("pid " + std::to_string(orphan)) != std::string::npos);
  const int fresh = ready_pid(*second);
  CHECK(fresh != orphan);
  CHECK_FALSE(alive(orphan));
  CHECK(pids_with_arg(listen) == std::vector<int>{fresh});

  auto ls = s.launches();
  REQUIRE(ls.size() == 2);
  CHECK(ls[0].pid == orphan);
  CHECK(ls[0].state == LaunchState::OrphanStopped);
  CHECK(ls[1].pid == fresh);
  CHECK(ls[1].state == LaunchState::Running);

  // launchd stopping the job: SIGTERM; soakd stops its runtime within its graceful stop.
  REQUIRE(second->signal(SIGTERM));
  auto st = second->wait_exit(kStepMs);
  REQUIRE(st);
  CHECK(WIFEXITED(*st));
  CHECK(WEXITSTATUS(*st) == 0);
  CHECK_FALSE(alive(fresh));
  CHECK(pids_with_arg(listen).empty());
  ls = s.launches();
  REQUIRE(ls.size() == 2);
  CHECK(ls[1].state == LaunchState::Stopped);
  CHECK(ls[1].detail.find("soakd stopping") != std::string::npos);

  // A third start finds nothing of its own running and touches nothing.
  auto third = start_soakd(s, false);
  REQUIRE(third);
  ready_pid(*third);
  CHECK(third->err().find("stopping it before launching again") == std::string::npos);
  REQUIRE(third->signal(SIGTERM));
  REQUIRE(third->wait_exit(kStepMs));
  CHECK(pids_with_arg(listen).empty());
}

TEST_CASE(
    "a replaced executable is a new build: restarted at the window, read, and canaried against the promoted one") {
  Setup s;
  const std::string bin = s.tmp.path() + "/bin";
  std::filesystem::create_directories(bin);
  const std::string runtime = bin + "/llama-server";
  write_wrapper(runtime, "b600-old");
  s.write(fake_launch(runtime, s.port, "healthy"));

  auto d = start_soakd(s, false);
  REQUIRE(d);
  const int old_pid = ready_pid(*d);
  auto promoted = d->wait_for_line("its campaign settled: promoted", kRunMs);
  INFO(d->err());
  REQUIRE(promoted);

  write_wrapper(runtime, "b601-new");  // the upgrade
  auto changed = d->wait_for_line("its executable changed", kStepMs);
  REQUIRE(changed);
  CHECK(changed->find("content") != std::string::npos);
  REQUIRE(d->wait_for_line("build changed b600-old -> b601-new", kStepMs));
  REQUIRE(d->wait_for_line("m (b601-new): canary started", kStepMs));

  auto cands = s.candidates();
  REQUIRE(cands.size() == 2);
  const CandidateRow& was = cands[0].build == "b600-old" ? cands[0] : cands[1];
  const CandidateRow& now = cands[0].build == "b601-new" ? cands[0] : cands[1];
  REQUIRE(now.build == "b601-new");
  CHECK(now.baseline_id == was.id);  // judged against the previous promoted build

  auto ls = s.launches();
  REQUIRE(ls.size() == 2);
  CHECK(ls[0].pid == old_pid);
  CHECK(ls[0].candidate_id == was.id);
  CHECK(ls[0].state == LaunchState::Stopped);
  CHECK(ls[1].candidate_id == now.id);
  CHECK(ls[1].exe_hash != ls[0].exe_hash);
  CHECK(ls[1].state == LaunchState::Running);

  REQUIRE(d->signal(SIGTERM));
  auto st = d->wait_exit(kStepMs);
  REQUIRE(st);
  CHECK(WIFEXITED(*st));
  CHECK_FALSE(alive(ls[1].pid));
  CHECK(pids_with_arg("127.0.0.1:" + std::to_string(s.port) + ":healthy").empty());
}

TEST_CASE("a managed candidate disabled by a reload has its runtime stopped at once") {
  Setup s;
  s.write(fake_launch(kFake, s.port, "healthy", {"--build", "b700-reload"}), "",
          R"({ "smoke": "4s", "canary": "4s", "gate": "120s", "soak": "4s" })");
  auto d = start_soakd(s, false);
  REQUIRE(d);
  const int pid = ready_pid(*d);
  REQUIRE(d->wait_for_line("gate started", kRunMs));

  s.write(fake_launch(kFake, s.port, "healthy", {"--build", "b700-reload"}), R"(, "enabled": false)",
          R"({ "smoke": "4s", "canary": "4s", "gate": "120s", "soak": "4s" })");
  REQUIRE(d->signal(SIGHUP));
  auto stopping = d->wait_for_line("m: stopping runtime pid", kStepMs);
  INFO(d->err());
  REQUIRE(stopping);
  CHECK(stopping->find("disabled in the config") != std::string::npos);
  CHECK(eventually([&] { return !alive(pid); }, kStepMs));
  auto ls = s.launches();
  REQUIRE(ls.size() == 1);
  CHECK(eventually([&] { return s.launches()[0].state == LaunchState::Stopped; }, kStepMs));
  auto v = s.verdict(s.candidates()[0].id);
  REQUIRE(v);
  CHECK(v->state == VerdictState::Inconclusive);
  CHECK(v->reason.find("disabled in the config") != std::string::npos);
  REQUIRE(d->signal(SIGTERM));
  REQUIRE(d->wait_exit(kStepMs));
}
