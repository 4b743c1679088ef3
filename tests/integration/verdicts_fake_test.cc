// Verdicts that hold over the whole run (docs/DESIGN.md §3.5, §3.6, §3.7,
// §3.9), through the soakd binary against fake runtime children on loopback,
// stages compressed to seconds. The fake knows nothing of stages: where a
// story needs a runtime to change during a stage, the test waits for soakd's
// "NAME (BUILD): STAGE started" line and changes the fake by POST
// /fake/control (its drift knobs, tests/fake_runtime/drift.h).
//   - a fresh prefill at >= 32K twice as slow as the baseline's: the canary's
//     few-sample rule (3x) lets it by, the gate's rounds reject it;
//   - 131K failing only in the soak: rejected by the soak's rounds though the
//     pooled ratio stays under its limit;
//   - a history baseline whose own stages differ by more than the candidate
//     does: promoted, the threshold named as the baseline's own spread;
//   - 20 candidates in canary at once: each gets its heavy rows;
//   - a footprint that fills the prompt cache (--cache-ram) and holds is
//     promoted; one that keeps growing is rejected.
#include <poll.h>

#include <map>

#include "tests/integration/managed_harness.h"

using namespace soak;
using namespace soak::managed_test;

namespace {

constexpr int kStartMs = 20'000;

// POST /fake/control to a fake runtime's listener; true on HTTP 200.
bool fake_control(int port, const std::string& body) {
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
Fake start_fake(const std::string& scenario, const std::vector<std::string>& args) {
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
std::string candidate(const std::string& name, int port, const std::string& more = "") {
  return R"({ "name": ")" + name + R"(", "model": "qwen3.6-35b-a3b", "runtime": "llama.cpp", "allow_coexisting": true,
              "base_url": "http://127.0.0.1:)" +
         std::to_string(port) + "\"" + more + " }";
}

// A soakd config and store in a temporary directory. `defaults` are members of
// the defaults object besides the limits every test shares.
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

void wait_settled(std::optional<ChildProcess>& d) {
  auto st = d->wait_exit(kRunMs);
  INFO(d->err());
  REQUIRE(st);
  REQUIRE(WIFEXITED(*st));
  CHECK(WEXITSTATUS(*st) == 0);
}

// Waits for soakd's "NAME (BUILD): STAGE started" and sends `control` to the fake on `port`.
void on_stage_start(std::optional<ChildProcess>& d, const std::string& name, const std::string& build,
                    const std::string& stage, int port, const std::string& control) {
  const std::string needle = name + " (" + build + "): " + stage + " started";
  auto line = d->wait_for_line(needle, kRunMs);
  INFO(needle << "\n" << d->err());
  REQUIRE(line);
  REQUIRE(fake_control(port, control));
}

const MetricEvidence* find_metric(const VerdictRow& v, const std::string& part) {
  for (const auto& m : v.metrics)
    if (m.metric.find(part) != std::string::npos) return &m;
  return nullptr;
}

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

std::string metric_lines(const VerdictRow& v) {
  std::string out;
  for (const auto& m : v.metrics)
    out += m.metric + " " + std::string(to_string(m.result)) + ": " + m.reason.substr(0, 300) + "\n";
  return out;
}

}  // namespace

TEST_CASE("a fresh prefill at 32K twice as slow as the baseline's passes the canary and is rejected by the gate") {
  // Both fakes prefill 10 ms per 1K tokens; the candidate twice as long from
  // 30,000 tokens on: its 32K fresh rows, not its 1K ones or its agent turns
  // (their context stays under 12,000).
  Fake base = start_fake("healthy", {"--build", "b9430-0a1b2c3", "--token-interval-ms", "2"});
  Fake cand = start_fake("healthy", {"--build", "b9431-0a1b2c3", "--token-interval-ms", "2", "--slow-pct", "200",
                                     "--slow-from-tokens", "30000"});
  Run run;
  run.write(R"(
        "stages": { "smoke": "20s", "canary": "8s", "gate": "14s", "soak": "4s" },
        "cadence": { "scrape": "1s", "functional": "1s", "long_context": "1500ms", "burst": "4s", "cancel": "4s",
                     "gate_pause": "100ms", "gate_long_context": "1s", "soak_traffic": "300ms", "soak_heavy": "2s",
                     "build_poll": "2s" },
        "gate": { "min_completed": 5 },
        "soak": { "max_footprint_slope_mb_per_h": 1000000, "max_footprint_growth": 10 },
        "agent": { "context_ceiling": 12000, "band_tokens": 20000 },
        "long_context_sizes": [1024, 32768],
        "burst_sizes": [1, 2],
        "capacity": [])",
            {candidate("base", base.port), candidate("cand", cand.port, R"(, "baseline": "base")")});
  auto d = run.start();
  wait_settled(d);

  const VerdictRow v = run.verdict("cand");
  INFO(v.reason << "\n" << metric_lines(v));
  CHECK(v.state == VerdictState::Rejected);
  CHECK(v.stage == "gate");
  CHECK(v.baseline_mode == "interleaved");
  CHECK(has(v.reason, "long_context/32768/fresh"));
  CHECK_FALSE(has(v.reason, "long_context/1024"));
  // The gate decided on the rank test's rounds, with the samples on each side.
  const MetricEvidence* m = find_metric(v, "ttft_ms/long_context/32768/fresh");
  REQUIRE(m);
  CHECK(m->result == MetricResult::Fail);
  CHECK(m->n >= 5);
  CHECK(m->n_baseline >= 5);
  CHECK(has(m->reason, "judge.effect_floor"));

  // The canary saw the same build on two samples a side: under the few-sample
  // rule's 3x, so it passed and left the decision to the gate.
  const auto st = run.stages("cand");
  REQUIRE(st.size() == 3);
  CHECK(st[1].kind == StageKind::Canary);
  CHECK(st[1].state == StageState::Passed);
  bool few_sample_seen = false;
  std::string canary_metrics;
  for (const auto& cv : run.verdicts("cand")) {
    if (cv.stage != "canary") continue;
    canary_metrics += metric_lines(cv);
    if (const MetricEvidence* f = find_metric(cv, "ttft_ms/long_context/32768/fresh")) {
      INFO(f->reason);
      CHECK(f->result == MetricResult::Insufficient);
      few_sample_seen = has(f->reason, "few-sample rule");
    }
  }
  INFO(canary_metrics);
  CHECK(few_sample_seen);
}

TEST_CASE("131K failing only in the soak is rejected by the soak's rounds, the pooled ratio under its limit") {
  // Healthy through smoke, canary and gate; from the soak's start every prompt
  // over 100,000 tokens gets HTTP 500 (large-prompt-5xx keeps --fail-above-tokens).
  Fake f = start_fake("healthy", {"--build", "b9432-0a1b2c3", "--token-interval-ms", "2", "--prefill-ms-per-1k", "1",
                                  "--fail-above-tokens", "100000"});
  Run run;
  // gate.max_failure_ratio 10 %: the compressed soak has ~100 completions
  // where a week has ~10,000, so its four 131K rounds weigh a hundred times
  // what they would; at 10 % the pooled ratio lets them by as 1 % lets the
  // week's 28 (S1:197), and only the rounds can reject.
  run.write(R"(
        "stages": { "smoke": "20s", "canary": "4s", "gate": "5s", "soak": "14s" },
        "cadence": { "scrape": "1s", "functional": "1s", "long_context": "2s", "burst": "4s", "cancel": "4s",
                     "gate_pause": "100ms", "gate_long_context": "2s", "soak_traffic": "100ms", "soak_heavy": "3s",
                     "build_poll": "2s" },
        "gate": { "min_completed": 5, "max_failure_ratio": 0.1 },
        "soak": { "max_footprint_slope_mb_per_h": 1000000, "max_footprint_growth": 10 },
        "agent": { "context_ceiling": 8000, "band_tokens": 20000 },
        "long_context_sizes": [1024, 131072],
        "burst_sizes": [1],
        "capacity": [])",
            {candidate("m", f.port)});
  auto d = run.start();
  on_stage_start(d, "m", "b9432-0a1b2c3", "soak", f.port, R"({"scenario": "large-prompt-5xx"})");
  wait_settled(d);

  const VerdictRow v = run.verdict("m");
  INFO(v.reason << "\n" << metric_lines(v));
  CHECK(v.state == VerdictState::Rejected);
  CHECK(v.stage == "soak");
  CHECK(has(v.reason, "long context 131K"));
  const MetricEvidence* rounds = find_metric(v, "long_context/131072");
  REQUIRE(rounds);
  CHECK(rounds->result == MetricResult::Fail);
  CHECK(has(rounds->reason, "S1:197"));
  const MetricEvidence* small = find_metric(v, "long_context/1024");
  REQUIRE(small);
  CHECK(small->result == MetricResult::Pass);
  // Neither the pooled ratio nor the sequential test decided it.
  const MetricEvidence* ratio = find_metric(v, "failure_ratio");
  REQUIRE(ratio);
  CHECK(ratio->result == MetricResult::Pass);
  CHECK_FALSE(has(v.reason, "sequential"));
  // The canary and the gate ran 131K clean.
  const auto st = run.stages("m");
  REQUIRE(st.size() == 4);
  for (size_t i = 0; i < 3; ++i) CHECK(st[i].state == StageState::Passed);
}

TEST_CASE("a history baseline whose own stages differ more than the candidate does lets it pass, naming the spread") {
  // The baseline's session: its gate at one pace, its soak with every delay
  // 1.7x as long (the host warmer, another load): its stored stages' agent
  // turns differ by ~60 %. The candidate, a later session, runs with every
  // delay 1.35x its baseline's gate: ~+20 % on its agent turns' wall time,
  // past judge.effect_floor + hold band (15 %), within the spread. The canary
  // is interleaved (the promoted baseline repeats its runs); the gate and the
  // soak compare with the baseline's stored gate and soak.
  Fake base =
      start_fake("healthy", {"--build", "b9440-0a1b2c3", "--token-interval-ms", "10", "--prefill-ms-per-1k", "20"});
  Fake cand = start_fake("healthy", {"--build", "b9441-0a1b2c3", "--token-interval-ms", "10", "--prefill-ms-per-1k",
                                     "20", "--slow-pct", "135"});
  Run run;
  const std::string defaults = R"(
        "stages": { "smoke": "20s", "canary": "7s", "gate": "12s", "soak": "8s" },
        "cadence": { "scrape": "1s", "functional": "1s", "long_context": "2s", "burst": "4s", "cancel": "4s",
                     "gate_pause": "100ms", "gate_long_context": "1s", "soak_traffic": "1s", "soak_heavy": "1s",
                     "build_poll": "2s" },
        "gate": { "min_completed": 5 },
        "soak": { "max_footprint_slope_mb_per_h": 1000000, "max_footprint_growth": 10 },
        "agent": { "context_ceiling": 8000, "band_tokens": 20000, "thinking_share": 0 },
        "long_context_sizes": [1024],
        "burst_sizes": [1],
        "capacity": [])";
  {  // The baseline alone, promoted; its soak 1.7x as slow as its gate.
    run.write(defaults, {candidate("base", base.port)});
    auto d = run.start();
    on_stage_start(d, "base", "b9440-0a1b2c3", "soak", base.port, R"({"slow_pct": 170})");
    wait_settled(d);
    const VerdictRow v = run.verdict("base");
    INFO(v.reason);
    REQUIRE(v.state == VerdictState::Promoted);
  }
  // The candidate later, against the baseline's stored rows.
  run.write(defaults, {candidate("base", base.port), candidate("cand", cand.port, R"(, "baseline": "base")")});
  auto d = run.start();
  wait_settled(d);

  bool spread_named = false;
  for (const auto& v : run.verdicts("cand")) {
    if ((v.stage != "gate" && v.stage != "soak") || v.metrics.empty()) continue;  // not a stage's start
    INFO(v.stage << ": " << v.reason << "\n" << metric_lines(v));
    CHECK(v.baseline_mode == "history");
    CHECK(v.state != VerdictState::Rejected);
    // An agent-turn comparison worse than judge.effect_floor + hold band
    // (15 %) at the interval's end nearest to no change, passed under the
    // baseline's own spread.
    for (const auto& m : v.metrics) {
      if (m.metric.rfind("wall_ms/", 0) != 0 || !has(m.metric, "kind=agent") || m.result != MetricResult::Pass)
        continue;
      if (!has(m.reason, "the baseline's own stage-to-stage spread")) continue;
      CHECK(m.threshold > 0.15);
      if (m.lo > 0.15) spread_named = true;
    }
  }
  CHECK(spread_named);
  const VerdictRow v = run.verdict("cand");
  INFO(v.reason);
  CHECK(v.state == VerdictState::Promoted);
}

TEST_CASE("20 candidates in canary at once each get their heavy rows") {
  // One fake process, a listener per candidate; heavy work (a 1K prefill at
  // 50 ms per 1K, a burst of 2, the prefix-reuse turns) due every second for
  // each: together far more than one host serves one at a time in the canary.
  constexpr int kCanaries = 20;
  std::vector<int> ports;
  std::vector<std::string> argv{kFake, "--token-interval-ms", "1", "--prefill-ms-per-1k", "50"};
  for (int i = 0; i < kCanaries; ++i) {
    ports.push_back(free_port());
    argv.insert(argv.end(), {"--listen", "127.0.0.1:" + std::to_string(ports.back()) + ":healthy"});
  }
  auto fake = ChildProcess::spawn(argv);
  REQUIRE(fake);
  for (int i = 0; i < kCanaries; ++i) REQUIRE(fake->wait_for_line(":" + std::to_string(ports[i]), kStartMs));

  auto name_of = [](int i) { return "c" + std::string(i < 10 ? "0" : "") + std::to_string(i); };
  std::vector<std::string> cands;
  for (int i = 0; i < kCanaries; ++i) cands.push_back(candidate(name_of(i), ports[i]));
  Run run;
  run.write(R"(
        "stages": { "smoke": "20s", "canary": "12s", "gate": "1h", "soak": "1h" },
        "cadence": { "scrape": "1s", "functional": "4s", "long_context": "1s", "burst": "1s", "cancel": "6s",
                     "gate_pause": "1s", "soak_traffic": "1s", "soak_heavy": "1h", "build_poll": "10s" },
        "long_context_sizes": [1024],
        "burst_sizes": [2],
        "capacity": [])",
            cands, kCanaries);
  auto d = run.start(false);
  // Every canary has ended (passed or not); the gates that follow are not this test's.
  auto all_ended = [&] {
    auto st = run.open_store();
    auto rows = st->candidates();
    if (!rows.ok() || rows->size() < static_cast<size_t>(kCanaries)) return false;
    for (const auto& c : *rows) {
      auto stages = st->stages(c.id);
      if (!stages.ok() || stages->size() < 2 || !(*stages)[1].ended_ms) return false;
    }
    return true;
  };
  const bool ended = eventually(all_ended, kRunMs);
  d->signal(SIGTERM);
  d->wait_exit(kStepMs);
  INFO(d->err());
  REQUIRE(ended);

  int64_t least = INT64_MAX, most = 0;
  for (int i = 0; i < kCanaries; ++i) {
    const std::string n = name_of(i);
    const auto st = run.stages(n);
    REQUIRE(st.size() >= 2);
    REQUIRE(st[1].kind == StageKind::Canary);
    ProbeQuery q;
    q.stage_id = st[1].id;
    int64_t lc = 0, burst = 0, prefix = 0;
    for (const auto& r : *run.open_store()->probe_results(q)) {
      lc += r.kind == ProbeKind::LongContext;
      burst += r.kind == ProbeKind::Burst;
      prefix += r.kind == ProbeKind::SharedPrefix;
    }
    INFO(n << ": " << lc << " long-context, " << burst << " burst, " << prefix << " prefix-reuse rows; canary "
           << to_string(st[1].state) << ": " << st[1].reason);
    CHECK(lc > 0);
    CHECK(burst > 0);
    CHECK(prefix > 0);
    least = std::min(least, lc);
    most = std::max(most, lc);
    for (const auto& v : run.verdicts(n)) CHECK_FALSE(has(v.reason, "0 of 0"));
  }
  INFO("long-context rows per canary: " << least << " to " << most);
  CHECK(least > 0);
}

TEST_CASE("a footprint that fills the prompt cache and holds is promoted; one that keeps growing is rejected") {
  // Two managed llama.cpp-like runtimes launched with --cache-ram 40 (the
  // launch fingerprint's cap). From the soak's start one keeps 2 MiB more of
  // its prompt cache per request until the cap, then holds; the other leaks
  // 3 MiB per request without end.
  const int fill_port = free_port(), leak_port = free_port();
  auto managed = [](const std::string& name, int port, const std::vector<std::string>& more) {
    return candidate(name, port,
                     R"(, "build": { "from": "http" }, "launch": )" + fake_launch(kFake, port, "healthy", more));
  };
  Run run;
  run.write(R"(
        "stages": { "smoke": "20s", "canary": "4s", "gate": "5s", "soak": "16s" },
        "cadence": { "scrape": "1s", "functional": "1s", "long_context": "3s", "burst": "3s", "cancel": "3s",
                     "gate_pause": "100ms", "gate_long_context": "3s", "soak_traffic": "300ms", "soak_heavy": "1h",
                     "build_poll": "2s" },
        "gate": { "min_completed": 5 },
        "agent": { "context_ceiling": 8000, "band_tokens": 20000 },
        "long_context_sizes": [1024],
        "burst_sizes": [1],
        "capacity": [])",
            {managed("fill", fill_port, {"--build", "b9450-0a1b2c3", "--cache-ram", "40"}),
             managed("leak", leak_port, {"--build", "b9451-0a1b2c3", "--cache-ram", "40", "--leak-mb", "3"})});
  auto d = run.start();
  on_stage_start(d, "fill", "b9450-0a1b2c3", "soak", fill_port, R"({"cache_fill_mib": 2})");
  on_stage_start(d, "leak", "b9451-0a1b2c3", "soak", leak_port, R"({"scenario": "memory-leak"})");
  wait_settled(d);

  CHECK(has(run.row("fill").fingerprint, "\"cache_ram_mib\":40"));
  {
    const VerdictRow v = run.verdict("fill");
    INFO(v.reason << "\n" << metric_lines(v));
    CHECK(v.state == VerdictState::Promoted);
    const MetricEvidence* g = find_metric(v, "footprint_growth");
    REQUIRE(g);
    CHECK(g->result == MetricResult::Pass);
    CHECK(has(g->reason, "plateau, not a leak"));
    CHECK(has(g->reason, "prompt-cache cap 40 MiB"));
    CHECK(g->estimate > g->threshold);  // it grew past the plain growth limit: the plateau decided
  }
  {
    const VerdictRow v = run.verdict("leak");
    INFO(v.reason << "\n" << metric_lines(v));
    CHECK(v.state == VerdictState::Rejected);
    CHECK(v.stage == "soak");
    const MetricEvidence* g = find_metric(v, "footprint_growth");
    REQUIRE(g);
    CHECK(g->result == MetricResult::Fail);
    CHECK(has(g->reason, "past the runtime's prompt-cache cap 40 MiB"));
  }
}
