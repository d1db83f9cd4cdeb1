// Dense factors (tables over a few attributes) and the kernels that inference runs in its
// inner loop: broadcast accumulate, sum-out and log-sum-exp marginalisation.
//
// Layout: values are row-major over `attrs` in the factor's own order, the last attribute
// varying fastest (numpy C order), so a factor's values are exactly the numpy array of the
// Python Factor. A StrideMap, computed once, walks a large table contiguously while it
// follows a smaller table's cells through precomputed strides; adjacent axes that move
// together are coalesced so the innermost loop is as long as possible.
#pragma once

#include <cstdint>
#include <vector>

#include "dpcore/domain.hpp"

namespace dpcore {

/// Loop nest that walks an `outer` table contiguously and, at each cell, points at the cell of
/// an `inner` table over a subset of the outer attributes (stride 0 on the axes it lacks).
struct StrideMap {
  std::vector<std::int64_t> shape;   ///< coalesced loop extents (outer table order)
  std::vector<std::int64_t> stride;  ///< stride of the inner table along each loop axis
  std::uint64_t outer_cells = 1;     ///< number of cells of the outer table
};

/// Builds the map from a table over (outer_attrs, outer_shape) to one over (inner_attrs,
/// inner_shape). InvalidArgument when an inner attribute is missing from the outer table or
/// the sizes of a shared attribute differ.
StrideMap make_stride_map(const std::vector<AttrId>& outer_attrs,
                          const std::vector<std::int64_t>& outer_shape,
                          const std::vector<AttrId>& inner_attrs,
                          const std::vector<std::int64_t>& inner_shape);

/// dst[o] += scale * src[map(o)] over every cell o of the outer table dst.
void broadcast_add(double* dst, const double* src, const StrideMap& map, double scale = 1.0);
/// dst[o] *= src[map(o)] over every cell o of the outer table dst.
void broadcast_multiply(double* dst, const double* src, const StrideMap& map);
/// dst[i] = sum (log=false) or log-sum-exp (log=true) of src over the cells that map to i.
/// `dst_cells` is the inner table's cell count; the log-sum-exp is stable (per-cell maximum).
void marginalize(const double* src, const StrideMap& map, double* dst, std::uint64_t dst_cells,
                 bool log);
/// values[i] = exp(values[i]) for arguments <= 0 (what log-sum-exp shifting produces), within
/// a few ulp of std::exp; results below exp(-708) flush to 0, -inf gives 0, NaN stays NaN.
/// Vectorised (with AVX2/AVX-512 clones on x86-64): the exponentials dominate calibration.
void exp_nonpositive(double* values, std::uint64_t n);
/// log(sum(exp(values))), stable; -inf for an empty or all -inf input.
double logsumexp(const double* values, std::uint64_t n);

/// A dense table over an ordered list of attributes.
class Factor {
 public:
  Factor() = default;
  /// A table filled with `fill`. The shape is checked (sizes >= 1, cap on cells).
  Factor(std::vector<AttrId> attrs, std::vector<std::int64_t> shape, double fill = 0.0);
  /// A table with the given values (row-major over attrs); InvalidArgument on a length
  /// mismatch, repeated attributes or a rank mismatch between attrs and shape.
  Factor(std::vector<AttrId> attrs, std::vector<std::int64_t> shape, std::vector<double> values);

  const std::vector<AttrId>& attrs() const { return attrs_; }
  const std::vector<std::int64_t>& shape() const { return shape_; }
  const std::vector<double>& values() const { return values_; }
  std::vector<double>& values() { return values_; }
  double* data() { return values_.data(); }
  const double* data() const { return values_.data(); }
  std::uint64_t size() const { return values_.size(); }

  /// Axis of `attr` in this factor, or -1.
  int axis_of(AttrId attr) const;
  /// True when every attribute of `attrs` is in this factor.
  bool contains(const std::vector<AttrId>& attrs) const;
  /// Sizes of `attrs` taken from this factor (InvalidArgument when one is absent).
  std::vector<std::int64_t> shape_of(const std::vector<AttrId>& attrs) const;

  /// The same values laid out over a superset of attributes (broadcast along the new ones).
  Factor expand(const std::vector<AttrId>& attrs, const std::vector<std::int64_t>& shape) const;
  /// The same table with its attributes reordered (`attrs` is a permutation of attrs()).
  Factor transpose(const std::vector<AttrId>& attrs) const;
  /// Sum (log=false) or log-sum-exp (log=true) of the attributes not in `attrs`; the result is
  /// over `attrs` in the given order.
  Factor project(const std::vector<AttrId>& attrs, bool log = false) const;

  /// this += other, other's attributes a subset of this factor's (broadcast).
  Factor& add_inplace(const Factor& other);
  /// this -= other (broadcast as add_inplace).
  Factor& subtract_inplace(const Factor& other);
  /// this *= other (broadcast as add_inplace).
  Factor& multiply_inplace(const Factor& other);
  Factor& add_scalar(double c);
  Factor& multiply_scalar(double c);

  double sum() const;
  double logsumexp() const;
  /// Scale so the values sum to `total` (log=false) or shift so the log-values log-sum-exp to
  /// log(total) (log=true). InvalidArgument when the mass is zero or not finite.
  Factor& normalize(double total = 1.0, bool log = false);
  Factor& exp_inplace();
  Factor& log_inplace();

 private:
  std::vector<AttrId> attrs_;
  std::vector<std::int64_t> shape_;
  std::vector<double> values_;
};

/// Union of attributes, a's first then b's new ones (with their sizes).
void union_attrs(const Factor& a, const Factor& b, std::vector<AttrId>* attrs,
                 std::vector<std::int64_t>* shape);
/// a + b, a - b, a * b broadcast over the union of their attributes (a's attributes first).
Factor add(const Factor& a, const Factor& b);
Factor subtract(const Factor& a, const Factor& b);
Factor multiply(const Factor& a, const Factor& b);

}  // namespace dpcore
