#include "dpcore/scores.hpp"

#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>

#include "dpcore/errors.hpp"
#include "vector_math.hpp"

namespace dpcore {

namespace {

constexpr double kLimit = 0x1p60;
constexpr std::int64_t kCellLimit = std::int64_t{1} << 60;

// Whether every |cells_i| is below 2^60: the largest and smallest in eight lanes each.
DPCORE_VECTOR_KERNEL bool cells_in_range(const std::int64_t* __restrict cells, std::uint64_t n) {
  std::int64_t hi[8] = {}, lo[8] = {};
  std::uint64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int j = 0; j < 8; ++j) {
      hi[j] = cells[i + j] > hi[j] ? cells[i + j] : hi[j];
      lo[j] = cells[i + j] < lo[j] ? cells[i + j] : lo[j];
    }
  bool fine = true;
  for (; i < n; ++i) fine = fine && cells[i] < kCellLimit && cells[i] > -kCellLimit;
  for (int j = 0; j < 8; ++j) fine = fine && hi[j] < kCellLimit && lo[j] > -kCellLimit;
  return fine;
}

// Σ |cells - rint(grid ref)| over n cells, all in range. Each term is below 2^61, so a pair
// of terms is below 2^62 and four pairs are summed with overflow checks once per 8 x 2 cells:
// exact (integer addition is associative), with no check in the inner loop. False when the
// sum would leave int64.
DPCORE_VECTOR_KERNEL bool l1_segment(const std::int64_t* __restrict cells,
                                     const double* __restrict ref, double grid, std::uint64_t n,
                                     std::int64_t* total) {
  std::int64_t sum = 0;
  bool overflow = false;
  std::uint64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    std::int64_t lanes[8];
    for (int j = 0; j < 8; ++j) {
      const std::int64_t a = cells[i + j] - static_cast<std::int64_t>(std::nearbyint(grid * ref[i + j]));
      const std::int64_t b =
          cells[i + 8 + j] - static_cast<std::int64_t>(std::nearbyint(grid * ref[i + 8 + j]));
      lanes[j] = (a < 0 ? -a : a) + (b < 0 ? -b : b);   // < 2^62
    }
    std::int64_t block = 0;
    for (int j = 0; j < 8; j += 2) overflow |= __builtin_add_overflow(block, lanes[j] + lanes[j + 1], &block);
    overflow |= __builtin_add_overflow(sum, block, &sum);
  }
  for (; i < n; ++i) {
    const std::int64_t a = cells[i] - static_cast<std::int64_t>(std::nearbyint(grid * ref[i]));
    overflow |= __builtin_add_overflow(sum, a < 0 ? -a : a, &sum);
  }
  *total = sum;
  return !overflow;
}

}  // namespace

namespace {

// The largest |x| of v, or +inf when some value is NaN or ±inf: |x| <= top for every finite
// x, and NaN and ±inf are caught by one check of the sum of |x| - |x| (NaN for them, 0
// otherwise), so the loop stays a plain vectorisable max over 8 lanes. kStore: each value
// also stored into dst (the curator's copy of a 2.6M-cell reference and its range check
// were two passes over the source).
template <bool kStore>
double scan_max_abs(const double* __restrict v, double* __restrict dst, std::uint64_t n) {
  double lanes[8] = {};
  double bad[8] = {};
  std::uint64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int j = 0; j < 8; ++j) {
      const double x = v[i + j];
      if constexpr (kStore) dst[i + j] = x;
      const double a = std::fabs(x);
      lanes[j] = a > lanes[j] ? a : lanes[j];
      bad[j] += a - a;
    }
  double top = 0.0, flag = 0.0;
  for (; i < n; ++i) {
    const double x = v[i];
    if constexpr (kStore) dst[i] = x;
    const double a = std::fabs(x);
    top = a > top ? a : top;
    flag += a - a;
  }
  for (int j = 0; j < 8; ++j) {
    top = lanes[j] > top ? lanes[j] : top;
    flag += bad[j];
  }
  return flag == 0.0 ? top : std::numeric_limits<double>::infinity();
}

}  // namespace

double max_abs_finite(const double* v, std::uint64_t n) {
  return scan_max_abs<false>(v, nullptr, n);
}

double copy_max_abs_finite(const double* __restrict src, double* __restrict dst,
                           std::uint64_t n) {
  return scan_max_abs<true>(src, dst, n);
}

void grid_l1(const std::int64_t* cells, const double* ref, std::uint64_t n, double grid,
             const std::int64_t* sizes, std::uint64_t k, std::int64_t* out,
             std::uint8_t* overflow) {
  for (std::uint64_t r = 0; r < k; ++r)
    if (sizes[r] < 0)
      throw InvalidArgument("segment sizes must be >= 0, got " + std::to_string(sizes[r]));
  std::uint64_t all = 0;
  for (std::uint64_t r = 0; r < k; ++r) {
    if (static_cast<std::uint64_t>(sizes[r]) > n - all)   // a wrapped sum would read past n
      throw InvalidArgument("segment sizes must sum to the " + std::to_string(n) +
                            " cells, got more");
    all += static_cast<std::uint64_t>(sizes[r]);
  }
  if (all != n)
    throw InvalidArgument("segment sizes must sum to the " + std::to_string(n) + " cells, got " +
                          std::to_string(all));
  // max |grid ref_i| = |grid| max |ref_i|: rounding a product by a constant is monotone
  if (!cells_in_range(cells, all) || !(std::fabs(grid) * max_abs_finite(ref, all) < kLimit))
    throw InvalidArgument("cells and grid * reference must be below 2^60 in magnitude, got a "
                          "larger or non-finite value");
  std::uint64_t at = 0;
  for (std::uint64_t r = 0; r < k; ++r) {
    const auto n = static_cast<std::uint64_t>(sizes[r]);
    std::int64_t total = 0;
    const bool fine = l1_segment(cells + at, ref + at, grid, n, &total);
    out[r] = fine ? total : 0;
    overflow[r] = fine ? 0 : 1;
    at += n;
  }
}

}  // namespace dpcore
