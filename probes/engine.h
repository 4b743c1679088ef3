// The probe engine: runs probe kinds against one candidate on the daemon's
// libuv loop and turns every request it makes into a fully filled ProbeResult
// row — outcome class (docs/DESIGN.md §2.1: HTTP 200 is not success), every client
// timing point, tokens (reasoning apart), the runtime's own figures in the
// server_* columns, and the locators (workload id, fixture hash, size,
// cache_state, sampling, thinking, client concurrency, runtime slots). Rows
// never hold a prompt or an answer: a hash of the answer always, a short
// excerpt on failure only.
//
// What each kind does (one row per request unless said otherwise):
//   health        GET the runtime's health route (llama.cpp 503 while loading -> loading)
//   identity      the model list must hold the canonical id, then a non-stream
//                 answer must name it (or echo the request, per runtime)
//   marker, stream, strict_json, tool_call, repetition
//                 one streamed chat each, judged by the stream contract, then
//                 by its content check
//   thinking      two rows, enable_thinking on and off (reasoning counted apart)
//   long_context  per configured size: a fixture sized with /tokenize where the
//                 runtime has it, sent fresh (nonce) and then as the exact
//                 repeat (only after a clean fresh); the marker the fixture asks
//                 for is noted in extra_json, not judged (a timing workload)
//   shared_prefix a cold turn, its exact repeat (warm), and kSharedPrefixTurns
//                 turns reusing the ~7 KB
//                 system prompt; reuse ratio median(prefix)/cold on the last row
//   agent         one turn of the candidate's agent session (probes/session.h):
//                 growing history, tool results fed back, thinking per session;
//                 the row carries the turn and the context band it carried
//   burst         per configured N: N requests started in one loop pass on
//                 fresh connections (rows carry client_concurrency N and one
//                 group id), then a summary row (workload "burst/N/summary")
//                 with p50/p95/max, aggregate tok/s and the FIFO check; a
//                 serialized burst makes the summary row serialized_burst while
//                 each member keeps its own outcome
//   cancel        a stream cut after a few tokens, then proof the slot was freed
//                 (/slots idle where the runtime has it, else a follow-up whose
//                 first token arrives within the bound), else stale_slot
//   scrape        /props, /slots, /metrics as the runtime has them, figures in
//                 extra_json (a route the runtime does not serve is noted, not failed)
//   embeddings, rerank  the pooling routes
//
// Limits: every request is bounded by the candidate's Limits (connect, wall,
// stall on content, response bytes); hitting one is the row's outcome. The API
// key is read from the environment variable the candidate names when a request
// is built, sent as a Bearer header, and never stored or logged.
//
// What each runtime exposes is its entry's (probes/runtimes/): the engine
// resolves a candidate's RuntimeKind in EngineOptions::runtimes (the built-in
// table by default) and hands the entry to every step.
//
// Ownership: the caller owns the loop, the HttpClient and the clock; all must
// outlive the engine. The engine copies each candidate's config into the run.
// Destroy the engine after HttpClient::shutdown() (which ends every transfer
// and so every run) and before the loop is closed.
//
// Threading: loop thread only. Callbacks: `on_row` once per finished row, as it
// finishes; `done` exactly once per run() / read_build(), never from inside
// run(), read_build(), cancel() or cancel_all().
// Failure: never throws; every fault becomes a row's outcome (or an Error for
// read_build).
#pragma once

#include <uv.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/config.h"
#include "core/result.h"
#include "core/types.h"
#include "probes/probe_types.h"
#include "probes/transport/http_client.h"

namespace soak::probes {

class ProbeEngine {
 public:
  ProbeEngine(uv_loop_t* loop, HttpClient& http, const Clock& clock, EngineOptions opts = {});
  ~ProbeEngine();
  ProbeEngine(const ProbeEngine&) = delete;
  ProbeEngine& operator=(const ProbeEngine&) = delete;

  // Starts running `spec.kinds` against `c`. Kinds the engine does not run
  // (build; scrape and health are runnable) are skipped.
  RunId run(const CandidateConfig& c, RunSpec spec, RowSink on_row, std::function<void()> done);
  // Ends the run's transfers: requests in flight become cancelled_by_daemon
  // rows, kinds not started yet are dropped; `done` still fires. Unknown ids
  // are ignored.
  void cancel(RunId id);
  void cancel_all();         // every run and build read
  size_t in_flight() const;  // runs and build reads whose `done` has not fired
  // The inference requests of the candidate named `candidate` in flight now,
  // and when any of them was last served (HttpClient::serving).
  ServingState serving(const std::string& candidate) const;

  // The candidate's build: per its BuildSpec (fixed string, a version command
  // run without a shell and bounded in time, or the runtime's HTTP source).
  void read_build(const CandidateConfig& c, std::function<void(Result<BuildIdentity>)> done);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Every kind the engine runs, in the order `soakd probe --kind all` runs them
// (what runs without --kind is the daemon's choice: daemon/probe_cli.cc).
std::vector<ProbeKind> all_probe_kinds();
bool engine_runs(ProbeKind k);

}  // namespace soak::probes
