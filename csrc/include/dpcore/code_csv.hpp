// Synthetic codes straight to CSV text (dpcore.codecsv): the decoding and the formatting of
// dpcore.encoding's writer fused into one pass over the compact code array, writing into a
// buffer the caller reuses from chunk to chunk (no per-column int64 or label arrays, no
// DataFrame, no sizing pass, no fresh bytes object a chunk).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace dpcore {

/// How one column's codes become fields. Codes below `lo.size()` are *drawn*: the field is
/// the integer lo[c] + floor(u * width[c]) (IEEE doubles, the order of operations of
/// dpcore.encoding's uniform decoding of an integer bin [a, b]: lo = a, width = b - a + 1),
/// u the row's uniform draw. Any other code c < texts.size() is the text texts[c] (a label,
/// a code in decimal, a bin's midpoint, the missing text). A code past texts is an error.
struct CodeFieldFormat {
  std::vector<std::string> texts;
  std::vector<double> lo, width;
};

/// The columns of a table, the delimiter and the line end, prepared once a file.
class CodeCsvFormat {
 public:
  /// InvalidArgument when there is no column, lo and width differ in size, lo is longer
  /// than texts, or a drawn bin has a width below 1 or a bound of magnitude 2^62 or more
  /// (its values would not cast to an integer exactly).
  CodeCsvFormat(const std::vector<CodeFieldFormat>& columns, const std::string& sep,
                const std::string& eol);

  std::size_t columns() const { return columns_.size(); }
  /// How many drawn columns there are (each needs its row's uniform draws).
  std::size_t drawn_columns() const { return drawn_; }
  /// The most bytes a row can take (a bound; format() needs n rows of it plus kSlack).
  std::size_t max_row_bytes() const { return max_row_; }
  static constexpr std::size_t kSlack = 32;

  /// Writes n rows of codes (row r, column j at codes[r * row_stride + j * column_stride]) at
  /// `out` and returns the bytes written. `uniform[k]` holds the n draws of the k-th drawn
  /// column (in column order). InvalidArgument, naming the column and the row, for a code
  /// past its column's texts, or when `capacity` is below n * max_row_bytes() + kSlack.
  template <typename T>
  std::size_t format(const T* codes, std::size_t n, std::ptrdiff_t row_stride,
                     std::ptrdiff_t column_stride, const std::vector<const double*>& uniform,
                     char* out, std::size_t capacity) const;

 private:
  struct Column {
    std::size_t first = 0;    // its first text in texts_
    std::size_t codes = 0;    // texts (every code < codes is valid)
    std::size_t drawn = 0;    // codes below this are drawn
    std::size_t draw = 0;     // which uniform array (drawn columns)
    std::size_t bin = 0;      // its first bin in lo_ / width_
    // drawn columns of a small value range: value v's text (with its delimiter and line
    // end) is text values + (v - low), for low <= v < low + span (no integer formatting)
    std::int64_t low = 0, span = 0;
    std::size_t values = 0;
    // every bin's lo is an integer and lo, lo + width lie in [-2^53, 2^53]: lo + t is exact
    // in doubles, so the value is the integer sum ilo_[b] + t (no round trip through a double)
    bool exact = false;
  };
  static constexpr std::int64_t kMaxSpan = 4096;
  std::vector<Column> columns_;
  std::string bytes_;                    // each text with its delimiter / line end, padded
  // text k: bytes_[texts_[k].at, + texts_[k].size) (followed by kSlack padding bytes); one
  // load a field, where two neighbouring offsets took two and a subtraction
  struct Text {
    std::size_t at, size;
  };
  std::vector<Text> texts_;
  std::vector<double> lo_, width_;
  std::vector<std::int64_t> ilo_;        // lo_ as integers (exact columns)
  std::string sep_, eol_;
  std::size_t drawn_ = 0, max_row_ = 0;
};

}  // namespace dpcore
