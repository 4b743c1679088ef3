#include <sqlite3.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "campaigns/recipe_store.h"
#include "judges/sequential.h"
#include "reports/evidence_live.h"
#include "soakctl/common.h"
#include "soakctl/soakctl.h"
#include "storage/schema.h"
#include "storage/sqlite_store.h"
#include "tests/catch.h"
#include "tests/support/faulty_store.h"
#include "tests/support/temp_dir.h"

using namespace soak;

namespace {

struct Fixture {
  TempDir tmp;
  std::string db = tmp.path() + "/soakd.db";
  VirtualClock clock{1'800'000'000'000};
  int64_t host = 0;

  Fixture() {
    auto st = SqliteStore::open(db, OpenMode::ReadWrite);
    REQUIRE(st.ok());
    host = *(*st)->upsert_host(HostInfo{"studio", "Mac15,14", 1, "macOS"}, 1);
  }

  int64_t add(const std::string& name, const std::string& build, std::optional<VerdictState> v,
              std::optional<StageRow> stage = std::nullopt) {
    auto st = SqliteStore::open(db, OpenMode::ReadWrite);
    REQUIRE(st.ok());
    CandidateRow c;
    c.host_id = host;
    c.name = name;
    c.model = "qwen3.6-35b-a3b";
    c.runtime = RuntimeKind::LlamaCpp;
    c.build = build;
    c.base_url = "http://127.0.0.1:8080";
    int64_t id = *(*st)->upsert_candidate(c, clock.wall_ms());
    clock.advance_ms(1000);
    if (stage) {
      stage->candidate_id = id;
      REQUIRE((*st)->insert_stage(*stage).ok());
    }
    if (v) {
      VerdictRow r;
      r.candidate_id = id;
      r.wall_ms = clock.wall_ms();
      r.state = *v;
      r.stage = "canary";
      r.reason = *v == VerdictState::Rejected ? "stalled stream after HTTP 200" : "";
      r.judge_version = "1";
      r.config_hash = "h";
      REQUIRE((*st)->insert_verdict(r).ok());
    }
    return id;
  }

  int run(const std::vector<std::string>& args, std::string* out = nullptr, std::string* err = nullptr,
          const Terminal& term = {}) {
    std::ostringstream o, e;
    int code = soakctl_main(args, o, e, clock, term);
    if (out) *out = o.str();
    if (err) *err = e.str();
    return code;
  }
};

}  // namespace

TEST_CASE("soakctl status shows one row per candidate with a progress bar for the running stage") {
  Fixture f;
  StageRow canary;
  canary.kind = StageKind::Canary;
  canary.state = StageState::Running;
  canary.started_ms = f.clock.wall_ms() - 30 * 60'000;  // 30 of 120 minutes done
  canary.length_ms = 2 * 3600'000;
  canary.deadline_ms = canary.started_ms + canary.length_ms;
  f.add("llama-b9502", "b9502", VerdictState::Running, canary);
  f.add("llama-b9430", "b9430", VerdictState::Promoted);
  std::string out;
  REQUIRE(f.run({"--db", f.db, "status"}, &out) == kCtlExitOk);
  INFO(out);
  CHECK(out.find("CANDIDATE") != std::string::npos);
  CHECK(out.find("llama-b9502") != std::string::npos);
  CHECK(out.find("[###.......] 25%") != std::string::npos);
  CHECK(out.find("promoted") != std::string::npos);

  REQUIRE(f.run({"status", "--json", "--db", f.db}, &out) == kCtlExitOk);
  auto j = nlohmann::json::parse(out);
  REQUIRE(j.size() == 2);
  CHECK(j[0]["candidate"] == "llama-b9430");
  CHECK(j[1]["stage"]["kind"] == "canary");
  CHECK(j[1]["stage"]["progress"].get<double>() == Approx(0.25).margin(0.01));
  CHECK(j[0]["verdict"]["state"] == "promoted");
}

namespace {
// A 2 h canary that started ten minutes before `now_ms`.
StageRow running_canary(int64_t now_ms) {
  StageRow canary;
  canary.kind = StageKind::Canary;
  canary.state = StageState::Running;
  canary.started_ms = now_ms - 10 * 60'000;
  canary.length_ms = 2 * 3600'000;
  canary.deadline_ms = canary.started_ms + canary.length_ms;
  return canary;
}
}  // namespace

TEST_CASE("soakctl status shows a candidate's newest build, counting the earlier ones and the last promoted") {
  // Nightly builds make a row each: after a month, a line for each would bury today's.
  Fixture f;
  f.add("llama", "b9420", VerdictState::Rejected);
  f.add("llama", "b9430", VerdictState::Promoted);
  f.add("llama", "b9502", VerdictState::Running, running_canary(f.clock.wall_ms()));
  f.add("omlx-35b", "0.3.1", VerdictState::Promoted);
  std::string out;
  REQUIRE(f.run({"--db", f.db, "status"}, &out) == kCtlExitOk);
  INFO(out);
  CHECK(out.find("b9502") != std::string::npos);
  CHECK(out.find("b9430") != std::string::npos);  // named as the last promoted only
  CHECK(out.find("llama                canary  [") != std::string::npos);
  CHECK(out.find("2 earlier builds or launches (soakctl history llama); last promoted: b9430") != std::string::npos);
  CHECK(out.find("b9420") == std::string::npos);
  CHECK(out.find("earlier build") == out.rfind("earlier build"));  // omlx-35b has none

  REQUIRE(f.run({"--db", f.db, "status", "--json"}, &out) == kCtlExitOk);
  auto j = nlohmann::json::parse(out);
  REQUIRE(j.size() == 2);
  CHECK(j[0]["candidate"] == "llama");
  CHECK(j[0]["build"] == "b9502");
  CHECK(j[0]["earlier_builds"] == 2);
  CHECK(j[0]["last_promoted"]["build"] == "b9430");
  CHECK(j[0]["last_promoted"]["verdict"]["state"] == "promoted");
  CHECK_FALSE(j[1].contains("earlier_builds"));
  CHECK_FALSE(j[1].contains("last_promoted"));

  // The newest build promoted itself: nothing earlier to name.
  f.add("omlx-35b", "0.3.2", VerdictState::Promoted);
  REQUIRE(f.run({"--db", f.db, "status", "--json"}, &out) == kCtlExitOk);
  j = nlohmann::json::parse(out);
  REQUIRE(j.size() == 2);
  CHECK(j[1]["build"] == "0.3.2");
  CHECK(j[1]["earlier_builds"] == 1);
  CHECK_FALSE(j[1].contains("last_promoted"));
}

TEST_CASE("soakctl status shows the running stage's sequential evidence as a fraction of its boundary") {
  Fixture f;
  const StageRow canary = running_canary(f.clock.wall_ms());
  const int64_t id = f.add("llama-b9502", "b9502", VerdictState::Running, canary);
  JudgeInput in;
  in.recipe.stage = StageKind::Canary;
  {
    auto st = SqliteStore::open(f.db, OpenMode::ReadWrite);
    REQUIRE(st.ok());
    const int64_t stage_id = (*(*st)->stages(id)).back().id;
    for (int i = 1; i <= 30; ++i) {  // 3 HTTP 500s in 30 functional completions: evidence, not yet a rejection
      ProbeResult r;
      r.candidate_id = id;
      r.host_id = f.host;
      r.stage_id = stage_id;
      r.started_wall_ms = canary.started_ms + i * 1000;
      r.kind = ProbeKind::Marker;
      r.task = "functional";
      r.workload_id = "functional/marker";
      r.outcome = i % 10 == 0 ? Outcome::Http5xx : Outcome::Clean;
      r.id = *(*st)->insert_probe_result(r);
      in.candidate_rows.push_back(r);
    }
  }
  const auto want = sequential_evidence(in);  // the defaults: nothing judged yet
  REQUIRE(want.size() == 7);
  REQUIRE(!want[0].stop);
  REQUIRE(want[0].fraction() > 0);
  std::string out;
  REQUIRE(f.run({"--db", f.db, "status"}, &out) == kCtlExitOk);
  INFO(out);
  const std::string pct = std::to_string(static_cast<int>(std::floor(want[0].fraction() * 100))) + "%";
  CHECK(out.find("evidence against the failure budget: pooled " + pct) != std::string::npos);
  CHECK(out.find("of the boundary") != std::string::npos);
  REQUIRE(f.run({"--db", f.db, "status", "--json"}, &out) == kCtlExitOk);
  auto j = nlohmann::json::parse(out);
  REQUIRE(j[0]["sequential"].size() == 7);
  CHECK(j[0]["sequential"][0]["measure"] == "pooled");
  CHECK(j[0]["sequential"][0]["n"] == 30);
  CHECK(j[0]["sequential"][0]["k"] == 3);
  CHECK(j[0]["sequential"][0]["fraction"].get<double>() == Approx(want[0].fraction()));
}

TEST_CASE(
    "soakctl status shows the evidence soakd stored for the stage, not the rows since; kept up to date, it is the "
    "rows' own") {
  Fixture f;
  const StageRow canary = running_canary(f.clock.wall_ms());
  const int64_t id = f.add("llama-b9502", "b9502", VerdictState::Running, canary);
  auto st = SqliteStore::open(f.db, OpenMode::ReadWrite);
  REQUIRE(st.ok());
  Store& store = **st;
  const StageRow stage = (*store.stages(id)).back();
  auto add_rows = [&](int from, int to, int fail_every) {
    for (int i = from; i <= to; ++i) {
      ProbeResult r;
      r.candidate_id = id;
      r.host_id = f.host;
      r.stage_id = stage.id;
      r.started_wall_ms = canary.started_ms + i * 1000;
      r.kind = ProbeKind::Marker;
      r.task = "functional";
      r.workload_id = "functional/marker";
      r.outcome = i % fail_every == 0 ? Outcome::Http5xx : Outcome::Clean;
      REQUIRE(store.insert_probe_result(r).ok());
    }
  };
  add_rows(1, 30, 10);  // 3 of 30 failed
  report::StageEvidenceWriter writer;
  const int64_t stored_ms = f.clock.wall_ms() - 5 * 60'000;  // five minutes ago: shown with its time
  REQUIRE(writer.refresh(store, stored_ms).ok());
  auto row = store.stage_evidence(stage.id);
  REQUIRE(row.ok());
  REQUIRE(*row);
  CHECK((*row)->candidate_id == id);
  CHECK((*row)->wall_ms == stored_ms);
  add_rows(31, 40, 2);  // 5 more failures soakd has not stored yet

  std::string out;
  REQUIRE(f.run({"--db", f.db, "status", "--json"}, &out) == kCtlExitOk);
  auto j = nlohmann::json::parse(out);
  REQUIRE(j[0]["sequential"].size() == 7);
  CHECK(j[0]["sequential"][0]["measure"] == "pooled");
  CHECK(j[0]["sequential"][0]["n"] == 30);  // the stored row, not the 40 rows now
  CHECK(j[0]["sequential"][0]["k"] == 3);
  CHECK(j[0]["sequential_ms"] == stored_ms);
  // The canary's decisive rule it can count from its rows: its pooled failure ratio.
  REQUIRE(j[0]["evidence_progress"].size() == 1);
  CHECK(j[0]["evidence_progress"][0]["rule"] == "failure_ratio/pooled");
  CHECK(j[0]["evidence_progress"][0]["had"] == 30);
  CHECK(j[0]["evidence_progress"][0]["needed"] == 5);
  REQUIRE(f.run({"--db", f.db, "status"}, &out) == kCtlExitOk);
  INFO(out);
  CHECK(out.find("of the boundary (as of " + iso_utc(stored_ms) + ")") != std::string::npos);
  CHECK(out.find("evidence for a promotion: failure_ratio/pooled has its 30 of 5 completions") != std::string::npos);

  // Refreshed, the writer reads the ten new rows only and gives what the
  // whole stage's rows give read at once.
  REQUIRE(writer.refresh(store, f.clock.wall_ms()).ok());
  auto whole = report::running_evidence(store, id, stage);
  REQUIRE(whole.ok());
  auto stored = report::measures_from_json((*store.stage_evidence(stage.id))->measures_json);
  REQUIRE(stored.ok());
  REQUIRE(stored->size() == whole->size());
  for (size_t i = 0; i < whole->size(); ++i) {
    INFO((*whole)[i].name);
    CHECK((*stored)[i].name == (*whole)[i].name);
    CHECK((*stored)[i].last.n == (*whole)[i].last.n);
    CHECK((*stored)[i].last.k == (*whole)[i].last.k);
    CHECK((*stored)[i].last.log_e == Approx((*whole)[i].last.log_e));
    CHECK((*stored)[i].peak.log_e == Approx((*whole)[i].peak.log_e));
    CHECK((*stored)[i].alpha == Approx((*whole)[i].alpha));
    CHECK((*stored)[i].basis == (*whole)[i].basis);
    CHECK((*stored)[i].stop.has_value() == (*whole)[i].stop.has_value());
  }
  CHECK((*whole)[0].last.n == 40);
  CHECK((*whole)[0].last.k == 8);
  REQUIRE(f.run({"--db", f.db, "status"}, &out) == kCtlExitOk);
  CHECK(out.find("(as of") == std::string::npos);  // fresh: no time shown

  // With another reader keeping the same evidence (the metrics textfile), a
  // writer stores that reader's, not a copy of its own: here one that read
  // the first 30 rows only, though 40 are stored.
  report::LiveEvidence shared;
  REQUIRE(shared.refresh(store, id, stage, 30).ok());
  report::StageEvidenceWriter sharing;
  sharing.share_from([&](int64_t candidate_id) { return candidate_id == id ? &shared : nullptr; });
  CHECK(sharing.due({id}, f.clock.wall_ms(), 60'000));
  REQUIRE(sharing.refresh(store, f.clock.wall_ms() + 1).ok());
  CHECK((*store.stage_evidence(stage.id))->probe_max_id == 30);
  CHECK((*report::measures_from_json((*store.stage_evidence(stage.id))->measures_json)).front().last.n == 30);
  CHECK_FALSE(sharing.due({id}, f.clock.wall_ms() + 59'000, 60'000));  // refreshed a minute ago at most
  CHECK(sharing.due({id}, f.clock.wall_ms() + 60'001, 60'000));
}

namespace {
// A running canary of llama-b9502 with llama-b9430 as its baseline, and a
// marker row of either stored at a given time.
struct BaselineCase {
  Fixture f;
  int64_t base = f.add("llama-b9430", "b9430", VerdictState::Promoted);
  int64_t cand = f.add("llama-b9502", "b9502", VerdictState::Running, running_canary(f.clock.wall_ms()));
  std::unique_ptr<SqliteStore> st;
  StageRow stage;
  BaselineCase() {
    auto opened = SqliteStore::open(f.db, OpenMode::ReadWrite);
    REQUIRE(opened.ok());
    st = std::move(*opened);
    REQUIRE(st->set_baseline(cand, base).ok());
    stage = (*st->stages(cand)).back();
  }
  // soakd's look at the baseline (extend_running_baseline) as of the rows stored now.
  std::unique_ptr<test::FaultyStore> watched;
  JudgeRecipe recipe;
  std::vector<ProbeResult> rows;
  int64_t read_to = 0;
  int64_t max_probe() { return (*st->max_ids()).probe; }
  Status look() {
    if (!watched) watched = std::make_unique<test::FaultyStore>(*st);
    recipe.baseline_id = base;
    return report::extend_running_baseline(*watched, recipe, stage, rows, read_to, max_probe());
  }
  void add_row(int64_t candidate, std::optional<int64_t> stage_id, int64_t at_ms) {
    ProbeResult r;
    r.candidate_id = candidate;
    r.host_id = f.host;
    r.stage_id = stage_id;
    r.started_wall_ms = at_ms;
    r.kind = ProbeKind::Marker;
    r.task = "functional";
    r.workload_id = "functional/marker";
    r.outcome = Outcome::Clean;
    REQUIRE(st->insert_probe_result(r).ok());
  }
};
}  // namespace

TEST_CASE("a history baseline is looked through once; later refreshes look at the rows stored since") {
  // Every minute soakd asks whether the baseline has a row in the stage's
  // window (then it is interleaved). Asked of all its rows each time, a
  // week-long history baseline cost seconds a refresh on a month's store.
  BaselineCase c;
  const int64_t base = c.base, cand = c.cand;
  const StageRow& stage = c.stage;
  for (int i = 1; i <= 20; ++i) c.add_row(base, std::nullopt, stage.started_ms - 3600'000 + i * 1000);
  for (int i = 1; i <= 10; ++i) c.add_row(cand, stage.id, stage.started_ms + i * 1000);
  const int64_t first_max = c.max_probe();
  REQUIRE(c.look().ok());
  const JudgeRecipe& recipe = c.recipe;
  const std::vector<ProbeResult>& rows = c.rows;
  const int64_t& read_to = c.read_to;
  CHECK(recipe.baseline_mode == BaselineMode::History);
  CHECK(rows.size() == 20);
  CHECK(read_to == first_max);

  for (int i = 11; i <= 15; ++i) c.add_row(cand, stage.id, stage.started_ms + i * 1000);
  const size_t asked = c.watched->probe_queries().size();
  REQUIRE(c.look().ok());
  CHECK(recipe.baseline_mode == BaselineMode::History);
  CHECK(rows.size() == 20);
  REQUIRE(c.watched->probe_queries().size() == asked + 1);  // one look, not the history again
  const ProbeQuery& look = c.watched->probe_queries().back();
  CHECK(look.candidate_id == base);
  REQUIRE(look.min_id);
  CHECK(*look.min_id == first_max + 1);

  // A baseline row in the window, stored after those looks, still makes it interleaved.
  c.add_row(base, std::nullopt, stage.started_ms + 20'000);
  const int64_t last_max = c.max_probe();
  REQUIRE(c.look().ok());
  CHECK(recipe.baseline_mode == BaselineMode::Interleaved);
  REQUIRE(rows.size() == 1);
  CHECK(rows.front().started_wall_ms == stage.started_ms + 20'000);
  CHECK(read_to == last_max);
}

TEST_CASE("a baseline with no history is asked again only about the rows stored since") {
  // With no row in the lookback either (mode None), each refresh used to ask
  // for the baseline's whole history again.
  BaselineCase c;
  const int64_t base = c.base, cand = c.cand;
  const StageRow& stage = c.stage;
  // The baseline's rows all predate the lookback.
  for (int i = 1; i <= 5; ++i) c.add_row(base, std::nullopt, stage.started_ms - kHistoryLookbackMs - 60'000 + i * 1000);
  const int64_t first_max = c.max_probe();
  REQUIRE(c.look().ok());
  const JudgeRecipe& recipe = c.recipe;
  const std::vector<ProbeResult>& rows = c.rows;
  CHECK(recipe.baseline_mode == BaselineMode::None);
  CHECK(rows.empty());

  c.add_row(cand, std::nullopt, stage.started_ms + 1000);
  REQUIRE(c.look().ok());
  CHECK(recipe.baseline_mode == BaselineMode::None);
  const ProbeQuery& hist = c.watched->probe_queries().back();
  CHECK(hist.until_ms == stage.started_ms);
  REQUIRE(hist.min_id);
  CHECK(*hist.min_id == first_max + 1);

  // A baseline row in flight when the stage began, stored after: history.
  c.add_row(base, std::nullopt, stage.started_ms - 5000);
  REQUIRE(c.look().ok());
  CHECK(recipe.baseline_mode == BaselineMode::History);
  REQUIRE(rows.size() == 1);
  CHECK(rows.front().started_wall_ms == stage.started_ms - 5000);
}

TEST_CASE("stage evidence: the stored form reads back, and what is not it fails naming the measure") {
  SequentialMeasure m;
  m.name = "task/functional";
  m.budget = 0.01;
  m.alpha = 0.05 / 7;
  m.basis = "two words";
  m.last = {40, 8, 3.25, 77};
  m.peak = {38, 8, 3.5, 75};
  m.stop = SequentialPoint{39, 8, 5.5, 76};
  auto back = report::measures_from_json(report::measures_to_json({m, SequentialMeasure{}}));
  REQUIRE(back.ok());
  REQUIRE(back->size() == 2);
  CHECK((*back)[0].name == "task/functional");
  CHECK((*back)[0].alpha == m.alpha);
  CHECK((*back)[0].basis == "two words");
  CHECK((*back)[0].last.row_id == 77);
  CHECK((*back)[0].peak.log_e == 3.5);
  REQUIRE((*back)[0].stop);
  CHECK((*back)[0].stop->n == 39);
  CHECK_FALSE((*back)[1].stop);
  CHECK_FALSE(report::measures_from_json("{}").ok());
  auto bad = report::measures_from_json(
      R"([{"name":"pooled","budget":0.01,"alpha":0.1,"estimate_alpha":0,"last":[1,0],"peak":[1,0,0,1]}])");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.message().find("measure 0") != std::string::npos);
}

TEST_CASE("soakctl status reads the running canary's interleaved baseline: the paired measure") {
  Fixture f;
  const int64_t base = f.add("llama-b9430", "b9430", VerdictState::Promoted);
  const StageRow canary = running_canary(f.clock.wall_ms());
  const int64_t id = f.add("llama-b9502", "b9502", VerdictState::Running, canary);
  JudgeInput in;
  in.recipe.stage = StageKind::Canary;
  in.recipe.baseline_id = base;
  in.recipe.baseline_mode = BaselineMode::Interleaved;
  {
    auto st = SqliteStore::open(f.db, OpenMode::ReadWrite);
    REQUIRE(st.ok());
    REQUIRE((*st)->set_baseline(id, base).ok());
    const int64_t stage_id = (*(*st)->stages(id)).back().id;
    // Eight functional runs of six, each repeated by the baseline (its shadow
    // run: no stage, the same group id); the candidate's first two rows of each fail.
    for (int run = 0; run < 8; ++run)
      for (int side = 0; side < 2; ++side)
        for (int i = 0; i < 6; ++i) {
          ProbeResult r;
          r.candidate_id = side == 0 ? id : base;
          r.host_id = f.host;
          if (side == 0) r.stage_id = stage_id;
          r.group_id = run;
          r.started_wall_ms = canary.started_ms + run * 60'000 + side * 20'000 + i * 1000;
          r.kind = ProbeKind::Marker;
          r.task = "functional";
          r.workload_id = "functional/marker";
          r.outcome = side == 0 && i < 2 ? Outcome::Http5xx : Outcome::Clean;
          r.id = *(*st)->insert_probe_result(r);
          (side == 0 ? in.candidate_rows : in.baseline_rows).push_back(r);
        }
  }
  const auto want = sequential_evidence(in);
  REQUIRE(want.size() == 9);
  REQUIRE(want[8].name == "paired");
  REQUIRE(want[8].last.n == 16);
  std::string out;
  REQUIRE(f.run({"--db", f.db, "status", "--json"}, &out) == kCtlExitOk);
  auto j = nlohmann::json::parse(out);
  const auto& ms = j[1]["sequential"];
  REQUIRE(ms.size() == 9);
  CHECK(ms[7]["measure"] == "latency_slo");
  CHECK(ms[7]["n"] == 0);  // an interleaved baseline: nothing fixed at the stage's start
  CHECK(ms[8]["measure"] == "paired");
  CHECK(ms[8]["n"] == 16);
  CHECK(ms[8]["k"] == 16);
  CHECK(ms[8]["fraction"].get<double>() == Approx(want[8].fraction()));
}

TEST_CASE("soakctl status shows the notify command's last outcome and the host's thermal pressure") {
  Fixture f;
  const int64_t id = f.add("llama-b9502", "b9502", VerdictState::Rejected);
  {
    auto st = SqliteStore::open(f.db, OpenMode::ReadWrite);
    REQUIRE(st.ok());
    Event ok;
    ok.wall_ms = f.clock.wall_ms();
    ok.host_id = f.host;
    ok.candidate_id = id;
    ok.kind = EventKind::Notify;
    ok.detail_json = R"({"verdict":"running","stage":"smoke","outcome":"ok","detail":"curl exited with status 0"})";
    REQUIRE((*st)->insert_event(ok).ok());
    Event failed = ok;
    failed.wall_ms += 1000;
    failed.detail_json = R"({"verdict":"rejected","stage":"canary","outcome":"failed",)"
                         R"("detail":"curl exited with status 22"})";
    REQUIRE((*st)->insert_event(failed).ok());
    HostSample h;
    h.host_id = f.host;
    h.wall_ms = f.clock.wall_ms();
    h.thermal_level = static_cast<int>(ThermalLevel::Moderate);
    REQUIRE((*st)->insert_host_sample(h).ok());
  }
  std::string out;
  REQUIRE(f.run({"--db", f.db, "status"}, &out) == kCtlExitOk);
  INFO(out);
  // The latest outcome only.
  CHECK(out.find("notify (rejected, 2027-01-15T08:00:02Z): failed — curl exited with status 22") != std::string::npos);
  CHECK(out.find("status 0") == std::string::npos);
  CHECK(out.find("host thermal pressure: moderate (2027-01-15T08:00:01Z)") != std::string::npos);
  REQUIRE(f.run({"status", "--json", "--db", f.db}, &out) == kCtlExitOk);
  auto j = nlohmann::json::parse(out);
  CHECK(j[0]["notify"]["outcome"] == "failed");
  CHECK(j[0]["notify"]["verdict"] == "rejected");
}

TEST_CASE("soakctl verdict exit codes: 0 promoted, 1 rejected, 3 undecided, 4 unknown") {
  Fixture f;
  f.add("old", "b9430", VerdictState::Promoted);
  std::string out, err;
  CHECK(f.run({"--db", f.db, "verdict", "--model", "qwen3.6-35b-a3b", "--runtime", "llama.cpp"}, &out) == 0);
  CHECK(out.find("promoted") != std::string::npos);

  f.add("new", "b9502", VerdictState::Rejected);  // newest build wins without --build
  CHECK(f.run({"--db", f.db, "verdict", "--model", "qwen3.6-35b-a3b", "--runtime", "llama.cpp"}, &out) == 1);
  CHECK(out.find("stalled stream after HTTP 200") != std::string::npos);
  CHECK(f.run({"--db", f.db, "verdict", "--model", "qwen3.6-35b-a3b", "--runtime", "llama.cpp", "--build", "b9430"}) ==
        0);

  f.add("newer", "b9600", VerdictState::Hold);
  CHECK(f.run({"--db", f.db, "verdict", "--model", "qwen3.6-35b-a3b", "--runtime", "llama.cpp", "--json"}, &out) == 3);
  CHECK(nlohmann::json::parse(out)["verdict"]["state"] == "hold");
  f.add("newest", "b9700", std::nullopt);
  CHECK(f.run({"--db", f.db, "verdict", "--model", "qwen3.6-35b-a3b", "--runtime", "llama.cpp"}, &out) == 3);
  CHECK(out.find("no verdict yet") != std::string::npos);

  CHECK(f.run({"--db", f.db, "verdict", "--model", "nope", "--runtime", "llama.cpp"}, nullptr, &err) == 4);
  CHECK(err.find("no candidate with model \"nope\"") != std::string::npos);
  CHECK(f.run({"--db", f.db, "verdict", "--model", "x"}, nullptr, &err) == 2);
}

TEST_CASE("soakctl: clear messages for a missing store, a newer store, a bad command") {
  Fixture f;
  std::string err;
  CHECK(f.run({"--db", f.tmp.path() + "/nope.db", "status"}, nullptr, &err) == kCtlExitStore);
  CHECK(err.find("no soakd store at") != std::string::npos);

  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(f.db.c_str(), &db) == SQLITE_OK);
  std::string sql = "PRAGMA user_version = " + std::to_string(schema_version() + 7);
  REQUIRE(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr) == SQLITE_OK);
  sqlite3_close(db);
  CHECK(f.run({"--db", f.db, "status"}, nullptr, &err) == kCtlExitStore);
  CHECK(err.find("written by a newer soakd") != std::string::npos);

  CHECK(f.run({"--db", f.db, "frob"}, nullptr, &err) == kCtlExitUsage);
  CHECK(err.find("unknown command \"frob\"") != std::string::npos);
  CHECK(f.run({"--bogus", "status"}, nullptr, &err) == kCtlExitUsage);
  std::string out;
  CHECK(f.run({"--help"}, &out) == 0);
  CHECK(out.find("0 promoted, 1 rejected, 3 anything else") != std::string::npos);
}

TEST_CASE("soakctl finds the store through --config") {
  Fixture f;
  f.add("a", "b1", VerdictState::Promoted);
  std::string cfg = f.tmp.path() + "/soakd.json";
  std::ofstream(cfg)
      << R"({"store": "soakd.db", "candidates": [{"name": "a", "model": "m", "runtime": "llama.cpp", "base_url": "http://127.0.0.1:8080"}]})";
  std::string out;
  CHECK(f.run({"--config", cfg, "status"}, &out) == 0);
  CHECK(out.find("promoted") != std::string::npos);
}

TEST_CASE("soakctl --help lists exactly the options each command takes") {
  Fixture f;
  std::string help;
  REQUIRE(f.run({"--help"}, &help) == kCtlExitOk);
  for (const soakctl::Command* cmd : soakctl::commands()) {
    const std::string head = "  soakctl [STORE] " + std::string(cmd->name) + " ";
    auto at = help.find(head);
    INFO(cmd->name);
    REQUIRE(at != std::string::npos);
    const std::string line = help.substr(at, help.find('\n', at) - at);
    std::set<std::string> shown;
    for (auto p = line.find("--"); p != std::string::npos; p = line.find("--", p + 2)) {
      auto end = line.find_first_of(" ]", p);
      shown.insert(line.substr(p + 2, end - p - 2));
    }
    std::set<std::string> takes = cmd->args.flags;
    takes.insert(cmd->args.options.begin(), cmd->args.options.end());
    CHECK(shown == takes);
    CHECK((line.find("CANDIDATE") != std::string::npos && line.find("--candidate CANDIDATE") == std::string::npos) ==
          (cmd->operand != soakctl::Operand::None));
  }
  CHECK(help.find("llama.cpp, mlx-lm") != std::string::npos);  // --runtime's values
  CHECK(help.find("build_change") != std::string::npos);       // --kind's values
  CHECK(help.find("default " + std::to_string(soakctl::kDefaultEventLimit)) != std::string::npos);
}

TEST_CASE("soakctl usage errors name the fix") {
  Fixture f;
  f.add("llama-b9502", "b9502", VerdictState::Promoted);
  std::string out, err;
  CHECK(f.run({"--db", f.db, "frob"}, nullptr, &err) == kCtlExitUsage);
  CHECK(err.find(
            "one of: status, verdict, equivalence, explain, history, events, report, metrics, start, abort, promote") !=
        std::string::npos);

  // an option the command would ignore is refused, with the options it does take
  CHECK(f.run({"--db", f.db, "history", "llama-b9502", "--build", "b9502"}, nullptr, &err) == kCtlExitUsage);
  CHECK(err.find("--build does not apply to history (its options: --json;") != std::string::npos);
  CHECK(f.run({"--db", f.db, "abort", "llama-b9502", "--override"}, nullptr, &err) == kCtlExitUsage);
  CHECK(err.find("--override does not apply to abort") != std::string::npos);
  CHECK(f.run({"--db", f.db, "events", "llama-b9502"}, nullptr, &err) == kCtlExitUsage);
  CHECK(err.find("unexpected argument \"llama-b9502\"") != std::string::npos);
  CHECK(err.find("--candidate") != std::string::npos);
  for (const char* cmd : {"explain", "history", "start", "abort", "promote"}) {
    INFO(cmd);
    CHECK(f.run({"--db", f.db, cmd}, nullptr, &err) == kCtlExitUsage);
    CHECK(err.find("give exactly one CANDIDATE, a name as `soakctl status` lists it") != std::string::npos);
  }

  CHECK(f.run({"--db", f.db, "verdict", "--model", "qwen3.6-35b-a3b", "--runtime", "llamacpp"}, nullptr, &err) ==
        kCtlExitUsage);
  CHECK(err.find("unknown --runtime \"llamacpp\" (one of: llama.cpp,") != std::string::npos);
  CHECK(f.run({"--db", f.db, "verdict", "--runtime", "llama.cpp"}, nullptr, &err) == kCtlExitUsage);
  CHECK(err.find("needs --model M and --runtime R") != std::string::npos);
  CHECK(f.run({"--db", f.db, "history", "nope"}, nullptr, &err) == kCtlExitStore);
  CHECK(err.find("no candidate named \"nope\" in the store (soakctl status lists the candidates)") !=
        std::string::npos);
  CHECK(f.run({"--db", f.db, "promote", "llama-b9502", "--override"}, nullptr, &err) == kCtlExitUsage);
  CHECK(err.find("needs --override and --why TEXT") != std::string::npos);
}

TEST_CASE("every command that looks a candidate up by name says the same when the store has none") {
  Fixture f;
  f.add("llama-b9502", "b9502", VerdictState::Rejected);
  const std::string html = f.tmp.path() + "/x.html";
  auto says = [&](std::vector<std::string> args, const std::string& expected) {
    INFO(args[0]);
    args.insert(args.begin(), {"--db", f.db});
    std::string err;
    CHECK(f.run(args, nullptr, &err) == kCtlExitStore);
    CHECK(err == expected);
  };
  const std::string none = "soakctl: no candidate named \"nope\" in the store (soakctl status lists the candidates)\n";
  says({"explain", "nope"}, none);
  says({"history", "nope"}, none);
  says({"events", "--candidate", "nope"}, none);
  says({"report", "nope", "--html", html}, none);
  // With --build the same text names the build: a known name at an unknown build.
  const std::string at_build =
      "soakctl: no candidate named \"llama-b9502\" at build b1 in the store (soakctl status lists the candidates)\n";
  says({"explain", "llama-b9502", "--build", "b1"}, at_build);
  says({"report", "llama-b9502", "--build", "b1", "--html", html}, at_build);
  CHECK(soakctl::no_candidate_text("nope", std::nullopt) == none);
}

TEST_CASE("soakctl events --limit takes a whole positive number and shows the latest N") {
  Fixture f;
  {
    auto st = SqliteStore::open(f.db, OpenMode::ReadWrite);
    REQUIRE(st.ok());
    for (int i = 1; i <= 4; ++i) {
      Event e;
      e.wall_ms = f.clock.wall_ms() + i;
      e.kind = EventKind::Gap;
      e.detail_json = R"({"n":)" + std::to_string(i) + "}";
      REQUIRE((*st)->insert_event(e).ok());
    }
  }
  std::string out, err;
  REQUIRE(f.run({"--db", f.db, "events", "--limit", "2", "--json"}, &out) == kCtlExitOk);
  auto j = nlohmann::json::parse(out);
  REQUIRE(j.size() == 2);
  CHECK(j[0]["detail"]["n"] == 3);
  CHECK(j[1]["detail"]["n"] == 4);
  for (const char* bad : {"0", "-3", "2x", "many", ""}) {
    INFO(bad);
    CHECK(f.run({"--db", f.db, "events", "--limit", bad}, nullptr, &err) == kCtlExitUsage);
    CHECK(err.find("is not a positive whole number (e.g. --limit 200)") != std::string::npos);
  }
}

// A canary that ran nothing, judged against a history baseline of `baseline_rows`
// rows before it (what explain's count must see without an id of the canary's own).
void judged_empty_canary_against_history(Fixture& f, int baseline_rows) {
  const int64_t base = f.add("base", "b1", std::nullopt);
  const int64_t cand = f.add("cand", "b2", std::nullopt);
  auto st = SqliteStore::open(f.db, OpenMode::ReadWrite);
  REQUIRE(st.ok());
  Store& s = **st;
  const int64_t t0 = f.clock.wall_ms();
  REQUIRE(sqlite3_exec((*st)->db(), "BEGIN", nullptr, nullptr, nullptr) == SQLITE_OK);
  for (int i = 0; i < baseline_rows; ++i) {
    ProbeResult r;
    r.candidate_id = base;
    r.host_id = f.host;
    r.started_wall_ms = t0 - 3'600'000 + i * 100;  // the hour before the canary
    r.kind = ProbeKind::Marker;
    r.outcome = Outcome::Clean;
    if (!s.insert_probe_result(r).ok()) FAIL("insert_probe_result");
  }
  REQUIRE(sqlite3_exec((*st)->db(), "COMMIT", nullptr, nullptr, nullptr) == SQLITE_OK);
  StageRow stage;
  stage.candidate_id = cand;
  stage.kind = StageKind::Canary;
  stage.state = StageState::Inconclusive;
  stage.started_ms = t0;
  stage.length_ms = 2 * 3'600'000;
  stage.deadline_ms = t0 + stage.length_ms;
  stage.ended_ms = stage.deadline_ms;
  StoredRecipe r;
  r.recipe.stage = StageKind::Canary;
  r.recipe.candidate_id = cand;
  r.recipe.host_id = f.host;
  r.recipe.stage_id = *s.insert_stage(stage);
  r.recipe.now_ms = *stage.ended_ms;
  r.recipe.baseline_mode = BaselineMode::History;
  r.recipe.baseline_id = base;
  r.rows.since_ms = t0;
  r.rows.until_ms = *stage.ended_ms;
  r.rows.baseline_since_ms = t0 - 30LL * 86'400'000;
  r.rows.baseline_until_ms = t0;
  r.rows.max_ids = *s.max_ids();
  auto v = judge_from_store(s, r);
  REQUIRE(v.ok());
  REQUIRE(v->evidence_first_id == 0);  // none of its own
  REQUIRE(s.insert_verdict(*v).ok());
}

TEST_CASE("soakctl explain counts a history baseline's rows for a stage with none of its own") {
  std::string out, err;
  SECTION("a long history: shown as judged") {
    Fixture f;
    judged_empty_canary_against_history(f, 9000);
    CHECK(f.run({"--db", f.db, "explain", "cand"}, &out, &err) == kCtlExitOk);
    INFO(out << err);
    CHECK(out.find("shown as judged: its 0 probe rows and about 9000 of its baseline's") != std::string::npos);
    CHECK(f.run({"--db", f.db, "explain", "cand", "--recompute"}, &out, &err) == kCtlExitOk);
    CHECK(out.find("recomputed from the stored rows: identical") != std::string::npos);
  }
  SECTION("a short one: judged again at once") {
    Fixture f;
    judged_empty_canary_against_history(f, 100);
    CHECK(f.run({"--db", f.db, "explain", "cand"}, &out, &err) == kCtlExitOk);
    INFO(out << err);
    CHECK(out.find("recomputed from the stored rows: identical") != std::string::npos);
  }
}

TEST_CASE("soakctl explain --json answers in JSON when nothing is judged yet") {
  Fixture f;
  f.add("by-hand", "b1", VerdictState::Promoted);  // a verdict with no judge recipe, as an override has
  f.add("fresh", "b1", std::nullopt);
  std::string out;
  REQUIRE(f.run({"--db", f.db, "explain", "by-hand", "--json"}, &out) == kCtlExitOk);
  auto j = nlohmann::json::parse(out);
  CHECK(j["candidate"] == "by-hand");
  CHECK(j["build"] == "b1");
  CHECK(j["verdict"].is_null());
  CHECK(j["recomputed"].is_null());
  CHECK(j["metrics"].empty());
  CHECK(j["latest"]["state"] == "promoted");
  REQUIRE(f.run({"--db", f.db, "explain", "fresh", "--json"}, &out) == kCtlExitOk);
  j = nlohmann::json::parse(out);
  CHECK(j["verdict"].is_null());
  CHECK(!j.contains("latest"));
  REQUIRE(f.run({"--db", f.db, "explain", "fresh"}, &out) == kCtlExitOk);  // the text answer is unchanged
  CHECK(out == "fresh (qwen3.6-35b-a3b on llama.cpp at b1): no verdict yet\n");
}

namespace {

// Columns a line takes on a terminal: code points, escape sequences left out.
size_t visible_columns(const std::string& line) {
  size_t n = 0;
  for (size_t i = 0; i < line.size(); ++i) {
    if (line[i] == '\033') {
      while (i < line.size() && line[i] != 'm') ++i;
      continue;
    }
    n += (static_cast<unsigned char>(line[i]) & 0xC0) != 0x80;
  }
  return n;
}

std::vector<std::string> lines_of(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

// Two candidates: a canary a quarter done, and a rejected one with a reason far longer than a line.
void status_store(Fixture& f) {
  StageRow canary;
  canary.kind = StageKind::Canary;
  canary.state = StageState::Running;
  canary.started_ms = f.clock.wall_ms() - 30 * 60'000;
  canary.length_ms = 2 * 3600'000;
  canary.deadline_ms = canary.started_ms + canary.length_ms;
  f.add("llama-b9502-with-a-rather-long-name", "b9502-64f7e03deadbeef-and-more", VerdictState::Running, canary);
  const int64_t id = f.add("omlx-35b", "0.3.1", std::nullopt);
  auto st = SqliteStore::open(f.db, OpenMode::ReadWrite);
  REQUIRE(st.ok());
  VerdictRow v;
  v.candidate_id = id;
  v.wall_ms = f.clock.wall_ms();
  v.state = VerdictState::Rejected;
  v.stage = "smoke";
  v.reason =
      "smoke rejected: hard failure, hung_stream: 3 row(s) (53, 78, 111), first stalled at probe stream: no "
      "content event for 120 s after HTTP 200 while keep-alive chunks kept arriving; identity_mismatch: 2 "
      "row(s) (54, 79), first answered as qwen-alias; the-final-words-that-never-fit";
  v.judge_version = "judge-1";
  REQUIRE((*st)->insert_verdict(v).ok());
}

}  // namespace

TEST_CASE("soakctl status fits 80 columns when piped, without colour; long reasons end in an ellipsis") {
  Fixture f;
  status_store(f);
  std::string out;
  REQUIRE(f.run({"--db", f.db, "status"}, &out) == kCtlExitOk);  // not a terminal
  INFO(out);
  CHECK(out.find('\033') == std::string::npos);
  for (const auto& line : lines_of(out)) {
    INFO(line);
    CHECK(visible_columns(line) <= 80);
  }
  CHECK(out.find("[###.......] 25%") != std::string::npos);
  CHECK(out.find("llama-b9502-with-a-…") != std::string::npos);  // names cut to their column
  std::string joined = out;  // the reason's wrapped lines joined again (each continues after 4 spaces)
  for (size_t at; (at = joined.find("\n    ")) != std::string::npos;) joined.replace(at, 5, " ");
  CHECK(joined.find("hung_stream: 3 row(s) (53, 78, 111)") != std::string::npos);
  CHECK(out.find("…\n") != std::string::npos);  // the reason's end is cut
  CHECK(out.find("the-final-words-that-never-fit") == std::string::npos);
  CHECK(out.find("qwen3.6-35b-a3b on llama.cpp") != std::string::npos);
}

TEST_CASE("soakctl status on a terminal: colours unless NO_COLOR, the terminal's width") {
  Fixture f;
  status_store(f);
  std::string out;
  REQUIRE(f.run({"--db", f.db, "status"}, &out, nullptr, Terminal{true, 80, false}) == kCtlExitOk);
  INFO(out);
  CHECK(out.find("\033[1;31mrejected") != std::string::npos);  // red
  CHECK(out.find("\033[36m###\033[0m.......] 25%") != std::string::npos);
  for (const auto& line : lines_of(out)) CHECK(visible_columns(line) <= 80);

  REQUIRE(f.run({"--db", f.db, "status"}, &out, nullptr, Terminal{true, 80, true}) == kCtlExitOk);  // NO_COLOR
  CHECK(out.find('\033') == std::string::npos);

  std::string wide;
  REQUIRE(f.run({"--db", f.db, "status"}, &wide, nullptr, Terminal{true, 160, true}) == kCtlExitOk);
  size_t widest = 0;
  for (const auto& line : lines_of(wide)) {
    CHECK(visible_columns(line) <= 160);
    widest = std::max(widest, visible_columns(line));
  }
  CHECK(widest > 80);
  CHECK(wide.find("b9502-64f7e03deadbeef-and-more") != std::string::npos);  // room for the whole build
  CHECK(wide.find("the-final-words-that-never-fit") != std::string::npos);  // and the whole reason
}
