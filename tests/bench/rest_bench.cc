// At-rest benchmark: runs the real soakd against N fake runtimes with default
// cadences (only smoke shortened, so every candidate is in its canary within
// seconds) and prints what soakd costs between due work: resident memory
// before and after the canary's first heavy round (long context up to 131K
// tokens, bursts, capacity), wakeups per second and CPU over a quiet window,
// beside the due work the store shows for that window. Prints figures;
// asserts nothing. Linux only (it reads /proc).
//
//   rest_bench [--candidates 4,24] [--settle S] [--window S] [--soakd PATH] [--fake PATH] [--keep DIR]
//
// Wakeups are the voluntary context switches of every soakd thread: each is
// one sleep in epoll/poll/futex that something ended. Due work is the rows
// the window's own work wrote (probe rows, host and process samples).
#include <dirent.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

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

namespace fs = std::filesystem;

namespace {

std::string slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

long long field_kb(const std::string& status, const std::string& key) {
  auto at = status.find(key + ":");
  if (at == std::string::npos) return -1;
  return std::atoll(status.c_str() + at + key.size() + 1);
}

struct Snapshot {
  double t_s = 0;
  long long rss_kb = -1, hwm_kb = -1;
  long long switches = 0;  // voluntary, all threads
  long long involuntary = 0;
  double cpu_s = 0;  // utime + stime
};

Snapshot snapshot(pid_t pid, std::chrono::steady_clock::time_point t0) {
  Snapshot s;
  s.t_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const std::string base = "/proc/" + std::to_string(pid);
  const std::string status = slurp(base + "/status");
  s.rss_kb = field_kb(status, "VmRSS");
  s.hwm_kb = field_kb(status, "VmHWM");
  if (DIR* d = opendir((base + "/task").c_str())) {
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] == '.') continue;
      const std::string ts = slurp(base + "/task/" + e->d_name + "/status");
      s.switches += std::max(0LL, field_kb(ts, "voluntary_ctxt_switches"));
      s.involuntary += std::max(0LL, field_kb(ts, "nonvoluntary_ctxt_switches"));
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
    const std::string name = "c" + std::to_string(i);
    fakes.push_back(spawn({o.fake, "--listen", "127.0.0.1:" + std::to_string(port) + ":healthy", "--build",
                           "b" + std::to_string(1000 + i), "--token-interval-ms", "4"},
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
  Snapshot first;
  long long rss_at_8s = -1;
  while (true) {
    std::this_thread::sleep_for(std::chrono::seconds(1));
    Snapshot s = snapshot(d, t0);
    if (s.rss_kb < 0) {
      std::printf("soakd exited early; see %s\n", (dir / "soakd.out").c_str());
      break;
    }
    if (rss_at_8s < 0 && s.t_s >= 8) rss_at_8s = s.rss_kb;
    if (s.t_s >= o.settle_s) {
      first = s;
      break;
    }
  }
  const long long from_ms = wall_ms();
  std::this_thread::sleep_for(std::chrono::seconds(o.window_s));
  const Snapshot last = snapshot(d, t0);
  const long long to_ms = wall_ms();

  long long probes = -1, hosts = -1, procs = -1, total_probes = -1;
  sqlite3* db = nullptr;
  if (sqlite3_open_v2((dir / "soakd.db").c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
    sqlite3_busy_timeout(db, 5000);
    const std::string in = " BETWEEN " + std::to_string(from_ms) + " AND " + std::to_string(to_ms);
    probes = count(db, "SELECT count(*) FROM probe_results WHERE started_ms" + in);
    hosts = count(db, "SELECT count(*) FROM host_samples WHERE ts_ms" + in);
    procs = count(db, "SELECT count(*) FROM process_samples WHERE ts_ms" + in);
    total_probes = count(db, "SELECT count(*) FROM probe_results");
  }
  sqlite3_close(db);
  kill(d, SIGTERM);
  waitpid(d, nullptr, 0);
  for (pid_t f : fakes) kill(f, SIGTERM);
  for (pid_t f : fakes) waitpid(f, nullptr, 0);
  if (o.keep.empty()) fs::remove_all(dir);

  const double w = last.t_s - first.t_s;
  const double due = static_cast<double>(probes + hosts + procs);
  std::printf("%d candidate(s), default cadences, all in their canary (%lld probe rows by the window's end)\n", n,
              total_probes);
  std::printf("  resident at 8 s (smoke, before any long context): %.1f MB\n", static_cast<double>(rss_at_8s) / 1024);
  std::printf("  resident after the first heavy round (t=%.0f s):   %.1f MB   peak %.1f MB\n", first.t_s,
              static_cast<double>(first.rss_kb) / 1024, static_cast<double>(last.hwm_kb) / 1024);
  std::printf("  resident at the window's end (t=%.0f s):           %.1f MB\n", last.t_s,
              static_cast<double>(last.rss_kb) / 1024);
  std::printf("  window %.0f s: due work %lld probe rows + %lld host + %lld process samples = %.2f /s\n", w, probes,
              hosts, procs, due / w);
  std::printf("  wakeups (voluntary switches, all threads): %.2f /s   beyond one per due row: %.2f /s\n",
              static_cast<double>(last.switches - first.switches) / w,
              (static_cast<double>(last.switches - first.switches) - due) / w);
  std::printf("  CPU: %.3f %% of a core\n", 100.0 * (last.cpu_s - first.cpu_s) / w);
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
