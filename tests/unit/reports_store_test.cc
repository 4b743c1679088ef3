// Reports and metrics built from a demo-like store (tests/support/demo_store.h:
// whole campaigns simulated in virtual time): the charts draw the judges' own
// numbers, reasons link to rows that are in the page, the metrics collector
// reads incrementally what a fresh one reads at once, and soakctl writes both.
#include <sqlite3.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "campaigns/recipe_store.h"
#include "reports/html.h"
#include "reports/model.h"
#include "reports/page.h"
#include "reports/textfile.h"
#include "soakctl/common.h"
#include "soakctl/soakctl.h"
#include "storage/sqlite_store.h"
#include "tests/catch.h"
#include "tests/support/demo_store.h"
#include "tests/support/sim_world.h"
#include "tests/support/temp_dir.h"

using namespace soak;
using namespace soak::report;

namespace {

struct Demo {
  TempDir tmp;
  DemoStore demo;
  Demo() {
    auto d = build_demo_store(tmp.path());
    INFO((d.ok() ? "" : d.message()));
    REQUIRE(d.ok());
    demo = *d;
  }
};

// Built once for the whole program: campaigns of four candidates over a week.
const Demo& demo() {
  static Demo d;
  return d;
}

std::unique_ptr<SqliteStore> open_ro(const std::string& path) {
  auto st = SqliteStore::open(path, OpenMode::ReadOnly);
  REQUIRE(st.ok());
  return std::move(*st);
}

CandidateRow row_of(Store& st, const std::string& name) {
  for (const auto& c : *st.candidates())
    if (c.name == name) return c;
  FAIL("no candidate " << name);
  return {};
}

JudgedSource source(Store& st) {
  return [&st](const VerdictRow& v) -> Result<std::optional<JudgedStage>> {
    auto recipe = recipe_from_json(v.judge_input_json);
    if (!recipe) return std::optional<JudgedStage>{};
    auto input = build_judge_input(st, *recipe);
    if (!input) return input.error();
    JudgedStage j;
    j.recomputed = judge_stage(*input);
    j.identical = soakctl::same_verdict(v, j.recomputed);
    j.input = std::move(*input);
    return std::optional<JudgedStage>(std::move(j));
  };
}

std::string read_file(const std::string& p) {
  std::ifstream f(p);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

}  // namespace

TEST_CASE("report of a regression: candidate beside baseline from the canary's own rows, deciding metrics first") {
  auto st = open_ro(demo().demo.path);
  const CandidateRow c = row_of(*st, "llama-b9502");
  auto rep = build_candidate_report(*st, c, demo().demo.end_ms, source(*st));
  REQUIRE(rep.ok());
  REQUIRE(rep->latest);
  CHECK(rep->latest->state == VerdictState::Rejected);
  CHECK(rep->perf_stage == "canary");
  CHECK(rep->baseline_mode == "interleaved");
  REQUIRE(rep->baseline);
  CHECK(rep->baseline->name == "llama-b9430");
  REQUIRE(!rep->perf.empty());
  // Failed metrics come first, and what failed is the decode rate or the latency it drags.
  REQUIRE(rep->perf.front().evidence);
  CHECK(rep->perf.front().evidence->result == MetricResult::Fail);
  bool decode_failed = false;
  for (const auto& g : rep->perf) {
    CHECK(g.cand_points.size() <= kStripPoints);
    if (g.figure == "decode_tps" && g.evidence && g.evidence->result == MetricResult::Fail) {
      decode_failed = true;
      // The strip shows the judge's samples: its median is the stored estimate.
      CHECK(g.cand.median == Approx(g.evidence->estimate));
      CHECK(g.base.median == Approx(g.evidence->baseline));
      CHECK(g.cand.n == g.evidence->n);
      CHECK(g.base.n == g.evidence->n_baseline);
    }
  }
  CHECK(decode_failed);
  bool seen_pass = false;
  for (const auto& g : rep->perf) {
    if (g.evidence && g.evidence->result == MetricResult::Pass) seen_pass = true;
    if (seen_pass) CHECK((!g.evidence || g.evidence->result != MetricResult::Fail));
  }
  REQUIRE(!rep->judged.empty());
  CHECK(rep->judged.front().identical == std::optional<bool>(true));
  const std::string html = render_candidate(*rep);
  CHECK(html.find("id=\"perf-decode_tps\"") != std::string::npos);
  CHECK(html.find("id=\"perf-ttft_ms\"") != std::string::npos);
  // Deciding first: decode rate (failed) is drawn before TTFT (passed).
  CHECK(html.find("id=\"perf-decode_tps\"") < html.find("id=\"perf-ttft_ms\""));
  CHECK(html.find("id=\"ladder\"") != std::string::npos);
  CHECK(html.find("id=\"bursts\"") != std::string::npos);
}

TEST_CASE("report of a leak: the trend line is the soak judge's Theil–Sen fit, with its interval") {
  auto st = open_ro(demo().demo.path);
  const CandidateRow c = row_of(*st, "mlx-leak");
  auto rep = build_candidate_report(*st, c, demo().demo.end_ms, source(*st));
  REQUIRE(rep.ok());
  REQUIRE(rep->latest);
  CHECK(rep->latest->state == VerdictState::Rejected);
  CHECK(rep->latest->stage == "soak");
  REQUIRE(rep->memory);
  CHECK(rep->memory->stage == "soak");
  CHECK(rep->memory->footprint.size() <= static_cast<size_t>(kTimeBuckets));
  CHECK(rep->memory->footprint.size() > 100);
  REQUIRE(rep->memory->trend);
  const TrendView& t = *rep->memory->trend;
  REQUIRE(t.stored);
  // The same numbers the judge stored, not a second estimate.
  CHECK(t.slope == t.stored->estimate);
  CHECK(t.lo == t.stored->lo);
  CHECK(t.hi == t.stored->hi);
  CHECK(t.stored->result == MetricResult::Fail);
  CHECK(t.lo > t.bound);
  CHECK(t.block_x_h.size() == 168);
  REQUIRE(rep->pressure);
  bool critical = false;
  for (const auto& b : rep->pressure->level) critical |= b.max >= 4;
  CHECK(critical);
  const std::string html = render_candidate(*rep);
  CHECK(html.find("class=\"trend line\"") != std::string::npos);
  CHECK(html.find("id=\"pressure\"") != std::string::npos);
  CHECK(html.find("level critical") != std::string::npos);
  CHECK(html.size() < 2'000'000);
}

namespace {

// The ladder's reach mark against what the judge and soakctl say of the same
// canary: the report's reach must be judged_context_reach() of the canary it
// shows, which is also the store's context_reach row (soakctl status).
void check_reach_is_the_judges(sim::World& w, int64_t expected, const std::string& status_label) {
  const std::string db = w.tmp.path() + "/s.db";
  auto st = open_ro(db);
  const CandidateRow c = row_of(*st, "cand");
  auto rep = build_candidate_report(*st, c, w.clock.wall_ms(), source(*st));
  REQUIRE(rep.ok());
  REQUIRE(rep->context_reach);
  CHECK(*rep->context_reach == expected);
  auto stored = st->context_reach(c.id);
  REQUIRE(stored.ok());
  REQUIRE(*stored);
  CHECK((*stored)->reach_tokens == *rep->context_reach);
  const VerdictRow* canary = nullptr;
  for (const auto& jv : rep->judged)
    if (jv.stored.stage == "canary") canary = &jv.stored;
  REQUIRE(canary);
  auto judged = source(*st)(*canary);
  REQUIRE(judged.ok());
  REQUIRE(*judged);
  auto reach = judged_context_reach((*judged)->input);
  REQUIRE(reach);
  CHECK(reach->reach_tokens == *rep->context_reach);
  CHECK(render_candidate(*rep).find("context reach: " + std::to_string(expected) + " tokens") != std::string::npos);
  std::ostringstream out, err;
  CHECK(soakctl_main({"--db", db, "status"}, out, err, w.clock) == kCtlExitOk);
  CHECK(out.str().find(status_label) != std::string::npos);
}

}  // namespace

// The largest size fails with HTTP 500: nothing is refused as too long, yet
// the canary reached only 1K of 32K (a reach read off refusals drew no mark).
TEST_CASE("report: the ladder marks the canary judge's reach when the largest size fails with HTTP 500") {
  sim::World w(sim::candidate("cand", 18432));
  w.runner->at("cand").behaviour = Behaviour::LargestFails;
  w.run(10 * kDay);
  REQUIRE(w.verdict("cand")->stage == "canary");
  check_reach_is_the_judges(w, 1024, "[reach 1K/32K]");
}

// A canary that reached 32K, then the runtime relaunched with a smaller
// context and a second canary that holds at 1K: the candidate's rows still
// hold the first canary's clean 32K prompts, but the reach is the second
// canary's (a reach read off all rows said 32K).
TEST_CASE("report: the ladder marks the latest canary's reach, not the best the candidate's rows ever showed") {
  sim::World w(sim::candidate("cand", 18432));
  w.run(kDay,
        [&] { return w.row("cand") && !w.stages("cand").empty() && w.stages("cand").back().kind == StageKind::Gate; });
  const std::string db = w.tmp.path() + "/s.db";
  std::ostringstream out, err;
  REQUIRE(soakctl_main({"--db", db, "abort", "cand", "--who", "ops", "--why", "relaunch with -c 8192"}, out, err,
                       w.clock) == kCtlExitOk);
  w.control_tick();
  w.runner->at("cand").behaviour = Behaviour::ContextLimit;
  w.runner->at("cand").runtime_ctx = 8192;
  REQUIRE(soakctl_main({"--db", db, "start", "cand"}, out, err, w.clock) == kCtlExitOk);
  w.control_tick();
  w.run(10 * kDay);
  auto v = w.verdict("cand");
  REQUIRE(v);
  CHECK(v->state == VerdictState::Hold);
  CHECK(v->reason.find("context reach 1K, configured 32K") != std::string::npos);
  {
    auto st = open_ro(db);
    auto rep = build_candidate_report(*st, row_of(*st, "cand"), w.clock.wall_ms(), source(*st));
    REQUIRE(rep.ok());
    bool clean_32k = false;
    for (const auto& p : rep->ladder) clean_32k = clean_32k || (p.size == 32768 && p.ttft_ms.n > 0);
    CHECK(clean_32k);  // the first canary's rows are on the ladder
  }
  check_reach_is_the_judges(w, 1024, "[reach 1K/32K]");
}

// Every configured size served: no mark.
TEST_CASE("report: no reach mark when the canary reached every configured size") {
  auto st = open_ro(demo().demo.path);
  auto rep = build_candidate_report(*st, row_of(*st, "llama-b9430"), demo().demo.end_ms, source(*st));
  REQUIRE(rep.ok());
  CHECK(!rep->context_reach);
  CHECK(render_candidate(*rep).find("context reach:") == std::string::npos);
}

TEST_CASE("report of a hung stream: every row the verdict cites is in the rows table, linked") {
  auto st = open_ro(demo().demo.path);
  const CandidateRow c = row_of(*st, "omlx-35b");
  auto rep = build_candidate_report(*st, c, demo().demo.end_ms, source(*st));
  REQUIRE(rep.ok());
  REQUIRE(rep->latest);
  CHECK(rep->latest->state == VerdictState::Rejected);
  const auto cited = cited_ids(rep->latest->reason).rows;
  REQUIRE(!cited.empty());
  const std::string html = render_candidate(*rep);
  for (int64_t id : cited) {
    INFO("row " << id);
    CHECK(rep->row_ids.count(id) == 1);
    CHECK(html.find("<tr id=\"row-" + std::to_string(id) + "\">") != std::string::npos);
    CHECK(html.find("href=\"#row-" + std::to_string(id) + "\"") != std::string::npos);
  }
  for (const auto& r : rep->rows) CHECK(r.candidate_id == c.id);
  // The host-wide gap and the control event are on the timeline.
  bool gap = false, control = false;
  for (const auto& e : rep->timeline.events) gap |= e.kind == EventKind::Gap, control |= e.kind == EventKind::Control;
  CHECK(control);
  CHECK_FALSE(gap);  // omlx's life ended before the gap on day 4
}

TEST_CASE("metrics: a collector refreshed as the store grows says what a fresh one says") {
  TempDir tmp;
  const std::string copy = tmp.path() + "/soakd.db";
  std::filesystem::copy_file(demo().demo.path, copy);
  auto st = SqliteStore::open(copy, OpenMode::ReadWrite, Durability::Fast);
  REQUIRE(st.ok());
  SqliteStore& store = **st;
  MetricsOptions o{10 * 60'000, "test"};
  TextfileCollector running(o);
  int64_t now = demo().demo.end_ms;
  REQUIRE(running.refresh(store, now).ok());

  // More rows of every kind the collector reads, then both refresh.
  const CandidateRow c = row_of(store, "llama-b9430");
  auto stages = *store.stages(c.id);
  ProbeResult r;
  r.candidate_id = c.id;
  r.host_id = c.host_id;
  r.stage_id = stages.back().id;
  r.started_wall_ms = now;
  r.kind = ProbeKind::Agent;
  r.workload_id = "agent/soak";
  r.outcome = Outcome::Clean;
  r.t_first_token_us = 123'000;
  r.client_decode_tps = 41.5;
  REQUIRE(store.insert_probe_result(r).ok());
  r.outcome = Outcome::Stalled;
  REQUIRE(store.insert_probe_result(r).ok());
  // A scrape row with the runtime's own queue (llama.cpp /metrics
  // requests_processing / requests_deferred), then an older one that must not win.
  ProbeResult scrape;
  scrape.candidate_id = c.id;
  scrape.host_id = c.host_id;
  scrape.stage_id = stages.back().id;
  scrape.started_wall_ms = now;
  scrape.kind = ProbeKind::Scrape;
  scrape.workload_id = "scrape";
  scrape.outcome = Outcome::Clean;
  scrape.server_running = 1;
  scrape.server_waiting = 3;
  REQUIRE(store.insert_probe_result(scrape).ok());
  scrape.started_wall_ms = now - 60'000;
  scrape.server_waiting = 9;
  REQUIRE(store.insert_probe_result(scrape).ok());
  Event trip;
  trip.wall_ms = now;
  trip.kind = EventKind::GuardTrip;
  trip.detail_json = "{}";
  REQUIRE(store.insert_event(trip).ok());
  ProcessSample p;
  p.host_id = c.host_id;
  p.candidate_id = c.id;
  p.wall_ms = now + 1000;
  p.pid = 4242;
  p.footprint_bytes = 21'000'000'000;
  REQUIRE(store.insert_process_sample(p).ok());
  now += 2000;
  REQUIRE(running.refresh(store, now).ok());
  TextfileCollector fresh(o);
  REQUIRE(fresh.refresh(store, now).ok());
  const std::string text = running.render(now);
  CHECK(text == fresh.render(now));

  CHECK(text.find("soakd_guard_tripped 1\n") != std::string::npos);
  const std::string b9430 =
      "{candidate=\"llama-b9430\",model=\"qwen3.6-35b-a3b\",runtime=\"llama.cpp\",build=\"b9430-5bec3532f\"}";
  CHECK(text.find("soakd_runtime_requests_running" + b9430 + " 1\n") != std::string::npos);
  CHECK(text.find("soakd_runtime_requests_waiting" + b9430 + " 3\n") != std::string::npos);
  // Five minutes on, the queue is no longer current: left out, like a process sample.
  CHECK(running.render(now + 6 * 60'000).find("soakd_runtime_requests_waiting{") == std::string::npos);
  CHECK(text.find(
            "soakd_process_footprint_bytes{candidate=\"llama-b9430\",model=\"qwen3.6-35b-a3b\",runtime=\"llama.cpp\","
            "build=\"b9430-5bec3532f\"} 21000000000\n") != std::string::npos);
  CHECK(text.find("soakd_candidate_verdict{candidate=\"llama-b9502\",model=\"qwen3.6-35b-a3b\",runtime=\"llama.cpp\","
                  "build=\"b9502-64f7e03\",verdict=\"rejected\"} 1\n") != std::string::npos);
  CHECK(text.find("soakd_candidate_verdict{candidate=\"llama-b9430\",model=\"qwen3.6-35b-a3b\",runtime=\"llama.cpp\","
                  "build=\"b9430-5bec3532f\",verdict=\"promoted\"} 1\n") != std::string::npos);

  // Counters add up to the rows in the store.
  std::map<std::string, int64_t> per_candidate;
  int64_t total = 0;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("soakd_probe_results_total{", 0) != 0) continue;
    total += std::stoll(line.substr(line.rfind(' ') + 1));
  }
  CHECK(total == store.max_ids()->probe);
}

TEST_CASE("metrics: the running stage's sequential evidence per measure, as the judges compute it") {
  TempDir tmp;
  auto st = SqliteStore::open(tmp.path() + "/soakd.db", OpenMode::ReadWrite, Durability::Fast);
  REQUIRE(st.ok());
  SqliteStore& store = **st;
  const int64_t host = *store.upsert_host(HostInfo{"studio", "Mac15,14", 1, "macOS"}, 1);
  CandidateRow c;
  c.host_id = host;
  c.name = "flaky";
  c.model = "m";
  c.runtime = RuntimeKind::LlamaCpp;
  c.build = "b1";
  c.base_url = "http://127.0.0.1:8080";
  c.id = *store.upsert_candidate(c, 1000);
  StageRow stage;
  stage.candidate_id = c.id;
  stage.kind = StageKind::Canary;
  stage.state = StageState::Running;
  stage.started_ms = 2000;
  stage.length_ms = 7'200'000;
  stage.deadline_ms = stage.started_ms + stage.length_ms;
  stage.id = *store.insert_stage(stage);
  TextfileCollector collector(MetricsOptions{60'000, "test"});
  JudgeInput in;
  in.recipe.stage = StageKind::Canary;
  for (int batch = 0; batch < 2; ++batch) {  // refreshed between batches: the kept rows add up
    for (int i = 1; i <= 16; ++i) {
      ProbeResult r;
      r.candidate_id = c.id;
      r.host_id = host;
      r.stage_id = stage.id;
      r.started_wall_ms = 3000 + (batch * 16 + i) * 1000;
      r.kind = ProbeKind::Burst;
      r.task = "burst";
      r.workload_id = "burst/8";
      r.outcome = i % 8 == 0 ? Outcome::Http5xx : Outcome::Clean;
      r.extra_json = std::string(200, 'x');  // text the collector need not keep
      r.id = *store.insert_probe_result(r);
      in.candidate_rows.push_back(r);
    }
    REQUIRE(collector.refresh(store, 40'000).ok());
  }
  const auto want = sequential_evidence(in);
  const std::string text = collector.render(40'000);
  INFO(text);
  const std::string labels = "{candidate=\"flaky\",model=\"m\",runtime=\"llama.cpp\",build=\"b1\",measure=\"";
  for (const auto& m : want) {
    char v[40];
    std::snprintf(v, sizeof v, "%.10g", m.fraction());
    CHECK(text.find("soakd_sequential_evidence_ratio" + labels + m.name + "\"} " + v + "\n") != std::string::npos);
  }
  const auto burst = std::find_if(want.begin(), want.end(), [](const auto& m) { return m.name == "task/burst"; });
  REQUIRE(burst != want.end());
  CHECK(burst->last.n == 32);
  CHECK(burst->fraction() > 0);
  TextfileCollector fresh(MetricsOptions{60'000, "test"});
  REQUIRE(fresh.refresh(store, 40'000).ok());
  CHECK(fresh.render(40'000) == text);
}

TEST_CASE("metrics text: every sample belongs to a family declared with HELP and TYPE; labels are escaped") {
  TempDir tmp;
  auto st = SqliteStore::open(tmp.path() + "/s.db", OpenMode::ReadWrite, Durability::Fast);
  REQUIRE(st.ok());
  SqliteStore& store = **st;
  const int64_t host = *store.upsert_host(HostInfo{"h", "m", 1, "os"}, 1);
  CandidateRow c;
  c.host_id = host;
  c.name = "we\"ird\\name\nx";
  c.model = "m";
  c.build = "b";
  const int64_t id = *store.upsert_candidate(c, 1);
  StageRow s;
  s.candidate_id = id;
  s.kind = StageKind::Canary;
  s.state = StageState::Running;
  s.started_ms = 1000;
  s.length_ms = 4000;
  s.deadline_ms = 6000;
  REQUIRE(store.insert_stage(s).ok());
  TextfileCollector m(MetricsOptions{600'000, "v"});
  REQUIRE(m.refresh(store, 2000).ok());
  const std::string text = m.render(2000);
  CHECK(text.find("candidate=\"we\\\"ird\\\\name\\nx\"") != std::string::npos);
  CHECK(text.find(
            "soakd_candidate_stage_progress_ratio{candidate=\"we\\\"ird\\\\name\\nx\",model=\"m\",runtime=\"openai\","
            "build=\"b\"} 0.25\n") != std::string::npos);
  std::set<std::string> helped, typed;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("# HELP ", 0) == 0) {
      helped.insert(line.substr(7, line.find(' ', 7) - 7));
      continue;
    }
    if (line.rfind("# TYPE ", 0) == 0) {
      typed.insert(line.substr(7, line.find(' ', 7) - 7));
      continue;
    }
    std::string name = line.substr(0, line.find_first_of("{ "));
    INFO(line);
    CHECK(name.rfind("soakd_", 0) == 0);
    for (const char* suffix : {"_sum", "_count"})
      if (!typed.count(name) && name.size() > std::strlen(suffix) &&
          name.compare(name.size() - std::strlen(suffix), std::strlen(suffix), suffix) == 0)
        name.resize(name.size() - std::strlen(suffix));
    CHECK(typed.count(name) == 1);
    CHECK(helped.count(name) == 1);
  }
  CHECK(helped == typed);
}

TEST_CASE("soakctl report writes a page per candidate and an index; soakctl metrics prints the collector's text") {
  TempDir out;
  VirtualClock clock{demo().demo.end_ms};
  std::ostringstream o, e;
  const std::string page = out.path() + "/leak.html";
  REQUIRE(soakctl_main({"--db", demo().demo.path, "report", "mlx-leak", "--html", page}, o, e, clock) == kCtlExitOk);
  CHECK(o.str().find("wrote " + page) != std::string::npos);
  const std::string html = read_file(page);
  CHECK(html.rfind("<!DOCTYPE html>", 0) == 0);
  CHECK(html.find("id=\"memory\"") != std::string::npos);
  CHECK(std::filesystem::file_size(page) < 2'000'000);

  const std::string index = out.path() + "/index.html";
  REQUIRE(soakctl_main({"--db", demo().demo.path, "report", "--html", index}, o, e, clock) == kCtlExitOk);
  const std::string idx = read_file(index);
  for (const char* name : {"llama-b9430", "llama-b9502", "omlx-35b", "mlx-leak"})
    CHECK(idx.find(name) != std::string::npos);
  CHECK(idx.find("id=\"mini-3\"") != std::string::npos);

  std::ostringstream m;
  REQUIRE(soakctl_main({"--db", demo().demo.path, "metrics"}, m, e, clock) == kCtlExitOk);
  auto st = open_ro(demo().demo.path);
  TextfileCollector direct(MetricsOptions{GuardRules{}.window_ms, "0.1.0"});
  REQUIRE(direct.refresh(*st, clock.wall_ms()).ok());
  CHECK(m.str() == direct.render(clock.wall_ms()));
  std::ostringstream j;
  REQUIRE(soakctl_main({"--db", demo().demo.path, "metrics", "--json"}, j, e, clock) == kCtlExitOk);
  auto arr = nlohmann::json::parse(j.str());
  bool found = false;
  for (const auto& s : arr)
    if (s["name"] == "soakd_candidate_verdict" && s["labels"]["candidate"] == "mlx-leak" &&
        s["labels"]["verdict"] == "rejected")
      found = s["value"] == 1.0;
  CHECK(found);
}

TEST_CASE("soakctl report: usage errors name the fix") {
  VirtualClock clock{demo().demo.end_ms};
  std::ostringstream o, e;
  CHECK(soakctl_main({"--db", demo().demo.path, "report", "mlx-leak"}, o, e, clock) == kCtlExitUsage);
  CHECK(e.str().find("give --html FILE") != std::string::npos);
  e.str("");
  CHECK(soakctl_main({"--db", demo().demo.path, "report", "--build", "b1", "--html", "/tmp/x.html"}, o, e, clock) ==
        kCtlExitUsage);
  CHECK(e.str().find("--build needs a CANDIDATE") != std::string::npos);
  e.str("");
  CHECK(soakctl_main({"--db", demo().demo.path, "report", "a", "b", "--html", "/tmp/x.html"}, o, e, clock) ==
        kCtlExitUsage);
  CHECK(e.str().find("at most one CANDIDATE") != std::string::npos);
  e.str("");
  CHECK(soakctl_main({"--db", demo().demo.path, "report", "nope", "--html", "/tmp/x.html"}, o, e, clock) ==
        kCtlExitStore);
  CHECK(e.str().find("no candidate named \"nope\"") != std::string::npos);
  e.str("");
  CHECK(soakctl_main({"--db", demo().demo.path, "report", "--html", "/nonexistent-dir/x.html"}, o, e, clock) ==
        kCtlExitStore);
  CHECK(e.str().find("/nonexistent-dir/x.html") != std::string::npos);
}

TEST_CASE("report: each speed figure is drawn over the whole campaign, every stage, per workload") {
  auto st = open_ro(demo().demo.path);
  const CandidateRow c = row_of(*st, "mlx-leak");  // went through every stage to the soak
  auto rep = build_candidate_report(*st, c, demo().demo.end_ms, source(*st));
  REQUIRE(rep.ok());
  std::set<std::string> figures;
  for (const auto& chart : rep->speed) {
    figures.insert(chart.figure);
    CHECK(chart.from_ms == rep->timeline.from_ms);
    CHECK(chart.stages.size() == rep->timeline.stages.size());
    CHECK(chart.series.size() <= kMaxSpeedSeries);
    for (size_t i = 1; i < chart.series.size(); ++i) CHECK(chart.series[i - 1].n >= chart.series[i].n);
  }
  CHECK(figures == std::set<std::string>{"ttft_ms", "prompt_tps", "decode_tps", "wall_ms"});
  // The busiest TTFT workload has rows from the canary to the end of the soak.
  const SpeedChart& ttft = rep->speed.front();
  REQUIRE(ttft.figure == "ttft_ms");
  REQUIRE_FALSE(ttft.series.empty());
  const auto& b = ttft.series.front().buckets;
  REQUIRE(b.size() > 10);
  int64_t soak_start = 0, canary_end = 0;
  for (const auto& s : rep->timeline.stages) {
    if (s.kind == StageKind::Soak) soak_start = s.start_ms;
    if (s.kind == StageKind::Canary) canary_end = s.end_ms;
  }
  REQUIRE(soak_start > 0);
  CHECK(b.back().t0_ms > soak_start);
  CHECK(b.front().t0_ms < canary_end + kDay);
  const std::string page = render_candidate(*rep);
  CHECK(page.find("id=\"speed-ttft_ms\"") != std::string::npos);
  CHECK(page.find("id=\"speed-decode_tps\"") != std::string::npos);
  CHECK(page.find("Speed over the campaign") != std::string::npos);
}

TEST_CASE("a judgment's input carries the last host sample before its window, within its snapshot") {
  auto st = open_ro(demo().demo.path);
  size_t checked = 0;
  for (const auto& c : *st->candidates())
    for (const auto& v : *st->verdicts(c.id)) {
      auto recipe = recipe_from_json(v.judge_input_json);
      if (!recipe || recipe->recipe.stage == StageKind::Smoke) continue;
      auto input = build_judge_input(*st, *recipe);
      REQUIRE(input.ok());
      // What a plain query says the newest sample before the window is.
      SampleQuery q;
      q.host_id = recipe->recipe.host_id;
      q.until_ms = recipe->rows.since_ms - 1;
      q.max_id = recipe->rows.max_ids.host_sample;
      const auto earlier = *st->host_samples(q);
      REQUIRE_FALSE(earlier.empty());  // the demo samples the host from its start
      REQUIRE(input->host_sample_before);
      CHECK(input->host_sample_before->id == earlier.back().id);
      CHECK(input->host_sample_before->wall_ms < recipe->rows.since_ms);
      ++checked;
    }
  CHECK(checked > 3);
}
