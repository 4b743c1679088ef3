// A loopback SSE source for the transport benchmark, speaking the protocol of
// the anchors' ssebench_server.py so every client can be pointed at it:
//
//   POST /v1/chat/completions  -> 200 text/event-stream, Connection: close;
//       waits `delay_ms`, writes the first content event, then one event every
//       `interval_ms` (0: the rest at once from a prebuilt buffer) up to
//       `tokens` events, then a finish chunk whose timings.prompt_ms is the
//       source's own request-to-first-content time (and, beyond the anchors'
//       protocol, the CLOCK_MONOTONIC instants arrival_mono_ns and
//       first_write_mono_ns), a usage chunk, [DONE].
//   GET /bench/arrivals        -> JSON array of the CLOCK_MONOTONIC instants (ns)
//       at which each POST had fully arrived since the previous query.
//   any other GET              -> 200 {"status":"ok"}
//
// One thread, raw sockets and poll(2), 127.0.0.1 only. Runs in a child
// process so its CPU time is not charged to the client being measured.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

namespace soak::bench {

struct SourceConfig {
  int port = 0;  // 0: ephemeral
  int tokens = 1000;
  double interval_ms = 0;
  double delay_ms = 50;
};

struct SourceProcess {
  pid_t pid = -1;
  int port = 0;
};

// One content event exactly as the source (and ssebench_server.py) writes it.
std::string content_event(int i);

// Forks a child running the source; returns once it listens. The child exits
// when `alive_fd` (the read end of a pipe whose write end only the parent
// holds) reports hang-up, or on SIGTERM.
SourceProcess spawn_source(const SourceConfig& config, int alive_fd);
void stop_source(SourceProcess& p);

// Runs the source in this process until killed (the `serve` mode).
int serve_forever(const SourceConfig& config);

}  // namespace soak::bench
