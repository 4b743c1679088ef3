// Fair heavy work across candidates in virtual time (docs/DESIGN.md §3.7): 20
// candidates in canary at once on one host, heavy work one at a time, each
// served in the order its heavy work became due; none ends "0 of 0 clean".
#include <algorithm>
#include <map>
#include <string>

#include "tests/catch.h"
#include "tests/support/sim_world.h"

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
