#include "tests/support/demo_store.h"

#include <sqlite3.h>

#include <algorithm>
#include <memory>

#include "campaigns/campaigns.h"
#include "daemon/wiring.h"
#include "storage/outbox.h"
#include "storage/sqlite_store.h"
#include "tests/support/sim_runner.h"

namespace soak {

namespace {

const char* kConfig = R"({
  "defaults": {
    "stages": { "smoke": "15m", "canary": "2h", "gate": "24h", "soak": "7d" },
    "cadence": { "scrape": "5m", "functional": "15m", "long_context": "1h", "burst": "1h", "cancel": "1h",
                 "gate_pause": "30s", "soak_traffic": "10m", "soak_heavy": "12h", "build_poll": "30m" },
    "gate": { "min_completed": 1000 },
    "long_context_sizes": [1024, 8192, 32768],
    "burst_sizes": [1, 4]
  },
  "schedule": { "nightly_window": "now", "max_concurrent_canaries": 4 },
  "candidates": [
    {"name": "llama-b9430", "model": "qwen3.6-35b-a3b", "runtime": "llama.cpp", "base_url": "http://127.0.0.1:18431"},
    {"name": "llama-b9502", "model": "qwen3.6-35b-a3b", "runtime": "llama.cpp", "base_url": "http://127.0.0.1:18432",
     "baseline": "llama-b9430"},
    {"name": "omlx-35b", "model": "qwen3.6-35b-a3b", "runtime": "omlx", "base_url": "http://127.0.0.1:18433"},
    {"name": "mlx-leak", "model": "qwen3.6-35b-a3b", "runtime": "mlx-lm", "base_url": "http://127.0.0.1:18434"}
  ]
})";

constexpr int64_t kStartMs = 1'767'225'600'000;  // 2026-01-01T00:00:00Z
constexpr int64_t kHostEveryMs = 5 * kMinute;

}  // namespace

Result<DemoStore> build_demo_store(const std::string& dir) {
  DemoStore out;
  out.path = dir + "/soakd.db";
  out.start_ms = kStartMs;
  auto opened = SqliteStore::open(out.path, OpenMode::ReadWrite, Durability::Fast);
  if (!opened) return opened.error();
  SqliteStore& store = **opened;
  VirtualClock clock{kStartMs};
  auto host = store.upsert_host(HostInfo{"studio", "Mac15,14", 512LL << 30, "macOS 15.5"}, clock.wall_ms());
  if (!host) return host.error();
  auto cfg = parse_config(kConfig, "demo-like.json", dir);
  if (!cfg) return cfg.error();
  auto shared = std::make_shared<const Config>(std::move(*cfg));

  SimRunner runner(store, clock, *host);
  runner.at("llama-b9430").build = "b9430-5bec3532f";
  runner.at("llama-b9502").behaviour = Behaviour::SlowDecode;
  runner.at("llama-b9502").build = "b9502-64f7e03";
  runner.at("omlx-35b").behaviour = Behaviour::HungStream;
  runner.at("omlx-35b").build = "0.3.1";
  runner.at("omlx-35b").fault_after = 300;
  runner.at("mlx-leak").behaviour = Behaviour::Leak;
  runner.at("mlx-leak").build = "0.24.1";
  Outbox outbox(store, clock, make_null_logger(), *host);
  Campaigns camp(shared, Deps{store, outbox, clock, make_null_logger(), nullptr, *host}, runner,
                 [](int64_t) { return 0; });
  if (auto r = camp.resume(clock.wall_ms()); !r) return r.error();

  // One transaction for the whole simulation (the campaign logic is not what
  // this builds; per-row commits would be most of the time).
  sqlite3_exec(store.db(), "BEGIN", nullptr, nullptr, nullptr);
  int64_t next_host_sample = kStartMs;
  int64_t n = 0;
  const int64_t end = kStartMs + 10 * kDay;
  while (clock.wall_ms() < end && !camp.settled()) {
    const int64_t now = clock.wall_ms();
    while (next_host_sample <= now) {
      // Pressure: mostly normal, a warn afternoon on day 3 and a critical hour on day 5.
      HostSample h;
      h.host_id = *host;
      h.wall_ms = next_host_sample;
      const int64_t hour = (next_host_sample - kStartMs) / kHour;
      h.pressure_level = hour == 5 * 24 + 14 ? 4 : (hour >= 3 * 24 + 13 && hour < 3 * 24 + 18) ? 2 : 1;
      h.memorystatus_level = static_cast<int>(62 - (hour % 24) / 2 - (*h.pressure_level - 1) * 8);
      h.swap_total_bytes = 8LL << 30;
      h.swap_used_bytes = (200LL << 20) + (n % 288) * (1LL << 20);
      // A healthy host: a few swapouts a day, far under the guard's limit
      // that the stages judge (stage_swapouts).
      h.swapouts = 1000 + n / 8;
      h.free_bytes = 100LL << 30;
      if (auto r = store.insert_host_sample(h); !r) return r.error();
      next_host_sample += kHostEveryMs;
      ++n;
    }
    runner.deliver(now);
    camp.tick(now);
    int64_t next = std::min(end, next_host_sample);
    if (auto a = runner.next_completion_ms()) next = std::min(next, *a);
    if (auto b = camp.next_wake_ms(now)) next = std::min(next, *b);
    clock.advance_ms(std::max<int64_t>(1, next - now));
  }
  out.end_ms = clock.wall_ms();
  // A host-wide gap (the Mac asleep for 40 minutes on day 4) and a control
  // request answered: marks on the timeline, not judged.
  Event gap;
  gap.wall_ms = kStartMs + 4 * kDay + 3 * kHour;
  gap.host_id = *host;
  gap.kind = EventKind::Gap;
  gap.duration_ms = 40 * kMinute;
  gap.detail_json = R"({"cause":"sleep","missed_slots":8})";
  if (auto r = store.insert_event(gap); !r) return r.error();
  Event control;
  control.wall_ms = kStartMs + 20 * kMinute;
  control.host_id = *host;
  control.kind = EventKind::Control;
  control.detail_json = R"({"action":"start","who":"ops","why":"nightly window skipped for the demo"})";
  if (auto r = store.insert_event(control); !r) return r.error();
  sqlite3_exec(store.db(), "COMMIT", nullptr, nullptr, nullptr);
  if (!camp.settled()) return make_error("the demo-like campaigns did not settle within 10 virtual days");
  return out;
}

}  // namespace soak
