// Whether a burst was served one at a time, and whether that is an effect a
// user would feel (docs/DESIGN.md §2.4, §3.9), read from the figures a burst
// summary stores. The burst probe reads them this way to write its row
// (probes/probe_burst.cc), the judge reads the stored figures back with the
// recipe's floors (judges/judge.cc burst_serialization), so `soakctl explain`
// recomputes the same call from the rows.
//
// The staircase: sorted by time to first token, members served one at a time
// each wait a whole service time (the fastest TTFT plus the median decode
// time) of the ones before, so TTFT climbs by about one service time per
// place in the queue; with k slots by about 1/k of one. Served one at a time:
// at least kMinSerializedMembers members, every one answered with a first
// token, never two decoding at once, and the rise per place at least
// `min_share` of one service time (0.75 by default: 2 slots working give about
// 0.5). An effect a user feels: the rise per place is also at least
// `min_effect_ms`. A runtime whose whole answer takes 2 ms draws such a
// staircase out of a busy host's scheduling alone (a member that found the
// loop a few milliseconds late), and nobody feels 2 ms per place; one that
// serializes 150 ms answers makes the last of 8 wait a second.
//
// Pure and thread-agnostic.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace soak {

inline constexpr int kMinSerializedMembers = 3;
inline constexpr double kDefaultSerialMinShare = 0.75;
inline constexpr int64_t kDefaultSerialMinEffectMs = 50;

// What a burst summary stores about its queue (probes/engine_rows.h BurstSummary).
struct BurstQueueFigures {
  int n = 0;
  // Members answered with a first token (clean, or cut by the runtime's cap).
  // nullopt: a summary stored before the figure was, whose own `serialized`
  // (the staircase at the default share) stands in for the members' count.
  std::optional<int> answered;
  std::optional<bool> stored_serialized;
  int peak_decoding = 0;
  std::optional<double> service_ms;     // one answer's own time: fastest TTFT + median decode time
  std::optional<double> queue_span_ms;  // last member's TTFT - first member's TTFT
  std::optional<double> queue_ratio;    // queue_span / ((n - 1) * service)
  // The TTFT rise per place in the queue: queue_span / (n - 1).
  std::optional<double> rise_per_place_ms() const;
};

struct SerialFloors {
  double min_share = kDefaultSerialMinShare;          // judge.serial_min_share
  int64_t min_effect_ms = kDefaultSerialMinEffectMs;  // judge.serial_min_effect_ms
};

enum class SerialReading {
  NotServedInTurn,  // no staircase: the members were not served one at a time
  UnderFloor,       // one at a time, but each place adds less than min_effect_ms
  Serial,           // one at a time, each place adding at least both floors
};

struct SerialCall {
  SerialReading reading = SerialReading::NotServedInTurn;
  std::optional<double> rise_ms;  // per place in the queue
  std::optional<double> share;    // rise per place / one answer's service time
  bool staircase() const { return reading != SerialReading::NotServedInTurn; }
};

SerialCall read_serial(const BurstQueueFigures& f, const SerialFloors& floors);

// "time to first token rose by 152 ms per place in the queue, 1.01 of one
// answer's service time (150 ms)"; the floors: "floors: 0.75 of the service
// time (judge.serial_min_share) and 50 ms (judge.serial_min_effect_ms)".
std::string describe_rise(const SerialCall& c, const BurstQueueFigures& f);
std::string describe_floors(const SerialFloors& floors);

}  // namespace soak
