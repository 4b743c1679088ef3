// Store benchmark: generates a full week of a 10-candidate host (campaigns run
// in virtual time at the default cadences, with the host samples read every
// 5 s and stored as the sampler stores them, and the runtime's process samples,
// written beside the probe rows as the daemon writes them), then times `soakctl status`, `soakctl explain` (a week
// shown as judged) and `soakctl explain --recompute` against it, in the process and as whole commands (the soakctl
// program beside this one, a new process each run), and reports the store's size per candidate-week.
// `--builds N` runs N builds of every candidate one after another, each a
// whole campaign (4: about a month of store). Prints figures; asserts nothing.
//
//   store_bench [DIR] [--candidates N] [--builds N] [--keep] [--no-golden]
// (--no-golden: without the golden set's runs, equivalence.enabled false, to
// weigh what they add.)
#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

#include <sqlite3.h>

#include "campaigns/campaigns.h"
#include "detectors/process_watch.h"
#include "reports/evidence_live.h"
#include "soakctl/soakctl.h"
#include "storage/sqlite_store.h"
#include "tests/support/sim_runner.h"

// POSIX: the environment, which <unistd.h> declares on Linux only.
extern char** environ;

using namespace soak;
namespace fs = std::filesystem;

namespace {

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

struct Timing {
  double min = 0, median = 0, max = 0;
};

template <class F>
Timing time_runs(int n, F f) {
  std::vector<double> v;
  for (int i = 0; i < n; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    f();
    v.push_back(ms_since(t0));
  }
  std::sort(v.begin(), v.end());
  return {v.front(), v[v.size() / 2], v.back()};
}

// One whole command, as an operator runs it: a new process (SQLite's own page
// cache empty), its output thrown away; its wall time in ms, or -1. Spawned
// (vfork-like), not forked: copying this process's page tables would be timed too.
double run_command(const std::string& program, const std::vector<std::string>& args) {
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(program.c_str()));
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  const auto t0 = std::chrono::steady_clock::now();
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, program.c_str(), &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) return -1;
  int status = 0;
  ::waitpid(pid, &status, 0);
  const double ms = ms_since(t0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? ms : -1;
}

Timing time_command(int n, const std::string& program, const std::vector<std::string>& args) {
  bool failed = false;
  auto t = time_runs(n, [&] { failed = failed || run_command(program, args) < 0; });
  if (failed) t.median = -1;
  return t;
}

int64_t file_size(const std::string& p) {
  std::error_code ec;
  auto s = fs::file_size(p, ec);
  return ec ? 0 : static_cast<int64_t>(s);
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir = "/tmp/soakd-store-bench";
  int n = 10, builds = 1;
  bool keep = false, golden = true;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--candidates" && i + 1 < argc)
      n = std::stoi(argv[++i]);
    else if (a == "--builds" && i + 1 < argc)
      builds = std::max(1, std::stoi(argv[++i]));
    else if (a == "--keep")
      keep = true;
    else if (a == "--no-golden")
      golden = false;
    else if (a == "-h" || a == "--help") {
      std::printf(
          "usage: store_bench [DIR] [--candidates N] [--builds N] [--keep] [--no-golden]\n"
          "  DIR: where the store is generated (default /tmp/soakd-store-bench); emptied first,\n"
          "  so it must be new, empty or one store_bench made (it holds .store_bench);\n"
          "  removed at the end unless --keep\n");
      return 0;
    } else if (!a.empty() && a[0] == '-') {
      std::fprintf(stderr, "store_bench: unknown option %s (store_bench --help)\n", a.c_str());
      return 2;
    } else
      dir = a;
  }
  // DIR is emptied first, so only a directory this benchmark made: one that
  // holds its marker file (a soakd store's own directory holds the same
  // soakd.db names, never the marker), or an empty or new one.
  const std::string marker = dir + "/.store_bench";
  if (std::error_code ec; fs::exists(dir, ec) || ec) {
    if (!fs::is_directory(dir, ec)) {
      std::fprintf(stderr, "store_bench: %s is not a directory\n", dir.c_str());
      return 2;
    }
    const bool ours = fs::is_regular_file(marker, ec);
    const bool empty = fs::is_empty(dir, ec);
    if (ec) {
      std::fprintf(stderr, "store_bench: cannot read %s: %s\n", dir.c_str(), ec.message().c_str());
      return 2;
    }
    if (!ours && !empty) {
      std::fprintf(stderr,
                   "store_bench: %s is not empty and was not made by store_bench (no %s); refusing to empty "
                   "it (pass a new or empty directory)\n",
                   dir.c_str(), marker.c_str());
      return 2;
    }
  }
  fs::remove_all(dir);
  fs::create_directories(dir);
  if (FILE* f = std::fopen(marker.c_str(), "w")) {
    std::fputs("store_bench's directory: store_bench empties it when run here again\n", f);
    std::fclose(f);
  }
  const std::string db = dir + "/soakd.db";

  auto opened = SqliteStore::open(db, OpenMode::ReadWrite, Durability::Fast);
  if (!opened) {
    std::fprintf(stderr, "%s\n", opened.message().c_str());
    return 1;
  }
  auto& store = **opened;
  VirtualClock clock{1'767'225'600'000};
  const int64_t host = *store.upsert_host(HostInfo{"studio", "Mac15,14", 512LL << 30, "macOS 15.5"}, clock.wall_ms());

  // Default stage lengths and cadences; everything compared with candidate 0.
  std::string cands;
  for (int i = 0; i < n; ++i) {
    if (i) cands += ",";
    cands += R"({"name": "cand)" + std::to_string(i) + R"(", "model": "qwen3.6-35b-a3b", "runtime": "llama.cpp",
                 "base_url": "http://127.0.0.1:)" +
             std::to_string(18000 + i) + "\"" + (i ? R"(, "baseline": "cand0")" : "") + "}";
  }
  std::string text = R"({"schedule": {"nightly_window": "now", "max_concurrent_canaries": )" + std::to_string(n) +
                     R"(}, )" + (golden ? "" : R"("defaults": {"equivalence": {"enabled": false}}, )") +
                     R"("candidates": [)" + cands + "]}";
  auto cfg = parse_config(text, "bench.json", dir);
  if (!cfg) {
    std::fprintf(stderr, "%s\n", cfg.message().c_str());
    return 1;
  }
  auto shared = std::make_shared<const Config>(std::move(*cfg));
  SimRunner runner(store, clock, host);
  for (int i = 0; i < n; ++i) {
    runner.at("cand" + std::to_string(i)).build = "b95" + std::to_string(i);
    runner.at("cand" + std::to_string(i)).golden_steps = 64;  // the answers' length the golden set asks for
  }
  Outbox outbox(store, clock, make_null_logger(), host);
  Campaigns camp(shared, Deps{store, outbox, clock, make_null_logger(), nullptr, host}, runner,
                 [](int64_t) { return 0; });
  if (!camp.resume(clock.wall_ms())) return 1;

  // The sampler's share, written as the daemon writes it, beside the probe
  // rows (so that a judgment's recipe covers the samples taken before it): a
  // host sample read every 5 s and stored as the sampler stores it
  // (daemon/sampler_service.cc, HostSampleKeeper). The process samples are the
  // simulated runtime's (tests/support/sim_runner.cc), one a minute while a
  // stage runs: what the sampler stores at the default sampler.process_every
  // for a process that neither restarts nor errs.
  int64_t samples = 0;
  double gen_samples_ms = 0;
  HostSampleKeeper host_keeper(shared->sampler.process_sample_every_ms());
  const int64_t start = clock.wall_ms();
  int64_t sampled_to = start;
  auto sample_until = [&](int64_t now) {
    if (sampled_to > now) return;
    const auto s0 = std::chrono::steady_clock::now();
    sqlite3_exec(store.db(), "BEGIN", nullptr, nullptr, nullptr);
    for (; sampled_to <= now; sampled_to += kDefaultSampleEveryMs) {
      HostSample h;
      h.host_id = host;
      h.wall_ms = sampled_to;
      h.free_bytes =
          (100LL << 30) - (sampled_to / kDefaultSampleEveryMs % 7) * (1 << 20);  // moving, as free memory does
      h.active_bytes = 300LL << 30;
      h.wired_bytes = 80LL << 30;
      h.swap_used_bytes = 0;
      h.swapouts = 12;
      h.pressure_level = 1;
      h.thermal_level = 0;
      if (!host_keeper.keep(h)) continue;
      store.insert_host_sample(h).ok();
      ++samples;
    }
    sqlite3_exec(store.db(), "COMMIT", nullptr, nullptr, nullptr);
    gen_samples_ms += ms_since(s0);
  };

  std::printf(
      "generating: %d candidates x %d build(s), smoke 15m + canary 2h + gate 24h + soak 7d at the default "
      "cadences...\n",
      n, builds);
  auto t0 = std::chrono::steady_clock::now();
  for (int b = 0; b < builds; ++b) {
    if (b) {
      // The next nightly build of every candidate: a new row, a whole new campaign.
      for (int i = 0; i < n; ++i)
        runner.at("cand" + std::to_string(i)).build = "b9" + std::to_string(5 + b) + std::to_string(i);
      const int64_t until = clock.wall_ms() + kDay;  // read by the next build check
      while (clock.wall_ms() < until && camp.settled()) {
        sample_until(clock.wall_ms());
        camp.tick(clock.wall_ms());
        const int64_t now = clock.wall_ms();
        clock.advance_ms(std::max<int64_t>(1, camp.next_wake_ms(now).value_or(now + kMinute) - now));
      }
    }
    const int64_t end = clock.wall_ms() + 9 * kDay;
    while (clock.wall_ms() < end && !camp.settled()) {
      const int64_t now = clock.wall_ms();
      sample_until(now);
      runner.deliver(now);
      camp.tick(now);
      int64_t next = end;
      if (auto a = runner.next_completion_ms()) next = std::min(next, *a);
      if (auto w = camp.next_wake_ms(now)) next = std::min(next, *w);
      clock.advance_ms(std::max<int64_t>(1, next - now));
    }
  }
  sample_until(clock.wall_ms());
  sqlite3_exec(store.db(), "PRAGMA wal_checkpoint(TRUNCATE)", nullptr, nullptr, nullptr);
  const double gen_samples_s = gen_samples_ms / 1000;
  const double gen_campaign_s = ms_since(t0) / 1000 - gen_samples_s;
  auto max = *store.max_ids();
  opened->reset();

  const int64_t bytes = file_size(db) + file_size(db + "-wal");
  const double weeks = static_cast<double>(clock.wall_ms() - start) / static_cast<double>(7 * kDay);
  std::printf(
      "generated in %.1f s (campaigns) + %.1f s (samples): %lld probe rows, %lld host samples, %lld process samples, "
      "%lld events, %lld golden "
      "answers\n",
      gen_campaign_s, gen_samples_s, static_cast<long long>(max.probe), static_cast<long long>(samples),
      static_cast<long long>(max.process_sample), static_cast<long long>(max.event),
      static_cast<long long>(max.golden));
  std::printf("store: %.1f MB for %d candidates over %.2f weeks = %.1f MB per candidate-week\n", bytes / 1e6, n, weeks,
              bytes / 1e6 / n / weeks);

  SystemClock wall;
  std::ostringstream sink, err;
  auto status = time_runs(20, [&] {
    sink.str("");
    soakctl_main({"--db", db, "status"}, sink, err, wall);
  });
  std::printf("soakctl status   (in-process, 20 runs): min %.1f ms, median %.1f ms, max %.1f ms\n", status.min,
              status.median, status.max);
  int code = 0;
  auto explain = time_runs(5, [&] {
    sink.str("");
    code = soakctl_main({"--db", db, "explain", "cand1"}, sink, err, wall);
  });
  std::printf(
      "soakctl explain  (in-process, 5 runs; a week's judgment shown as judged): min %.1f ms, median %.1f ms, max %.1f "
      "ms  (exit %d)\n",
      explain.min, explain.median, explain.max, code);
  auto recompute = time_runs(3, [&] {
    sink.str("");
    code = soakctl_main({"--db", db, "explain", "cand1", "--recompute"}, sink, err, wall);
  });
  std::printf(
      "soakctl explain --recompute (in-process, 3 runs; every row read back and judged again): min %.1f ms, median "
      "%.1f ms, max %.1f ms  (exit %d)\n",
      recompute.min, recompute.median, recompute.max, code);
  // The whole commands, each a new process: what an operator waits for.
  const std::string soakctl =
      (fs::canonical("/proc/self/exe").parent_path().parent_path() / "soakctl" / "soakctl").string();
  if (fs::exists(soakctl)) {
    auto whole_status = time_command(20, soakctl, {"--db", db, "status"});
    std::printf("whole `soakctl status` (20 runs): min %.1f ms, median %.1f ms, max %.1f ms  (target <= 10 ms)\n",
                whole_status.min, whole_status.median, whole_status.max);
    auto whole_explain = time_command(10, soakctl, {"--db", db, "explain", "cand1"});
    std::printf(
        "whole `soakctl explain cand1` (10 runs): min %.1f ms, median %.1f ms, max %.1f ms  (target <= 100 ms)\n",
        whole_explain.min, whole_explain.median, whole_explain.max);
    auto whole_recompute = time_command(3, soakctl, {"--db", db, "explain", "cand1", "--recompute"});
    std::printf("whole `soakctl explain cand1 --recompute` (3 runs): min %.1f ms, median %.1f ms, max %.1f ms\n",
                whole_recompute.min, whole_recompute.median, whole_recompute.max);
  } else {
    std::printf("whole commands: no %s (build the soakctl target)\n", soakctl.c_str());
  }

  // The morning's usual case, the soaks still running: a copy of the store
  // with each candidate's last stage marked running again, timed as soakd
  // leaves it (each running stage's evidence stored, reports/evidence_live.h)
  // and without it (status computes it from the stage's rows).
  const std::string running_db = dir + "/running.db";
  fs::copy_file(db, running_db, fs::copy_options::overwrite_existing);
  {
    auto rw = SqliteStore::open(running_db, OpenMode::ReadWrite);
    if (!rw) {
      std::fprintf(stderr, "store_bench: %s\n", rw.message().c_str());
      return 1;
    }
    sqlite3_exec((*rw)->db(),
                 "UPDATE stages SET state = 'running', ended_ms = NULL "
                 "WHERE id IN (SELECT MAX(id) FROM stages GROUP BY candidate_id)",
                 nullptr, nullptr, nullptr);
    auto mid = [&](const char* what, int runs) {
      auto t = fs::exists(soakctl) ? time_command(runs, soakctl, {"--db", running_db, "status"}) : time_runs(runs, [&] {
        sink.str("");
        soakctl_main({"--db", running_db, "status"}, sink, err, wall);
      });
      std::printf("%s `soakctl status` while the soaks run, %s (%d runs): min %.1f ms, median %.1f ms, max %.1f ms\n",
                  fs::exists(soakctl) ? "whole" : "in-process", what, runs, t.min, t.median, t.max);
    };
    mid("computed from the rows", 3);
    report::StageEvidenceWriter writer;
    const auto t1 = std::chrono::steady_clock::now();
    if (auto st = writer.refresh(**rw, clock.wall_ms()); !st) {
      std::fprintf(stderr, "store_bench: %s\n", st.message().c_str());
      return 1;
    }
    std::printf("soakd's first evidence refresh of the %d running stages: %.1f ms (one stage a sampler tick)\n", n,
                ms_since(t1));
    // What each later refresh costs soakd: a new row in every stage, read
    // alone, and every stage's evidence recomputed from its rows in memory.
    auto statuses = *(*rw)->status();
    for (const auto& s : statuses) {
      if (!s.stage) continue;
      ProbeQuery q;  // one of the stage's rows, sent again now
      q.stage_id = s.stage->id;
      q.limit = 1;
      auto one = (*rw)->probe_results(q);
      if (!one || one->empty()) continue;
      ProbeResult r = one->front();
      r.id = 0;
      r.started_wall_ms = clock.wall_ms();
      if (auto id = (*rw)->insert_probe_result(r); !id) {
        std::fprintf(stderr, "store_bench: %s\n", id.message().c_str());
        return 1;
      }
    }
    const auto t2 = std::chrono::steady_clock::now();
    if (auto st = writer.refresh(**rw, clock.wall_ms() + 60'000); !st) {
      std::fprintf(stderr, "store_bench: %s\n", st.message().c_str());
      return 1;
    }
    std::printf("a later refresh (a new row in each of the %d stages): %.1f ms\n", n, ms_since(t2));
    mid("as soakd stores it", 20);
  }
  if (!keep) fs::remove_all(dir);
  return 0;
}
