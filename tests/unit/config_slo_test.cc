// The "slo" block, limits.min_server_cap and accept_server_cap: defaults,
// per-candidate overrides, and the errors a bad value gets.
#include <string>

#include "core/config.h"
#include "tests/catch.h"

using namespace soak;

namespace {

Result<Config> parse_text(const std::string& text) { return parse_config(text, "test.json", "/etc/soakd"); }

std::string file(const std::string& defaults, const std::string& cand_extra = "") {
  return R"({"defaults": {)" + defaults +
         R"(}, "candidates": [{"name": "a", "model": "m", "runtime": "mlx-lm", "base_url": "http://127.0.0.1:8080")" +
         cand_extra + "}]}";
}

}  // namespace

TEST_CASE("slo: the defaults are the seeds' too-slow lines") {
  auto c = parse_text(file(""));
  REQUIRE(c.ok());
  const CampaignSettings& s = c->candidates[0].settings;
  CHECK(s.slo.min_decode_tps == 3.0);
  CHECK(s.slo.max_short_wall_ms == 180'000);
  CHECK(s.slo.max_warm_ttft_ms == 90'000);
  CHECK(slo_floor_ms(s.slo.max_ttft, 0) == 90'000);
  CHECK(slo_floor_ms(s.slo.max_ttft, 12'288) == 300'000);
  CHECK(slo_floor_ms(s.slo.max_turn_wall, 12'288) == 300'000);
  CHECK(s.slo.min_breaches == 3);
  CHECK(s.slo.max_breach_share == 0.10);
  CHECK(s.limits.min_server_cap == 8192);
  CHECK_FALSE(c->candidates[0].accept_server_cap);
}

TEST_CASE("slo: defaults merged with a candidate's own floors, key by key") {
  auto c = parse_text(file(R"("slo": {"min_decode_tps": 5, "short_wall": "2m"}, "limits": {"min_server_cap": 4096})",
                           R"(, "accept_server_cap": true, "slo": {"ttft": [{"size": 0, "max": "60s"}, )"
                           R"({"size": 8192, "max": "4m"}]})"));
  INFO((c.ok() ? std::string() : c.message()));
  REQUIRE(c.ok());
  const CandidateConfig& a = c->candidates[0];
  CHECK(a.settings.slo.min_decode_tps == 5);
  CHECK(a.settings.slo.max_short_wall_ms == 120'000);
  CHECK(a.settings.slo.max_ttft == std::vector<SloPoint>{{0, 60'000}, {8192, 240'000}});
  CHECK(a.settings.limits.min_server_cap == 4096);
  CHECK(a.accept_server_cap);
  // The effective settings are part of the candidate's hash; the defaults
  // leave the hash every earlier verdict has.
  auto plain = parse_text(file(""));
  REQUIRE(plain.ok());
  CHECK(c->candidate_hash(a) != plain->candidate_hash(plain->candidates[0]));
}

TEST_CASE("slo: bad floors name the key and the fix") {
  auto expect = [](const std::string& text, const std::string& path, const std::string& what) {
    auto c = parse_text(text);
    REQUIRE_FALSE(c.ok());
    INFO(c.message());
    CHECK(c.message().find("test.json: " + path + ": " + what) != std::string::npos);
  };
  expect(file(R"("slo": {"ttft": [{"size": 12288, "max": "300s"}, {"size": 1024, "max": "400s"}]})"),
         "defaults.slo.ttft[1].size", "must be larger than the size of the point before it");
  expect(file(R"("slo": {"ttft": [{"size": 0, "max": "300s"}, {"size": 1024, "max": "90s"}]})"),
         "defaults.slo.ttft[1].max", "must not be below the floor of the point before it");
  expect(file(R"("slo": {"turn_wall": []})"), "defaults.slo.turn_wall", "must be a non-empty array");
  expect(file(R"("slo": {"ttft": [{"size": 0}]})"), "defaults.slo.ttft[0]", "needs both \"size\"");
  expect(file(R"("slo": {"ttft": [{"size": 0, "max": "9s", "min": "1s"}]})"), "defaults.slo.ttft[0].min",
         "unknown key \"min\"");
  expect(file(R"("slo": {"min_decode_tps": -1})"), "defaults.slo.min_decode_tps", "must be between 0 and");
  expect(file(R"("slo": {"max_breach_share": 2})"), "defaults.slo.max_breach_share", "must be between 0 and 1");
  expect(file(R"("limits": {"min_server_cap": 0})"), "defaults.limits.min_server_cap", "must be at least 1");
  expect(file("", R"(, "accept_server_cap": "yes")"), "candidates[0].accept_server_cap", "must be");
}
