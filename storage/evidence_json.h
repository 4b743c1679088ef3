// Metric evidence <-> JSON: how a verdict's per-metric evidence is stored in
// verdicts.metrics (and printed by `soakctl explain`). The key order is fixed so
// the same evidence always serializes to the same bytes (judges compare them).
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "core/result.h"
#include "core/types.h"

namespace soak {

// One metric's evidence as stored and as `soakctl explain --json` prints it.
nlohmann::ordered_json metric_json(const MetricEvidence& m);
std::string metrics_to_json(const std::vector<MetricEvidence>& m);
// Fails on text that is not a JSON array or on a metric whose result is not a
// MetricResult name.
Result<std::vector<MetricEvidence>> metrics_from_json(const std::string& s);

}  // namespace soak
