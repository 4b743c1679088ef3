#include "platform/keep_awake.h"

namespace soak {

KeepAwake::KeepAwake(std::unique_ptr<PowerAssertion> assertion, KeepAwakeMode mode)
    : assertion_(std::move(assertion)), mode_(mode) {}

KeepAwake::~KeepAwake() {
  if (assertion_ && assertion_->held()) (void)assertion_->release();
}

Status KeepAwake::update(std::span<const StageKind> running) {
  int long_stages = 0;
  for (StageKind k : running) {
    if (k != StageKind::Smoke) ++long_stages;
  }
  bool want = mode_ == KeepAwakeMode::WhileStagesRun && long_stages > 0;
  if (want && !assertion_->held()) {
    return assertion_->acquire("soakd: " + std::to_string(long_stages) + " canary/gate/soak stage(s) running");
  }
  if (!want && assertion_->held()) return assertion_->release();
  return Status::Ok();
}

}  // namespace soak
