// The behaviour of one fake listener: routes, slots, the request queue, the
// prefix cache, token pacing, counters and the injected fault. It answers
// through Connection and never touches sockets itself.
//
// Threading: everything on the owning loop's thread. Time: read through the
// Clock it is given; pacing uses uv timers (never a blocking sleep).
// Failure: malformed requests get the flavour's error answer; nothing throws
// out of a libuv callback (JSON parse failures are caught where they happen).
#pragma once

#include <uv.h>

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/clock.h"
#include "tests/fake_runtime/connection.h"
#include "tests/fake_runtime/drift.h"
#include "tests/fake_runtime/scenario.h"
#include "tests/fake_runtime/shapes.h"

namespace soak::fake {

// What the responder needs from whoever hosts it.
class ResponderHost {
 public:
  virtual ~ResponderHost() = default;
  // CrashAfterN fired: the host kills the process or takes the listener down.
  virtual void crash() = 0;
  // Counters changed; called on the loop thread after every event.
  virtual void publish(const ListenerStats& stats) = 0;
};

class Alarm;
struct Job;
struct Slot;

class Responder {
 public:
  Responder(uv_loop_t* loop, const Clock& clock, ListenerConfig config, ResponderHost& host);
  ~Responder();
  Responder(const Responder&) = delete;
  Responder& operator=(const Responder&) = delete;

  void set_port(int port);
  void handle(HttpRequest req, std::shared_ptr<Connection> conn);
  // Runtime control (also reachable as POST /fake/control).
  void set_build(const std::string& build);
  void set_scenario(Scenario s);
  void start_loading(int loading_ms);
  // The keys of POST /fake/control other than scenario: build, digest,
  // draining, ctx_per_slot, loading_ms.
  void control(const nlohmann::json& body);
  // Drops every job and timer without answering; the host closes connections.
  void shutdown();
  const ListenerStats& stats() const { return stats_; }

 private:
  // routing
  void handle_llama(const HttpRequest& req, const std::shared_ptr<Connection>& c, Persist p);
  void handle_mlx(const HttpRequest& req, const std::shared_ptr<Connection>& c, Persist p);
  void handle_omlx(const HttpRequest& req, const std::shared_ptr<Connection>& c, Persist p);
  void handle_ollama(const HttpRequest& req, const std::shared_ptr<Connection>& c, Persist p);
  // flavour_served.cc
  void handle_vllm(const HttpRequest& req, const std::shared_ptr<Connection>& c, Persist p);
  void handle_rapid(const HttpRequest& req, const std::shared_ptr<Connection>& c, Persist p);
  void handle_lmstudio(const HttpRequest& req, const std::shared_ptr<Connection>& c, Persist p);
  void handle_fake(const HttpRequest& req, const std::shared_ptr<Connection>& c, Persist p);
  void not_found(const std::shared_ptr<Connection>& c, Persist p);
  void reply_json(const std::shared_ptr<Connection>& c, int status, const ojson& body, Persist p);
  void reply_error(const std::shared_ptr<Connection>& c, int status, const std::string& message,
                   const std::string& type, Persist p, const ojson& extra = ojson::object());

  // inference
  bool admit(const std::shared_ptr<Connection>& c, Persist p);  // false: already answered
  void chat(const HttpRequest& req, const std::shared_ptr<Connection>& c, Persist p);
  void embeddings(const HttpRequest& req, const std::shared_ptr<Connection>& c, Persist p);
  void rerank(const HttpRequest& req, const std::shared_ptr<Connection>& c, Persist p);
  void tokenize_route(const HttpRequest& req, const std::shared_ptr<Connection>& c, Persist p);
  // The list answer embeddings and rerank share: model, object, usage, then `key`.
  void pooling_reply(const nlohmann::json& request, size_t tokens, const char* key, ojson items,
                     const std::shared_ptr<Connection>& c, Persist p);

  // job lifecycle
  void schedule();
  void begin(Job& job, int slot);
  void prefill_tick(uint64_t id);
  void prefill_done(Job& job);
  void emit_next(uint64_t id);
  void finish(Job& job);
  void hold(Job& job);
  void keepalive_tick(uint64_t id);
  void on_gone(uint64_t id);
  void release_slot(int slot, bool stuck);
  void retire(uint64_t id);
  Job* find(uint64_t id);
  // Another client's load (Knobs::background_load): its requests kept queued
  // or in a slot, each again at the back of the queue once it is done.
  void top_up_background();
  void background_done(uint64_t id);
  // StopServing: what is in a slot freezes, every free slot takes a task that
  // never ends, and nothing leaves the queue again.
  void stop_serving();

  // output helpers
  void send_head(Job& job);
  void send_event(Job& job, const ojson& event);
  void send_raw_event(Job& job, const std::string& text);
  void arm_keepalive(Job& job);

  // state helpers
  bool loading() const;
  int64_t loading_left_ms() const;
  std::string response_model(const nlohmann::json& request) const;
  ServerView server_view() const;
  std::vector<SlotView> slot_views() const;
  int token_interval_ms() const;
  void update_load_stats();
  void publish();

  uv_loop_t* loop_;
  const Clock& clock_;
  ListenerConfig cfg_;
  ResponderHost& host_;
  std::vector<std::unique_ptr<Slot>> slots_;
  std::map<uint64_t, std::unique_ptr<Job>> jobs_;
  std::deque<uint64_t> queue_;
  std::vector<std::unique_ptr<Job>> graveyard_;  // freed by reaper_, never inside a job's own callback
  std::unique_ptr<Alarm> reaper_;
  std::vector<std::unique_ptr<char[]>> leaked_;
  drift::PromptCache prompt_cache_;
  drift::FirstTokenDelay first_token_delay_;
  ListenerStats stats_;
  MetricsView metrics_;
  uint64_t next_job_id_ = 1;
  uint64_t next_task_id_ = 0;
  uint64_t inference_seq_ = 0;
  int64_t started_mono_ns_ = 0;
  int64_t loading_until_ns_ = 0;
  int64_t started_unix_ = 0;
  bool draining_ = false;  // Rapid-MLX: SIGTERM seen, in-flight work finishing
  // oMLX engine pool: what /api/status lists as loaded (the model, once a
  // request loaded it; POST /fake/control {"loaded_models": [...]} overrides).
  std::vector<std::string> omlx_loaded_;
};

}  // namespace soak::fake
