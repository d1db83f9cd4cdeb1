#include "dpcore/factor.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "dpcore/errors.hpp"
#include "parallel.hpp"
#include "stride_runs.hpp"
#include "vector_math.hpp"

namespace dpcore {

namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

// for_each_run: stride_runs.hpp (shared with the pair passes' fused product and sum).

double* grow(std::vector<double>& buffer, std::int64_t n) {
  if (buffer.size() < static_cast<std::size_t>(n)) buffer.resize(static_cast<std::size_t>(n));
  return buffer.data();
}

DPCORE_VECTOR_KERNEL void exp_kernel(double* __restrict x, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) x[i] = exp_one(x[i]);
}

// out[i] = exp(p[i] - shift); returns the sum of out (eight partial sums for the vectoriser).
DPCORE_VECTOR_KERNEL double shifted_exp_sum(const double* p, double shift,
                                            double* out, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) out[i] = exp_one(p[i] - shift);
  double lanes[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  std::int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int j = 0; j < 8; ++j) lanes[j] += out[i + j];
  double total = 0.0;
  for (; i < n; ++i) total += out[i];
  for (int j = 0; j < 8; ++j) total += lanes[j];
  return total;
}

void check_distinct(const std::vector<AttrId>& attrs, const char* what) {
  for (std::size_t i = 0; i < attrs.size(); ++i)
    for (std::size_t j = i + 1; j < attrs.size(); ++j)
      if (attrs[i] == attrs[j])
        throw InvalidArgument(std::string(what) + " must be distinct, got " + attrs_text(attrs));
}

}  // namespace

StrideMap make_stride_map(const std::vector<AttrId>& outer_attrs,
                          const std::vector<std::int64_t>& outer_shape,
                          const std::vector<AttrId>& inner_attrs,
                          const std::vector<std::int64_t>& inner_shape) {
  if (outer_attrs.size() != outer_shape.size() || inner_attrs.size() != inner_shape.size())
    throw InvalidArgument("attributes and shape must have the same length");
  // The inner table's own row-major strides, by attribute.
  std::vector<std::int64_t> inner_strides(inner_attrs.size(), 1);
  for (std::size_t i = inner_attrs.size(); i-- > 1;)
    inner_strides[i - 1] = inner_strides[i] * inner_shape[i];
  StrideMap map;
  std::size_t found = 0;
  std::vector<std::int64_t> shape;
  std::vector<std::int64_t> stride;
  for (std::size_t a = 0; a < outer_attrs.size(); ++a) {
    std::int64_t st = 0;
    for (std::size_t b = 0; b < inner_attrs.size(); ++b) {
      if (inner_attrs[b] != outer_attrs[a]) continue;
      if (inner_shape[b] != outer_shape[a])
        throw InvalidArgument("attribute " + std::to_string(outer_attrs[a]) +
                              " must have the same size in both tables, got " +
                              std::to_string(outer_shape[a]) + " and " +
                              std::to_string(inner_shape[b]));
      st = inner_strides[b];
      ++found;
    }
    map.outer_cells *= static_cast<std::uint64_t>(outer_shape[a]);
    if (outer_shape[a] == 1) continue;  // a size-1 axis never moves
    // Coalesce with the previous axis when together they step the inner table evenly.
    if (!shape.empty() && stride.back() == st * outer_shape[a]) {
      shape.back() *= outer_shape[a];
      stride.back() = st;
      continue;
    }
    shape.push_back(outer_shape[a]);
    stride.push_back(st);
  }
  if (found != inner_attrs.size())
    throw InvalidArgument("attributes " + attrs_text(inner_attrs) + " must be a subset of " +
                          attrs_text(outer_attrs));
  map.shape = std::move(shape);
  map.stride = std::move(stride);
  return map;
}

void broadcast_add(double* dst, const double* src, const StrideMap& map, double scale) {
  auto run = [&](std::int64_t o, std::int64_t i, std::int64_t n, std::int64_t s) {
    double* d = dst + o;
    const double* p = src + i;
    if (s == 0) {
      const double v = scale * *p;
      for (std::int64_t t = 0; t < n; ++t) d[t] += v;
    } else if (s == 1) {
      for (std::int64_t t = 0; t < n; ++t) d[t] += scale * p[t];
    } else {
      for (std::int64_t t = 0; t < n; ++t) d[t] += scale * p[t * s];
    }
  };
  // Threads write disjoint slices of dst.
  parallel_chunks(map.outer_cells, chunk_count(map.outer_cells),
                  [&](unsigned, std::uint64_t b, std::uint64_t e) { for_each_run(map, b, e, run); });
}

void broadcast_multiply(double* dst, const double* src, const StrideMap& map) {
  auto run = [&](std::int64_t o, std::int64_t i, std::int64_t n, std::int64_t s) {
    double* d = dst + o;
    const double* p = src + i;
    if (s == 0) {
      const double v = *p;
      for (std::int64_t t = 0; t < n; ++t) d[t] *= v;
    } else if (s == 1) {
      for (std::int64_t t = 0; t < n; ++t) d[t] *= p[t];
    } else {
      for (std::int64_t t = 0; t < n; ++t) d[t] *= p[t * s];
    }
  };
  parallel_chunks(map.outer_cells, chunk_count(map.outer_cells),
                  [&](unsigned, std::uint64_t b, std::uint64_t e) { for_each_run(map, b, e, run); });
}

void marginalize(const double* src, const StrideMap& map, double* dst, std::uint64_t dst_cells,
                 bool log) {
  const std::uint64_t cells = map.outer_cells;
  if (!log) {
    parallel_scatter(cells, dst, dst_cells, 0.0, false,
                     [&](double* out, std::uint64_t b, std::uint64_t e) {
      sum_runs(map, b, e, src + b, out);
    });
    return;
  }
  // Stable log-sum-exp: the first sweep finds each output cell's maximum, the second sums
  // exp(x - max) so no term overflows and the largest term is exactly 1.
  std::vector<double> maxima(dst_cells);
  double* mx = maxima.data();
  parallel_scatter(cells, mx, dst_cells, kNegInf, true,
                   [&](double* out, std::uint64_t b, std::uint64_t e) {
    for_each_run(map, b, e, [&](std::int64_t o, std::int64_t i, std::int64_t n, std::int64_t s) {
      const double* p = src + o;
      if (s == 0) {
        out[i] = max_of(p, std::uint64_t(n), out[i]);
      } else {
        for (std::int64_t t = 0; t < n; ++t) out[i + t * s] = std::max(out[i + t * s], p[t]);
      }
    });
  });
  // An output whose inputs are all -inf gets shift 0 so exp(-inf - 0) = 0 and log(0) = -inf.
  for (std::uint64_t c = 0; c < dst_cells; ++c)
    if (mx[c] == kNegInf) mx[c] = 0.0;
  parallel_scatter(cells, dst, dst_cells, 0.0, false,
                   [&](double* out, std::uint64_t b, std::uint64_t e) {
    std::vector<double> scratch;
    for_each_run(map, b, e, [&](std::int64_t o, std::int64_t i, std::int64_t n, std::int64_t s) {
      const double* p = src + o;
      if (s == 0) {
        out[i] += shifted_exp_sum(p, mx[i], grow(scratch, n), n);
      } else {
        double* ex = grow(scratch, n);
        for (std::int64_t t = 0; t < n; ++t) ex[t] = p[t] - mx[i + t * s];
        exp_kernel(ex, n);
        for (std::int64_t t = 0; t < n; ++t) out[i + t * s] += ex[t];
      }
    });
  });
  for (std::uint64_t c = 0; c < dst_cells; ++c)
    dst[c] = std::isinf(mx[c]) ? mx[c] : std::log(dst[c]) + mx[c];  // +inf stays +inf
}

void exp_nonpositive(double* values, std::uint64_t n) {
  exp_kernel(values, static_cast<std::int64_t>(n));
}

double logsumexp(const double* values, std::uint64_t n) {
  double m = kNegInf;
  for (std::uint64_t i = 0; i < n; ++i) m = values[i] > m ? values[i] : m;
  if (!std::isfinite(m)) {
    for (std::uint64_t i = 0; i < n; ++i)
      if (std::isnan(values[i])) return values[i];
    return m;  // -inf (empty or all -inf) or +inf
  }
  double acc = 0.0;
  for (std::uint64_t i = 0; i < n; ++i) acc += std::exp(values[i] - m);
  return m + std::log(acc);
}

Factor::Factor(std::vector<AttrId> attrs, std::vector<std::int64_t> shape, double fill)
    : attrs_(std::move(attrs)), shape_(std::move(shape)) {
  if (attrs_.size() != shape_.size())
    throw InvalidArgument("factor needs one size per attribute, got " +
                          std::to_string(attrs_.size()) + " attributes and " +
                          std::to_string(shape_.size()) + " sizes");
  check_distinct(attrs_, "factor attributes");
  values_.assign(checked_cell_count(shape_), fill);
}

Factor::Factor(std::vector<AttrId> attrs, std::vector<std::int64_t> shape,
               std::vector<double> values)
    : attrs_(std::move(attrs)), shape_(std::move(shape)), values_(std::move(values)) {
  if (attrs_.size() != shape_.size())
    throw InvalidArgument("factor needs one size per attribute, got " +
                          std::to_string(attrs_.size()) + " attributes and " +
                          std::to_string(shape_.size()) + " sizes");
  check_distinct(attrs_, "factor attributes");
  const std::uint64_t cells = checked_cell_count(shape_);
  if (values_.size() != cells)
    throw InvalidArgument("factor values must have " + std::to_string(cells) +
                          " cells (the product of its shape), got " +
                          std::to_string(values_.size()));
}

int Factor::axis_of(AttrId attr) const {
  for (std::size_t i = 0; i < attrs_.size(); ++i)
    if (attrs_[i] == attr) return static_cast<int>(i);
  return -1;
}

bool Factor::contains(const std::vector<AttrId>& attrs) const {
  for (AttrId a : attrs)
    if (axis_of(a) < 0) return false;
  return true;
}

std::vector<std::int64_t> Factor::shape_of(const std::vector<AttrId>& attrs) const {
  std::vector<std::int64_t> out;
  out.reserve(attrs.size());
  for (AttrId a : attrs) {
    const int ax = axis_of(a);
    if (ax < 0)
      throw InvalidArgument("attribute " + std::to_string(a) + " must be in the factor " +
                            attrs_text(attrs_));
    out.push_back(shape_[static_cast<std::size_t>(ax)]);
  }
  return out;
}

Factor Factor::expand(const std::vector<AttrId>& attrs,
                      const std::vector<std::int64_t>& shape) const {
  Factor out(attrs, shape, 0.0);
  broadcast_add(out.data(), data(), make_stride_map(attrs, shape, attrs_, shape_));
  return out;
}

Factor Factor::transpose(const std::vector<AttrId>& attrs) const {
  if (attrs.size() != attrs_.size())
    throw InvalidArgument("transpose needs a permutation of " + attrs_text(attrs_) + ", got " +
                          attrs_text(attrs));
  return expand(attrs, shape_of(attrs));
}

Factor Factor::project(const std::vector<AttrId>& attrs, bool log) const {
  check_distinct(attrs, "projected attributes");
  std::vector<std::int64_t> shape = shape_of(attrs);
  Factor out(attrs, shape, 0.0);
  marginalize(data(), make_stride_map(attrs_, shape_, attrs, shape), out.data(), out.size(),
              log);
  return out;
}

Factor& Factor::add_inplace(const Factor& other) {
  broadcast_add(data(), other.data(), make_stride_map(attrs_, shape_, other.attrs_, other.shape_));
  return *this;
}

Factor& Factor::subtract_inplace(const Factor& other) {
  broadcast_add(data(), other.data(), make_stride_map(attrs_, shape_, other.attrs_, other.shape_),
                -1.0);
  return *this;
}

Factor& Factor::multiply_inplace(const Factor& other) {
  broadcast_multiply(data(), other.data(),
                     make_stride_map(attrs_, shape_, other.attrs_, other.shape_));
  return *this;
}

Factor& Factor::add_scalar(double c) {
  for (double& v : values_) v += c;
  return *this;
}

Factor& Factor::multiply_scalar(double c) {
  for (double& v : values_) v *= c;
  return *this;
}

double Factor::sum() const {
  double acc = 0.0;
  for (double v : values_) acc += v;
  return acc;
}

double Factor::logsumexp() const { return dpcore::logsumexp(data(), size()); }

Factor& Factor::normalize(double total, bool log) {
  if (!(total > 0.0) || !std::isfinite(total))
    throw InvalidArgument("normalize total must be finite and > 0, got " + std::to_string(total));
  if (log) {
    const double z = logsumexp();
    if (!std::isfinite(z))
      throw InvalidArgument("normalize needs a finite total mass, got log-mass " +
                            std::to_string(z));
    return add_scalar(std::log(total) - z);
  }
  const double s = sum();
  if (!(s != 0.0) || !std::isfinite(s))
    throw InvalidArgument("normalize needs a finite non-zero total mass, got " +
                          std::to_string(s));
  return multiply_scalar(total / s);
}

Factor& Factor::exp_inplace() {
  for (double& v : values_) v = std::exp(v);
  return *this;
}

Factor& Factor::log_inplace() {
  for (double& v : values_) v = std::log(v);
  return *this;
}

void union_attrs(const Factor& a, const Factor& b, std::vector<AttrId>* attrs,
                 std::vector<std::int64_t>* shape) {
  *attrs = a.attrs();
  *shape = a.shape();
  for (std::size_t i = 0; i < b.attrs().size(); ++i) {
    const int ax = a.axis_of(b.attrs()[i]);
    if (ax < 0) {
      attrs->push_back(b.attrs()[i]);
      shape->push_back(b.shape()[i]);
    } else if (a.shape()[static_cast<std::size_t>(ax)] != b.shape()[i]) {
      throw InvalidArgument("attribute " + std::to_string(b.attrs()[i]) +
                            " must have the same size in both factors, got " +
                            std::to_string(a.shape()[static_cast<std::size_t>(ax)]) + " and " +
                            std::to_string(b.shape()[i]));
    }
  }
}

Factor add(const Factor& a, const Factor& b) {
  std::vector<AttrId> attrs;
  std::vector<std::int64_t> shape;
  union_attrs(a, b, &attrs, &shape);
  Factor out = a.expand(attrs, shape);
  return std::move(out.add_inplace(b));
}

Factor subtract(const Factor& a, const Factor& b) {
  std::vector<AttrId> attrs;
  std::vector<std::int64_t> shape;
  union_attrs(a, b, &attrs, &shape);
  Factor out = a.expand(attrs, shape);
  return std::move(out.subtract_inplace(b));
}

Factor multiply(const Factor& a, const Factor& b) {
  std::vector<AttrId> attrs;
  std::vector<std::int64_t> shape;
  union_attrs(a, b, &attrs, &shape);
  Factor out = a.expand(attrs, shape);
  return std::move(out.multiply_inplace(b));
}

}  // namespace dpcore

namespace dpcore {

void marginalize_cells(CellSource cells, const void* context, const StrideMap& map, double* dst,
                       std::uint64_t dst_cells) {
  // marginalize()'s sweep (the same slices, pieces and runs), each piece's cells made into a
  // per-thread buffer of kSweepCells (in L1) just before they are summed
  parallel_scatter(map.outer_cells, dst, dst_cells, 0.0, false,
                   [&](double* out, std::uint64_t b, std::uint64_t e) {
    static thread_local std::vector<double> piece(kSweepCells);
    cells(context, b, e, piece.data());
    sum_runs(map, b, e, piece.data(), out);
  });
}

}  // namespace dpcore
