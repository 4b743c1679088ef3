// Shared by the verdict scenarios through soakd and the fake runtime
// (verdicts_compare_fake_test.cc, verdicts_soak_fake_test.cc, verdicts_queue_fake_test.cc,
// verdicts_hygiene_fake_test.cc,
// heavy_fair_fake_test.cc): fake runtime children on loopback, a soakd config
// with stages compressed to seconds, the store read back. The fake knows
// nothing of stages: where a story needs a runtime to change during a stage,
// a test waits for soakd's "NAME (BUILD): STAGE started" line and changes the
// fake by POST /fake/control (its drift knobs, tests/fake_runtime/drift.h).
#pragma once

#include <poll.h>

#include "tests/integration/managed_harness.h"

namespace soak::verdicts_test {

using namespace soak::managed_test;

inline constexpr int kStartMs = 20'000;

// Under AddressSanitizer soakd and the fake run several times slower: stages
// whose work must fit in them are this much longer. The test files are
// compiled without the instrumentation (tests/CMakeLists.txt), so the
// sanitizer is told by its runtime, linked into every program of such a
// build (as tests/unit/platform_allocator_test.cc tells it).
extern "C" void __asan_init(void) __attribute__((weak));
inline int slowdown() { return __asan_init != nullptr ? 2 : 1; }
// "24s" for 8 seconds unsanitized.
inline std::string seconds(int s) { return std::to_string(s * slowdown()) + "s"; }

// POST /fake/control to a fake runtime's listener; true on HTTP 200.
inline bool fake_control(int port, const std::string& body) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<uint16_t>(port));
  std::string req =
      "POST /fake/control HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
      "Connection: close\r\nContent-Length: " +
      std::to_string(body.size()) + "\r\n\r\n" + body;
  std::string got;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      ::send(fd, req.data(), req.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(req.size())) {
    pollfd p{fd, POLLIN, 0};
    char buf[1024];
    while (::poll(&p, 1, 5000) > 0) {
      const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n <= 0) break;
      got.append(buf, static_cast<size_t>(n));
    }
  }
  ::close(fd);
  return got.rfind("HTTP/1.1 200", 0) == 0;
}

// A fake runtime child on a port of its own; `args` after the listen spec.
struct Fake {
  std::optional<ChildProcess> child;
  int port = 0;
};
inline Fake start_fake(const std::string& scenario, const std::vector<std::string>& args) {
  std::vector<std::string> argv{kFake, "--listen", "127.0.0.1:0:" + scenario};
  argv.insert(argv.end(), args.begin(), args.end());
  Fake f{ChildProcess::spawn(argv)};
  REQUIRE(f.child);
  auto port = f.child->wait_for_port("listening on", kStartMs);
  REQUIRE(port);
  f.port = *port;
  return f;
}

// A candidate entry of the config: `more` is further members (", \"baseline\": ...").
inline std::string candidate(const std::string& name, int port, const std::string& more = "") {
  return R"({ "name": ")" + name + R"(", "model": "qwen3.6-35b-a3b", "runtime": "llama.cpp", "allow_coexisting": true,
              "base_url": "http://127.0.0.1:)" +
         std::to_string(port) + "\"" + more + " }";
}

// The `defaults` members most scenarios share: stages compressed to seconds,
// cadences to match, the soak's footprint rules and decode drift at their
// widest (see Run below), one long-context size and bursts of one. A scenario
// sets the lengths and cadences its story needs.
struct Compressed {
  std::string smoke = "20s", canary = seconds(8), gate = "5s", soak = seconds(8);
  std::string long_context = "3s", burst = "4s", soak_traffic = "100ms", soak_heavy = "3s";
  std::string gate_more;  // further members of "gate" (", \"max_failure_ratio\": 0.1")
  std::string long_context_sizes = "1024";
  std::string text() const {
    return R"(
        "stages": { "smoke": ")" +
           smoke + R"(", "canary": ")" + canary + R"(", "gate": ")" + gate + R"(", "soak": ")" + soak +
           R"(", "grace": 1 },
        "cadence": { "scrape": "1s", "functional": "1s", "long_context": ")" +
           long_context + R"(", "burst": ")" + burst + R"(", "cancel": ")" + burst +
           R"(", "gate_pause": "100ms", "gate_long_context": ")" + long_context + R"(", "soak_traffic": ")" +
           soak_traffic + R"(", "soak_heavy": ")" + soak_heavy + R"(", "build_poll": "2s" },
        "gate": { "min_completed": 5)" +
           gate_more + R"( },
        "soak": { "max_footprint_slope_mb_per_h": 1000000, "max_footprint_growth": 10, "max_decode_drift": 1 },
        "agent": { "context_ceiling": 8000, "band_tokens": 20000 },
        "long_context_sizes": [)" +
           long_context_sizes + R"(],
        "burst_sizes": [1],
        "capacity": [])";
  }
};

// A soakd config and store in a temporary directory. `defaults` are members of
// the defaults object besides the limits every test shares. The golden set
// (docs/DESIGN.md §3.13) is off: its opening run of 32 answers holds a
// canary's other heavy work and outlasts these seconds-long stages, and it is
// not what these scenarios judge.
//
// Scenarios that expect a soak to pass set soak.max_decode_drift to its widest
// (1, a doubling): a fake
// turn lasts tens of milliseconds, and a loaded host's scheduling noise moves
// that by 20 % between a soak's first and last quarter, a drift the runtime
// never made (the drift rule is judged in tests/unit/judge_soak_test.cc).
struct Run {
  TempDir tmp;
  std::string cfg = tmp.path() + "/soakd.json";
  std::string store = tmp.path() + "/store/soakd.db";

  void write(const std::string& defaults, const std::vector<std::string>& candidates, int max_canaries = 2) {
    std::string list;
    for (const auto& c : candidates) list += (list.empty() ? "" : ",\n") + c;
    std::ofstream(cfg) << R"({
      "store": "store/soakd.db",
      "log": "logs/soakd.log",
      "defaults": {
        "limits": { "wall_timeout": "20s", "stall_timeout": "5s", "connect_timeout": "1s",
                    "prefill_floor_tps": 20000 },
        "equivalence": { "enabled": false },
        )" << defaults << R"(
      },
      "sampler": { "interval": "250ms", "process_every": "250ms", "keep_awake": false },
      "schedule": { "nightly_window": "now", "max_concurrent_canaries": )"
                       << max_canaries << R"( },
      "candidates": [ )"
                       << list << R"( ]
    })";
  }
  std::optional<ChildProcess> start(bool exit_when_settled = true) const {
    std::vector<std::string> argv{kSoakd, "run", "--config", cfg, "--log-stderr"};
    if (exit_when_settled) argv.push_back("--exit-when-settled");
    auto d = ChildProcess::spawn(argv);
    REQUIRE(d);
    return d;
  }
  std::unique_ptr<SqliteStore> open_store() const {
    auto st = SqliteStore::open(store, OpenMode::ReadOnly);
    REQUIRE(st.ok());
    return std::move(*st);
  }
  // The newest row of candidate `name`.
  CandidateRow row(const std::string& name) const {
    std::optional<CandidateRow> out;
    for (const auto& c : *open_store()->candidates())
      if (c.name == name && (!out || c.id > out->id)) out = c;
    REQUIRE(out);
    return *out;
  }
  VerdictRow verdict(const std::string& name) const {
    auto v = *open_store()->latest_verdict(row(name).id);
    REQUIRE(v);
    return *v;
  }
  std::vector<VerdictRow> verdicts(const std::string& name) const { return *open_store()->verdicts(row(name).id); }
  std::vector<StageRow> stages(const std::string& name) const { return *open_store()->stages(row(name).id); }
};

inline void wait_settled(std::optional<ChildProcess>& d) {
  auto st = d->wait_exit(kRunMs);
  INFO(d->err());
  REQUIRE(st);
  REQUIRE(WIFEXITED(*st));
  CHECK(WEXITSTATUS(*st) == 0);
}

// Waits for soakd's "NAME (BUILD): STAGE started" and sends `control` to the fake on `port`.
inline void on_stage_start(std::optional<ChildProcess>& d, const std::string& name, const std::string& build,
                           const std::string& stage, int port, const std::string& control) {
  const std::string needle = name + " (" + build + "): " + stage + " started";
  auto line = d->wait_for_line(needle, kRunMs);
  INFO(needle << "\n" << d->err());
  REQUIRE(line);
  REQUIRE(fake_control(port, control));
}

inline const MetricEvidence* find_metric(const VerdictRow& v, const std::string& part) {
  for (const auto& m : v.metrics)
    if (m.metric.find(part) != std::string::npos) return &m;
  return nullptr;
}

inline bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

inline std::string metric_lines(const VerdictRow& v) {
  std::string out;
  for (const auto& m : v.metrics)
    out += m.metric + " " + std::string(to_string(m.result)) + ": " + m.reason.substr(0, 300) + "\n";
  return out;
}

}  // namespace soak::verdicts_test
