#include <fstream>
#include <sstream>
#include <string>

#include "core/config.h"
#include "core/config_schema.h"
#include "probes/transport/http_types.h"
#include "tests/catch.h"

using namespace soak;

namespace {

const char* kGood = R"({
  // comments are allowed
  "store": "/tmp/soakd-test/soakd.db",
  "defaults": { "stages": { "canary": "30m" }, "cadence": { "burst": "5m" } },
  /* block comments too */
  "candidates": [
    { "name": "a", "model": "qwen3.6-35b-a3b", "runtime": "llama.cpp", "base_url": "http://127.0.0.1:8080/",
      "build": { "from": "http" } },
    { "name": "b", "model": "qwen3.6-35b-a3b", "runtime": "mlx-lm", "base_url": "http://127.0.0.1:8081",
      "baseline": "a", "stages": { "gate": "1h" }, "build": { "command": ["mlx_lm.server", "--version"] } }
  ]
})";

Result<Config> parse(const std::string& text) { return parse_config(text, "test.json", "/etc/soakd"); }

// Parses `text` and expects exactly one error line containing every needle.
void expect_error(const std::string& text, std::initializer_list<std::string> needles) {
  auto r = parse(text);
  REQUIRE_FALSE(r.ok());
  INFO(r.message());
  for (const auto& n : needles) CHECK(r.message().find(n) != std::string::npos);
  CHECK(r.message().rfind("test.json: ", 0) == 0);
}

std::string with_candidates(const std::string& cands) { return R"({"candidates": [)" + cands + "]}"; }

const std::string kA = R"({"name":"a","model":"m","runtime":"llama.cpp","base_url":"http://127.0.0.1:8080"})";

}  // namespace

TEST_CASE("durations parse with units and reject bare or bad ones") {
  CHECK(*parse_duration("90s") == 90'000);
  CHECK(*parse_duration("2h") == 2 * kHour);
  CHECK(*parse_duration("7d") == 7 * kDay);
  CHECK(*parse_duration("1h30m") == 90 * kMinute);
  CHECK(*parse_duration("250ms") == 250);
  CHECK_FALSE(parse_duration("90").ok());
  CHECK_FALSE(parse_duration("2 h").ok());
  CHECK_FALSE(parse_duration("2w").ok());
  CHECK_FALSE(parse_duration("").ok());
  CHECK(format_duration(90 * kMinute) == "1h30m");
  CHECK(format_duration(7 * kDay) == "7d");
}

TEST_CASE("a good config parses, merges defaults and per-candidate overrides") {
  auto r = parse(kGood);
  REQUIRE(r.ok());
  const Config& c = *r;
  REQUIRE(c.candidates.size() == 2);
  CHECK(c.store_path == "/tmp/soakd-test/soakd.db");
  CHECK(c.candidates[0].base_url == "http://127.0.0.1:8080");  // trailing slash dropped
  CHECK(c.candidates[0].runtime == RuntimeKind::LlamaCpp);
  CHECK(c.candidates[0].settings.stages.canary_ms == 30 * kMinute);  // from defaults
  CHECK(c.candidates[0].settings.stages.gate_ms == kDefaultGateMs);  // built-in default
  CHECK(c.candidates[1].settings.stages.gate_ms == kHour);           // candidate override
  CHECK(c.candidates[1].settings.stages.canary_ms == 30 * kMinute);  // still inherits
  CHECK(c.candidates[1].settings.cadence.burst_ms == 5 * kMinute);
  CHECK(c.candidates[1].build.source == BuildSource::Command);
  CHECK(c.candidates[1].build.command.size() == 2);
  CHECK(c.candidates[1].baseline == std::optional<std::string>("a"));
  CHECK(c.candidates[0].settings.sampling.temperature == Approx(0.6));
  CHECK(c.candidate_hash(c.candidates[0]) != c.candidate_hash(c.candidates[1]));
  CHECK(c.candidate_hash(c.candidates[0]) == c.candidate_hash(c.candidates[0]));
}

TEST_CASE("defaults come after candidates in the file and still apply") {
  auto r = parse(R"({"candidates": [)" + kA + R"(], "defaults": {"stages": {"soak": "3d"}}})");
  REQUIRE(r.ok());
  CHECK(r->candidates[0].settings.stages.soak_ms == 3 * kDay);
}

TEST_CASE("relative store paths resolve against the config file's directory") {
  auto r = parse(R"({"store": "data/s.db", "candidates": [)" + kA + "]}");
  REQUIRE(r.ok());
  CHECK(r->store_path == "/etc/soakd/data/s.db");
}

TEST_CASE("invalid JSON names the file and the position") {
  expect_error("{\"candidates\": [", {"not valid JSON", "line"});
}

TEST_CASE("unknown keys are errors with a suggestion, at every level") {
  expect_error(R"({"candidats": []})", {"candidats", "did you mean \"candidates\""});
  expect_error(with_candidates(
                   R"({"name":"a","model":"m","runtime":"llama.cpp","base_url":"http://127.0.0.1:1","basline":"x"})"),
               {"candidates[0].basline", "did you mean \"baseline\""});
  expect_error(R"({"defaults": {"stages": {"cannary": "2h"}}, "candidates": [)" + kA + "]}",
               {"defaults.stages.cannary", "did you mean \"canary\""});
}

TEST_CASE("missing required keys and wrong types are named with an example") {
  expect_error(R"({})", {"candidates: is required", "e.g."});
  expect_error(with_candidates(R"({"name":"a","runtime":"llama.cpp","base_url":"http://127.0.0.1:1"})"),
               {"candidates[0].model: is required", "e.g. \"model\""});
  expect_error(with_candidates(R"({"name":"a","model":"m","runtime":"llama.cpp","base_url":8080})"),
               {"candidates[0].base_url: must be a string", "e.g. \"http://127.0.0.1:8080\""});
}

TEST_CASE("bad base URLs are rejected with the reason") {
  for (const char* url : {"127.0.0.1:8080", "ftp://x:1", "http://", "http://u:p@host:1", "http://h:99999"}) {
    std::string c = R"({"name":"a","model":"m","runtime":"llama.cpp","base_url":")" + std::string(url) + "\"}";
    expect_error(with_candidates(c), {"candidates[0].base_url", "http://"});
  }
  expect_error(
      with_candidates(R"({"name":"a","model":"m","runtime":"llama.cpp","base_url":"http://127.0.0.1:8080/v1"})"),
      {"drop the trailing /v1"});
  CHECK(
      parse(with_candidates(R"({"name":"a","model":"m","runtime":"llama.cpp","base_url":"http://[::1]:8080"})")).ok());
}

TEST_CASE("unknown runtime lists the known ones") {
  expect_error(with_candidates(R"({"name":"a","model":"m","runtime":"llamacpp","base_url":"http://127.0.0.1:1"})"),
               {"candidates[0].runtime", "unknown runtime \"llamacpp\"", "llama.cpp, mlx-lm"});
}

TEST_CASE("duplicate candidate names are rejected") {
  expect_error(with_candidates(kA + "," + kA), {"candidates[1].name", "duplicate candidate name \"a\""});
}

TEST_CASE("a baseline that names no candidate is rejected") {
  expect_error(
      with_candidates(
          R"({"name":"a","model":"m","runtime":"llama.cpp","base_url":"http://127.0.0.1:1","baseline":"zzz"})"),
      {"candidates[0].baseline", "names no candidate: \"zzz\""});
  expect_error(with_candidates(
                   R"({"name":"a","model":"m","runtime":"llama.cpp","base_url":"http://127.0.0.1:1","baseline":"a"})"),
               {"its own baseline"});
}

TEST_CASE("an API key over plain HTTP to a non-loopback host is rejected unless opted in") {
  std::string remote =
      R"({"name":"a","model":"m","runtime":"vllm","base_url":"http://10.0.0.5:8000","api_key_env":"VLLM_KEY")";
  expect_error(with_candidates(remote + "}"),
               {"candidates[0].api_key_env", "plain HTTP to 10.0.0.5", "allow_insecure_api_key"});
  CHECK(parse(with_candidates(remote + R"(,"allow_insecure_api_key":true})")).ok());
  CHECK(
      parse(
          with_candidates(
              R"({"name":"a","model":"m","runtime":"vllm","base_url":"https://10.0.0.5:8000","api_key_env":"VLLM_KEY"})"))
          .ok());
  CHECK(
      parse(
          with_candidates(
              R"({"name":"a","model":"m","runtime":"vllm","base_url":"http://localhost:8000","api_key_env":"VLLM_KEY"})"))
          .ok());
  // The key itself pasted in place of a variable name is refused, and not echoed back.
  auto r = parse(with_candidates(
      R"({"name":"a","model":"m","runtime":"vllm","base_url":"https://h","api_key_env":"sk-abc123secret"})"));
  REQUIRE_FALSE(r.ok());
  CHECK(r.message().find("NAME of an environment variable") != std::string::npos);
  CHECK(r.message().find("sk-abc123secret") == std::string::npos);
}

TEST_CASE("durations <= 0 and unit-less numbers are rejected") {
  expect_error(R"({"defaults": {"stages": {"canary": "0s"}}, "candidates": [)" + kA + "]}",
               {"defaults.stages.canary", "greater than zero", "e.g. \"2h\""});
  expect_error(R"({"defaults": {"stages": {"canary": 7200}}, "candidates": [)" + kA + "]}",
               {"defaults.stages.canary", "duration string with a unit"});
  expect_error(
      with_candidates(
          R"({"name":"a","model":"m","runtime":"llama.cpp","base_url":"http://127.0.0.1:1","cadence":{"burst":"-5m"}})"),
      {"candidates[0].cadence.burst"});
  expect_error(R"({"sampler": {"interval": "5x"}, "candidates": [)" + kA + "]}", {"sampler.interval", "unknown unit"});
}

TEST_CASE("build must be exactly one form") {
  expect_error(
      with_candidates(R"({"name":"a","model":"m","runtime":"llama.cpp","base_url":"http://127.0.0.1:1","build":{}})"),
      {"candidates[0].build", "exactly one of"});
  expect_error(
      with_candidates(
          R"({"name":"a","model":"m","runtime":"llama.cpp","base_url":"http://127.0.0.1:1","build":{"command":[]}})"),
      {"candidates[0].build.command", "non-empty array"});
}

TEST_CASE("every problem in a file is reported, one line each") {
  auto r = parse(with_candidates(R"({"name":"a","model":"m","runtime":"nope","base_url":"x"},{"name":"a"})"));
  REQUIRE_FALSE(r.ok());
  size_t lines = 1;
  for (char ch : r.message()) lines += ch == '\n';
  CHECK(lines >= 4);  // runtime, base_url, duplicate name, missing keys of [1]
}

TEST_CASE("the shipped example configs validate") {
  for (const char* rel : {"/examples/demo.json", "/examples/soakd.example.json"}) {
    std::string path = std::string(SOAKD_SOURCE_DIR) + rel;
    auto r = load_config(path);
    INFO(path << ": " << (r.ok() ? std::string("ok") : r.message()));
    CHECK(r.ok());
  }
}

TEST_CASE("a missing config file is a clear error") {
  auto r = load_config("/nonexistent/soakd.json");
  REQUIRE_FALSE(r.ok());
  CHECK(r.message().find("/nonexistent/soakd.json: cannot read config file") != std::string::npos);
}

// ---------------------------------------------------------------- the schema tables
// These walk the tables themselves, so a row added later is covered without a new test.
namespace {

using schema::Kind;

struct Row {
  std::string key;
  Kind kind;
  std::string example;
  double min, max;
};

template <class S>
std::vector<Row> rows(const schema::Section<S>& s) {
  std::vector<Row> out;
  for (const auto& f : s.fields) out.push_back({f.key, f.kind, f.example, f.min, f.max});
  return out;
}

// Every place a table is read, as a JSON path into a config.
struct Where {
  std::string path;
  std::vector<Row> rows;
};

std::vector<Where> every_section() {
  std::vector<Where> w = {
      {"", rows(schema::top_section())},
      {"defaults", rows(schema::campaign_section())},
      {"sampler", rows(schema::sampler_section())},
      {"schedule", rows(schema::schedule_section())},
      {"metrics", rows(schema::metrics_section())},
      {"candidates[0]", rows(schema::candidate_section())},
      {"candidates[0].build", rows(schema::build_section())},
  };
  for (const std::string base : {"defaults", "candidates[0]"}) {
    w.push_back({base + ".stages", rows(schema::stages_section())});
    w.push_back({base + ".cadence", rows(schema::cadence_section())});
    w.push_back({base + ".limits", rows(schema::limits_section())});
    w.push_back({base + ".gate", rows(schema::gate_section())});
    w.push_back({base + ".judge", rows(schema::judge_section())});
    w.push_back({base + ".soak", rows(schema::soak_section())});
    w.push_back({base + ".guard", rows(schema::guard_section())});
    w.push_back({base + ".sampling", rows(schema::sampling_section())});
    w.push_back({base + ".slo", rows(schema::slo_section())});
  }
  return w;
}

std::string full_path(const std::string& path, const std::string& key) { return path.empty() ? key : path + "." + key; }

// A valid file with two candidates; the second is named like the baseline example.
nlohmann::json base_doc() {
  return nlohmann::json::parse(R"({"candidates": [
    {"name": "a", "model": "m", "runtime": "llama.cpp", "base_url": "http://127.0.0.1:8080"},
    {"name": "qwen35b-llama-b9430", "model": "m", "runtime": "llama.cpp", "base_url": "http://127.0.0.1:8081"}]})");
}

// base_doc() with `value` at path.key ("candidates[0].build" -> /candidates/0/build).
std::string doc_with(const std::string& path, const std::string& key, const nlohmann::json& value) {
  std::string ptr;
  for (char ch : full_path(path, key)) {
    if (ch == '.' || ch == '[')
      ptr += '/';
    else if (ch != ']')
      ptr += ch;
  }
  auto doc = base_doc();
  doc[nlohmann::json::json_pointer("/" + ptr)] = value;
  return doc.dump();
}

// The error line for `path`, or "" (and the whole message in the test log).
std::string line_for(const Result<Config>& r, const std::string& path) {
  if (r.ok()) return "";
  std::istringstream in(r.message());
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("test.json: " + path + ": ", 0) == 0) return line;
  return "";
}

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

std::string number_text(double x) {
  std::ostringstream os;
  os << x;
  return os.str();
}

}  // namespace

TEST_CASE("schema: a wrong value for any row names its path and the row's example") {
  size_t checked = 0;
  for (const auto& w : every_section()) {
    for (const auto& row : w.rows) {
      std::string path = full_path(w.path, row.key);
      auto r = parse(doc_with(w.path, row.key, nullptr));
      std::string line = line_for(r, path);
      INFO(path << "\n" << (r.ok() ? std::string("ok") : r.message()));
      CHECK_FALSE(line.empty());
      CHECK(ends_with(line, " (e.g. " + row.example + ")"));
      ++checked;
    }
  }
  CHECK(checked > 100);
}

TEST_CASE("schema: every example in the tables is accepted where it belongs") {
  size_t checked = 0;
  for (const auto& w : every_section()) {
    for (const auto& row : w.rows) {
      auto value = nlohmann::json::parse(row.example, nullptr, /*allow_exceptions=*/false);
      if (value.is_discarded()) continue;  // prose examples ("\"02:00\" or \"now\"", "[{...}, {...}]")
      std::string path = full_path(w.path, row.key);
      auto r = parse(doc_with(w.path, row.key, value));
      INFO(path << " = " << row.example << "\n" << (r.ok() ? std::string("ok") : r.message()));
      CHECK(r.ok());
      ++checked;
    }
  }
  CHECK(checked > 100);
}

TEST_CASE("schema: an unknown key in every section suggests the near one and lists the allowed keys") {
  for (const auto& w : every_section()) {
    std::string allowed;
    for (const auto& row : w.rows) allowed += (allowed.empty() ? "" : ", ") + row.key;
    for (const auto& row : w.rows) {
      std::string typo = row.key + "x";
      std::string path = full_path(w.path, typo);
      auto r = parse(doc_with(w.path, typo, 1));
      INFO(path << "\n" << (r.ok() ? std::string("ok") : r.message()));
      CHECK(line_for(r, path) == "test.json: " + path + ": unknown key \"" + typo + "\"; did you mean \"" + row.key +
                                     "\"? Allowed here: " + allowed);
    }
  }
}

TEST_CASE("schema: a number out of bounds names the bounds and the example") {
  size_t checked = 0;
  for (const auto& w : every_section()) {
    for (const auto& row : w.rows) {
      std::string path = full_path(w.path, row.key);
      auto expect = [&](const nlohmann::json& value, const std::string& what) {
        auto r = parse(doc_with(w.path, row.key, value));
        INFO(path << " = " << value.dump() << "\n" << (r.ok() ? std::string("ok") : r.message()));
        CHECK(line_for(r, path) == "test.json: " + path + ": " + what + " (e.g. " + row.example + ")");
        ++checked;
      };
      if (row.kind == Kind::Int) {
        auto min = static_cast<int64_t>(row.min);
        expect(min - 1, "must be at least " + std::to_string(min));
        if (row.max < 9e18) {
          auto max = static_cast<int64_t>(row.max);
          expect(max + 1, "must be at most " + std::to_string(max));
        }
      } else if (row.kind == Kind::Double) {
        std::string between = "must be between " + number_text(row.min) + " and " + number_text(row.max);
        expect(row.min - 1, between);
        expect(row.max + 1, between);
      } else if (row.kind == Kind::Duration && row.min > 0) {
        expect("0s", "must be greater than zero");
      }
    }
  }
  CHECK(checked > 80);
}

TEST_CASE("schema: messages keep their exact wording") {
  auto line = [](const std::string& path, const std::string& key, const nlohmann::json& v) {
    return line_for(parse(doc_with(path, key, v)), full_path(path, key));
  };
  CHECK(line("defaults.judge", "alpha", 0) ==
        "test.json: defaults.judge.alpha: must be between 1e-09 and 0.5 (e.g. 0.01)");
  CHECK(line("defaults.limits", "max_response_bytes", 1000) ==
        "test.json: defaults.limits.max_response_bytes: must be at least 1024 (e.g. 8388608)");
  CHECK(line("candidates[0].stages", "grace", 11) ==
        "test.json: candidates[0].stages.grace: must be between 0 and 10 "
        "(e.g. 0.25 (a stage may run 25% past its length to make up gaps, held heavy work or a decisive "
        "rule's evidence))");
  // The burst rule's effect floors (docs/DESIGN.md §3.9): a share under 0.6 would call two slots at work serial.
  CHECK(line("defaults.judge", "serial_min_share", 0.5) ==
        "test.json: defaults.judge.serial_min_share: must be between 0.6 and 1 (e.g. 0.75 (each place in a "
        "serialized burst's queue adds at least 0.75 of one answer's service time to the time to first token))");
  CHECK(line("candidates[0].judge", "serial_min_effect_ms", -1) ==
        "test.json: candidates[0].judge.serial_min_effect_ms: must be at least 0 (e.g. 50 (and at least 50 ms: a "
        "smaller rise per place is nothing a user feels))");
  CHECK(line("defaults.soak", "max_footprint_slope_mb_per_h", -1) ==
        "test.json: defaults.soak.max_footprint_slope_mb_per_h: must be between 0 and 1e+09 (e.g. 50)");
  CHECK(line("candidates[0]", "stagez", 1) ==
        "test.json: candidates[0].stagez: unknown key \"stagez\"; did you mean \"stages\"? Allowed here: name, model, "
        "kind, runtime, base_url, build, baseline, api_key_env, allow_insecure_api_key, pid, process_name, slots, "
        "enabled, launch, memory_budget, allow_coexisting, accept_server_cap, ab, stages, cadence, limits, gate, "
        "judge, soak, guard, agent, sampling, slo, equivalence, long_context_sizes, burst_sizes, capacity");
  CHECK(line("", "zzzzzzzz", 1) ==
        "test.json: zzzzzzzz: unknown key \"zzzzzzzz\" Allowed here: store, log, defaults, "
        "sampler, schedule, store_outage, metrics, notify, candidates");
  CHECK(
      line_for(parse(doc_with("defaults", "burst_sizes", nlohmann::json::array({1, 0}))), "defaults.burst_sizes[1]") ==
      "test.json: defaults.burst_sizes[1]: must be a positive integer (e.g. [1, 8, 30, 80])");
  CHECK(line("schedule", "nightly_window", "25:00") ==
        "test.json: schedule.nightly_window: must be a local time \"HH:MM\" or \"now\" (e.g. \"02:00\")");
  CHECK(line("defaults.limits", "stall_timeout", "40m") ==
        "test.json: defaults.limits.stall_timeout: must not exceed limits.wall_timeout (30m) (e.g. \"2m\")");
  CHECK(line("defaults.limits", "wall_timeout", "15m") ==
        "test.json: defaults.limits.wall_timeout: is 15m, within the prefill budget of a fresh 131072-token prompt "
        "(the largest of long_context_sizes): stall_timeout 2m + 131072 tokens / prefill_floor_tps 100 = 23m51s; "
        "raise wall_timeout above that with time to answer, or raise prefill_floor_tps (e.g. \"28m51s\")");
}

TEST_CASE("limits: the default wall timeout outlasts the prefill budget of the largest default size") {
  // 2 min + 131,072 tokens at 100 tok/s = 23 min 51 s to the first token; the wall is 30 min.
  auto ok = parse(doc_with("defaults", "long_context_sizes", nlohmann::json::array({1024, 131072})));
  INFO((ok.ok() ? std::string("ok") : ok.message()));
  REQUIRE(ok.ok());
  CHECK(ok->defaults.limits.prefill_floor_tps == 100);
  CHECK(ok->defaults.limits.wall_timeout_ms == 30 * kMinute);
  // A candidate that raises its sizes past what the wall allows is refused, naming its own path...
  auto big = parse(doc_with("candidates[0]", "long_context_sizes", nlohmann::json::array({262144})));
  REQUIRE_FALSE(big.ok());
  CHECK(big.message().find("candidates[0].limits.wall_timeout: is 30m, within the prefill budget of a fresh "
                           "262144-token prompt") != std::string::npos);
  // ...and a faster floor makes the same sizes fit (262,144 / 400 = 656 s, plus 2 min).
  auto doc = nlohmann::json::parse(doc_with("candidates[0]", "long_context_sizes", nlohmann::json::array({262144})));
  doc["candidates"][0]["limits"] = {{"prefill_floor_tps", 400}};
  auto fast = parse(doc.dump());
  INFO((fast.ok() ? std::string("ok") : fast.message()));
  REQUIRE(fast.ok());
  CHECK(fast->candidates[0].settings.limits.prefill_floor_tps == 400);
}

TEST_CASE("schema: guard.swap_growth_mb is held in bytes and an integer too wide for its member is refused") {
  auto r = parse(doc_with("defaults.guard", "swap_growth_mb", 750));
  REQUIRE(r.ok());
  CHECK(r->defaults.guard.swap_growth_bytes == 750LL * 1000 * 1000);
  CHECK(r->candidates[0].settings.guard.swap_growth_bytes == 750LL * 1000 * 1000);
  // 2^32 + 2 used to wrap to 2 when narrowed to int.
  expect_error(doc_with("defaults.judge", "min_samples", 4294967298LL),
               {"defaults.judge.min_samples: must be at most 2147483647 (e.g. 5)"});
  expect_error(doc_with("candidates[0]", "slots", 4294967298LL), {"candidates[0].slots: must be at most 2147483647"});
}

TEST_CASE("one set of request limits: the transport starts from the config's defaults") {
  const Limits config;
  const HttpRequest request;
  CHECK(request.connect_timeout_ms == config.connect_timeout_ms);
  CHECK(request.wall_timeout_ms == config.wall_timeout_ms);
  CHECK(request.stall_timeout_ms == config.stall_timeout_ms);
  CHECK(request.max_response_bytes == config.max_response_bytes);
  CHECK(config.connect_timeout_ms == 10 * kSecond);
  CHECK(config.max_response_bytes == 8 * 1024 * 1024);
}

TEST_CASE("metrics.textfile: off by default, a .prom path relative to the config file, anything else refused") {
  auto off = parse(with_candidates(kA));
  REQUIRE(off.ok());
  CHECK(off->metrics.textfile.empty());
  auto on = parse(R"({"metrics": {"textfile": "textfile/soakd.prom"}, "candidates": [)" + kA + "]}");
  REQUIRE(on.ok());
  CHECK(on->metrics.textfile == "/etc/soakd/textfile/soakd.prom");
  expect_error(
      R"({"metrics": {"textfile": "/var/lib/node_exporter/soakd.txt"}, "candidates": [)" + kA + "]}",
      {"metrics.textfile: must name a file ending in .prom (node_exporter's textfile collector reads only those)",
       "e.g. \"/opt/homebrew/var/node_exporter/textfile/soakd.prom\""});
  expect_error(R"({"metrics": {"texfile": "a.prom"}, "candidates": [)" + kA + "]}",
               {"metrics.texfile: unknown key \"texfile\"; did you mean \"textfile\"?"});
}

TEST_CASE("a config with no candidate is an error: there is nothing to test") {
  expect_error(R"({"candidates": []})", {"candidates: is empty", "list at least one runtime", "\"base_url\""});
}

TEST_CASE("burst and long-context sizes have upper bounds, with the reason") {
  auto doc = [](const std::string& key, const std::string& list) {
    return R"({"defaults": {")" + key + R"(": )" + list + R"(}, "candidates": [)" + kA + "]}";
  };
  expect_error(doc("burst_sizes", "[1, 100000]"), {"defaults.burst_sizes[1]: must be at most 128", "file descriptor"});
  expect_error(doc("long_context_sizes", "[1024, 4000000]"),
               {"defaults.long_context_sizes[1]: must be at most 1048576", "held in memory"});
  CHECK(parse(doc("burst_sizes", "[1, 8, 30, 80, 128]")).ok());
  CHECK(parse(doc("long_context_sizes", "[1024, 131072]")).ok());
}

TEST_CASE("store_outage: defaults, and values read") {
  auto d = parse(with_candidates(kA));
  REQUIRE(d.ok());
  CHECK(d->store_outage.max_queued_rows == kDefaultMaxQueuedRows);
  CHECK(d->store_outage.stop_after_ms == kDefaultStoreStopAfterMs);
  auto c = parse(R"({"store_outage": {"max_queued_rows": 50, "stop_after": "10m"}, "candidates": [)" + kA + "]}");
  REQUIRE(c.ok());
  CHECK(c->store_outage.max_queued_rows == 50);
  CHECK(c->store_outage.stop_after_ms == 600'000);
  expect_error(R"({"store_outage": {"max_queued_rows": 0}, "candidates": [)" + kA + "]}",
               {"store_outage.max_queued_rows: must be at least 1"});
}

TEST_CASE("capacity: entries of size x concurrency, defaulted from the slots when absent") {
  auto d = parse(doc_with("defaults", "burst_sizes", nlohmann::json::array({1, 8, 30, 80})));
  REQUIRE(d.ok());
  CHECK_FALSE(d->defaults.capacity);  // the default is decided from the runtime's slots
  CHECK(d->defaults.burst_sizes == std::vector<int>{1, 8, 30, 80});
  auto r = parse(doc_with("defaults", "capacity", nlohmann::json::parse(R"([{"size": 32768, "concurrency": 8}])")));
  REQUIRE(r.ok());
  REQUIRE(r->candidates[0].settings.capacity);
  CHECK(*r->candidates[0].settings.capacity == std::vector<CapacityEntry>{{32768, 8}});
  auto none = parse(doc_with("candidates[0]", "capacity", nlohmann::json::array()));
  REQUIRE(none.ok());
  CHECK(none->candidates[0].settings.capacity->empty());  // explicitly off
  expect_error(doc_with("defaults", "capacity", nlohmann::json::parse(R"([{"size": 32768, "concurrency": 0}])")),
               {"defaults.capacity[0].concurrency: must be an integer from 1 to 256"});
  expect_error(doc_with("defaults", "capacity", nlohmann::json::parse(R"([{"size": 32768, "conc": 8}])")),
               {"defaults.capacity[0].conc: unknown key \"conc\""});
  // A pooling candidate, and the agent sessions' settings.
  auto pooled = parse(doc_with("candidates[0]", "kind", "embedding"));
  REQUIRE(pooled.ok());
  CHECK(pooled->candidates[0].kind == WorkloadKind::Embedding);
  expect_error(doc_with("candidates[0]", "kind", "chatty"),
               {"candidates[0].kind: unknown kind \"chatty\"; one of: chat, embedding, rerank"});
  auto agent =
      parse(doc_with("defaults", "agent", nlohmann::json::parse(R"({"context_ceiling": 30000, "thinking_share": 1})")));
  REQUIRE(agent.ok());
  CHECK(agent->candidates[0].settings.agent.context_ceiling_tokens == 30000);
  CHECK(agent->candidates[0].settings.agent.thinking_share == 1.0);
  CHECK(agent->candidates[0].settings.agent.tool_every == kDefaultAgentToolEvery);
  expect_error(doc_with("defaults", "agent", nlohmann::json::parse(R"({"thinking_share": 1.5})")),
               {"defaults.agent.thinking_share: "});
  CHECK(pooled->candidate_hash(pooled->candidates[0]) != agent->candidate_hash(agent->candidates[0]));
  auto coexist = parse(doc_with("candidates[0]", "allow_coexisting", true));
  REQUIRE(coexist.ok());
  CHECK(coexist->candidates[0].allow_coexisting);
  auto solo = parse(doc_with("candidates[0]", "allow_coexisting", false));
  REQUIRE(solo.ok());
  CHECK(coexist->candidate_hash(coexist->candidates[0]) != solo->candidate_hash(solo->candidates[0]));
}

TEST_CASE("judge.serial_min_share and serial_min_effect_ms: defaults, and a configured floor reaches the candidate") {
  auto d = parse(doc_with("defaults.judge", "alpha", 0.01));
  REQUIRE(d.ok());
  CHECK(d->candidates[0].settings.judge.serial_min_share == 0.75);
  CHECK(d->candidates[0].settings.judge.serial_min_effect_ms == 50);
  auto r = parse(doc_with("defaults.judge", "serial_min_effect_ms", 120));
  REQUIRE(r.ok());
  CHECK(r->candidates[0].settings.judge.serial_min_effect_ms == 120);
  CHECK(r->candidates[0].settings.judge.serial_min_share == 0.75);
  // A changed floor is part of the candidate's config hash; the defaults leave earlier hashes alone.
  CHECK(r->candidate_hash(r->candidates[0]) != d->candidate_hash(d->candidates[0]));
}
