// Linux: no power assertion. Servers do not idle-sleep by default and Linux is
// not the deployment target; the state is tracked so the policy above behaves
// the same, and each change is logged so the log shows it was asked for.
#include "platform/keep_awake.h"

namespace soak {
namespace {

class LoggedPowerAssertion final : public PowerAssertion {
 public:
  explicit LoggedPowerAssertion(Logger log) : log_(std::move(log)) {}

  Status acquire(const std::string& reason) override {
    if (held_) return Status::Ok();
    held_ = true;
    if (log_) log_->info("keep-awake requested ({}); no power assertion on Linux", reason);
    return Status::Ok();
  }
  Status release() override {
    if (!held_) return Status::Ok();
    held_ = false;
    if (log_) log_->info("keep-awake released");
    return Status::Ok();
  }
  bool held() const override { return held_; }

 private:
  Logger log_;
  bool held_ = false;
};

}  // namespace

std::unique_ptr<PowerAssertion> make_system_power_assertion(Logger log) {
  return std::make_unique<LoggedPowerAssertion>(std::move(log));
}

}  // namespace soak
