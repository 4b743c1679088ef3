// Small non-cryptographic hashes for identifying fixtures, bodies and configs.
// Not for security: collisions only cost a confusing label, never a wrong verdict.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace soak {

inline uint64_t fnv1a64(std::string_view s, uint64_t h = 0xcbf29ce484222325ULL) {
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

std::string hex64(uint64_t v);
inline std::string hash_hex(std::string_view s) { return hex64(fnv1a64(s)); }

}  // namespace soak
