// The launch cap and the slo floors in whole campaigns, virtual time: a launch
// fingerprint whose default output cap is below limits.min_server_cap holds
// the candidate at smoke before a single probe is dispatched; a first build
// too slow to use is rejected with the floor in its reason
// (docs/DESIGN.md §3.11).
#include <sstream>

#include "campaigns/recipe_store.h"
#include "soakctl/soakctl.h"
#include "tests/catch.h"
#include "tests/support/sim_world.h"

using namespace soak;
using namespace soak::sim;

namespace {

// An MLX-LM candidate; its build read from HTTP (with the fingerprint) unless `build` says otherwise.
std::string mlx(const std::string& name, int port, const std::string& extra = "",
                const std::string& build = R"({"from": "http"})") {
  return R"({"name": ")" + name + R"(", "model": "qwen3.6-35b-a3b", "runtime": "mlx-lm", "build": )" + build +
         R"(, "base_url": "http://127.0.0.1:)" + std::to_string(port) + "\"" + extra + "}";
}

// MLX-LM started without --max-tokens: its argv says 512 (probes/runtimes/mlx_lm.cc).
const std::string kMlx512 = R"({"model":"mlx-community/Qwen3.6-35B-A3B-4bit","max_tokens_default":512})";
const std::string kMlx32k = R"({"model":"mlx-community/Qwen3.6-35B-A3B-4bit","max_tokens_default":32768})";

}  // namespace

TEST_CASE("campaign: an MLX-LM launched at its 512 default is held at smoke before any probe") {
  World w(candidate("llama", 18431) + "," + mlx("mlx", 18432));
  w.runner->at("mlx").fingerprint = kMlx512;
  w.run(kDay, [&] {
    auto v = w.verdict("mlx");
    return v && v->state != VerdictState::Running;
  });
  auto v = w.verdict("mlx");
  REQUIRE(v);
  INFO(v->reason);
  CHECK(v->state == VerdictState::Hold);
  CHECK(v->stage == "smoke");
  CHECK(v->reason.find("512 tokens") != std::string::npos);
  CHECK(v->reason.find("--max-tokens 32768") != std::string::npos);
  CHECK(v->reason.find("accept_server_cap: true") != std::string::npos);
  // Held from the fingerprint alone: no smoke task ran, no answer was judged.
  CHECK(w.runner->runs_of("mlx") == 0);
  ProbeQuery q;
  q.candidate_id = w.row("mlx")->id;
  CHECK(w.store->probe_results(q)->empty());
  // Its stage is closed, and the other candidate is untouched.
  auto st = w.stages("mlx");
  REQUIRE(st.size() == 1);
  CHECK(st[0].kind == StageKind::Smoke);
  CHECK(st[0].state != StageState::Running);

  // soakctl explain recomputes the same verdict from the stored recipe.
  std::ostringstream out, err;
  CHECK(soakctl_main({"--db", w.tmp.path() + "/s.db", "explain", "mlx"}, out, err, w.clock) == kCtlExitOk);
  INFO(out.str() << err.str());
  CHECK(out.str().find("identical") != std::string::npos);
  CHECK(out.str().find("launch/server_cap") != std::string::npos);
}

TEST_CASE("campaign: the same launch with accept_server_cap, or with --max-tokens 32768, goes on") {
  SECTION("accepted") {
    World w(mlx("mlx", 18432, R"(, "accept_server_cap": true)"));
    w.runner->at("mlx").fingerprint = kMlx512;
    w.run(10 * kDay);
    auto v = w.verdict("mlx");
    REQUIRE(v);
    INFO(v->reason);
    CHECK(v->state == VerdictState::Promoted);
    CHECK(has_metric(*v, "launch/server_cap", MetricResult::Pass));
  }
  SECTION("lifted") {
    World w(mlx("mlx", 18432));
    w.runner->at("mlx").fingerprint = kMlx32k;
    w.run(kDay, [&] { return w.runner->runs_of("mlx") > 5; });
    auto v = w.verdict("mlx");
    REQUIRE(v);
    CHECK(v->state == VerdictState::Running);
    CHECK(w.stages("mlx").size() >= 2);  // smoke passed, the canary runs
  }
}

TEST_CASE("campaign: a cap first known after the smoke started still holds the campaign") {
  // A fixed build registers at once and its smoke starts; its fingerprint
  // (and the cap) is read next: the running stage, or the next one at its
  // start, ends held.
  World w(mlx("mlx", 18432, "", R"({"fixed": "0.32.0"})"));
  w.runner->at("mlx").fingerprint = kMlx512;
  w.run(kDay, [&] {
    auto v = w.verdict("mlx");
    return v && v->state != VerdictState::Running;
  });
  auto v = w.verdict("mlx");
  REQUIRE(v);
  INFO(v->reason);
  CHECK(v->state == VerdictState::Hold);
  CHECK((v->stage == "smoke" || v->stage == "canary"));
  CHECK(v->reason.find("512 tokens") != std::string::npos);
  CHECK(w.row("mlx")->fingerprint == kMlx512);
}

TEST_CASE("campaign: a first build decoding at 2.8 tok/s is rejected at smoke, the floor in the reason") {
  World w(candidate("slow", 18431));
  w.runner->at("slow").speed = 40.0 / 2.8;  // the simulated runtime decodes at 40 tok/s
  w.run(kDay);
  auto v = w.verdict("slow");
  REQUIRE(v);
  INFO(v->reason);
  CHECK(v->state == VerdictState::Rejected);
  CHECK(v->stage == "smoke");
  CHECK(v->reason.find("slo/decode_tps") != std::string::npos);
  CHECK(v->reason.find("slo.min_decode_tps 3 tok/s") != std::string::npos);
  CHECK(v->reason.find("S1:108") != std::string::npos);
}
