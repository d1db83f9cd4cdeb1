// CSV text from decoded columns: the inner loop of the table writer (dpcore.encoding.write_table),
// for the columns decoding makes most (labels by index, integers). No quoting: the caller hands
// over only texts without the delimiter, a quote or a line break.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace dpcore {

/// One column of the rows to format. With `labels` non-empty (or `values` null), field r is
/// labels[index[r]], or the missing text where index[r] < 0. Otherwise field r is values[r] in
/// decimal, or the missing text where `missing` (optional) is non-zero.
struct CsvColumn {
  const std::int64_t* data = nullptr;    // label positions, or integer values
  std::vector<std::string> labels;       // empty for an integer column
  bool integers = false;
  const std::uint8_t* missing = nullptr; // integer columns only; may be null
};

/// Appends `n` rows to `out`: the columns' fields joined by `sep`, each row ended by `eol`.
/// InvalidArgument when a label position lies outside its labels.
void format_csv(const std::vector<CsvColumn>& columns, std::size_t n, const std::string& sep,
                const std::string& eol, const std::string& missing_text, std::string* out);

}  // namespace dpcore
