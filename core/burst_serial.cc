#include "core/burst_serial.h"

#include <cmath>
#include <cstdio>

namespace soak {

namespace {

std::string ms(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, v < 10 ? "%.1f" : "%.0f", v);
  return buf;
}

std::string share_text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  return buf;
}

}  // namespace

std::optional<double> BurstQueueFigures::rise_per_place_ms() const {
  if (n < 2 || !queue_span_ms) return std::nullopt;
  return *queue_span_ms / static_cast<double>(n - 1);
}

SerialCall read_serial(const BurstQueueFigures& f, const SerialFloors& floors) {
  SerialCall c;
  c.rise_ms = f.rise_per_place_ms();
  if (c.rise_ms && f.service_ms && *f.service_ms > 0) c.share = *c.rise_ms / *f.service_ms;
  const double ratio = f.queue_ratio ? *f.queue_ratio : c.share.value_or(0);
  bool staircase = false;
  if (f.answered) {
    staircase = f.n >= kMinSerializedMembers && *f.answered == f.n && f.peak_decoding <= 1 &&
                (f.queue_ratio || c.share) && ratio >= floors.min_share;
  } else {
    // Stored before the members' count: the probe's own call at the default
    // share, and the configured share on top where the ratio was stored.
    staircase = f.stored_serialized.value_or(false) && (!(f.queue_ratio || c.share) || ratio >= floors.min_share);
  }
  if (!staircase) return c;
  const bool felt = !c.rise_ms || *c.rise_ms >= static_cast<double>(floors.min_effect_ms);
  c.reading = felt ? SerialReading::Serial : SerialReading::UnderFloor;
  return c;
}

std::string describe_rise(const SerialCall& c, const BurstQueueFigures& f) {
  if (!c.rise_ms) return "time to first token rose by an amount not recorded per place in the queue";
  std::string s = "time to first token rose by " + ms(*c.rise_ms) + " ms per place in the queue";
  if (c.share && f.service_ms)
    s += ", " + share_text(*c.share) + " of one answer's service time (" + ms(*f.service_ms) + " ms)";
  return s;
}

std::string describe_floors(const SerialFloors& floors) {
  return "floors: " + share_text(floors.min_share) + " of the service time (judge.serial_min_share) and " +
         std::to_string(floors.min_effect_ms) + " ms (judge.serial_min_effect_ms)";
}

}  // namespace soak
