// The fleet recipe (examples/fleet/) against what soakd writes, with the real
// promtool: the textfile from a demo-like store passes `promtool check
// metrics`; the alert rules pass `promtool check rules`; the scrape config
// passes `promtool check config`; and `promtool test rules` runs the alerts on
// input series made from the textfile: rejected and inconclusive candidates
// alert (and nothing else does), a guard trip alerts, and a textfile that
// stops being rewritten alerts after 15 + 5 minutes. Without promtool
// (SOAKD_PROMTOOL, or promtool on the PATH) the test exits 77: skipped.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "soakctl/soakctl.h"
#include "storage/sqlite_store.h"
#include "tests/catch.h"
#include "tests/support/child_process.h"
#include "tests/support/demo_store.h"
#include "tests/support/temp_dir.h"

using namespace soak;

namespace {

constexpr int kSkipExitCode = 77;
constexpr int kToolTimeoutMs = 60'000;
const std::string kFleet = std::string(SOAKD_SOURCE_DIR) + "/examples/fleet";
const std::string kInstance = "mac-studio-1.local:9100";

[[noreturn]] void skip(const std::string& why) {
  std::printf("skipped: %s\n", why.c_str());
  std::fflush(stdout);
  std::_Exit(kSkipExitCode);
}

std::string promtool() {
  if (const char* env = std::getenv("SOAKD_PROMTOOL"); env && *env) return env;
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "/usr/bin:/bin");
  for (std::string dir; std::getline(dirs, dir, ':');)
    if (::access((dir + "/promtool").c_str(), X_OK) == 0) return dir + "/promtool";
  skip("no promtool (set SOAKD_PROMTOOL or install Debian's prometheus: apt-get install prometheus)");
}

struct Sample {
  std::string name;
  std::map<std::string, std::string> labels;
  std::string value;
};

// The exposition lines of a textfile (label values as written: escaped).
std::vector<Sample> samples(const std::string& text) {
  std::vector<Sample> out;
  std::istringstream lines(text);
  static const std::regex label(R"re(([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)")re");
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line[0] == '#') continue;
    Sample s;
    const size_t brace = line.find('{'), space = line.rfind(' ');
    s.name = line.substr(0, std::min(brace, line.find(' ')));
    if (brace != std::string::npos) {
      const std::string body = line.substr(brace + 1, line.rfind('}') - brace - 1);
      for (std::sregex_iterator it(body.begin(), body.end(), label), end; it != end; ++it)
        s.labels[(*it)[1]] = (*it)[2];
    }
    s.value = line.substr(space + 1);
    out.push_back(std::move(s));
  }
  return out;
}

// {k="v",...} with the scrape's labels added, for promtool's series notation.
std::string series(const Sample& s) {
  auto labels = s.labels;
  labels["instance"] = kInstance;
  labels["job"] = "node";
  std::string out = s.name + "{";
  bool first = true;
  for (const auto& [k, v] : labels) {
    out += (first ? "" : ",") + k + "=\"" + v + "\"";
    first = false;
  }
  return out + "}";
}

std::string yaml_single(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("''") : std::string(1, c);
  return out + "'";
}

// The annotation templates of each alert in the rules file (our own file: one
// `- alert:` per rule, `key: "..."` lines under `annotations:`).
std::map<std::string, std::map<std::string, std::string>> annotation_templates(const std::string& rules) {
  std::map<std::string, std::map<std::string, std::string>> out;
  std::istringstream lines(rules);
  std::string alert;
  bool in_annotations = false;
  static const std::regex kv(R"re(^\s+([a-z_]+): "(.*)"$)re");
  for (std::string line; std::getline(lines, line);) {
    std::smatch m;
    if (line.find("- alert: ") != std::string::npos) {
      alert = line.substr(line.find("- alert: ") + 9);
      in_annotations = false;
    } else if (line.find("annotations:") != std::string::npos) {
      in_annotations = true;
    } else if (in_annotations && std::regex_match(line, m, kv)) {
      out[alert][m[1]] = m[2];
    } else if (line.find_first_not_of(' ') != std::string::npos && line.find("labels:") != std::string::npos) {
      in_annotations = false;
    }
  }
  return out;
}

std::string fill(std::string tmpl, const std::map<std::string, std::string>& labels) {
  static const std::regex var(R"(\{\{ \$labels\.([a-z_]+) \}\})");
  std::string out;
  auto begin = std::sregex_iterator(tmpl.begin(), tmpl.end(), var);
  size_t from = 0;
  for (auto it = begin; it != std::sregex_iterator(); ++it) {
    out += tmpl.substr(from, static_cast<size_t>(it->position()) - from);
    auto l = labels.find((*it)[1]);
    out += l == labels.end() ? "" : l->second;
    from = static_cast<size_t>(it->position() + it->length());
  }
  return out + tmpl.substr(from);
}

std::string json_map(const std::map<std::string, std::string>& m) { return nlohmann::json(m).dump(); }

std::string read_file(const std::string& p) {
  std::ifstream f(p);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

// The demo-like store plus what the alerts need that a clean run lacks: an
// inconclusive candidate and a guard trip a minute before the textfile is written.
struct Fleet {
  TempDir dir;
  DemoStore demo;
  std::string textfile;
  int64_t written_ms = 0;
  Fleet() {
    auto d = build_demo_store(dir.path());
    REQUIRE(d.ok());
    demo = *d;
    auto st = SqliteStore::open(demo.path, OpenMode::ReadWrite);
    REQUIRE(st.ok());
    CandidateRow c;
    c.host_id = 1;
    c.name = "vllm-gappy";
    c.model = "qwen3.6-35b-a3b";
    c.runtime = RuntimeKind::Vllm;
    c.build = "0.11.0";
    const int64_t id = *(*st)->upsert_candidate(c, demo.end_ms);
    VerdictRow v;
    v.candidate_id = id;
    v.wall_ms = demo.end_ms;
    v.state = VerdictState::Inconclusive;
    v.stage = "gate";
    v.reason = "coverage 61% below 90%";
    v.judge_version = "judge-1";
    REQUIRE((*st)->insert_verdict(v).ok());
    Event trip;
    trip.wall_ms = demo.end_ms;
    trip.host_id = 1;
    trip.kind = EventKind::GuardTrip;
    trip.detail_json = R"({"swap_growth_mb":812})";
    REQUIRE((*st)->insert_event(trip).ok());
    written_ms = demo.end_ms + 60'000;
    VirtualClock clock{written_ms};
    std::ostringstream o, e;
    REQUIRE(soakctl_main({"--db", demo.path, "metrics"}, o, e, clock) == kCtlExitOk);
    textfile = dir.path() + "/soakd.prom";
    std::ofstream(textfile) << o.str();
  }
};

}  // namespace

// First, and without promtool: the dashboard queries only what soakd writes.
TEST_CASE("the Grafana dashboard queries only metric families soakd writes") {
  Fleet f;
  std::set<std::string> families;
  std::istringstream lines(read_file(f.textfile));
  for (std::string line; std::getline(lines, line);)
    if (line.rfind("# TYPE ", 0) == 0) families.insert(line.substr(7, line.find(' ', 7) - 7));
  REQUIRE(families.count("soakd_candidate_verdict") == 1);
  const auto dash = nlohmann::json::parse(read_file(kFleet + "/grafana-dashboard.json"));
  static const std::regex name(R"(soakd_[a-z_]+)");
  size_t queries = 0;
  for (const auto& panel : dash.at("panels")) {
    if (!panel.contains("targets")) continue;
    for (const auto& target : panel.at("targets")) {
      const std::string expr = target.at("expr").get<std::string>();
      ++queries;
      for (std::sregex_iterator it(expr.begin(), expr.end(), name), end; it != end; ++it) {
        std::string n = it->str();
        for (const char* suffix : {"_sum", "_count"})  // a summary's series
          if (!families.count(n) && n.size() > std::strlen(suffix) &&
              n.compare(n.size() - std::strlen(suffix), std::strlen(suffix), suffix) == 0)
            n.resize(n.size() - std::strlen(suffix));
        INFO(panel.value("title", "") << ": " << expr);
        CHECK(families.count(n) == 1);
      }
    }
  }
  CHECK(queries >= 10);
}

TEST_CASE("promtool accepts soakd's textfile, the alert rules and the scrape config") {
  const std::string tool = promtool();
  Fleet f;
  auto metrics = run_program({"/bin/sh", "-c", "\"$0\" check metrics < \"$1\"", tool, f.textfile}, kToolTimeoutMs);
  INFO(metrics.out << metrics.err);
  CHECK(metrics.exit_code == 0);
  auto rules = run_program({tool, "check", "rules", kFleet + "/soakd-alerts.yml"}, kToolTimeoutMs);
  INFO(rules.out << rules.err);
  CHECK(rules.exit_code == 0);
  auto config = run_program({tool, "check", "config", kFleet + "/prometheus.yml"}, kToolTimeoutMs);
  INFO(config.out << config.err);
  CHECK(config.exit_code == 0);
}

TEST_CASE("promtool test rules: the fleet alerts fire on the series soakd wrote, and only those") {
  const std::string tool = promtool();
  Fleet f;
  const auto all = samples(read_file(f.textfile));
  REQUIRE(all.size() > 100);
  const auto templates = annotation_templates(read_file(kFleet + "/soakd-alerts.yml"));
  REQUIRE(templates.size() == 4);

  std::string input;
  for (const auto& s : all) {
    // soakd rewrites the file every tick for the first 10 minutes, then stops:
    // the written timestamp follows the test's clock (which starts at 0), then freezes.
    const std::string values =
        s.name == "soakd_textfile_written_timestamp_seconds" ? "0+60x10 600x40" : s.value + "x50";
    input += "      - series: " + yaml_single(series(s)) + "\n        values: " + yaml_single(values) + "\n";
  }
  // The alerts each rule should raise, from the samples themselves.
  auto expected = [&](const std::string& alert, auto match, const std::string& severity) {
    std::string out;
    for (const auto& s : all) {
      if (!match(s)) continue;
      auto labels = s.labels;
      labels["instance"] = kInstance;
      labels["job"] = "node";
      std::map<std::string, std::string> ann;
      for (const auto& [k, t] : templates.at(alert)) ann[k] = fill(t, labels);
      labels["severity"] = severity;
      out += "          - exp_labels: " + json_map(labels) + "\n            exp_annotations: " + json_map(ann) + "\n";
    }
    return out;
  };
  auto verdict_is = [](const char* v) {
    return [v](const Sample& s) {
      return s.name == "soakd_candidate_verdict" && s.labels.at("verdict") == v && s.value == "1";
    };
  };
  const std::string rejected = expected("SoakdCandidateRejected", verdict_is("rejected"), "warning");
  CHECK(std::count(rejected.begin(), rejected.end(), '\n') == 2 * 3);  // llama-b9502, omlx-35b, mlx-leak
  const std::string inconclusive = expected("SoakdStageInconclusive", verdict_is("inconclusive"), "warning");
  CHECK(inconclusive.find("vllm-gappy") != std::string::npos);
  const std::string guard = expected(
      "SoakdMemoryGuardTripped", [](const Sample& s) { return s.name == "soakd_guard_tripped" && s.value == "1"; },
      "critical");
  CHECK(std::count(guard.begin(), guard.end(), '\n') == 2);  // the trip a minute before the file was written
  const std::string stale = expected(
      "SoakdNotReporting", [](const Sample& s) { return s.name == "soakd_textfile_written_timestamp_seconds"; },
      "critical");

  std::string t = "rule_files:\n  - " + kFleet +
                  "/soakd-alerts.yml\nevaluation_interval: 1m\ntests:\n  - interval: 1m\n"
                  "    input_series:\n" +
                  input + "    alert_rule_test:\n";
  auto at = [&](const std::string& when, const std::string& alert, const std::string& alerts) {
    t += "      - eval_time: " + when + "\n        alertname: " + alert +
         "\n        exp_alerts:" + (alerts.empty() ? " []\n" : "\n" + alerts);
  };
  at("5m", "SoakdCandidateRejected", rejected);
  at("5m", "SoakdStageInconclusive", inconclusive);
  at("5m", "SoakdMemoryGuardTripped", guard);
  at("20m", "SoakdNotReporting", "");  // 10 minutes stale: not yet
  at("29m", "SoakdNotReporting", "");  // over 15 minutes, but not for 5 minutes yet
  at("32m", "SoakdNotReporting", stale);
  const std::string test_file = f.dir.path() + "/alerts_test.yml";
  std::ofstream(test_file) << t;
  auto r = run_program({tool, "test", "rules", test_file}, kToolTimeoutMs);
  INFO(r.out << r.err);
  CHECK(r.exit_code == 0);

  // The check itself catches a wrong expectation.
  std::string wrong = t;
  wrong.replace(wrong.find("alertname: SoakdStageInconclusive"), 33, "alertname: SoakdCandidateRejected");
  std::ofstream(test_file) << wrong;
  CHECK(run_program({tool, "test", "rules", test_file}, kToolTimeoutMs).exit_code != 0);
}
