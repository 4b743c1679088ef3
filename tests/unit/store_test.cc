#include <fcntl.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

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
  REQUIRE(sqlite3_prepare_v2(st->db(),
                             "SELECT verdict, build FROM promotion_status WHERE model='qwen3.6-35b-a3b' AND runtime='llama.cpp'",
                             -1, &s, nullptr) == SQLITE_OK);
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
