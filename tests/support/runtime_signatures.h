// The built-in runtimes' process signatures, as the composition root hands
// them to the sampler (daemon/wiring.h runtime_signatures()): what tests that
// make a Sampler, or match processes, recognise. Link soak_daemon.
#pragma once

#include <vector>

#include "daemon/wiring.h"
#include "platform/sampler.h"

namespace soak::test {

inline RuntimeSignatures builtin_signatures() {
  static const std::vector<RuntimeSignature> kSignatures = runtime_signatures();
  return kSignatures;
}

}  // namespace soak::test
