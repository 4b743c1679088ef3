#include "campaigns/service.h"

#include <time.h>

#include <algorithm>

namespace soak {

int local_utc_offset_minutes(int64_t wall_ms) {
  time_t t = static_cast<time_t>(wall_ms / 1000);
  tm local{};
  if (!localtime_r(&t, &local)) return 0;
  return static_cast<int>(local.tm_gmtoff / 60);
}

CampaignService::CampaignService(ConfigSnapshot cfg, const Deps& deps, TaskRunner& runner,
                                 std::function<void()> maybe_settled, RuntimeControl* runtimes)
    : clock_(deps.clock),
      runner_(runner),
      log_(deps.log),
      campaigns_(std::move(cfg), deps, runner, local_utc_offset_minutes),
      timer_(deps.loop),
      maybe_settled_(std::move(maybe_settled)) {
  campaigns_.set_on_change([this] { on_change(); });
  campaigns_.set_runtime_control(runtimes);
}

void CampaignService::start() {
  if (auto st = campaigns_.resume(clock_.wall_ms()); !st) log_->error("cannot resume campaigns: {}", st.message());
  arm(0);
}

void CampaignService::arm(int64_t delay_ms) {
  timer_.start(static_cast<uint64_t>(std::max<int64_t>(0, delay_ms)), 0, [this] { on_timer(); });
}

void CampaignService::on_timer() {
  const int64_t now = clock_.wall_ms();
  campaigns_.tick(now);
  if (stopping_) {
    on_change();
    return;
  }
  int64_t delay = kControlPollEveryMs;
  if (auto w = campaigns_.next_wake_ms(now)) delay = std::min(delay, *w - now);
  arm(delay);
  if (maybe_settled_) maybe_settled_();
}

void CampaignService::on_change() {
  if (stopping_) {
    if (runner_.in_flight() == 0 && stop_done_) {
      auto done = std::move(stop_done_);
      stop_done_ = nullptr;
      timer_.stop();
      done();
    }
    return;
  }
  arm(0);  // a completion may make the next step due now
}

void CampaignService::control_queued() {
  if (stopping_) return;
  campaigns_.poll_controls_now();
  arm(0);
}

void CampaignService::reload(const ConfigSnapshot& cfg) {
  campaigns_.reload(cfg, clock_.wall_ms());
  arm(0);
}

void CampaignService::stop(std::function<void()> done) {
  stopping_ = true;
  stop_done_ = std::move(done);
  campaigns_.freeze();
  runner_.cancel_all();
  on_change();
}

}  // namespace soak
