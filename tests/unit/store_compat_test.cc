// A store written by an earlier soakd (tests/fixtures/store/README.md) opens and
// reads the same with today's code: soakctl status prints what the build that
// wrote it printed, and explain shows every stored verdict unchanged. Its
// verdicts were judged by judge-1; explain recomputes them with today's rules
// and says the rules changed since (exit 0), never a mismatch. Opened
// read-write, it is migrated in place and reads the same.
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "judges/judge.h"
#include "soakctl/soakctl.h"
#include "storage/sqlite_store.h"
#include "tests/catch.h"
#include "tests/support/temp_dir.h"

using namespace soak;
using json = nlohmann::json;

namespace {

const std::string kDir = std::string(SOAKD_FIXTURES_DIR) + "/store";
const char* kCandidates[] = {"llama-b9430", "llama-b9502", "omlx-35b"};

json read_json(const std::string& path) {
  std::ifstream f(path);
  REQUIRE(f.good());
  return json::parse(f);
}

json ctl_json(const std::string& db, std::vector<std::string> args, int want_rc = 0) {
  std::vector<std::string> argv{"--db", db};
  argv.insert(argv.end(), args.begin(), args.end());
  argv.push_back("--json");
  std::ostringstream out, err;
  VirtualClock clock{1'800'000'000'000};
  int rc = soakctl_main(argv, out, err, clock);
  INFO(err.str());
  REQUIRE(rc == want_rc);
  return json::parse(out.str());
}

std::string copy_fixture(const TempDir& tmp) {
  std::string db = tmp.path() + "/soakd.db";
  std::filesystem::copy_file(kDir + "/demo-v1.db", db);
  return db;
}

void check_reads_as_written(const std::string& db) {
  CHECK(ctl_json(db, {"status"}) == read_json(kDir + "/demo-v1.status.json"));
  for (const char* c : kCandidates) {
    INFO(c);
    json want = read_json(kDir + "/demo-v1.explain-" + std::string(c) + ".json");
    json got = ctl_json(db, {"explain", c});
    // The stored verdict and the candidate read back unchanged.
    CHECK(got["verdict"] == want["verdict"]);
    for (const char* key : {"candidate", "model", "runtime", "build"}) CHECK(got[key] == want[key]);
    if (want.contains("latest")) CHECK(got["latest"] == want["latest"]);
    // Recomputed with today's rules: a different judge, said so.
    CHECK(want["verdict"]["judge_version"] == "judge-1");
    CHECK(got["recomputed"]["judge_version"] == std::string(kJudgeVersion));
    CHECK(got["recomputed"]["rules_changed"] == true);
    CHECK(got.contains("metrics"));
  }
}

}  // namespace

TEST_CASE("a store from the earlier layout reads the same, read-only") {
  TempDir tmp;
  std::string db = copy_fixture(tmp);
  check_reads_as_written(db);
}

TEST_CASE("a store from the earlier layout opened read-write is migrated and reads the same") {
  TempDir tmp;
  std::string db = copy_fixture(tmp);
  {
    auto st = SqliteStore::open(db, OpenMode::ReadWrite);
    REQUIRE(st.ok());
    auto cands = (*st)->candidates();
    REQUIRE(cands.ok());
    CHECK(cands->size() == 3);
  }
  check_reads_as_written(db);
}
