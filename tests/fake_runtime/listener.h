// One listening socket of the fake runtime and the responder behind it. Owns the
// server handle and the registry of open connections; hosts the Responder (crash
// and stats publication go through here). Loop thread only.
#pragma once

#include <uv.h>

#include <functional>
#include <memory>
#include <unordered_map>

#include "core/clock.h"
#include "core/result.h"
#include "core/uv_util.h"
#include "tests/fake_runtime/connection.h"
#include "tests/fake_runtime/responder.h"

namespace soak::fake {

// What CrashAfterN does: kill the whole process (the standalone program, so a
// supervisor sees a dead runtime) or take only this listener down and report it
// in ListenerStats.crashed (in-process tests).
enum class CrashMode { TakeListenerDown, KillProcess };

class Listener final : public ResponderHost {
 public:
  using Publish = std::function<void(const ListenerStats&)>;

  Listener(uv_loop_t* loop, const Clock& clock, ListenerConfig config, CrashMode crash, Publish publish);
  ~Listener() override;

  // Binds and listens; port() is the bound port afterwards.
  Status listen();
  int port() const { return port_; }
  Responder& responder() { return responder_; }
  // Stops accepting, drops every job, closes every connection. Idempotent.
  void shutdown();

  void crash() override;
  void publish(const ListenerStats& stats) override { publish_(stats); }

 private:
  void on_connection();

  uv_loop_t* loop_;
  ListenerConfig cfg_;
  CrashMode crash_mode_;
  Publish publish_;
  Responder responder_;
  UvHandle<uv_tcp_t> server_;
  std::unordered_map<Connection*, std::weak_ptr<Connection>> conns_;
  int port_ = 0;
  bool down_ = false;
};

}  // namespace soak::fake
