// Runs Campaigns on the daemon's loop: one timer, re-armed for the next thing
// due (and at least every kControlPollEveryMs for soakctl requests); task
// completions re-arm it at once. Stopping freezes dispatch, cancels what is in
// flight (recorded as cancelled_by_daemon by the runner) and reports done
// once nothing is left.
//
// Threading: the loop thread. Ownership: owns Campaigns; borrows the runner
// and what Deps names.
#pragma once

#include <uv.h>

#include <functional>
#include <memory>

#include "campaigns/campaigns.h"
#include "core/clock.h"
#include "core/service.h"
#include "core/uv_util.h"
#include "storage/outbox.h"
#include "storage/store.h"

namespace soak {

class CampaignService final : public Service {
 public:
  // `runtimes` (may be null: no managed candidate is acted on) starts and stops managed runtimes.
  CampaignService(ConfigSnapshot cfg, const Deps& deps, TaskRunner& runner, std::function<void()> maybe_settled,
                  RuntimeControl* runtimes = nullptr);

  void start() override;
  void reload(const ConfigSnapshot& cfg) override;
  void stop(std::function<void()> done) override;
  bool settled() const override { return campaigns_.settled(); }
  void control_queued() override;
  const Campaigns& campaigns() const { return campaigns_; }
  void set_on_verdict(std::function<void(const VerdictNotice&)> f) { campaigns_.set_on_verdict(std::move(f)); }

 private:
  void arm(int64_t delay_ms);
  void on_timer();
  void on_change();

  const Clock& clock_;
  TaskRunner& runner_;
  Logger log_;
  Campaigns campaigns_;
  Timer timer_;
  std::function<void()> maybe_settled_;
  std::function<void()> stop_done_;
  bool stopping_ = false;
};

// The local UTC offset in minutes at a wall time (for the nightly window).
int local_utc_offset_minutes(int64_t wall_ms);

}  // namespace soak
