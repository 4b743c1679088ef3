// Reports benchmark: on a store made by `store_bench DIR --keep` (a week of a
// 10-candidate host), times `soakctl report` for the index and for each
// candidate, `soakctl metrics`, and one incremental refresh of the metrics
// collector (what soakd does on each sampler tick), and prints the sizes.
// Prints figures; asserts nothing.
//
//   reports_bench DIR/soakd.db [--runs N] [--out DIR]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/version.h"
#include "reports/textfile.h"
#include "soakctl/soakctl.h"
#include "storage/sqlite_store.h"

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

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(
        stderr,
        "usage: reports_bench DIR/soakd.db [--runs N] [--out DIR]  (make the store with store_bench DIR --keep)\n");
    return 2;
  }
  const std::string db = argv[1];
  int runs = 5;
  std::string out = fs::temp_directory_path() / "soakd-reports-bench";
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--runs" && i + 1 < argc)
      runs = std::stoi(argv[++i]);
    else if (a == "--out" && i + 1 < argc)
      out = argv[++i];
  }
  fs::create_directories(out);
  auto opened = SqliteStore::open(db, OpenMode::ReadOnly);
  if (!opened) {
    std::fprintf(stderr, "%s\n", opened.message().c_str());
    return 1;
  }
  std::vector<std::string> names;
  int64_t now = 0;
  for (const auto& s : *(*opened)->status()) {
    names.push_back(s.candidate.name);
    if (s.verdict) now = std::max(now, s.verdict->wall_ms);
  }
  const auto max = *(*opened)->max_ids();
  std::printf("store %s: %.1f MB, %zu candidates, %lld probe rows, %lld host + %lld process samples\n", db.c_str(),
              static_cast<double>(fs::file_size(db)) / 1e6, names.size(), static_cast<long long>(max.probe),
              static_cast<long long>(max.host_sample), static_cast<long long>(max.process_sample));
  VirtualClock clock{now};  // the reports as of the store's last verdict
  std::ostringstream sink, err;
  auto report = [&](std::vector<std::string> args, const std::string& file) {
    args.insert(args.begin(), {"--db", db, "report"});
    args.insert(args.end(), {"--html", file});
    sink.str("");
    if (soakctl_main(args, sink, err, clock) != 0) std::fprintf(stderr, "report failed: %s\n", err.str().c_str());
  };
  const std::string index = out + "/index.html";
  auto t = time_runs(runs, [&] { report({}, index); });
  std::printf("report index            (%d runs): min %.0f ms, median %.0f ms, max %.0f ms; %.1f KB\n", runs, t.min,
              t.median, t.max, static_cast<double>(fs::file_size(index)) / 1e3);
  double worst = 0, total_kb = 0, biggest_kb = 0;
  for (const auto& name : names) {
    const std::string file = out + "/" + name + ".html";
    auto c = time_runs(runs, [&] { report({name}, file); });
    const double kb = static_cast<double>(fs::file_size(file)) / 1e3;
    std::printf("report %-16s (%d runs): min %.0f ms, median %.0f ms, max %.0f ms; %.1f KB\n", name.c_str(), runs,
                c.min, c.median, c.max, kb);
    worst = std::max(worst, c.median);
    total_kb += kb;
    biggest_kb = std::max(biggest_kb, kb);
  }
  std::printf("all %zu candidate reports: %.0f KB together, largest %.0f KB, slowest median %.0f ms\n", names.size(),
              total_kb, biggest_kb, worst);
  std::string text;
  auto m = time_runs(runs, [&] {
    sink.str("");
    soakctl_main({"--db", db, "metrics"}, sink, err, clock);
    text = sink.str();
  });
  std::printf("soakctl metrics         (%d runs): min %.0f ms, median %.0f ms, max %.0f ms; %.1f KB, %lld lines\n",
              runs, m.min, m.median, m.max, static_cast<double>(text.size()) / 1e3,
              static_cast<long long>(std::count(text.begin(), text.end(), '\n')));
  report::TextfileCollector collector(report::MetricsOptions{GuardRules{}.window_ms, kSoakdVersion});
  if (!collector.refresh(**opened, now)) return 1;
  auto tick = time_runs(std::max(runs, 20), [&] {
    collector.refresh(**opened, now).ok();
    text = collector.render(now);
  });
  std::printf("metrics refresh + render on a sampler tick, nothing new (%d runs): median %.2f ms, max %.2f ms\n",
              std::max(runs, 20), tick.median, tick.max);
  std::printf("pages in %s\n", out.c_str());
  return 0;
}
