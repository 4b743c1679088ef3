// Linux's thermal pressure: the hottest of /sys/class/thermal's zones against
// their trip points (platform/thermal.h). A host without thermal zones (most
// VMs) has no reading: unknown, not an error.
#include "platform/thermal.h"

namespace soak {

namespace {

class ZonesSource final : public ThermalSource {
 public:
  explicit ZonesSource(std::string dir) : dir_(std::move(dir)) {}
  Result<std::optional<ThermalLevel>> read() override { return thermal_from_zones(read_thermal_zones(dir_)); }

 private:
  std::string dir_;
};

}  // namespace

std::unique_ptr<ThermalSource> make_thermal_source(const std::string& sys_root) {
  return std::make_unique<ZonesSource>(sys_root + "/class/thermal");
}

}  // namespace soak
