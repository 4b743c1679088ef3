// The report's charts as inline SVG, each a pure function of its part of the
// model (reports/model.h). Every chart has a stable id and class for the page
// and its tests: timeline, memory, pressure, perf-<figure>, ladder, bursts,
// speed-<figure>.
// Colours come from the page's stylesheet by class. Thread-agnostic.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "reports/model.h"

namespace soak::report {

enum class TimelineSize { Full, Mini };
// Stages (bars by state), gaps, restarts, guard trips, build changes, control
// requests and other events; Full links each event to its table row.
std::string timeline_svg(const Timeline& t, std::string_view id, TimelineSize size);

// Footprint (band: min–max per bucket, line: median) and resident over the
// window, the soak judge's Theil–Sen line with Sen's interval as a fan through
// its centre and the block medians it fitted; below, process and host swap.
std::string memory_svg(const MemoryChart& m);

// Host memory pressure: the kernel's level per bucket as a strip, free memory
// (macOS) or PSI (Linux) as a line, host swap used.
std::string pressure_svg(const PressureChart& p);

// One figure (ttft_ms, decode_tps, wall_ms) for every locator: the candidate's
// box (p25–p75, median, whiskers p5–p95) and strip of points beside the
// baseline's, each locator on its own scale, in the given order.
std::string perf_svg(std::string_view figure, const std::vector<const PerfGroup*>& groups);

// Long-context TTFT by prompt size, fresh beside repeat (log scale), with
// refused sizes and the context reach marked.
std::string ladder_svg(const std::vector<LadderPoint>& points, const std::optional<int64_t>& reach);

// Burst TTFT by burst size, with serialized bursts and peak concurrency.
std::string bursts_svg(const std::vector<BurstPoint>& points);

// One speed figure over the whole campaign: per workload the median per time
// bucket as a line (the busiest workload with its min–max band), stage edges
// marked; a log scale when the workloads' values span more than 20x.
std::string speed_svg(const SpeedChart& c);

// Axis label of a wall time for a span of `span_ms` ("01-03 14:00" or "14:05").
std::string time_label(int64_t ms, int64_t span_ms);

}  // namespace soak::report
