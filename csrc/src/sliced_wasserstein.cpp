// Sliced Wasserstein loss and gradient, sparse Adam and grid snapping (see the header).
//
// Cost. A particle's rank matters only through the target atom it is matched to, and atoms
// cover whole runs of ranks. So, per target and direction: one pass projects the particles
// and counts them into up to 2^14 buckets by the high bits of their key; a walk over the
// buckets finds each bucket's rank range and whether one atom covers all of it; a second pass
// settles every particle of such a bucket at once (sequential, no sort); only the particles of
// buckets that straddle an atom boundary (at most one bucket per boundary) are sorted, by
// (key, index). That is the same matching as a full stable sort by key, in two passes.
//
// Determinism: the work is cut into tasks (target, half of its directions) that each write
// their own gradient buffer; buffers are added in task order after the parallel part, so
// the result does not depend on how tasks were dealt to threads.
#include "dpcore/sliced_wasserstein.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <utility>

#include "dpcore/errors.hpp"
#include "parallel.hpp"

namespace dpcore {

namespace {

constexpr std::uint32_t kKeyMax = (std::uint32_t{1} << kSlicedKeyBits) - 1;
// Targets whose gradient buffers (m x 2 doubles per task) are alive at once: bounds the
// memory at 2 * kTargetGroup * 16 bytes a particle.
constexpr std::size_t kTargetGroup = 8;
// Directions of one target are split into this many tasks (a fixed number, so the summation
// order, and the result, do not depend on the thread count).
constexpr std::int64_t kSplits = 2;

void check_threads(int threads) {
  if (threads < 0)
    throw InvalidArgument("threads must be >= 0 (0 = the default), got " +
                          std::to_string(threads));
}

unsigned parts_for(std::size_t tasks, int threads) {
  const unsigned want = threads == 0 ? kernel_threads() : static_cast<unsigned>(threads);
  return static_cast<unsigned>(std::max<std::size_t>(1, std::min<std::size_t>(want, tasks)));
}

void check_matrix(const ParticleMatrix& x, std::int64_t min_cols) {
  if (x.data == nullptr) throw InvalidArgument("particles must not be null");
  if (x.rows < 1 || x.rows > std::int64_t{0xFFFFFFFF})
    throw InvalidArgument("particle count must be in [1, 2^32), got " + std::to_string(x.rows));
  if (x.cols < min_cols)
    throw InvalidArgument("particles need >= " + std::to_string(min_cols) + " columns, got " +
                          std::to_string(x.cols));
  const bool row_major = x.col_stride == 1 && x.row_stride == x.cols;
  const bool col_major = x.row_stride == 1 && x.col_stride == x.rows;
  if (!row_major && !col_major)
    throw InvalidArgument("particles must be a contiguous row- or column-major matrix");
}

void check_targets(std::int64_t d, const std::vector<GridTarget>& targets) {
  for (std::size_t t = 0; t < targets.size(); ++t) {
    const GridTarget& g = targets[t];
    const std::string where = "target " + std::to_string(t) + ": ";
    if (g.attr_i < 0 || g.attr_i >= d || g.attr_j < 0 || g.attr_j >= d || g.attr_i == g.attr_j)
      throw InvalidArgument(where + "attributes must be two distinct columns in [0, " +
                            std::to_string(d) + "), got (" + std::to_string(g.attr_i) + ", " +
                            std::to_string(g.attr_j) + ")");
    if (g.size_i < 1 || g.size_j < 1 || g.size_i > (std::int64_t{1} << 31) ||
        g.size_j > (std::int64_t{1} << 31) || g.size_i * g.size_j > (std::int64_t{1} << 31))
      throw InvalidArgument(where + "grid must be at least 1 x 1 and at most 2^31 cells, got " +
                            std::to_string(g.size_i) + " x " + std::to_string(g.size_j));
    if (g.weights == nullptr) throw InvalidArgument(where + "weights are missing");
    double total = 0.0;
    for (std::int64_t c = 0; c < g.size_i * g.size_j; ++c) {
      const double w = g.weights[c];
      if (!(std::isfinite(w) && w >= 0.0))
        throw InvalidArgument(where + "weights must be finite and >= 0, got " +
                              std::to_string(w) + " at cell " + std::to_string(c));
      total += w;
    }
    if (!(total > 0.0 && std::isfinite(total)))
      throw InvalidArgument(where + "weights must have a finite sum > 0, got " +
                            std::to_string(total));
  }
}

// Scratch space of one thread, reused by all its tasks.
struct Workspace {
  std::vector<double> a, b;                   // the target's two columns, contiguous
  std::vector<double> y;                      // projections, by particle
  std::vector<std::uint32_t> key;             // sort keys, by particle
  std::vector<std::uint32_t> start, fill;     // per bucket: first rank, members placed
  std::vector<double> bucket_value;           // per bucket: its atom's projection, or NaN
  std::vector<std::uint32_t> members;         // particles of straddling buckets, by bucket
  std::vector<std::uint64_t> fine;            // (key, index) of one straddling bucket
  std::vector<double> atom_value, cumulative; // target atoms, sorted by projection
  std::vector<std::int64_t> atom_index;
};

struct TaskResult {
  double loss = 0.0;
};

// Bucket bits: about one particle a bucket, between 2^4 and 2^14 buckets (the counts then stay
// in L1/L2; more buckets measured slower at 10^5 particles).
int bucket_bits(std::int64_t m) {
  int bits = 4;
  while (bits < 14 && (std::int64_t{1} << bits) < m) ++bits;
  return bits;
}

// One target, directions [k0, k1): adds (1/K) W2^2 per direction to the result's loss and its
// gradient (columns attr_i, attr_j) to buf (m x 2).
void run_task(const ParticleMatrix& x, const GridTarget& g, const double* theta, std::int64_t K,
              std::int64_t k0, std::int64_t k1, double* buf, Workspace& ws, TaskResult& result) {
  const std::int64_t all_cells = g.size_i * g.size_j;
  const auto n = static_cast<std::size_t>(x.rows);
  const double inv_m = 1.0 / static_cast<double>(x.rows);
  const int bits = bucket_bits(x.rows);
  const int shift = kSlicedKeyBits - bits;
  const std::size_t buckets = std::size_t{1} << bits;
  // The target's two columns, contiguous: read in place from a column-major matrix (the
  // descent's layout), copied otherwise. Their range was checked once by the caller.
  const double* col_a = &x.at(0, g.attr_i);
  const double* col_b = &x.at(0, g.attr_j);
  if (x.row_stride != 1) {
    for (std::size_t r = 0; r < n; ++r) {
      ws.a[r] = x.at(std::int64_t(r), g.attr_i);
      ws.b[r] = x.at(std::int64_t(r), g.attr_j);
    }
    col_a = ws.a.data();
    col_b = ws.b.data();
  }
  const double step_scale = 2.0 * inv_m / static_cast<double>(K);
  for (std::int64_t k = k0; k < k1; ++k) {
    const double t1 = theta[2 * k], t2 = theta[2 * k + 1];
    // The projected unit square is [lo, hi]: keys are positions in it.
    const double lo = std::min(0.0, t1) + std::min(0.0, t2);
    const double hi = std::max(0.0, t1) + std::max(0.0, t2);
    const double scale = hi > lo ? static_cast<double>(kKeyMax) / (hi - lo) : 0.0;

    // The target's atoms of positive weight (a projected marginal is mostly zeros), sorted by
    // projection (ties by cell index), and their cumulative weights. Zero-weight atoms take no
    // rank, so leaving them out changes nothing.
    std::int64_t cells = 0;
    for (std::int64_t c = 0; c < all_cells; ++c) {
      if (!(g.weights[c] > 0.0)) continue;
      ws.atom_index[std::size_t(cells++)] = c;
      const double ci = (static_cast<double>(c / g.size_j) + 0.5) / static_cast<double>(g.size_i);
      const double cj = (static_cast<double>(c % g.size_j) + 0.5) / static_cast<double>(g.size_j);
      ws.atom_value[std::size_t(c)] = t1 * ci + t2 * cj;
    }
    std::vector<std::int64_t>& idx = ws.atom_index;
    std::sort(idx.begin(), idx.begin() + cells, [&](std::int64_t p, std::int64_t q) {
      const double vp = ws.atom_value[std::size_t(p)], vq = ws.atom_value[std::size_t(q)];
      return vp < vq || (vp == vq && p < q);
    });
    double total = 0.0;
    for (std::int64_t s = 0; s < cells; ++s) {
      total += g.weights[idx[std::size_t(s)]];
      ws.cumulative[std::size_t(s)] = total;
    }
    // Rank r is matched to sorted atom s(r): the first whose cumulative weight exceeds
    // (r + 1/2) / m of the total. s(r) is non-decreasing in r.
    auto advance = [&](std::int64_t s, std::uint64_t r) {
      const double u = (static_cast<double>(r) + 0.5) * inv_m * total;
      while (s < cells - 1 && ws.cumulative[std::size_t(s)] <= u) ++s;
      return s;
    };
    auto value = [&](std::int64_t s) { return ws.atom_value[std::size_t(idx[std::size_t(s)])]; };

    // Pass 1: projections and keys (a loop the compiler can vectorise: no stores through
    // aliasing pointers, an int32 conversion), then the bucket counts in a loop of their own.
    const double* __restrict pa = col_a;
    const double* __restrict pb = col_b;
    double* __restrict py = ws.y.data();
    std::uint32_t* __restrict pkey = ws.key.data();
    // not restrict: ws.start is read and written through the vector and bucket_start below
    std::uint32_t* counts = ws.start.data();
    for (std::size_t r = 0; r < n; ++r) {
      const double y = t1 * pa[r] + t2 * pb[r];
      py[r] = y;
      double pos = (y - lo) * scale;
      pos = pos > 0.0 ? pos : 0.0;  // rounding at the square's edge
      pos = pos < double(kKeyMax) ? pos : double(kKeyMax);
      pkey[r] = static_cast<std::uint32_t>(static_cast<std::int32_t>(pos));
    }
    std::fill(counts, counts + buckets, 0u);
    for (std::size_t r = 0; r < n; ++r) ++counts[pkey[r] >> shift];
    // Each bucket's rank range [first, first + count) and its atom when one atom covers it.
    std::uint32_t first = 0;
    std::int64_t s = 0;
    for (std::size_t h = 0; h < buckets; ++h) {
      const std::uint32_t size = ws.start[h];
      ws.start[h] = first;
      ws.fill[h] = 0;
      if (size == 0) continue;
      s = advance(s, first);
      const std::int64_t last = advance(s, first + size - 1);
      ws.bucket_value[h] = last == s ? value(s) : std::nan("");
      first += size;
    }
    // Pass 2: particles of uniform buckets are settled here; the others are set aside.
    const double* __restrict bucket_value = ws.bucket_value.data();
    const std::uint32_t* __restrict bucket_start = ws.start.data();
    std::uint32_t* __restrict bucket_fill = ws.fill.data();
    std::uint32_t* __restrict members = ws.members.data();
    double* __restrict out = buf;
    double loss = 0.0;
    for (std::size_t r = 0; r < n; ++r) {
      const std::size_t h = pkey[r] >> shift;
      const double q = bucket_value[h];
      if (std::isnan(q)) {
        members[bucket_start[h] + bucket_fill[h]++] = static_cast<std::uint32_t>(r);
        continue;
      }
      const double diff = py[r] - q;
      loss += diff * diff;
      out[2 * r] += step_scale * diff * t1;
      out[2 * r + 1] += step_scale * diff * t2;
    }
    // Straddling buckets: sort their particles by (key, index) and walk their ranks. The
    // matched atom only grows with the rank, so the walk carries on from the last bucket's.
    std::int64_t t = 0;
    for (std::size_t h = 0; h < buckets; ++h) {
      if (bucket_fill[h] == 0) continue;
      const std::uint32_t begin = bucket_start[h], count_h = bucket_fill[h];
      ws.fine.resize(count_h);
      for (std::uint32_t i = 0; i < count_h; ++i) {
        const std::uint32_t p = members[begin + i];
        ws.fine[i] = (std::uint64_t(pkey[p]) << 32) | p;
      }
      std::sort(ws.fine.begin(), ws.fine.end());
      for (std::uint32_t i = 0; i < count_h; ++i) {
        t = advance(t, std::uint64_t(begin) + i);
        const std::size_t p = ws.fine[i] & 0xFFFFFFFFu;
        const double diff = py[p] - value(t);
        loss += diff * diff;
        out[2 * p] += step_scale * diff * t1;
        out[2 * p + 1] += step_scale * diff * t2;
      }
    }
    result.loss += loss * inv_m / static_cast<double>(K);
  }
}

}  // namespace

double sliced_wasserstein(const ParticleMatrix& x, const std::vector<GridTarget>& targets,
                          const double* directions, std::int64_t K, double* grad, int threads) {
  check_threads(threads);
  check_matrix(x, 2);
  if (K < 1) throw InvalidArgument("directions per target must be >= 1, got " + std::to_string(K));
  if (directions == nullptr && !targets.empty())
    throw InvalidArgument("directions must not be null");
  check_targets(x.cols, targets);
  for (std::size_t v = 0; v < targets.size() * std::size_t(K) * 2; ++v)
    if (!std::isfinite(directions[v]))
      throw InvalidArgument("directions must be finite, got " + std::to_string(directions[v]) +
                            " at entry " + std::to_string(v));

  // Every particle in [0, 1] (no NaN) in the targets' columns, each column checked once.
  std::vector<char> used(std::size_t(x.cols), 0);
  for (const GridTarget& g : targets) used[std::size_t(g.attr_i)] = used[std::size_t(g.attr_j)] = 1;
  for (std::int64_t c = 0; c < x.cols; ++c) {
    if (!used[std::size_t(c)]) continue;
    bool bad = false;
    for (std::int64_t r = 0; r < x.rows; ++r) {
      const double v = x.at(r, c);
      bad |= !(v >= 0.0 && v <= 1.0);
    }
    if (bad)
      throw InvalidArgument("particles must lie in [0, 1] (no NaN) in the targets' columns");
  }

  const std::int64_t splits = std::min(kSplits, K);
  std::int64_t max_cells = 1;
  for (const GridTarget& g : targets) max_cells = std::max(max_cells, g.size_i * g.size_j);
  const auto n = static_cast<std::size_t>(x.rows);
  const std::size_t buckets = std::size_t{1} << bucket_bits(x.rows);
  double loss = 0.0;
  std::vector<Workspace> spaces;
  std::vector<double> buffers;
  for (std::size_t first = 0; first < targets.size(); first += kTargetGroup) {
    const std::size_t last = std::min(targets.size(), first + kTargetGroup);
    const std::size_t tasks = (last - first) * std::size_t(splits);
    const unsigned parts = parts_for(tasks, threads);
    if (spaces.size() < parts) {
      spaces.resize(parts);
      for (Workspace& ws : spaces) {
        for (auto* v : {&ws.a, &ws.b, &ws.y}) v->resize(n);
        for (auto* v : {&ws.key, &ws.members}) v->resize(n);
        for (auto* v : {&ws.start, &ws.fill}) v->resize(buckets);
        ws.bucket_value.resize(buckets);
        ws.atom_value.resize(std::size_t(max_cells));
        ws.cumulative.resize(std::size_t(max_cells));
        ws.atom_index.resize(std::size_t(max_cells));
      }
    }
    buffers.assign(tasks * 2 * n, 0.0);
    std::vector<TaskResult> results(tasks);
    parallel_chunks(tasks, parts, [&](unsigned part, std::uint64_t b, std::uint64_t e) {
      for (std::uint64_t task = b; task < e; ++task) {
        const std::size_t t = first + task / std::size_t(splits);
        const std::int64_t h = std::int64_t(task % std::size_t(splits));
        run_task(x, targets[t], directions + t * std::size_t(K) * 2, K, K * h / splits,
                 K * (h + 1) / splits, buffers.data() + task * 2 * n, spaces[part],
                 results[task]);
      }
    });
    for (std::size_t task = 0; task < tasks; ++task) loss += results[task].loss;
    if (grad == nullptr) continue;
    for (std::size_t task = 0; task < tasks; ++task) {
      const GridTarget& g = targets[first + task / std::size_t(splits)];
      const double* buf = buffers.data() + task * 2 * n;
      double* gi = grad + g.attr_i * x.col_stride;
      double* gj = grad + g.attr_j * x.col_stride;
      for (std::size_t r = 0; r < n; ++r) {
        gi[std::int64_t(r) * x.row_stride] += buf[2 * r];
        gj[std::int64_t(r) * x.row_stride] += buf[2 * r + 1];
      }
    }
  }
  return loss;
}

namespace {

std::uint64_t splitmix64(std::uint64_t z) {
  z += 0x9E3779B97F4A7C15ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

}  // namespace

void particle_adam_step(const ParticleMatrix& x, double* grad, double* exp_avg,
                        double* exp_avg_sq, const std::vector<int>& columns, std::int64_t step,
                        const AdamOptions& o, int threads) {
  check_threads(threads);
  check_matrix(x, 1);
  if (grad == nullptr || exp_avg == nullptr || exp_avg_sq == nullptr)
    throw InvalidArgument("grad, exp_avg and exp_avg_sq must not be null");
  if (step < 1) throw InvalidArgument("step must be >= 1, got " + std::to_string(step));
  for (int c : columns)
    if (c < 0 || c >= x.cols)
      throw InvalidArgument("column must be in [0, " + std::to_string(x.cols) + "), got " +
                            std::to_string(c));
  if (!(o.learning_rate > 0 && std::isfinite(o.learning_rate)))
    throw InvalidArgument("learning_rate must be > 0 and finite, got " +
                          std::to_string(o.learning_rate));
  if (!(o.beta1 >= 0 && o.beta1 < 1) || !(o.beta2 >= 0 && o.beta2 < 1))
    throw InvalidArgument("betas must be in [0, 1), got " + std::to_string(o.beta1) + ", " +
                          std::to_string(o.beta2));
  if (!(o.eps > 0 && std::isfinite(o.eps)))
    throw InvalidArgument("eps must be > 0 and finite, got " + std::to_string(o.eps));
  if (!(o.keep > 0 && o.keep <= 1))
    throw InvalidArgument("keep must be in (0, 1], got " + std::to_string(o.keep));
  const double bc1 = 1.0 - std::pow(o.beta1, double(step));
  const double sqrt_bc2 = std::sqrt(1.0 - std::pow(o.beta2, double(step)));
  const double step_size = o.learning_rate / bc1;
  // Keep-test in integers: an entry is kept when its 53-bit hash is below keep * 2^53. The hash
  // is of (seed, step, row, column), so the mask is the same for any layout or thread count.
  const auto threshold = static_cast<std::uint64_t>(o.keep * 9007199254740992.0);
  const bool drop = threshold < (std::uint64_t{1} << 53);
  const std::uint64_t stream = splitmix64(o.seed ^ splitmix64(std::uint64_t(step)));
  const unsigned parts = parts_for(std::size_t(x.rows) / 16384 + 1, threads);
  parallel_chunks(std::uint64_t(x.rows), parts, [&](unsigned, std::uint64_t b, std::uint64_t e) {
    for (int c : columns)
      for (std::uint64_t r = b; r < e; ++r) {
        const std::int64_t at = std::int64_t(r) * x.row_stride + c * x.col_stride;
        const double g = grad[at];
        grad[at] = 0.0;
        if (g == 0.0) continue;
        const std::uint64_t entry = r * std::uint64_t(x.cols) + std::uint64_t(c);
        if (drop && (splitmix64(stream ^ entry) >> 11) >= threshold) continue;
        exp_avg[at] = o.beta1 * exp_avg[at] + (1.0 - o.beta1) * g;
        exp_avg_sq[at] = o.beta2 * exp_avg_sq[at] + (1.0 - o.beta2) * g * g;
        const double denom = std::sqrt(exp_avg_sq[at]) / sqrt_bc2 + o.eps;
        const double v = x.data[at] - step_size * exp_avg[at] / denom;
        x.data[at] = v < 0.0 ? 0.0 : (v > 1.0 ? 1.0 : v);
      }
  });
}

void snap_to_grid(const ParticleMatrix& x, const std::vector<std::int64_t>& sizes,
                  std::int64_t* codes) {
  if (x.rows < 0 || x.cols < 0)
    throw InvalidArgument("particles must have a non-negative shape, got " +
                          std::to_string(x.rows) + " x " + std::to_string(x.cols));
  if (static_cast<std::int64_t>(sizes.size()) != x.cols)
    throw InvalidArgument("sizes must have one entry per column (" + std::to_string(x.cols) +
                          "), got " + std::to_string(sizes.size()));
  for (std::size_t a = 0; a < sizes.size(); ++a)
    if (sizes[a] < 1 || sizes[a] > (std::int64_t{1} << 32))
      throw InvalidArgument("size must be in [1, 2^32], got " + std::to_string(sizes[a]) +
                            " for column " + std::to_string(a));
  for (std::int64_t r = 0; r < x.rows; ++r)
    for (std::int64_t a = 0; a < x.cols; ++a) {
      const double v = x.at(r, a);
      if (!(v >= 0.0 && v <= 1.0))
        throw InvalidArgument("particles must lie in [0, 1], got " + std::to_string(v) +
                              " at row " + std::to_string(r) + ", column " + std::to_string(a));
      const auto k = sizes[std::size_t(a)];
      codes[r * x.cols + a] =
          std::min(k - 1, static_cast<std::int64_t>(v * static_cast<double>(k)));
    }
}

}  // namespace dpcore
