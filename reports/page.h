// Reports as one self-contained static HTML file each: inline CSS and SVG, no
// script, no network, nothing to fetch. Every text from the store is escaped
// (reports/html.h). Pure functions of the model; thread-agnostic.
#pragma once

#include <string>

#include "reports/model.h"

namespace soak::report {

// A candidate's page: verdict with its full argument (every metric, deciding
// first, reasons linked to the rows table), stage timeline, memory with the
// soak trend, host pressure, candidate beside baseline per locator, the
// long-context ladder, bursts, and the rows and events tables.
std::string render_candidate(const CandidateReport& r);

// Every candidate with its stage, verdict and a small timeline.
std::string render_index(const IndexReport& idx);

// How a metric row's numbers read, in the estimate's unit where the judge
// stored a fraction (the shift interval of a median becomes the interval of
// the candidate's median, in ms or tok/s).
struct MetricText {
  std::string estimate, baseline, interval, threshold;
};
MetricText metric_text(const MetricEvidence& m);

}  // namespace soak::report
