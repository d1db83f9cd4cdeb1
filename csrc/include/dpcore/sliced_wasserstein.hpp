// Sliced Wasserstein kernels for particle gradient descent (PrivPGD, Donhauser et al. 2024):
// the loss between a cloud of particles in [0,1]^d and discrete targets on 2-D grids, its
// gradient, a sparse Adam step on the particles, and snapping particles to grid cells.
// PrivPGD runs these ~10^4 times on 10^5 particles, so every loop over particles is here.
#pragma once

#include <cstdint>
#include <vector>

namespace dpcore {

/// A target distribution on the grid of a 2-D marginal: attributes (attr_i, attr_j) of the
/// particles, a size_i x size_j grid whose cell (a, b) sits at the centre
/// ((a + 0.5) / size_i, (b + 0.5) / size_j) of [0,1]^2 (the paper's embedding, eq. 4), and
/// `weights`, size_i * size_j finite non-negative numbers in row-major order with a positive
/// sum (they are normalised by it).
struct GridTarget {
  int attr_i = 0;
  int attr_j = 0;
  std::int64_t size_i = 1;
  std::int64_t size_j = 1;
  const double* weights = nullptr;
};

/// An m x d matrix of doubles with element strides: row-major (row_stride = d, col_stride =
/// 1) or column-major (row_stride = 1, col_stride = m, which PrivPGD uses: a marginal reads two
/// contiguous columns). Every array a kernel takes with it shares its strides.
struct ParticleMatrix {
  double* data = nullptr;
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  std::int64_t row_stride = 0;
  std::int64_t col_stride = 1;
  double& at(std::int64_t r, std::int64_t c) const { return data[r * row_stride + c * col_stride]; }
};

/// Bits of the sort key: a projection is ranked by its position in the projected unit square
/// quantised to 2^-22 of that range; equal keys rank by particle
/// index. This is float32 resolution, and changes the loss by at most ~1e-7 of the range.
constexpr int kSlicedKeyBits = 22;

/// Sum over targets t of (1/K) sum_k W2^2(theta_tk # particles_t, theta_tk # target_t), the
/// Monte-Carlo sliced Wasserstein-2 loss (paper eq. 7-8), with the particles' projection
/// sorted and matched rank r -> the target's quantile at (r + 1/2) / m (the quantile function
/// of the weighted projected atoms: the continuous form of the paper's quantisation eq. 6).
///
/// particles: m x d, each in [0, 1] (only read). directions: targets.size() x K x 2
/// doubles, target t's k-th direction (theta_1, theta_2) on (attr_i, attr_j), used as given.
/// grad (optional, m x d, particles' strides): the loss's gradient w.r.t. the particles is *added* to it, only in
/// the targets' columns. threads: 0 = the kernels' default, 1 = serial. The result (loss and
/// gradient) is identical for every thread count.
/// Throws InvalidArgument for a bad shape, attribute, size, weight, direction, a particle
/// outside [0, 1] or NaN in a target's columns, m >= 2^32, or threads < 0.
double sliced_wasserstein(const ParticleMatrix& particles, const std::vector<GridTarget>& targets,
                          const double* directions, std::int64_t K, double* grad,
                          int threads = 0);

/// Adam hyper-parameters of particle_adam_step.
struct AdamOptions {
  double learning_rate = 0.1;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  /// Each gradient entry is kept with this probability and dropped otherwise (the paper
  /// drops 80%: keep 0.2), decided by a hash of (seed, step, row, column).
  double keep = 1.0;
  std::uint64_t seed = 0;
};

/// One step of sparse Adam (PyTorch's SparseAdam) on the columns `columns` of the m x d
/// particles x (grad, exp_avg and exp_avg_sq: same shape and strides): an entry whose gradient is non-zero and kept updates its moments exp_avg,
/// exp_avg_sq and itself, with the bias corrections of step number `step` (>= 1); every other
/// entry is left as is. Updated entries are clipped to [0, 1] (the paper's projection onto
/// the domain), and grad's entries in `columns` are reset to 0 for the next step.
/// Throws InvalidArgument for bad shapes, columns, step or options.
void particle_adam_step(const ParticleMatrix& x, double* grad, double* exp_avg,
                        double* exp_avg_sq, const std::vector<int>& columns, std::int64_t step,
                        const AdamOptions& options, int threads = 0);

/// The grid cell of each particle coordinate: codes[r * d + a] (row-major) = min(floor(x * sizes[a]),
/// sizes[a] - 1), the cell whose centre (c + 0.5) / sizes[a] is nearest (paper Alg. 3 line 8).
/// Throws InvalidArgument for a size < 1, a wrong sizes length, or a coordinate outside [0, 1].
void snap_to_grid(const ParticleMatrix& particles, const std::vector<std::int64_t>& sizes,
                  std::int64_t* codes);

}  // namespace dpcore
