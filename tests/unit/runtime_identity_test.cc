// The pure and file-level parts of managed runtimes: finding and
// fingerprinting the executable (managed/runtime_identity.h), recognising a
// runtime launched before a crash (match_orphan), the size-bounded runtime
// log (managed/runtime_log.h) and what `soakd check-config` says about a
// launch block on this machine (managed/launch_check.h). No process is started.
#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "core/config.h"
#include "managed/launch_check.h"
#include "managed/runtime_identity.h"
#include "managed/runtime_log.h"
#include "tests/catch.h"
#include "tests/support/temp_dir.h"

using namespace soak;

namespace {

void write_file(const std::string& path, const std::string& text, bool executable) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
  ::chmod(path.c_str(), executable ? 0755 : 0644);
}

RuntimeLaunch recorded(int pid, int64_t start_time, const std::string& argv_json) {
  RuntimeLaunch r;
  r.pid = pid;
  r.start_time = start_time;
  r.argv_json = argv_json;
  return r;
}

}  // namespace

TEST_CASE("the executable is found as execvp finds it, and a path is taken as written") {
  TempDir tmp;
  const std::string a = tmp.path() + "/a", b = tmp.path() + "/b";
  std::filesystem::create_directories(a);
  std::filesystem::create_directories(b);
  write_file(a + "/runtime", "not executable", false);
  write_file(b + "/runtime", "#!/bin/sh\n", true);
  auto found = resolve_executable("runtime", a + ":" + b);
  REQUIRE(found.ok());
  CHECK(*found == b + "/runtime");  // a/runtime is not executable: skipped, as execvp does
  auto missing = resolve_executable("nothing-here", a + ":" + b);
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.message().find("not in PATH") != std::string::npos);
  CHECK(resolve_executable(b + "/runtime", "").ok());
  CHECK_FALSE(resolve_executable(a + "/runtime", "").ok());
}

TEST_CASE("a new build of the executable is told from a copy with a new mtime") {
  TempDir tmp;
  const std::string bin = tmp.path() + "/bin";
  std::filesystem::create_directories(bin);
  const std::string cellar1 = tmp.path() + "/cellar-1/llama-server", cellar2 = tmp.path() + "/cellar-2/llama-server";
  std::filesystem::create_directories(tmp.path() + "/cellar-1");
  std::filesystem::create_directories(tmp.path() + "/cellar-2");
  write_file(cellar1, "#!/bin/sh\necho b1\n", true);
  write_file(cellar2, "#!/bin/sh\necho b2 and more\n", true);
  std::filesystem::create_symlink(cellar1, bin + "/llama-server");

  auto before = fingerprint_executable("llama-server", bin);
  REQUIRE(before.ok());
  CHECK(before->path == std::filesystem::canonical(cellar1).string());  // the link followed
  CHECK(before->size == 18);
  CHECK_FALSE(before->hash.empty());

  // Same bytes, rewritten (new mtime): the same build.
  write_file(cellar1, "#!/bin/sh\necho b1\n", true);
  auto same = fingerprint_executable("llama-server", bin);
  REQUIRE(same.ok());
  CHECK(describe_change(*before, *same).empty());

  // `brew upgrade`: the link now points at a new Cellar directory.
  std::filesystem::remove(bin + "/llama-server");
  std::filesystem::create_symlink(cellar2, bin + "/llama-server");
  auto after = fingerprint_executable("llama-server", bin, &*before);
  REQUIRE(after.ok());
  const std::string change = describe_change(*before, *after);
  CHECK(change.find("path") != std::string::npos);
  CHECK(change.find("size 18 -> 27") != std::string::npos);
  CHECK(change.find("content") != std::string::npos);

  // Replaced in place with other bytes of the same size: the hash tells.
  // (Written later than the first: the stat is the same size, a later mtime.)
  const auto first_write = std::filesystem::last_write_time(cellar2);
  write_file(cellar2, "#!/bin/sh\necho b3 and more\n", true);
  std::filesystem::last_write_time(cellar2, first_write + std::chrono::seconds(5));
  auto in_place = fingerprint_executable("llama-server", bin, &*after);
  REQUIRE(in_place.ok());
  CHECK(in_place->size == after->size);
  const std::string c2 = describe_change(*after, *in_place);
  CHECK(c2.find("content") != std::string::npos);
  CHECK(c2.find("size") == std::string::npos);

  RuntimeLaunch rec;
  rec.executable = in_place->path;
  rec.exe_size = in_place->size;
  rec.exe_mtime_ms = in_place->mtime_ms;
  rec.exe_hash = in_place->hash;
  CHECK(fingerprint_of(rec) == *in_place);
}

TEST_CASE("the previous build's program: what its launch recorded, while that file is still what ran") {
  TempDir tmp;
  std::filesystem::create_directories(tmp.path() + "/9430");
  std::filesystem::create_directories(tmp.path() + "/9502");
  const std::string old_exe = tmp.path() + "/9430/llama-server", new_exe = tmp.path() + "/9502/llama-server";
  write_file(old_exe, "#!/bin/sh\necho b9430\n", true);
  write_file(new_exe, "#!/bin/sh\necho b9502\n", true);
  const auto old_fp = *fingerprint_executable(old_exe, "");
  const auto new_fp = *fingerprint_executable(new_exe, "");
  auto launch_of = [](const ExeFingerprint& fp) {
    RuntimeLaunch l;
    l.executable = fp.path;
    l.exe_size = fp.size;
    l.exe_mtime_ms = fp.mtime_ms;
    l.exe_hash = fp.hash;
    return l;
  };
  const OnDisk disk = [](const std::string& path) { return fingerprint_executable(path, ""); };
  RuntimeLaunch unread;  // a launch that failed before its executable was known
  const std::vector<RuntimeLaunch> launches{launch_of(old_fp), unread};

  SECTION("still on disk as it ran: that program") {
    auto p = previous_program(launches, new_fp, disk);
    REQUIRE(p.ok());
    CHECK(*p == old_fp.path);
  }
  SECTION("no launch recorded") {
    auto p = previous_program({unread}, new_fp, disk);
    REQUIRE_FALSE(p.ok());
    CHECK(p.message().find("no launch of it is recorded") != std::string::npos);
  }
  SECTION("removed (brew cleanup)") {
    std::filesystem::remove_all(tmp.path() + "/9430");
    auto p = previous_program(launches, new_fp, disk);
    REQUIRE_FALSE(p.ok());
    CHECK(p.message().find("its program " + old_fp.path + " is no longer on disk as it ran") != std::string::npos);
  }
  SECTION("replaced in place by another build") {
    write_file(old_exe, "#!/bin/sh\necho b9431\n", true);
    auto p = previous_program(launches, new_fp, disk);
    REQUIRE_FALSE(p.ok());
    CHECK(p.message().find("was replaced since it ran (content") != std::string::npos);
  }
  SECTION("the same program as the running build's: the build changed in what it loads") {
    auto p = previous_program(launches, old_fp, disk);
    REQUIRE_FALSE(p.ok());
    CHECK(p.message().find("the same program as this build") != std::string::npos);
  }
}

TEST_CASE("a process found at start is ours only with the recorded start time and arguments") {
  const std::string argv = R"(["/bin/fake","--listen","127.0.0.1:9000",{"from_env":"KEY"}])";
  const RuntimeLaunch rec = recorded(4242, 777, argv);

  CHECK(match_orphan(rec, std::nullopt).match == OrphanMatch::Gone);
  // The same pid, reused by another process later: never touched.
  auto reused = match_orphan(rec, LiveProcess{778, {"/bin/fake", "--listen", "127.0.0.1:9000", "s3cret"}});
  CHECK(reused.match == OrphanMatch::NotOurs);
  CHECK(reused.why.find("another process") != std::string::npos);
  // The start time matches but the arguments do not.
  CHECK(match_orphan(rec, LiveProcess{777, {"/usr/bin/vim", "notes.txt"}}).match == OrphanMatch::NotOurs);
  // Unknown start time or unreadable arguments: not confirmed, left alone.
  CHECK(match_orphan(rec, LiveProcess{std::nullopt, {"/bin/fake", "--listen", "127.0.0.1:9000"}}).match ==
        OrphanMatch::NotOurs);
  CHECK(match_orphan(rec, LiveProcess{777, {}}).match == OrphanMatch::NotOurs);
  // Ours; a wrapper that exec'd the program may add arguments of its own.
  CHECK(match_orphan(rec, LiveProcess{777, {"/bin/fake", "--listen", "127.0.0.1:9000", "s3cret"}}).match ==
        OrphanMatch::Ours);
  CHECK(match_orphan(rec, LiveProcess{777, {"/real/fake", "--build", "b2", "--listen", "127.0.0.1:9000"}}).match ==
        OrphanMatch::Ours);
}

TEST_CASE("the runtime log is capped, rotated once, and its tail is whole lines") {
  TempDir tmp;
  CHECK(RuntimeLog::path_for(tmp.path() + "/logs/soakd.log", "llama") == tmp.path() + "/logs/llama.runtime.log");
  RuntimeLog log(tmp.path() + "/logs/llama.runtime.log", 1000);
  log.mark("---- soakd: starting llama-server ----");
  auto fd = log.open_for_child();
  REQUIRE(fd.ok());
  std::string text;
  for (int i = 0; i < 100; ++i) text += "line " + std::to_string(i) + " of the runtime\n";
  REQUIRE(::write(*fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()));
  CHECK(log.tail(3) == "line 97 of the runtime\nline 98 of the runtime\nline 99 of the runtime");

  CHECK(log.enforce_cap());  // past 1000 bytes: copied to .1 and truncated
  CHECK(std::filesystem::file_size(log.path()) == 0);
  CHECK(std::filesystem::file_size(log.path() + ".1") > 1000);
  CHECK_FALSE(log.enforce_cap());
  // The runtime keeps appending on the same descriptor: it lands at the start.
  const std::string more = "after the rotation\n";
  REQUIRE(::write(*fd, more.data(), more.size()) == static_cast<ssize_t>(more.size()));
  ::close(*fd);
  CHECK(std::filesystem::file_size(log.path()) == more.size());
  // The tail reaches into the rotated copy when the file itself is short.
  CHECK(log.tail(2) == "line 99 of the runtime\nafter the rotation");
  CHECK(log.tail(5, 30).find("line 95") == std::string::npos);  // bounded in bytes too
}

TEST_CASE("check-config on this machine: the program must be found; flags and unset secrets only warn") {
  TempDir tmp;
  write_file(tmp.path() + "/mlx_lm.server", "#!/bin/sh\n", true);
  const std::string cfg_text = R"({"candidates": [
      {"name":"mlx","model":"q","runtime":"mlx-lm","base_url":"http://127.0.0.1:8080",
       "launch": {"argv": ["mlx_lm.server", "--port", "8080"], "env": {"HF_TOKEN": {"from_env": "SOAKD_TEST_HF"}}}},
      {"name":"gone","model":"q","runtime":"llama.cpp","base_url":"http://127.0.0.1:8081",
       "launch": {"argv": ["no-such-llama-server", "--port", "8081", "-n", "1", "-c", "1"]}}]})";
  auto cfg = parse_config(cfg_text, "cfg.json", tmp.path());
  REQUIRE(cfg.ok());
  std::map<std::string, std::string> env{{"PATH", tmp.path()}};
  const probes::EnvReader reader = [&env](const std::string& n) -> std::optional<std::string> {
    auto it = env.find(n);
    return it == env.end() ? std::nullopt : std::optional<std::string>(it->second);
  };
  LaunchFindings f = check_launches(*cfg, reader);
  REQUIRE(f.errors.size() == 1);
  CHECK(f.errors[0].find("candidates[1].launch.argv[0]") != std::string::npos);
  CHECK(f.errors[0].find("no-such-llama-server") != std::string::npos);
  std::string warnings;
  for (const auto& w : f.warnings) warnings += w + "\n";
  INFO(warnings);
  CHECK(warnings.find("--max-tokens") != std::string::npos);
  CHECK(warnings.find("SOAKD_TEST_HF is not set") != std::string::npos);
  // Both launches' default output caps (512, -n 1) are below limits.min_server_cap.
  CHECK(warnings.find("candidates[0].launch.argv: warning: it caps every answer at 512 tokens") != std::string::npos);
  CHECK(warnings.find("candidates[1].launch.argv: warning: it caps every answer at 1 tokens") != std::string::npos);
  CHECK(warnings.find("soakd will hold the candidate at smoke") != std::string::npos);
  env["SOAKD_TEST_HF"] = "x";
  f = check_launches(*cfg, reader);
  CHECK(f.warnings.size() == 3);  // only --max-tokens and the two caps now
}
