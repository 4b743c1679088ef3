// Durations in the config: strings with units ("90s", "15m", "2h", "7d",
// "250ms", "1h30m"), held as milliseconds. Pure.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/result.h"

namespace soak {

inline constexpr int64_t kSecond = 1'000;
inline constexpr int64_t kMinute = 60 * kSecond;
inline constexpr int64_t kHour = 60 * kMinute;
inline constexpr int64_t kDay = 24 * kHour;

// "90s", "15m", "2h", "7d", "250ms", "1h30m" -> milliseconds. A bare number is
// an error: a unit-less 90 could mean seconds or minutes.
Result<int64_t> parse_duration(std::string_view s);
// The inverse, largest units first: 5'400'000 -> "1h30m", 0 -> "0s".
std::string format_duration(int64_t ms);
// A wall time as ISO 8601 UTC to the second: "2026-11-30T21:04:59Z".
std::string iso_utc(int64_t wall_ms);

}  // namespace soak
