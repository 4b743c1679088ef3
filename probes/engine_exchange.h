// One request of a probe, from the HttpRequest it becomes to the
// ExchangeResult the probe judges: limits from the candidate's config (and a
// prefill allowance sized from the prompt), the Bearer header from the
// environment, SSE events and comments fed to the chat accumulator
// (keep-alives never reset the stall clock and never count as a token; prefill
// progress reports count as progress before the first token), the answer
// hashed as it arrives (bodies are not kept for streams).
//
// Also the engine's small shared plumbing: Deferrer (run a function on the
// next loop pass: how every `done` avoids firing inside the call that caused
// it) and EngineIo (what all exchanges of one engine share).
//
// Ownership: the engine owns EngineIo; a probe step owns its exchanges and
// must keep each one until its `done` has fired. Threading: loop thread only.
// Failure: nothing throws; a request that could not even be built (API key
// variable unset) ends with TransportEnd::LocalError on the next loop pass.
#pragma once

#include <uv.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/config.h"
#include "core/uv_util.h"
#include "probes/openai_chat.h"
#include "probes/probe_types.h"
#include "probes/prompts.h"
#include "probes/transport/http_client.h"
#include "probes/transport/sse_client.h"

namespace soak::probes {

// Runs queued functions on the next loop pass, in order. A function posted
// while the queue drains runs on the pass after.
class Deferrer {
 public:
  explicit Deferrer(uv_loop_t* loop);
  void post(std::function<void()> fn);
  void clear() { queue_.clear(); }

 private:
  static void on_timer(uv_timer_t* t);
  UvHandle<uv_timer_t> timer_;
  std::vector<std::function<void()>> queue_;
  bool armed_ = false;
};

class RuntimeQueueReader;  // probes/queue_reader.h

struct EngineIo {
  EngineIo(uv_loop_t* loop, HttpClient& http, const Clock& clock, const EngineOptions& opts);
  ~EngineIo();
  EngineIo(const EngineIo&) = delete;
  EngineIo& operator=(const EngineIo&) = delete;
  uv_loop_t* loop;
  HttpClient& http;
  SseClient sse;
  const Clock& clock;
  Deferrer defer;
  EnvReader env;
  NonceSource nonces;
  // Chat requests in flight per base URL (a slot each on the runtime): the
  // cancel probe must not blame its own cut for a slot another probe holds.
  std::map<std::string, int> live_chat;
  // The runtime's own queue, read for the client while a chat request is held
  // in it (probes/queue_reader.h): one reader per origin, made by the first
  // chat request to a runtime whose entry has a queue route.
  std::map<std::string, std::unique_ptr<RuntimeQueueReader>> queue_readers;
  void watch_queue(const CandidateConfig& cand, const Runtime& rt);
};

enum class ExchangeKind {
  ChatStream,    // SSE, fed to ChatStreamAccumulator
  ChatBuffered,  // one JSON chat completion body
  Plain,         // any other route; the body is kept for the caller to read
};

struct ExchangeSpec {
  ExchangeKind kind = ExchangeKind::Plain;
  std::string method = "GET";
  std::string path;  // appended to the candidate's base URL
  std::string body;
  ConnectionPolicy connection = ConnectionPolicy::Reuse;
  std::optional<int64_t> stall_timeout_ms;  // instead of the candidate's
  std::optional<int64_t> wall_timeout_ms;   // instead of the candidate's
  // The runtime's parallel slots as known (config, else /props): a chat
  // request behind soakd's own requests that fill them waits in its queue
  // (HttpRequest::runtime_slots).
  std::optional<int> runtime_slots;
  // The prompt's size in tokens, when the probe knows it: the stall clock
  // allows it prompt_tokens / limits.prefill_floor_tps of prefill (core/limits.h).
  std::optional<int64_t> prompt_tokens;
  // Prompts the runtime reads before this one's first token, its own
  // included (a capacity member behind others in its slots): the allowance
  // from the start is that many prompts', and one prompt's after a queue move.
  int64_t prefill_rounds = 1;
  int cut_after_tokens = 0;  // ChatStream: cut the stream after this many output events
};

struct ExchangeResult {
  TransferResult transfer;  // body: Plain / ChatBuffered / a non-stream answer to a stream request
  TransportEnd end = TransportEnd::LocalError;
  bool cut = false;  // the probe cut the stream itself (cut_after_tokens reached)
  int64_t started_wall_ms = 0;
  ChatResult chat;        // chat kinds
  std::string body_hash;  // hash of the body, or of the SSE data fields in order
};

class Exchange final : public SseHandler, public TransferHandler {
 public:
  using Done = std::function<void(const ExchangeResult&)>;
  Exchange(EngineIo& io, const CandidateConfig& cand, ExchangeSpec spec, Done done);
  ~Exchange() override;
  Exchange(const Exchange&) = delete;
  Exchange& operator=(const Exchange&) = delete;

  void start();
  // soakd's own cancel: ends as TransportEnd::CancelledByDaemon.
  void cancel();
  bool live() const { return state_ == State::Live; }

 private:
  enum class State { Idle, Live, Done };
  EventClass on_event(TransferId id, const SseEvent& event, int64_t mono_ns) override;
  EventClass on_comment(TransferId id, std::string_view text, int64_t mono_ns) override;
  void on_done(TransferId id, const SseResult& result) override;
  void on_done(TransferId id, const TransferResult& result) override;
  void fail_before_sending(std::string why);
  void finish();

  EngineIo& io_;
  std::string base_url_;
  std::string owner_;  // the candidate's name (HttpRequest::owner)
  Limits limits_;
  std::optional<std::string> api_key_env_;
  ExchangeSpec spec_;
  Done done_;
  State state_ = State::Idle;
  TransferId id_ = kNoTransfer;
  bool counted_ = false;
  ChatStreamAccumulator acc_;
  uint64_t hash_state_;
  ExchangeResult result_;
};

// The HttpRequest an exchange sends (public for the tests of what goes on the wire).
HttpRequest build_http_request(const std::string& base_url, const Limits& limits, const ExchangeSpec& spec,
                               const std::optional<std::string>& api_key);

}  // namespace soak::probes
