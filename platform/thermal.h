// Thermal pressure, read beside the memory figures on every host sample
// (docs/DESIGN.md §2.15). One scale, core/types.h ThermalLevel: macOS's own
// levels, and Linux's thermal zones mapped onto them.
//
// macOS (thermal_mach.cc): the public notify API — notify_register_check() on
// "com.apple.system.thermalpressurelevel" once, notify_get_state() on each
// read; the state is the level of libkern/OSThermalNotification.h (0 nominal,
// 1 moderate, 2 heavy, 3 trapping, 4 sleeping).
// Linux (thermal_linux.cc, for the tests here): every /sys/class/thermal/
// thermal_zone*, its temperature against its trip points; the hottest zone
// decides (thermal_from_zones).
//
// Ownership: each Sampler owns its ThermalSource. Threading: the sampler's
// (the loop thread). Failure: read() says why it could not read; nothing throws.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "core/types.h"

namespace soak {

// The notify name macOS posts thermal pressure changes under.
inline constexpr const char* kThermalNotifyName = "com.apple.system.thermalpressurelevel";

// The level a notify state names (nullopt: a value libkern does not define).
std::optional<ThermalLevel> thermal_from_notify_state(uint64_t state);

// One thermal zone as sysfs shows it: `temp` and each `trip_point_N_temp` in
// millidegrees Celsius, each `trip_point_N_type` one of active, passive, hot, critical.
struct ThermalTrip {
  std::string type;
  int64_t temp_milli = 0;
};
struct ThermalZone {
  std::string name;  // "thermal_zone0"
  std::string type;  // its `type` file: "x86_pkg_temp", "acpitz", ...
  std::optional<int64_t> temp_milli;
  std::vector<ThermalTrip> trips;
};

// A zone's level: below every trip it reaches, nominal; at or above an
// `active` trip (a fan spins up) moderate; `passive` (the kernel throttles)
// heavy; `hot` trapping; `critical` (the kernel shuts down) sleeping. Trips
// of another type and a zone without a temperature count as nominal.
ThermalLevel thermal_of_zone(const ThermalZone& z);
// The hottest zone's level; nullopt when no zone has a temperature.
std::optional<ThermalLevel> thermal_from_zones(const std::vector<ThermalZone>& zones);
// The zones under `dir` (".../class/thermal"), in name order; a zone whose
// files cannot be read keeps what could. Empty when `dir` has none.
std::vector<ThermalZone> read_thermal_zones(const std::string& dir);

class ThermalSource {
 public:
  virtual ~ThermalSource() = default;
  // nullopt: this host has no thermal reading (a Linux VM without zones),
  // unknown rather than an error, like a kernel without PSI.
  virtual Result<std::optional<ThermalLevel>> read() = 0;
};

// Puts `source`'s reading on the sample (platform/sampler.h: an error is
// appended, the level left unknown).
void apply_thermal(ThermalSource& source, HostSample& s);

// The platform's source (thermal_mach.cc or thermal_linux.cc). On Linux it
// reads `sys_root` + "/class/thermal"; macOS ignores `sys_root`.
std::unique_ptr<ThermalSource> make_thermal_source(const std::string& sys_root);

}  // namespace soak
