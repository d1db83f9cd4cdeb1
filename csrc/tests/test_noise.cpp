// Exact discrete Gaussian: argument checks, reproducibility, and a chi-square goodness-of-fit
// test against the exact pmf. Each chi-square check has a false-failure rate of about 1e-6
// for a fresh seed (the seeds are fixed, so the test is deterministic).
#include <cmath>
#include <cstdint>
#include <map>
#include <vector>

#include "check.hpp"
#include "dpcore/errors.hpp"
#include "dpcore/noise.hpp"

namespace {

// Upper 1e-6 quantile of chi-square(df), Wilson-Hilferty approximation (z = 4.7534).
double chi2_critical(int df) {
  const double k = df, z = 4.7534243;
  const double c = 1.0 - 2.0 / (9.0 * k) + z * std::sqrt(2.0 / (9.0 * k));
  return k * c * c * c;
}

// Chi-square statistic of n draws against N_Z(0, sigma_sq). Bins -hi..hi, each with expected
// count >= 20; the outer bins also hold their tails. Returns (statistic, degrees of freedom).
std::pair<double, int> chi_square(const std::vector<std::int64_t>& draws, long double sigma_sq) {
  const auto n = static_cast<long double>(draws.size());
  const int reach = static_cast<int>(std::ceil(12.0L * std::sqrt(sigma_sq))) + 5;
  std::map<int, long double> pmf;
  long double z = 0.0L;
  for (int x = -reach; x <= reach; ++x)
    z += pmf[x] = std::exp(-static_cast<long double>(x) * x / (2 * sigma_sq));
  int hi = 0;
  while (pmf[hi + 1] / z * n >= 20.0L) ++hi;
  std::map<int, long double> observed, expected;
  for (auto x : draws) observed[x < -hi ? -hi : (x > hi ? hi : int(x))] += 1;
  for (int x = -reach; x <= reach; ++x) expected[x < -hi ? -hi : (x > hi ? hi : x)] += pmf[x] / z * n;
  double stat = 0.0;
  for (int x = -hi; x <= hi; ++x) {
    const long double diff = observed[x] - expected[x];
    stat += static_cast<double>(diff * diff / expected[x]);
  }
  return {stat, 2 * hi};
}

void test_arguments() {
  using dpcore::InvalidArgument;
  CHECK_THROWS(dpcore::discrete_gaussian(0, 1, 5, 1), InvalidArgument);
  CHECK_THROWS(dpcore::discrete_gaussian(1, 0, 5, 1), InvalidArgument);
  CHECK_THROWS(dpcore::discrete_gaussian(1, 1, -1, 1), InvalidArgument);
  // 2 * num * den * t^2 >= 2^128: outside the exact range.
  CHECK_THROWS(dpcore::discrete_gaussian(~std::uint64_t(0), 1, 1, 1), InvalidArgument);
  CHECK(dpcore::discrete_gaussian(3, 2, 0, 1).empty());
}

void test_reproducible() {
  CHECK(dpcore::discrete_gaussian(7, 3, 1000, 42) == dpcore::discrete_gaussian(7, 3, 1000, 42));
  CHECK(dpcore::discrete_gaussian(7, 3, 1000, 42) != dpcore::discrete_gaussian(7, 3, 1000, 43));
  // num/den is reduced first: 14/6 is the same distribution and the same stream as 7/3.
  CHECK(dpcore::discrete_gaussian(14, 6, 100, 5) == dpcore::discrete_gaussian(7, 3, 100, 5));
}

void test_goodness_of_fit() {
  struct Case {
    std::uint64_t num, den;
    std::uint64_t seed;
  };
  // Small, fractional and large variances, and one with 2^62-sized numerator and denominator
  // (the 256-bit path of the acceptance test runs on most proposals).
  const std::uint64_t big = std::uint64_t(1) << 62;
  const Case cases[] = {{1, 4, 1}, {2, 1, 2}, {7, 3, 3}, {2500, 1, 4}, {big + 1, big - 1, 5}};
  for (const auto& c : cases) {
    const auto draws = dpcore::discrete_gaussian(c.num, c.den, 100000, c.seed);
    const long double sigma_sq = (long double)c.num / (long double)c.den;
    const auto [stat, df] = chi_square(draws, sigma_sq);
    CHECK(df >= 2);
    if (!(stat <= chi2_critical(df)))
      std::fprintf(stderr, "sigma^2 = %llu/%llu: chi2 %.1f > %.1f (df %d)\n",
                   (unsigned long long)c.num, (unsigned long long)c.den, stat,
                   chi2_critical(df), df);
    CHECK(stat <= chi2_critical(df));
    double mean = 0.0;
    for (auto x : draws) mean += double(x);
    mean /= double(draws.size());
    // |mean| <= 6 standard errors: false-failure rate ~2e-9.
    CHECK(std::fabs(mean) <= 6.0 * std::sqrt(double(sigma_sq) / double(draws.size())));
  }
}

}  // namespace

int main() {
  test_arguments();
  test_reproducible();
  test_goodness_of_fit();
  return dpcore_test::report();
}
