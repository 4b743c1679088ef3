// Which baseline rows a stage is compared with (campaigns/recipe_store.h
// choose_baseline, docs/DESIGN.md §3.3): the baseline's own campaign in the
// same period is interleaved; a canary's interleaved baseline runs are too,
// for that canary, but the last of them spilling into the next stage's window
// leaves the gate on the baseline's stored history.
#include "campaigns/recipe_store.h"
#include "storage/sqlite_store.h"
#include "tests/catch.h"
#include "tests/support/temp_dir.h"

using namespace soak;

namespace {

constexpr int64_t kGateStart = 1'000'000;

struct World {
  TempDir tmp;
  std::unique_ptr<SqliteStore> store;
  int64_t host = 0, base = 0, base_stage = 0;

  World() {
    auto s = SqliteStore::open(tmp.path() + "/soakd.db", OpenMode::ReadWrite);
    REQUIRE(s.ok());
    store = std::move(*s);
    host = *store->upsert_host(HostInfo{"studio", "Mac15,14", 512LL << 30, "macOS 15.5"}, 1000);
    CandidateRow c;
    c.host_id = host;
    c.name = "base";
    c.model = "qwen3.6-35b-a3b";
    c.runtime = RuntimeKind::LlamaCpp;
    c.build = "b9430";
    c.base_url = "http://127.0.0.1:8080";
    base = *store->upsert_candidate(c, 1000);
    StageRow st;
    st.candidate_id = base;
    st.kind = StageKind::Gate;
    st.started_ms = 10'000;
    st.length_ms = 100'000;
    base_stage = *store->insert_stage(st);
  }
  // A row of the baseline at `t`: of its own stage, or a shadow run (no stage).
  void row(int64_t t, bool staged) {
    ProbeResult r;
    r.candidate_id = base;
    r.host_id = host;
    r.started_wall_ms = t;
    r.kind = ProbeKind::Marker;
    r.task = "functional";
    r.outcome = Outcome::Clean;
    if (staged) r.stage_id = base_stage;
    REQUIRE(store->insert_probe_result(r).ok());
  }
};

}  // namespace

TEST_CASE("a canary's shadow run spilling into the gate leaves the gate on the baseline's history") {
  World w;
  w.row(20'000, true);             // the baseline's own gate, long before
  w.row(kGateStart - 500, false);  // shadow runs of the candidate's canary
  w.row(kGateStart + 300, false);  // ... the last one still running after the canary ended
  auto gate = choose_baseline(*w.store, w.base, StageKind::Gate, kGateStart, kGateStart + 60'000);
  REQUIRE(gate.ok());
  CHECK(gate->mode == BaselineMode::History);
  CHECK(gate->until_ms == kGateStart);
  auto soak = choose_baseline(*w.store, w.base, StageKind::Soak, kGateStart, kGateStart + 60'000);
  REQUIRE(soak.ok());
  CHECK(soak->mode == BaselineMode::History);

  // For the canary that ran them, shadow runs are its interleaved baseline.
  auto canary = choose_baseline(*w.store, w.base, StageKind::Canary, kGateStart - 5'000, kGateStart);
  REQUIRE(canary.ok());
  CHECK(canary->mode == BaselineMode::Interleaved);

  SECTION("the baseline's own campaign in the same period is interleaved") {
    w.row(kGateStart + 1'000, true);
    auto again = choose_baseline(*w.store, w.base, StageKind::Gate, kGateStart, kGateStart + 60'000);
    REQUIRE(again.ok());
    CHECK(again->mode == BaselineMode::Interleaved);
  }
}

TEST_CASE("no baseline rows at all: none") {
  World w;
  auto c = choose_baseline(*w.store, w.base, StageKind::Gate, kGateStart, kGateStart + 60'000);
  REQUIRE(c.ok());
  CHECK(c->mode == BaselineMode::None);
}
