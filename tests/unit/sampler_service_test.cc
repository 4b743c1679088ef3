// SamplerService ticked by hand in virtual time, with a scripted Sampler and a
// real SQLite store: what a config reload keeps, and how often a candidate's
// process is looked for again. No timer fires (the loop never runs).
#include <uv.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>

#include "core/config.h"
#include "daemon/sampler_service.h"
#include "platform/darwin_figures.h"
#include "storage/sqlite_store.h"
#include "tests/catch.h"
#include "tests/support/runtime_signatures.h"
#include "tests/support/temp_dir.h"

using namespace soak;

namespace {

constexpr int kPort = 18499;
constexpr int kPid = 4242;

class ScriptedSampler final : public Sampler {
 public:
  ScriptedSampler() : Sampler(test::builtin_signatures()) {}
  std::optional<int> pressure_level = 1;
  std::map<int, ProcessSample> samples;  // pid -> what sample_process returns
  int listener_lookups = 0;
  int process_reads = 0;  // sample_process calls

  Result<HostInfo> host_info() override { return HostInfo{"studio", "Mac15,14", 512LL << 30, "macOS 15.5"}; }
  HostSample sample_host(int64_t wall_ms) override {
    HostSample s;
    s.wall_ms = wall_ms;
    s.total_bytes = 512LL << 30;
    s.pressure_level = pressure_level;
    return s;
  }
  ProcessSample sample_process(int pid, int64_t wall_ms) override {
    ++process_reads;
    ProcessSample s;
    const auto it = samples.find(pid);
    if (it != samples.end()) s = it->second;
    s.pid = pid;
    if (it == samples.end()) mark_gone(s);
    s.wall_ms = wall_ms;
    return s;
  }
  std::vector<ProcessInfo> processes;  // what list_processes returns
  Result<std::vector<ProcessInfo>> list_processes() override { return processes; }
  Result<std::optional<int>> find_listening_pid(uint16_t port) override {
    ++listener_lookups;
    return port == kPort ? std::optional<int>(kPid) : std::nullopt;
  }
};

// A process that reads, the same one tick after tick.
ProcessSample steady_sample() {
  ProcessSample s;
  s.start_time = 77;
  s.footprint_bytes = 1'000;
  return s;
}

class NoPower final : public PowerAssertion {
 public:
  Status acquire(const std::string&) override { return Status::Ok(); }
  Status release() override { return Status::Ok(); }
  bool held() const override { return false; }
};

Config config(const std::string& guard_window) {
  // Samples stored one per 15 s (the tests below count them), not the default's 60 s.
  const std::string text = R"({"sampler": {"process_every": "15s"}, "defaults": {"guard": {"window": ")" +
                           guard_window + R"("}}, "candidates": [{"name": "a", "model": "m", "runtime": "llama.cpp",
                               "base_url": "http://127.0.0.1:)" +
                           std::to_string(kPort) + R"("}]})";
  auto c = parse_config(text, "test.json", "/tmp");
  INFO((c.ok() ? "" : c.message()));
  REQUIRE(c.ok());
  return std::move(*c);
}

struct World {
  TempDir tmp;
  VirtualClock clock{1'767'225'600'000};
  std::unique_ptr<SqliteStore> store;
  std::unique_ptr<Outbox> outbox;
  ScriptedSampler sampler;
  uv_loop_t loop;
  ConfigSnapshot cfg = std::make_shared<const Config>(config("10m"));
  int64_t host = 0;
  int64_t cand = 0;
  // The candidate as Campaigns::active() gives it: managed, with its pid and
  // the previous build's beside its canary (ab "interleaved").
  bool managed = false;
  std::optional<int> pid, previous_pid;
  std::vector<int64_t> more;  // further candidates' rows, on the same runtime as "a"
  std::unique_ptr<SamplerService> service;

  World() {
    uv_loop_init(&loop);
    store = *SqliteStore::open(tmp.path() + "/s.db", OpenMode::ReadWrite, Durability::Fast);
    host = *store->upsert_host(*sampler.host_info(), clock.wall_ms());
    CandidateRow row;
    row.host_id = host;
    row.name = "a";
    row.model = "m";
    row.runtime = RuntimeKind::LlamaCpp;
    row.build = "b1";
    row.base_url = cfg->candidates[0].base_url;
    cand = *store->upsert_candidate(row, clock.wall_ms());
    outbox = std::make_unique<Outbox>(*store, clock, make_null_logger(), host);
    service = std::make_unique<SamplerService>(
        cfg, Deps{*store, *outbox, clock, make_null_logger(), &loop, host}, sampler,
        [this] {
          std::vector<Campaigns::Active> out{
              {"a", candidate_snapshot(cfg, cfg->candidates[0]), cand, StageKind::Canary, managed, pid, previous_pid}};
          for (int64_t id : more)
            out.push_back({"a" + std::to_string(id), candidate_snapshot(cfg, cfg->candidates[0]), id, StageKind::Canary,
                           managed, pid, previous_pid});
          return out;
        },
        std::make_unique<NoPower>());
  }
  ~World() {
    service.reset();
    uv_run(&loop, UV_RUN_NOWAIT);  // let closed handles finish
    uv_loop_close(&loop);
  }
  // Another candidate row whose runtime is the one "a" probes.
  int64_t add_candidate(const std::string& name) {
    CandidateRow row;
    row.host_id = host;
    row.name = name;
    row.model = "m";
    row.runtime = RuntimeKind::LlamaCpp;
    row.build = "b1";
    row.base_url = cfg->candidates[0].base_url;
    more.push_back(*store->upsert_candidate(row, clock.wall_ms()));
    return more.back();
  }
  size_t events(EventKind kind) {
    EventQuery q;
    q.kind = kind;
    return store->events(q)->size();
  }
  void tick_after(int64_t ms) {
    clock.advance_ms(ms);
    service->tick();
  }
};

}  // namespace

TEST_CASE("sampler service: a reload that leaves the guard's rules alone keeps its window and its trips") {
  World w;
  w.sampler.pressure_level = darwin::kPressureCritical;
  w.service->tick();
  CHECK(w.events(EventKind::GuardTrip) == 1);
  w.tick_after(5000);
  CHECK(w.events(EventKind::GuardTrip) == 1);  // the same episode is said once

  w.service->reload(std::make_shared<const Config>(config("10m")));  // e.g. a SIGHUP for another setting
  w.tick_after(5000);
  CHECK(w.events(EventKind::GuardTrip) == 1);

  w.service->reload(std::make_shared<const Config>(config("20m")));  // new rules: judged afresh
  w.tick_after(5000);
  CHECK(w.events(EventKind::GuardTrip) == 2);
}

TEST_CASE("sampler service: a pid that does not read is looked for again at the scan cadence, a gone one at once") {
  World w;
  ProcessSample denied;
  denied.error = "pid 4242: permission denied";
  w.sampler.samples[kPid] = denied;

  w.service->tick();
  CHECK(w.sampler.listener_lookups == 1);
  for (int i = 0; i < 10; ++i) w.tick_after(5000);  // 50 s: no process-table search each tick
  CHECK(w.sampler.listener_lookups == 1);
  w.tick_after(10'000);  // a minute since it was located
  CHECK(w.sampler.listener_lookups == 2);

  // Now it reads, then it is gone: looked for again on the very tick.
  ProcessSample ok;
  ok.start_time = 77;
  w.sampler.samples[kPid] = ok;
  w.tick_after(5000);
  CHECK(w.sampler.listener_lookups == 2);
  w.sampler.samples.erase(kPid);
  w.tick_after(5000);
  CHECK(w.sampler.listener_lookups == 3);
  CHECK(w.events(EventKind::ProcessGone) == 1);
  SampleQuery q;
  q.candidate_id = w.cand;
  auto samples = *w.store->process_samples(q);
  // Read every tick, stored one per sampler.process_every (15 s: at 0, 15, 30,
  // 45 and 60 s) while nothing changes, and at once the one that read and the
  // gone one. The ones that did not read keep their error.
  REQUIRE(samples.size() == 7);
  CHECK(samples[1].wall_ms - samples[0].wall_ms == 15'000);
  CHECK(samples.front().error.find("permission denied") != std::string::npos);
  CHECK(samples[5].error.empty());
  CHECK(samples.back().error.find("no such process") != std::string::npos);
}

TEST_CASE("sampler service: one runtime process serving several candidates is read once a tick") {
  // Reading a process costs system time on the loop (a large one's
  // smaps_rollup: milliseconds); twenty canaries on one runtime process read
  // it twenty times a tick without sharing, four ticks a second.
  World w;
  ProcessSample steady = steady_sample();
  w.sampler.samples[kPid] = steady;
  std::vector<int64_t> ids{w.cand};
  for (int i = 0; i < 19; ++i) ids.push_back(w.add_candidate("c" + std::to_string(i)));
  w.service->tick();
  CHECK(w.sampler.process_reads == 1);
  w.tick_after(5000);
  CHECK(w.sampler.process_reads == 2);
  auto samples_of = [&](int64_t id) {
    SampleQuery q;
    q.candidate_id = id;
    return *w.store->process_samples(q);
  };
  // Each candidate still has its own samples, of that one process.
  for (int64_t id : ids) {
    const auto samples = samples_of(id);
    REQUIRE(samples.size() == 1);
    CHECK(samples[0].pid == kPid);
    CHECK(samples[0].footprint_bytes == 1'000);
  }
  // A restart seen once is seen by each candidate: a sample of each, at once.
  steady.start_time = 78;
  w.sampler.samples[kPid] = steady;
  w.tick_after(1000);
  CHECK(w.sampler.process_reads == 3);
  for (int64_t id : ids) CHECK(samples_of(id).size() == 2);
}

TEST_CASE("sampler service: a steady process is stored one sample per 15 s; a restart at once") {
  World w;
  ProcessSample steady = steady_sample();
  w.sampler.samples[kPid] = steady;
  w.service->tick();
  for (int i = 0; i < 8; ++i) w.tick_after(5000);  // 0 .. 40 s: stored at 0, 15 and 30 s
  SampleQuery q;
  q.candidate_id = w.cand;
  REQUIRE(w.store->process_samples(q)->size() == 3);

  ProcessSample restarted = steady;
  restarted.start_time = 78;  // the same pid, a new process
  w.sampler.samples[kPid] = restarted;
  w.tick_after(5000);  // 45 s: due anyway; the next change is what is tested
  w.tick_after(1000);  // 46 s
  REQUIRE(w.store->process_samples(q)->size() == 4);
  restarted.start_time = 79;
  w.sampler.samples[kPid] = restarted;
  w.tick_after(1000);  // 47 s: not due, stored because it is another process
  auto samples = *w.store->process_samples(q);
  REQUIRE(samples.size() == 5);
  CHECK(samples.back().start_time == 79);
  CHECK(samples.back().wall_ms - samples[3].wall_ms == 2'000);
}

TEST_CASE("sampler service: the previous build soakd runs beside a canary is not another engine, nor the candidate") {
  World w;
  w.managed = true;
  w.pid = 100;
  ProcessSample own, previous;
  own.start_time = 1;
  own.footprint_bytes = 20LL << 30;
  previous.start_time = 2;
  previous.footprint_bytes = 21LL << 30;
  w.sampler.samples[100] = own;
  w.sampler.samples[200] = previous;
  w.sampler.processes = {ProcessInfo{100,
                                     1,
                                     "llama-server",
                                     "/opt/homebrew/Cellar/llama.cpp/9502/bin/llama-server",
                                     {"/opt/homebrew/Cellar/llama.cpp/9502/bin/llama-server", "--port", "18499"}},
                         ProcessInfo{200,
                                     1,
                                     "llama-server",
                                     "/opt/homebrew/Cellar/llama.cpp/9430/bin/llama-server",
                                     {"/opt/homebrew/Cellar/llama.cpp/9430/bin/llama-server", "--port", "40123"}}};
  SECTION("started beside the canary: expected (SOLO holds)") {
    w.previous_pid = 200;
    w.service->tick();
    CHECK(w.events(EventKind::DuplicateEngine) == 0);
  }
  SECTION("the same process, not started beside it: a second engine") {
    w.service->tick();
    CHECK(w.events(EventKind::DuplicateEngine) == 1);
  }
  SampleQuery q;
  q.candidate_id = w.cand;
  const auto samples = *w.store->process_samples(q);
  REQUIRE_FALSE(samples.empty());
  for (const auto& s : samples) CHECK(s.pid == 100);  // its memory is never the candidate's
}

TEST_CASE("process sample keeper: due by time, or at once on a change of process, error or budget") {
  ProcessSampleKeeper k(15'000);
  ProcessSample s;
  s.pid = 9;
  s.start_time = 1;
  s.wall_ms = 100'000;
  CHECK(k.keep(s));
  s.wall_ms += 14'999;
  CHECK_FALSE(k.keep(s));
  s.wall_ms += 1;
  CHECK(k.keep(s));  // 15 s after the last stored
  s.wall_ms += 5'000;
  CHECK(k.keep(s, true));  // past the budget
  s.wall_ms += 5'000;
  CHECK_FALSE(k.keep(s, true));  // still past it: nothing new
  s.wall_ms += 1;
  s.error = "pid 9: no such process";
  CHECK(k.keep(s, true));
  s.wall_ms += 1;
  s.error.clear();
  s.start_time = 2;
  CHECK(k.keep(s, true));
  s.wall_ms -= 60'000;  // the clock stepped back: stored, and measured from there
  CHECK(k.keep(s, true));
  s.wall_ms += 14'000;
  CHECK_FALSE(k.keep(s, true));
}

TEST_CASE("host sample keeper: due by time, or at once on a change of a level, swap, swapouts or error") {
  HostSampleKeeper k(15'000);
  HostSample s;
  s.wall_ms = 100'000;
  s.pressure_level = 1;
  s.thermal_level = 0;
  s.swap_used_bytes = 0;
  s.swapouts = 7;
  s.free_bytes = 100;
  CHECK(k.keep(s));
  s.wall_ms += 5'000;
  s.free_bytes = 90;  // the memory figures alone: not stored
  CHECK_FALSE(k.keep(s));
  s.wall_ms += 9'999;
  CHECK_FALSE(k.keep(s));
  s.wall_ms += 1;
  CHECK(k.keep(s));  // 15 s after the last stored
  s.wall_ms += 5'000;
  s.thermal_level = 1;
  CHECK(k.keep(s));
  s.wall_ms += 5'000;
  CHECK_FALSE(k.keep(s));  // still moderate: nothing new
  s.wall_ms += 1;
  s.pressure_level = 2;
  CHECK(k.keep(s));
  s.wall_ms += 1;
  s.memorystatus_level = 40;
  CHECK(k.keep(s));
  s.wall_ms += 1;
  s.swap_used_bytes = 1 << 20;
  CHECK(k.keep(s));
  s.wall_ms += 1;
  s.swapouts = 8;
  CHECK(k.keep(s));
  s.wall_ms += 1;
  s.error = "vm_stat: failed";
  CHECK(k.keep(s));
  s.wall_ms += 1;
  CHECK_FALSE(k.keep(s));
  s.wall_ms -= 60'000;  // the clock stepped back: stored, and measured from there
  CHECK(k.keep(s));
  s.wall_ms += 5'000;
  CHECK_FALSE(k.keep(s));
  auto pending = k.take_pending();  // the newest not stored, once
  REQUIRE(pending);
  CHECK(pending->wall_ms == s.wall_ms);
  CHECK_FALSE(k.take_pending());
  s.wall_ms += 5'000;
  CHECK_FALSE(k.keep(s));  // measured from the one taken
  s.wall_ms += 10'000;
  CHECK(k.keep(s));
}

TEST_CASE("sampler service: host samples stored one per 15 s and at once on a change; the newest at stop") {
  World w;
  auto stored = [&] {
    REQUIRE(w.outbox->flush());
    return *w.store->host_samples(SampleQuery{});
  };
  w.service->tick();
  for (int i = 0; i < 5; ++i) w.tick_after(5000);  // 25 s: stored at 0, 15 s
  auto rows = stored();
  REQUIRE(rows.size() == 2);
  CHECK(rows[1].wall_ms - rows[0].wall_ms == 15'000);
  w.tick_after(3000);  // 28 s: not due
  w.sampler.pressure_level = darwin::kPressureCritical;
  w.tick_after(1000);  // 29 s: critical, at once
  w.tick_after(1000);  // 30 s: still critical, measured from 29 s
  w.sampler.pressure_level = 1;
  w.tick_after(1000);  // 31 s: back to normal, at once
  rows = stored();
  REQUIRE(rows.size() == 4);
  CHECK(rows[2].pressure_level == darwin::kPressureCritical);
  CHECK(rows[2].wall_ms - rows[1].wall_ms == 14'000);
  CHECK(rows[3].pressure_level == 1);
  CHECK(rows[3].wall_ms - rows[2].wall_ms == 2'000);
  w.tick_after(5000);  // 36 s: not due
  CHECK(stored().size() == 4);
  bool done = false;
  w.service->stop([&] { done = true; });
  CHECK(done);
  rows = stored();
  REQUIRE(rows.size() == 5);  // the newest reading, so a restart measures its absence from there
  CHECK(rows.back().wall_ms == w.clock.wall_ms());
}

TEST_CASE("sampler service: with metrics.textfile set, each tick rewrites that file whole; without it, nothing") {
  World w;
  const std::string prom = w.tmp.path() + "/textfile/soakd.prom";
  std::filesystem::create_directories(w.tmp.path() + "/textfile");
  Config with = config("10m");
  with.metrics.textfile = prom;
  w.service->reload(std::make_shared<const Config>(with));
  w.sampler.pressure_level = darwin::kPressureCritical;
  w.tick_after(5000);
  auto read = [&] {
    std::ifstream f(prom);
    return std::string(std::istreambuf_iterator<char>(f), {});
  };
  std::string text = read();
  INFO(text);
  const std::string stamp =
      "soakd_textfile_written_timestamp_seconds " + std::to_string(w.clock.wall_ms() / 1000) + "\n";
  CHECK(text.find(stamp) != std::string::npos);
  CHECK(text.find("soakd_host_memory_pressure{level=\"critical\"} 1\n") != std::string::npos);
  CHECK(text.find("soakd_guard_tripped 1\n") != std::string::npos);
  CHECK(text.find("soakd_events_total{kind=\"guard_trip\"} 1\n") != std::string::npos);
  // Whole files only: the temporary file is renamed over the old one.
  size_t files = 0;
  for (const auto& e : std::filesystem::directory_iterator(w.tmp.path() + "/textfile")) files += e.is_regular_file();
  CHECK(files == 1);
  CHECK((std::filesystem::status(prom).permissions() & std::filesystem::perms::others_read) !=
        std::filesystem::perms::none);

  w.tick_after(5000);
  CHECK(read().find("soakd_textfile_written_timestamp_seconds " + std::to_string(w.clock.wall_ms() / 1000) + "\n") !=
        std::string::npos);

  w.service->reload(std::make_shared<const Config>(config("10m")));  // metrics off again: the file is left as it was
  const std::string before = read();
  w.tick_after(5000);
  CHECK(read() == before);
}

TEST_CASE("sampler service: while a stage runs, its sequential evidence is stored every twelfth tick, as of its rows") {
  World w;
  auto start_canary = [&](int64_t cand) {
    StageRow canary;
    canary.candidate_id = cand;
    canary.kind = StageKind::Canary;
    canary.state = StageState::Running;
    canary.started_ms = w.clock.wall_ms();
    canary.length_ms = 2 * 3600'000;
    canary.deadline_ms = canary.started_ms + canary.length_ms;
    canary.id = *w.store->insert_stage(canary);
    return canary;
  };
  const StageRow canary = start_canary(w.cand);
  const StageRow other = start_canary(w.add_candidate("b"));
  auto add_row = [&](Outcome o) {
    ProbeResult r;
    r.candidate_id = w.cand;
    r.host_id = w.host;
    r.stage_id = canary.id;
    r.started_wall_ms = w.clock.wall_ms();
    r.kind = ProbeKind::Marker;
    r.task = "functional";
    r.workload_id = "functional/marker";
    r.outcome = o;
    REQUIRE(w.store->insert_probe_result(r).ok());
  };
  auto stored = [&] { return *w.store->stage_evidence(canary.id); };
  auto pooled_k = [&] { return (*report::measures_from_json(stored()->measures_json)).front().last.k; };
  add_row(Outcome::Http5xx);
  w.service->tick();
  REQUIRE(stored());
  CHECK(stored()->wall_ms == w.clock.wall_ms());
  CHECK(pooled_k() == 1);
  // A stage not read yet is read at one per tick: the other candidate's at the next.
  CHECK_FALSE(*w.store->stage_evidence(other.id));
  const int64_t first_ms = stored()->wall_ms;
  add_row(Outcome::Http5xx);
  w.tick_after(5000);
  REQUIRE(*w.store->stage_evidence(other.id));
  CHECK((*w.store->stage_evidence(other.id))->wall_ms == first_ms + 5000);
  // The default interval is 5 s: the next refresh a minute on.
  for (int i = 2; i < SamplerService::kEvidenceIntervals; ++i) w.tick_after(5000);
  CHECK(stored()->wall_ms == first_ms);
  CHECK(pooled_k() == 1);
  w.tick_after(5000);
  CHECK(stored()->wall_ms == first_ms + 60'000);
  CHECK(pooled_k() == 2);
  CHECK(stored()->probe_max_id == w.store->max_ids()->probe);
}
