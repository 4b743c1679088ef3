// Library floor benchmark: a program with none of soakd's own code that links
// the libraries soakd links (libcurl, libuv, SQLite, spdlog, nlohmann_json) and
// brings each up the way soakd does — curl's global init and a multi handle,
// one request to a closed loopback port, a libuv loop, an SQLite store in WAL
// mode with one write, one log line — then prints its resident memory, the
// private part, and what is mapped. This is the floor under rest_bench's
// resident figure: memory soakd pays for its dependencies before any code of
// its own runs. Prints figures; asserts nothing. Linux only (it reads /proc).
//
//   library_floor_bench
#include <curl/curl.h>
#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/spdlog.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <unistd.h>
#include <uv.h>

#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "proc_memory.h"

namespace {

void print(const char* when) {
  const std::string status = soak::bench::slurp("/proc/self/status");
  std::printf("  %-50s resident %.1f MB (private %.1f MB)\n", when,
              static_cast<double>(soak::bench::field_kb(status, "VmRSS")) / 1024,
              static_cast<double>(soak::bench::field_kb(status, "RssAnon")) / 1024);
}

}  // namespace

int main() {
  char tmpl[] = "/tmp/library-floor-XXXXXX";
  if (!mkdtemp(tmpl)) {
    std::perror("library_floor_bench: mkdtemp");
    return 1;
  }
  const std::filesystem::path dir = tmpl;
  std::printf("libraries soakd links, brought up as soakd does, with none of its code:\n");
  print("loaded (before main's first call)");

  curl_global_init(CURL_GLOBAL_DEFAULT);
  CURLM* multi = curl_multi_init();
  CURL* easy = curl_easy_init();
  curl_easy_setopt(easy, CURLOPT_URL, "http://127.0.0.1:1/v1/models");  // refused at once: loopback, closed port
  curl_easy_setopt(easy, CURLOPT_TIMEOUT_MS, 1000L);
  curl_easy_perform(easy);
  print("curl: global init, a multi handle, one request");

  uv_loop_t loop;
  uv_loop_init(&loop);
  uv_run(&loop, UV_RUN_NOWAIT);

  sqlite3* db = nullptr;
  sqlite3_open_v2((dir / "store.db").c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr);
  sqlite3_exec(db,
               "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; CREATE TABLE t(a INTEGER, b TEXT);"
               "INSERT INTO t VALUES (1, 'row');",
               nullptr, nullptr, nullptr);
  print("+ a libuv loop, an SQLite store (WAL, one write)");

  auto log = spdlog::basic_logger_mt("floor", (dir / "floor.log").string());
  log->info("one line {}", 1);
  const auto j = nlohmann::json::parse(R"({"object":"list","data":[{"id":"m"}]})");
  print(j.contains("data") ? "+ a log line and a JSON answer parsed" : "+ a log line");

  const auto parts = soak::bench::resident_parts(getpid());
  std::printf("  of it: the program's own file %.1f MB, %d shared libraries %.1f MB, anonymous %.1f MB\n",
              static_cast<double>(parts.program_kb) / 1024, parts.libraries,
              static_cast<double>(parts.libraries_kb) / 1024, static_cast<double>(parts.anonymous_kb) / 1024);

  spdlog::drop_all();
  sqlite3_close(db);
  uv_loop_close(&loop);
  curl_easy_cleanup(easy);
  curl_multi_cleanup(multi);
  curl_global_cleanup();
  std::filesystem::remove_all(dir);
  return 0;
}
