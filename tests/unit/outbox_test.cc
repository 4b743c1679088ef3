// The Outbox in virtual time, over a real SQLite store made to fail by
// FaultyStore: rows that meet a full disk or a held lock wait in order and are
// all written once the store takes them; the pause is one store_unwritable gap;
// rows past the bound are counted; a campaign starts nothing and judges
// nothing while rows wait.
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "campaigns/campaigns.h"
#include "storage/outbox.h"
#include "storage/sqlite_store.h"
#include "storage/write_fault.h"
#include "tests/catch.h"
#include "tests/support/faulty_store.h"
#include "tests/support/sim_runner.h"
#include "tests/support/temp_dir.h"

using namespace soak;
using soak::test::FaultyStore;
using soak::test::kDiskFull;
using soak::test::kLocked;
using soak::test::StoreAccess;
using soak::test::StoreCall;

namespace {

struct Box {
  TempDir tmp;
  VirtualClock clock;
  std::unique_ptr<SqliteStore> real;
  std::unique_ptr<FaultyStore> store;
  std::unique_ptr<Outbox> outbox;
  int64_t host = 0;
  std::vector<std::string> notes;

  explicit Box(StoreOutageSettings s = {}) {
    real = *SqliteStore::open(tmp.path() + "/s.db", OpenMode::ReadWrite, Durability::Fast);
    store = std::make_unique<FaultyStore>(*real);
    host = *real->upsert_host(HostInfo{"studio", "Mac15,14", 512LL << 30, "macOS 15.5"}, clock.wall_ms());
    outbox = std::make_unique<Outbox>(*store, clock, make_null_logger(), host, s);
    outbox->set_on_state([this](const std::string& n) { notes.push_back(n); });
  }
  HostSample sample(int i) const {
    HostSample h;
    h.host_id = host;
    h.wall_ms = clock.wall_ms();
    h.swap_used_bytes = i;  // tells the rows apart
    return h;
  }
  std::vector<HostSample> stored_samples() { return *real->host_samples(SampleQuery{}); }
  std::vector<Event> gaps() {
    EventQuery q;
    q.kind = EventKind::Gap;
    return *real->events(q);
  }
};

}  // namespace

TEST_CASE("write faults that pass are told apart from ones that do not, by their code") {
  using C = ErrorCode;
  CHECK(classify_write_failure(make_error(C::StoreFull, "insert host sample: database or disk is full")) ==
        WriteFault::Passing);
  CHECK(classify_write_failure(make_error(C::StoreBusy, "insert event: database is locked")) == WriteFault::Passing);
  CHECK(classify_write_failure(make_error(C::StoreReadOnly, "attempt to write a readonly database")) ==
        WriteFault::Passing);
  CHECK(classify_write_failure(make_error(C::StoreIo, "insert probe_results: disk I/O error")) == WriteFault::Passing);
  CHECK(classify_write_failure(make_error(C::StoreCantOpen, "unable to open database file")) == WriteFault::Passing);
  CHECK(classify_write_failure(make_error(
            C::StoreConstraint, "insert event: NOT NULL constraint failed: events.kind")) == WriteFault::Permanent);
  CHECK(classify_write_failure(make_error(C::StoreOther, "file is not a database")) == WriteFault::Permanent);
  CHECK(classify_write_failure(make_error("")) == WriteFault::Permanent);
  // The text is never searched: a passing text without its code does not pass.
  CHECK(classify_write_failure(make_error("database or disk is full")) == WriteFault::Permanent);
  // A word added on the way up keeps the code.
  CHECK(classify_write_failure(error_in("cannot register host", kLocked)) == WriteFault::Passing);
}

TEST_CASE("while the store writes, put() writes at once and returns the id") {
  Box b;
  auto id = b.outbox->put(b.sample(1));
  REQUIRE(id);
  CHECK(*id > 0);
  CHECK_FALSE(b.outbox->paused());
  CHECK(b.stored_samples().size() == 1);
  CHECK(b.outbox->describe().empty());
}

TEST_CASE("a full disk pauses the store; every row waits in order and is written when space returns") {
  Box b;
  b.store->fail_writes(kDiskFull);
  for (int i = 0; i < 5; ++i) {
    CHECK_FALSE(b.outbox->put(b.sample(i)));
    b.clock.advance_ms(1'000);
  }
  REQUIRE(b.outbox->paused());
  CHECK(b.outbox->waiting() == 5);
  CHECK(b.stored_samples().empty());
  const std::string d = b.outbox->describe();
  CHECK(d.rfind("store not writable since 2026-01-01T00:00:00Z: ", 0) == 0);
  CHECK(d.find("database or disk is full") != std::string::npos);
  CHECK(d.find("; 5 rows waiting") != std::string::npos);
  REQUIRE_FALSE(b.notes.empty());
  CHECK(b.notes.front().find("store not writable since") == 0);

  // Still full: the retry fails and backs off (doubling).
  const int64_t first_retry = *b.outbox->next_retry_ms();
  b.clock.advance_ms(first_retry - b.clock.wall_ms());
  CHECK_FALSE(b.outbox->retry());
  const int64_t second_retry = *b.outbox->next_retry_ms();
  CHECK(second_retry - b.clock.wall_ms() == 2 * kOutboxRetryFirstMs);
  CHECK_FALSE(b.outbox->retry());  // not due yet: nothing tried
  const auto tried = b.store->failures(StoreAccess::Write);

  b.store->clear();
  CHECK_FALSE(b.outbox->retry());  // still not due
  CHECK(b.store->failures(StoreAccess::Write) == tried);
  b.clock.advance_ms(second_retry - b.clock.wall_ms());
  CHECK(b.outbox->retry());
  CHECK_FALSE(b.outbox->paused());
  CHECK(b.notes.back().empty());

  auto rows = b.stored_samples();
  REQUIRE(rows.size() == 5);
  for (int i = 0; i < 5; ++i) CHECK(rows[static_cast<size_t>(i)].swap_used_bytes == i);  // in order

  auto gaps = b.gaps();
  REQUIRE(gaps.size() == 1);
  auto j = nlohmann::json::parse(gaps[0].detail_json);
  CHECK(j["cause"] == "store_unwritable");
  CHECK(j["rows_waited"] == 5);
  CHECK(j["rows_dropped"] == 0);
  CHECK(j["from_ms"].get<int64_t>() == 1'767'225'600'000);
  CHECK(j["to_ms"].get<int64_t>() == b.clock.wall_ms());
  CHECK(gaps[0].duration_ms == b.clock.wall_ms() - 1'767'225'600'000);
  CHECK(j["reason"].get<std::string>().find("database or disk is full") != std::string::npos);
}

TEST_CASE("past the bound new rows are dropped and counted, and the count is stored with the gap") {
  StoreOutageSettings s;
  s.max_queued_rows = 3;
  Box b(s);
  b.store->fail_writes(kLocked);
  for (int i = 0; i < 7; ++i) b.outbox->put(b.sample(i));
  CHECK(b.outbox->waiting() == 3);
  CHECK(b.outbox->dropped() == 4);
  CHECK(b.outbox->describe().find("3 rows waiting, 4 dropped") != std::string::npos);
  b.store->clear();
  CHECK(b.outbox->flush());
  auto rows = b.stored_samples();
  REQUIRE(rows.size() == 3);
  CHECK(rows[0].swap_used_bytes == 0);  // the oldest kept
  CHECK(rows[2].swap_used_bytes == 2);
  auto gaps = b.gaps();
  REQUIRE(gaps.size() == 1);
  auto j = nlohmann::json::parse(gaps[0].detail_json);
  CHECK(j["rows_dropped"] == 4);
  CHECK(j["rows_waited"] == 3);
}

TEST_CASE("a row refused for good is counted lost and does not pause the store") {
  Box b;
  b.store->fail_next(soak::test::StoreMethod::InsertHostSample, 1,
                     make_error(ErrorCode::StoreConstraint, "CHECK constraint failed: host_samples"));
  CHECK_FALSE(b.outbox->put(b.sample(1)));
  CHECK_FALSE(b.outbox->paused());
  CHECK(b.outbox->lost() == 1);
  CHECK(b.outbox->put(b.sample(2)));
}

TEST_CASE("a pause longer than stop_after is overdue") {
  StoreOutageSettings s;
  s.stop_after_ms = 10 * kMinute;
  Box b(s);
  b.store->fail_writes();
  b.outbox->put(b.sample(1));
  b.clock.advance_ms(10 * kMinute);
  CHECK_FALSE(b.outbox->overdue(b.clock.wall_ms()));
  b.clock.advance_ms(1);
  CHECK(b.outbox->overdue(b.clock.wall_ms()));
}

TEST_CASE("a failed write made straight to the store pauses it when the fault passes") {
  Box b;
  b.outbox->note_failure(error_in("insert stage", kLocked));
  CHECK(b.outbox->paused());
  CHECK(b.outbox->waiting() == 0);
  b.clock.advance_ms(kOutboxRetryFirstMs);
  CHECK(b.outbox->retry());
  CHECK(b.gaps().size() == 1);
  Box c;
  c.outbox->note_failure(make_error(ErrorCode::StoreConstraint, "insert stage: FOREIGN KEY constraint failed"));
  CHECK_FALSE(c.outbox->paused());
}

// ---- the campaign around it: the daemon's runner and samplers write through the outbox.
namespace {

const char* kConfig = R"({
  "defaults": {
    "stages": { "smoke": "15m", "canary": "2h", "gate": "24h", "soak": "7d" },
    "cadence": { "scrape": "5m", "functional": "15m", "long_context": "1h", "burst": "1h", "cancel": "1h",
                 "gate_pause": "30s", "soak_traffic": "10m", "soak_heavy": "12h", "build_poll": "30m" },
    "gate": { "min_completed": 1000 },
    "long_context_sizes": [1024, 32768],
    "burst_sizes": [1, 4]
  },
  "schedule": { "nightly_window": "now" },
  "store_outage": { "max_queued_rows": MAXROWS },
  "candidates": [{"name": "cand", "model": "qwen3.6-35b-a3b", "runtime": "llama.cpp", "base_url": "http://127.0.0.1:18432"}]
})";

struct Campaign {
  Box box;
  std::unique_ptr<SimRunner> runner;
  ConfigSnapshot cfg;
  std::unique_ptr<Campaigns> camp;

  explicit Campaign(int64_t max_rows) {
    std::string text = kConfig;
    text.replace(text.find("MAXROWS"), 7, std::to_string(max_rows));
    auto c = parse_config(text, "outage.json", box.tmp.path());
    REQUIRE(c.ok());
    cfg = std::make_shared<const Config>(std::move(*c));
    box.outbox->configure(cfg->store_outage);
    runner = std::make_unique<SimRunner>(*box.store, box.clock, box.host);
    runner->write_through(box.outbox.get());
    camp = std::make_unique<Campaigns>(cfg,
                                       Deps{*box.store, *box.outbox, box.clock, make_null_logger(), nullptr, box.host},
                                       *runner, [](int64_t) { return 0; });
    REQUIRE(camp->resume(box.clock.wall_ms()).ok());
  }

  // Runs like the daemon: completions, then a tick at least every second of
  // the control poll, until `until_ms`.
  void run_until(int64_t until_ms) {
    while (box.clock.wall_ms() < until_ms) {
      const int64_t now = box.clock.wall_ms();
      runner->deliver(now);
      camp->tick(now);
      int64_t next = std::min(until_ms, now + kControlPollEveryMs);
      if (auto a = runner->next_completion_ms()) next = std::min(next, *a);
      if (auto w = camp->next_wake_ms(now)) next = std::min(next, *w);
      box.clock.advance_ms(std::max<int64_t>(1, next - now));
    }
  }
  int64_t stored_probe_rows() { return static_cast<int64_t>(box.real->probe_results(ProbeQuery{})->size()); }
};

}  // namespace

TEST_CASE("writes failing for 20 minutes mid-canary: every row stored, one gap, nothing started meanwhile") {
  Campaign w(10'000);
  const int64_t t0 = w.box.clock.wall_ms();
  w.run_until(t0 + 60 * kMinute);  // smoke passed, canary running
  REQUIRE(w.camp->active().size() == 1);
  REQUIRE(w.camp->active()[0].stage == StageKind::Canary);

  // The disk fills between two runs: the sampler's next host sample meets it.
  while (w.runner->in_flight() > 0) w.run_until(w.box.clock.wall_ms() + 1'000);
  const int64_t from = w.box.clock.wall_ms(), to = from + 20 * kMinute;
  w.box.store->fail_when([&](const StoreCall& c) -> std::optional<Error> {
    const int64_t now = w.box.clock.wall_ms();
    if (c.access == StoreAccess::Write && from <= now && now < to) return kDiskFull;
    return std::nullopt;
  });
  w.box.outbox->put(w.box.sample(0));
  REQUIRE(w.box.outbox->paused());
  w.run_until(to + 5 * kMinute);
  w.box.store->clear();
  w.run_until(t0 + 4 * 60 * kMinute);  // the canary (2 h) has been judged

  // Every row the probes produced is in the store.
  CHECK(w.runner->rows_produced() > 0);
  CHECK(w.stored_probe_rows() == w.runner->rows_produced());
  CHECK(w.box.outbox->lost() == 0);
  CHECK_FALSE(w.box.outbox->paused());

  // One store_unwritable gap covering the pause.
  auto gaps = w.box.gaps();
  std::vector<nlohmann::json> outage;
  for (const auto& g : gaps) {
    auto j = nlohmann::json::parse(g.detail_json);
    if (j["cause"] == "store_unwritable") outage.push_back(j);
  }
  REQUIRE(outage.size() == 1);
  CHECK(outage[0]["from_ms"].get<int64_t>() >= from);
  CHECK(outage[0]["to_ms"].get<int64_t>() >= to);
  CHECK(outage[0]["rows_dropped"] == 0);

  // The first failed write opened the pause; no run started from then until it closed.
  const int64_t paused_from = outage[0]["from_ms"].get<int64_t>(), paused_to = outage[0]["to_ms"].get<int64_t>();
  const auto& starts = w.runner->run_starts_ms();
  const auto during =
      std::count_if(starts.begin(), starts.end(), [&](int64_t s) { return s > paused_from && s < paused_to; });
  CHECK(during == 0);
  CHECK(std::count_if(starts.begin(), starts.end(), [&](int64_t s) { return s >= paused_to; }) >
        0);  // and work resumed

  // The canary was judged after the rows it rests on were stored.
  auto row = *w.box.real->candidates();
  REQUIRE(row.size() == 1);
  auto verdicts = *w.box.real->verdicts(row[0].id);
  bool canary_judged = false;
  for (const auto& v : verdicts) canary_judged |= v.stage == "canary";
  CHECK(canary_judged);
}

TEST_CASE("a long outage past the bound: rows beyond it are dropped and the count is stored") {
  Campaign w(5);
  const int64_t t0 = w.box.clock.wall_ms();
  w.run_until(t0 + 60 * kMinute);
  w.box.store->fail_writes(kLocked);
  w.run_until(t0 + 90 * kMinute);
  // A long outage keeps the samplers writing: their rows fill the queue past the bound.
  for (int i = 0; i < 10; ++i) w.box.outbox->put(w.box.sample(i));
  CHECK(w.box.outbox->dropped() > 0);
  const auto dropped = w.box.outbox->dropped();
  w.box.store->clear();
  w.run_until(t0 + 95 * kMinute);
  CHECK_FALSE(w.box.outbox->paused());
  int found = 0;
  for (const auto& g : w.box.gaps()) {
    auto j = nlohmann::json::parse(g.detail_json);
    if (j["cause"] != "store_unwritable") continue;
    ++found;
    CHECK(j["rows_dropped"].get<uint64_t>() == dropped);
  }
  CHECK(found == 1);
}
