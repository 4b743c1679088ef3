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
// so looking after each batch of rows sent together sees its highest values.
// Rows are taken in the order they were sent (started_wall_ms, then id),
// never the order they finished (ids): rows sent in the same millisecond are
// one batch, and so are the members of one burst or capacity group (same
// task, group id, kind and workload), all at the group's first send time, so
// a burst whose members' clock readings straddle a millisecond is still one
// look. Computed in log space throughout (no overflow at n = 10^6).
//
// Besides the failure ratios, three measures:
//   - tool_calls/<band>: the agent session's tool-required turns (gate, soak),
//     failing with a tool-call class (missing, invalid, empty arguments),
//     against judge.max_invalid_ratio, one measure per context band of
//     agent.band_tokens up to agent.context_ceiling_tokens (the last band
//     takes any turn past it); the bands share one measure's part of α.
//   - latency_slo: the candidate's clean timed rows slower than the
//     baseline's p95 of their pool (locator), TTFT for completions, wall time
//     for embeddings and rerank. The p95 is the nearest-rank order statistic of
//     a history baseline's rows, all stored before the stage's window began, so
//     it is fixed at the stage's start and recomputed identically from the
//     same rows; a pool needs kSloMinBaseline baseline values. A p95 from m
//     values lets through a random share of the baseline's own distribution
//     (Beta(m - j + 1, j) for the j-th of m), so the budget is the larger of
//     kSloMinBudget and the upper (1 - δ) bound of that share in the smallest
//     pool; half the measure's α is δ (split over its pools), half the
//     boundary's. Present whenever a baseline is configured; with an
//     interleaved baseline (no rows before the stage) or none it stays at n = 0.
//   - paired: the canary's interleaved baseline (shadow runs of its
//     functional, long-context, burst and capacity tasks). Each baseline run is
//     paired with the candidate's latest run of the same task started before it;
//     a pair whose two runs made the same number of attempts counts. Under the
//     null (the candidate fails no more often than the baseline) each failure in
//     a pair is the candidate's with probability at most ρ = 1/2 (its share of
//     the pair's attempts; exactly 1/2 when the failures are binomial, the
//     hypergeometric law of a pair given its failure count is tighter still), so
//     the same mixture test runs on (failures, the candidate's share of them)
//     with budget ρ and a uniform prior on (ρ, 1]. Present for a canary with a
//     configured baseline; n = 0 unless the baseline mode is interleaved.
//
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
// The paired test's prior on the candidate's share of failures: uniform on
// (1/2, 1] (a 4x worse candidate owns 4/5 of the failures).
inline constexpr double kPairedPriorFailures = 1.0;
inline constexpr double kPairedPriorSuccesses = 1.0;
inline constexpr double kPairedShare = 0.5;
// latency_slo: the baseline quantile, the fewest baseline values a pool needs,
// the smallest budget (twice the misses a p95 lets through).
inline constexpr double kSloQuantile = 0.95;
inline constexpr int64_t kSloMinBaseline = 20;
inline constexpr double kSloMinBudget = 0.10;

namespace sequential {

// log ∫_{x0}^1 p^(a-1) (1-p)^(b-1) dp, for a, b > 0 and 0 ≤ x0 < 1: the
// upper tail of the (unregularised) Beta integral, exact to ~1e-12 relative
// in log space for a and b up to 10^7.
double log_upper_beta(double a, double b, double x0);

// log E(n, k) for budget p0 in (0, 1), with the prior above.
double log_e_value(int64_t n, int64_t k, double p0);
// The same with a Beta(prior_a, prior_b) prior truncated to (p0, 1].
double log_e_value(int64_t n, int64_t k, double p0, double prior_a, double prior_b);

// The x with P(X > x) = tail for X ~ Beta(a, b) (bisection to 1e-12).
double beta_upper_quantile(double a, double b, double tail);

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
  // "pooled", "http_5xx", "task/<task kind>", "tool_calls/<band>", "latency_slo", "paired"
  std::string name;
  double budget = 0;          // p0: the failure ratio the stage tolerates (paired: ρ)
  double alpha = 0;           // this measure's share of judge.alpha, its boundary's
  double estimate_alpha = 0;  // latency_slo: the share spent on its p95 estimates (δ)
  // What the counts are, for a measure whose n and k are not attempts and
  // failures: "slower than the baseline's p95 in 4 pools (smallest 24 values)".
  std::string basis;
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

// Every measure the stage watches, in a fixed order (pooled, http_5xx, one
// per task the stage runs, then the tool-call bands, latency_slo and paired
// where they apply); empty for smoke (any failure there rejects) and for a
// recipe whose rules leave nothing to test (alpha or budget not in (0, 1)).
// Which measures a stage watches depends on its recipe only (stage, workload,
// agent bands, whether a baseline is configured), never on its rows.
std::vector<SequentialMeasure> sequential_evidence(const JudgeInput& in);

// "E=312 (n=48, k=7)": how a point reads in reasons and explain.
std::string describe(const SequentialPoint& p);

}  // namespace soak
