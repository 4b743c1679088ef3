// Early verdicts with bounded error (docs/DESIGN.md §3.12): one e-process per
// watched failure measure, looked at after every batch of rows, rejecting the
// candidate as soon as one crosses its boundary, never promoting early.
//
// For a measure with budget p0 (the failure ratio the stage tolerates) the
// e-value after n attempts with k failures is the one-sided mixture
// likelihood ratio of Johari, Pekelis & Walsh ("Always Valid Inference",
// arXiv:1512.04922) with the conjugate Beta prior of Lindon & Malek
// (arXiv:2011.03567), truncated to the alternatives p > p0:
//
//   E(n, k) = ∫_{p0}^1 p^k (1-p)^(n-k) π(p) dp / (p0^k (1-p0)^(n-k)),
//   π = Beta(kSequentialPriorFailures, kSequentialPriorSuccesses) on [p0, 1].
//
// Under any failure rate p ≤ p0 it is a nonnegative supermartingale with
// E_0 = 1, so by Ville's inequality P(ever E ≥ 1/α) ≤ α however often it is
// looked at. α (judge.alpha) is split evenly over the measures a stage
// watches (a fixed list per stage: the split never depends on the rows), so
// the stage's false-reject probability is at most α over all of them.
//
// E depends on (n, k) only, falls on every clean row and rises on failures,
// so looking after each batch of rows sent at the same instant sees its
// highest values. Rows are taken in the order they were sent
// (started_wall_ms, then id); rows sent in the same millisecond (a burst's
// members, released in one loop pass) are one batch, so the order in which
// they finished never matters. Computed in log space throughout (no overflow
// at n = 10^6).
//
// Pure: the daemon (judges/hard.cc, while a stage runs and at its end),
// `soakctl explain`, `soakctl status` and the metrics textfile compute the
// same evidence from the same rows.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "judges/judge.h"

namespace soak {

// The prior's pseudo-counts (a Beta(1, 15) before truncation: mean 1 in 16).
// It decides where the test is quickest: a 1-in-8 failure rate against a 1 %
// budget rejects in a median 36 attempts (52 against 2 %); three failures in the first three
// attempts at a 1 % budget reject, two do not (tests/bench/sequential_bench.cc prints these).
inline constexpr double kSequentialPriorFailures = 1.0;
inline constexpr double kSequentialPriorSuccesses = 15.0;

namespace sequential {

// log ∫_{x0}^1 p^(a-1) (1-p)^(b-1) dp, for a, b > 0 and 0 ≤ x0 < 1: the
// upper tail of the (unregularised) Beta integral, exact to ~1e-12 relative
// in log space for a and b up to 10^7.
double log_upper_beta(double a, double b, double x0);

// log E(n, k) for budget p0 in (0, 1), with the prior above.
double log_e_value(int64_t n, int64_t k, double p0);

}  // namespace sequential

// Where an e-process stood after a batch of rows.
struct SequentialPoint {
  int64_t n = 0;       // attempts so far
  int64_t k = 0;       // failures among them
  double log_e = 0;    // natural log of the e-value
  int64_t row_id = 0;  // the last row of the batch (0: none yet)
};

// One watched measure over a stage's rows.
struct SequentialMeasure {
  std::string name;                     // "pooled", "http_5xx", "task/<task kind>"
  double budget = 0;                    // p0: the failure ratio the stage tolerates
  double alpha = 0;                     // this measure's share of judge.alpha
  SequentialPoint last;                 // after every row
  SequentialPoint peak;                 // the highest e-value seen
  std::optional<SequentialPoint> stop;  // the first batch at or over the boundary
  // The point after every batch that held a failure, up to the stop (all of
  // them when none): how the evidence grew, as explain prints it.
  std::vector<SequentialPoint> path;

  double log_boundary() const;  // log(1 / alpha)
  // The evidence as a fraction of the boundary, on the log scale: 0 while the
  // rows favour the budget (E ≤ 1), 1 at the boundary. `last` unless stopped.
  double fraction() const;
};

// Every measure the stage watches, in a fixed order (pooled, http_5xx, then
// one per task the stage runs); empty for smoke (any failure there rejects)
// and for a recipe whose rules leave nothing to test (alpha or budget not in
// (0, 1)).
std::vector<SequentialMeasure> sequential_evidence(const JudgeInput& in);

// "E=312 (n=48, k=7)": how a point reads in reasons and explain.
std::string describe(const SequentialPoint& p);

}  // namespace soak
