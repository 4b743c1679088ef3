#include <sqlite3.h>

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "daemon/soakctl/soakctl.h"
#include "storage/schema.h"
#include "storage/sqlite_store.h"
#include "tests/catch.h"
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

  int run(const std::vector<std::string>& args, std::string* out = nullptr, std::string* err = nullptr) {
    std::ostringstream o, e;
    int code = soakctl_main(args, o, e, clock);
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

TEST_CASE("soakctl verdict exit codes: 0 promoted, 1 rejected, 3 undecided, 4 unknown") {
  Fixture f;
  f.add("old", "b9430", VerdictState::Promoted);
  std::string out, err;
  CHECK(f.run({"--db", f.db, "verdict", "--model", "qwen3.6-35b-a3b", "--runtime", "llama.cpp"}, &out) == 0);
  CHECK(out.find("promoted") != std::string::npos);

  f.add("new", "b9502", VerdictState::Rejected);  // newest build wins without --build
  CHECK(f.run({"--db", f.db, "verdict", "--model", "qwen3.6-35b-a3b", "--runtime", "llama.cpp"}, &out) == 1);
  CHECK(out.find("stalled stream after HTTP 200") != std::string::npos);
  CHECK(f.run({"--db", f.db, "verdict", "--model", "qwen3.6-35b-a3b", "--runtime", "llama.cpp", "--build", "b9430"}) == 0);

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
  std::ofstream(cfg) << R"({"store": "soakd.db", "candidates": []})";
  std::string out;
  CHECK(f.run({"--config", cfg, "status"}, &out) == 0);
  CHECK(out.find("promoted") != std::string::npos);
}
