// macOS: an IOKit power assertion that prevents idle system sleep while held.
//
// The five declarations below are copied from Apple's SDK instead of
// including <IOKit/pwr_mgt/IOPMLib.h> and <CoreFoundation/CoreFoundation.h>:
// those framework headers are not available to the Linux-hosted macOS compile
// check (scripts/macos-compile-check.sh), and declaring them here lets that
// check compile this file too. They are plain C functions with pointer and
// 32-bit integer arguments, linked from IOKit.framework and
// CoreFoundation.framework (platform/CMakeLists.txt); each line cites
// the header it matches.
#include "platform/keep_awake.h"

#include <cstdint>

extern "C" {
// <CoreFoundation/CFBase.h>
typedef const void* CFTypeRef;
typedef const struct __CFAllocator* CFAllocatorRef;
typedef const struct __CFString* CFStringRef;
void CFRelease(CFTypeRef cf);
// <CoreFoundation/CFString.h>: typedef UInt32 CFStringEncoding; kCFStringEncodingUTF8 = 0x08000100
typedef uint32_t CFStringEncoding;
CFStringRef CFStringCreateWithCString(CFAllocatorRef alloc, const char* cStr, CFStringEncoding encoding);
// <IOKit/IOReturn.h>: typedef kern_return_t IOReturn; kIOReturnSuccess = KERN_SUCCESS = 0
typedef int IOReturn;
// <IOKit/pwr_mgt/IOPMLib.h>: typedef uint32_t IOPMAssertionID, IOPMAssertionLevel; kIOPMAssertionLevelOn = 255
typedef uint32_t IOPMAssertionID;
typedef uint32_t IOPMAssertionLevel;
IOReturn IOPMAssertionCreateWithName(CFStringRef AssertionType, IOPMAssertionLevel AssertionLevel,
                                     CFStringRef AssertionName, IOPMAssertionID* AssertionID);
IOReturn IOPMAssertionRelease(IOPMAssertionID AssertionID);
}

namespace soak {
namespace {

constexpr CFStringEncoding kUtf8 = 0x08000100;
constexpr IOReturn kSuccess = 0;
constexpr IOPMAssertionLevel kLevelOn = 255;
// kIOPMAssertionTypePreventUserIdleSystemSleep is CFSTR("PreventUserIdleSystemSleep").
constexpr const char* kPreventIdleSystemSleep = "PreventUserIdleSystemSleep";

class IokitPowerAssertion final : public PowerAssertion {
 public:
  explicit IokitPowerAssertion(Logger log) : log_(std::move(log)) {}
  ~IokitPowerAssertion() override { (void)release(); }

  Status acquire(const std::string& reason) override {
    if (held_) return Status::Ok();
    CFStringRef type = CFStringCreateWithCString(nullptr, kPreventIdleSystemSleep, kUtf8);
    CFStringRef name = CFStringCreateWithCString(nullptr, reason.c_str(), kUtf8);
    IOReturn rc = -1;
    if (type && name) rc = IOPMAssertionCreateWithName(type, kLevelOn, name, &id_);
    if (type) CFRelease(type);
    if (name) CFRelease(name);
    if (rc != kSuccess) {
      return make_error("IOPMAssertionCreateWithName failed (IOReturn " + std::to_string(rc) + ")");
    }
    held_ = true;
    if (log_) log_->info("keep-awake: holding a PreventUserIdleSystemSleep assertion ({})", reason);
    return Status::Ok();
  }

  Status release() override {
    if (!held_) return Status::Ok();
    IOReturn rc = IOPMAssertionRelease(id_);
    // The assertion is gone or unusable either way; never retry a release.
    held_ = false;
    if (rc != kSuccess) return make_error("IOPMAssertionRelease failed (IOReturn " + std::to_string(rc) + ")");
    if (log_) log_->info("keep-awake: assertion released");
    return Status::Ok();
  }

  bool held() const override { return held_; }

 private:
  Logger log_;
  IOPMAssertionID id_ = 0;
  bool held_ = false;
};

}  // namespace

std::unique_ptr<PowerAssertion> make_system_power_assertion(Logger log) {
  return std::make_unique<IokitPowerAssertion>(std::move(log));
}

}  // namespace soak
