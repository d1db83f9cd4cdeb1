// Unit tests for the selection score kernels against the sums written out cell by cell.
#include "dpcore/scores.hpp"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "check.hpp"
#include "dpcore/errors.hpp"

using namespace dpcore;

__extension__ typedef __int128 Wide;  // exact sums past int64 (a GCC/Clang extension)

// Σ |c - rint(g r)| per segment, in 128-bit integers (no overflow below 2^64 cells of 2^61).
static std::vector<Wide> naive(const std::vector<std::int64_t>& cells,
                                   const std::vector<double>& ref, double grid,
                                   const std::vector<std::int64_t>& sizes) {
  std::vector<Wide> out;
  std::size_t at = 0;
  for (std::int64_t n : sizes) {
    Wide sum = 0;
    for (std::int64_t i = 0; i < n; ++i, ++at) {
      const Wide d = Wide(cells[at]) - Wide(std::nearbyint(grid * ref[at]));
      sum += d < 0 ? -d : d;
    }
    out.push_back(sum);
  }
  return out;
}

// Random segments (0 to 40 cells, so both the 16-cell blocks and the tail), small and
// near-limit values, ties of the rounding: the exact sum, or the flag exactly where the sum
// does not fit int64.
static void test_grid_l1_matches_naive_sums() {
  std::mt19937_64 rng(5);
  std::uniform_int_distribution<int> count(0, 40), pick(0, 3);
  for (int trial = 0; trial < 300; ++trial) {
    const bool big = pick(rng) == 0;
    const std::int64_t top = big ? (std::int64_t{1} << 60) - 1 : 1000;
    std::uniform_int_distribution<std::int64_t> cell(-top, top);
    std::uniform_real_distribution<double> value(big ? -0x1p39 : -2.0, big ? 0x1p39 : 2.0);
    std::vector<std::int64_t> sizes(std::size_t(1 + pick(rng)));
    std::vector<std::int64_t> cells;
    std::vector<double> ref;
    for (auto& n : sizes) {
      n = count(rng);
      for (std::int64_t i = 0; i < n; ++i) {
        cells.push_back(cell(rng));
        ref.push_back(pick(rng) == 0 ? (double(cell(rng) % 4096) + 0.5) / 0x1p20 : value(rng));
      }
    }
    std::vector<std::int64_t> out(sizes.size());
    std::vector<std::uint8_t> overflow(sizes.size());
    grid_l1(cells.data(), ref.data(), cells.size(), 0x1p20, sizes.data(), sizes.size(), out.data(),
            overflow.data());
    const std::vector<Wide> want = naive(cells, ref, 0x1p20, sizes);
    for (std::size_t r = 0; r < sizes.size(); ++r) {
      const bool fits = want[r] <= std::numeric_limits<std::int64_t>::max();
      if (overflow[r]) {
        CHECK(out[r] == 0);
        CHECK(want[r] > (Wide(1) << 61));   // flagged only near int64's end
      } else {
        CHECK(fits && Wide(out[r]) == want[r]);
      }
    }
  }
}

static void test_grid_l1_refuses_out_of_range_values() {
  const std::vector<std::int64_t> sizes{2};
  std::vector<std::int64_t> out(1);
  std::vector<std::uint8_t> overflow(1);
  for (double bad : {std::nan(""), std::numeric_limits<double>::infinity(), 0x1p41}) {
    const std::vector<double> ref{0.0, bad};
    const std::vector<std::int64_t> cells{0, 0};
    CHECK_THROWS(grid_l1(cells.data(), ref.data(), cells.size(), 0x1p20, sizes.data(), 1, out.data(),
                         overflow.data()), InvalidArgument);
  }
  const std::vector<double> ref{0.0, 0.0};
  const std::vector<std::int64_t> cells{std::int64_t{1} << 60, 0};
  CHECK_THROWS(grid_l1(cells.data(), ref.data(), cells.size(), 0x1p20, sizes.data(), 1, out.data(),
                       overflow.data()), InvalidArgument);
  const std::vector<std::int64_t> negative{-1};
  CHECK_THROWS(grid_l1(cells.data(), ref.data(), cells.size(), 1.0, negative.data(), 1, out.data(),
                       overflow.data()), InvalidArgument);
}

// review 16c: sizes that wrap around to the cells' count passed the binding's check and the
// kernel walked past the arrays; and no test put an out-of-range cell in the 8-lane part.
static void test_grid_l1_checks_sizes_and_every_lane() {
  std::vector<std::int64_t> out(3);
  std::vector<std::uint8_t> overflow(3);
  const std::vector<double> ref3(3, 0.0);
  const std::vector<std::int64_t> cells3(3, 0);
  const std::int64_t big = std::numeric_limits<std::int64_t>::max();
  for (const std::vector<std::int64_t>& sizes :
       {std::vector<std::int64_t>{big, big, 5}, std::vector<std::int64_t>{1, 1},
        std::vector<std::int64_t>{2, 2}})
    CHECK_THROWS(grid_l1(cells3.data(), ref3.data(), cells3.size(), 0x1p20, sizes.data(),
                         sizes.size(), out.data(), overflow.data()), InvalidArgument);
  const std::vector<double> ref(16, 0.0);
  const std::vector<std::int64_t> sizes{16};
  for (std::size_t at = 0; at < 16; ++at)
    for (std::int64_t bad : {std::int64_t{1} << 60, -(std::int64_t{1} << 60)}) {
      std::vector<std::int64_t> cells(16, 0);
      cells[at] = bad;
      CHECK_THROWS(grid_l1(cells.data(), ref.data(), cells.size(), 0x1p20, sizes.data(), 1,
                           out.data(), overflow.data()), InvalidArgument);
    }
}

static void test_max_abs_finite() {
  const std::vector<double> v{1.0, -7.5, 3.0, 0.0, -0.0, 2.0, 6.0, -1.0, 4.0, 5.0};
  CHECK(max_abs_finite(v.data(), v.size()) == 7.5);
  CHECK(max_abs_finite(v.data(), 0) == 0.0);
  for (std::size_t at = 0; at < v.size(); ++at) {
    std::vector<double> w = v;
    w[at] = std::nan("");
    CHECK(std::isinf(max_abs_finite(w.data(), w.size())));
    w[at] = -std::numeric_limits<double>::infinity();
    CHECK(std::isinf(max_abs_finite(w.data(), w.size())));
  }
}

// The curator's one-pass copy and range check against the copy and max_abs_finite, on every
// length up to 20 (the 8-lane loop and its tail) with a NaN or an infinity anywhere.
static void test_copy_max_abs_finite() {
  std::mt19937_64 rng(9);
  std::uniform_real_distribution<double> value(-1e6, 1e6);
  for (std::size_t n = 0; n <= 20; ++n)
    for (std::size_t bad = 0; bad <= n; ++bad) {   // bad == n: all finite
      std::vector<double> v(n), dst(n, 42.0);
      for (double& x : v) x = value(rng);
      if (bad < n) v[bad] = bad % 2 ? std::numeric_limits<double>::quiet_NaN()
                                    : -std::numeric_limits<double>::infinity();
      const double got = copy_max_abs_finite(v.data(), dst.data(), n);
      CHECK(n == 0 || std::memcmp(v.data(), dst.data(), n * sizeof(double)) == 0);
      const double want = max_abs_finite(v.data(), n);
      CHECK(got == want);
      CHECK(std::isinf(got) == (bad < n));
    }
}

int main() {
  test_grid_l1_matches_naive_sums();
  test_grid_l1_refuses_out_of_range_values();
  test_grid_l1_checks_sizes_and_every_lane();
  test_max_abs_finite();
  test_copy_max_abs_finite();
  return dpcore_test::report();
}
