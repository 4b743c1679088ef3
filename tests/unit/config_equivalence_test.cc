// The "equivalence" block (core/config_equivalence.cc, docs/DESIGN.md §3.13):
// defaults, per-candidate overrides, the config hash, and the errors a bad
// value gets.
#include <string>

#include "core/config.h"
#include "tests/catch.h"

using namespace soak;

namespace {

Result<Config> parse_text(const std::string& text) { return parse_config(text, "test.json", "/etc/soakd"); }

std::string file(const std::string& defaults, const std::string& cand_extra = "") {
  return R"({"defaults": {)" + defaults +
         R"(}, "candidates": [{"name": "a", "model": "m", "runtime": "llama.cpp", "base_url": "http://127.0.0.1:8080")" +
         cand_extra + "}]}";
}

}  // namespace

TEST_CASE("equivalence: on by default, a fork margin of 0.1 nats, KL at most twice the floor") {
  auto c = parse_text(file(""));
  REQUIRE(c.ok());
  const EquivalenceSettings& e = c->candidates.at(0).settings.equivalence;
  CHECK(e.enabled == EquivalenceSwitch::On);
  CHECK(e.max_fork_margin == kDefaultEquivalenceMaxForkMargin);
  CHECK(e.max_fork_margin == 0.1);
  CHECK(e.kl_factor == 2.0);
  CHECK(e.min_kl == 0.001);
}

TEST_CASE("equivalence: defaults merged with a candidate's own, key by key, and in its hash") {
  auto c = parse_text(
      file(R"("equivalence": {"max_fork_margin": 0.5})", R"(, "equivalence": {"enabled": false, "kl_factor": 4})"));
  REQUIRE(c.ok());
  const EquivalenceSettings& e = c->candidates.at(0).settings.equivalence;
  CHECK(e.enabled == EquivalenceSwitch::Off);
  CHECK(e.max_fork_margin == 0.5);
  CHECK(e.kl_factor == 4);
  CHECK(e.min_kl == kDefaultEquivalenceMinKl);

  auto plain = parse_text(file(""));
  REQUIRE(plain.ok());
  CHECK(plain->candidate_hash(plain->candidates.at(0)) != c->candidate_hash(c->candidates.at(0)));
  // Spelling out the defaults changes nothing: earlier hashes stay.
  auto spelled = parse_text(file(R"("equivalence": {"enabled": true, "max_fork_margin": 0.1})"));
  REQUIRE(spelled.ok());
  CHECK(plain->candidate_hash(plain->candidates.at(0)) == spelled->candidate_hash(spelled->candidates.at(0)));
}

TEST_CASE("equivalence: bad values name the key and the fix") {
  auto expect = [](const std::string& text, const std::string& path) {
    auto c = parse_text(text);
    REQUIRE_FALSE(c.ok());
    INFO(c.message());
    CHECK(c.message().find("test.json: " + path) != std::string::npos);
  };
  expect(file(R"("equivalence": {"enabled": "yes"})"), "defaults.equivalence.enabled");
  expect(file(R"("equivalence": {"max_fork_margin": -1})"), "defaults.equivalence.max_fork_margin");
  expect(file(R"("equivalence": {"kl_factor": 0.5})"), "defaults.equivalence.kl_factor");
  expect(file(R"("equivalence": {"max_fork": 0.1})"), "defaults.equivalence.max_fork");
}
