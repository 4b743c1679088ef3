// What `soakd sample --once` shows: this host's locator and memory figures,
// each enabled candidate's runtime process (how it was found and its
// footprint), and every inference engine running. For a user checking the
// setup before leaving soakd alone for a week.
//
// collect_sample_report() does the sampling (one pass, no timer); the render
// functions are pure. The CLI only prints what they return.
// Threading: caller's thread. Failure: every problem is text in the report
// (an "errors" line per sample), never an exception.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/types.h"
#include "platform/runtime_processes.h"
#include "platform/sampler.h"

namespace soak {

struct CandidateProcessReport {
  std::string candidate;  // config name
  std::string runtime;    // RuntimeKind name
  LocatedProcess located;
  std::optional<ProcessSample> sample;  // when a pid was found
};

struct SampleReport {
  HostInfo host;
  std::string host_error;  // host_info() failure, if any
  HostSample host_sample;
  std::vector<CandidateProcessReport> candidates;
  std::vector<EngineProcess> engines;
  std::string engines_error;
};

SampleReport collect_sample_report(Sampler& sampler, const Config& cfg, int64_t wall_ms);

std::string render_sample_text(const SampleReport& r);
std::string render_sample_json(const SampleReport& r);  // one JSON object, pretty-printed

// "1.5 GiB", "512 MiB", "0 B"; "-" when unknown.
std::string format_bytes(std::optional<int64_t> bytes);

}  // namespace soak
