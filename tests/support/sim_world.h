// The campaign simulation's world, shared by the campaign tests in virtual
// time: a real SQLite store, the Campaigns logic, a SimRunner
// (tests/support/sim_runner.h) and a VirtualClock, with the cadences
// stretched so a simulated week is a few thousand rows per candidate.
#pragma once

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>

#include <sqlite3.h>

#include "campaigns/campaigns.h"
#include "storage/sqlite_store.h"
#include "tests/catch.h"
#include "tests/support/sim_runner.h"
#include "tests/support/temp_dir.h"

namespace soak::sim {

// Cadences stretched so a week is a few thousand rows per candidate.
inline const char* kSimDefaults = R"(
  "defaults": {
    "stages": { "smoke": "15m", "canary": "2h", "gate": "24h", "soak": "7d" },
    "cadence": { "scrape": "5m", "functional": "15m", "long_context": "1h", "burst": "1h", "cancel": "1h",
                 "gate_pause": "30s", "soak_traffic": "10m", "soak_heavy": "12h", "build_poll": "30m" },
    "gate": { "min_completed": 1000 },
    "long_context_sizes": [1024, 32768],
    "burst_sizes": [1, 4]
  },
  "schedule": { "nightly_window": "now", "max_concurrent_canaries": 4 },
)";

inline std::string candidate(const std::string& name, int port, const std::string& extra = "") {
  return R"({"name": ")" + name +
         R"(", "model": "qwen3.6-35b-a3b", "runtime": "llama.cpp", "base_url": "http://127.0.0.1:)" +
         std::to_string(port) + "\"" + extra + "}";
}

// The usual pair: "base", and "cand" compared with it.
inline std::string base_and_cand() {
  return candidate("base", 18431) + "," + candidate("cand", 18432, R"(, "baseline": "base")");
}

struct World {
  TempDir tmp;
  VirtualClock clock{1'767'225'600'000};
  std::unique_ptr<SqliteStore> store;
  int64_t host = 0;
  std::unique_ptr<SimRunner> runner;
  std::shared_ptr<const Config> cfg;
  std::unique_ptr<Outbox> outbox;
  std::unique_ptr<Campaigns> camp;

  explicit World(const std::string& candidates_json, const std::string& extra_top = "") {
    auto st = SqliteStore::open(tmp.path() + "/s.db", OpenMode::ReadWrite, Durability::Fast);
    REQUIRE(st.ok());
    store = std::move(*st);
    host = *store->upsert_host(HostInfo{"studio", "Mac15,14", 512LL << 30, "macOS 15.5"}, clock.wall_ms());
    std::string text = std::string("{") + kSimDefaults + extra_top + R"("candidates": [)" + candidates_json + "]}";
    auto c = parse_config(text, "sim.json", tmp.path());
    INFO((c.ok() ? "" : c.message()));
    REQUIRE(c.ok());
    cfg = std::make_shared<const Config>(std::move(*c));
    runner = std::make_unique<SimRunner>(*store, clock, host);
    start();
  }

  void start() {
    Logger log = make_null_logger();
    if (std::getenv("SIM_LOG")) log = *make_logger(LogTarget::Console, "", "debug");
    outbox = std::make_unique<Outbox>(*store, clock, log, host);
    camp = std::make_unique<Campaigns>(cfg, Deps{*store, *outbox, clock, log, nullptr, host}, *runner,
                                       [](int64_t) { return 0; });
    REQUIRE(camp->resume(clock.wall_ms()).ok());
  }

  // Runs until settled (unless told to go on) or `limit_ms` of virtual time passed.
  enum class UntilSettled { Stop, GoOn };
  void run(int64_t limit_ms, const std::function<bool()>& stop = nullptr, UntilSettled until = UntilSettled::Stop) {
    // One SQLite transaction per run instead of one per row: the daemon commits
    // each row as it lands (unit_store proves that survives kill -9); here the
    // campaign logic is under test, and per-row commits would be most of the time.
    struct Batch {
      sqlite3* db;
      explicit Batch(sqlite3* d) : db(d) { REQUIRE(sqlite3_exec(db, "BEGIN", nullptr, nullptr, nullptr) == SQLITE_OK); }
      ~Batch() { sqlite3_exec(db, "COMMIT", nullptr, nullptr, nullptr); }
    } batch(store->db());
    const int64_t end = clock.wall_ms() + limit_ms;
    while (clock.wall_ms() < end) {
      const int64_t now = clock.wall_ms();
      runner->deliver(now);
      camp->tick(now);
      if ((until == UntilSettled::Stop && camp->settled()) || (stop && stop())) return;
      auto a = runner->next_completion_ms();
      auto b = camp->next_wake_ms(now);
      int64_t next = end;
      if (a) next = std::min(next, *a);
      if (b) next = std::min(next, *b);
      if (next <= now) next = now + 1;
      clock.advance_ms(next - now);
    }
  }

  // The daemon ticks at least every kControlPollEveryMs; the simulation only
  // wakes for scheduled work, so a control request is delivered by hand.
  void control_tick() {
    clock.advance_ms(kControlPollEveryMs);
    camp->tick(clock.wall_ms());
  }

  std::optional<CandidateRow> row(const std::string& name, const std::string& build = "") {
    std::optional<CandidateRow> out;
    for (const auto& c : *store->candidates())
      if (c.name == name && (build.empty() || c.build == build) && (!out || c.id > out->id)) out = c;
    return out;
  }
  std::optional<VerdictRow> verdict(const std::string& name, const std::string& build = "") {
    auto r = row(name, build);
    if (!r) return std::nullopt;
    return *store->latest_verdict(r->id);
  }
  std::vector<StageRow> stages(const std::string& name) { return *store->stages(row(name)->id); }
};

inline bool has_metric(const VerdictRow& v, const std::string& prefix, MetricResult result) {
  for (const auto& m : v.metrics)
    if (m.metric.rfind(prefix, 0) == 0 && m.result == result) return true;
  return false;
}

}  // namespace soak::sim
