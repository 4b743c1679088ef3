#include <fcntl.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <tuple>

#include "storage/lock.h"
#include "storage/schema.h"
#include "storage/sqlite_store.h"
#include "tests/catch.h"
#include "tests/support/temp_dir.h"

using namespace soak;
namespace fs = std::filesystem;

namespace {

std::unique_ptr<SqliteStore> open_rw(const std::string& path) {
  auto s = SqliteStore::open(path, OpenMode::ReadWrite);
  INFO((s.ok() ? std::string() : s.message()));
  REQUIRE(s.ok());
  return std::move(*s);
}

struct Ids {
  int64_t host, cand;
};

Ids seed(Store& st) {
  HostInfo h{"studio", "Mac15,14", 512LL << 30, "macOS 15.5"};
  auto host = st.upsert_host(h, 1000);
  REQUIRE(host.ok());
  CandidateRow c;
  c.host_id = *host;
  c.name = "qwen35b-llama";
  c.model = "qwen3.6-35b-a3b";
  c.runtime = RuntimeKind::LlamaCpp;
  c.build = "b9928-81ff7abe5";
  c.base_url = "http://127.0.0.1:8080";
  auto cand = st.upsert_candidate(c, 1000);
  REQUIRE(cand.ok());
  return {*host, *cand};
}

ProbeResult sample_result(const Ids& ids, int64_t i) {
  ProbeResult r;
  r.candidate_id = ids.cand;
  r.host_id = ids.host;
  r.started_wall_ms = 2000 + i;
  r.kind = ProbeKind::LongContext;
  r.workload_id = "long_context/32768/fresh";
  r.size_tokens = 32768;
  r.cache_state = CacheState::Fresh;
  r.thinking = false;
  r.outcome = i % 2 ? Outcome::Clean : Outcome::Stalled;
  r.http_status = 200;
  r.t_first_token_us = 97'400'000 + i;
  r.server_prompt_tps = 336.5;
  r.server_draft_n = 10;
  r.server_draft_accepted = 9;
  r.response_model = "qwen3.6-35b-a3b";
  return r;
}

// A running canary of the seeded candidate; its stage id.
int64_t running_canary(Store& st, const Ids& ids) {
  StageRow stage;
  stage.candidate_id = ids.cand;
  stage.kind = StageKind::Canary;
  stage.state = StageState::Running;
  return *st.insert_stage(stage);
}

}  // namespace

TEST_CASE("store creates file 0600 and directories 0700, with schema and WAL") {
  TempDir tmp;
  std::string path = tmp.path() + "/a/b/soakd.db";
  auto st = open_rw(path);
  CHECK((fs::status(path).permissions() & fs::perms::all) == (fs::perms::owner_read | fs::perms::owner_write));
  CHECK((fs::status(tmp.path() + "/a").permissions() & fs::perms::all) == fs::perms::owner_all);
  CHECK((fs::status(tmp.path() + "/a/b").permissions() & fs::perms::all) == fs::perms::owner_all);
  CHECK(st->user_version() == schema_version());
  sqlite3_stmt* s = nullptr;
  REQUIRE(sqlite3_prepare_v2(st->db(), "PRAGMA journal_mode", -1, &s, nullptr) == SQLITE_OK);
  REQUIRE(sqlite3_step(s) == SQLITE_ROW);
  CHECK(std::string(reinterpret_cast<const char*>(sqlite3_column_text(s, 0))) == "wal");
  sqlite3_finalize(s);
}

TEST_CASE("a read-only store's snapshot reads one committed state while soakd writes") {
  TempDir tmp;
  const std::string path = tmp.path() + "/soakd.db";
  auto rw = open_rw(path);
  const Ids ids = seed(*rw);
  REQUIRE(rw->insert_probe_result(sample_result(ids, 0)).ok());
  auto count = [&](Store& st) { return (*st.probe_results(ProbeQuery{})).size(); };

  auto snap = SqliteStore::open(path, OpenMode::ReadOnly);
  REQUIRE(snap.ok());
  REQUIRE((*snap)->begin_snapshot().ok());
  auto plain = SqliteStore::open(path, OpenMode::ReadOnly);
  REQUIRE(plain.ok());
  CHECK(count(**snap) == 1);
  CHECK(count(**plain) == 1);
  REQUIRE(rw->insert_probe_result(sample_result(ids, 1)).ok());
  CHECK(count(**snap) == 1);   // the state its first read saw
  CHECK(count(**plain) == 2);  // each statement its own
  snap->reset();               // closing ends the read transaction: the writer goes on
  REQUIRE(rw->insert_probe_result(sample_result(ids, 2)).ok());
  CHECK(count(**plain) == 3);
}

TEST_CASE("probe results round-trip every field, including NULLs") {
  TempDir tmp;
  auto st = open_rw(tmp.path() + "/s.db");
  Ids ids = seed(*st);
  ProbeResult r = sample_result(ids, 1);
  r.itl_p95_us = std::nullopt;
  auto id = st->insert_probe_result(r);
  REQUIRE(id.ok());
  auto rows = st->probe_results({});
  REQUIRE(rows.ok());
  REQUIRE(rows->size() == 1);
  const auto& g = rows->front();
  CHECK(g.id == *id);
  CHECK(g.kind == ProbeKind::LongContext);
  CHECK(g.cache_state == CacheState::Fresh);
  CHECK(g.thinking == std::optional<bool>(false));
  CHECK(g.outcome == Outcome::Clean);
  CHECK(g.size_tokens == std::optional<int64_t>(32768));
  CHECK(g.t_first_token_us == std::optional<int64_t>(97'400'001));
  CHECK_FALSE(g.itl_p95_us.has_value());
  CHECK(g.server_prompt_tps == std::optional<double>(336.5));
  CHECK(g.server_draft_accepted == std::optional<int64_t>(9));
  CHECK(g.response_model == "qwen3.6-35b-a3b");
}

TEST_CASE("probe_counts counts exactly the rows probe_results returns, under every filter") {
  TempDir tmp;
  auto st = open_rw(tmp.path() + "/s.db");
  Ids ids = seed(*st);
  CandidateRow other;
  other.host_id = ids.host;
  other.name = "other";
  other.model = "m";
  other.runtime = RuntimeKind::LlamaCpp;
  other.build = "b1";
  other.base_url = "http://127.0.0.1:8081";
  const int64_t other_id = *st->upsert_candidate(other, 1000);
  const int64_t stage_id = running_canary(*st, ids);
  std::vector<int64_t> row_ids;
  for (int64_t i = 0; i < 24; ++i) {
    ProbeResult r = sample_result(ids, i);
    if (i % 3 == 0) r.candidate_id = other_id;
    if (i % 2 == 0 && r.candidate_id == ids.cand) r.stage_id = stage_id;
    r.kind = i % 4 == 0 ? ProbeKind::Burst : i % 4 == 1 ? ProbeKind::Health : ProbeKind::LongContext;
    row_ids.push_back(*st->insert_probe_result(r));
  }
  auto with = [](auto set) {
    ProbeQuery q;
    set(q);
    return q;
  };
  const std::vector<ProbeQuery> queries{
      {},
      with([&](ProbeQuery& q) { q.candidate_id = ids.cand; }),
      with([&](ProbeQuery& q) { q.stage_id = stage_id; }),
      with([&](ProbeQuery& q) {
        q.min_id = row_ids[5];
        q.max_id = row_ids[17];
      }),
      with([&](ProbeQuery& q) {
        q.since_ms = 2004;
        q.until_ms = 2019;
      }),
      with([&](ProbeQuery& q) { q.kind = ProbeKind::LongContext; }),
      with([&](ProbeQuery& q) {
        q.candidate_id = ids.cand;
        q.min_id = row_ids[2];
        q.until_ms = 2020;
        q.kind = ProbeKind::LongContext;
      }),
  };
  for (size_t k = 0; k < queries.size(); ++k) {
    INFO("query " << k);
    auto rows = st->probe_results(queries[k]);
    auto counts = st->probe_counts(queries[k]);
    REQUIRE(rows.ok());
    REQUIRE(counts.ok());
    CHECK(!rows->empty());
    std::map<std::tuple<int64_t, ProbeKind, Outcome>, int64_t> from_rows, counted;
    for (const auto& r : *rows) ++from_rows[{r.candidate_id, r.kind, r.outcome}];
    for (const auto& c : *counts) counted[{c.candidate_id, c.kind, c.outcome}] += c.n;
    CHECK(counted == from_rows);
  }
}

TEST_CASE("a candidate's or a stage's probe rows are read into a vector sized once, from the index") {
  // A week of probe rows is tens of thousands of 1 KB rows: grown by doubling,
  // the vector touches twice their memory (most of a whole `soakctl explain`).
  // Sized from a count of the index, it holds exactly the rows (13 and 5 here:
  // no doubling ends on them).
  TempDir tmp;
  auto st = open_rw(tmp.path() + "/s.db");
  Ids ids = seed(*st);
  const int64_t stage_id = running_canary(*st, ids);
  std::vector<int64_t> row_ids;
  for (int64_t i = 0; i < 13; ++i) {
    ProbeResult r = sample_result(ids, i);
    if (i < 5) r.stage_id = stage_id;
    if (i % 2) r.kind = ProbeKind::Burst;
    row_ids.push_back(*st->insert_probe_result(r));
  }
  ProbeQuery by_candidate;
  by_candidate.candidate_id = ids.cand;
  auto all = st->probe_results(by_candidate);
  REQUIRE(all.ok());
  CHECK(all->size() == 13);
  CHECK(all->capacity() == 13);
  ProbeQuery by_stage;
  by_stage.stage_id = stage_id;
  auto staged = st->probe_results(by_stage);
  REQUIRE(staged.ok());
  CHECK(staged->size() == 5);
  CHECK(staged->capacity() == 5);
  ProbeQuery bursts = by_candidate;
  bursts.kind = ProbeKind::Burst;
  auto of_kind = st->probe_results(bursts);
  REQUIRE(of_kind.ok());
  CHECK(of_kind->size() == 6);
  CHECK(of_kind->capacity() == 6);
  // The count bounds the rows; a filter no index holds leaves room, never too little.
  ProbeQuery window = by_candidate;
  window.min_id = row_ids[3];
  window.max_id = row_ids[9];
  window.since_ms = 2005;
  auto some = st->probe_results(window);
  REQUIRE(some.ok());
  CHECK(some->size() == 5);
  CHECK(some->capacity() == 7);
  for (const auto& r : *some) CHECK((r.id >= row_ids[5] && r.id <= row_ids[9]));
  ProbeQuery first = by_candidate;
  first.limit = 3;
  auto limited = st->probe_results(first);
  REQUIRE(limited.ok());
  CHECK(limited->size() == 3);
  CHECK(limited->capacity() == 3);
  CHECK(limited->front().id == row_ids[0]);
}

TEST_CASE("context reach: one row per judged canary, the latest read back per candidate") {
  TempDir tmp;
  auto st = open_rw(tmp.path() + "/s.db");
  Ids ids = seed(*st);
  auto none = st->context_reach(ids.cand);
  REQUIRE(none.ok());
  CHECK_FALSE(*none);
  ContextReach r;
  r.candidate_id = ids.cand;
  r.wall_ms = 1000;
  r.reach_tokens = 32768;
  r.configured_tokens = 131072;
  r.runtime_ctx_tokens = 32768;
  r.runtime_ctx_source = "/props n_ctx";
  REQUIRE(st->insert_context_reach(r).ok());
  r.wall_ms = 2000;
  r.reach_tokens = 65536;
  r.runtime_ctx_tokens.reset();
  r.runtime_ctx_source.clear();
  REQUIRE(st->insert_context_reach(r).ok());
  auto got = st->context_reach(ids.cand);
  REQUIRE(got.ok());
  REQUIRE(*got);
  CHECK((*got)->reach_tokens == 65536);
  CHECK((*got)->configured_tokens == 131072);
  CHECK_FALSE((*got)->runtime_ctx_tokens);
  CHECK((*got)->wall_ms == 2000);
}

TEST_CASE("upserts are idempotent and a new build is a new candidate") {
  TempDir tmp;
  auto st = open_rw(tmp.path() + "/s.db");
  Ids a = seed(*st);
  Ids b = seed(*st);
  CHECK(a.host == b.host);
  CHECK(a.cand == b.cand);
  CandidateRow c = *st->candidate(a.cand).value();
  c.build = "b9930-aaaaaaa";
  auto newer = st->upsert_candidate(c, 5000);
  REQUIRE(newer.ok());
  CHECK(*newer != a.cand);
  CHECK(st->candidates()->size() == 2);
}

TEST_CASE("promotion_status view answers the latest verdict per model/runtime/build") {
  TempDir tmp;
  auto st = open_rw(tmp.path() + "/s.db");
  Ids ids = seed(*st);
  VerdictRow v;
  v.candidate_id = ids.cand;
  v.wall_ms = 10'000;
  v.state = VerdictState::Running;
  v.judge_version = "1";
  v.config_hash = "abc";
  REQUIRE(st->insert_verdict(v).ok());
  v.wall_ms = 20'000;
  v.state = VerdictState::Promoted;
  v.metrics = {MetricEvidence{"ttft_ms/x", 10, 12, 1.5, 1.4, 1.3, 1.7, 0.1, 0.2, MetricResult::Pass, "within floor"}};
  REQUIRE(st->insert_verdict(v).ok());
  sqlite3_stmt* s = nullptr;
  REQUIRE(sqlite3_prepare_v2(
              st->db(),
              "SELECT verdict, build FROM promotion_status WHERE model='qwen3.6-35b-a3b' AND runtime='llama.cpp'", -1,
              &s, nullptr) == SQLITE_OK);
  REQUIRE(sqlite3_step(s) == SQLITE_ROW);
  CHECK(std::string(reinterpret_cast<const char*>(sqlite3_column_text(s, 0))) == "promoted");
  CHECK(std::string(reinterpret_cast<const char*>(sqlite3_column_text(s, 1))) == "b9928-81ff7abe5");
  CHECK(sqlite3_step(s) == SQLITE_DONE);
  sqlite3_finalize(s);
  auto latest = st->latest_verdict(ids.cand);
  REQUIRE(latest.ok());
  REQUIRE(latest->has_value());
  REQUIRE((*latest)->metrics.size() == 1);
  CHECK((*latest)->metrics[0].n_baseline == 12);
  auto status = st->status();
  REQUIRE(status.ok());
  REQUIRE(status->size() == 1);
  CHECK(status->front().verdict->state == VerdictState::Promoted);
}

TEST_CASE("a file that is not a soakd store is refused and left untouched") {
  TempDir tmp;
  SECTION("plain text") {
    std::string path = tmp.path() + "/notes.txt";
    std::ofstream(path) << "my precious notes, not a database\n";
    auto before = fs::file_size(path);
    auto r = SqliteStore::open(path, OpenMode::ReadWrite);
    REQUIRE_FALSE(r.ok());
    CHECK(r.message().find("is not a soakd store") != std::string::npos);
    CHECK(fs::file_size(path) == before);
  }
  SECTION("another application's SQLite database") {
    std::string path = tmp.path() + "/other.db";
    sqlite3* db = nullptr;
    REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
    REQUIRE(sqlite3_exec(db, "CREATE TABLE t(x); INSERT INTO t VALUES (42);", nullptr, nullptr, nullptr) == SQLITE_OK);
    sqlite3_close(db);
    auto r = SqliteStore::open(path, OpenMode::ReadWrite);
    REQUIRE_FALSE(r.ok());
    CHECK(r.message().find("is not a soakd store") != std::string::npos);
    CHECK_FALSE(fs::exists(path + "-wal"));  // journal mode was never switched
  }
}

TEST_CASE("a store from a newer soakd is refused before anything is written") {
  TempDir tmp;
  std::string path = tmp.path() + "/s.db";
  { open_rw(path); }
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
  std::string sql = "PRAGMA user_version = " + std::to_string(schema_version() + 1);
  REQUIRE(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr) == SQLITE_OK);
  sqlite3_close(db);
  for (auto mode : {OpenMode::ReadWrite, OpenMode::ReadOnly}) {
    auto r = SqliteStore::open(path, mode);
    REQUIRE_FALSE(r.ok());
    CHECK(r.message().find("written by a newer soakd") != std::string::npos);
  }
}

TEST_CASE("read-only open: missing store is a clear error; reads work while a writer writes") {
  TempDir tmp;
  std::string path = tmp.path() + "/s.db";
  auto missing = SqliteStore::open(path, OpenMode::ReadOnly);
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.message().find("no soakd store at") != std::string::npos);
  CHECK_FALSE(fs::exists(path));

  auto w = open_rw(path);
  Ids ids = seed(*w);
  REQUIRE(w->insert_probe_result(sample_result(ids, 1)).ok());
  auto ro = SqliteStore::open(path, OpenMode::ReadOnly);
  REQUIRE(ro.ok());
  CHECK((*ro)->probe_results({})->size() == 1);
  REQUIRE(w->insert_probe_result(sample_result(ids, 2)).ok());
  CHECK((*ro)->probe_results({})->size() == 2);
  // The reader cannot write.
  CHECK_FALSE((*ro)->insert_event(Event{0, 1, std::nullopt, std::nullopt, EventKind::Gap, "{}", std::nullopt}).ok());
}

TEST_CASE("kill -9 in the middle of a stream of inserts loses no reported row") {
  TempDir tmp;
  std::string path = tmp.path() + "/s.db";
  int64_t host, cand;
  {
    auto st = open_rw(path);
    Ids ids = seed(*st);
    host = ids.host;
    cand = ids.cand;
  }
  int fds[2];
  REQUIRE(pipe(fds) == 0);
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    // Writer: insert forever, report each id only after insert returned (committed).
    close(fds[0]);
    auto st = SqliteStore::open(path, OpenMode::ReadWrite);
    if (!st.ok()) _exit(3);
    for (int64_t i = 0;; ++i) {
      auto id = (*st)->insert_probe_result(sample_result({host, cand}, i));
      if (!id.ok()) _exit(4);
      int64_t v = *id;
      if (write(fds[1], &v, sizeof v) != sizeof v) _exit(5);
    }
  }
  close(fds[1]);
  std::set<int64_t> reported;
  int64_t v;
  while (reported.size() < 200 && read(fds[0], &v, sizeof v) == sizeof v) reported.insert(v);
  REQUIRE(kill(pid, SIGKILL) == 0);
  // Drain whatever the writer reported before it died.
  while (read(fds[0], &v, sizeof v) == sizeof v) reported.insert(v);
  close(fds[0]);
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGKILL);
  REQUIRE(reported.size() >= 200);

  auto st = open_rw(path);  // opens cleanly after the crash
  sqlite3_stmt* s = nullptr;
  REQUIRE(sqlite3_prepare_v2(st->db(), "PRAGMA integrity_check", -1, &s, nullptr) == SQLITE_OK);
  REQUIRE(sqlite3_step(s) == SQLITE_ROW);
  CHECK(std::string(reinterpret_cast<const char*>(sqlite3_column_text(s, 0))) == "ok");
  sqlite3_finalize(s);
  auto rows = st->probe_results({});
  REQUIRE(rows.ok());
  std::set<int64_t> present;
  for (const auto& r : *rows) present.insert(r.id);
  for (int64_t id : reported) {
    INFO("reported id " << id);
    CHECK(present.count(id) == 1);
  }
}

TEST_CASE("a second daemon lock on the same store is refused with the holder's pid") {
  TempDir tmp;
  std::string path = tmp.path() + "/s.db";
  auto first = DaemonLock::acquire(path);
  REQUIRE(first.ok());
  int fds[2];
  REQUIRE(pipe(fds) == 0);
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    auto second = DaemonLock::acquire(path);
    std::string msg = second.ok() ? "ACQUIRED" : second.message();
    (void)!write(fds[1], msg.data(), msg.size());
    _exit(0);
  }
  close(fds[1]);
  char buf[512] = {0};
  ssize_t n = read(fds[0], buf, sizeof buf - 1);
  close(fds[0]);
  waitpid(pid, nullptr, 0);
  std::string msg(buf, n > 0 ? static_cast<size_t>(n) : 0);
  CHECK(msg.find("another soakd (pid " + std::to_string(getpid()) + ")") != std::string::npos);
  first->reset();
  CHECK(DaemonLock::acquire(path).ok());  // released with its holder
}

TEST_CASE("the lock file carries the running daemon's note, rewritten in place, read only while it runs") {
  TempDir tmp;
  std::string path = tmp.path() + "/s.db";
  CHECK_FALSE(DaemonLock::running_note(path));  // no lock file
  auto lock = DaemonLock::acquire(path);
  REQUIRE(lock.ok());
  CHECK_FALSE(DaemonLock::running_note(path));  // nothing to say
  const auto size = std::filesystem::file_size(path + ".lock");
  (*lock)->set_note("store not writable since 2026-11-30T21:04:59Z: database or disk is full; 12 rows waiting");
  auto note = DaemonLock::running_note(path);
  REQUIRE(note);
  CHECK(*note == "store not writable since 2026-11-30T21:04:59Z: database or disk is full; 12 rows waiting");
  CHECK(std::filesystem::file_size(path + ".lock") == size);  // no new space needed to say it
  (*lock)->set_note(std::string(2000, 'x'));                  // cut to fit
  CHECK(std::filesystem::file_size(path + ".lock") == size);
  (*lock)->set_note("");
  CHECK_FALSE(DaemonLock::running_note(path));
  (*lock)->set_note("stale");
  lock->reset();
  CHECK_FALSE(DaemonLock::running_note(path));  // a note left by a soakd that is gone is not shown
}

TEST_CASE("the lock file names the running daemon's pid, only while it runs (soakctl signals it)") {
  TempDir tmp;
  std::string path = tmp.path() + "/s.db";
  CHECK_FALSE(DaemonLock::running_pid(path));  // no lock file
  auto lock = DaemonLock::acquire(path);
  REQUIRE(lock.ok());
  CHECK(DaemonLock::running_pid(path) == ::getpid());
  (*lock)->set_note("a note does not change the pid line");
  CHECK(DaemonLock::running_pid(path) == ::getpid());
  lock->reset();
  CHECK_FALSE(DaemonLock::running_pid(path));  // a pid left by a soakd that is gone is nobody to signal
}

TEST_CASE("control requests go in pending and come out handled") {
  TempDir tmp;
  auto st = open_rw(tmp.path() + "/s.db");
  ControlRequest c;
  c.wall_ms = 5;
  c.candidate = "qwen35b-llama";
  c.action = ControlAction::Promote;
  c.is_override = true;
  c.who = "ops";
  c.why = "benchmarked by hand";
  auto id = st->insert_control(c);
  REQUIRE(id.ok());
  auto pending = st->pending_controls();
  REQUIRE(pending->size() == 1);
  CHECK(pending->front().action == ControlAction::Promote);
  CHECK(pending->front().why == "benchmarked by hand");
  REQUIRE(st->mark_control_handled(*id, 9, "promoted").ok());
  CHECK(st->pending_controls()->empty());
}

// ---- every column of every row type round-trips -----------------------------

namespace {

ProbeResult every_probe_field(const Ids& ids, int64_t stage_id) {
  ProbeResult r;
  r.candidate_id = ids.cand;
  r.host_id = ids.host;
  r.stage_id = stage_id;
  r.started_wall_ms = 1'700'000'000'001;
  r.kind = ProbeKind::ToolCall;
  r.task = "functional";
  r.workload_id = "tool_call/weather";
  r.fixture_hash = "fx1";
  r.size_tokens = 4096;
  r.cache_state = CacheState::SharedPrefix;
  r.sampling_json = R"({"temperature":0.6})";
  r.thinking = true;
  r.client_concurrency = 3;
  r.runtime_slots = 4;
  r.group_id = 77;
  r.outcome = Outcome::EmptyToolArgs;
  r.http_status = 200;
  r.detail = "arguments {}";
  r.t_connect_us = 11;
  r.t_first_byte_us = 12;
  r.t_first_event_us = 13;
  r.t_first_token_us = 14;
  r.t_last_token_us = 15;
  r.t_terminal_us = 16;
  r.t_done_us = 17;
  r.itl_p50_us = 18;
  r.itl_p95_us = 19;
  r.itl_max_us = 20;
  r.client_decode_tps = 21.5;
  r.timing_artifact = true;
  r.prompt_tokens = 22;
  r.completion_tokens = 23;
  r.reasoning_tokens = 24;
  r.content_events = 25;
  r.reasoning_events = 26;
  r.server_prompt_n = 27;
  r.server_cache_n = 28;
  r.server_predicted_n = 29;
  r.server_prompt_ms = 30.25;
  r.server_prompt_tps = 31.25;
  r.server_predicted_ms = 32.25;
  r.server_predicted_tps = 33.25;
  r.server_ttft_ms = 34.25;
  r.server_draft_n = 35;
  r.server_draft_accepted = 36;
  r.server_load_ms = 38.5;
  r.server_running = 39;
  r.server_waiting = 40;
  r.queue_wait_us = 41;
  r.finish_reason = "tool_calls";
  r.response_model = "m";
  r.bytes_received = 37;
  r.body_hash = "bh";
  r.excerpt = "ex";
  r.extra_json = R"({"k":1})";
  return r;
}

// Every field, listed independently of the store's own declaration.
auto probe_fields(const ProbeResult& r) {
  return std::tie(r.id, r.candidate_id, r.host_id, r.stage_id, r.started_wall_ms, r.kind, r.task, r.workload_id,
                  r.fixture_hash, r.size_tokens, r.cache_state, r.sampling_json, r.thinking, r.client_concurrency,
                  r.runtime_slots, r.group_id, r.outcome, r.http_status, r.detail, r.t_connect_us, r.t_first_byte_us,
                  r.t_first_event_us, r.t_first_token_us, r.t_last_token_us, r.t_terminal_us, r.t_done_us, r.itl_p50_us,
                  r.itl_p95_us, r.itl_max_us, r.client_decode_tps, r.timing_artifact, r.prompt_tokens,
                  r.completion_tokens, r.reasoning_tokens, r.content_events, r.reasoning_events, r.server_prompt_n,
                  r.server_cache_n, r.server_predicted_n, r.server_prompt_ms, r.server_prompt_tps,
                  r.server_predicted_ms, r.server_predicted_tps, r.server_ttft_ms, r.server_draft_n,
                  r.server_draft_accepted, r.server_load_ms, r.server_running, r.server_waiting, r.queue_wait_us,
                  r.finish_reason, r.response_model, r.bytes_received, r.body_hash, r.excerpt, r.extra_json);
}

auto host_sample_fields(const HostSample& h) {
  return std::tie(h.id, h.host_id, h.wall_ms, h.free_bytes, h.active_bytes, h.inactive_bytes, h.wired_bytes,
                  h.compressed_bytes, h.available_bytes, h.total_bytes, h.swap_used_bytes, h.swap_total_bytes,
                  h.pageins, h.pageouts, h.swapins, h.swapouts, h.pressure_level, h.memorystatus_level,
                  h.psi_some_avg10, h.psi_full_avg10, h.psi_some_total_us, h.psi_full_total_us, h.thermal_level,
                  h.error);
}

auto process_sample_fields(const ProcessSample& p) {
  return std::tie(p.id, p.host_id, p.candidate_id, p.wall_ms, p.pid, p.name, p.start_time, p.footprint_bytes,
                  p.resident_bytes, p.swap_bytes, p.pss_bytes, p.error);
}

std::string column_text(sqlite3* db, const std::string& sql) {
  sqlite3_stmt* s = nullptr;
  REQUIRE(sqlite3_prepare_v2(db, sql.c_str(), -1, &s, nullptr) == SQLITE_OK);
  REQUIRE(sqlite3_step(s) == SQLITE_ROW);
  auto p = sqlite3_column_text(s, 0);
  std::string out = p ? reinterpret_cast<const char*>(p) : "NULL";
  sqlite3_finalize(s);
  return out;
}

void exec_sql(sqlite3* db, const std::string& sql) {
  char* err = nullptr;
  int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err);
  INFO(sql << ": " << (err ? err : ""));
  sqlite3_free(err);
  REQUIRE(rc == SQLITE_OK);
}

}  // namespace

TEST_CASE("every field of probe results and samples round-trips") {
  TempDir tmp;
  auto st = open_rw(tmp.path() + "/s.db");
  Ids ids = seed(*st);
  StageRow stage{0, ids.cand, StageKind::Gate, StageState::Running, 5, 6, 7, std::nullopt, ""};
  auto stage_id = st->insert_stage(stage);
  REQUIRE(stage_id.ok());

  ProbeResult r = every_probe_field(ids, *stage_id);
  auto id = st->insert_probe_result(r);
  REQUIRE(id.ok());
  r.id = *id;
  auto probes = st->probe_results({});
  REQUIRE(probes.ok());
  REQUIRE(probes->size() == 1);
  CHECK(probe_fields(probes->front()) == probe_fields(r));
  // Stored as before: enums by name, the derived category beside the outcome.
  CHECK(column_text(
            st->db(),
            "SELECT kind || '/' || cache_state || '/' || outcome || '/' || outcome_category FROM probe_results") ==
        "tool_call/shared_prefix/empty_tool_args/candidate");

  HostSample h;
  h.host_id = ids.host;
  h.wall_ms = 9;
  int64_t v = 100;
  for (auto* f : {&h.free_bytes, &h.active_bytes, &h.inactive_bytes, &h.wired_bytes, &h.compressed_bytes,
                  &h.available_bytes, &h.total_bytes, &h.swap_used_bytes, &h.swap_total_bytes, &h.pageins, &h.pageouts,
                  &h.swapins, &h.swapouts, &h.psi_some_total_us, &h.psi_full_total_us})
    *f = ++v;
  h.pressure_level = 2;
  h.memorystatus_level = 40;
  h.psi_some_avg10 = 1.5;
  h.psi_full_avg10 = 0.5;
  h.thermal_level = static_cast<int>(ThermalLevel::Heavy);
  h.error = "vm_stat: partial";
  auto hid = st->insert_host_sample(h);
  REQUIRE(hid.ok());
  h.id = *hid;
  HostSample empty_h;  // every optional NULL
  empty_h.host_id = ids.host;
  empty_h.wall_ms = 10;
  auto ehid = st->insert_host_sample(empty_h);
  REQUIRE(ehid.ok());
  empty_h.id = *ehid;
  auto hosts = st->host_samples({});
  REQUIRE(hosts.ok());
  REQUIRE(hosts->size() == 2);
  CHECK(host_sample_fields((*hosts)[0]) == host_sample_fields(h));
  CHECK(host_sample_fields((*hosts)[1]) == host_sample_fields(empty_h));

  ProcessSample p{0, ids.host, ids.cand, 11, 4242, "llama-server", 123, 1, 2, 3, 4, "no pss"};
  auto pid = st->insert_process_sample(p);
  REQUIRE(pid.ok());
  p.id = *pid;
  auto procs = st->process_samples({});
  REQUIRE(procs.ok());
  REQUIRE(procs->size() == 1);
  CHECK(process_sample_fields(procs->front()) == process_sample_fields(p));
}

TEST_CASE("the common sampling settings are stored as one character and read back whole; others as they are") {
  TempDir tmp;
  const std::string path = tmp.path() + "/s.db";
  auto st = open_rw(path);
  Ids ids = seed(*st);
  const std::string common = R"({"temperature":0.6,"top_p":0.95,"top_k":20})";
  const std::vector<std::string> samplings{common, R"({"temperature":0.6,"top_p":0.95,"top_k":"not_applied"})", "",
                                           "="};
  for (size_t i = 0; i < samplings.size(); ++i) {
    ProbeResult r = sample_result(ids, static_cast<int>(i));
    r.sampling_json = samplings[i];
    REQUIRE(st->insert_probe_result(r).ok());
  }
  CHECK(column_text(st->db(),
                    "SELECT group_concat(sampling, '|') FROM (SELECT sampling FROM probe_results ORDER BY id)") ==
        "=|" + samplings[1] + "||=");
  auto rows = st->probe_results({});
  REQUIRE(rows.ok());
  REQUIRE(rows->size() == 4);
  CHECK((*rows)[0].sampling_json == common);
  CHECK((*rows)[1].sampling_json == samplings[1]);
  CHECK((*rows)[2].sampling_json.empty());
  CHECK((*rows)[3].sampling_json == common);  // "=" is not a sampling any probe records

  // A store of the schema before: its rows hold the whole text, rewritten to the mark by the migration
  // (the later schemas' tables gone with it).
  exec_sql(st->db(), "UPDATE probe_results SET sampling = '" + common +
                         "' WHERE sampling = '='; DROP TABLE stage_evidence; "
                         "ALTER TABLE probe_results DROP COLUMN queue_wait_us; PRAGMA user_version = " +
                         std::to_string(kSamplingMarkSchema - 1));
  st.reset();
  st = open_rw(path);
  CHECK(st->user_version() == schema_version());
  CHECK(column_text(st->db(),
                    "SELECT group_concat(sampling, '|') FROM (SELECT sampling FROM probe_results ORDER BY id)") ==
        "=|" + samplings[1] + "||=");
  CHECK(st->probe_results({})->front().sampling_json == common);
}

TEST_CASE("events, stages, verdicts and control requests round-trip, with their stored defaults") {
  TempDir tmp;
  auto st = open_rw(tmp.path() + "/s.db");
  Ids ids = seed(*st);

  auto eid = st->insert_event(Event{0, 50, ids.host, ids.cand, EventKind::ProcessRestart, "", 1200});
  REQUIRE(eid.ok());
  CHECK(column_text(st->db(), "SELECT detail FROM events") == "{}");  // an empty detail is stored as {}
  auto events = st->events({});
  REQUIRE(events.ok());
  REQUIRE(events->size() == 1);
  CHECK(events->front().id == *eid);
  CHECK(events->front().kind == EventKind::ProcessRestart);
  CHECK(events->front().duration_ms == std::optional<int64_t>(1200));
  CHECK(events->front().detail_json == "{}");

  StageRow stage{0, ids.cand, StageKind::Soak, StageState::Running, 100, 200, 300, std::nullopt, ""};
  auto sid = st->insert_stage(stage);
  REQUIRE(sid.ok());
  stage.id = *sid;
  stage.state = StageState::Passed;
  stage.deadline_ms = 310;
  stage.ended_ms = 305;
  stage.reason = "all metrics pass";
  stage.started_ms = 999;  // not a mutable column: update_stage leaves it
  REQUIRE(st->update_stage(stage).ok());
  auto stages = st->stages(ids.cand);
  REQUIRE(stages.ok());
  REQUIRE(stages->size() == 1);
  const StageRow& g = stages->front();
  CHECK(g.kind == StageKind::Soak);
  CHECK(g.state == StageState::Passed);
  CHECK(g.started_ms == 100);
  CHECK(g.length_ms == 200);
  CHECK(g.deadline_ms == 310);
  CHECK(g.ended_ms == std::optional<int64_t>(305));
  CHECK(g.reason == "all metrics pass");

  VerdictRow v;
  v.candidate_id = ids.cand;
  v.stage_id = *sid;
  v.wall_ms = 400;
  v.state = VerdictState::Hold;
  v.stage = "soak";
  v.reason = "r";
  v.judge_version = "j1";
  v.config_hash = "c1";
  v.evidence_first_id = 3;
  v.evidence_last_id = 9;
  v.metrics = {MetricEvidence{"rss_slope", 5, 0, 1.0, 0.0, 0.5, 1.5, 2.0, 0.3, MetricResult::Marginal, "near"}};
  v.is_override = true;
  v.who = "ops";
  v.why = "w";
  auto vid = st->insert_verdict(v);
  REQUIRE(vid.ok());
  CHECK(column_text(st->db(), "SELECT baseline_mode || ' ' || judge_input FROM verdicts") == "none {}");
  auto latest = st->latest_verdict(ids.cand);
  REQUIRE(latest.ok());
  REQUIRE(latest->has_value());
  const VerdictRow& lv = **latest;
  CHECK(lv.id == *vid);
  CHECK(lv.stage_id == std::optional<int64_t>(*sid));
  CHECK(lv.state == VerdictState::Hold);
  CHECK(lv.evidence_last_id == 9);
  CHECK_FALSE(lv.baseline_id.has_value());
  CHECK(lv.baseline_mode == "none");
  CHECK(lv.judge_input_json == "{}");
  CHECK(lv.is_override);
  CHECK(lv.who == "ops");
  REQUIRE(lv.metrics.size() == 1);
  CHECK(lv.metrics[0].result == MetricResult::Marginal);
  CHECK(lv.metrics[0].hi == 1.5);
  // status() reads the latest verdict without its metrics and judge input.
  auto status = st->status();
  REQUIRE(status.ok());
  REQUIRE(status->size() == 1);
  REQUIRE(status->front().stage.has_value());
  CHECK(status->front().stage->state == StageState::Passed);
  REQUIRE(status->front().verdict.has_value());
  CHECK(status->front().verdict->id == *vid);
  CHECK(status->front().verdict->who == "ops");
  CHECK(status->front().verdict->metrics.empty());
  CHECK(status->front().verdict->judge_input_json.empty());

  ControlRequest c{0, 60, "qwen35b-llama", ids.cand, ControlAction::Abort, false, "me", "stop", std::nullopt, ""};
  auto cid = st->insert_control(c);
  REQUIRE(cid.ok());
  auto pending = st->pending_controls();
  REQUIRE(pending.ok());
  REQUIRE(pending->size() == 1);
  CHECK(pending->front().candidate_id == std::optional<int64_t>(ids.cand));
  CHECK(pending->front().action == ControlAction::Abort);
  CHECK_FALSE(pending->front().handled_ms.has_value());
}

// ---- a stored value that does not parse is an error, never a default --------

namespace {

// One corrupted column: what to write over it, and the query that must fail.
struct Corruption {
  std::string table, column, bad_value;
  std::string names;                                           // the vocabulary the message lists
  std::function<std::string(Store&, const Ids&)> query_error;  // "" when the query succeeded
};

template <class T>
std::string error_of(const Result<T>& r) {
  return r.ok() ? std::string() : r.message();
}

}  // namespace

TEST_CASE("a stored enum that does not parse fails the query, naming table, row, column and value") {
  const std::vector<Corruption> cases{
      {"probe_results", "outcome", "exploded", outcome_names(),
       [](Store& s, const Ids&) { return error_of(s.probe_results({})); }},
      {"probe_results", "kind", "telepathy", probe_kind_names(),
       [](Store& s, const Ids&) { return error_of(s.probe_results({})); }},
      {"probe_results", "cache_state", "warm", cache_state_names(),
       [](Store& s, const Ids&) { return error_of(s.probe_results({})); }},
      {"events", "kind", "meteor", event_kind_names(), [](Store& s, const Ids&) { return error_of(s.events({})); }},
      {"control_requests", "action", "restart", control_action_names(),
       [](Store& s, const Ids&) { return error_of(s.pending_controls()); }},
      {"candidates", "runtime", "tgi", runtime_kind_names(),
       [](Store& s, const Ids&) { return error_of(s.candidates()); }},
      {"candidates", "runtime", "tgi", runtime_kind_names(),
       [](Store& s, const Ids& ids) { return error_of(s.candidate(ids.cand)); }},
      {"candidates", "runtime", "tgi", runtime_kind_names(), [](Store& s, const Ids&) { return error_of(s.status()); }},
      {"stages", "state", "paused", stage_state_names(),
       [](Store& s, const Ids& ids) { return error_of(s.stages(ids.cand)); }},
      {"stages", "state", "paused", stage_state_names(), [](Store& s, const Ids&) { return error_of(s.status()); }},
      {"stages", "kind", "burn_in", stage_kind_names(),
       [](Store& s, const Ids& ids) { return error_of(s.stages(ids.cand)); }},
      {"verdicts", "state", "maybe", verdict_state_names(),
       [](Store& s, const Ids& ids) { return error_of(s.verdicts(ids.cand)); }},
      {"verdicts", "state", "maybe", verdict_state_names(),
       [](Store& s, const Ids& ids) { return error_of(s.latest_verdict(ids.cand)); }},
      {"verdicts", "state", "maybe", verdict_state_names(), [](Store& s, const Ids&) { return error_of(s.status()); }},
  };
  for (const Corruption& k : cases) {
    TempDir tmp;
    auto st = open_rw(tmp.path() + "/s.db");
    Ids ids = seed(*st);
    auto stage_id = st->insert_stage(StageRow{0, ids.cand, StageKind::Smoke, StageState::Running, 1, 2, 3, {}, ""});
    REQUIRE(stage_id.ok());
    REQUIRE(st->insert_probe_result(sample_result(ids, 1)).ok());
    REQUIRE(st->insert_event(Event{0, 1, ids.host, ids.cand, EventKind::Gap, "{}", 5}).ok());
    VerdictRow v;
    v.candidate_id = ids.cand;
    v.judge_version = "1";
    v.config_hash = "h";
    REQUIRE(st->insert_verdict(v).ok());
    ControlRequest c;
    c.candidate = "qwen35b-llama";
    REQUIRE(st->insert_control(c).ok());
    // Every query reads cleanly before the corruption.
    CHECK(k.query_error(*st, ids).empty());

    // Row 7, so the message's row id is not an accident of insertion order.
    // Some columns are guarded by CHECK constraints; an older or foreign writer need not have been.
    exec_sql(st->db(), "PRAGMA ignore_check_constraints = ON");
    exec_sql(st->db(), "PRAGMA foreign_keys = OFF");
    exec_sql(st->db(), "UPDATE " + k.table + " SET " + k.column + " = '" + k.bad_value + "', id = 7");
    if (k.table == "candidates") {
      exec_sql(st->db(), "UPDATE stages SET candidate_id = 7; UPDATE verdicts SET candidate_id = 7");
      ids.cand = 7;
    }

    std::string want = k.table + " row 7: column " + k.column + ": \"" + k.bad_value + "\" is not one of " + k.names;
    INFO(k.table << "." << k.column);
    CHECK(k.query_error(*st, ids) == want);
  }
}

TEST_CASE("the message for a bad control action reads as documented") {
  TempDir tmp;
  auto st = open_rw(tmp.path() + "/s.db");
  ControlRequest c;
  c.candidate = "x";
  REQUIRE(st->insert_control(c).ok());
  exec_sql(st->db(), "PRAGMA ignore_check_constraints = ON");
  exec_sql(st->db(), "UPDATE control_requests SET action = 'restart', id = 7");
  auto pending = st->pending_controls();
  REQUIRE_FALSE(pending.ok());
  CHECK(pending.message() == "control_requests row 7: column action: \"restart\" is not one of start, abort, promote");
}

TEST_CASE("verdict metrics that do not read fail the query, naming the verdict and the metric") {
  TempDir tmp;
  auto st = open_rw(tmp.path() + "/s.db");
  Ids ids = seed(*st);
  VerdictRow v;
  v.candidate_id = ids.cand;
  v.judge_version = "1";
  v.config_hash = "h";
  v.metrics = {MetricEvidence{"ttft_ms/x", 1, 1, 1, 1, 1, 1, 1, 1, MetricResult::Pass, ""}};
  auto vid = st->insert_verdict(v);
  REQUIRE(vid.ok());
  const std::string prefix = "verdicts row " + std::to_string(*vid) + ": column metrics: ";

  exec_sql(st->db(), "UPDATE verdicts SET metrics = replace(metrics, '\"pass\"', '\"great\"')");
  auto r = st->verdicts(ids.cand);
  REQUIRE_FALSE(r.ok());
  CHECK(r.message() ==
        prefix + "verdict metric \"ttft_ms/x\" has result \"great\", which is not one of " + metric_result_names());
  // status() does not load metrics, so it still answers.
  CHECK(st->status().ok());

  exec_sql(st->db(), "UPDATE verdicts SET metrics = '[{\"metric\": \"m\", \"n\": \"many\", \"result\": \"pass\"}]'");
  auto wrong_type = st->latest_verdict(ids.cand);
  REQUIRE_FALSE(wrong_type.ok());
  CHECK(wrong_type.message().rfind(prefix + "verdict metric \"m\" does not read: ", 0) == 0);

  exec_sql(st->db(), "UPDATE verdicts SET metrics = 'not json'");
  auto not_json = st->verdicts(ids.cand);
  REQUIRE_FALSE(not_json.ok());
  CHECK(not_json.message() == prefix + "verdict metrics are not a JSON array");
}
