// The daemon: owns the libuv loop's top-level handles (signals, timers) and the
// long-lived services, and sequences start, reload and graceful stop.
//
// Threading: everything runs on the loop thread that calls run().
// Ownership: the composition root (soakd_cli.cc) owns Store, Clock, Logger and
// the loop (daemon/wiring.h); Daemon borrows them through Deps for its
// lifetime, owns the services, and holds the running ConfigSnapshot: a SIGHUP
// reload swaps it and hands the new one to every service.
// Failure: start() returns an error if the store cannot be written; run()
// returns the process exit code.
#pragma once

#include <uv.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/config.h"
#include "core/log.h"
#include "core/service.h"
#include "core/uv_util.h"
#include "daemon/wiring.h"
#include "storage/store.h"

namespace soak {

// Exit status when the store stayed unwritable past store_outage.stop_after.
inline constexpr int kStoreUnwritableExit = 75;  // EX_TEMPFAIL: try again later

enum class ExitPolicy { RunForever, ExitWhenSettled };

struct DaemonOptions {
  std::string config_path;  // re-read on SIGHUP
  ExitPolicy exit_policy = ExitPolicy::RunForever;
  int64_t stop_grace_ms = kStopGraceMs;
  std::string version;
};

class Daemon {
 public:
  Daemon(ConfigSnapshot cfg, DaemonOptions opts, const Deps& deps);
  ~Daemon();

  void add_service(std::unique_ptr<Service> s) { services_.push_back(std::move(s)); }
  const ConfigSnapshot& config() const { return cfg_; }

  // Writes daemon_start, installs signal handlers, starts services.
  Status start();
  // Runs the loop until stopped, then destroys the services (closing their
  // handles); returns the exit code (0 on a clean stop). The owner of the loop
  // then destroys what else it made on it and drains the loop before closing it.
  int run();

  void request_stop(const std::string& why);
  // Re-reads the config file; a bad new config keeps the old one (and says why).
  void reload();
  // For ExitWhenSettled: services call this when they may have settled.
  void check_settled();

 private:
  void write_event(EventKind kind, const std::string& detail_json);
  void on_services_stopped();
  void finish();

  ConfigSnapshot cfg_;
  DaemonOptions opts_;
  Deps d_;
  int64_t started_wall_ms_ = 0;

  std::vector<std::unique_ptr<Service>> services_;
  UvHandle<uv_signal_t> sigterm_, sigint_, sighup_, sigusr1_;
  std::unique_ptr<Timer> stop_deadline_;
  bool stopping_ = false;
  bool finished_ = false;
  std::string stop_reason_;
  size_t services_pending_stop_ = 0;
  int exit_code_ = 0;
};

}  // namespace soak
