// This host's locator, as every soakd command registers it: from the platform
// sampler (hardware model, memory, OS version), or from uname when the sampler
// cannot say (with the reason in `warning`). One function, so `soakd run` and
// `soakd probe` rows land on the same host row.
#pragma once

#include <string>

#include "core/types.h"
#include "platform/sampler.h"

namespace soak {

struct ThisHost {
  HostInfo info;
  std::string warning;  // empty when the sampler answered
};

// Asks `sampler` (the one the composition root made).
ThisHost this_host(Sampler& sampler);

}  // namespace soak
