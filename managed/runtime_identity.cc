#include "managed/runtime_identity.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <system_error>

#include <nlohmann/json.hpp>

#include "core/hash.h"

namespace soak {

namespace fs = std::filesystem;

namespace {

constexpr size_t kHashChunkBytes = 1 << 16;

bool is_executable_file(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(p.c_str(), X_OK) == 0;
}

Result<std::string> hash_file(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return make_error("cannot read " + path + ": " + std::strerror(errno));
  uint64_t h = fnv1a64("");
  std::string buf(kHashChunkBytes, '\0');
  size_t n = 0;
  while ((n = std::fread(buf.data(), 1, buf.size(), f)) > 0) h = fnv1a64(std::string_view(buf.data(), n), h);
  const bool failed = std::ferror(f) != 0;
  std::fclose(f);
  if (failed) return make_error("cannot read " + path);
  return hex64(h);
}

std::string basename_of(const std::string& p) {
  auto slash = p.rfind('/');
  return slash == std::string::npos ? p : p.substr(slash + 1);
}

}  // namespace

std::string launch_path(const LaunchSpec& s, const std::optional<std::string>& inherited) {
  if (auto it = s.env.find("PATH"); it != s.env.end() && it->second.from_env.empty()) return it->second.text;
  return inherited.value_or("/usr/bin:/bin");
}

Result<std::string> resolve_executable(const std::string& argv0, const std::string& path_env) {
  if (argv0.empty()) return make_error("no program given");
  if (argv0.find('/') != std::string::npos) {
    if (!fs::exists(argv0)) return make_error(argv0 + " does not exist");
    if (!is_executable_file(argv0)) return make_error(argv0 + " is not an executable file");
    return argv0;
  }
  size_t start = 0;
  while (start <= path_env.size()) {
    size_t end = path_env.find(':', start);
    if (end == std::string::npos) end = path_env.size();
    std::string dir = path_env.substr(start, end - start);
    if (dir.empty()) dir = ".";  // POSIX: an empty PATH entry is the working directory
    const std::string candidate = dir + "/" + argv0;
    if (is_executable_file(candidate)) return candidate;
    start = end + 1;
  }
  return make_error(argv0 + " is not in PATH (" + path_env + ")");
}

Result<ExeFingerprint> fingerprint_executable(const std::string& argv0, const std::string& path_env,
                                              const ExeFingerprint* known) {
  auto found = resolve_executable(argv0, path_env);
  if (!found) return found.error();
  std::error_code ec;
  fs::path real = fs::canonical(*found, ec);
  if (ec) return make_error("cannot resolve " + *found + ": " + ec.message());
  struct stat st {};
  if (::stat(real.c_str(), &st) != 0) return make_error("cannot stat " + real.string() + ": " + std::strerror(errno));
  ExeFingerprint f;
  f.path = real.string();
  f.size = static_cast<int64_t>(st.st_size);
#if defined(__APPLE__)
  f.mtime_ms = static_cast<int64_t>(st.st_mtimespec.tv_sec) * 1000 + st.st_mtimespec.tv_nsec / 1'000'000;
#else
  f.mtime_ms = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000 + st.st_mtim.tv_nsec / 1'000'000;
#endif
  if (known && known->path == f.path && known->size == f.size && known->mtime_ms == f.mtime_ms &&
      !known->hash.empty()) {
    f.hash = known->hash;
    return f;
  }
  auto h = hash_file(f.path);
  if (!h) return h.error();
  f.hash = *h;
  return f;
}

ExeFingerprint fingerprint_of(const RuntimeLaunch& l) {
  return ExeFingerprint{l.executable, l.exe_size, l.exe_mtime_ms, l.exe_hash};
}

std::string describe_change(const ExeFingerprint& a, const ExeFingerprint& b) {
  std::string out;
  auto add = [&](const std::string& s) { out += (out.empty() ? "" : ", ") + s; };
  if (a.path != b.path) add("path " + a.path + " -> " + b.path);
  if (a.size != b.size) add("size " + std::to_string(a.size) + " -> " + std::to_string(b.size) + " bytes");
  if (a.hash != b.hash) add("content " + a.hash + " -> " + b.hash);
  // A new mtime alone (a copy with the same bytes) is the same build.
  return out;
}

OrphanDecision match_orphan(const RuntimeLaunch& rec, const std::optional<LiveProcess>& live) {
  const std::string who = "pid " + std::to_string(rec.pid);
  if (!live) return {OrphanMatch::Gone, who + " is gone"};
  if (!rec.start_time || !live->start_time)
    return {OrphanMatch::NotOurs, who + ": its start time cannot be compared, so it is left alone"};
  if (*rec.start_time != *live->start_time)
    return {OrphanMatch::NotOurs, who + " started at " + std::to_string(*live->start_time) + ", not at the recorded " +
                                      std::to_string(*rec.start_time) + ": another process, left alone"};
  if (live->argv.empty()) return {OrphanMatch::NotOurs, who + ": its arguments cannot be read, so it is left alone"};
  // The recorded literal arguments, in order, among the live argv.
  const auto recorded = nlohmann::json::parse(rec.argv_json, nullptr, false);
  if (!recorded.is_array() || recorded.empty())
    return {OrphanMatch::NotOurs, who + ": no recorded arguments to compare"};
  std::vector<std::string> want;
  for (size_t i = 1; i < recorded.size(); ++i)
    if (recorded[i].is_string()) want.push_back(recorded[i].get<std::string>());
  if (want.empty() && recorded[0].is_string()) {
    const std::string prog = basename_of(recorded[0].get<std::string>());
    for (const auto& a : live->argv)
      if (basename_of(a) == prog) return {OrphanMatch::Ours, who + ": same start time and program"};
    return {OrphanMatch::NotOurs, who + " runs another program, left alone"};
  }
  size_t k = 0;
  for (const auto& a : live->argv)
    if (k < want.size() && a == want[k]) ++k;
  if (k < want.size())
    return {OrphanMatch::NotOurs, who + " was started with other arguments (no \"" + want[k] + "\"), left alone"};
  return {OrphanMatch::Ours, who + ": same start time and arguments"};
}

Result<std::string> previous_program(const std::vector<RuntimeLaunch>& launches,
                                     const std::optional<ExeFingerprint>& current, const OnDisk& on_disk) {
  const RuntimeLaunch* last = nullptr;
  for (const auto& l : launches)
    if (!l.executable.empty()) last = &l;
  if (!last) return make_error("no launch of it is recorded, so its program is not known");
  const ExeFingerprint was = fingerprint_of(*last);
  if (current && current->hash == was.hash)
    return make_error("it ran the same program as this build (" + was.path +
                      ", the same content): the build changed in what the program loads, so the previous build "
                      "cannot be started apart");
  auto now = on_disk(was.path);
  if (!now) return make_error("its program " + was.path + " is no longer on disk as it ran (" + now.message() + ")");
  if (now->hash != was.hash)
    return make_error("its program " + was.path + " was replaced since it ran (" + describe_change(was, *now) + ")");
  return was.path;
}

}  // namespace soak
