// At-rest benchmark: runs the real soakd against N fake runtimes with default
// cadences (only smoke shortened, so every candidate is in its canary within
// seconds) and prints what soakd costs between due work: resident memory
// (all of it, and its private part: the rest is mapped files, mostly the
// shared libraries libcurl brings) before and after the canary's first heavy round (long context up to 131K
// tokens, bursts, capacity), wakeups per second and CPU over a quiet window,
// beside the due work the store shows for that window. Prints figures;
// asserts nothing. Linux only (it reads /proc).
//
//   rest_bench [--candidates 4,24] [--settle S] [--window S] [--soakd PATH] [--fake PATH] [--keep DIR]
//
// Wakeups are the voluntary context switches of every soakd thread: each is
// one sleep in epoll/poll/futex (or a wait on the disk) that something ended.
// Due work is the rows the window's own work wrote (probe rows, host and
// process samples). "Between due work" counts only the 100 ms slices that
// overlap none of it: what soakd costs while it waits.
#include <dirent.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <sqlite3.h>

#include "proc_memory.h"

namespace fs = std::filesystem;

namespace {

using soak::bench::field_kb;
using soak::bench::slurp;

struct Snapshot {
  double t_s = 0;
  long long wall_ms = 0;
  long long cpu_ns = 0;  // time on a CPU, every thread (/proc/<pid>/task/*/schedstat: exact, not tick-sampled)
  long long rss_kb = -1, hwm_kb = -1;
  long long anon_kb = -1;  // RssAnon: soakd's own (private) memory; the rest is mapped files, mostly shared libraries
  long long switches = 0;  // voluntary, all threads
  long long involuntary = 0;
  double cpu_s = 0;  // utime + stime
};

long long wall_ms();

Snapshot snapshot(pid_t pid, std::chrono::steady_clock::time_point t0) {
  Snapshot s;
  s.wall_ms = wall_ms();
  s.t_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const std::string base = "/proc/" + std::to_string(pid);
  const std::string status = slurp(base + "/status");
  s.rss_kb = field_kb(status, "VmRSS");
  s.hwm_kb = field_kb(status, "VmHWM");
  s.anon_kb = field_kb(status, "RssAnon");
  if (DIR* d = opendir((base + "/task").c_str())) {
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] == '.') continue;
      const std::string ts = slurp(base + "/task/" + e->d_name + "/status");
      s.switches += std::max(0LL, field_kb(ts, "voluntary_ctxt_switches"));
      s.involuntary += std::max(0LL, field_kb(ts, "nonvoluntary_ctxt_switches"));
      s.cpu_ns += std::atoll(slurp(base + "/task/" + e->d_name + "/schedstat").c_str());
    }
    closedir(d);
  }
  // /proc/<pid>/stat: fields 14 and 15 (utime, stime) after the ")" of comm.
  const std::string stat = slurp(base + "/stat");
  if (auto rp = stat.rfind(')'); rp != std::string::npos) {
    std::istringstream in(stat.substr(rp + 2));
    std::string f;
    long long ut = 0, st = 0;
    for (int i = 3; i <= 15 && in >> f; ++i) {
      if (i == 14) ut = std::atoll(f.c_str());
      if (i == 15) st = std::atoll(f.c_str());
    }
    s.cpu_s = static_cast<double>(ut + st) / static_cast<double>(sysconf(_SC_CLK_TCK));
  }
  return s;
}

int free_port() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}

pid_t spawn(const std::vector<std::string>& argv, const std::string& out) {
  pid_t pid = fork();
  if (pid == 0) {
    FILE* f = std::fopen(out.c_str(), "w");
    if (f) {
      dup2(fileno(f), 1);
      dup2(fileno(f), 2);
    }
    std::vector<char*> a;
    for (const auto& s : argv) a.push_back(const_cast<char*>(s.c_str()));
    a.push_back(nullptr);
    execv(a[0], a.data());
    _exit(127);
  }
  return pid;
}

long long count(sqlite3* db, const std::string& sql) {
  sqlite3_stmt* st = nullptr;
  long long n = -1;
  if (sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
    n = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  return n;
}

std::vector<std::pair<long long, long long>> spans(sqlite3* db, const std::string& sql) {
  std::vector<std::pair<long long, long long>> out;
  sqlite3_stmt* st = nullptr;
  if (sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr) == SQLITE_OK)
    while (sqlite3_step(st) == SQLITE_ROW) out.emplace_back(sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1));
  sqlite3_finalize(st);
  return out;
}

constexpr int kSliceMs = 100;

long long wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

struct Options {
  std::vector<int> candidates{4, 24};
  int settle_s = 150, window_s = 60;
  std::string soakd, fake, keep;
};

void run(const Options& o, int n) {
  const fs::path dir = o.keep.empty() ? fs::temp_directory_path() / ("soakd-rest-" + std::to_string(getpid()))
                                      : fs::path(o.keep) / std::to_string(n);
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::vector<pid_t> fakes;
  std::ostringstream cands;
  for (int i = 0; i < n; ++i) {
    const int port = free_port();
    // std::string("c") + ..., not "c" + ...: GCC 12 at -O2 warns falsely (-Wrestrict) on a
    // one-character literal prepended to a temporary string.
    const std::string name = std::string("c") + std::to_string(i);
    fakes.push_back(spawn({o.fake, "--listen", "127.0.0.1:" + std::to_string(port) + ":healthy", "--build",
                           std::string("b") + std::to_string(1000 + i), "--token-interval-ms", "4"},
                          (dir / (name + ".fake.log")).string()));
    cands << (i ? ",\n" : "") << "    { \"name\": \"" << name
          << "\", \"model\": \"qwen3.6-35b-a3b\", \"runtime\": \"llama.cpp\", \"base_url\": \"http://127.0.0.1:" << port
          << "\", \"build\": { \"from\": \"http\" }, \"allow_coexisting\": true }";
  }
  const std::string cfg = (dir / "soakd.json").string();
  std::ofstream(cfg) << "{\n  \"store\": \"" << (dir / "soakd.db").string() << "\",\n  \"log\": \""
                     << (dir / "soakd.log").string()
                     << "\",\n  \"defaults\": { \"stages\": { \"smoke\": \"10s\" } },\n"
                        "  \"schedule\": { \"nightly_window\": \"now\", \"max_concurrent_canaries\": "
                     << n << " },\n  \"candidates\": [\n"
                     << cands.str() << "\n  ]\n}\n";
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // the fakes bind
  const auto t0 = std::chrono::steady_clock::now();
  pid_t d = spawn({o.soakd, "run", "--config", cfg}, (dir / "soakd.out").string());

  // RSS once a second: before the first heavy round, its peak, after it.
  Snapshot first, at_8s;
  long long peak_anon_kb = 0;
  while (true) {
    std::this_thread::sleep_for(std::chrono::seconds(1));
    Snapshot s = snapshot(d, t0);
    if (s.rss_kb < 0) {
      std::printf("soakd exited early; see %s\n", (dir / "soakd.out").c_str());
      break;
    }
    if (at_8s.rss_kb < 0 && s.t_s >= 8) at_8s = s;
    peak_anon_kb = std::max(peak_anon_kb, s.anon_kb);
    if (s.t_s >= o.settle_s) {
      first = s;
      break;
    }
  }
  const long long from_ms = wall_ms();
  // Every 100 ms through the window, so each slice can be told due or quiet.
  std::vector<Snapshot> slices{first};
  while (slices.back().t_s - first.t_s < o.window_s) {
    std::this_thread::sleep_for(std::chrono::milliseconds(kSliceMs));
    slices.push_back(snapshot(d, t0));
  }
  const Snapshot last = slices.back();
  peak_anon_kb = std::max(peak_anon_kb, last.anon_kb);
  const long long to_ms = wall_ms();

  long long probes = -1, hosts = -1, procs = -1, total_probes = -1;
  std::vector<std::pair<long long, long long>> due_spans;
  sqlite3* db = nullptr;
  if (sqlite3_open_v2((dir / "soakd.db").c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
    sqlite3_busy_timeout(db, 5000);
    const std::string in = " BETWEEN " + std::to_string(from_ms) + " AND " + std::to_string(to_ms);
    probes = count(db, "SELECT count(*) FROM probe_results WHERE started_ms" + in);
    hosts = count(db, "SELECT count(*) FROM host_samples WHERE ts_ms" + in);
    procs = count(db, "SELECT count(*) FROM process_samples WHERE ts_ms" + in);
    total_probes = count(db, "SELECT count(*) FROM probe_results");
    // Due work's spans: each probe row from its start to its end, then the
    // writes and the deferred trim a second later; each sample's tick (its
    // writes take ~15 ms; 100 ms after it is no longer the tick's work).
    due_spans =
        spans(db,
              "SELECT started_ms - 50, started_ms + coalesce(t_done_us, t_terminal_us, t_last_token_us, 0) / 1000 "
              "+ 1500 FROM probe_results WHERE started_ms + coalesce(t_done_us, 0) / 1000 + 1500 >= " +
                  std::to_string(from_ms) + " AND started_ms <= " + std::to_string(to_ms));
    for (const char* t : {"host_samples", "process_samples"}) {
      auto more = spans(db, std::string("SELECT ts_ms - 50, ts_ms + 100 FROM ") + t + " WHERE ts_ms" + in);
      due_spans.insert(due_spans.end(), more.begin(), more.end());
    }
  }
  sqlite3_close(db);
  const soak::bench::ResidentParts parts = soak::bench::resident_parts(d);
  kill(d, SIGTERM);
  waitpid(d, nullptr, 0);
  for (pid_t f : fakes) kill(f, SIGTERM);
  for (pid_t f : fakes) waitpid(f, nullptr, 0);
  if (o.keep.empty()) fs::remove_all(dir);

  const double w = last.t_s - first.t_s;
  const double due = static_cast<double>(probes + hosts + procs);
  std::printf("%d candidate(s), default cadences, all in their canary (%lld probe rows by the window's end)\n", n,
              total_probes);
  auto mb = [](long long kb) { return static_cast<double>(kb) / 1024; };
  std::printf("  resident (private) at 8 s, in smoke, before any long context: %.1f MB (%.1f MB)\n", mb(at_8s.rss_kb),
              mb(at_8s.anon_kb));
  std::printf("  resident (private) after the first heavy round (t=%.0f s):    %.1f MB (%.1f MB)\n", first.t_s,
              mb(first.rss_kb), mb(first.anon_kb));
  std::printf("  resident (private) at the window's end (t=%.0f s):            %.1f MB (%.1f MB)\n", last.t_s,
              mb(last.rss_kb), mb(last.anon_kb));
  std::printf(
      "    of it at the end: soakd's own file %.1f MB, %d shared libraries %.1f MB, anonymous %.1f MB, other %.1f MB\n",
      mb(parts.program_kb), parts.libraries, mb(parts.libraries_kb), mb(parts.anonymous_kb), mb(parts.other_kb));
  std::printf("  peak resident %.1f MB, peak private (1 s samples) %.1f MB\n", mb(last.hwm_kb), mb(peak_anon_kb));
  std::printf("  window %.0f s: due work %lld probe rows + %lld host + %lld process samples = %.2f /s\n", w, probes,
              hosts, procs, due / w);
  std::printf("  wakeups (voluntary switches, all threads): %.2f /s   beyond one per due row: %.2f /s\n",
              static_cast<double>(last.switches - first.switches) / w,
              (static_cast<double>(last.switches - first.switches) - due) / w);
  std::printf("  CPU: %.3f %% of a core\n", 100.0 * (last.cpu_s - first.cpu_s) / w);
  // Between due work: the slices that overlap no probe row (start to end,
  // plus 1.5 s for its writes and trim) and no sample tick.
  double quiet_s = 0;
  long long quiet_switches = 0, quiet_cpu_ns = 0;
  for (size_t i = 1; i < slices.size(); ++i) {
    const long long a = slices[i - 1].wall_ms, b = slices[i].wall_ms;
    bool due = false;
    for (const auto& [from, to] : due_spans) due = due || (from < b && to > a);
    if (due) continue;
    quiet_s += static_cast<double>(b - a) / 1000;
    quiet_switches += slices[i].switches - slices[i - 1].switches;
    quiet_cpu_ns += slices[i].cpu_ns - slices[i - 1].cpu_ns;
  }
  if (quiet_s > 0)
    std::printf("  between due work (%.0f s of the window's %.0f s): wakeups %.2f /s, CPU %.4f %% of a core\n", quiet_s,
                w, static_cast<double>(quiet_switches) / quiet_s,
                100.0 * static_cast<double>(quiet_cpu_ns) / 1e9 / quiet_s);
  else
    std::printf("  between due work: no quiet slice in the window\n");
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  const fs::path self = fs::canonical("/proc/self/exe").parent_path();  // <build>/tests
  o.soakd = (self.parent_path() / "daemon" / "soakd").string();
  o.fake = (self / "fake_runtime" / "soak-fake-runtime").string();
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "rest_bench: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--candidates") {
      o.candidates.clear();
      std::stringstream s(next());
      for (std::string x; std::getline(s, x, ',');) o.candidates.push_back(std::atoi(x.c_str()));
    } else if (a == "--settle") {
      o.settle_s = std::atoi(next().c_str());
    } else if (a == "--window") {
      o.window_s = std::atoi(next().c_str());
    } else if (a == "--soakd") {
      o.soakd = next();
    } else if (a == "--fake") {
      o.fake = next();
    } else if (a == "--keep") {
      o.keep = next();
    } else {
      std::fprintf(stderr,
                   "usage: rest_bench [--candidates 4,24] [--settle S] [--window S] [--soakd PATH] [--fake PATH] "
                   "[--keep DIR]\n");
      return 2;
    }
  }
  for (int n : o.candidates) run(o, n);
  return 0;
}
