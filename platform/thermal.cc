#include "platform/thermal.h"

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "platform/procfs.h"

namespace soak {

namespace {

std::optional<std::string> first_line(const std::filesystem::path& p) {
  std::ifstream f(p);
  std::string line;
  if (!f || !std::getline(f, line)) return std::nullopt;
  while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
  return line;
}

// A sysfs figure: a decimal integer on one line (procfs's parser).
std::optional<int64_t> number(const std::optional<std::string>& s) { return s ? procfs::parse_int(*s) : std::nullopt; }

ThermalLevel level_of_trip(std::string_view type) {
  if (type == "critical") return ThermalLevel::Sleeping;
  if (type == "hot") return ThermalLevel::Trapping;
  if (type == "passive") return ThermalLevel::Heavy;
  if (type == "active") return ThermalLevel::Moderate;
  return ThermalLevel::Nominal;
}

}  // namespace

void apply_thermal(ThermalSource& source, HostSample& s) {
  auto level = source.read();
  if (!level) {
    procfs::append_error(s.error, level.message());
    return;
  }
  if (*level) s.thermal_level = static_cast<int>(**level);
}

std::optional<ThermalLevel> thermal_from_notify_state(uint64_t state) {
  if (state > static_cast<uint64_t>(ThermalLevel::Sleeping)) return std::nullopt;
  return thermal_level_of(static_cast<int64_t>(state));
}

ThermalLevel thermal_of_zone(const ThermalZone& z) {
  ThermalLevel level = ThermalLevel::Nominal;
  if (!z.temp_milli) return level;
  for (const auto& t : z.trips) {
    // A trip at 0 or below is unset (some firmware lists unused trips as 0).
    if (t.temp_milli <= 0 || *z.temp_milli < t.temp_milli) continue;
    level = std::max(level, level_of_trip(t.type));
  }
  return level;
}

std::optional<ThermalLevel> thermal_from_zones(const std::vector<ThermalZone>& zones) {
  std::optional<ThermalLevel> hottest;
  for (const auto& z : zones) {
    if (!z.temp_milli) continue;
    const ThermalLevel l = thermal_of_zone(z);
    if (!hottest || l > *hottest) hottest = l;
  }
  return hottest;
}

std::vector<ThermalZone> read_thermal_zones(const std::string& dir) {
  namespace fs = std::filesystem;
  std::vector<ThermalZone> zones;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind("thermal_zone", 0) != 0) continue;
    ThermalZone z;
    z.name = name;
    z.type = first_line(it->path() / "type").value_or("");
    z.temp_milli = number(first_line(it->path() / "temp"));
    for (int i = 0;; ++i) {
      const std::string trip = "trip_point_" + std::to_string(i) + "_";
      auto temp = number(first_line(it->path() / (trip + "temp")));
      auto type = first_line(it->path() / (trip + "type"));
      if (!temp || !type) break;
      z.trips.push_back(ThermalTrip{*type, *temp});
    }
    zones.push_back(std::move(z));
  }
  std::sort(zones.begin(), zones.end(), [](const ThermalZone& a, const ThermalZone& b) {
    // thermal_zone2 before thermal_zone10
    if (a.name.size() != b.name.size()) return a.name.size() < b.name.size();
    return a.name < b.name;
  });
  return zones;
}

}  // namespace soak
