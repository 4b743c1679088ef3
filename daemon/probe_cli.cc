#include "daemon/probe_cli.h"

#include <unistd.h>
#include <uv.h>

#include <algorithm>
#include <cstdio>
#include <memory>

#include <nlohmann/json.hpp>

#include "core/args.h"
#include "core/config.h"
#include "core/log.h"
#include "daemon/wiring.h"
#include "probes/engine.h"
#include "probes/served_state.h"
#include "schedules/plan.h"
#include "storage/row_json.h"
#include "storage/sqlite_store.h"

namespace soak {

namespace {

constexpr int kExitClean = 0;
constexpr int kExitNotClean = 1;
constexpr size_t kDetailColumnChars = 70;

using ojson = nlohmann::ordered_json;

// Without --kind: what a smoke pass and a functional cycle run (health,
// identity and the functional kinds), each kind once, in that order.
std::vector<ProbeKind> default_probe_kinds(WorkloadKind workload) {
  std::vector<ProbeKind> kinds = probe_kinds_for(TaskKind::Smoke, workload);
  for (ProbeKind k : probe_kinds_for(TaskKind::Functional, workload))
    if (std::find(kinds.begin(), kinds.end(), k) == kinds.end()) kinds.push_back(k);
  return kinds;
}

}  // namespace

std::vector<ProbeKind> all_kinds_for(WorkloadKind workload) {
  if (workload == WorkloadKind::Chat) return probes::all_probe_kinds();
  std::vector<ProbeKind> kinds;
  // Every task a stage may schedule, in stage order: the kinds each runs for this workload.
  for (TaskKind t :
       {TaskKind::Smoke, TaskKind::Scrape, TaskKind::Functional, TaskKind::LongContext, TaskKind::Burst,
        TaskKind::Capacity, TaskKind::Cancel, TaskKind::Agent, TaskKind::SoakTraffic, TaskKind::PrefixReuse})
    for (ProbeKind k : probe_kinds_for(t, workload))
      if (std::find(kinds.begin(), kinds.end(), k) == kinds.end()) kinds.push_back(k);
  return kinds;
}

namespace {

Result<std::vector<ProbeKind>> kinds_from(const std::optional<std::string>& k, WorkloadKind workload) {
  if (!k) return default_probe_kinds(workload);
  if (*k == "all") return all_kinds_for(workload);
  auto kind = parse_probe_kind(*k);
  if (!kind || !probes::engine_runs(*kind))
    return make_error("unknown probe kind \"" + *k + "\"; known: all, " + probe_kind_names());
  return std::vector<ProbeKind>{*kind};
}

std::string ms(std::optional<int64_t> us) {
  if (!us) return "-";
  char b[32];
  std::snprintf(b, sizeof b, "%.1f", static_cast<double>(*us) / 1000.0);
  return b;
}

std::string tps(std::optional<double> v) {
  if (!v) return "-";
  char b[32];
  std::snprintf(b, sizeof b, "%.1f", *v);
  return b;
}

std::string tokens(const ProbeResult& r) {
  if (!r.prompt_tokens && !r.completion_tokens) return "-";
  std::string s = r.prompt_tokens ? std::to_string(*r.prompt_tokens) : "?";
  // Appended piece by piece: "/" + to_string(...) draws a false -Wrestrict from GCC 12 at -O2.
  s += '/';
  s += r.completion_tokens ? std::to_string(*r.completion_tokens) : std::string("?");
  if (r.reasoning_tokens && *r.reasoning_tokens > 0) {
    s += '+';
    s += std::to_string(*r.reasoning_tokens);
    s += 'r';
  }
  return s;
}

std::string one_line(std::string s, size_t max) {
  for (char& c : s)
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  if (s.size() > max) s = s.substr(0, max - 3) + "...";
  return s;
}

}  // namespace

std::string format_probe_table(const std::vector<ProbeResult>& rows) {
  std::string out;
  char line[512];
  std::snprintf(line, sizeof line, "%-13s %-30s %-18s %4s %9s %8s %-12s %s\n", "KIND", "WORKLOAD", "OUTCOME", "HTTP",
                "TTFT ms", "tok/s", "TOKENS p/c", "DETAIL");
  out += line;
  size_t clean = 0;
  for (const auto& r : rows) {
    clean += r.outcome == Outcome::Clean ? 1 : 0;
    std::string detail = r.detail;
    if (r.outcome == Outcome::Clean && !r.extra_json.empty()) detail = r.extra_json;
    std::snprintf(line, sizeof line, "%-13s %-30s %-18s %4s %9s %8s %-12s %s\n", std::string(to_string(r.kind)).c_str(),
                  one_line(r.workload_id, 30).c_str(), std::string(to_string(r.outcome)).c_str(),
                  r.http_status ? std::to_string(*r.http_status).c_str() : "-", ms(r.t_first_token_us).c_str(),
                  tps(r.client_decode_tps).c_str(), tokens(r).c_str(), one_line(detail, kDetailColumnChars).c_str());
    out += line;
  }
  out += std::to_string(rows.size()) + " row(s), " + std::to_string(clean) + " clean, " +
         std::to_string(rows.size() - clean) + " not clean\n";
  return out;
}

std::string format_probe_json(const std::string& candidate, const std::string& build,
                              const std::vector<ProbeResult>& rows) {
  ojson doc;
  doc["candidate"] = candidate;
  doc["build"] = build;
  ojson arr = ojson::array();
  bool all_clean = !rows.empty();
  for (const auto& r : rows) {
    all_clean = all_clean && r.outcome == Outcome::Clean;
    arr.push_back(row_json(r));  // every stored column, by its stored name (storage/row_json.h)
  }
  doc["rows"] = std::move(arr);
  doc["all_clean"] = all_clean;
  return doc.dump(2) + "\n";
}

int cmd_probe(const Args& a) {
  auto path = a.get("config");
  auto name = a.get("candidate");
  if (!path || !name) {
    std::fprintf(stderr, "soakd probe: --config FILE and --candidate NAME are required (see soakd --help)\n");
    return kExitUsage;
  }
  if (auto k = a.get("kind"); k && !kinds_from(k, WorkloadKind::Chat)) {
    std::fprintf(stderr, "soakd probe: %s\n", kinds_from(k, WorkloadKind::Chat).message().c_str());
    return kExitUsage;
  }
  auto cfg = load_config(*path);
  if (!cfg) {
    std::fprintf(stderr, "%s\n", cfg.message().c_str());
    return kExitNotClean;
  }
  const CandidateConfig* cand = cfg->find(*name);
  if (!cand) {
    std::string names;
    for (const auto& c : cfg->candidates) names += (names.empty() ? "" : ", ") + c.name;
    std::fprintf(stderr, "soakd probe: no candidate \"%s\" in %s (candidates: %s)\n", name->c_str(), path->c_str(),
                 names.c_str());
    return kExitUsage;
  }
  const auto kinds = kinds_from(a.get("kind"), cand->kind);  // checked above
  // Beside a running daemon: WAL lets both write; the daemon lock is its alone.
  auto store = SqliteStore::open(cfg->store_path, OpenMode::ReadWrite);
  if (!store) {
    std::fprintf(stderr, "soakd probe: %s\n", store.message().c_str());
    return kExitNotClean;
  }
  // The same set-up as the daemon's (daemon/wiring.h); nothing to log but the table.
  auto sampler = make_system_sampler(runtime_signatures());
  auto wiring = Wiring::build(**store, make_null_logger(), *sampler);
  if (!wiring) {
    std::fprintf(stderr, "soakd probe: %s\n", wiring.message().c_str());
    return kExitNotClean;
  }
  const Deps& deps = (*wiring)->deps();
  probes::ProbeEngine& engine = (*wiring)->engine();
  std::vector<ProbeResult> rows;
  std::string build(kUnknownBuild);
  std::string fingerprint;  // what the runtime serves with (probes/served_state.h)
  bool store_failed = false;
  {
    int64_t candidate_id = 0;
    bool finished = false;

    auto start_probes = [&] {
      CandidateRow c;
      c.host_id = deps.host_id;
      c.name = cand->name;
      c.model = cand->model;
      c.runtime = cand->runtime;
      c.build = build;
      c.fingerprint = fingerprint;
      c.base_url = cand->base_url;
      auto id = deps.store.upsert_candidate(c, deps.clock.wall_ms());
      if (!id) {
        std::fprintf(stderr, "soakd probe: cannot register the candidate: %s\n", id.message().c_str());
        store_failed = true;
        finished = true;
        uv_stop(deps.loop);
        return;
      }
      candidate_id = *id;
      probes::RunSpec spec{*kinds, std::nullopt, {}};
      engine.run(
          *cand, std::move(spec),
          [&](ProbeResult r) {
            r.candidate_id = candidate_id;
            r.host_id = deps.host_id;
            auto rid = deps.store.insert_probe_result(r);
            if (rid) {
              r.id = *rid;
            } else {
              std::fprintf(stderr, "soakd probe: cannot store a %s row: %s\n", std::string(to_string(r.kind)).c_str(),
                           rid.message().c_str());
              store_failed = true;
            }
            rows.push_back(std::move(r));
          },
          [&] {
            finished = true;
            uv_stop(deps.loop);
          });
    };

    engine.read_build(*cand, [&](Result<probes::BuildIdentity> b) {
      if (b) {
        build = b->build;
        fingerprint = b->fingerprint;
      } else {
        std::fprintf(stderr, "soakd probe: cannot read the build (registering it as \"%s\"): %s\n",
                     std::string(kUnknownBuild).c_str(), b.message().c_str());
      }
      start_probes();
    });
    // `done` stops the loop (idle keep-alive connections would keep it running).
    while (!finished && uv_run(deps.loop, UV_RUN_DEFAULT) != 0) {
    }
  }
  // Close the client and the engine, and the loop.
  (*wiring)->close();

  if (a.flag("json")) {
    std::fputs(format_probe_json(cand->name, build, rows).c_str(), stdout);
  } else {
    std::printf("%s (%s, %s) build %s at %s\n", cand->name.c_str(), std::string(to_string(cand->runtime)).c_str(),
                cand->model.c_str(), build.c_str(), cand->base_url.c_str());
    if (auto fp = probes::parse_fingerprint_json(fingerprint); fp && !fingerprint.empty())
      std::printf("launch: %s\n", fp->summary().c_str());
    std::fputs(format_probe_table(rows).c_str(), stdout);
  }
  bool clean = !rows.empty() && !store_failed;
  for (const auto& r : rows) clean = clean && r.outcome == Outcome::Clean;
  return clean ? kExitClean : kExitNotClean;
}

}  // namespace soak
