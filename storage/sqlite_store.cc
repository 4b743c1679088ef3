#include "storage/sqlite_store.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "core/files.h"
#include "storage/columns.h"
#include "storage/schema.h"
#include "storage/sqlite_stmt.h"

namespace soak {

namespace fs = std::filesystem;

// ============================================================== open
Status SqliteStore::check_location(const std::string& path) {
  const std::string fix = "; point \"store\" at a file in a writable folder";
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode))
      return make_error("store " + path + " is a directory; \"store\" names a file, e.g. \"" + path + "/soakd.db\"");
    if (!S_ISREG(st.st_mode)) return make_error("store " + path + " is not a regular file" + fix);
  }
  // The nearest folder that exists: soakd creates the rest (0700), and keeps
  // the -wal, -shm and .lock files beside the store.
  fs::path dir = fs::path(path).parent_path();
  std::error_code ec;
  while (!dir.empty() && !fs::exists(dir, ec) && dir != dir.parent_path()) dir = dir.parent_path();
  if (dir.empty()) dir = ".";
  struct statvfs vfs {};
  if (::statvfs(dir.c_str(), &vfs) == 0 && (vfs.f_flag & ST_RDONLY))
    return make_error("store " + path + " is on a read-only file system (" + dir.string() + ")" + fix);
  if (::access(dir.c_str(), W_OK | X_OK) != 0)
    return make_error("cannot write in " + dir.string() + " (" + std::strerror(errno) + "), where the store " + path +
                      " and its -wal, -shm and .lock files live" + fix);
  if (::access(path.c_str(), F_OK) == 0 && ::access(path.c_str(), R_OK | W_OK) != 0)
    return make_error("store " + path + " is not writable (" + std::strerror(errno) + ")" + fix);
  return {};
}

Result<std::unique_ptr<SqliteStore>> SqliteStore::open(const std::string& path, OpenMode mode, Durability durability) {
  const bool rw = mode != OpenMode::ReadOnly;
  const bool existing_only = mode != OpenMode::ReadWrite;  // soakctl never creates or migrates a store
  if (mode == OpenMode::ReadWrite)
    if (auto st = check_location(path); !st) return st.error();
  std::error_code ec;
  bool exists = fs::exists(path, ec);
  if (!exists && existing_only)
    return make_error("no soakd store at " + path + " (start soakd once to create it, or pass --db PATH)");
  if (!exists) {
    if (auto st = make_parent_dirs_private(path); !st) return make_error(st.message());
    int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0 && errno != EEXIST) return make_error("cannot create store " + path + ": " + std::strerror(errno));
    if (fd >= 0) ::close(fd);
  }

  sqlite3* db = nullptr;
  int flags = rw ? SQLITE_OPEN_READWRITE : SQLITE_OPEN_READONLY;
  if (sqlite3_open_v2(path.c_str(), &db, flags | SQLITE_OPEN_NOMUTEX, nullptr) != SQLITE_OK) {
    Error e = sqlite_error(db, "cannot open store " + path);
    sqlite3_close(db);
    return e;
  }
  auto fail_with = [&](Error e) -> Result<std::unique_ptr<SqliteStore>> {
    sqlite3_close(db);
    return e;
  };
  auto fail = [&](const std::string& m) { return fail_with(make_error(m)); };
  sqlite3_busy_timeout(db, kBusyTimeoutMs);

  // Identify before writing anything.
  auto app_id = query_int(db, "PRAGMA application_id");
  if (!app_id)
    return fail_with(make_error(app_id.code(), path + " is not a soakd store (not an SQLite database: " +
                                                   app_id.message() + "); refusing to touch it"));
  auto version = query_int(db, "PRAGMA user_version");
  auto tables = query_int(db, "SELECT count(*) FROM sqlite_master");
  if (!version || !tables) return fail_with(sqlite_error(db, "cannot read " + path));
  const bool empty = *tables == 0 && *version == 0 && *app_id == 0;
  if (!empty && *app_id != kSoakdApplicationId)
    return fail(
        path +
        " is not a soakd store (it holds other data); refusing to touch it. Point --db or \"store\" at another file.");
  if (*version > schema_version())
    return fail(path + " was written by a newer soakd (schema " + std::to_string(*version) +
                ", this soakd knows up to " + std::to_string(schema_version()) +
                "); upgrade soakd/soakctl. The store was not modified.");

  if (existing_only) {
    if (empty) return fail(path + " is an empty file, not a soakd store yet (start soakd once to create it)");
    // Reading an older store is fine (a table it lacks reads as empty, see
    // launches()); writing to one is not: the daemon migrates it first.
    if (*version < schema_version() && mode != OpenMode::ReadOnly)
      return fail(path + " has schema " + std::to_string(*version) + " but this soakctl expects " +
                  std::to_string(schema_version()) + "; start the new soakd once to migrate it");
    if (mode == OpenMode::ReadOnly)
      if (std::string compat = read_compat_sql(static_cast<int>(*version)); !compat.empty())
        if (auto st = exec(db, compat.c_str()); !st) return fail_with(error_in("cannot read " + path, st.error()));
    const char* p = mode == OpenMode::ReadOnly ? "PRAGMA query_only = ON" : "PRAGMA foreign_keys = ON";
    if (auto st = exec(db, p); !st) return fail_with(st.error());
    return std::unique_ptr<SqliteStore>(new SqliteStore(db, path, static_cast<int>(*version)));
  }

  const char* sync = durability == Durability::Full ? "PRAGMA synchronous = FULL" : "PRAGMA synchronous = OFF";
  for (const char* p : {"PRAGMA journal_mode = WAL", sync, "PRAGMA foreign_keys = ON"}) {
    if (auto st = exec(db, p); !st) return fail_with(error_in("cannot configure store " + path, st.error()));
  }
  // Migrate, one transaction per step, so a crash mid-migration leaves a whole version.
  int v = static_cast<int>(*version);
  const auto& ms = migrations();
  for (; v < schema_version(); ++v) {
    std::string sql = "BEGIN IMMEDIATE;\n" + std::string(ms[static_cast<size_t>(v)]) +
                      "\nPRAGMA application_id = " + std::to_string(kSoakdApplicationId) +
                      ";\nPRAGMA user_version = " + std::to_string(v + 1) + ";\nCOMMIT;";
    if (auto st = exec(db, sql.c_str()); !st) {
      exec(db, "ROLLBACK").ok();
      return fail_with(error_in("cannot migrate store " + path + " to schema " + std::to_string(v + 1), st.error()));
    }
  }
  ::chmod(path.c_str(), 0600);
  return std::unique_ptr<SqliteStore>(new SqliteStore(db, path, v));
}

SqliteStore::SqliteStore(sqlite3* db, std::string path, int version)
    : db_(db), path_(std::move(path)), version_(version), cache_(std::make_unique<StmtCache>()) {}

Status SqliteStore::begin_snapshot() { return exec(db_, "BEGIN DEFERRED"); }

SqliteStore::~SqliteStore() {
  cache_.reset();                                              // statements are finalized before the connection closes
  if (!sqlite3_get_autocommit(db_)) exec(db_, "COMMIT").ok();  // a snapshot's read transaction (begin_snapshot)
  sqlite3_close(db_);
}

// ============================================================== identities
// Hosts are written and never read back as rows, so they have no column declaration.
Result<int64_t> SqliteStore::upsert_host(const HostInfo& h, int64_t now_ms) {
  Stmt s(cache_.get(), db_,
         "INSERT INTO hosts (hostname, hw_model, mem_bytes, os_version, first_seen_ms, last_seen_ms) "
         "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (hostname, hw_model, mem_bytes, os_version) "
         "DO UPDATE SET last_seen_ms = excluded.last_seen_ms RETURNING id");
  if (s.ok()) s.bind(h.hostname).bind(h.hw_model).bind(h.mem_bytes).bind(h.os_version).bind(now_ms).bind(now_ms);
  return run_returning_id(db_, s, "upsert host");
}

Result<int64_t> SqliteStore::upsert_candidate(const CandidateRow& c, int64_t now_ms) {
  // The row as first seen now; an existing row only has last_seen and base_url refreshed.
  CandidateRow row = c;
  row.first_seen_ms = now_ms;
  row.last_seen_ms = now_ms;
  Stmt s(cache_.get(), db_,
         sql_of<CandidateRow>().insert +
             " ON CONFLICT (host_id, name, model, runtime, build, fingerprint) "
             "DO UPDATE SET last_seen_ms = excluded.last_seen_ms, base_url = excluded.base_url RETURNING id");
  if (s.ok()) bind_insert(s, row);
  return run_returning_id(db_, s, "upsert candidate");
}

Status SqliteStore::set_baseline(int64_t candidate_id, std::optional<int64_t> baseline_id) {
  Stmt s(cache_.get(), db_, "UPDATE candidates SET baseline_id = ? WHERE id = ?");
  s.bind(baseline_id).bind(candidate_id);
  return run_update(db_, s, "candidate baseline");
}

Status SqliteStore::put_stage_evidence(const StageEvidence& e) {
  Stmt s(cache_.get(), db_,
         "INSERT OR REPLACE INTO stage_evidence (stage_id, candidate_id, ts_ms, probe_max_id, measures) "
         "VALUES (?, ?, ?, ?, ?)");
  s.bind(e.stage_id).bind(e.candidate_id).bind(e.wall_ms).bind(e.probe_max_id).bind(e.measures_json);
  return run_update(db_, s, "stage evidence");
}

Status SqliteStore::set_fingerprint(int64_t candidate_id, const std::string& fingerprint) {
  Stmt s(cache_.get(), db_, "UPDATE candidates SET fingerprint = ? WHERE id = ?");
  s.bind(fingerprint).bind(candidate_id);
  return run_update(db_, s, "candidate fingerprint");
}

// ============================================================== rows
Result<int64_t> SqliteStore::insert_probe_result(const ProbeResult& r) {
  auto id = insert_row(cache_.get(), db_, r);
  if (!id || !r.golden) return id;
  GoldenAnswerRow g = *r.golden;
  g.candidate_id = r.candidate_id;
  g.stage_id = r.stage_id;
  g.wall_ms = r.started_wall_ms;
  if (auto gid = insert_golden_answer(g); !gid) return gid.error();
  return id;
}
Result<int64_t> SqliteStore::insert_host_sample(const HostSample& h) { return insert_row(cache_.get(), db_, h); }
Result<int64_t> SqliteStore::insert_process_sample(const ProcessSample& p) { return insert_row(cache_.get(), db_, p); }
Result<int64_t> SqliteStore::insert_event(const Event& e) { return insert_row(cache_.get(), db_, e); }

// ============================================================== stages, verdicts
Result<int64_t> SqliteStore::insert_stage(const StageRow& r) { return insert_row(cache_.get(), db_, r); }
Status SqliteStore::update_stage(const StageRow& r) { return update_row(cache_.get(), db_, r); }
Result<int64_t> SqliteStore::insert_verdict(const VerdictRow& v) { return insert_row(cache_.get(), db_, v); }
Result<int64_t> SqliteStore::insert_context_reach(const ContextReach& r) { return insert_row(cache_.get(), db_, r); }
Result<int64_t> SqliteStore::insert_golden_answer(const GoldenAnswerRow& r) { return insert_row(cache_.get(), db_, r); }

// ============================================================== managed runtimes
Result<int64_t> SqliteStore::insert_launch(const RuntimeLaunch& l) { return insert_row(cache_.get(), db_, l); }
Status SqliteStore::update_launch(const RuntimeLaunch& l) { return update_row(cache_.get(), db_, l); }

// ============================================================== control
Result<int64_t> SqliteStore::insert_control(const ControlRequest& c) { return insert_row(cache_.get(), db_, c); }

Status SqliteStore::mark_control_handled(int64_t id, int64_t now_ms, const std::string& result) {
  Stmt s(cache_.get(), db_, "UPDATE control_requests SET handled_ms = ?, result = ? WHERE id = ?");
  s.bind(now_ms).bind(result).bind(id);
  return run_update(db_, s, "control request");
}

}  // namespace soak
