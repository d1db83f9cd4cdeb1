// CSV text in and out, for plain files (no quoting): the inner loops of the table reader
// (split_csv: lines to per-column dictionaries of raw texts, dpcore.csvblocks) and writer
// (format_csv: decoded columns to lines, dpcore.encoding.write_table).
#pragma once

#include <cstddef>
#include <cstdint>
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

/// A block of CSV lines split into columns: for each column, each row's position among the
/// column's distinct texts, and those texts (views into the block) in order of first sight.
struct CsvBlock {
  std::vector<std::vector<std::int32_t>> index;      // [column][row]
  std::vector<std::vector<std::string_view>> texts;  // [column][position]
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

}  // namespace dpcore
