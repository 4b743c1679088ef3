// What every long-lived part of soakd is and borrows. A Service is started by
// the Daemon (daemon/daemon.h) in order and stopped in reverse; Deps is the
// bundle they borrow from the composition root (daemon/wiring.h builds it
// once): the store, its outbox, the clock, the logger, the loop, this host.
//
// Ownership: Deps holds references; the composition root owns what they name
// and outlives every service. Threading: the loop thread.
#pragma once

#include <uv.h>

#include <cstdint>
#include <functional>

#include "core/clock.h"
#include "core/config.h"
#include "core/log.h"

namespace soak {

class Store;   // storage/store.h
class Outbox;  // storage/outbox.h

inline constexpr int64_t kStopGraceMs = 10'000;  // plus the services' stop budgets (managed runtimes' stop_timeout)
// launchd's ExitTimeOut in launchd/*.plist.in: it must exceed kStopGraceMs plus
// the largest stop_timeout of a managed runtime (soakd check-config warns).
inline constexpr int64_t kLaunchdExitTimeOutMs = 60'000;

struct Deps {
  Store& store;    // reads, and the rows that need their id at once (stages, verdicts, candidates)
  Outbox& outbox;  // measured rows, samples and events: kept while the store cannot write
  const Clock& clock;
  Logger log;
  uv_loop_t* loop = nullptr;  // nullptr for parts that never touch it (Campaigns under test)
  int64_t host_id = 0;        // this host's row in the store
};

// A long-lived part of the daemon (scheduler, sampler, probe runner). The
// daemon starts them in order and stops them in reverse order.
class Service {
 public:
  virtual ~Service() = default;
  virtual void start() = 0;
  // New configuration accepted on SIGHUP.
  virtual void reload(const ConfigSnapshot& cfg) = 0;
  // Begin stopping: cancel in-flight work (recorded as cancelled_by_daemon),
  // stop timers. Call `done` once nothing of this service is in flight.
  virtual void stop(std::function<void()> done) = 0;
  // For ExitWhenSettled: true once this service has nothing left to do.
  virtual bool settled() const { return true; }
  // How much longer than kStopGraceMs its stop() may take (the managed
  // runtimes it stops: SIGTERM, then SIGKILL after their stop_timeout).
  virtual int64_t stop_budget_ms() const { return 0; }
  // SIGUSR1: soakctl queued a control request; look at the store now.
  virtual void control_queued() {}
};

}  // namespace soak
