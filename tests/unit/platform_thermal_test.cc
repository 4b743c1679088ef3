// Thermal pressure (platform/thermal.h): the notify state's values as
// libkern/OSThermalNotification.h defines them, the zones of the
// /sys/class/thermal trees in tests/fixtures/thermal/, and the Linux sampler
// putting the level on a host sample.
#include <filesystem>
#include <fstream>

#include "platform/sampler_linux.h"
#include "platform/thermal.h"
#include "tests/catch.h"
#include "tests/support/runtime_signatures.h"
#include "tests/support/temp_dir.h"

using namespace soak;

namespace {

std::string tree(const std::string& name) { return std::string(SOAKD_FIXTURES_DIR) + "/thermal/" + name; }

}  // namespace

TEST_CASE("thermal: the notify state's values are libkern's levels, and nothing else") {
  // kOSThermalPressureLevelNominal .. kOSThermalPressureLevelSleeping
  CHECK(thermal_from_notify_state(0) == ThermalLevel::Nominal);
  CHECK(thermal_from_notify_state(1) == ThermalLevel::Moderate);
  CHECK(thermal_from_notify_state(2) == ThermalLevel::Heavy);
  CHECK(thermal_from_notify_state(3) == ThermalLevel::Trapping);
  CHECK(thermal_from_notify_state(4) == ThermalLevel::Sleeping);
  CHECK_FALSE(thermal_from_notify_state(5).has_value());
  CHECK_FALSE(thermal_from_notify_state(UINT64_MAX).has_value());
  CHECK(to_string(ThermalLevel::Trapping) == "trapping");
  CHECK(parse_thermal_level("heavy") == ThermalLevel::Heavy);
  CHECK(thermal_level_of(2) == ThermalLevel::Heavy);
  CHECK_FALSE(thermal_level_of(-1).has_value());
}

TEST_CASE("thermal: a laptop's zones are read in number order, with their trips") {
  auto zones = read_thermal_zones(tree("laptop-cool") + "/class/thermal");
  REQUIRE(zones.size() == 4);
  CHECK(zones[0].name == "thermal_zone0");
  CHECK(zones[0].type == "acpitz");
  CHECK(zones[0].temp_milli == 45000);
  REQUIRE(zones[0].trips.size() == 3);
  CHECK(zones[0].trips[0].type == "critical");
  CHECK(zones[0].trips[0].temp_milli == 128000);
  CHECK(zones[0].trips[2].type == "active");
  CHECK(zones[2].name == "thermal_zone2");
  CHECK(zones[2].type == "x86_pkg_temp");
  CHECK(zones[3].name == "thermal_zone10");  // after 2, not after 1
  CHECK(zones[3].trips.empty());
  CHECK(thermal_from_zones(zones) == ThermalLevel::Nominal);
}

TEST_CASE("thermal: the hottest zone decides, by the kind of trip it passed") {
  CHECK(thermal_from_zones(read_thermal_zones(tree("laptop-fan") + "/class/thermal")) == ThermalLevel::Moderate);
  CHECK(thermal_from_zones(read_thermal_zones(tree("laptop-passive") + "/class/thermal")) == ThermalLevel::Heavy);
  // The package sensor is hotter than the ACPI zone in every tree, yet its
  // trips are unset (0): it never decides alone.
  auto passive = read_thermal_zones(tree("laptop-passive") + "/class/thermal");
  CHECK(thermal_of_zone(passive[2]) == ThermalLevel::Nominal);

  ThermalZone z;
  z.temp_milli = 105000;
  z.trips = {{"active", 70000}, {"passive", 95000}, {"hot", 100000}, {"critical", 110000}};
  CHECK(thermal_of_zone(z) == ThermalLevel::Trapping);
  z.temp_milli = 110000;
  CHECK(thermal_of_zone(z) == ThermalLevel::Sleeping);
  z.temp_milli.reset();
  CHECK(thermal_of_zone(z) == ThermalLevel::Nominal);
  CHECK_FALSE(thermal_from_zones({z}).has_value());  // no zone with a temperature: unknown
  CHECK_FALSE(thermal_from_zones({}).has_value());
}

TEST_CASE("thermal: the Linux sampler puts the level beside the memory figures") {
  TempDir tmp;
  std::filesystem::create_directories(tmp.path() + "/proc");
  std::ofstream(tmp.path() + "/proc/meminfo") << "MemTotal: 1024 kB\nMemFree: 512 kB\nMemAvailable: 600 kB\n";
  std::ofstream(tmp.path() + "/proc/vmstat") << "pgpgin 1\n";
  auto hot = make_linux_sampler(LinuxRoots{tmp.path() + "/proc", tree("laptop-passive"), tmp.path()},
                                test::builtin_signatures());
  HostSample s = hot->sample_host(1000);
  CHECK(s.thermal_level == static_cast<int>(ThermalLevel::Heavy));
  // A host without thermal zones (most VMs): unknown, and no error for it.
  auto none = make_linux_sampler(LinuxRoots{tmp.path() + "/proc", tmp.path() + "/nosys", tmp.path()},
                                 test::builtin_signatures());
  HostSample n = none->sample_host(1000);
  CHECK_FALSE(n.thermal_level.has_value());
  CHECK(n.error.find("thermal") == std::string::npos);
}
