// ab "interleaved" through the real soakd (docs/DESIGN.md §3.3, §4.8): a
// managed candidate whose program is a Homebrew-style link into a versioned
// Cellar directory (each "build" a small script that starts the fake runtime
// on the port it is given, as llama-server takes --port).
//   - build b600 is promoted (compressed stages);
//   - `brew upgrade` re-points the link at b601, which decodes six times
//     slower: soakd starts b600's program beside it on a port of its own with
//     the same argv, waits until it is ready, repeats the canary's
//     interleaved runs against it, rejects b601 against its live rows and
//     stops it when the canary ends;
//   - `brew cleanup` removes b600's directory and the link moves on to b602:
//     b600's program is gone, so b602's canary compares with b600's stored
//     history, and its verdict says why.
#include <sys/stat.h>

#include <cstdio>
#include <filesystem>
#include <set>

#include "tests/integration/managed_harness.h"

using namespace soak;
using namespace soak::managed_test;

namespace {

// A build of "llama-server" in its Cellar directory `dir`: the fake runtime
// answering as `build` on the port after --port, its tokens `interval_ms` apart.
void write_build(const std::string& cellar, const std::string& dir, const std::string& build, int interval_ms) {
  std::filesystem::create_directories(cellar + "/" + dir + "/bin");
  const std::string path = cellar + "/" + dir + "/bin/llama-server";
  std::ofstream(path) << "#!/bin/sh\n# llama-server, build " << build << "\nport=8080\n"
                      << "while [ $# -gt 0 ]; do case \"$1\" in --port) port=\"$2\"; shift 2 ;; *) shift ;; esac; "
                         "done\n"
                      << "exec " << kFake << " --build " << build << " --token-interval-ms " << interval_ms
                      << " --reply-tokens 8 --reasoning-tokens 8 --listen \"127.0.0.1:$port:healthy\"\n";
  ::chmod(path.c_str(), 0755);
}

// bin/llama-server -> the build's Cellar program, replaced at once (rename over).
void link_build(const std::string& bin, const std::string& cellar, const std::string& build) {
  const std::string link = bin + "/llama-server", tmp = link + ".new";
  std::filesystem::remove(tmp);
  std::filesystem::create_symlink(cellar + "/" + build + "/bin/llama-server", tmp);
  REQUIRE(std::rename(tmp.c_str(), link.c_str()) == 0);
}

std::optional<CandidateRow> row_of(const Setup& s, const std::string& build) {
  for (const auto& c : s.candidates())
    if (c.build == build) return c;
  return std::nullopt;
}

std::vector<RuntimeLaunch> previous_launches(const Setup& s) {
  auto st = s.open_store();
  LaunchQuery q;
  q.name = "m@previous";
  return *st->launches(q);
}

const MetricEvidence* metric_of(const VerdictRow& v, const std::string& name) {
  for (const auto& m : v.metrics)
    if (m.metric == name) return &m;
  return nullptr;
}

}  // namespace

TEST_CASE("ab interleaved: the previous build runs beside the canary on its own port; gone, history says why") {
  Setup s;
  const std::string bin = s.tmp.path() + "/bin", cellar = s.tmp.path() + "/Cellar/llama.cpp";
  std::filesystem::create_directories(bin);
  write_build(cellar, "b600", "b600-old", 2);
  link_build(bin, cellar, "b600");
  s.write("{\"argv\": [" + json_quote(bin + "/llama-server") + ", \"--port\", \"" + std::to_string(s.port) +
              "\"], \"ready_timeout\": \"20s\", \"stop_timeout\": \"5s\"}",
          // Short answers, functional runs back to back: each functional locator has
          // the comparison's five samples a side within the canary.
          R"(, "ab": "interleaved", "cadence": { "functional": "500ms" })",
          R"({ "smoke": "3s", "canary": "10s", "gate": "3s", "soak": "6s" })");  // a soak with its drift evidence

  auto d = start_soakd(s, false);
  REQUIRE(d);
  // soakd's log lines in order (each needle is looked for in the whole output so far).
  auto wait = [&](const std::string& needle, int ms) {
    auto line = d->wait_for_line(needle, ms);
    if (!line) FAIL("no line with \"" << needle << "\" in:\n" << d->err());
    return *line;
  };
  wait("its campaign settled: promoted", kRunMs);
  const auto a = row_of(s, "b600-old");
  REQUIRE(a);
  CHECK(previous_launches(s).empty());  // a first build has nothing beside it

  // brew upgrade: b601, six times slower to decode.
  write_build(cellar, "b601", "b601-slow", 12);
  link_build(bin, cellar, "b601");
  wait("build changed b600-old -> b601-slow", kStepMs);
  wait("m: starting the previous build b600-old", kStepMs);
  wait("m: the previous build b600-old", kStepMs);  // "... is up (pid N)"
  wait("m (b601-slow): canary started", kStepMs);
  wait("m (b601-slow): canary rejected", kRunMs);
  wait("m: stopping the previous build b600-old", kStepMs);
  wait("stopped (the canary it ran beside ended): exited", kStepMs);  // its launch row is saved first

  const auto b = row_of(s, "b601-slow");
  REQUIRE(b);
  CHECK(b->baseline_id == a->id);
  auto v = s.verdict(b->id);
  REQUIRE(v);
  INFO(v->reason);
  CHECK(v->state == VerdictState::Rejected);
  CHECK(v->stage == "canary");
  CHECK(v->baseline_mode == "interleaved");
  const auto* ab = metric_of(*v, "baseline/ab");
  REQUIRE(ab);
  CHECK(ab->reason.find("ran beside it") != std::string::npos);

  // b600's own program (the Cellar path the link led to when it ran), its argv
  // with another port, recorded with b600's row, stopped at the canary's end.
  auto prev = previous_launches(s);
  REQUIRE(prev.size() == 1);
  const std::string b600_program = std::filesystem::canonical(cellar + "/b600/bin/llama-server").string();
  CHECK(prev[0].executable == b600_program);
  CHECK(prev[0].candidate_id == a->id);
  CHECK(prev[0].argv_json.find(b600_program) != std::string::npos);
  CHECK(prev[0].argv_json.find("\"" + std::to_string(s.port) + "\"") == std::string::npos);
  CHECK(prev[0].argv_json.find("\"--port\"") != std::string::npos);
  CHECK(prev[0].state == LaunchState::Stopped);
  CHECK(prev[0].detail == "the canary it ran beside ended");
  CHECK_FALSE(alive(prev[0].pid));

  // Its rows: b600's, in the canary's window, in the canary's own slots.
  {
    auto st = s.open_store();
    StageRow canary;
    for (const auto& x : *st->stages(b->id))
      if (x.kind == StageKind::Canary) canary = x;
    ProbeQuery bq;
    bq.candidate_id = a->id;
    bq.since_ms = canary.started_ms;
    std::set<int64_t> shadow;
    for (const auto& r : *st->probe_results(bq)) {
      CHECK_FALSE(r.stage_id);
      if (r.group_id) shadow.insert(*r.group_id);
    }
    CHECK(shadow.size() >= 3);
    ProbeQuery cq;
    cq.stage_id = canary.id;
    std::set<int64_t> own;
    for (const auto& r : *st->probe_results(cq))
      if (r.group_id) own.insert(*r.group_id);
    for (int64_t g : shadow) CHECK(own.count(g));
    // The candidate's process samples are its own runtime's, never the one beside it.
    SampleQuery pq;
    pq.candidate_id = b->id;
    for (const auto& p : *st->process_samples(pq)) CHECK(p.pid != prev[0].pid);
  }

  // brew cleanup, then b602: b600's program is gone, so history, and the verdict says why.
  std::filesystem::remove_all(cellar + "/b600");
  write_build(cellar, "b602", "b602-slow", 12);
  link_build(bin, cellar, "b602");
  wait("build changed b601-slow -> b602-slow", kStepMs);
  wait("ab interleaved fell back to history", kStepMs);
  wait("m (b602-slow): canary rejected", kRunMs);
  const auto c = row_of(s, "b602-slow");
  REQUIRE(c);
  CHECK(c->baseline_id == a->id);  // b601 was rejected: b600 is still the previous promoted build
  auto vc = s.verdict(c->id);
  REQUIRE(vc);
  INFO(vc->reason);
  CHECK(vc->stage == "canary");
  CHECK(vc->baseline_mode == "history");
  CHECK(vc->reason.find("ab interleaved fell back to history: the previous build b600-old cannot run beside it: its "
                        "program " +
                        b600_program + " is no longer on disk") != std::string::npos);
  CHECK(previous_launches(s).size() == 1);  // nothing started this time

  REQUIRE(d->signal(SIGTERM));
  REQUIRE(d->wait_exit(kStepMs));
}
