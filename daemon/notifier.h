// Verdict notifications (docs/DESIGN.md §4.11): with a `notify` block, every
// verdict other than `running` (Campaigns::set_on_verdict) runs its command —
// argv without a shell, on the loop through uv_spawn (probes/command.h), the
// verdict as JSON on stdin, SOAKD_CANDIDATE / SOAKD_VERDICT / SOAKD_STAGE /
// SOAKD_REASON / SOAKD_REPORT in its environment — killed past notify.timeout.
// Its output goes to the log; its outcome is a `notify` event on the
// candidate (soakctl status shows the latest). The verdict itself is in the
// store before the command starts, so a command that fails or hangs loses
// nothing; nothing retries it.
//
// SOAKD_REPORT names `<log dir>/verdicts/<candidate>.json`, the same JSON as
// stdin, rewritten for each verdict: a file the command may attach or upload.
//
// Threading: the loop thread. Ownership: borrows what Deps names; owns each
// running command until it ended. Stopping waits for the commands that run
// (each ends within its bound); a verdict that comes while stopping is not
// notified (logged).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "campaigns/campaigns.h"
#include "core/service.h"
#include "probes/command.h"
#include "probes/engine_exchange.h"

namespace soak {

// Pure parts (tested in tests/integration/notify_command_test.cc).
// The verdict as the command reads it on stdin.
std::string notice_json(const VerdictNotice& n, const std::string& report_path);
// `base` ("NAME=value" each, soakd's own environment) with the SOAKD_*
// variables set (replacing any of the same name).
std::vector<std::string> notice_env(const std::vector<std::string>& base, const VerdictNotice& n,
                                    const std::string& report_path);
// Where SOAKD_REPORT points for a candidate: beside the log file.
std::string notice_report_path(const std::string& log_path, const std::string& candidate);
// The outcome as the `notify` event's detail holds it: {"verdict", "stage",
// "outcome": "ok" | "failed" | "timed_out" | "not_started" | "cancelled", "detail"}.
std::string notify_outcome_json(const VerdictNotice& n, const probes::CommandEnd& end, const std::string& detail);

class NotifyService final : public Service {
 public:
  // `maybe_settled` is called when a command ends (--exit-when-settled waits for it).
  NotifyService(ConfigSnapshot cfg, const Deps& deps, std::function<void()> maybe_settled);
  ~NotifyService() override;

  // Runs the notify command for `n` (nothing without a notify block).
  void notify(const VerdictNotice& n);

  void start() override {}
  void reload(const ConfigSnapshot& cfg) override { cfg_ = cfg; }
  void stop(std::function<void()> done) override;
  bool settled() const override { return runs_.empty(); }
  int64_t stop_budget_ms() const override { return cfg_->notify.command.empty() ? 0 : cfg_->notify.timeout_ms; }

 private:
  struct Run {
    VerdictNotice notice;
    int64_t started_mono_ns = 0;
    std::string program;  // the command's argv[0] as it was started (a reload may change the config)
    int64_t timeout_ms = 0;
    std::unique_ptr<probes::CommandRun> command;
  };
  void ended(int64_t id, probes::CommandEnd end);

  ConfigSnapshot cfg_;
  Deps d_;
  std::function<void()> maybe_settled_;
  probes::Deferrer defer_;
  std::map<int64_t, std::unique_ptr<Run>> runs_;
  int64_t next_id_ = 1;
  bool stopping_ = false;
  std::function<void()> stop_done_;
};

}  // namespace soak
