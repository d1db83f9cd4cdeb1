// Exact discrete Gaussian: the ChaCha20 block function against RFC 8439's test vector,
// argument checks, reproducibility, and a chi-square goodness-of-fit test against the exact pmf. Each chi-square check has a false-failure rate of about 1e-6
// for a fresh seed (the seeds are fixed, so the test is deterministic).
#include <array>
#include <cmath>
#include <cstdint>
#include <map>
#include <vector>

#include "check.hpp"
#include "dpcore/errors.hpp"
#include "dpcore/noise.hpp"

namespace {

dpcore::NoiseKey key_from(std::uint64_t seed) { return {seed, 1, 2, 3}; }

void test_chacha20_rfc8439_vector() {
  // RFC 8439 Sec. 2.3.2: key 00 01 .. 1f, nonce 00 00 00 09 00 00 00 4a 00 00 00 00, counter 1.
  std::array<std::uint32_t, 8> key{};
  for (int i = 0; i < 8; ++i)
    for (int j = 0; j < 4; ++j) key[i] |= std::uint32_t(4 * i + j) << (8 * j);
  const std::array<std::uint32_t, 16> expected{
      0xe4e7f110, 0x15593bd1, 0x1fdd0f50, 0xc47120a3, 0xc7f4d1c7, 0x0368c033,
      0x9aaa2204, 0x4e6cd4c3, 0x466482d2, 0x09aa9f07, 0x05d7c214, 0xa2028bd9,
      0xd19c12b5, 0xb94e16de, 0xe883d0cb, 0x4e3c50a2};
  CHECK(dpcore::chacha20_block(key, 1, {0x09000000, 0x4a000000, 0x00000000}) == expected);
}

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
  const auto key = key_from(1);
  CHECK_THROWS(dpcore::discrete_gaussian(0, 1, 5, key), InvalidArgument);
  CHECK_THROWS(dpcore::discrete_gaussian(1, 0, 5, key), InvalidArgument);
  CHECK_THROWS(dpcore::discrete_gaussian(1, 1, -1, key), InvalidArgument);
  // 2 * num * den * t^2 >= 2^128: outside the exact range.
  CHECK_THROWS(dpcore::discrete_gaussian(~std::uint64_t(0), 1, 1, key), InvalidArgument);
  CHECK(dpcore::discrete_gaussian(3, 2, 0, key).empty());
}

void test_reproducible() {
  const auto k42 = key_from(42), k43 = key_from(43), k5 = key_from(5);
  CHECK(dpcore::discrete_gaussian(7, 3, 1000, k42) == dpcore::discrete_gaussian(7, 3, 1000, k42));
  CHECK(dpcore::discrete_gaussian(7, 3, 1000, k42) != dpcore::discrete_gaussian(7, 3, 1000, k43));
  // Another nonce under the same key is another stream.
  CHECK(dpcore::discrete_gaussian(7, 3, 1000, k42, 1) != dpcore::discrete_gaussian(7, 3, 1000, k42, 0));
  // num/den is reduced first: 14/6 is the same distribution and the same stream as 7/3.
  CHECK(dpcore::discrete_gaussian(14, 6, 100, k5) == dpcore::discrete_gaussian(7, 3, 100, k5));
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
    const auto draws = dpcore::discrete_gaussian(c.num, c.den, 100000, key_from(c.seed));
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
  test_chacha20_rfc8439_vector();
  test_arguments();
  test_reproducible();
  test_goodness_of_fit();
  return dpcore_test::report();
}
