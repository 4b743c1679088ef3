// The composition root's building blocks, shared by every soakd command that
// talks to runtimes (`soakd run`, `soakd probe`): one place that makes the
// loop, registers this host, and sets up the HTTP client and the probe engine
// on the loop, and tears them down in the right order.
//
// Deps (core/service.h) is what the daemon's long-lived parts borrow: built
// once here, passed by const reference, copied where kept.
//
// Ownership: the caller owns the Store, the Logger and the Sampler and keeps
// them alive until the Wiring is closed; the Wiring owns the clock, the loop,
// the client and the engine. Threading: the loop thread (the one that builds it).
#pragma once

#include <uv.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "core/clock.h"
#include "core/log.h"
#include "core/result.h"
#include "core/service.h"
#include "platform/sampler.h"
#include "probes/engine.h"
#include "probes/probe_types.h"
#include "probes/transport/http_client.h"
#include "storage/outbox.h"
#include "storage/store.h"

namespace soak {

// The probe engine's options with soakd's process discovery: the argv of a
// runtime soakd did not launch is read from the process serving its port.
probes::EngineOptions engine_options(Sampler& sampler);

// How the processes of the runtimes in `table` look (each entry's
// ProcessNames), for make_system_sampler(): platform sits below the probes
// and knows no runtime, so the composition root hands it this. The names
// point at the entries' constant data.
std::vector<RuntimeSignature> runtime_signatures(probes::RuntimeTable table);
// The same for the built-in runtimes (probes/runtimes/catalog.h).
std::vector<RuntimeSignature> runtime_signatures();

class Wiring {
 public:
  // Registers this host in `store` as `sampler` reads it (a sampler warning
  // goes to `log`), then makes the loop, the HTTP client and the probe engine,
  // whose process discovery asks the same sampler. The error says what
  // failed ("cannot register host: ...").
  static Result<std::unique_ptr<Wiring>> build(Store& store, Logger log, Sampler& sampler);
  ~Wiring();  // close()
  Wiring(const Wiring&) = delete;
  Wiring& operator=(const Wiring&) = delete;

  const Deps& deps() const { return deps_; }
  probes::ProbeEngine& engine() { return *engine_; }

  // Ends every transfer: runs in flight finish (their rows cancelled_by_daemon)
  // before this returns. Call once the loop has stopped, while whoever waits
  // for those runs still exists.
  void end_transfers();
  // Ends the transfers, destroys the engine and the client, runs the loop until
  // their handles are closed, and closes the loop (a handle left open is
  // logged). Idempotent.
  void close();

 private:
  Wiring(Store& store, Logger log, Sampler& sampler, int64_t host_id);

  SystemClock clock_;
  uv_loop_t loop_{};
  Outbox outbox_;
  Deps deps_;
  std::unique_ptr<HttpClient> http_;
  std::unique_ptr<probes::ProbeEngine> engine_;
  bool closed_ = false;
};

}  // namespace soak
