// The fake runtime: a scriptable OpenAI-compatible HTTP/1.1 server imitating
// llama.cpp's llama-server (default), mlx_lm.server, oMLX or Ollama, with one
// injected fault per listener (see scenario.h). Tests use it in-process:
//
//   FakeRuntime rt({ListenerConfig::make(Scenario::NoDone)});
//   REQUIRE(rt.start().ok());
//   ... talk to rt.base_url() ...
//   rt.wait_for(0, [](const ListenerStats& s) { return s.cancels_seen > 0; }, 2s);
//
// Threading: start() spawns one thread running one libuv loop for every
// listener; stop() (or the destructor) shuts it down and joins. Public methods
// are for other threads (never call them from inside the fake's own loop).
// Failure: start() reports bind errors; afterwards faults are the scenario's.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/result.h"
#include "tests/fake_runtime/listener.h"
#include "tests/fake_runtime/scenario.h"

namespace soak::fake {

class FakeRuntime {
 public:
  explicit FakeRuntime(std::vector<ListenerConfig> listeners, CrashMode crash = CrashMode::TakeListenerDown);
  ~FakeRuntime();
  FakeRuntime(const FakeRuntime&) = delete;
  FakeRuntime& operator=(const FakeRuntime&) = delete;

  // Binds every listener; returns once all are listening (or one failed).
  Status start();
  // Closes everything and joins the loop thread. Idempotent.
  void stop();

  size_t size() const;
  int port(size_t listener = 0) const;
  std::string base_url(size_t listener = 0) const;  // "http://127.0.0.1:PORT"
  // Counters as of every event the loop has finished (a response the caller has
  // read is counted); the last published values once stopped.
  ListenerStats stats(size_t listener = 0) const;
  // Waits until `pred(stats)` holds, or `timeout` passes; returns whether it held.
  bool wait_for(size_t listener, const std::function<bool(const ListenerStats&)>& pred,
                std::chrono::milliseconds timeout) const;

  // Runtime control, applied on the loop thread (asynchronously).
  void set_build(size_t listener, const std::string& build);
  void set_scenario(size_t listener, Scenario scenario);
  // The body POST /fake/control takes ({"digest": ..., "draining": true, ...}),
  // applied on the loop thread; returns once applied.
  void control(size_t listener, const std::string& json_body);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace soak::fake
