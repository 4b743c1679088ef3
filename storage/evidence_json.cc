#include "storage/evidence_json.h"

#include <nlohmann/json.hpp>

namespace soak {

nlohmann::ordered_json metric_json(const MetricEvidence& m) {
  nlohmann::ordered_json j;
  j["metric"] = m.metric;
  j["n"] = m.n;
  j["n_baseline"] = m.n_baseline;
  j["estimate"] = m.estimate;
  j["baseline"] = m.baseline;
  j["lo"] = m.lo;
  j["hi"] = m.hi;
  j["threshold"] = m.threshold;
  j["p_value"] = m.p_value;
  j["result"] = to_string(m.result);
  j["reason"] = m.reason;
  return j;
}

std::string metrics_to_json(const std::vector<MetricEvidence>& ms) {
  nlohmann::ordered_json arr = nlohmann::ordered_json::array();
  for (const auto& m : ms) arr.push_back(metric_json(m));
  return arr.dump();
}

Result<std::vector<MetricEvidence>> metrics_from_json(const std::string& s) {
  using json = nlohmann::json;
  std::vector<MetricEvidence> out;
  json arr = json::parse(s, nullptr, false);
  if (arr.is_discarded() || !arr.is_array()) return make_error("verdict metrics are not a JSON array");
  for (const auto& j : arr) {
    if (!j.is_object()) return make_error("verdict metrics hold " + j.dump() + " where a metric object belongs");
    MetricEvidence m;
    // value() throws on a field of the wrong type; a stored document is data, so that is an error result.
    try {
      m.metric = j.value("metric", "");
      m.n = j.value("n", int64_t{0});
      m.n_baseline = j.value("n_baseline", int64_t{0});
      m.estimate = j.value("estimate", 0.0);
      m.baseline = j.value("baseline", 0.0);
      m.lo = j.value("lo", 0.0);
      m.hi = j.value("hi", 0.0);
      m.threshold = j.value("threshold", 0.0);
      m.p_value = j.value("p_value", 1.0);
      m.reason = j.value("reason", "");
    } catch (const json::exception& e) {
      return make_error("verdict metric \"" + m.metric + "\" does not read: " + e.what());
    }
    std::string result;
    if (j.contains("result"))
      result = j.at("result").is_string() ? j.at("result").get<std::string>() : j.at("result").dump();
    auto parsed = parse_metric_result(result);
    if (!parsed)
      return make_error("verdict metric \"" + m.metric + "\" has result \"" + result + "\", which is not one of " +
                        metric_result_names());
    m.result = *parsed;
    out.push_back(std::move(m));
  }
  return out;
}

}  // namespace soak
