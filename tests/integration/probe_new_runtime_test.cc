// An eighth runtime, added as docs/DESIGN.md §7 says a runtime is added:
// one file holding its entry, one line in a table. The "Acme" server below
// is made up: OpenAI-compatible, with a health route and a build route of
// its own. The entry and the table are the whole of it; the engine takes the
// table through EngineOptions::runtimes, and the composition root's process
// signatures come from the same table (daemon/wiring.h runtime_signatures()).
// Against the bundled fake runtime (llama.cpp flavour, which serves /health
// and /props) the rows show the entry's routes and parsers were the ones used.
//
// What production needs besides: a config names a runtime by its RuntimeKind,
// so a real eighth runtime also gets its enum value and its name in
// core/types.cc kRuntimes, and its line in probes/runtimes/catalog.cc (with the
// extern declaration of its entry there). Here the kind is a value the enum
// does not name, which no config could spell.
#include <string>
#include <string_view>

#include "daemon/wiring.h"
#include "platform/runtime_processes.h"
#include "probes/json_fields.h"
#include "probes/runtimes/catalog.h"
#include "probes/runtimes/runtime.h"
#include "tests/catch.h"
#include "tests/fake_runtime/fake_runtime.h"
#include "tests/integration/probe_harness.h"

using namespace soak;
using namespace soak::probe_test;
using fake::FakeRuntime;
using fake::Flavour;
using fake::ListenerConfig;
using fake::Scenario;

namespace {

// ---------------------------------------------------------------- the one file: Acme's entry

constexpr RuntimeKind kAcme = static_cast<RuntimeKind>(100);

// Acme says it is up with {"status":"ok"}; any other 2xx answer is not Acme.
probes::HealthVerdict acme_health(int http_status, std::string_view body) {
  if (http_status < 200 || http_status >= 300) return probes::health_not_ok(http_status, body);
  if (probes::jsonf::get_string(probes::jsonf::parse_object(body), "status") == "ok")
    return {probes::HealthState::Up, "acme ok"};
  return {probes::HealthState::Down, "not an Acme health answer"};
}

// Its build is /props build_info, which it reports as "acme <build_info>".
Result<std::string> acme_build(std::string_view body) {
  auto b = probes::jsonf::get_string(probes::jsonf::parse_object(body), "build_info");
  if (!b) return make_error("/props has no build_info");
  return "acme " + *b;
}

constexpr std::string_view kAcmePrograms[] = {"acme-server"};

constexpr probes::Runtime kAcmeRuntime{
    .kind = kAcme,
    .notes = "a made-up OpenAI-compatible server",
    .default_port = 9999,
    .health = {"GET", "/health"},
    .models = {"GET", "/v1/models"},
    .build = probes::HttpRoute{"GET", "/props"},
    .read_health = acme_health,
    .build_ask = probes::BuildAsk::Route,
    .read_build = acme_build,
    .processes = {.programs = kAcmePrograms},
};

// ---------------------------------------------------------------- the one table line

constexpr const probes::Runtime* kTable[] = {&kAcmeRuntime};

// ---------------------------------------------------------------- the test's own plumbing

struct Fake {
  Fake() : rt({fast()}) { REQUIRE(rt.start().ok()); }
  static ListenerConfig fast() {
    ListenerConfig c = ListenerConfig::make(Scenario::Healthy, Flavour::LlamaCpp);
    c.knobs.token_interval_ms = 1;
    return c;
  }
  uint64_t seen(const std::string& route) const {
    const auto routes = rt.stats(0).routes;
    auto it = routes.find(route);
    return it == routes.end() ? 0 : it->second;
  }
  FakeRuntime rt;
};

probes::EngineOptions with_table() {
  probes::EngineOptions o;
  o.runtimes = kTable;
  return o;
}

}  // namespace

TEST_CASE("a new runtime: its entry's health route and reader are the ones the health probe uses") {
  Fake f;
  Harness h(with_table());
  auto rows = h.run(candidate(f.rt.base_url(0), kAcme), {ProbeKind::Health});
  REQUIRE(rows.size() == 1);
  INFO(rows[0].detail);
  CHECK(rows[0].outcome == Outcome::Clean);
  CHECK(f.seen("GET /health") == 1);
  CHECK(f.seen("GET /v1/models") == 0);  // the plain OpenAI entry's health route

  // Its reader judges: the model list answers 200 but is not Acme's health answer.
  static constexpr probes::Runtime kAtModels = [] {
    probes::Runtime r = kAcmeRuntime;
    r.health = {"GET", "/v1/models"};
    return r;
  }();
  static constexpr const probes::Runtime* kOther[] = {&kAtModels};
  probes::EngineOptions o;
  o.runtimes = kOther;
  Harness at_models(o);
  auto wrong = at_models.run(candidate(f.rt.base_url(0), kAcme), {ProbeKind::Health});
  REQUIRE(wrong.size() == 1);
  CHECK(wrong[0].outcome == Outcome::MalformedResponse);
  CHECK(wrong[0].detail == "not an Acme health answer");
}

TEST_CASE("a new runtime: the build read asks its build route and parses the answer with its reader") {
  Fake f;
  Harness h(with_table());
  auto b = h.read_build(candidate(f.rt.base_url(0), kAcme));
  INFO((b.ok() ? b->build : b.message()));
  REQUIRE(b.ok());
  CHECK(b->build.rfind(std::string("acme ") + fake::kDefaultBuild, 0) == 0);  // "acme b9430-<commit>"
  CHECK(f.seen("GET /props") == 1);
  CHECK_FALSE(b->model);          // no build_model reader: the build answer names no model
  CHECK(b->fingerprint.empty());  // no served-state routes, no argv reader
}

TEST_CASE("a new runtime: identity and chat probes run on the defaults an OpenAI-compatible entry gets") {
  Fake f;
  Harness h(with_table());
  auto rows = h.run(candidate(f.rt.base_url(0), kAcme), {ProbeKind::Identity, ProbeKind::Marker});
  REQUIRE(rows.size() == 2);
  for (const auto& r : rows) {
    INFO(to_string(r.kind) << ": " << r.detail);
    CHECK(r.outcome == Outcome::Clean);
  }
  CHECK(nlohmann::json::parse(rows[0].extra_json)["proof"] == "response model");
  CHECK(f.seen("GET /v1/models") == 1);
  CHECK(f.seen("POST /v1/chat/completions") == 2);
  CHECK(f.seen("GET /props") == 0);  // not llama.cpp's entry: no props preamble, no served-state routes
}

TEST_CASE("a new runtime: a table without the candidate's runtime falls back to the plain OpenAI entry") {
  Fake f;
  Harness h(with_table());
  auto rows = h.run(candidate(f.rt.base_url(0), RuntimeKind::LlamaCpp), {ProbeKind::Health});
  REQUIRE(rows.size() == 1);
  CHECK(rows[0].outcome == Outcome::Clean);
  CHECK(f.seen("GET /v1/models") == 1);  // the plain entry's health route, not llama.cpp's /health
  CHECK(f.seen("GET /health") == 0);
  CHECK(&probes::runtime_in(kTable, RuntimeKind::LlamaCpp) == &probes::builtin_runtime(RuntimeKind::OpenAI));
}

TEST_CASE("a new runtime: its process names reach process discovery through the composition root") {
  const std::vector<RuntimeSignature> signatures = runtime_signatures(kTable);
  ProcessInfo p;
  p.pid = 10;
  p.name = "acme-server";
  p.argv = {"/opt/acme/bin/acme-server", "--port", "9999"};
  CHECK(identify_engine(p, signatures) == kAcme);
  p.argv = {"/opt/acme/bin/acme-client"};
  p.name = "acme-client";
  CHECK_FALSE(identify_engine(p, signatures));
}
