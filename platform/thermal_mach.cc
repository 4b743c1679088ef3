// macOS's thermal pressure through the public notify API (platform/thermal.h):
// one registration, then a state read per sample — no polling thread, no
// private SPI, no IOKit.
//
// The three declarations below are copied from the macOS SDK's <notify.h>
// instead of including it: that header is not in the SDK the Linux-hosted
// macOS compile check uses (scripts/macos-compile-check.sh), and declaring
// them here lets that check compile this file too. They are plain C functions
// of libSystem (libsystem_notify), linked by default. The state's values are
// libkern/OSThermalNotification.h's (kOSThermalPressureLevelNominal = 0 ...
// kOSThermalPressureLevelSleeping = 4).
#include <cstdint>

#include "platform/thermal.h"

extern "C" {
// <notify.h>: #define NOTIFY_STATUS_OK 0
uint32_t notify_register_check(const char* name, int* out_token);
uint32_t notify_get_state(int token, uint64_t* state64);
uint32_t notify_cancel(int token);
}

namespace soak {

namespace {

constexpr uint32_t kNotifyStatusOk = 0;

class NotifySource final : public ThermalSource {
 public:
  NotifySource() { registered_ = notify_register_check(kThermalNotifyName, &token_); }
  ~NotifySource() override {
    if (registered_ == kNotifyStatusOk) notify_cancel(token_);
  }
  Result<std::optional<ThermalLevel>> read() override {
    if (registered_ != kNotifyStatusOk)
      return make_error("thermal: notify_register_check(" + std::string(kThermalNotifyName) + ") failed with status " +
                        std::to_string(registered_));
    uint64_t state = 0;
    if (const uint32_t st = notify_get_state(token_, &state); st != kNotifyStatusOk)
      return make_error("thermal: notify_get_state failed with status " + std::to_string(st));
    if (auto l = thermal_from_notify_state(state)) return std::optional<ThermalLevel>(*l);
    return make_error("thermal: unknown thermal pressure level " + std::to_string(state));
  }

 private:
  int token_ = 0;
  uint32_t registered_ = kNotifyStatusOk;
};

}  // namespace

std::unique_ptr<ThermalSource> make_thermal_source(const std::string&) { return std::make_unique<NotifySource>(); }

}  // namespace soak
