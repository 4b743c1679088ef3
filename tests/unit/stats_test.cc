// Expected values are published examples (scipy's documented Mann–Whitney
// example, Fisher's tea-tasting table) or were computed independently from the
// definitions: exact U distributions by enumerating every rank assignment,
// Fisher probabilities as exact fractions of binomial coefficients, pairwise
// differences and slopes by brute force.
#include "judges/stats.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

#include "tests/catch.h"

using namespace soak::stats;

namespace {

std::vector<double> brute_differences(const std::vector<double>& x, const std::vector<double>& y) {
  std::vector<double> d;
  for (double a : x)
    for (double b : y) d.push_back(a - b);
  std::sort(d.begin(), d.end());
  return d;
}

// Deterministic scramble (reverse, then rotate), for order-invariance checks.
std::vector<double> scrambled(std::vector<double> v) {
  std::reverse(v.begin(), v.end());
  std::rotate(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 3), v.end());
  return v;
}

}  // namespace

TEST_CASE("quantiles use linear interpolation between order statistics (type 7)") {
  CHECK(quantile({1, 2, 3, 4}, 0.25) == Approx(1.75));
  CHECK(quantile({4, 1, 3, 2}, 0.5) == Approx(2.5));
  CHECK(median({5, 1, 3}) == 3);
  std::vector<double> one_to_twenty;
  for (int i = 1; i <= 20; ++i) one_to_twenty.push_back(i);
  CHECK(quantile(one_to_twenty, 0.95) == Approx(19.05));
  CHECK(quantile(one_to_twenty, 0.0) == 1);
  CHECK(quantile(one_to_twenty, 1.0) == 20);
  CHECK(quantile({}, 0.5) == 0);
}

TEST_CASE("normal quantile and cdf") {
  CHECK(normal_quantile(0.975) == Approx(1.9599639845400536).epsilon(1e-14));
  CHECK(normal_quantile(0.995) == Approx(2.5758293035489).epsilon(1e-12));
  CHECK(normal_quantile(0.3) == Approx(-0.5244005127080407).epsilon(1e-14));
  CHECK(normal_quantile(1e-10) == Approx(-6.361340902404056).epsilon(1e-12));
  CHECK(normal_cdf(normal_quantile(0.8)) == Approx(0.8).epsilon(1e-14));
}

TEST_CASE("exact U distribution") {
  // m = n = 3: counts of U = 0..9 are 1 1 2 3 3 3 3 2 1 1 out of 20.
  CHECK(mann_whitney_exact_cdf(3, 3, 0) == Approx(1.0 / 20));
  CHECK(mann_whitney_exact_cdf(3, 3, 2) == Approx(4.0 / 20));
  CHECK(mann_whitney_exact_cdf(3, 3, 4) == Approx(10.0 / 20));
  CHECK(mann_whitney_exact_cdf(3, 3, 9) == 1);
  CHECK(mann_whitney_exact_cdf(3, 3, -1) == 0);
  // Symmetric about m*n/2 for larger sizes too.
  CHECK(mann_whitney_exact_cdf(20, 20, 150) == Approx(1 - mann_whitney_exact_cdf(20, 20, 249)).epsilon(1e-12));
}

TEST_CASE("Mann–Whitney: scipy's documented example (exact)") {
  const std::vector<double> males{19, 22, 16, 29, 24}, females{20, 11, 17, 12};
  auto r = mann_whitney(males, females, 0.95);
  CHECK(r.exact);
  CHECK(r.u_x == 17);
  CHECK(r.p_value == Approx(0.1111111111111111).epsilon(1e-12));
  CHECK(r.shift == 7);
  CHECK(r.shift_lo == -1);  // c = qwilcox(0.025, 5, 4) = 2: the 2nd smallest and 2nd largest of 20 differences
  CHECK(r.shift_hi == 17);
}

TEST_CASE("Mann–Whitney: exact p and Moses interval") {
  const std::vector<double> x{1.1, 2.3, 3.5, 4.2, 5.9, 6.0}, y{0.5, 0.7, 1.0, 2.0, 2.2, 3.0, 3.1};
  auto r = mann_whitney(x, y, 0.95);
  CHECK(r.exact);
  CHECK(r.u_x == 36);
  CHECK(r.p_value == Approx(0.03496503496503497).epsilon(1e-12));
  CHECK(r.shift == Approx(2.1));
  CHECK(r.shift_lo == Approx(0.1));
  CHECK(r.shift_hi == Approx(4.0));
}

TEST_CASE("Mann–Whitney: ties use the corrected normal approximation") {
  const std::vector<double> x{1, 2, 2, 3, 4, 5, 5, 6, 7, 7}, y{0, 1, 1, 2, 2, 3, 3, 4};
  auto r = mann_whitney(x, y, 0.99);
  CHECK_FALSE(r.exact);
  CHECK(r.u_x == 63.5);
  CHECK(r.p_value == Approx(0.038817669719850234).epsilon(1e-10));
  CHECK(r.shift == 2);
  CHECK(r.shift_lo == -1);
  CHECK(r.shift_hi == 5);
}

TEST_CASE("Mann–Whitney: larger samples") {
  std::vector<double> x, y;
  for (int i = 0; i < 60; ++i) x.push_back(100 + (i * 37 % 101) * 0.5);
  for (int i = 0; i < 45; ++i) y.push_back(95 + (i * 53 % 97) * 0.5);
  auto r = mann_whitney(x, y, 0.99);
  CHECK_FALSE(r.exact);
  CHECK(r.u_x == 1715);
  CHECK(r.p_value == Approx(0.018257848096563167).epsilon(1e-10));
  CHECK(r.shift == 7);
  CHECK(r.shift_lo == -1);
  CHECK(r.shift_hi == 15.5);
}

TEST_CASE("Mann–Whitney: symmetry, shift invariance, order invariance") {
  std::vector<double> x, y;
  for (int i = 0; i < 40; ++i) x.push_back(50 + (i * 13 % 29));
  for (int i = 0; i < 35; ++i) y.push_back(44 + (i * 11 % 31));
  auto a = mann_whitney(x, y, 0.95);
  auto b = mann_whitney(y, x, 0.95);
  CHECK(a.p_value == b.p_value);
  CHECK(a.u_x + b.u_x == 40 * 35);
  CHECK(a.shift == -b.shift);
  CHECK(a.shift_lo == -b.shift_hi);
  CHECK(a.shift_hi == -b.shift_lo);

  std::vector<double> x_moved = x, y_moved = y;
  for (double& v : x_moved) v += 1000;
  for (double& v : y_moved) v += 1000;
  auto moved = mann_whitney(x_moved, y_moved, 0.95);
  CHECK(moved.p_value == a.p_value);
  CHECK(moved.shift == a.shift);

  std::vector<double> x_shifted = x;
  for (double& v : x_shifted) v += 8;
  auto shifted = mann_whitney(x_shifted, y, 0.95);
  CHECK(shifted.shift == a.shift + 8);
  CHECK(shifted.p_value < a.p_value);

  auto shuffled = mann_whitney(scrambled(x), scrambled(y), 0.95);
  CHECK(shuffled.p_value == a.p_value);
  CHECK(shuffled.u_x == a.u_x);
  CHECK(shuffled.shift == a.shift);
  CHECK(shuffled.shift_lo == a.shift_lo);
  CHECK(shuffled.shift_hi == a.shift_hi);
}

TEST_CASE("Mann–Whitney: identical samples and empty input are neutral") {
  const std::vector<double> same{3, 3, 3, 3, 3, 3};
  auto r = mann_whitney(same, same, 0.95);
  CHECK(r.p_value == 1);
  CHECK(r.shift == 0);
  auto e = mann_whitney({}, same, 0.95);
  CHECK(e.p_value == 1);
  CHECK(e.n_x == 0);
}

TEST_CASE("k-th pairwise difference matches brute force beyond the enumeration limit") {
  std::vector<double> x, y;
  for (int i = 0; i < 300; ++i) x.push_back(std::sin(i * 0.37) * 100 + i * 0.01);
  for (int i = 0; i < 200; ++i) y.push_back(std::cos(i * 0.21) * 80);
  for (int i = 0; i < 5; ++i) y.push_back(12.5);  // ties
  std::sort(x.begin(), x.end());
  std::sort(y.begin(), y.end());
  const auto all = brute_differences(x, y);
  for (int64_t k : {int64_t{1}, int64_t{2}, int64_t{777}, int64_t(all.size() / 2), int64_t(all.size() / 2 + 1),
                    int64_t(all.size() - 1), int64_t(all.size())}) {
    INFO("k = " << k);
    CHECK(kth_pairwise_difference(x, y, k) == all[static_cast<size_t>(k - 1)]);
  }
}

TEST_CASE("relative change") {
  CHECK(relative_change(110, 100) == Approx(0.10));
  CHECK(relative_change(90, 100) == Approx(-0.10));
  CHECK(relative_change(5, 0) == 0);
}

TEST_CASE("Fisher's exact test") {
  // Fisher's lady tasting tea.
  CHECK(fisher_exact(3, 1, 1, 3, Alternative::TwoSided) == Approx(0.4857142857142857).epsilon(1e-12));
  CHECK(fisher_exact(3, 1, 1, 3, Alternative::Greater) == Approx(0.24285714285714285).epsilon(1e-12));
  CHECK(fisher_exact(8, 2, 1, 5, Alternative::TwoSided) == Approx(0.03496503496503497).epsilon(1e-10));
  CHECK(fisher_exact(8, 2, 1, 5, Alternative::Greater) == Approx(0.024475524475524476).epsilon(1e-10));
  // Thousands of requests: no overflow, small tails kept.
  CHECK(fisher_exact(30, 970, 12, 988, Alternative::TwoSided) == Approx(0.007287953507168598).epsilon(1e-8));
  CHECK(fisher_exact(30, 970, 12, 988, Alternative::Greater) == Approx(0.003643976753584299).epsilon(1e-8));
  CHECK(fisher_exact(10, 2990, 3, 2997, Alternative::Greater) == Approx(0.0459680031820793).epsilon(1e-8));
  // The candidate being better is not evidence of it being worse.
  CHECK(fisher_exact(12, 988, 30, 970, Alternative::Greater) > 0.99);
  CHECK(fisher_exact(0, 100, 0, 100, Alternative::Greater) == 1);
}

TEST_CASE("Wilson interval") {
  auto zero = wilson_interval(0, 10, 0.95);
  CHECK(zero.lo == 0);
  CHECK(zero.hi == Approx(0.27753).epsilon(1e-4));  // z^2 / (n + z^2)
  auto half = wilson_interval(50, 100, 0.95);
  CHECK(half.lo == Approx(1 - half.hi));
  auto none = wilson_interval(0, 0, 0.95);
  CHECK(none.lo == 0);
  CHECK(none.hi == 1);
}

TEST_CASE("Theil–Sen slope and Sen's interval") {
  auto a = theil_sen(std::vector<double>{1, 2, 3, 4}, std::vector<double>{1, 2, 3, 5}, 0.95);
  CHECK(a.slope == Approx(7.0 / 6));
  CHECK(a.intercept == Approx(-0.4166666666666661));
  CHECK(a.lo == 1);
  CHECK(a.hi == 2);

  const std::vector<double> x{0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
  std::vector<double> y{2.0, 2.9, 4.2, 5.1, 5.8, 7.2, 8.1, 8.8, 10.3, 11.0};
  auto b = theil_sen(x, y, 0.95);
  CHECK(b.slope == Approx(1.0));
  CHECK(b.intercept == Approx(2.0));
  CHECK(b.lo == Approx(0.95));
  CHECK(b.hi == Approx(1.05));

  // One wild point moves neither the slope much nor the estimate past the interval.
  y[5] = 1000;
  auto c = theil_sen(x, y, 0.95);
  CHECK(c.slope == Approx(1.0).margin(0.1));

  // Input order does not matter.
  std::vector<double> xr(x.rbegin(), x.rend()), yr(y.rbegin(), y.rend());
  auto d = theil_sen(xr, yr, 0.95);
  CHECK(d.slope == c.slope);
  CHECK(d.lo == c.lo);
  CHECK(d.hi == c.hi);

  auto flat = theil_sen(std::vector<double>{1, 1, 1}, std::vector<double>{2, 3, 4}, 0.95);
  CHECK(flat.slope == 0);
}
