// Golden answers in the store (table golden_answers, schema v6,
// docs/DESIGN.md §3.13): every field round-trips, rows group into runs in the order they
// began, a stored enum the store does not know fails the read, and the size
// of one run stays small.
#include <sqlite3.h>

#include <cmath>
#include <string>

#include "core/golden.h"
#include "storage/schema.h"
#include "storage/sqlite_store.h"
#include "tests/catch.h"
#include "tests/support/temp_dir.h"

using namespace soak;

namespace {

std::unique_ptr<SqliteStore> open_rw(const std::string& path) {
  auto s = SqliteStore::open(path, OpenMode::ReadWrite);
  INFO((s.ok() ? std::string() : s.message()));
  REQUIRE(s.ok());
  return std::move(*s);
}

int64_t seed_candidate(Store& st) {
  auto host = st.upsert_host(HostInfo{"studio", "Mac15,14", 512LL << 30, "macOS 15.5"}, 1000);
  REQUIRE(host.ok());
  CandidateRow c;
  c.host_id = *host;
  c.name = "llama";
  c.model = "tiny";
  c.runtime = RuntimeKind::LlamaCpp;
  c.build = "b9928-81ff7abe5";
  c.base_url = "http://127.0.0.1:8080";
  auto cand = st.upsert_candidate(c, 1000);
  REQUIRE(cand.ok());
  return *cand;
}

// A 64-token answer with a top-5 at every position, token ids from a 32K vocabulary.
GoldenAnswer answer(const std::string& prompt, int salt) {
  GoldenAnswer a;
  a.prompt_id = prompt;
  a.text_hash = "h" + prompt;
  a.logprobs = LogprobShape::TopK;
  for (int i = 0; i < 64; ++i) {
    TokenStep s;
    const int64_t id = (i * 7919 + salt) % 32000;
    s.chosen = {" tok" + std::to_string(id), id, -0.0123 * (i % 5)};
    s.top.push_back(s.chosen);
    for (int k = 1; k < 5; ++k) s.top.push_back({" alt" + std::to_string(id + k), id + k, -1.5 * k - 0.001 * i});
    a.steps.push_back(std::move(s));
  }
  return a;
}

}  // namespace

TEST_CASE("golden answers round-trip and group into runs, oldest first") {
  TempDir dir;
  const std::string path = dir.path() + "/soak.db";
  auto st = open_rw(path);
  const int64_t cand = seed_candidate(*st);
  for (const char* run : {"run-a", "run-b"}) {
    for (int p = 0; p < 3; ++p) {
      GoldenAnswerRow r = golden_row(answer("factual/0" + std::to_string(p), p));
      r.candidate_id = cand;
      r.wall_ms = 5000 + p;
      r.run = run;
      r.set_hash = "set1";
      REQUIRE(st->insert_golden_answer(r).ok());
    }
  }
  GoldenAnswerRow text_only;
  text_only.candidate_id = cand;
  text_only.run = "run-b";
  text_only.set_hash = "set1";
  text_only.prompt_id = "tool_call/00";
  text_only.text_hash = "abc";
  text_only.steps = encode_steps({});
  REQUIRE(st->insert_golden_answer(text_only).ok());

  auto rows = st->golden_answers(cand);
  REQUIRE(rows.ok());
  REQUIRE(rows->size() == 7);
  CHECK((*rows)[0].id < (*rows)[1].id);
  CHECK((*rows)[0].logprobs == LogprobShape::TopK);
  CHECK((*rows)[6].logprobs == LogprobShape::None);
  CHECK_FALSE((*rows)[0].stage_id);

  const auto runs = group_golden_runs(*rows);
  REQUIRE(runs.size() == 2);
  CHECK(runs[0].run == "run-a");
  CHECK(runs[0].set_hash == "set1");
  CHECK(runs[0].answers.answers.size() == 3);
  CHECK(runs[1].answers.answers.size() == 4);
  const GoldenAnswer want = answer("factual/01", 1);
  const GoldenAnswer& got = runs[0].answers.answers[1];
  CHECK(got.prompt_id == want.prompt_id);
  REQUIRE(got.steps.size() == want.steps.size());
  for (size_t i = 0; i < want.steps.size(); ++i) {
    CHECK(got.steps[i].chosen.id == want.steps[i].chosen.id);
    CHECK(got.steps[i].chosen.token == want.steps[i].chosen.token);
    REQUIRE(got.steps[i].top.size() == 5);
    for (size_t k = 0; k < 5; ++k)
      CHECK(std::fabs(got.steps[i].top[k].logprob - want.steps[i].top[k].logprob) <= 0.5 / kLogprobStoredScale);
  }
  CHECK(runs[1].answers.answers[3].steps.empty());

  // One answer's stored steps, every alternative a token of its own (the
  // worst case): under 10 KB, so a run of 32 stays near 300 KB.
  const std::string encoded = encode_steps(want.steps);
  INFO("bytes per 64-token answer: " << encoded.size());
  CHECK(encoded.size() < 10 * 1024);

  SECTION("an unknown logprob shape fails the read, naming the table, column and value") {
    st.reset();
    sqlite3* db = nullptr;
    REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
    REQUIRE(sqlite3_exec(db, "UPDATE golden_answers SET logprobs = 'maybe' WHERE id = 2", nullptr, nullptr, nullptr) ==
            SQLITE_OK);
    sqlite3_close(db);
    auto again = open_rw(path);
    auto bad = again->golden_answers(cand);
    REQUIRE_FALSE(bad.ok());
    CHECK(bad.message().find("golden_answers") != std::string::npos);
    CHECK(bad.message().find("maybe") != std::string::npos);
  }
}
