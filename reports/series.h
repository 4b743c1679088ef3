// Reducing data for charts: time series into buckets (min, max, median per
// bucket) so a week of 5-second samples becomes a few hundred points, and
// samples into a five-number summary plus a thinned strip of points. Pure;
// thread-agnostic.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace soak::report {

struct TimedValue {
  int64_t t_ms = 0;
  double v = 0;
};

struct Bucket {
  int64_t t0_ms = 0, t1_ms = 0;  // the bucket's span: [t0, t1)
  double min = 0, max = 0, median = 0;
  int64_t n = 0;
};

// Points in [from, to] into `buckets` equal spans; empty spans are left out
// (a gap in the data stays a gap in the chart). Order of `points` does not
// matter.
std::vector<Bucket> downsample(std::vector<TimedValue> points, int64_t from_ms, int64_t to_ms, int buckets);

// Quantiles as judges/stats.h defines them (type 7).
struct Summary {
  int64_t n = 0;
  double min = 0, p5 = 0, p25 = 0, median = 0, p75 = 0, p95 = 0, max = 0;
};
Summary summarize(std::vector<double> values);

// At most `max_points` of `sorted`, evenly spaced by rank, always keeping the
// smallest and the largest: a strip plot that shows the spread, not every row.
std::vector<double> thin(const std::vector<double>& sorted, size_t max_points);

}  // namespace soak::report
