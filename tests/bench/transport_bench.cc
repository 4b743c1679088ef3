// Transport benchmark: prints figures, asserts nothing (docs/DESIGN.md §5.9:
// speed is measured by programs that print, never by timed tests).
//
//   transport_bench [--raw-client PATH] [--anchor-client PATH] [--python PATH] [--quick]
//       (a) SSE ingest, events per CPU-second: the parser alone, and
//           HttpClient+SseClient from a loopback source;
//       (b) TTFT overhead with 80 concurrent streams, a token every 2 ms:
//           client TTFT minus the source's own request-to-first-content time;
//       (c) spread of an 80-request burst, from the source's arrival stamps.
//       With --raw-client / --anchor-client the anchor clients run against the
//       same source in the same run, and their figures print beside ours.
//   transport_bench serve [--port P] [--tokens N] [--interval-ms X] [--delay-ms D]
//       only the source, in the foreground.
//
// Every source is a forked child, so only the client's own CPU time counts.
#include <arpa/inet.h>
#include <curl/curl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>
#include <uv.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/clock.h"
#include "probes/transport/http_client.h"
#include "probes/transport/sse.h"
#include "probes/transport/sse_client.h"
#include "tests/bench/sse_source.h"

using namespace soak;

namespace {

constexpr size_t kPieceBytes = 64 * 1024;  // parser-alone feed size, like one large socket read
constexpr int64_t kNsPerMs = 1'000'000;

struct Options {
  std::string raw_client;
  std::string anchor_client;
  std::string python = "/usr/bin/python3";
  int ingest_requests = 20;
  int ingest_tokens = 20'000;
  int parser_passes = 50;
  int streams = 80;
  int ttft_requests = 240;
  int ttft_tokens = 200;
  int single_requests = 20;
  double interval_ms = 2;
  double delay_ms = 50;
  int burst = 80;
  int burst_rounds = 5;
};

double cpu_seconds() {
  rusage r{};
  getrusage(RUSAGE_SELF, &r);
  return static_cast<double>(r.ru_utime.tv_sec + r.ru_stime.tv_sec) +
         static_cast<double>(r.ru_utime.tv_usec + r.ru_stime.tv_usec) / 1e6;
}

struct Percentiles {
  double p50 = -1, p99 = -1, max = -1;
  size_t n = 0;
};

Percentiles percentiles(std::vector<double> v) {
  Percentiles p;
  p.n = v.size();
  if (v.empty()) return p;
  std::sort(v.begin(), v.end());
  p.p50 = v[v.size() / 2];
  p.p99 = v[static_cast<size_t>(0.99 * static_cast<double>(v.size() - 1))];
  p.max = v.back();
  return p;
}

// The cheap content test a probe would make before parsing JSON
// (Boyer-Moore-Horspool: the needle's first byte, '"', is everywhere in JSON).
bool has_content(std::string_view data) {
  static constexpr std::string_view kNeedle = "\"content\":\"";
  static const std::boyer_moore_horspool_searcher searcher(kNeedle.begin(), kNeedle.end());
  return std::search(data.begin(), data.end(), searcher) != data.end();
}

// ------------------------------------------------------------------ (a) parser alone
double parser_events_per_cpu_s(const Options& o, int64_t* events_out) {
  std::string body;
  for (int i = 0; i < o.ingest_tokens; ++i) body += bench::content_event(i);
  struct Count final : SseSink {
    int64_t events = 0;
    int64_t bytes = 0;
    void on_event(const SseEvent& e) override {
      ++events;
      bytes += static_cast<int64_t>(e.data.size());
    }
    void on_comment(std::string_view) override {}
  } sink;
  double c0 = cpu_seconds();
  for (int pass = 0; pass < o.parser_passes; ++pass) {
    SseParser p;
    for (size_t at = 0; at < body.size(); at += kPieceBytes) {
      p.feed(std::string_view(body).substr(at, kPieceBytes), sink);
    }
  }
  double cpu = cpu_seconds() - c0;
  *events_out = sink.events;
  return static_cast<double>(sink.events) / cpu;
}

int64_t number_after(std::string_view s, std::string_view key) {
  size_t at = s.find(key);
  return at == std::string_view::npos ? 0 : std::strtoll(s.data() + at + key.size(), nullptr, 10);
}

// ------------------------------------------------------------------ our client
struct ClientStats {
  int64_t events = 0;
  int completed = 0;
  int failed = 0;
  double cpu_s = 0;
  double wall_s = 0;
  std::vector<double> overhead_ms;
  std::vector<double> overhead_from_connect_ms;  // TTFT counted from this request's socket creation
  std::vector<double> overhead_from_send_ms;     // TTFT counted from the request leaving (connected stamp)
  std::vector<double> request_leg_ms;            // start() -> request fully arrived at the source
  std::vector<double> delivery_leg_ms;           // source wrote the first content -> our event
  std::vector<int64_t> start_ns;
  std::vector<int64_t> connected_ns;
  std::string first_failure;
};

class Runner {
 public:
  Runner(uv_loop_t* loop, const Clock& clock) : loop_(loop), clock_(clock), http_(loop, clock), sse_(http_) {}
  ~Runner() {
    http_.shutdown();
    uv_run(loop_, UV_RUN_DEFAULT);
  }

  // `concurrency` streams in flight until `requests` have finished. With
  // `stagger_ms` > 0 the first `concurrency` start that far apart instead of
  // together (refills start as streams end, either way).
  ClientStats run(int port, int concurrency, int requests, ConnectionPolicy policy, double stagger_ms = 0) {
    stats_ = ClientStats{};
    port_ = port;
    policy_ = policy;
    remaining_ = requests;
    finished_ = 0;
    streams_.clear();
    double c0 = cpu_seconds();
    int64_t w0 = clock_.mono_ns();
    uv_timer_t stagger;
    int to_stagger = 0;
    if (stagger_ms > 0) {
      start_one();
      to_stagger = std::min(concurrency, requests) - 1;
      uv_timer_init(loop_, &stagger);
      stagger.data = this;
      pending_stagger_ = &to_stagger;
      auto every = static_cast<uint64_t>(std::max(1.0, stagger_ms));
      uv_timer_start(
          &stagger,
          [](uv_timer_t* t) {
            auto* self = static_cast<Runner*>(t->data);
            if (*self->pending_stagger_ > 0 && self->remaining_ > 0) {
              --*self->pending_stagger_;
              self->start_one();
            }
            if (*self->pending_stagger_ == 0) uv_timer_stop(t);
          },
          every, every);
    } else {
      for (int i = 0; i < concurrency && remaining_ > 0; ++i) start_one();
    }
    while (finished_ < requests) uv_run(loop_, UV_RUN_ONCE);
    if (stagger_ms > 0) {
      uv_close(reinterpret_cast<uv_handle_t*>(&stagger), nullptr);
      uv_run(loop_, UV_RUN_NOWAIT);
    }
    stats_.cpu_s = cpu_seconds() - c0;
    stats_.wall_s = static_cast<double>(clock_.mono_ns() - w0) / 1e9;
    return stats_;
  }

  // The source's arrival stamps since the last query (and resets them).
  std::vector<int64_t> arrivals(int port) {
    struct Get final : TransferHandler {
      std::optional<TransferResult> r;
      void on_done(TransferId, const TransferResult& res) override { r = res; }
    } get;
    HttpRequest req;
    req.url = "http://127.0.0.1:" + std::to_string(port) + "/bench/arrivals";
    req.body_mode = BodyMode::Buffer;
    http_.start(req, &get);
    while (!get.r) uv_run(loop_, UV_RUN_ONCE);
    std::vector<int64_t> out;
    auto j = nlohmann::json::parse(get.r->body, nullptr, false);
    if (j.is_array())
      for (const auto& v : j) out.push_back(v.get<int64_t>());
    return out;
  }

 private:
  class Stream final : public SseHandler {
   public:
    explicit Stream(Runner* r) : runner_(r) {}
    EventClass on_event(TransferId, const SseEvent& e, int64_t ns) override {
      ++events_;
      if (has_content(e.data)) {
        if (!first_content_ns_) first_content_ns_ = ns;
        return EventClass::Content;
      }
      size_t at = e.data.find("\"prompt_ms\":");
      if (at != std::string_view::npos) {
        prompt_ms_ = std::strtod(e.data.data() + at + 12, nullptr);
        arrival_ns_ = number_after(e.data, "\"arrival_mono_ns\":");
        first_write_ns_ = number_after(e.data, "\"first_write_mono_ns\":");
      }
      return EventClass::NotContent;
    }
    void on_done(TransferId, const SseResult& r) override { runner_->finished(*this, r); }

    Runner* runner_;
    int64_t events_ = 0;
    std::optional<int64_t> first_content_ns_;
    double prompt_ms_ = -1;
    int64_t arrival_ns_ = 0;  // source clock = our mono clock (CLOCK_MONOTONIC, same host)
    int64_t first_write_ns_ = 0;
  };

  void start_one() {
    --remaining_;
    HttpRequest req;
    req.method = "POST";
    req.url = "http://127.0.0.1:" + std::to_string(port_) + "/v1/chat/completions";
    req.body = R"({"model":"bench","messages":[{"role":"user","content":"hi"}],"stream":true,)"
               R"("stream_options":{"include_usage":true}})";
    req.connection = policy_;
    req.stall_timeout_ms = 10'000;
    req.wall_timeout_ms = 120'000;
    req.max_response_bytes = 1LL << 30;
    streams_.push_back(std::make_unique<Stream>(this));
    sse_.start(std::move(req), streams_.back().get());
  }

  void finished(Stream& s, const SseResult& r) {
    ++finished_;
    stats_.events += s.events_;
    const auto& t = r.transfer;
    stats_.start_ns.push_back(t.times.start_ns);
    if (t.times.connected_ns) stats_.connected_ns.push_back(*t.times.connected_ns);
    if (t.reason == EndReason::Completed && t.head.status == 200) {
      ++stats_.completed;
      if (s.first_content_ns_ && s.prompt_ms_ >= 0) {
        double ttft_ms = static_cast<double>(*s.first_content_ns_ - t.times.start_ns) / kNsPerMs;
        stats_.overhead_ms.push_back(ttft_ms - s.prompt_ms_);
        if (t.times.connect_start_ns) {
          double ms = static_cast<double>(*s.first_content_ns_ - *t.times.connect_start_ns) / kNsPerMs;
          stats_.overhead_from_connect_ms.push_back(ms - s.prompt_ms_);
        }
        if (t.times.connected_ns) {
          double from_send_ms = static_cast<double>(*s.first_content_ns_ - *t.times.connected_ns) / kNsPerMs;
          stats_.overhead_from_send_ms.push_back(from_send_ms - s.prompt_ms_);
        }
        if (s.arrival_ns_ > 0) {
          stats_.request_leg_ms.push_back(static_cast<double>(s.arrival_ns_ - t.times.start_ns) / kNsPerMs);
          stats_.delivery_leg_ms.push_back(static_cast<double>(*s.first_content_ns_ - s.first_write_ns_) / kNsPerMs);
        }
      }
    } else {
      ++stats_.failed;
      if (stats_.first_failure.empty()) stats_.first_failure = std::string(to_string(t.reason)) + ": " + t.detail;
    }
    if (remaining_ > 0) start_one();
  }

  uv_loop_t* loop_;
  const Clock& clock_;
  HttpClient http_;
  SseClient sse_;
  ClientStats stats_;
  std::vector<std::unique_ptr<Stream>> streams_;
  int port_ = 0;
  ConnectionPolicy policy_ = ConnectionPolicy::Reuse;
  int remaining_ = 0;
  int finished_ = 0;
  int* pending_stagger_ = nullptr;
};

// ------------------------------------------------------------------ anchors
std::optional<nlohmann::json> run_json_command(const std::string& cmd) {
  FILE* f = ::popen(cmd.c_str(), "r");
  if (!f) return std::nullopt;
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
  ::pclose(f);
  size_t at = out.rfind('{');
  if (at == std::string::npos) {
    fprintf(stderr, "no JSON from: %s\n%s\n", cmd.c_str(), out.c_str());
    return std::nullopt;
  }
  auto j = nlohmann::json::parse(out.substr(at), nullptr, false);
  if (j.is_discarded()) return std::nullopt;
  return j;
}

struct AnchorFigures {
  double events_per_cpu_s = -1;
  Percentiles overhead;
  int requests = 0;
};

std::optional<AnchorFigures> run_raw(const Options& o, int port, int conc, int reqs) {
  if (o.raw_client.empty()) return std::nullopt;
  auto j = run_json_command(o.raw_client + " " + std::to_string(port) + " " + std::to_string(conc) + " " +
                            std::to_string(reqs));
  if (!j) return std::nullopt;
  AnchorFigures a;
  double cpu = j->value("cpu_s", 0.0);
  a.events_per_cpu_s = cpu > 0 ? j->value("events", 0.0) / cpu : -1;
  a.overhead = {j->value("ttft_overhead_ms_p50", -1.0), j->value("ttft_overhead_ms_p99", -1.0),
                j->value("ttft_overhead_ms_max", -1.0), 0};
  a.requests = j->value("requests", 0);
  return a;
}

std::optional<AnchorFigures> run_aiohttp(const Options& o, int port, int conc, int reqs) {
  if (o.anchor_client.empty()) return std::nullopt;
  auto j = run_json_command(o.python + " " + o.anchor_client + " http://127.0.0.1:" + std::to_string(port) +
                            "/v1/chat/completions --concurrency " + std::to_string(conc) + " --requests " +
                            std::to_string(reqs));
  if (!j) return std::nullopt;
  AnchorFigures a;
  auto num = [&](const char* k) { return (*j)[k].is_number() ? (*j)[k].get<double>() : -1.0; };
  a.events_per_cpu_s = num("events_per_cpu_s");
  a.overhead = {num("ttft_overhead_ms_p50"), num("ttft_overhead_ms_p99"), num("ttft_overhead_ms_max"), 0};
  a.requests = (*j).value("requests", 0);
  return a;
}

// The raw reader's request leg: a blocking socket, connect, one write of the
// whole request, then read to the end; start = just before socket(). The
// source stamps arrival on the same CLOCK_MONOTONIC.
std::optional<int64_t> raw_lone_request(int port, const Clock& clock) {
  const std::string body = R"({"model":"bench","messages":[{"role":"user","content":"hi"}],"stream":true})";
  const std::string req =
      "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
      "Content-Length: " +
      std::to_string(body.size()) + "\r\n\r\n" + body;
  const int64_t t0 = clock.mono_ns();
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return std::nullopt;
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
            ::send(fd, req.data(), req.size(), 0) == static_cast<ssize_t>(req.size());
  char buf[4096];
  while (ok && ::recv(fd, buf, sizeof buf, 0) > 0) {
  }
  ::close(fd);
  if (!ok) return std::nullopt;
  return t0;
}

double spread_ms(const std::vector<int64_t>& v) {
  if (v.size() < 2) return 0;
  auto [lo, hi] = std::minmax_element(v.begin(), v.end());
  return static_cast<double>(*hi - *lo) / kNsPerMs;
}

std::string fmt_rate(double v) {
  if (v < 0) return "-";
  char b[32];
  snprintf(b, sizeof b, "%.2f M", v / 1e6);
  return b;
}

std::string fmt_pct(const Percentiles& p) {
  if (p.p50 < 0 && p.max < 0) return "-";
  char b[64];
  snprintf(b, sizeof b, "%.2f / %.2f / %.2f", p.p50, p.p99, p.max);
  return b;
}

std::string fmt_ms(double v) {
  char b[32];
  snprintf(b, sizeof b, "%+.2f ms", v);
  return b;
}

void row(const char* label, const std::string& ours, const std::string& raw, const std::string& aio) {
  printf("  %-44s %-22s %-22s %-22s\n", label, ours.c_str(), raw.c_str(), aio.c_str());
}

Options parse_options(int argc, char** argv, int first) {
  Options o;
  for (int i = first; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--raw-client")
      o.raw_client = next();
    else if (a == "--anchor-client")
      o.anchor_client = next();
    else if (a == "--python")
      o.python = next();
    else if (a == "--quick") {
      o.ingest_requests = 4;
      o.ingest_tokens = 5'000;
      o.parser_passes = 10;
      o.ttft_requests = 80;
      o.ttft_tokens = 50;
      o.single_requests = 5;
      o.burst_rounds = 2;
    } else {
      fprintf(stderr, "unknown option %s\n", a.c_str());
      std::exit(2);
    }
  }
  return o;
}

int serve_main(int argc, char** argv) {
  bench::SourceConfig c;
  c.port = 19300;
  for (int i = 2; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--port")
      c.port = std::atoi(argv[i + 1]);
    else if (a == "--tokens")
      c.tokens = std::atoi(argv[i + 1]);
    else if (a == "--interval-ms")
      c.interval_ms = std::atof(argv[i + 1]);
    else if (a == "--delay-ms")
      c.delay_ms = std::atof(argv[i + 1]);
  }
  return bench::serve_forever(c);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == "serve") return serve_main(argc, argv);
  Options o = parse_options(argc, argv, 1);

  // Sources first, while this process has no threads, loop or curl state.
  int alive[2];
  if (::pipe(alive) != 0) return 1;
  bench::SourceProcess ingest_src = bench::spawn_source({0, o.ingest_tokens, 0, 0}, alive[0]);
  bench::SourceProcess ttft_src = bench::spawn_source({0, o.ttft_tokens, o.interval_ms, o.delay_ms}, alive[0]);
  bench::SourceProcess burst_src = bench::spawn_source({0, 20, o.interval_ms, o.delay_ms}, alive[0]);
  ::close(alive[0]);

  uv_loop_t loop;
  uv_loop_init(&loop);
  SystemClock clock;
  int rc = 0;
  {
    Runner runner(&loop, clock);
    printf("soakd transport benchmark (build %s, %s, %ld CPUs; loopback sources in child processes)\n",
           SOAKD_BUILD_TYPE, curl_version(), sysconf(_SC_NPROCESSORS_ONLN));
    printf("  %-44s %-22s %-22s %-22s\n", "", "soakd", "raw_client", "aiohttp anchor");

    // (a) ingest
    int64_t parser_events = 0;
    double parser_rate = parser_events_per_cpu_s(o, &parser_events);
    printf("(a) SSE ingest, events per CPU-second (%d streams x %d events, one at a time)\n", o.ingest_requests,
           o.ingest_tokens);
    row("parser alone (64 KiB pieces, no handler)", fmt_rate(parser_rate), "", "");
    ClientStats ing = runner.run(ingest_src.port, 1, o.ingest_requests, ConnectionPolicy::Reuse);
    auto raw_ing = run_raw(o, ingest_src.port, 1, o.ingest_requests);
    auto aio_ing = run_aiohttp(o, ingest_src.port, 1, o.ingest_requests);
    row("full client from loopback source", fmt_rate(static_cast<double>(ing.events) / ing.cpu_s),
        raw_ing ? fmt_rate(raw_ing->events_per_cpu_s) : "-", aio_ing ? fmt_rate(aio_ing->events_per_cpu_s) : "-");
    printf("  %-44s %lld events, %.3f CPU-s, %.3f s wall, %d failed\n", "  soakd detail",
           static_cast<long long>(ing.events), ing.cpu_s, ing.wall_s, ing.failed);

    // (b) TTFT overhead
    printf(
        "(b) TTFT overhead = client TTFT - source prompt_ms, ms p50 / p99 / max\n"
        "    (%d concurrent streams, %d requests, token every %g ms, %d tokens, %g ms delay)\n",
        o.streams, o.ttft_requests, o.interval_ms, o.ttft_tokens, o.delay_ms);
    ClientStats tt = runner.run(ttft_src.port, o.streams, o.ttft_requests, ConnectionPolicy::Reuse);
    auto raw_tt = run_raw(o, ttft_src.port, o.streams, o.ttft_requests);
    auto aio_tt = run_aiohttp(o, ttft_src.port, o.streams, o.ttft_requests);
    Percentiles ours = percentiles(tt.overhead_ms);
    row("overhead, TTFT from start()", fmt_pct(ours), raw_tt ? fmt_pct(raw_tt->overhead) : "-",
        aio_tt ? fmt_pct(aio_tt->overhead) : "-");
    Percentiles ours_connect = percentiles(tt.overhead_from_connect_ms);
    Percentiles ours_send = percentiles(tt.overhead_from_send_ms);
    row("  TTFT from this request's socket creation", fmt_pct(ours_connect), "", "");
    row("  TTFT from this request leaving (rows)", fmt_pct(ours_send), "", "");
    if (raw_tt) {
      row("soakd p50 - raw_client p50, from start()", fmt_ms(ours.p50 - raw_tt->overhead.p50), "", "");
      row("  from socket creation", fmt_ms(ours_connect.p50 - raw_tt->overhead.p50), "", "");
      row("  from the request leaving (rows)", fmt_ms(ours_send.p50 - raw_tt->overhead.p50), "", "");
    }
    const double stream_ms = o.delay_ms + o.interval_ms * o.ttft_tokens;
    ClientStats st =
        runner.run(ttft_src.port, o.streams, o.ttft_requests, ConnectionPolicy::Reuse, stream_ms / o.streams);
    row("overhead, starts staggered (soakd only)", fmt_pct(percentiles(st.overhead_ms)), "", "");
    ClientStats one = runner.run(ttft_src.port, 1, o.single_requests, ConnectionPolicy::Reuse);
    auto raw_one = run_raw(o, ttft_src.port, 1, o.single_requests);
    auto aio_one = run_aiohttp(o, ttft_src.port, 1, o.single_requests);
    row("overhead, 1 stream at a time", fmt_pct(percentiles(one.overhead_ms)),
        raw_one ? fmt_pct(raw_one->overhead) : "-", aio_one ? fmt_pct(aio_one->overhead) : "-");
    // These two are of the 80-in-flight run above, not of the lone stream: a
    // lone request's leg is (d).
    row("  80 in flight: start() -> arrival at source", fmt_pct(percentiles(tt.request_leg_ms)), "", "");
    row("  80 in flight: source write -> event", fmt_pct(percentiles(tt.delivery_leg_ms)), "", "");
    printf("  %-44s %d completed, %d failed, %.3f CPU-s over %.3f s\n", "  soakd detail", tt.completed, tt.failed,
           tt.cpu_s, tt.wall_s);

    // (c) burst spread, from the source's arrival stamps
    printf(
        "(c) burst of %d requests released together, fresh connections: spread of arrivals at the source, ms"
        " (median of %d rounds, worst)\n",
        o.burst, o.burst_rounds);
    std::vector<double> ours_spread, connect_spread, raw_spread, aio_spread;
    for (int round = 0; round < o.burst_rounds; ++round) {
      runner.arrivals(burst_src.port);  // reset
      ClientStats b = runner.run(burst_src.port, o.burst, o.burst, ConnectionPolicy::Fresh);
      auto arr = runner.arrivals(burst_src.port);
      if (static_cast<int>(arr.size()) == o.burst) ours_spread.push_back(spread_ms(arr));
      connect_spread.push_back(spread_ms(b.connected_ns));
      if (b.failed) fprintf(stderr, "burst: %d failed (%s)\n", b.failed, b.first_failure.c_str());
      if (run_raw(o, burst_src.port, o.burst, o.burst)) {
        raw_spread.push_back(spread_ms(runner.arrivals(burst_src.port)));
      }
      if (run_aiohttp(o, burst_src.port, o.burst, o.burst))
        aio_spread.push_back(spread_ms(runner.arrivals(burst_src.port)));
    }
    auto med_max = [](const std::vector<double>& v) {
      if (v.empty()) return std::string("-");
      Percentiles p = percentiles(v);
      char b[48];
      snprintf(b, sizeof b, "%.2f (worst %.2f)", p.p50, p.max);
      return std::string(b);
    };
    row("arrival spread at the source", med_max(ours_spread), med_max(raw_spread), med_max(aio_spread));
    row("client-side connect-ready spread", med_max(connect_spread), "", "");

    // (d) a lone request: start() to its arrival at the source (the source's
    // stamp: the whole request read), beside a raw blocking socket from just
    // before socket(). One at a time, nothing else in flight.
    printf("(d) lone request, start to fully arrived at the source, ms p50 / p99 / max (%d requests)\n",
           o.single_requests * 4);
    runner.arrivals(burst_src.port);  // reset
    ClientStats lone = runner.run(burst_src.port, 1, o.single_requests * 4, ConnectionPolicy::Fresh);
    std::vector<double> raw_leg;
    runner.arrivals(burst_src.port);  // reset: soakd's arrivals came on its streams
    for (int i = 0; i < o.single_requests * 4; ++i) {
      auto t0 = raw_lone_request(burst_src.port, clock);
      auto arr = runner.arrivals(burst_src.port);
      if (t0 && arr.size() == 1) raw_leg.push_back(static_cast<double>(arr[0] - *t0) / kNsPerMs);
    }
    row("start() (soakd) / socket() (raw) -> arrival", fmt_pct(percentiles(lone.request_leg_ms)),
        fmt_pct(percentiles(raw_leg)), "");
    if (ing.failed || tt.failed) rc = 1;
  }
  uv_run(&loop, UV_RUN_DEFAULT);
  uv_loop_close(&loop);
  for (auto* s : {&ingest_src, &ttft_src, &burst_src}) bench::stop_source(*s);
  ::close(alive[1]);
  return rc;
}
