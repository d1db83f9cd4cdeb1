#include "dpcore/csv.hpp"

#include <algorithm>
#include <charconv>
#include <cstring>

#include "dpcore/errors.hpp"

namespace dpcore {

void format_csv(const std::vector<CsvColumn>& columns, std::size_t n, const std::string& sep,
                const std::string& eol, const std::string& missing_text, std::string* out) {
  if (columns.empty() || n == 0) return;
  // The longest a row can be, so the text is written through a pointer into one allocation.
  std::size_t widest = eol.size() + sep.size() * (columns.size() - 1);
  for (const CsvColumn& c : columns) {
    std::size_t w = missing_text.size();
    if (c.integers) w = std::max<std::size_t>(w, 20);   // -9223372036854775808
    for (const std::string& label : c.labels) w = std::max(w, label.size());
    widest += w;
  }
  const std::size_t start = out->size();
  out->resize(start + widest * n);
  char* p = out->data() + start;
  for (std::size_t r = 0; r < n; ++r) {
    for (std::size_t j = 0; j < columns.size(); ++j) {
      const CsvColumn& c = columns[j];
      if (j > 0) {
        std::memcpy(p, sep.data(), sep.size());
        p += sep.size();
      }
      const std::int64_t v = c.data[r];
      const std::string* text = nullptr;
      if (c.integers) {
        if (c.missing != nullptr && c.missing[r] != 0) {
          text = &missing_text;
        } else {
          p = std::to_chars(p, p + 20, v).ptr;
          continue;
        }
      } else if (v < 0) {
        text = &missing_text;
      } else if (static_cast<std::size_t>(v) < c.labels.size()) {
        text = &c.labels[static_cast<std::size_t>(v)];
      } else {
        out->resize(start);
        throw InvalidArgument("column " + std::to_string(j) + ", row " + std::to_string(r) +
                              ": label position " + std::to_string(v) + " outside 0.." +
                              std::to_string(c.labels.size()) + " - 1");
      }
      std::memcpy(p, text->data(), text->size());
      p += text->size();
    }
    std::memcpy(p, eol.data(), eol.size());
    p += eol.size();
  }
  out->resize(static_cast<std::size_t>(p - out->data()));
}

}  // namespace dpcore
