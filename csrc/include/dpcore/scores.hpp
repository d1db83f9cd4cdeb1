// The exponential mechanism's score arithmetic over many candidates at once (Curator.select).
//
// A candidate's score needs Σ |c_i - round(G r_i)| over its cells: c the data's marginal on
// the score grid (integers), r the public reference, G = 2^k the grid. AIM scores ~5,000
// candidates (2.6M cells) a round at 100 attributes; NumPy did it in ~8 passes over the cells
// with temporaries of the same size. These kernels do it in one pass each, computing the same
// integers: rounding is half-to-even like np.rint, the sum of integers is exact in any order
// while it does not overflow, and a segment whose sum could overflow is flagged so the caller
// recomputes it with unbounded integers. Pure arithmetic on the caller's arrays: the privacy
// accounting (charge first, then read) stays in the curator.
#pragma once

#include <cstdint>

namespace dpcore {

/// max |v_i| over n values, or +inf when a value is NaN or ±inf (0 for n = 0).
double max_abs_finite(const double* v, std::uint64_t n);

/// Copies n values from `src` to `dst` (not overlapping) and returns max_abs_finite of them,
/// in one pass over the source.
double copy_max_abs_finite(const double* src, double* dst, std::uint64_t n);

/// For k consecutive segments of `sizes[r]` cells of the n cells: out[r] = Σ |cells_i -
/// rint(grid * ref_i)|, exact. Needs |cells_i| < 2^60 and |grid * ref_i| < 2^60
/// (InvalidArgument otherwise, NaN included; the curator checks both first); a segment whose
/// running sum would leave int64 gets overflow[r] = 1 (out[r] then 0) and must be recomputed
/// exactly by the caller. InvalidArgument when a size is negative or the sizes do not sum to
/// n (checked without overflow).
void grid_l1(const std::int64_t* cells, const double* ref, std::uint64_t n, double grid,
             const std::int64_t* sizes, std::uint64_t k, std::int64_t* out,
             std::uint8_t* overflow);

}  // namespace dpcore
