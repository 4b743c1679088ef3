// check-config refuses a wall timeout shorter than the first-token budget of
// the largest capacity member: the stall timeout plus ceil(concurrency /
// slots) prefills of its size at limits.prefill_floor_tps (docs/DESIGN.md §2.2).
#include <string>

#include <nlohmann/json.hpp>

#include "core/capacity_budget.h"
#include "core/config.h"
#include "tests/catch.h"

using namespace soak;

namespace {
Result<Config> parse(const nlohmann::json& doc) { return parse_config(doc.dump(), "test.json", "/etc/soakd"); }

nlohmann::json doc_with_capacity(nlohmann::json capacity, std::optional<int> slots) {
  nlohmann::json c = {{"name", "a"}, {"model", "m"}, {"runtime", "llama.cpp"}, {"base_url", "http://127.0.0.1:8080"}};
  c["capacity"] = std::move(capacity);
  if (slots) c["slots"] = *slots;
  return {{"candidates", nlohmann::json::array({c})}};
}
}  // namespace

TEST_CASE("capacity budget: rounds of prefills are concurrency over slots, rounded up") {
  CHECK(capacity_prefill_rounds(8, 8) == 1);
  CHECK(capacity_prefill_rounds(8, 2) == 4);
  CHECK(capacity_prefill_rounds(9, 2) == 5);
  CHECK(capacity_prefill_rounds(8, std::nullopt) == 8);  // slots unknown: each waits for the ones before it
  Limits l;                                              // 2 min stall, 100 tok/s
  // 32K x 8 on 8 slots: 2 min + 327.68 s (one prefill).
  CHECK(capacity_member_budget_ms(CapacityEntry{32768, 8}, 8, l) == 2 * kMinute + 327'680);
  // The same on 2 slots: four prefills ahead of and including the last member's.
  CHECK(capacity_member_budget_ms(CapacityEntry{32768, 8}, 2, l) == 2 * kMinute + 4 * 327'680);
}

TEST_CASE("check-config: a wall timeout inside the last capacity member's budget is refused with the figures") {
  // 65K x 8 on 2 slots: 2 min + 4 x 655.36 s = 45m42s, past the 30 min wall.
  auto bad = parse(doc_with_capacity({{{"size", 65536}, {"concurrency", 8}}}, 2));
  REQUIRE_FALSE(bad.ok());
  INFO(bad.message());
  CHECK(bad.message().find("test.json: candidates[0].limits.wall_timeout: is 30m, within the first-token budget of "
                           "the last member of the 65536 x 8 capacity check: stall_timeout 2m + 4 prefill(s) of "
                           "65536 tokens at 100 tok/s (8 members on 2 slot(s)) = 45m42s") != std::string::npos);
  CHECK(bad.message().find("(e.g. \"50m42s\")") != std::string::npos);
  // The same entry on 8 slots is one prefill: 2 min + 655.36 s fits in 30 min.
  auto ok = parse(doc_with_capacity({{{"size", 65536}, {"concurrency", 8}}}, 8));
  INFO((ok.ok() ? std::string("ok") : ok.message()));
  CHECK(ok.ok());
}

TEST_CASE("check-config: without slots a capacity entry counts as one round, the best the runtime can do") {
  // The documented example, 32K x 8, passes without slots: one prefill, 2 min + 328 s.
  auto ok = parse(doc_with_capacity({{{"size", 32768}, {"concurrency", 8}}}, std::nullopt));
  INFO((ok.ok() ? std::string("ok") : ok.message()));
  CHECK(ok.ok());
  // A wall inside even one prefill is refused: 262,144 tokens at 100 tok/s is 2,622 s.
  auto bad = parse(doc_with_capacity({{{"size", 262144}, {"concurrency", 2}}}, std::nullopt));
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.message().find("1 prefill(s) of 262144 tokens") != std::string::npos);
  CHECK(bad.message().find("2 slot(s) at best: `slots` is not set") != std::string::npos);
  // The default entry (32K x the candidate's slots) is always one round.
  nlohmann::json d = doc_with_capacity(nullptr, 8);
  d["candidates"][0].erase("capacity");
  auto def = parse(d);
  INFO((def.ok() ? std::string("ok") : def.message()));
  CHECK(def.ok());
}
