// The fleet recipe (examples/fleet/) run for real: Debian's prometheus and two
// prometheus-node-exporter textfile collectors on loopback ports this test
// picked, each collector reading the textfile of a soakd store of its own (two
// "hosts": "mini", one promoted and one running candidate; "studio", the
// demo-like store, one promoted and three rejected). Prometheus runs the
// example's prometheus.yml with the two collectors as targets and 1 s scrape
// and evaluation intervals, and the example's soakd-alerts.yml unchanged: the
// rejection alert has no `for:`, so with a 1 s evaluation interval it fires at
// the first evaluation after a scrape (no test-only rules copy). The test
// polls Prometheus's HTTP API (bounded, paced by waiting on Prometheus's own
// output) until both hosts are scraped, then asks for every verdict series of
// each host (equal to its textfile), the alerts (SoakdCandidateRejected firing
// for the three rejected candidates of "studio", nothing else) and the rules.
// Prometheus's data directory is in a temp dir; every child is killed when the
// test ends, also on failure. Without prometheus or a node exporter
// (SOAKD_PROMETHEUS / SOAKD_NODE_EXPORTER, or on the PATH) it exits 77: skipped.
#include <arpa/inet.h>
#include <curl/curl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <regex>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "soakctl/soakctl.h"
#include "storage/sqlite_store.h"
#include "tests/catch.h"
#include "tests/support/child_process.h"
#include "tests/support/demo_store.h"
#include "tests/support/temp_dir.h"

using namespace soak;
using json = nlohmann::json;

namespace {

constexpr int kSkipExitCode = 77;
// A child that exits at once lost its port to another process: pick another.
constexpr int kStartAttempts = 3;
constexpr int kStartupMs = 30'000;     // a collector or Prometheus answering its HTTP port
constexpr int kScrapeWaitMs = 60'000;  // both hosts' series queryable
constexpr int kAlertWaitMs = 30'000;   // the alerts evaluated on them
constexpr int kPollMs = 100;           // between two polls of an HTTP API
constexpr long kRequestTimeoutMs = 5'000;
const std::string kFleet = std::string(SOAKD_SOURCE_DIR) + "/examples/fleet";
// What the test's copy of the example's prometheus.yml sets instead of 30 s.
const std::string kTestInterval = "1s";

[[noreturn]] void skip(const std::string& why) {
  std::printf("skipped: %s\n", why.c_str());
  std::fflush(stdout);
  std::_Exit(kSkipExitCode);
}

// The program named by `env`, else the first of `names` on the PATH, else a skip.
std::string program(const char* env, const std::vector<std::string>& names, const std::string& install) {
  if (const char* e = std::getenv(env); e && *e) return e;
  const char* path = std::getenv("PATH");
  for (const auto& name : names) {
    std::stringstream dirs(path ? path : "/usr/bin:/bin");
    for (std::string dir; std::getline(dirs, dir, ':');)
      if (::access((dir + "/" + name).c_str(), X_OK) == 0) return dir + "/" + name;
  }
  skip("no " + names.front() + " (set " + env + " or " + install + ")");
}

std::string read_file(const std::string& p) {
  std::ifstream f(p);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

// A loopback port free when asked (the kernel's pick for port 0).
int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  const bool ok = fd >= 0 && ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
                  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0;
  if (fd >= 0) ::close(fd);
  return ok ? ntohs(a.sin_port) : 0;
}

struct Http {
  long status = 0;  // 0: no answer
  std::string body;
};

// A blocking GET on loopback, never through a proxy.
Http get(const std::string& url) {
  Http r;
  std::unique_ptr<CURL, void (*)(CURL*)> c(curl_easy_init(), curl_easy_cleanup);
  if (!c) return r;
  curl_easy_setopt(c.get(), CURLOPT_URL, url.c_str());
  curl_easy_setopt(c.get(), CURLOPT_PROXY, "");
  curl_easy_setopt(c.get(), CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c.get(), CURLOPT_TIMEOUT_MS, kRequestTimeoutMs);
  curl_easy_setopt(c.get(), CURLOPT_WRITEDATA, &r.body);
  curl_easy_setopt(
      c.get(), CURLOPT_WRITEFUNCTION, +[](char* p, size_t size, size_t n, void* body) {
        static_cast<std::string*>(body)->append(p, size * n);
        return size * n;
      });
  if (curl_easy_perform(c.get()) == CURLE_OK) curl_easy_getinfo(c.get(), CURLINFO_RESPONSE_CODE, &r.status);
  return r;
}

std::string url_escape(const std::string& s) {
  std::unique_ptr<CURL, void (*)(CURL*)> c(curl_easy_init(), curl_easy_cleanup);
  char* e = curl_easy_escape(c.get(), s.c_str(), static_cast<int>(s.size()));
  std::string out = e ? e : "";
  curl_free(e);
  return out;
}

// Calls `done` until it holds or `timeout_ms` passes, waiting up to kPollMs
// on `pace`'s output between calls (its exit ends the wait: false).
bool poll_until(ChildProcess& pace, int timeout_ms, const std::function<bool()>& done) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (std::chrono::steady_clock::now() < until) {
    if (done()) return true;
    if (pace.wait_exit(kPollMs)) return false;
  }
  return done();
}

// A child serving HTTP on a loopback port it was given: `argv(port)` started
// on a free port until GET `ready_path` answers 200 (a new port when the child
// exits first: another process took it between the pick and the bind).
struct Served {
  std::unique_ptr<ChildProcess> child;
  std::string address;  // 127.0.0.1:PORT, Prometheus's instance label for a target
  std::string log;      // what the failed attempts printed
};
Served serve(const std::function<std::vector<std::string>(int)>& argv, const std::string& ready_path) {
  Served s;
  for (int attempt = 0; attempt < kStartAttempts; ++attempt) {
    const int port = free_port();
    if (port == 0) continue;
    s.address = "127.0.0.1:" + std::to_string(port);
    auto spawned = ChildProcess::spawn(argv(port));
    if (!spawned) continue;
    s.child = std::make_unique<ChildProcess>(std::move(*spawned));
    if (poll_until(*s.child, kStartupMs, [&] { return get("http://" + s.address + ready_path).status == 200; }))
      return s;
    s.log += s.child->out() + s.child->err();
    s.child.reset();  // killed, if it still runs
  }
  return s;
}

// soakd's textfile of `store` (what `soakctl metrics` prints, and soakd writes
// each sampler tick), stamped now, in `dir` (temp file + rename, as soakd does).
void write_textfile(const std::string& store, const std::string& dir) {
  SystemClock clock;
  std::ostringstream o, e;
  const int exit = soakctl_main({"--db", store, "metrics"}, o, e, clock);
  INFO(e.str());
  REQUIRE(exit == kCtlExitOk);
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/soakd.prom.tmp") << o.str();
  std::filesystem::rename(dir + "/soakd.prom.tmp", dir + "/soakd.prom");
}

// Host "mini": a promoted candidate and one in its canary, written as the campaigns would.
std::string mini_store(const std::string& dir) {
  const std::string path = dir + "/soakd.db";
  auto st = SqliteStore::open(path, OpenMode::ReadWrite, Durability::Fast);
  REQUIRE(st.ok());
  const int64_t now = SystemClock().wall_ms();
  auto host = (*st)->upsert_host(HostInfo{"mini", "Mac16,10", 64LL << 30, "macOS 15.5"}, now);
  REQUIRE(host.ok());
  auto add = [&](const std::string& name, RuntimeKind runtime, const std::string& build, VerdictState state,
                 const std::string& stage) {
    CandidateRow c;
    c.host_id = *host;
    c.name = name;
    c.model = "qwen3.6-35b-a3b";
    c.runtime = runtime;
    c.build = build;
    auto id = (*st)->upsert_candidate(c, now);
    REQUIRE(id.ok());
    VerdictRow v;
    v.candidate_id = *id;
    v.wall_ms = now;
    v.state = state;
    v.stage = stage;
    v.reason = state == VerdictState::Promoted ? "soak passed" : "canary running";
    v.judge_version = "judge-1";
    REQUIRE((*st)->insert_verdict(v).ok());
  };
  add("ollama-qwen3", RuntimeKind::Ollama, "0.12.3", VerdictState::Promoted, "soak");
  add("llama-b9600", RuntimeKind::LlamaCpp, "b9600-1f2e3d4", VerdictState::Running, "canary");
  return path;
}

// soakd_candidate_verdict samples of a textfile: "candidate/verdict" -> value.
std::map<std::string, double> textfile_verdicts(const std::string& text) {
  static const std::regex line(R"re(^soakd_candidate_verdict\{(.*)\} (\S+)$)re");
  static const std::regex label(R"re(([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)")re");
  std::map<std::string, double> out;
  std::istringstream lines(text);
  for (std::string l; std::getline(lines, l);) {
    std::smatch m;
    if (!std::regex_match(l, m, line)) continue;
    const std::string body = m[1];
    std::map<std::string, std::string> labels;
    for (std::sregex_iterator it(body.begin(), body.end(), label), end; it != end; ++it) labels[(*it)[1]] = (*it)[2];
    out[labels["candidate"] + "/" + labels["verdict"]] = std::stod(m[2]);
  }
  return out;
}

// The example's prometheus.yml, scraping `targets` at kTestInterval: its
// intervals and its targets replaced, everything else (job, rule_files) kept.
std::string test_config(const std::vector<std::string>& targets) {
  std::istringstream lines(read_file(kFleet + "/prometheus.yml"));
  static const std::regex interval(R"(^(\s+(scrape|evaluation)_interval: )\S+$)");
  static const std::regex target(R"(^(\s+)- \S+:9100$)");
  std::string out;
  int intervals = 0, replaced = 0;
  for (std::string l; std::getline(lines, l);) {
    std::smatch m;
    if (std::regex_match(l, m, interval)) {
      out += m[1].str() + kTestInterval + "\n";
      ++intervals;
    } else if (std::regex_match(l, m, target)) {
      if (replaced++ == 0)
        for (const auto& t : targets) out += m[1].str() + "- " + t + "\n";
    } else {
      out += l + "\n";
    }
  }
  INFO("examples/fleet/prometheus.yml: expected scrape_interval, evaluation_interval and `- HOST:9100` targets");
  REQUIRE(intervals == 2);
  REQUIRE(replaced >= 1);
  return out;
}

// A PromQL query's vector, or a null json when Prometheus did not answer it.
json query(const std::string& prom, const std::string& promql) {
  const Http r = get("http://" + prom + "/api/v1/query?query=" + url_escape(promql));
  if (r.status != 200) return nullptr;
  const json j = json::parse(r.body, nullptr, false);
  if (j.is_discarded() || j.value("status", "") != "success") return nullptr;
  return j.at("data").at("result");
}

json api(const std::string& prom, const std::string& path) {
  const Http r = get("http://" + prom + path);
  INFO(path << ": " << r.status << " " << r.body);
  REQUIRE(r.status == 200);
  const json j = json::parse(r.body, nullptr, false);
  REQUIRE(!j.is_discarded());
  REQUIRE(j.value("status", "") == "success");
  return j.at("data");
}

struct Host {
  std::string name, store, textfile_dir;
  Served exporter;
};

}  // namespace

TEST_CASE("a Prometheus scraping two soakd hosts through node exporters: verdict series and the rejection alert") {
  const std::string prometheus = program("SOAKD_PROMETHEUS", {"prometheus"}, "apt-get install prometheus");
  const std::string exporter = program("SOAKD_NODE_EXPORTER", {"prometheus-node-exporter", "node_exporter"},
                                       "apt-get install prometheus-node-exporter");
  TempDir tmp;  // declared first: removed after every child is killed
  REQUIRE(!tmp.path().empty());

  // Two hosts, each a store, its textfile and its own collector (only the textfile collector: nothing of this host).
  Host mini{"mini", "", tmp.path() + "/mini/textfile", {}};
  Host studio{"studio", "", tmp.path() + "/studio/textfile", {}};
  for (const Host* h : {&mini, &studio}) std::filesystem::create_directories(tmp.path() + "/" + h->name);
  mini.store = mini_store(tmp.path() + "/mini");
  auto demo = build_demo_store(tmp.path() + "/studio");
  REQUIRE(demo.ok());
  studio.store = demo->path;
  for (Host* h : {&mini, &studio}) {
    write_textfile(h->store, h->textfile_dir);
    h->exporter = serve(
        [&](int port) {
          return std::vector<std::string>{exporter, "--web.listen-address=127.0.0.1:" + std::to_string(port),
                                          "--collector.disable-defaults", "--collector.textfile",
                                          "--collector.textfile.directory=" + h->textfile_dir};
        },
        "/metrics");
    INFO(h->name << "'s node exporter: " << h->exporter.log);
    REQUIRE(h->exporter.child);
    // The collector serves this host's file (not some other exporter that took the port).
    const Http m = get("http://" + h->exporter.address + "/metrics");
    CHECK(m.body.find("soakd_candidate_verdict{") != std::string::npos);
    CHECK(m.body.find("node_textfile_scrape_error 0") != std::string::npos);
  }

  // Prometheus: the example's config and rules, its data in the temp dir.
  const std::string prom_dir = tmp.path() + "/prometheus";
  std::filesystem::create_directories(prom_dir + "/data");
  std::ofstream(prom_dir + "/prometheus.yml") << test_config({mini.exporter.address, studio.exporter.address});
  std::filesystem::copy_file(kFleet + "/soakd-alerts.yml", prom_dir + "/soakd-alerts.yml");
  Served prom = serve(
      [&](int port) {
        return std::vector<std::string>{prometheus, "--config.file=" + prom_dir + "/prometheus.yml",
                                        "--storage.tsdb.path=" + prom_dir + "/data",
                                        "--web.listen-address=127.0.0.1:" + std::to_string(port)};
      },
      "/-/ready");
  INFO("prometheus: " << prom.log);
  REQUIRE(prom.child);
  ChildProcess& p = *prom.child;
  CHECK(api(prom.address, "/api/v1/status/flags").value("storage.tsdb.path", "") == prom_dir + "/data");

  // Both hosts scraped: their verdict series queryable under their instance labels.
  std::map<std::string, json> verdicts;  // by instance
  const bool scraped = poll_until(p, kScrapeWaitMs, [&] {
    const json r = query(prom.address, "soakd_candidate_verdict");
    if (!r.is_array()) return false;
    verdicts.clear();
    for (const auto& s : r) verdicts[s.at("metric").value("instance", "")].push_back(s);
    return verdicts.count(mini.exporter.address) && verdicts.count(studio.exporter.address);
  });
  INFO("prometheus printed: " << p.out() << p.err());
  REQUIRE(scraped);

  // Every verdict series of each host as its textfile has it, scraped by the example's job.
  for (const Host* h : {&mini, &studio}) {
    std::map<std::string, double> got;
    for (const auto& s : verdicts.at(h->exporter.address)) {
      const json& m = s.at("metric");
      CHECK(m.value("job", "") == "node");
      got[m.value("candidate", "") + "/" + m.value("verdict", "")] = std::stod(s.at("value").at(1).get<std::string>());
    }
    INFO(h->name);
    CHECK(got == textfile_verdicts(read_file(h->textfile_dir + "/soakd.prom")));
  }
  auto current = [&](const Host& h) {
    std::map<std::string, std::string> out;
    for (const auto& s : query(prom.address, "soakd_candidate_verdict{instance=\"" + h.exporter.address + "\"} == 1"))
      out[s.at("metric").value("candidate", "")] = s.at("metric").value("verdict", "");
    return out;
  };
  CHECK(current(mini) == std::map<std::string, std::string>{{"ollama-qwen3", "promoted"}, {"llama-b9600", "running"}});
  CHECK(current(studio) == std::map<std::string, std::string>{{"llama-b9430", "promoted"},
                                                              {"llama-b9502", "rejected"},
                                                              {"omlx-35b", "rejected"},
                                                              {"mlx-leak", "rejected"}});

  // The rejection alert firing for studio's three rejected candidates; no other alert, none on mini.
  const std::set<std::string> rejected{"llama-b9502", "omlx-35b", "mlx-leak"};
  json alerts;
  const bool fired = poll_until(p, kAlertWaitMs, [&] {
    alerts = api(prom.address, "/api/v1/alerts").at("alerts");
    std::set<std::string> firing;
    for (const auto& a : alerts)
      if (a.value("state", "") == "firing") firing.insert(a.at("labels").value("candidate", ""));
    return firing == rejected;
  });
  INFO(alerts.dump(2));
  REQUIRE(fired);
  std::set<std::string> seen;
  for (const auto& a : alerts) {
    const json& l = a.at("labels");
    const std::string candidate = l.value("candidate", "");
    seen.insert(candidate);
    CHECK(l.value("alertname", "") == "SoakdCandidateRejected");
    CHECK(l.value("instance", "") == studio.exporter.address);
    CHECK(l.value("severity", "") == "warning");
    CHECK(l.value("verdict", "") == "rejected");
    CHECK(a.at("annotations").value("summary", "") == candidate + " rejected on " + studio.exporter.address);
  }
  CHECK(seen == rejected);
  CHECK(alerts.size() == rejected.size());

  // The rules Prometheus loaded: the example's group, every rule healthy, the rejection one firing.
  const json groups = api(prom.address, "/api/v1/rules").at("groups");
  REQUIRE(groups.size() == 1);
  CHECK(groups[0].value("name", "") == "soakd");
  const std::string rules_text = read_file(kFleet + "/soakd-alerts.yml");
  size_t in_file = 0;
  for (size_t at = rules_text.find("- alert: "); at != std::string::npos; at = rules_text.find("- alert: ", at + 1))
    ++in_file;
  CHECK(groups[0].at("rules").size() == in_file);
  for (const auto& r : groups[0].at("rules")) {
    INFO(r.value("name", "") << ": " << r.value("lastError", ""));
    CHECK(r.value("health", "") == "ok");
    CHECK(r.value("state", "") == (r.value("name", "") == "SoakdCandidateRejected" ? "firing" : "inactive"));
  }
}
