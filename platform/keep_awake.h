// Keep-awake during canaries, gates and soaks: a sleeping Mac measures
// nothing, and a sleep in the middle of a soak becomes a gap.
//
// PowerAssertion is the platform part (keep_awake_mach.cc: an IOKit
// assertion of type PreventUserIdleSystemSleep; keep_awake_linux.cc: a logged
// no-op, Linux hosts are not the deployment target). KeepAwake is the policy:
// hold the assertion while at least one canary, gate or soak stage runs
// (smoke stages are minutes long and do not need it), release it when none
// runs, and never when the configuration turns keep-awake off.
//
// Ownership: the composition root makes one PowerAssertion and gives it to
// one KeepAwake, which owns it. Threading: the daemon's loop thread.
// Failure: acquire/release return a Status the caller logs; a failed acquire
// leaves the assertion not held and is retried on the next update().
#pragma once

#include <memory>
#include <span>
#include <string>

#include "core/log.h"
#include "core/result.h"
#include "core/types.h"

namespace soak {

class PowerAssertion {
 public:
  virtual ~PowerAssertion() = default;
  // Idempotent: acquiring while held, or releasing while not held, does nothing.
  virtual Status acquire(const std::string& reason) = 0;
  virtual Status release() = 0;
  virtual bool held() const = 0;
};

// The implementation for the platform this was built for.
std::unique_ptr<PowerAssertion> make_system_power_assertion(Logger log);

enum class KeepAwakeMode { Off, WhileStagesRun };

class KeepAwake {
 public:
  KeepAwake(std::unique_ptr<PowerAssertion> assertion, KeepAwakeMode mode);
  // Releases a held assertion.
  ~KeepAwake();

  // Call whenever the set of running stages changes (and on reload).
  Status update(std::span<const StageKind> running);
  void set_mode(KeepAwakeMode mode) { mode_ = mode; }
  bool held() const { return assertion_->held(); }

 private:
  std::unique_ptr<PowerAssertion> assertion_;
  KeepAwakeMode mode_;
};

}  // namespace soak
