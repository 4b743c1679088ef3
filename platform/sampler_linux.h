// The Linux sampler, for tests that point it at another /proc tree (an empty
// directory, a copied tree). Production code uses make_system_sampler().
#pragma once

#include <memory>
#include <string>

#include "platform/sampler.h"

namespace soak {

struct LinuxRoots {
  std::string proc = "/proc";
  std::string sys = "/sys";
  std::string etc = "/etc";
};

// `runtimes`: what its process discovery recognises (platform/sampler.h).
std::unique_ptr<Sampler> make_linux_sampler(LinuxRoots roots, RuntimeSignatures runtimes);

}  // namespace soak
