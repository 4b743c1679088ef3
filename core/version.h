#pragma once
namespace soak {
inline constexpr const char* kSoakdVersion = "0.1.0";
}
