// CSV text in and out, for plain files (no quoting): the inner loops of the table reader
// (split_csv: lines to per-column dictionaries of raw texts, dpcore.csvblocks) and writer
// (format_csv: decoded columns to lines, dpcore.encoding.write_table).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace dpcore {

/// One column of the rows to format. With `integers`, field r is data[r] in decimal, or the
/// missing text where `missing` (optional) is non-zero. Otherwise field r is
/// labels[data[r]], or the missing text where data[r] < 0 (a position past the labels is an
/// error).
struct CsvColumn {
  const std::int64_t* data = nullptr;    // integer values, or label positions
  std::vector<std::string> labels;       // the texts positions pick (not for integers)
  bool integers = false;
  const std::uint8_t* missing = nullptr; // integer columns only; may be null
};

/// Appends `n` rows to `out`: the columns' fields joined by `sep`, each row ended by `eol`.
/// InvalidArgument (and nothing appended) when a label position lies outside its labels.
void format_csv(const std::vector<CsvColumn>& columns, std::size_t n, const std::string& sep,
                const std::string& eol, const std::string& missing_text, std::string* out);

/// format_csv() in two steps, for a caller that owns the memory (the binding writes into a
/// Python bytes object: no zero-filled string, no copy): the text's exact size, checking
/// every label position as format_csv() does (InvalidArgument), then the text written at
/// `out`, which must hold that many bytes plus kCsvTextSlack (written over: fields are
/// copied in fixed-size moves; positions unchecked: call the first step first).
constexpr std::size_t kCsvTextSlack = 16;
std::size_t csv_text_size(const std::vector<CsvColumn>& columns, std::size_t n,
                          const std::string& sep, const std::string& eol,
                          const std::string& missing_text);
void write_csv_text(const std::vector<CsvColumn>& columns, std::size_t n, const std::string& sep,
                    const std::string& eol, const std::string& missing_text, char* out);

/// A block of CSV lines split into columns: for each column, each row's position among the
/// column's distinct texts, and those texts in order of first sight. From split_csv(): all
/// the block's texts (views into the block; `first` is 0). From CsvSplitter::split(): the
/// texts new in this block, which take positions first[column], first[column] + 1, ...
/// after the texts of earlier blocks (views into the splitter, valid until its next split).
struct CsvBlock {
  std::vector<std::vector<std::int32_t>> index;      // [column][row]
  std::vector<std::vector<std::string_view>> texts;  // [column][position - first]
  std::vector<std::size_t> first;                    // [column]
  std::size_t rows = 0;
};

/// What split_csv() found: kPlain (split), kNotPlain (a quote, a bare carriage return or an
/// empty line: the block needs a reader that knows quoting and refuses blank lines), kRagged
/// (a line with another field count; `row` is its 0-based line in the block).
enum class CsvSplit { kPlain, kNotPlain, kRagged };

/// The most columns split_csv() takes.
constexpr std::size_t kMaxColumns = std::size_t{1} << 20;

/// Splits `data` (whole lines, each ended by "\n" or "\r\n"; the last may lack its end) on
/// the one-byte delimiter `sep` into `columns` fields a line. Texts are raw bytes: nothing is
/// trimmed or interpreted. On kNotPlain / kRagged, `out` holds no usable rows. InvalidArgument
/// for no column, more than kMaxColumns, a delimiter that is a line feed, a carriage return
/// or a quote, or more than 2^31 - 1 lines or distinct texts. One pass finds the field ends
/// 64 bytes at a time (SSE2 where available); each field is looked up by its first 16
/// bytes and size in an open-addressing table a column.
CsvSplit split_csv(std::string_view data, char sep, std::size_t columns, CsvBlock* out,
                   std::size_t* row);

/// split_csv() for the blocks of one file in order, each column keeping its distinct texts
/// (copies) from block to block: a text is new once a file rather than once a block, so
/// the caller interprets each distinct text once. A column that holds more than `keep`
/// texts when a block starts drops them (its positions start again at 0: first == 0), so
/// memory stays bounded whatever the file's size. After a failed split the next starts
/// afresh in every column. InvalidArgument as split_csv().
class CsvSplitter {
 public:
  CsvSplitter(char sep, std::size_t columns, std::size_t keep);
  ~CsvSplitter();
  CsvSplitter(CsvSplitter&&) noexcept;
  CsvSplitter& operator=(CsvSplitter&&) noexcept;

  /// Splits the next block (whole lines, as split_csv()).
  CsvSplit split(std::string_view data, CsvBlock* out, std::size_t* row);

  /// Drops every column's texts: the next split starts afresh (as after a failed one).
  void reset();

  /// From the next split on, a field of `column` that is a decimal integer written the one
  /// way (an optional '-', 1 to 18 digits, no leading zero, not "-0") with a value x in
  /// starts[0]..last is not looked up by its text: its row gets codes[i] for the last i with
  /// starts[i] <= x (a step function: a table of at most 4096 buckets, a binary search in a
  /// bucket a start cuts), so a column of many distinct
  /// numbers (Adult's fnlwgt) costs a parse, not a cache miss a field. Other fields of the
  /// column are texts as before, but their row gets -(position + 1) (CsvBlock::index: a
  /// value >= 0 is a code). The caller computes the steps with its own encoder (the splitter
  /// knows no schema). InvalidArgument for a column out of range, starts not strictly
  /// increasing, sizes that differ, no step, last < starts[0] or a negative code; empty
  /// `starts` turns it off.
  void set_integer_steps(std::size_t column, std::vector<std::int64_t> starts,
                         std::vector<std::int32_t> codes, std::int64_t last);

 private:
  struct Columns;
  char sep_;
  std::size_t keep_;
  std::unique_ptr<Columns> columns_;
};

}  // namespace dpcore
