#include "daemon/daemon.h"

#include <unistd.h>

#include <algorithm>

#include <nlohmann/json.hpp>

namespace soak {

using json = nlohmann::json;

Daemon::Daemon(ConfigSnapshot cfg, DaemonOptions opts, const Deps& deps)
    : cfg_(std::move(cfg)), opts_(std::move(opts)), d_(deps) {
  d_.outbox.configure(cfg_->store_outage);
}

Daemon::~Daemon() = default;

void Daemon::write_event(EventKind kind, const std::string& detail_json) {
  Event e;
  e.wall_ms = d_.clock.wall_ms();
  e.host_id = d_.host_id;
  e.kind = kind;
  e.detail_json = detail_json;
  if (kind == EventKind::DaemonStop) e.duration_ms = e.wall_ms - started_wall_ms_;
  d_.outbox.put(std::move(e));
}

Status Daemon::start() {
  started_wall_ms_ = d_.clock.wall_ms();
  json d;
  d["pid"] = static_cast<int64_t>(::getpid());
  d["version"] = opts_.version;
  d["config"] = cfg_->source_path;
  d["candidates"] = cfg_->candidates.size();
  Event e;
  e.wall_ms = started_wall_ms_;
  e.host_id = d_.host_id;
  e.kind = EventKind::DaemonStart;
  e.detail_json = d.dump();
  const uint64_t lost_before = d_.outbox.lost();
  d_.outbox.put(std::move(e));  // a full disk or a held lock: it waits, and no work starts until it is written
  if (d_.outbox.lost() != lost_before) return make_error("cannot write to the store " + cfg_->store_path);

  auto install = [this](UvHandle<uv_signal_t>& h, int signum) {
    uv_signal_init(d_.loop, h.get());
    h.mark_initialized();
    h.get()->data = this;
    uv_signal_start(
        h.get(),
        [](uv_signal_t* s, int sig) {
          auto* self = static_cast<Daemon*>(s->data);
          if (sig == SIGHUP) {
            self->reload();
          } else if (sig == SIGUSR1) {
            for (auto& svc : self->services_) svc->control_queued();
          } else {
            self->request_stop(sig == SIGTERM ? "SIGTERM" : "SIGINT");
          }
        },
        signum);
  };
  install(sigterm_, SIGTERM);
  install(sigint_, SIGINT);
  install(sighup_, SIGHUP);
  install(sigusr1_, SIGUSR1);

  d_.log->info("soakd {} started: pid {}, {} candidate(s), store {}", opts_.version, ::getpid(),
               cfg_->candidates.size(), cfg_->store_path);
  for (auto& s : services_) s->start();
  check_settled();
  return {};
}

int Daemon::run() {
  uv_run(d_.loop, UV_RUN_DEFAULT);
  // Shutdown order: the services stopped their timers and transfers; now they
  // go (closing their handles). The loop's owner drains it afterwards.
  services_.clear();
  stop_deadline_.reset();
  return exit_code_;
}

void Daemon::reload() {
  if (stopping_) return;
  auto next = load_config(opts_.config_path);
  json d;
  d["config"] = opts_.config_path;
  if (!next) {
    d_.log->error("config reload rejected, keeping the running config:\n{}", next.message());
    d["ok"] = false;
    d["error"] = next.message();
    write_event(EventKind::ConfigReload, d.dump());
    return;
  }
  if (next->store_path != cfg_->store_path) {
    std::string msg = "the store path changed (" + cfg_->store_path + " -> " + next->store_path +
                      "); a different store needs a restart, keeping the running config";
    d_.log->error("config reload rejected: {}", msg);
    d["ok"] = false;
    d["error"] = msg;
    write_event(EventKind::ConfigReload, d.dump());
    return;
  }
  cfg_ = std::make_shared<const Config>(std::move(*next));
  d["ok"] = true;
  d["candidates"] = cfg_->candidates.size();
  write_event(EventKind::ConfigReload, d.dump());
  d_.log->info("config reloaded from {}: {} candidate(s)", opts_.config_path, cfg_->candidates.size());
  d_.outbox.configure(cfg_->store_outage);
  for (auto& s : services_) s->reload(cfg_);
}

void Daemon::check_settled() {
  if (!stopping_ && d_.outbox.overdue(d_.clock.wall_ms())) {
    // Waiting longer helps nobody; launchd starts soakd again later.
    d_.log->error("{}; stopping after {} s (store_outage.stop_after)", d_.outbox.describe(),
                  cfg_->store_outage.stop_after_ms / 1000);
    exit_code_ = kStoreUnwritableExit;
    request_stop("store not writable");
    return;
  }
  if (opts_.exit_policy != ExitPolicy::ExitWhenSettled || stopping_) return;
  for (const auto& s : services_)
    if (!s->settled()) return;
  request_stop("settled");
}

void Daemon::request_stop(const std::string& why) {
  if (stopping_) {
    d_.log->warn("{} while stopping; still waiting for in-flight work", why);
    return;
  }
  stopping_ = true;
  stop_reason_ = why;
  d_.log->info("stopping ({})", why);
  int64_t grace = opts_.stop_grace_ms;
  int64_t budget = 0;
  for (const auto& sv : services_) budget = std::max(budget, sv->stop_budget_ms());
  grace += budget;
  stop_deadline_ = std::make_unique<Timer>(d_.loop);
  stop_deadline_->start(static_cast<uint64_t>(grace), 0, [this, grace] {
    d_.log->warn("graceful stop took longer than {} ms; closing anyway", grace);
    finish();
  });
  services_pending_stop_ = services_.size();
  if (services_.empty()) {
    on_services_stopped();
    return;
  }
  // Reverse order: the last started is the first stopped.
  for (auto it = services_.rbegin(); it != services_.rend(); ++it) {
    (*it)->stop([this] {
      if (services_pending_stop_ > 0 && --services_pending_stop_ == 0) on_services_stopped();
    });
  }
}

void Daemon::on_services_stopped() { finish(); }

void Daemon::finish() {
  if (finished_) return;
  finished_ = true;
  json d;
  d["reason"] = stop_reason_;
  d["clean"] = services_pending_stop_ == 0;
  write_event(EventKind::DaemonStop, d.dump());
  if (!d_.outbox.flush()) d_.log->error("{}: these rows are lost with this stop", d_.outbox.describe());
  d_.log->info("stopped ({})", stop_reason_);
  if (stop_deadline_) stop_deadline_->stop();
  sigterm_.close();
  sigint_.close();
  sighup_.close();
  uv_stop(d_.loop);
}

}  // namespace soak
