// The reports in a real browser: headless Chromium loads the pages soakctl
// writes for a demo-like store (tests/support/demo_store.h), with every host
// name resolving nowhere so any fetch would fail loudly. Checked: no console
// message at all (no script runs, nothing fails to load), the charts are in
// the DOM, nothing from the store became markup, and a screenshot is not a
// blank page. Without Chromium (SOAKD_CHROMIUM, or chromium / chromium-browser
// / google-chrome on the PATH) the test exits 77, which ctest reports as
// skipped; CI installs Debian's chromium.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>

#include "soakctl/soakctl.h"
#include "storage/sqlite_store.h"
#include "tests/catch.h"
#include "tests/support/child_process.h"
#include "tests/support/demo_store.h"
#include "tests/support/temp_dir.h"

using namespace soak;

namespace {

constexpr int kSkipExitCode = 77;
constexpr int kBrowserTimeoutMs = 90'000;
constexpr int kShotWidth = 1200, kShotHeight = 2400;

[[noreturn]] void skip(const std::string& why) {
  std::printf("skipped: %s\n", why.c_str());
  std::fflush(stdout);
  std::_Exit(kSkipExitCode);
}

std::string find_chromium() {
  if (const char* env = std::getenv("SOAKD_CHROMIUM"); env && *env) return env;
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "/usr/bin:/bin");
  for (std::string dir; std::getline(dirs, dir, ':');)
    for (const char* name : {"chromium", "chromium-browser", "google-chrome"}) {
      const std::string p = dir + "/" + name;
      if (::access(p.c_str(), X_OK) == 0) return p;
    }
  return "";
}

struct Browser {
  std::string bin;
  TempDir profile;

  RunResult run(const std::vector<std::string>& extra, const std::string& url) const {
    std::vector<std::string> argv{bin, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                                  "--disable-component-update", "--disable-sync", "--no-first-run",
                                  "--disable-extensions", "--user-data-dir=" + profile.path(),
                                  // Every host name resolves nowhere: a page that fetched anything would log a failure.
                                  "--host-resolver-rules=MAP * ~NOTFOUND", "--enable-logging=stderr", "--v=0"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    argv.push_back(url);
    return run_program(argv, kBrowserTimeoutMs);
  }
};

// Console messages (errors, warnings, logs) as Chromium prints them with --enable-logging.
std::vector<std::string> console_lines(const std::string& log) {
  std::vector<std::string> out;
  std::istringstream lines(log);
  for (std::string line; std::getline(lines, line);)
    if (line.find(":CONSOLE") != std::string::npos || line.find("Uncaught") != std::string::npos ||
        line.find("Failed to load resource") != std::string::npos)
      out.push_back(line);
  return out;
}

std::string read_file(const std::string& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

uint32_t be32(const std::string& s, size_t at) {
  return (static_cast<uint32_t>(static_cast<unsigned char>(s[at])) << 24) |
         (static_cast<uint32_t>(static_cast<unsigned char>(s[at + 1])) << 16) |
         (static_cast<uint32_t>(static_cast<unsigned char>(s[at + 2])) << 8) |
         static_cast<uint32_t>(static_cast<unsigned char>(s[at + 3]));
}

// A PNG's size from its IHDR chunk (signature, length, "IHDR", width, height).
std::pair<uint32_t, uint32_t> png_size(const std::string& png) {
  REQUIRE(png.size() > 24);
  REQUIRE(png.compare(0, 8, "\x89PNG\r\n\x1a\n") == 0);
  REQUIRE(png.compare(12, 4, "IHDR") == 0);
  return {be32(png, 16), be32(png, 20)};
}

struct Pages {
  TempDir dir;
  DemoStore demo;
  std::string leak, regression, index, blank;
};

const Pages& pages() {
  // Built once for every test case (a second of simulation); never freed, like any static.
  static Pages* built = [] {
    auto* pp = new Pages;
    Pages& p = *pp;
    auto d = build_demo_store(p.dir.path());
    INFO((d.ok() ? "" : d.message()));
    REQUIRE(d.ok());
    p.demo = *d;
    {  // A candidate row whose name and verdict would be markup if not escaped.
      auto st = SqliteStore::open(p.demo.path, OpenMode::ReadWrite);
      REQUIRE(st.ok());
      CandidateRow c;
      c.host_id = 1;
      c.name = "<script>console.error('injected')</script>";
      c.model = "<img src=x onerror=\"console.error('img')\">";
      c.build = "b1";
      const int64_t id = *(*st)->upsert_candidate(c, p.demo.end_ms);
      VerdictRow v;
      v.candidate_id = id;
      v.wall_ms = p.demo.end_ms;
      v.state = VerdictState::Hold;
      v.stage = "canary";
      v.reason = "<b onmouseover=\"console.error('b')\">marginal</b>";
      v.judge_version = "judge-1";
      REQUIRE((*st)->insert_verdict(v).ok());
    }
    VirtualClock clock{p.demo.end_ms};
    auto write = [&](std::vector<std::string> args, const std::string& file) {
      std::ostringstream o, e;
      args.insert(args.begin(), {"--db", p.demo.path, "report"});
      args.insert(args.end(), {"--html", file});
      INFO(e.str());
      REQUIRE(soakctl_main(args, o, e, clock) == kCtlExitOk);
      return file;
    };
    p.leak = write({"mlx-leak"}, p.dir.path() + "/leak.html");
    p.regression = write({"llama-b9502"}, p.dir.path() + "/regression.html");
    p.index = write({}, p.dir.path() + "/index.html");
    p.blank = p.dir.path() + "/blank.html";
    std::ofstream(p.blank) << "<!DOCTYPE html><html><head><meta charset=\"utf-8\"></head><body></body></html>\n";
    return pp;
  }();
  return *built;
}

std::unique_ptr<Browser> browser() {
  auto b = std::make_unique<Browser>();
  b->bin = find_chromium();
  if (b->bin.empty()) skip("no Chromium (set SOAKD_CHROMIUM or install Debian's chromium: apt-get install chromium)");
  return b;
}

std::string url(const std::string& file) { return "file://" + file; }

}  // namespace

TEST_CASE("a candidate's report loads in Chromium without a console message and with every chart") {
  const auto browser_ptr = browser();
  const Browser& b = *browser_ptr;
  for (const auto& [file, charts] : std::vector<std::pair<std::string, std::vector<std::string>>>{
           {pages().leak, {"timeline-chart", "memory", "pressure", "ladder", "bursts"}},
           {pages().regression, {"timeline-chart", "memory", "perf-ttft_ms", "perf-decode_tps", "perf-wall_ms"}}}) {
    INFO(file);
    RunResult r = b.run({"--dump-dom"}, url(file));
    INFO(r.err.substr(0, 4000));
    REQUIRE(r.exit_code == 0);
    CHECK(console_lines(r.err).empty());
    const std::string& dom = r.out;
    REQUIRE(dom.find("</html>") != std::string::npos);
    for (const auto& id : charts) {
      INFO(id);
      CHECK(dom.find("<svg xmlns=\"http://www.w3.org/2000/svg\" id=\"" + id + "\"") != std::string::npos);
    }
    CHECK(dom.find("<script") == std::string::npos);
    CHECK(dom.find("id=\"verdict\"") != std::string::npos);
    CHECK(dom.find("<tr id=\"event-") != std::string::npos);
  }
}

TEST_CASE("the index loads in Chromium; names from the store stay text") {
  const auto browser_ptr = browser();
  const Browser& b = *browser_ptr;
  RunResult r = b.run({"--dump-dom"}, url(pages().index));
  INFO(r.err.substr(0, 4000));
  REQUIRE(r.exit_code == 0);
  CHECK(console_lines(r.err).empty());  // the injected console.error never ran
  CHECK(r.out.find("<script") == std::string::npos);
  CHECK(r.out.find("<img") == std::string::npos);
  CHECK(r.out.find("&lt;script&gt;console.error('injected')&lt;/script&gt;") != std::string::npos);
  for (int i = 0; i < 5; ++i) CHECK(r.out.find("id=\"mini-" + std::to_string(i) + "\"") != std::string::npos);
}

TEST_CASE("a screenshot of a report is not a blank page") {
  const auto browser_ptr = browser();
  const Browser& b = *browser_ptr;
  const std::string window = "--window-size=" + std::to_string(kShotWidth) + "," + std::to_string(kShotHeight);
  auto shot = [&](const std::string& page, const std::string& png) {
    RunResult r = b.run({"--screenshot=" + png, window, "--hide-scrollbars"}, url(page));
    INFO(r.err.substr(0, 4000));
    REQUIRE(r.exit_code == 0);
    CHECK(console_lines(r.err).empty());
    return read_file(png);
  };
  const std::string dir = pages().dir.path();
  const std::string blank = shot(pages().blank, dir + "/blank.png");
  const std::string report = shot(pages().leak, dir + "/leak.png");
  const std::string index = shot(pages().index, dir + "/index.png");
  CHECK(png_size(blank) == std::pair<uint32_t, uint32_t>(kShotWidth, kShotHeight));
  CHECK(png_size(report) == std::pair<uint32_t, uint32_t>(kShotWidth, kShotHeight));
  // A uniform page compresses to almost nothing; charts and text do not.
  INFO("blank " << blank.size() << " bytes, report " << report.size() << ", index " << index.size());
  CHECK(report.size() > 5 * blank.size());
  CHECK(index.size() > 5 * blank.size());
  // SOAKD_KEEP_SCREENSHOTS=DIR keeps the screenshots and the pages, to look at them.
  if (const char* keep = std::getenv("SOAKD_KEEP_SCREENSHOTS"); keep && *keep)
    for (const char* f : {"leak.png", "index.png", "leak.html", "regression.html", "index.html"})
      std::filesystem::copy_file(dir + "/" + f, std::string(keep) + "/" + f,
                                 std::filesystem::copy_options::overwrite_existing);
}
