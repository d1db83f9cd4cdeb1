// Marginal counting: the contingency tables of a batch of attribute subsets over
// integer-coded records. Every mechanism (AIM, MST, MWEM) measures these, and inference
// compares against them, so this is the hottest kernel on the data side.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dpcore {

/// Element type of an integer code matrix (the numpy integer dtypes).
enum class CodeType { Int8, UInt8, Int16, UInt16, Int32, UInt32, Int64, UInt64 };

/// A read-only N x d matrix of integer codes with arbitrary byte strides, so C-ordered,
/// Fortran-ordered and sliced numpy arrays are all read in place, without a copy.
struct RecordsView {
  const void* data = nullptr;
  CodeType type = CodeType::Int64;
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  std::int64_t row_stride = 0;  ///< bytes from one row to the next (may be negative)
  std::int64_t col_stride = 0;  ///< bytes from one column to the next (may be negative)
};

/// The CodeType of a C++ integer type T (compile error for other types).
template <class T>
constexpr CodeType code_type_of();
template <> constexpr CodeType code_type_of<std::int8_t>() { return CodeType::Int8; }
template <> constexpr CodeType code_type_of<std::uint8_t>() { return CodeType::UInt8; }
template <> constexpr CodeType code_type_of<std::int16_t>() { return CodeType::Int16; }
template <> constexpr CodeType code_type_of<std::uint16_t>() { return CodeType::UInt16; }
template <> constexpr CodeType code_type_of<std::int32_t>() { return CodeType::Int32; }
template <> constexpr CodeType code_type_of<std::uint32_t>() { return CodeType::UInt32; }
template <> constexpr CodeType code_type_of<std::int64_t>() { return CodeType::Int64; }
template <> constexpr CodeType code_type_of<std::uint64_t>() { return CodeType::UInt64; }

/// A view of a dense rows x cols array of T, row-major (C order) or column-major (Fortran).
template <class T>
RecordsView records_view(const T* data, std::int64_t rows, std::int64_t cols,
                         bool row_major = true) {
  const auto item = static_cast<std::int64_t>(sizeof(T));
  RecordsView view;
  view.data = data;
  view.type = code_type_of<T>();
  view.rows = rows;
  view.cols = cols;
  view.row_stride = row_major ? cols * item : item;
  view.col_stride = row_major ? item : rows * item;
  return view;
}

/// Optional per-record weights: a contiguous array of `size` doubles, one per row, each finite.
/// A default-constructed WeightsView (data == nullptr) means every record counts 1.
struct WeightsView {
  const double* data = nullptr;
  std::int64_t size = 0;
};

/// Largest table (and batch) cell count the kernel accepts: cell indices are 32-bit.
constexpr std::uint64_t kMaxCellsLimit = (std::uint64_t(1) << 32) - 1;

/// Limits and parallelism of the counting kernel.
struct CountOptions {
  /// Memory cap: the batch's total cell count (8 bytes a cell) must not exceed this.
  /// 0 (the default) means the process-wide cap max_table_cells() (domain.hpp). A cap above
  /// kMaxCellsLimit acts as kMaxCellsLimit.
  std::uint64_t max_cells = 0;
  /// Worker threads; 0 means std::thread::hardware_concurrency(). Small inputs run serially.
  int threads = 0;
  /// Optional attribute names (one per column), used only to make error messages readable.
  std::vector<std::string> column_names;
};

/// Exact cell count of the table over `subset` (product of its attribute sizes).
/// Throws InvalidArgument for an attribute index outside [0, sizes.size()) or repeated
/// inside the subset, and TableTooLarge when the product overflows 64 bits.
std::uint64_t table_cells(const std::vector<std::int64_t>& sizes,
                          const std::vector<int>& subset);

/// Total cells of the batch's tables, after checking each subset (as table_cells does).
/// Throws TableTooLarge when the total exceeds max_cells (0: max_table_cells(); at most
/// kMaxCellsLimit) or 64 bits.
std::uint64_t batch_cells(const std::vector<std::int64_t>& sizes,
                          const std::vector<std::vector<int>>& subsets, std::uint64_t max_cells);

/// Checks every code of `records` lies in [0, sizes[col]). Throws DomainError naming the
/// column, the row and the value of the first bad code (lowest row, then lowest column),
/// and InvalidArgument when sizes.size() != records.cols or a size is < 1 or > 2^32.
void validate_codes(const RecordsView& records, const std::vector<std::int64_t>& sizes,
                    const CountOptions& options = {});

/// Counts the marginal table of each subset in `subsets` into outputs[k], which must point
/// to table_cells(sizes, subsets[k]) doubles (overwritten, need not be initialised).
/// Table k is row-major over subsets[k] in the order given (which may differ from column
/// order): cell (c_1, ..., c_m) sits at ((c_1 * s_2 + c_2) * s_3 + c_3) ... . An empty subset
/// yields one cell, the total. Without weights the counts are exact integers; with weights
/// each cell is a sum of weights (its rounding may depend on the thread count).
/// Only the columns some subset uses are validated (see validate_codes for the errors).
/// Throws TableTooLarge when the batch's total cells exceed options.max_cells, and
/// InvalidArgument for bad sizes, subsets, weights (wrong length, NaN or infinite) or options.
void count_marginals_into(const RecordsView& records, const std::vector<std::int64_t>& sizes,
                          const std::vector<std::vector<int>>& subsets,
                          const std::vector<double*>& outputs, const WeightsView& weights = {},
                          const CountOptions& options = {});

/// As count_marginals_into, allocating one table per subset.
std::vector<std::vector<double>> count_marginals(const RecordsView& records,
                                                 const std::vector<std::int64_t>& sizes,
                                                 const std::vector<std::vector<int>>& subsets,
                                                 const WeightsView& weights = {},
                                                 const CountOptions& options = {});

}  // namespace dpcore
