// Schema migrations, applied in order. migrations()[i] takes a store from
// user_version i to i+1. Never edit a released migration: append a new one.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace soak {

// PRAGMA application_id of a soakd store ("soak" in ASCII). A database without
// it (and with any table in it) is not ours and is never touched.
inline constexpr int32_t kSoakdApplicationId = 0x736f616b;

// The schema that added each later table (the position of its step in
// migrations(), kept beside it): an older store opened read-only has none,
// and reading it reads as empty.
inline constexpr int kLaunchesSchema = 2;       // runtime_launches (managed runtimes)
inline constexpr int kContextReachSchema = 3;   // context_reach

const std::vector<std::string_view>& migrations();
inline int schema_version() { return static_cast<int>(migrations().size()); }

}  // namespace soak
