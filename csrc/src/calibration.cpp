#include "dpcore/calibration.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>

#include "dpcore/errors.hpp"
#include "parallel.hpp"
#include "vector_math.hpp"

namespace dpcore {

namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();
// Runs shorter than this are cheaper through one index entry a cell (measured on the
// bench/inference.py trees: 8 and 32 were slower, 2 much slower).
constexpr std::uint64_t kMinRun = 16;

// A run-structured index as kernels see it: run r covers cells [r * run, (r + 1) * run) and
// maps them to sub-table cells bases[r] + t * stride; kStep is the stride when it is 0 or 1
// (contiguous or broadcast reads), kStrided for any other (one axis of the sub-table).
constexpr int kStrided = 2;
template <int kStep>
struct Runs {
  static constexpr int step = kStep;
  const std::uint32_t* bases;
  std::uint64_t run;
  std::uint64_t stride;
};
// A block-structured index: block r covers cells [r * run, (r + 1) * run), `width` cells
// after `width` cells mapping to sub-table cells bases[r] .. bases[r] + width - 1.
struct Blocks {
  const std::uint32_t* bases;
  std::uint64_t run;
  std::uint64_t width;
};
template <class I>
constexpr bool is_blocks = std::is_same_v<I, Blocks>;
template <class I>
constexpr bool is_runs = !std::is_pointer_v<I> && !is_blocks<I>;

// Calls f(cell, n, sub) on the pieces of runs that tile [b, e): n cells from `cell` on, the
// first of them mapped to sub-table cell `sub`.
template <class R, class F>
void for_each_run(R ix, std::uint64_t b, std::uint64_t e, F&& f) {
  if (b >= e) return;
  std::uint64_t r = b / ix.run;  // one division a call: runs can be as short as 16 cells
  std::uint64_t offset = b - r * ix.run;
  for (; b < e; ++r, offset = 0) {
    const std::uint64_t n = std::min(ix.run - offset, e - b);
    f(b, n, std::uint64_t{ix.bases[r]} + offset * ix.stride);
    b += n;
  }
}

template <class F>
void with_index(const CellIndex& index, F&& f) {
  switch (index.kind) {
    case CellIndex::Kind::kRuns:
      if (index.step == 0)
        f(Runs<0>{index.bases.data(), index.run, 0});
      else if (index.step == 1)
        f(Runs<1>{index.bases.data(), index.run, 1});
      else
        f(Runs<kStrided>{index.bases.data(), index.run, std::uint64_t(index.step)});
      break;
    case CellIndex::Kind::kBlocks: f(Blocks{index.bases.data(), index.run, index.width}); break;
    case CellIndex::Kind::kNarrow: f(index.narrow.data()); break;
    case CellIndex::Kind::kWide: f(index.wide.data()); break;
  }
}

// Calls piece(block start, sub, lo, hi) on each block overlapping [b, e): cells [lo, hi) of
// the block starting at cell `block start`, whose first cell maps to sub-table cell `sub`.
template <class Piece>
void for_each_block(Blocks ix, std::uint64_t b, std::uint64_t e, Piece&& piece) {
  for (std::uint64_t r = b / ix.run; r * ix.run < e; ++r) {
    const std::uint64_t start = r * ix.run;
    piece(start, std::uint64_t{ix.bases[r]}, std::max(b, start) - start,
          std::min(e, start + ix.run) - start);
  }
}
// The first offset at or after lo that is t modulo width, given skew = lo % width (one
// division a block, not one per offset: blocks can be as short as 16 cells).
inline std::uint64_t first_at(std::uint64_t lo, std::uint64_t skew, std::uint64_t t,
                              std::uint64_t width) {
  return lo + (t >= skew ? t - skew : t + width - skew);
}

// Gather kernels: every cell of the table reads one cell of the sub-table. They vectorise
// (contiguous or broadcast reads along runs; gathers on AVX2/AVX-512 otherwise) and split
// over threads by cell ranges.
enum class Gather { kAssign, kAdd, kMultiply, kExpShift };

template <Gather kOp>
__attribute__((always_inline)) inline void apply(double& x, double v) {
  if constexpr (kOp == Gather::kAssign)
    x = v;
  else if constexpr (kOp == Gather::kAdd)
    x += v;
  else if constexpr (kOp == Gather::kMultiply)
    x *= v;
  else
    x = exp_one(x - v);
}
template <Gather kOp, class T>
DPCORE_VECTOR_KERNEL void gather_cells(double* __restrict x, const double* __restrict v,
                                       const T* __restrict idx, std::uint64_t n) {
  for (std::uint64_t i = 0; i < n; ++i) apply<kOp>(x[i], v[idx[i]]);
}
template <Gather kOp, int kStep>
DPCORE_VECTOR_KERNEL void gather_run(double* __restrict x, const double* __restrict v,
                                     std::uint64_t n, std::uint64_t stride) {
  if constexpr (kStep == kStrided)
    for (std::uint64_t t = 0; t < n; ++t) apply<kOp>(x[t], v[t * stride]);
  else
    for (std::uint64_t t = 0; t < n; ++t) apply<kOp>(x[t], v[t * kStep]);
}
// Cells [lo, hi) of a block, x pointing at cell lo: each sub-table value is applied along a
// stride (an inner loop over the short width would spend its time entering and leaving it).
template <Gather kOp>
DPCORE_VECTOR_KERNEL void gather_block(double* __restrict x, const double* __restrict v,
                                       std::uint64_t lo, std::uint64_t hi, std::uint64_t width) {
  const std::uint64_t skew = lo == 0 ? 0 : lo % width;
  for (std::uint64_t t = 0; t < width; ++t) {
    const double value = v[t];
    for (std::uint64_t o = first_at(lo, skew, t, width); o < hi; o += width)
      apply<kOp>(x[o - lo], value);
  }
}
// The same for a width known at compile time: cell o of the block reads v[o % kWidth], so
// whole groups of kWidth cells are contiguous reads and writes of one repeating pattern.
template <Gather kOp, int kWidth>
DPCORE_VECTOR_KERNEL void gather_block_of(double* __restrict x, const double* __restrict v,
                                          std::uint64_t lo, std::uint64_t hi) {
  std::uint64_t o = lo;
  for (; o < hi && o % kWidth != 0; ++o) apply<kOp>(x[o - lo], v[o % kWidth]);
  double pattern[kWidth];
  for (int t = 0; t < kWidth; ++t) pattern[t] = v[t];
  for (; o + kWidth <= hi; o += kWidth)
    for (int t = 0; t < kWidth; ++t) apply<kOp>(x[o - lo + std::uint64_t(t)], pattern[t]);
  for (; o < hi; ++o) apply<kOp>(x[o - lo], v[o % kWidth]);
}
// Widths 2..kMinRun-1 (a block's run is shorter than kMinRun) by their own kernels.
template <Gather kOp, int kWidth = 2>
void gather_block_width(double* x, const double* v, std::uint64_t lo, std::uint64_t hi,
                        std::uint64_t width) {
  if constexpr (kWidth < int(kMinRun)) {
    if (width == kWidth)
      gather_block_of<kOp, kWidth>(x, v, lo, hi);
    else
      gather_block_width<kOp, kWidth + 1>(x, v, lo, hi, width);
  } else {
    gather_block<kOp>(x, v, lo, hi, width);
  }
}
// Cells [b, e) of a table, x pointing at cell b (a table, or a piece of one in a buffer).
template <Gather kOp, class I>
void gather_kernel(double* x, const double* v, I idx, std::uint64_t b, std::uint64_t e) {
  if constexpr (is_blocks<I>)
    for_each_block(idx, b, e,
                   [&](std::uint64_t c, std::uint64_t sub, std::uint64_t lo, std::uint64_t hi) {
                     gather_block_width<kOp>(x + (c + lo - b), v + sub, lo, hi, idx.width);
                   });
  else if constexpr (is_runs<I>)
    for_each_run(idx, b, e, [&](std::uint64_t c, std::uint64_t n, std::uint64_t sub) {
      gather_run<kOp, I::step>(x + (c - b), v + sub, n, idx.stride);
    });
  else
    gather_cells<kOp>(x, v, idx + b, e - b);
}

// Scatter kernels: every cell of the table updates one cell of the sub-table, by sum or max
// (NaN never wins a max: it shows up in the exponentials instead).
enum class Scatter { kSum, kMax };

template <Scatter kOp>
__attribute__((always_inline)) inline double combine(double a, double v) {
  if constexpr (kOp == Scatter::kSum)
    return a + v;
  else
    return v > a ? v : a;
}
// Along a run: element-wise into consecutive outputs, or reduced into one (eight lanes so the
// reduction vectorises).
template <Scatter kOp, int kStep>
DPCORE_VECTOR_KERNEL void scatter_run(const double* __restrict x, double* __restrict out,
                                      std::uint64_t n, std::uint64_t stride) {
  if constexpr (kStep == 1) {
    for (std::uint64_t t = 0; t < n; ++t) out[t] = combine<kOp>(out[t], x[t]);
  } else if constexpr (kStep == kStrided) {
    for (std::uint64_t t = 0; t < n; ++t) out[t * stride] = combine<kOp>(out[t * stride], x[t]);
  } else {
    constexpr double kUnit = kOp == Scatter::kSum ? 0.0 : kNegInf;
    double lanes[8] = {kUnit, kUnit, kUnit, kUnit, kUnit, kUnit, kUnit, kUnit};
    std::uint64_t t = 0;
    for (; t + 8 <= n; t += 8)
      for (int j = 0; j < 8; ++j) lanes[j] = combine<kOp>(lanes[j], x[t + j]);
    double acc = out[0];
    for (; t < n; ++t) acc = combine<kOp>(acc, x[t]);
    for (int j = 0; j < 8; ++j) acc = combine<kOp>(acc, lanes[j]);
    out[0] = acc;
  }
}
// Cell by cell: consecutive cells often hit the same output, and updating it in memory would
// chain every cell through a store and a reload; so a stretch of cells with the same output
// is combined in a register and stored once.
template <Scatter kOp, class T>
void scatter_cells(const double* x, double* out, const T* idx, std::uint64_t n) {
  if (n == 0) return;
  std::uint64_t cur = idx[0];
  double acc = x[0];
  for (std::uint64_t i = 1; i < n; ++i) {
    const std::uint64_t j = idx[i];
    if (j == cur) {
      acc = combine<kOp>(acc, x[i]);
    } else {
      out[cur] = combine<kOp>(out[cur], acc);
      cur = j;
      acc = x[i];
    }
  }
  out[cur] = combine<kOp>(out[cur], acc);
}
// Cells [lo, hi) of a block, x pointing at cell lo: each of its `width` outputs is a strided
// reduction, in four partial results so the chain of combines is not one long dependency.
template <Scatter kOp>
void scatter_block(const double* __restrict x, double* __restrict out, std::uint64_t lo,
                   std::uint64_t hi, std::uint64_t width) {
  constexpr double kUnit = kOp == Scatter::kSum ? 0.0 : kNegInf;
  const std::uint64_t stride = 4 * width;
  const std::uint64_t skew = lo == 0 ? 0 : lo % width;
  for (std::uint64_t t = 0; t < width; ++t) {
    double a0 = kUnit, a1 = kUnit, a2 = kUnit, a3 = kUnit;
    std::uint64_t o = first_at(lo, skew, t, width);
    for (; o + 3 * width < hi; o += stride) {
      a0 = combine<kOp>(a0, x[o - lo]);
      a1 = combine<kOp>(a1, x[o - lo + width]);
      a2 = combine<kOp>(a2, x[o - lo + 2 * width]);
      a3 = combine<kOp>(a3, x[o - lo + 3 * width]);
    }
    for (; o < hi; o += width) a0 = combine<kOp>(a0, x[o - lo]);
    out[t] = combine<kOp>(out[t], combine<kOp>(combine<kOp>(a0, a1), combine<kOp>(a2, a3)));
  }
}
// Cells [b, e) of a table, x pointing at cell b.
template <Scatter kOp, class I>
void scatter_kernel(const double* x, double* out, I idx, std::uint64_t b, std::uint64_t e) {
  if constexpr (is_blocks<I>)
    for_each_block(idx, b, e,
                   [&](std::uint64_t c, std::uint64_t sub, std::uint64_t lo, std::uint64_t hi) {
                     scatter_block<kOp>(x + (c + lo - b), out + sub, lo, hi, idx.width);
                   });
  else if constexpr (is_runs<I>)
    for_each_run(idx, b, e, [&](std::uint64_t c, std::uint64_t n, std::uint64_t sub) {
      scatter_run<kOp, I::step>(x + (c - b), out + sub, n, idx.stride);
    });
  else
    scatter_cells<kOp>(x, out, idx + b, e - b);
}

// dst <- exp(src - shift) on cells [b, e): the product form of a potential or a message.
DPCORE_VECTOR_KERNEL void exp_shifted(const double* __restrict src, double* __restrict dst,
                                      double shift, std::uint64_t b, std::uint64_t e) {
  for (std::uint64_t i = b; i < e; ++i) dst[i] = exp_one(src[i] - shift);
}

// Runs a gather kernel over all cells, split over the kernel threads.
template <class Kernel>
void gather(const CellIndex& index, Kernel&& kernel) {
  with_index(index, [&](auto idx) {
    parallel_chunks(index.cells, chunk_count(index.cells),
                    [&](unsigned, std::uint64_t b, std::uint64_t e) { kernel(idx, b, e); });
  });
}

// Runs a scatter kernel into out[0..sub_cells) filled with `fill` first, split over the
// kernel threads with private outputs (parallel_scatter).
template <class Kernel>
void scatter(const CellIndex& index, double* out, double fill, bool take_max, Kernel&& kernel) {
  with_index(index, [&](auto idx) {
    parallel_scatter(index.cells, out, index.sub_cells, fill, take_max,
                     [&](double* o, std::uint64_t b, std::uint64_t e) { kernel(o, idx, b, e); });
  });
}

bool is_subset(const std::vector<AttrId>& sub, const std::vector<AttrId>& set) {
  return std::all_of(sub.begin(), sub.end(), [&](AttrId a) {
    return std::find(set.begin(), set.end(), a) != set.end();
  });
}

}  // namespace

// By (domain size, id): any subset's layout is its superset's restricted, so a separator's is
// both its cliques' and a potential's or query's is its clique's.
std::vector<AttrId> table_layout(const std::vector<AttrId>& attrs,
                                 const std::vector<std::int64_t>& shape) {
  check_attr_ids(attrs, int(shape.size()), "laid-out attributes");
  std::vector<AttrId> out = attrs;
  std::sort(out.begin(), out.end(), [&](AttrId a, AttrId b) {
    const std::int64_t x = shape[std::size_t(a)], y = shape[std::size_t(b)];
    return x != y ? x < y : a < b;
  });
  return out;
}

CellIndex make_cell_index(const std::vector<AttrId>& attrs, const std::vector<std::int64_t>& shape,
                          const std::vector<AttrId>& sub_attrs) {
  CellIndex index;
  index.cells = checked_cell_count(shape);
  if (attrs.size() != shape.size())
    throw InvalidArgument("attributes and shape must have the same length");
  for (std::size_t i = 0; i < sub_attrs.size(); ++i)
    if (std::find(sub_attrs.begin(), sub_attrs.begin() + long(i), sub_attrs[i]) !=
        sub_attrs.begin() + long(i))
      throw InvalidArgument("sub-table attributes must be distinct, got " + attrs_text(sub_attrs));
  std::vector<std::int64_t> sub_shape;
  for (AttrId a : sub_attrs) {
    const auto at = std::find(attrs.begin(), attrs.end(), a);
    if (at == attrs.end())
      throw InvalidArgument("attributes " + attrs_text(sub_attrs) + " must be a subset of " +
                            attrs_text(attrs));
    sub_shape.push_back(shape[std::size_t(at - attrs.begin())]);
  }
  index.sub_cells = checked_cell_count(sub_shape);
  if (index.sub_cells > std::numeric_limits<std::uint32_t>::max())
    throw InvalidArgument("a sub-table over " + attrs_text(sub_attrs) + " must have < 2^32 cells");
  // The sub-table's stride along each axis of the table (0 where it lacks the attribute).
  std::vector<std::uint64_t> stride(attrs.size(), 0);
  std::uint64_t step = 1;
  for (std::size_t j = sub_attrs.size(); j-- > 0;) {
    stride[std::size_t(std::find(attrs.begin(), attrs.end(), sub_attrs[j]) - attrs.begin())] = step;
    step *= static_cast<std::uint64_t>(sub_shape[j]);
  }
  // The run: the table's last axes while the sub-table lacks them all (step 0), or while they
  // are the sub-table's last axes in the same order (step 1); size-1 axes fit either.
  std::size_t lead = attrs.size();  // axes [lead, end) form the run
  std::uint64_t run = 1;
  int run_step = -1;
  for (; lead > 0; --lead) {
    const std::size_t j = lead - 1;
    if (shape[j] == 1) continue;
    const int kind = stride[j] == 0 ? 0 : stride[j] == run ? 1 : 2;
    if (kind == 2 || (run_step >= 0 && kind != run_step)) break;
    run_step = kind;
    run *= static_cast<std::uint64_t>(shape[j]);
  }
  // The innermost long axis read along the sub-table's own stride for it (a run of any step).
  std::uint64_t run_stride = run_step == 1 ? 1 : 0;
  if (run_step < 0 && lead > 0 && std::uint64_t(shape[lead - 1]) >= kMinRun) {
    run_stride = stride[lead - 1];
    run = static_cast<std::uint64_t>(shape[lead - 1]);
    --lead;
  }
  // Entries for the table over axes [0, k) with the sub-table's strides, in row-major order:
  // the table over axes j.. is shape[j] copies of the one over axes j+1.., copy x shifted by
  // x * stride[j]; built from the last axis outwards, one add per entry.
  auto fill = [&](auto* out, std::size_t k) {
    using T = std::remove_pointer_t<decltype(out)>;
    out[0] = 0;
    std::uint64_t size = 1;
    for (std::size_t j = k; j-- > 0;) {
      for (std::int64_t x = 1; x < shape[j]; ++x) {
        T* copy = out + std::uint64_t(x) * size;
        const auto shift = static_cast<T>(std::uint64_t(x) * stride[j]);
        for (std::uint64_t i = 0; i < size; ++i) copy[i] = static_cast<T>(out[i] + shift);
      }
      size *= static_cast<std::uint64_t>(shape[j]);
    }
  };
  // Short step-1 runs preceded by axes the sub-table lacks: blocks of those axes times the run.
  std::size_t block_lead = lead;
  std::uint64_t block = run;
  if (run_step == 1 && run < kMinRun)
    for (; block_lead > 0 && stride[block_lead - 1] == 0; --block_lead)
      block *= static_cast<std::uint64_t>(shape[block_lead - 1]);
  if (run >= kMinRun || run == index.cells) {
    index.kind = CellIndex::Kind::kRuns;
    index.run = run;
    index.step = run_stride;
    index.bases.resize(index.cells / run);
    fill(index.bases.data(), lead);
  } else if (block >= kMinRun && block > run) {
    index.kind = CellIndex::Kind::kBlocks;
    index.run = block;
    index.width = run;
    index.bases.resize(index.cells / block);
    fill(index.bases.data(), block_lead);
  } else if (index.sub_cells <= (std::uint64_t{1} << 16)) {
    index.kind = CellIndex::Kind::kNarrow;
    index.narrow.resize(index.cells);
    fill(index.narrow.data(), attrs.size());
  } else {
    index.kind = CellIndex::Kind::kWide;
    index.wide.resize(index.cells);
    fill(index.wide.data(), attrs.size());
  }
  return index;
}

struct Calibrator::DownwardLists {
  std::vector<ScatterTarget> targets;  // the sweep's outputs
  std::vector<const CellIndex*> fused;  // ... and their indexes
  std::vector<std::pair<const CellIndex*, double*>> after;  // outputs summed after the sweep
};

Calibrator::~Calibrator() = default;

Calibrator::Calibrator(std::shared_ptr<const JunctionTree> tree,
                       std::vector<std::vector<AttrId>> potentials,
                       std::vector<std::vector<AttrId>> queries)
    : tree_(std::move(tree)), potentials_(std::move(potentials)),
      down_(std::make_unique<DownwardLists>()) {
  if (!tree_) throw InvalidArgument("calibrator needs a junction tree, got null");
  const JunctionTree& t = *tree_;
  const std::size_t k = t.cliques().size();
  terms_.resize(k);
  prefix_.resize(k);
  children_.resize(k);
  to_parent_.resize(k);
  to_child_.resize(k);
  belief_.resize(k);
  maximum_.resize(k);
  mass_.resize(k);
  message_.resize(k);
  prob_.resize(k);
  offset_.resize(k);
  logged_.resize(k);
  scale_.resize(k);
  marginal_held_.resize(k);
  sep_marginal_.resize(k);
  clique_queries_.resize(k);
  std::vector<std::vector<int>> clique_potentials(k);
  potential_offset_.push_back(0);
  for (std::size_t f = 0; f < potentials_.size(); ++f) {
    const auto& attrs = potentials_[f];
    check_attr_ids(attrs, t.num_attrs(), "log-potential attributes");
    const int c = t.containing_clique(attrs);
    if (c < 0)
      throw InvalidArgument("log-potential attributes must lie inside one clique of the "
                            "junction tree, got " + attrs_text(attrs));
    clique_potentials[std::size_t(c)].push_back(int(f));
    potential_offset_.push_back(potential_offset_.back() + checked_cell_count(t.shape_of(attrs)));
  }
  potential_prob_.resize(potential_offset_.back());
  potential_max_.resize(potentials_.size());
  // A potential's product and log tables are read in its own layout (table_layout); the
  // caller's flat potentials are put in it each run (cells of one whose order differs).
  pot_layout_.resize(potentials_.size());
  pot_order_.resize(potentials_.size());
  pot_moved_.assign(potentials_.size(), 0);
  std::uint64_t widest = 0;
  for (std::size_t f = 0; f < potentials_.size(); ++f) {
    pot_layout_[f] = table_layout(potentials_[f], t.shape());
    if (pot_layout_[f] == potentials_[f]) continue;
    pot_moved_[f] = 1;
    pot_order_[f] = make_cell_index(pot_layout_[f], t.shape_of(pot_layout_[f]), potentials_[f]);
    widest = std::max(widest, pot_order_[f].cells);
  }
  pot_scratch_.resize(widest);
  pot_logged_.assign(potentials_.size(), 0);
  layout_.resize(k);
  sep_layout_.resize(k);
  for (std::size_t c = 0; c < k; ++c) {
    layout_[c] = table_layout(t.cliques()[c], t.shape());
    sep_layout_[c] = table_layout(t.separator(int(c)), t.shape());
  }
  for (std::size_t c = 0; c < k; ++c) {
    const auto& clique = layout_[c];
    const auto shape = t.shape_of(clique);
    to_parent_[c] = make_cell_index(clique, shape, sep_layout_[c]);
    belief_[c].resize(to_parent_[c].cells);
    maximum_[c].resize(to_parent_[c].sub_cells);
    mass_[c].resize(to_parent_[c].sub_cells);
    message_[c].resize(to_parent_[c].sub_cells);
    prob_[c].resize(to_parent_[c].sub_cells);
    sep_marginal_[c].resize(to_parent_[c].sub_cells);
    const int p = t.parent(int(c));
    if (p >= 0) {
      const auto& parent = layout_[std::size_t(p)];
      to_child_[c] = make_cell_index(parent, t.shape_of(parent), sep_layout_[c]);
      children_[std::size_t(p)].push_back(int(c));
    }
  }
  // Each clique's terms, largest first: a term inside an earlier unfolded one folds into it.
  for (std::size_t c = 0; c < k; ++c) {
    struct Candidate {
      int source;
      std::vector<AttrId> attrs;
      std::uint64_t cells;
    };
    std::vector<Candidate> candidates;
    for (int f : clique_potentials[c])
      candidates.push_back(
          {f, pot_layout_[std::size_t(f)],
           potential_offset_[std::size_t(f) + 1] - potential_offset_[std::size_t(f)]});
    for (int d : children_[c])
      candidates.push_back(
          {-1 - d, sep_layout_[std::size_t(d)], to_parent_[std::size_t(d)].sub_cells});
    std::stable_sort(candidates.begin(), candidates.end(),
                     [](const Candidate& a, const Candidate& b) { return a.cells > b.cells; });
    const auto& clique = layout_[c];
    std::vector<const std::vector<AttrId>*> roots;
    for (const Candidate& x : candidates) {
      const auto r = std::find_if(roots.begin(), roots.end(),
                                  [&](const auto* attrs) { return is_subset(x.attrs, *attrs); });
      if (r == roots.end()) {
        terms_[c].push_back(
            {x.source, make_cell_index(clique, t.shape_of(clique), x.attrs), {}, {}, {}});
        roots.push_back(&x.attrs);
      } else {
        Term& root = terms_[c][std::size_t(r - roots.begin())];
        root.folds.emplace_back(x.source, make_cell_index(**r, t.shape_of(**r), x.attrs));
        root.sum.resize(root.index.sub_cells);
        root.prob.resize(root.index.sub_cells);
      }
    }
    // The prefix of terms worth multiplying over their union first: it saves m - 1 gathers
    // over the clique per product (one a run, the upward sweep's; E is kept for the downward
    // one) for m gathers over the union once a run. The union must be at most
    // half the clique, so the extra table cannot cost more than it saves.
    const double cells = double(to_parent_[c].cells);
    std::vector<AttrId> uni;
    std::size_t best = 0;
    double best_gain = 0.0;
    for (std::size_t m = 1; m <= roots.size(); ++m) {
      for (AttrId a : *roots[m - 1])
        if (std::find(uni.begin(), uni.end(), a) == uni.end()) uni.push_back(a);
      if (m < 2) continue;
      double u = 1.0;
      for (AttrId a : uni) u *= double(t.shape()[std::size_t(a)]);
      const double gain = double(m - 1) * cells - double(m) * u;
      if (2.0 * u <= cells && gain > best_gain) {
        best = m;
        best_gain = gain;
      }
    }
    if (best > 0) {
      std::vector<AttrId> held;  // the first `best` terms' attributes
      for (std::size_t j = 0; j < best; ++j)
        for (AttrId a : *roots[j])
          if (std::find(held.begin(), held.end(), a) == held.end()) held.push_back(a);
      std::vector<AttrId> attrs;  // ... in the clique's order
      for (AttrId a : clique)
        if (std::find(held.begin(), held.end(), a) != held.end()) attrs.push_back(a);
      Prefix& pre = prefix_[c];
      pre.terms = best;
      pre.index = make_cell_index(clique, t.shape_of(clique), attrs);
      for (std::size_t j = 0; j < best; ++j)
        pre.parts.push_back(make_cell_index(attrs, t.shape_of(attrs), *roots[j]));
      pre.table.resize(pre.index.sub_cells);
    }
  }
  // Queries, largest first, each read from the smallest clique or earlier query holding it.
  std::vector<int> order(queries.size());
  for (std::size_t q = 0; q < queries.size(); ++q) {
    check_attr_ids(queries[q], t.num_attrs(), "query attributes");
    order[q] = int(q);
  }
  std::vector<std::uint64_t> cells(queries.size());
  for (std::size_t q = 0; q < queries.size(); ++q)
    cells[q] = checked_cell_count(t.shape_of(queries[q]));
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    if (cells[std::size_t(a)] != cells[std::size_t(b)])
      return cells[std::size_t(a)] > cells[std::size_t(b)];
    return queries[std::size_t(a)].size() > queries[std::size_t(b)].size();
  });
  query_attrs_ = queries;
  query_offset_.push_back(0);
  for (std::size_t q = 0; q < queries.size(); ++q)
    query_offset_.push_back(query_offset_.back() + cells[q]);
  for (std::size_t pos = 0; pos < order.size(); ++pos) {
    const auto& attrs = queries[std::size_t(order[pos])];
    int source = t.containing_clique(attrs);
    if (source < 0)
      throw InvalidArgument("query attributes must lie inside one clique of the junction tree, "
                            "got " + attrs_text(attrs));
    std::uint64_t best = to_parent_[std::size_t(source)].cells;
    for (std::size_t earlier = 0; earlier < pos; ++earlier) {
      const auto e = std::size_t(order[earlier]);
      if (cells[e] < best && is_subset(attrs, queries[e])) {
        best = cells[e];
        source = int(k + earlier);
      }
    }
    const auto& from = source < int(k) ? layout_[std::size_t(source)]
                                       : queries[std::size_t(order[std::size_t(source) - k])];
    // A query read from a clique is summed in the clique's axis order (its long innermost
    // axis contiguous in both) and put in the caller's order after the sweep.
    Query query{source, {}, {}, {}};
    const std::vector<AttrId> laid = source < int(k) ? table_layout(attrs, t.shape()) : attrs;
    query.index = make_cell_index(from, t.shape_of(from), laid);
    if (laid != attrs) {
      query.order = make_cell_index(attrs, t.shape_of(attrs), laid);
      query.laid.resize(query.order.cells);
    }
    queries_.push_back(std::move(query));
    query_slot_.push_back(order[pos]);
    if (source < int(k)) clique_queries_[std::size_t(source)].push_back(pos);
  }
}

const double* Calibrator::log_values(int source, const double* potentials) {
  if (source >= 0) {
    const auto f = std::size_t(source);
    const double* own = potentials + potential_offset_[f];
    if (!pot_moved_[f]) return own;
    // the fallback's read of a potential in its layout, made once a run by fold_logs() before
    // any sweep (the table is allocated on the first fallback: most fits never take it)
    if (pot_log_.empty()) pot_log_.resize(potential_offset_.back());
    double* laid = pot_log_.data() + potential_offset_[f];
    if (!pot_logged_[f]) {
      with_index(pot_order_[f], [&](auto idx) {
        gather_kernel<Gather::kAssign>(laid, own, idx, 0, pot_order_[f].cells);
      });
      pot_logged_[f] = 1;
    }
    return laid;
  }
  const auto d = std::size_t(-1 - source);
  if (!logged_[d]) {  // a fast child's message, kept as (prob, offset) until a fallback reads it
    const double* prob = prob_[d].data();
    for (std::size_t s = 0; s < message_[d].size(); ++s)
      message_[d][s] = std::log(prob[s]) + offset_[d];
    logged_[d] = true;
  }
  return message_[d].data();
}

const double* Calibrator::prob_values(int source) const {
  return source >= 0 ? potential_prob_.data() + potential_offset_[std::size_t(source)]
                     : prob_[std::size_t(-1 - source)].data();
}

double Calibrator::prob_offset(int source) const {
  return source >= 0 ? potential_max_[std::size_t(source)] : offset_[std::size_t(-1 - source)];
}

double Calibrator::fold_probs(int c) {
  double shift = 0.0;
  for (Term& term : terms_[std::size_t(c)]) {
    shift += prob_offset(term.source);
    for (const auto& fold : term.folds) shift += prob_offset(fold.first);
  }
  // A non-finite offset (an all--inf or +inf potential or message) sends the clique to the
  // fallback, which never reads these tables.
  if (!std::isfinite(shift)) return shift;
  for (Term& term : terms_[std::size_t(c)]) {
    if (term.folds.empty()) continue;
    const double* own = prob_values(term.source);
    std::copy(own, own + term.prob.size(), term.prob.begin());
    for (const auto& [source, index] : term.folds) {
      const double* v = prob_values(source);
      with_index(index, [&](auto idx) {
        gather_kernel<Gather::kMultiply>(term.prob.data(), v, idx, 0, index.cells);
      });
    }
  }
  return shift;
}

void Calibrator::fold_logs(int c, const double* potentials) {
  for (Term& term : terms_[std::size_t(c)]) {
    // Every term's log table made here, before the sweep: log_values() fills a message's or
    // a potential's in its layout on first use, and the sweep's threads must only read them.
    const double* own = log_values(term.source, potentials);
    if (term.folds.empty()) continue;
    std::copy(own, own + term.sum.size(), term.sum.begin());
    for (const auto& [source, index] : term.folds) {
      const double* v = log_values(source, potentials);
      with_index(index, [&](auto idx) {
        gather_kernel<Gather::kAdd>(term.sum.data(), v, idx, 0, index.cells);
      });
    }
  }
}

void Calibrator::log_belief(int c, const double* potentials, std::uint64_t lo,
                            std::uint64_t hi) {
  double* b = belief_[std::size_t(c)].data();
  bool first = true;
  for (const Term& term : terms_[std::size_t(c)]) {
    const double* v = term.folds.empty() ? log_values(term.source, potentials) : term.sum.data();
    with_index(term.index, [&](auto idx) {
      if (first)
        gather_kernel<Gather::kAssign>(b + lo, v, idx, lo, hi);
      else
        gather_kernel<Gather::kAdd>(b + lo, v, idx, lo, hi);
    });
    first = false;
  }
  if (first) std::fill(b + lo, b + hi, 0.0);
}

void Calibrator::fill_prefix(int c) {
  Prefix& pre = prefix_[std::size_t(c)];
  if (pre.terms == 0) return;
  // The same operations as product() on a clique cell, on the union's cells.
  double* e = pre.table.data();
  const double scale = scale_[std::size_t(c)];
  bool first = scale == 1.0;
  if (!first) std::fill(pre.table.begin(), pre.table.end(), scale);
  for (std::size_t j = 0; j < pre.terms; ++j) {
    const Term& term = terms_[std::size_t(c)][j];
    const double* v = term.folds.empty() ? prob_values(term.source) : term.prob.data();
    gather(pre.parts[j], [&](auto idx, std::uint64_t lo, std::uint64_t hi) {
      if (first)
        gather_kernel<Gather::kAssign>(e + lo, v, idx, lo, hi);
      else
        gather_kernel<Gather::kMultiply>(e + lo, v, idx, lo, hi);
    });
    first = false;
  }
}

void Calibrator::product(int c, double* e, std::uint64_t lo, std::uint64_t hi) const {
  const auto ci = std::size_t(c);
  const Prefix& pre = prefix_[ci];
  if (pre.terms > 0) {  // E = the prefix's product, times the remaining terms
    with_index(pre.index, [&](auto idx) {
      gather_kernel<Gather::kAssign>(e, pre.table.data(), idx, lo, hi);
    });
    for (std::size_t j = pre.terms; j < terms_[ci].size(); ++j) {
      const Term& term = terms_[ci][j];
      const double* v = term.folds.empty() ? prob_values(term.source) : term.prob.data();
      with_index(term.index, [&](auto idx) {
        gather_kernel<Gather::kMultiply>(e, v, idx, lo, hi);
      });
    }
    return;
  }
  const double scale = scale_[ci];
  // The scale goes in first: every factor after it is at most 1.
  bool first = scale == 1.0;
  if (!first) std::fill(e, e + (hi - lo), scale);
  for (const Term& term : terms_[ci]) {
    const double* v = term.folds.empty() ? prob_values(term.source) : term.prob.data();
    with_index(term.index, [&](auto idx) {
      if (first)
        gather_kernel<Gather::kAssign>(e, v, idx, lo, hi);
      else
        gather_kernel<Gather::kMultiply>(e, v, idx, lo, hi);
    });
    first = false;
  }
  if (first) std::fill(e, e + (hi - lo), 1.0);
}

void Calibrator::sweep_up(int c) {
  const auto ci = std::size_t(c);
  double* b = belief_[ci].data();
  const CellIndex& up = to_parent_[ci];
  with_index(up, [&](auto idx) {
    parallel_sweep(up.cells, ScatterTarget{mass_[ci].data(), up.sub_cells, 0.0, false},
                   [&](unsigned, double* const* outs, std::uint64_t lo, std::uint64_t hi) {
                     double* e = b + lo;
                     product(c, e, lo, hi);
                     scatter_kernel<Scatter::kSum>(e, outs[0], idx, lo, hi);
                   });
  });
}

double Calibrator::largest(int c) const {
  const std::uint64_t cells = to_parent_[std::size_t(c)].cells;
  double top = 0.0;
  alignas(64) double piece[kSweepCells];
  for (std::uint64_t lo = 0; lo < cells; lo += kSweepCells) {
    const std::uint64_t hi = std::min(cells, lo + kSweepCells);
    product(c, piece, lo, hi);
    top = max_of(piece, hi - lo, top);
  }
  return top;
}

void Calibrator::upward(int c, const double* potentials) {
  const auto ci = std::size_t(c);
  const CellIndex& up = to_parent_[ci];
  // Fast path: every term (potential or child message) is a table P <= 1 with a log offset,
  // P = exp(t - offset), so the clique's E = exp(b - shift) with shift = Σ offsets is the
  // product of its terms' P: one sweep of gathers and multiplies, no exponential per cell,
  // summed to the separator in the same sweep. The shift is an upper bound on the belief and
  // a function of this run's inputs alone (a run's result does not depend on earlier runs).
  // It is exact when every separator cell keeps a mass of at least kMinMass: a flushed E
  // (below e^-708) is then below 2^32 e^-708 / kMinMass < 1e-48 of its row's mass. Where the
  // bound was loose enough that dividing by the largest E could lift every row over kMinMass,
  // the sweep is redone with that scale in front: masses grow by e^gain, gain = -log(max E),
  // and a row flushed to 0 (fewer than 2^32 cells, each then below e^(gain - 708)) can reach
  // kMinMass only if gain > 110. Otherwise (rows far below the rest, all--inf rows, NaN or
  // +inf) the shift is each separator cell's maximum log-belief, in two sweeps.
  constexpr double kMinMass = 1e-250;
  constexpr double kRescue = 110.0;
  const auto& mass = mass_[ci];
  auto exact = [&] {
    return std::all_of(mass.begin(), mass.end(), [](double x) { return x >= kMinMass; });
  };
  // E is kept in the belief table for the downward sweep, which reads it to make the
  // marginal. Recomputing a large clique's E there from its terms' small tables instead (no
  // sweep writing the table) measured slower: its terms' gathers cost more than the table's
  // traffic (AIM at eps = 10 on Adult, seed 0, 2026-11-26: 63.8-69.2 -> 56.6-59.8 CPU-s,
  // the same bits).
  double shift = fold_probs(c);
  bool fast = false;
  scale_[ci] = 1.0;
  if (std::isfinite(shift)) {
    fill_prefix(c);
    sweep_up(c);
    fast = exact();
    if (!fast) {
      const double top = largest(c);
      const double gain = -std::log(top);
      const double low = *std::min_element(mass.begin(), mass.end());
      if (top > 0.0 && std::isfinite(1.0 / top) && gain > 0.0 &&
          (low > 0.0 ? std::log(low) + gain >= std::log(kMinMass) : gain > kRescue)) {
        shift -= gain;
        scale_[ci] = 1.0 / top;
        fill_prefix(c);
        sweep_up(c);
        fast = exact();
      }
    }
  }
  double* message = message_[ci].data();
  double* prob = prob_[ci].data();
  const double* sums = mass.data();
  const std::uint64_t n = up.sub_cells;
  if (fast) {
    // The message is mass * e^shift: kept as P = mass / max mass and its offset.
    const double top = max_of(sums, n, 0.0);
    const double inv = 1.0 / top;
    parallel_chunks(n, chunk_count(n), [&](unsigned, std::uint64_t lo, std::uint64_t hi) {
      for (std::uint64_t s = lo; s < hi; ++s) prob[s] = sums[s] * inv;
    });
    offset_[ci] = shift + std::log(top);
    logged_[ci] = false;
    return;
  }
  fold_logs(c, potentials);
  double* m = maximum_[ci].data();  // the shift of each separator cell
  double* b = belief_[ci].data();
  with_index(up, [&](auto idx) {
    parallel_sweep(up.cells, ScatterTarget{m, up.sub_cells, kNegInf, true},
                   [&](unsigned, double* const* outs, std::uint64_t lo, std::uint64_t hi) {
                     log_belief(c, potentials, lo, hi);
                     scatter_kernel<Scatter::kMax>(b + lo, outs[0], idx, lo, hi);
                   });
    // A separator cell whose cells are all -inf gets shift 0: E = 0 there, its message -inf.
    for (double& x : maximum_[ci])
      if (x == kNegInf) x = 0.0;
    parallel_sweep(up.cells, ScatterTarget{mass_[ci].data(), up.sub_cells, 0.0, false},
                   [&](unsigned, double* const* outs, std::uint64_t lo, std::uint64_t hi) {
                     gather_kernel<Gather::kExpShift>(b + lo, m, idx, lo, hi);
                     scatter_kernel<Scatter::kSum>(b + lo, outs[0], idx, lo, hi);
                   });
  });
  // A logarithm costs as much as ~8 cells of table work, and separators reach 10^5 cells.
  parallel_chunks(n, chunk_count(8 * n), [&](unsigned, std::uint64_t lo, std::uint64_t hi) {
    for (std::uint64_t s = lo; s < hi; ++s) message[s] = std::log(sums[s]) + m[s];
  });
  logged_[ci] = true;
  // Its product form for the parent's fast path; a non-finite offset sends the parent to the
  // fallback, which reads the logarithms.
  const double top = max_of(message, n, kNegInf);
  offset_[ci] = top;
  if (std::isfinite(top)) exp_shifted(message, prob, top, 0, n);
}

double* Calibrator::query_output(std::size_t position, double* marginals) const {
  return marginals + query_offset_[std::size_t(query_slot_[position])];
}

void Calibrator::downward(int c, double* marginals) {
  const auto ci = std::size_t(c);
  // P = E * M(s) / Σ_s E; the ratio reuses the maximum's buffer. For the root M = 1.
  double* ratio = maximum_[ci].data();
  const bool root = tree_->parent(c) < 0;
  for (std::size_t s = 0; s < maximum_[ci].size(); ++s) {
    const double mass = mass_[ci][s];
    if (root) sep_marginal_[ci][s] = 1.0;
    ratio[s] = mass > 0.0 ? sep_marginal_[ci][s] / mass : 0.0;
  }
  // One sweep: the belief table's E times the ratio is the marginal, then its sums onto the
  // children's separators and the queries read from this clique. The marginal is made piece
  // by piece in a buffer and the table keeps E (a fit reads only the sums: writing the large
  // tables back was a third of a calibration's memory traffic), unless outputs too large for
  // private per-thread copies must be summed after, from the table; a snapshot multiplies a
  // table still holding E by the ratio then (the same products).
  double* b = belief_[ci].data();
  const CellIndex& up = to_parent_[ci];
  // the call's lists, in buffers kept across runs (run() holds the mutex): a fit calls this
  // for every clique of every iteration, and three fresh vectors each time were allocations
  std::vector<ScatterTarget>& targets = down_->targets;
  std::vector<const CellIndex*>& fused = down_->fused;
  std::vector<std::pair<const CellIndex*, double*>>& after = down_->after;
  targets.clear();
  fused.clear();
  after.clear();
  auto add = [&](const CellIndex& index, double* out) {
    if (index.sub_cells * 4 <= index.cells || chunk_count(index.cells) == 1) {
      targets.push_back({out, index.sub_cells, 0.0, false});
      fused.push_back(&index);
    } else {
      after.emplace_back(&index, out);
    }
  };
  for (int d : children_[ci])
    add(to_child_[std::size_t(d)], sep_marginal_[std::size_t(d)].data());
  for (std::size_t pos : clique_queries_[ci])
    add(queries_[pos].index,
        queries_[pos].laid.empty() ? query_output(pos, marginals) : queries_[pos].laid.data());
  const bool keep = !after.empty();
  with_index(up, [&](auto up_idx) {
    parallel_sweep(up.cells, targets,
                   [&](unsigned, double* const* outs, std::uint64_t lo, std::uint64_t hi) {
                     alignas(64) double piece[kSweepCells];
                     double* e = b + lo;
                     if (!keep) e = std::copy(b + lo, b + hi, piece) - (hi - lo);
                     gather_kernel<Gather::kMultiply>(e, ratio, up_idx, lo, hi);
                     for (std::size_t t = 0; t < fused.size(); ++t)
                       with_index(*fused[t], [&](auto idx) {
                         scatter_kernel<Scatter::kSum>(e, outs[t], idx, lo, hi);
                       });
                   });
  });
  for (const auto& [index, out] : after)
    scatter(*index, out, 0.0, false,
            [&](double* o, auto idx, std::uint64_t lo, std::uint64_t hi) {
              scatter_kernel<Scatter::kSum>(b + lo, o, idx, lo, hi);
            });
  marginal_held_[ci] = keep;
}

double Calibrator::run(const double* potentials, double* marginals) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (spent_) throw InvalidArgument("run() on a Calibrator whose tables were moved out");
  calibrated_ = false;
  // Each potential's product form, exp(f - max f), read by the upward fast path.
  for (std::size_t f = 0; f < potentials_.size(); ++f) {
    const std::uint64_t lo = potential_offset_[f], hi = potential_offset_[f + 1];
    pot_logged_[f] = 0;
    potential_max_[f] = max_of(potentials + lo, hi - lo, kNegInf);
    if (!std::isfinite(potential_max_[f])) continue;
    if (!pot_moved_[f]) {
      exp_shifted(potentials, potential_prob_.data(), potential_max_[f], lo, hi);
      continue;
    }
    exp_shifted(potentials + lo, pot_scratch_.data(), potential_max_[f], 0, hi - lo);
    with_index(pot_order_[f], [&](auto idx) {
      gather_kernel<Gather::kAssign>(potential_prob_.data() + lo, pot_scratch_.data(), idx, 0,
                                     hi - lo);
    });
  }
  const auto& order = tree_->order();
  for (std::size_t i = order.size(); i-- > 0;) upward(order[i], potentials);
  const auto root = order[0];
  const double log_partition = log_values(-1 - root, potentials)[0];
  if (!std::isfinite(log_partition)) diagnose(potentials, log_partition);
  for (int c : order) downward(c, marginals);
  for (std::size_t pos = 0; pos < queries_.size(); ++pos) {
    const Query& q = queries_[pos];
    if (q.laid.empty()) continue;
    double* out = query_output(pos, marginals);
    with_index(q.order, [&](auto idx) {
      gather_kernel<Gather::kAssign>(out, q.laid.data(), idx, 0, q.order.cells);
    });
  }
  // Queries read from earlier (larger) queries, in evaluation order.
  const std::size_t k = belief_.size();
  for (std::size_t pos = 0; pos < queries_.size(); ++pos) {
    const Query& q = queries_[pos];
    if (q.source < int(k)) continue;
    const double* from = query_output(std::size_t(q.source) - k, marginals);
    scatter(q.index, query_output(pos, marginals), 0.0, false,
            [&](double* out, auto idx, std::uint64_t lo, std::uint64_t hi) {
              scatter_kernel<Scatter::kSum>(from + lo, out, idx, lo, hi);
            });
  }
  log_partition_ = log_partition;
  calibrated_ = true;
  return log_partition;
}

void Calibrator::spread(const double* query_values, double* potential_values) {
  std::lock_guard<std::mutex> lock(mutex_);
  const JunctionTree& t = *tree_;
  if (!spreads_built_) {
    // Indexes are built on first use: a Calibrator that only calibrates does not hold them.
    std::vector<std::vector<Spread>> spreads(potentials_.size());
    for (std::size_t q = 0; q < query_attrs_.size(); ++q) {
      const auto& attrs = query_attrs_[q];
      const auto f = std::size_t(std::find_if(potentials_.begin(), potentials_.end(),
                                              [&](const auto& p) { return is_subset(attrs, p); }) -
                                 potentials_.begin());
      if (f == potentials_.size())
        throw InvalidArgument("spread needs every query inside a potential, got query " +
                              attrs_text(attrs));
      spreads[f].push_back(
          {int(q), make_cell_index(potentials_[f], t.shape_of(potentials_[f]), attrs)});
    }
    spreads_ = std::move(spreads);
    spreads_built_ = true;
  }
  for (std::size_t f = 0; f < potentials_.size(); ++f) {
    double* out = potential_values + potential_offset_[f];
    std::fill(out, potential_values + potential_offset_[f + 1], 0.0);
    for (const Spread& sp : spreads_[f]) {
      const double* values = query_values + query_offset_[std::size_t(sp.query)];
      gather(sp.index, [&](auto idx, std::uint64_t lo, std::uint64_t hi) {
        gather_kernel<Gather::kAdd>(out + lo, values, idx, lo, hi);
      });
    }
  }
}

void Calibrator::diagnose(const double* potentials, double log_partition) const {
  for (std::size_t f = 0; f < potentials_.size(); ++f)
    for (std::uint64_t i = potential_offset_[f]; i < potential_offset_[f + 1]; ++i) {
      const double v = potentials[i];
      if (std::isnan(v) || v == std::numeric_limits<double>::infinity())
        throw InvalidArgument("log-potential values must be finite or -inf, got " +
                              std::to_string(v) + " in factor over " + attrs_text(potentials_[f]));
    }
  throw InvalidArgument("log-potentials must give positive total mass, got log-partition " +
                        std::to_string(log_partition));
}

template <class Self>
CalibratedTree Calibrator::snapshot(Self& self) {
  std::lock_guard<std::mutex> lock(self.mutex_);
  if (!self.calibrated_) throw InvalidArgument("calibrated() needs a successful run() first");
  auto take = [](auto& table) -> std::vector<double> {
    if constexpr (std::is_const_v<Self>)
      return table;
    else
      return std::move(table);
  };
  const JunctionTree& t = *self.tree_;
  std::vector<Factor> beliefs;
  std::vector<Factor> separators;
  for (std::size_t c = 0; c < self.belief_.size(); ++c) {
    const auto& layout = self.layout_[c];
    std::vector<double> belief = take(self.belief_[c]);
    if (!self.marginal_held_[c])   // E: times the ratio, as downward() made the marginal
      with_index(self.to_parent_[c], [&](auto idx) {
        gather_kernel<Gather::kMultiply>(belief.data(), self.maximum_[c].data(), idx, 0,
                                         belief.size());
      });
    beliefs.emplace_back(layout, t.shape_of(layout), std::move(belief));   // as it is laid out
    const auto& sep = t.separator(int(c));
    const auto& sep_layout = self.sep_layout_[c];
    if (sep_layout == sep)
      separators.emplace_back(sep, t.shape_of(sep), take(self.sep_marginal_[c]));
    else
      separators.push_back(
          Factor(sep_layout, t.shape_of(sep_layout), take(self.sep_marginal_[c])).transpose(sep));
  }
  if constexpr (!std::is_const_v<Self>) self.spent_ = true;
  return CalibratedTree(self.tree_, std::move(beliefs), self.log_partition_, std::move(separators));
}

CalibratedTree Calibrator::calibrated() const& { return snapshot(*this); }

CalibratedTree Calibrator::calibrated() && { return snapshot(*this); }

CalibratedTree calibrate(std::shared_ptr<const JunctionTree> tree,
                         const std::vector<Factor>& log_potentials) {
  if (!tree) throw InvalidArgument("calibrate needs a junction tree, got null");
  std::vector<std::vector<AttrId>> attrs;
  std::vector<double> flat;
  for (const Factor& f : log_potentials) {
    check_attr_ids(f.attrs(), tree->num_attrs(), "log-potential attributes");
    for (std::size_t i = 0; i < f.attrs().size(); ++i) {
      const auto want = tree->shape()[std::size_t(f.attrs()[i])];
      if (f.shape()[i] != want)
        throw InvalidArgument("log-potential size of attribute " + std::to_string(f.attrs()[i]) +
                              " must be " + std::to_string(want) + ", got " +
                              std::to_string(f.shape()[i]));
    }
    attrs.push_back(f.attrs());
    flat.insert(flat.end(), f.values().begin(), f.values().end());
  }
  Calibrator calibrator(std::move(tree), std::move(attrs), {});
  calibrator.run(flat.data(), nullptr);
  return std::move(calibrator).calibrated();
}

}  // namespace dpcore
