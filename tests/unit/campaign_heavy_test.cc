// Fair heavy work across candidates in virtual time (docs/DESIGN.md §3.7): 20
// candidates in canary at once on one host, heavy work one at a time, each
// served in the order its heavy work became due; none ends "0 of 0 clean".
#include <algorithm>
#include <map>
#include <string>

#include "campaigns/recipe_store.h"
#include "tests/catch.h"
#include "tests/support/sim_world.h"
#include "tests/support/temp_dir.h"

using namespace soak;
using namespace soak::sim;

namespace {

constexpr int kCanaries = 20;

std::string name_of(int i) { return "c" + std::string(i < 10 ? "0" : "") + std::to_string(i); }

// The world's config with `schedule` replaced (the rest as every simulation has it).
void reconfigure(World& w, const std::string& candidates, const std::string& schedule,
                 const std::string& more_defaults = "") {
  std::string defaults = kSimDefaults;
  const std::string old = R"("schedule": { "nightly_window": "now", "max_concurrent_canaries": 4 },)";
  const auto at = defaults.find(old);
  REQUIRE(at != std::string::npos);
  defaults.replace(at, old.size(), "\"schedule\": " + schedule + ",");
  const std::string open = R"("defaults": {)";
  defaults.replace(defaults.find(open), open.size(), open + more_defaults);
  auto c = parse_config("{" + defaults + R"("candidates": [)" + candidates + "]}", "sim.json", w.tmp.path());
  INFO((c.ok() ? "" : c.message()));
  REQUIRE(c.ok());
  w.cfg = std::make_shared<const Config>(std::move(*c));
  w.start();
}

struct CanaryRows {
  int64_t long_context = 0, burst = 0, prefix = 0;
};

CanaryRows canary_rows(World& w, const std::string& name) {
  CanaryRows out;
  for (const auto& st : w.stages(name)) {
    if (st.kind != StageKind::Canary) continue;
    ProbeQuery q;
    q.stage_id = st.id;
    for (const auto& r : *w.store->probe_results(q)) {
      if (r.kind == ProbeKind::LongContext) ++out.long_context;
      if (r.kind == ProbeKind::Burst) ++out.burst;
      if (r.kind == ProbeKind::SharedPrefix) ++out.prefix;
    }
  }
  return out;
}

}  // namespace

TEST_CASE("20 candidates in canary at once each get their heavy rows, one heavy task at a time") {
  std::string cands;
  for (int i = 0; i < kCanaries; ++i) cands += (i ? "," : "") + candidate(name_of(i), 18500 + i);
  World w(candidate("placeholder", 18499));
  // Without the golden set: its opening run holds each canary's other heavy
  // work until it has run, and twenty of them one after another would take
  // the first hour; what is tested here is the periodic heavy work's turns.
  reconfigure(w, cands, R"({ "nightly_window": "now", "max_concurrent_canaries": 20 })",
              R"("equivalence": {"enabled": false},)");
  // A slower host: the canaries' heavy work together asks for more than the
  // two hours hold, so the order it is served in decides who gets any.
  for (int i = 0; i < kCanaries; ++i) w.runner->at(name_of(i)).speed = 3;
  // Smoke, the canary with its grace, and a margin: every canary has ended.
  w.run(4 * kHour, nullptr, World::UntilSettled::GoOn);

  std::map<std::string, CanaryRows> rows;
  for (int i = 0; i < kCanaries; ++i) {
    const std::string n = name_of(i);
    auto st = w.stages(n);
    REQUIRE(st.size() >= 2);
    REQUIRE(st[1].kind == StageKind::Canary);
    CHECK(st[1].ended_ms.has_value());
    rows[n] = canary_rows(w, n);
    INFO(n << ": " << rows[n].long_context << " long-context, " << rows[n].burst << " burst, " << rows[n].prefix
           << " prefix-reuse rows");
    CHECK(rows[n].long_context > 0);
    CHECK(rows[n].burst > 0);
    CHECK(rows[n].prefix > 0);
    // The canary's verdict never reads "0 of 0".
    for (const auto& v : *w.store->verdicts(w.row(n)->id))
      if (v.stage == "canary") CHECK(v.reason.find("0 of 0") == std::string::npos);
  }
  CHECK(w.runner->max_concurrent_heavy() == 1);
  // Fair, not just non-zero: the best-served canary got at most a few times the worst's long-context rows.
  int64_t lo = INT64_MAX, hi = 0;
  for (const auto& [n, r] : rows) {
    lo = std::min(lo, r.long_context);
    hi = std::max(hi, r.long_context);
  }
  CHECK(hi <= 3 * lo);
}

TEST_CASE("a canary's heavy rows never overlap another candidate's traffic: the gate's turns wait") {
  // One canary at a time: "a" runs its gate (agent turns back to back) while "b" runs its canary.
  World w(candidate("placeholder", 18499));
  reconfigure(w, candidate("a", 18431) + "," + candidate("b", 18432),
              R"({ "nightly_window": "now", "max_concurrent_canaries": 1 })");
  w.run(6 * kHour, nullptr, World::UntilSettled::GoOn);
  auto b_stages = w.stages("b");
  REQUIRE(b_stages.size() >= 2);
  const StageRow canary = b_stages[1];
  REQUIRE(canary.kind == StageKind::Canary);
  REQUIRE(canary.ended_ms);

  auto span = [](const ProbeResult& r) {
    return std::pair<int64_t, int64_t>{r.started_wall_ms,
                                       r.started_wall_ms + std::max<int64_t>(5, r.t_done_us.value_or(5000) / 1000)};
  };
  ProbeQuery qb;
  qb.stage_id = canary.id;
  std::vector<std::pair<int64_t, int64_t>> heavy;
  for (const auto& r : *w.store->probe_results(qb))
    if (r.kind == ProbeKind::LongContext || r.kind == ProbeKind::Burst || r.kind == ProbeKind::SharedPrefix ||
        r.kind == ProbeKind::Capacity)
      heavy.push_back(span(r));
  REQUIRE_FALSE(heavy.empty());

  ProbeQuery qa;
  qa.candidate_id = w.row("a")->id;
  qa.since_ms = canary.started_ms;
  qa.until_ms = *canary.ended_ms;
  int64_t turns = 0, overlapping = 0;
  for (const auto& r : *w.store->probe_results(qa)) {
    if (r.kind != ProbeKind::Agent) continue;
    ++turns;
    const auto o = span(r);
    for (const auto& h : heavy)
      if (o.first < h.second && h.first < o.second) ++overlapping;
  }
  INFO(turns << " gate turns of a during b's canary, " << heavy.size() << " heavy rows of b");
  CHECK(turns > 0);  // the gate's traffic went on between the canary's heavy runs
  CHECK(overlapping == 0);
}

TEST_CASE("a canary's judge input marks its rows that overlapped another candidate's heavy work on its host") {
  TempDir tmp;
  auto opened = SqliteStore::open(tmp.path() + "/s.db", OpenMode::ReadWrite, Durability::Fast);
  REQUIRE(opened.ok());
  SqliteStore& st = **opened;
  const int64_t t0 = 1'767'225'600'000;
  const int64_t here = *st.upsert_host(HostInfo{"studio", "Mac15,14", 1, "macOS"}, t0);
  const int64_t there = *st.upsert_host(HostInfo{"studio-2", "Mac15,14", 1, "macOS"}, t0);
  auto candidate = [&](const std::string& name, int64_t host) {
    CandidateRow c;
    c.host_id = host;
    c.name = name;
    c.model = "qwen3.6-35b-a3b";
    c.runtime = RuntimeKind::LlamaCpp;
    c.build = "b1";
    c.base_url = "http://127.0.0.1:8080";
    return *st.upsert_candidate(c, t0);
  };
  const int64_t cand = candidate("cand", here), base = candidate("base", here), other = candidate("other", here),
                far = candidate("far", there);
  StageRow stage;
  stage.candidate_id = cand;
  stage.kind = StageKind::Canary;
  stage.state = StageState::Passed;
  stage.started_ms = t0;
  stage.length_ms = 2 * kHour;
  stage.deadline_ms = stage.ended_ms.emplace(t0 + stage.length_ms);
  const int64_t stage_id = *st.insert_stage(stage);
  auto row = [&](int64_t candidate_id, int64_t host, ProbeKind kind, int64_t start_s, int64_t secs,
                 std::optional<int64_t> in_stage = std::nullopt) {
    ProbeResult r;
    r.candidate_id = candidate_id;
    r.host_id = host;
    r.stage_id = in_stage;
    r.kind = kind;
    r.outcome = Outcome::Clean;
    r.started_wall_ms = t0 + start_s * 1000;
    r.t_done_us = secs * 1'000'000;
    REQUIRE(st.insert_probe_result(r).ok());
  };
  // The canary's timed rows at 1 s, 20 s and 40 s, 5 s each.
  for (int64_t s : {1, 20, 40}) row(cand, here, ProbeKind::Marker, s, 5, stage_id);
  row(base, here, ProbeKind::Burst, 0, 10);         // its own baseline's: the canary's design
  row(other, here, ProbeKind::LongContext, 19, 3);  // another candidate's, on its host
  row(far, there, ProbeKind::Capacity, 39, 10);     // another host's
  StoredRecipe r;
  r.recipe.stage = StageKind::Canary;
  r.recipe.candidate_id = cand;
  r.recipe.host_id = here;
  r.recipe.stage_id = stage_id;
  r.recipe.now_ms = *stage.ended_ms;
  r.recipe.baseline_mode = BaselineMode::Interleaved;
  r.recipe.baseline_id = base;
  r.rows.since_ms = r.rows.baseline_since_ms = t0;
  r.rows.until_ms = r.rows.baseline_until_ms = *stage.ended_ms;
  r.rows.max_ids = *st.max_ids();
  auto in = build_judge_input(st, r);
  REQUIRE(in.ok());
  REQUIRE(in->candidate_rows.size() == 3);
  std::map<int64_t, bool> overlapped;
  for (const auto& c : in->candidate_rows) overlapped[(c.started_wall_ms - t0) / 1000] = c.overlapped_heavy;
  CHECK(overlapped == std::map<int64_t, bool>{{1, false}, {20, true}, {40, false}});
}
