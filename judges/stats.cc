#include "judges/stats.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <numeric>
#include <utility>

namespace soak::stats {

namespace {

// Below this many candidates in the bisection bracket, the k-th pairwise
// difference is picked by enumerating them (per element of the shorter side).
constexpr int64_t kMinEnumerate = 1024;
constexpr int64_t kEnumeratePerElement = 1;

// Relative slack when comparing point probabilities in Fisher's two-sided test,
// so tables as likely as the observed one are not lost to rounding (as R does).
constexpr double kFisherRelativeTolerance = 1e-7;

std::vector<double> sorted_copy(std::span<const double> v) {
  std::vector<double> s(v.begin(), v.end());
  std::sort(s.begin(), s.end());
  return s;
}

double clamp01(double p) { return std::clamp(p, 0.0, 1.0); }

// Sum of t(t-1)(2t+5) over groups of equal values in a sorted sequence (the tie
// term of Kendall's S variance).
double kendall_tie_term(const std::vector<double>& sorted) {
  double term = 0;
  for (size_t i = 0; i < sorted.size();) {
    size_t j = i;
    while (j < sorted.size() && sorted[j] == sorted[i]) ++j;
    double t = static_cast<double>(j - i);
    term += t * (t - 1) * (2 * t + 5);
    i = j;
  }
  return term;
}

double median_sorted(const std::vector<double>& s) { return quantile_sorted(s, 0.5); }

double log_factorial(int64_t n) { return std::lgamma(static_cast<double>(n) + 1.0); }

}  // namespace

// ============================================================== quantiles
double quantile_sorted(std::span<const double> sorted, double q) {
  if (sorted.empty()) return 0;
  q = std::clamp(q, 0.0, 1.0);
  double h = static_cast<double>(sorted.size() - 1) * q;
  size_t lo = static_cast<size_t>(std::floor(h));
  if (lo + 1 >= sorted.size()) return sorted.back();
  double frac = h - static_cast<double>(lo);
  return sorted[lo] + frac * (sorted[lo + 1] - sorted[lo]);
}

double quantile(std::vector<double> values, double q) {
  std::sort(values.begin(), values.end());
  return quantile_sorted(values, q);
}

double median(std::vector<double> values) { return quantile(std::move(values), 0.5); }

// ============================================================== normal
double normal_cdf(double z) { return 0.5 * std::erfc(-z / std::sqrt(2.0)); }

double normal_quantile(double p) {
  if (p <= 0) return -INFINITY;
  if (p >= 1) return INFINITY;
  const double q = p - 0.5;
  if (std::fabs(q) <= 0.425) {
    const double r = 0.180625 - q * q;
    return q *
           (((((((r * 2509.0809287301226727 + 33430.575583588128105) * r + 67265.770927008700853) * r +
                45921.953931549871457) *
                   r +
               13731.693765509461125) *
                  r +
              1971.5909503065514427) *
                 r +
             133.14166789178437745) *
                r +
            3.387132872796366608) /
           (((((((r * 5226.495278852545925 + 28729.085735721942674) * r + 39307.89580009271061) * r +
                21213.794301586595867) *
                   r +
               5394.1960214247511077) *
                  r +
              687.1870074920579083) *
                 r +
             42.313330701600911252) *
                r +
            1.0);
  }
  double r = std::sqrt(-std::log(q < 0 ? p : 1 - p));
  double val;
  if (r <= 5) {
    r -= 1.6;
    val = (((((((r * 7.7454501427834140764e-4 + 0.0227238449892691845833) * r + 0.24178072517745061177) * r +
               1.27045825245236838258) *
                  r +
              3.64784832476320460504) *
                 r +
             5.7694972214606914055) *
                r +
            4.6303378461565452959) *
               r +
           1.42343711074968357734) /
          (((((((r * 1.05075007164441684324e-9 + 5.475938084995344946e-4) * r + 0.0151986665636164571966) * r +
               0.14810397642748007459) *
                  r +
              0.68976733498510000455) *
                 r +
             1.6763848301838038494) *
                r +
            2.05319162663775882187) *
               r +
           1.0);
  } else {
    r -= 5;
    val = (((((((r * 2.01033439929228813265e-7 + 2.71155556874348757815e-5) * r + 0.0012426609473880784386) * r +
               0.026532189526576123093) *
                  r +
              0.29656057182850489123) *
                 r +
             1.7848265399172913358) *
                r +
            5.4637849111641143699) *
               r +
           6.6579046435011037772) /
          (((((((r * 2.04426310338993978564e-15 + 1.4215117583164458887e-7) * r + 1.8463183175100546818e-5) * r +
               7.868691311456132591e-4) *
                  r +
              0.0148753612908506148525) *
                 r +
             0.13692988092273580531) *
                r +
            0.59983220655588793769) *
               r +
           1.0);
  }
  return q < 0 ? -val : val;
}

// ============================================================== pairwise differences
double kth_pairwise_difference(std::span<const double> x, std::span<const double> y, int64_t k) {
  const size_t n = x.size(), m = y.size();
  if (n == 0 || m == 0) return 0;
  const int64_t total = static_cast<int64_t>(n) * static_cast<int64_t>(m);
  k = std::clamp<int64_t>(k, 1, total);

  // For fixed i, x[i] - y[j] is non-increasing in j (rounding is monotone), and
  // the first j with x[i] - y[j] <= t never moves left as i grows, so one
  // forward pointer counts every pair. The same expression is used everywhere
  // so counting and enumerating agree bit for bit.
  auto first_at_most = [&](double t, auto&& visit) {
    size_t j = 0;
    for (size_t i = 0; i < n; ++i) {
      while (j < m && x[i] - y[j] > t) ++j;
      visit(i, j);
    }
  };
  auto count_at_most = [&](double t) {
    int64_t c = 0;
    first_at_most(t, [&](size_t, size_t j) { c += static_cast<int64_t>(m - j); });
    return c;
  };

  double lo = x.front() - y.back();  // smallest difference
  double hi = x.back() - y.front();  // largest difference
  int64_t c_lo = count_at_most(lo);
  if (c_lo >= k) return lo;
  int64_t c_hi = total;
  const int64_t limit = std::max<int64_t>(kMinEnumerate, kEnumeratePerElement * static_cast<int64_t>(n + m));

  // Invariant: count(<= lo) < k <= count(<= hi).
  while (c_hi - c_lo > limit) {
    double mid = lo + (hi - lo) / 2;
    if (!(mid > lo && mid < hi)) return hi;  // adjacent doubles: every candidate equals hi
    int64_t c = count_at_most(mid);
    if (c >= k) {
      hi = mid;
      c_hi = c;
    } else {
      lo = mid;
      c_lo = c;
    }
  }

  // Enumerate the differences in (lo, hi]: for each i a contiguous run of j.
  std::vector<size_t> j_hi(n);
  first_at_most(hi, [&](size_t i, size_t j) { j_hi[i] = j; });
  std::vector<double> cand;
  cand.reserve(static_cast<size_t>(c_hi - c_lo));
  first_at_most(lo, [&](size_t i, size_t j_lo) {
    for (size_t j = j_hi[i]; j < j_lo; ++j) cand.push_back(x[i] - y[j]);
  });
  const size_t idx = static_cast<size_t>(k - c_lo - 1);
  if (idx >= cand.size()) return hi;
  std::nth_element(cand.begin(), cand.begin() + static_cast<std::ptrdiff_t>(idx), cand.end());
  return cand[idx];
}

// ============================================================== Mann–Whitney
namespace {

// P(U <= u) for u = 0..m*n under the null without ties. The counts of U are the
// coefficients of the Gaussian binomial [m+n choose n]_q, built as
// prod_{i=1..n} (1 - q^(m+i)) / (1 - q^i); after each step the coefficients are
// those of [m+i choose i]_q, so every value stays a non-negative integer
// (at most C(40, 20) ~ 1.4e11 for 20 x 20).
std::vector<double> exact_u_cdf_table(int m, int n) {
  const int64_t max_u = static_cast<int64_t>(m) * n;
  // Multiplying by (1 - q^(m+i)) reaches degree m*i + i before the division
  // brings it back to m*i: room for the last step's n extra coefficients.
  std::vector<int64_t> c(static_cast<size_t>(max_u + n) + 1, 0);
  c[0] = 1;
  int64_t degree = 0;
  for (int i = 1; i <= n; ++i) {
    const int64_t up = m + i;
    for (int64_t k = degree + up; k >= up; --k) c[k] -= c[k - up];
    degree += up;
    for (int64_t k = i; k <= degree; ++k) c[k] += c[k - i];
    degree -= i;
  }
  c.resize(static_cast<size_t>(max_u) + 1);
  std::vector<double> cdf(c.size());
  double running = 0;
  for (size_t k = 0; k < c.size(); ++k) cdf[k] = running += static_cast<double>(c[k]);
  for (double& v : cdf) v /= running;
  return cdf;
}

}  // namespace

double mann_whitney_exact_cdf(int m, int n, int64_t u) {
  if (m < 0 || n < 0 || u >= static_cast<int64_t>(m) * n) return 1;
  if (u < 0) return 0;
  return exact_u_cdf_table(m, n)[static_cast<size_t>(u)];
}

namespace {

// The (k+1)-th smallest difference given a = the k-th, in one pass: a itself
// when more than k differences are <= a, else the smallest difference above a
// (for each i that is x[i] - y[j_i - 1], j_i the first j with x[i] - y[j] <= a).
double next_pairwise_difference(std::span<const double> x, std::span<const double> y, double a, int64_t k) {
  int64_t at_most = 0;
  double above = INFINITY;
  size_t j = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    while (j < y.size() && x[i] - y[j] > a) ++j;
    at_most += static_cast<int64_t>(y.size() - j);
    if (j > 0) above = std::min(above, x[i] - y[j - 1]);
  }
  return at_most > k || !std::isfinite(above) ? a : above;
}

}  // namespace

MannWhitney mann_whitney(std::span<const double> x_in, std::span<const double> y_in, double confidence) {
  MannWhitney r;
  r.n_x = static_cast<int64_t>(x_in.size());
  r.n_y = static_cast<int64_t>(y_in.size());
  if (x_in.empty() || y_in.empty()) return r;
  const std::vector<double> x = sorted_copy(x_in), y = sorted_copy(y_in);
  const double nx = static_cast<double>(r.n_x), ny = static_cast<double>(r.n_y);
  const double total_n = nx + ny;

  // Mid-ranks over the merged sample; walking both sorted arrays keeps it O(n).
  double rank_sum_x = 0, tie_term = 0;
  bool ties = false;
  size_t i = 0, j = 0;
  double next_rank = 1;
  while (i < x.size() || j < y.size()) {
    double v = (j >= y.size() || (i < x.size() && x[i] <= y[j])) ? x[i] : y[j];
    size_t cx = 0, cy = 0;
    while (i < x.size() && x[i] == v) ++i, ++cx;
    while (j < y.size() && y[j] == v) ++j, ++cy;
    const double t = static_cast<double>(cx + cy);
    const double mid = next_rank + (t - 1) / 2;
    rank_sum_x += mid * static_cast<double>(cx);
    if (t > 1) {
      ties = true;
      tie_term += t * t * t - t;
    }
    next_rank += t;
  }
  r.u_x = rank_sum_x - nx * (nx + 1) / 2;

  const double alpha = 1 - confidence;
  const double pairs = nx * ny;
  const double mu = pairs / 2;
  const double sigma = std::sqrt(pairs / 12 * ((total_n + 1) - tie_term / (total_n * (total_n - 1))));
  int64_t c;  // rank of the lower interval end among the sorted differences
  const int64_t n_pairs = r.n_x * r.n_y;
  if (!ties && r.n_x <= kExactMaxN && r.n_y <= kExactMaxN) {
    r.exact = true;
    const int64_t u = static_cast<int64_t>(std::llround(r.u_x));
    const int mx = static_cast<int>(r.n_x), my = static_cast<int>(r.n_y);
    const std::vector<double> cdf = exact_u_cdf_table(mx, my);
    const double lower = cdf[static_cast<size_t>(u)];
    const double upper = u > 0 ? 1 - cdf[static_cast<size_t>(u - 1)] : 1.0;
    r.p_value = clamp01(2 * std::min(lower, upper));
    // R's qwilcox(alpha/2): the smallest q with P(U <= q) >= alpha/2.
    c = static_cast<int64_t>(std::lower_bound(cdf.begin(), cdf.end(), alpha / 2 * (1 - 1e-12)) - cdf.begin());
  } else {
    if (sigma > 0) {
      const double d = std::max(0.0, std::fabs(r.u_x - mu) - 0.5);
      r.z = (r.u_x >= mu ? d : -d) / sigma;
      r.p_value = clamp01(2 * normal_cdf(-std::fabs(r.z)));
    }
    // P(U <= q) ~ Phi((q + 0.5 - mu) / sigma) >= alpha/2.
    c = static_cast<int64_t>(std::ceil(mu - 0.5 - sigma * normal_quantile(1 - alpha / 2)));
  }
  c = std::clamp<int64_t>(c, 1, (n_pairs + 1) / 2);

  if (n_pairs % 2 == 1) {
    r.shift = kth_pairwise_difference(x, y, (n_pairs + 1) / 2);
  } else {
    const double a = kth_pairwise_difference(x, y, n_pairs / 2);
    const double b = next_pairwise_difference(x, y, a, n_pairs / 2);
    r.shift = a + (b - a) / 2;
  }
  r.shift_lo = kth_pairwise_difference(x, y, c);
  r.shift_hi = kth_pairwise_difference(x, y, n_pairs - c + 1);
  return r;
}

double relative_change(double value, double reference) {
  if (reference == 0) return 0;
  return (value - reference) / std::fabs(reference);
}

// ============================================================== counts
double fisher_exact(int64_t a, int64_t b, int64_t c, int64_t d, Alternative alt) {
  if (a < 0 || b < 0 || c < 0 || d < 0) return 1;
  const int64_t r1 = a + b, r2 = c + d, k = a + c, n = r1 + r2;
  if (r1 == 0 || r2 == 0 || k == 0 || k == n) return 1;
  const int64_t lo = std::max<int64_t>(0, k - r2), hi = std::min(r1, k);
  const double log_denominator = log_factorial(n) - log_factorial(k) - log_factorial(n - k);
  auto log_p = [&](int64_t x) {
    return log_factorial(r1) - log_factorial(x) - log_factorial(r1 - x) + log_factorial(r2) - log_factorial(k - x) -
           log_factorial(r2 - k + x) - log_denominator;
  };
  double p = 0;
  if (alt == Alternative::Greater) {
    for (int64_t x = a; x <= hi; ++x) p += std::exp(log_p(x));
  } else {
    const double observed = log_p(a) + std::log1p(kFisherRelativeTolerance);
    for (int64_t x = lo; x <= hi; ++x) {
      const double lp = log_p(x);
      if (lp <= observed) p += std::exp(lp);
    }
  }
  return clamp01(p);
}

Interval wilson_interval(int64_t k, int64_t n, double confidence) {
  if (n <= 0) return {0, 1};
  const double z = normal_quantile(1 - (1 - confidence) / 2);
  const double nn = static_cast<double>(n);
  const double p = static_cast<double>(std::clamp<int64_t>(k, 0, n)) / nn;
  const double z2 = z * z;
  const double denom = 1 + z2 / nn;
  const double center = (p + z2 / (2 * nn)) / denom;
  const double half = z / denom * std::sqrt(p * (1 - p) / nn + z2 / (4 * nn * nn));
  // At k = 0 (or n) the bound is exactly 0 (or 1); the formula only rounds to it.
  return {k <= 0 ? 0.0 : std::max(0.0, center - half), k >= n ? 1.0 : std::min(1.0, center + half)};
}

// ============================================================== trend
TheilSen theil_sen(std::span<const double> x_in, std::span<const double> y_in, double confidence) {
  TheilSen r;
  const size_t n = std::min(x_in.size(), y_in.size());
  r.n = static_cast<int64_t>(n);
  std::vector<std::pair<double, double>> pts(n);
  for (size_t i = 0; i < n; ++i) pts[i] = {x_in[i], y_in[i]};
  std::sort(pts.begin(), pts.end());

  std::vector<double> slopes;
  slopes.reserve(n * (n > 0 ? n - 1 : 0) / 2);
  for (size_t i = 0; i < n; ++i)
    for (size_t j = i + 1; j < n; ++j)
      if (pts[j].first > pts[i].first)
        slopes.push_back((pts[j].second - pts[i].second) / (pts[j].first - pts[i].first));
  std::vector<double> xs(n), ys(n);
  for (size_t i = 0; i < n; ++i) xs[i] = pts[i].first, ys[i] = pts[i].second;
  std::sort(ys.begin(), ys.end());  // xs is already sorted
  if (slopes.empty()) {
    r.intercept = median_sorted(ys);
    return r;
  }
  std::sort(slopes.begin(), slopes.end());
  r.slope = median_sorted(slopes);
  r.intercept = median_sorted(ys) - r.slope * median_sorted(xs);

  // Sen (1968), eq. 2.6: variance of Kendall's S with ties in x and in y.
  const double nn = static_cast<double>(n);
  const double var = (nn * (nn - 1) * (2 * nn + 5) - kendall_tie_term(xs) - kendall_tie_term(ys)) / 18;
  const double z = normal_quantile(1 - (1 - confidence) / 2);
  const double spread = z * std::sqrt(std::max(0.0, var));
  const double count = static_cast<double>(slopes.size());
  const int64_t last = static_cast<int64_t>(slopes.size()) - 1;
  // nearbyint rounds half to even, as numpy's round does in scipy's theilslopes.
  const int64_t upper = std::min(static_cast<int64_t>(std::nearbyint((count + spread) / 2)), last);
  const int64_t lower = std::max(static_cast<int64_t>(std::nearbyint((count - spread) / 2)) - 1, int64_t{0});
  r.lo = slopes[static_cast<size_t>(std::min(lower, last))];
  r.hi = slopes[static_cast<size_t>(std::max<int64_t>(upper, 0))];
  return r;
}

}  // namespace soak::stats
