// Prometheus text exposition format (version 0.0.4), as served on /metrics by
// llama.cpp (`llamacpp:` prefix, needs --metrics), vLLM (`vllm:`) and
// Rapid-MLX (`rapid_mlx_`). A small scanner, not a line-by-line regex: metric
// names may contain colons, label values carry escapes (\" \\ \n), values may
// be NaN, +Inf, -Inf or use exponents, and a timestamp may follow.
//
// Pure and total: every line either yields a sample, updates a family's HELP
// or TYPE, is ignored (blank, other comments), or yields a PromLineError; the
// parser never throws and never stops at a bad line. Thread-agnostic.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace soak::probes {

struct PromLabel {
  std::string name;
  std::string value;
};

struct PromSample {
  std::string name;
  std::vector<PromLabel> labels;  // in the order written
  double value = 0;
  std::optional<int64_t> timestamp_ms;

  const std::string* label(std::string_view name) const;
};

struct PromFamily {
  std::string name;
  std::string type;  // counter | gauge | histogram | summary | untyped; empty if no TYPE line
  std::string help;  // unescaped
};

struct PromLineError {
  int line = 0;  // 1-based
  std::string message;
};

using PromLabelMatch = std::vector<std::pair<std::string_view, std::string_view>>;

struct PromText {
  std::vector<PromSample> samples;
  std::vector<PromFamily> families;  // in order of first HELP/TYPE mention
  std::vector<PromLineError> errors;

  // First sample with this name whose labels include every (name, value) given.
  const PromSample* find(std::string_view name, const PromLabelMatch& labels = {}) const;
  std::optional<double> value(std::string_view name, const PromLabelMatch& labels = {}) const;
  const PromFamily* family(std::string_view name) const;
};

PromText parse_prometheus_text(std::string_view text);

}  // namespace soak::probes
