// Attribute domains and checked table sizes.
//
// A Domain is the ordered list of attributes of a data set with the number of values each can
// take. Kernels name attributes by their position in the Domain (an AttrId), so a table over
// a subset of attributes is a list of AttrIds plus the matching sizes. Every dense table is
// sized through checked_cell_count(), which refuses products that overflow 64 bits or exceed
// the process-wide memory cap, so a hostile or mistaken clique fails with TableTooLarge
// instead of a bad_alloc or a silent wrap-around.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dpcore {

/// Position of an attribute in its Domain (0-based, domain order).
using AttrId = int;

/// Largest number of cells any single dense table may have (default 2**30 cells = 8 GiB of
/// float64). Process-wide; thread-safe to read.
std::uint64_t max_table_cells();

/// Change the cap on cells per table (must be >= 1). Returns the previous cap.
std::uint64_t set_max_table_cells(std::uint64_t cells);

/// Product of `shape`, checked: every size must be >= 1 (InvalidArgument otherwise) and the
/// product must fit in 64 bits and not exceed max_table_cells() (TableTooLarge otherwise).
std::uint64_t checked_cell_count(const std::vector<std::int64_t>& shape);

/// Product of `shape` as a double, never throws; for size estimates of tables that are never
/// allocated (AIM's hypothetical junction trees).
double cell_count_estimate(const std::vector<std::int64_t>& shape);

/// Ordered attributes with their sizes. Immutable after construction.
class Domain {
 public:
  /// Validates: as many names as sizes, names unique and non-empty, sizes >= 1.
  Domain(std::vector<std::string> attrs, std::vector<std::int64_t> shape);

  /// Attribute names in domain order.
  const std::vector<std::string>& attrs() const { return attrs_; }
  /// Attribute sizes in domain order.
  const std::vector<std::int64_t>& shape() const { return shape_; }
  /// Number of attributes.
  int num_attrs() const { return static_cast<int>(attrs_.size()); }
  /// Size of one attribute; InvalidArgument when `id` is out of range.
  std::int64_t size_of(AttrId id) const;
  /// AttrId of a name; InvalidArgument naming the attribute when unknown.
  AttrId index_of(const std::string& name) const;
  /// Sizes of the given attributes, in the given order (validates every id).
  std::vector<std::int64_t> shape_of(const std::vector<AttrId>& ids) const;
  /// Checked cell count of the table over `ids` (see checked_cell_count).
  std::uint64_t cells(const std::vector<AttrId>& ids) const;

 private:
  std::vector<std::string> attrs_;
  std::vector<std::int64_t> shape_;
};

/// Validates that `ids` are distinct and each in [0, num_attrs); InvalidArgument naming
/// `what` otherwise.
void check_attr_ids(const std::vector<AttrId>& ids, int num_attrs, const char* what);

/// Attribute ids as "(0, 3, 5)", for error messages.
std::string attrs_text(const std::vector<AttrId>& attrs);

}  // namespace dpcore
