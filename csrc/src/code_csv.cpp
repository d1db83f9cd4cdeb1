#include "dpcore/code_csv.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>

#include "dpcore/errors.hpp"

namespace dpcore {

namespace {

constexpr double kMaxDrawn = 4611686018427387904.0;   // 2^62: drawn values cast exactly

std::size_t decimal_width(std::int64_t v) {
  char digits[24];
  return static_cast<std::size_t>(std::to_chars(digits, digits + sizeof digits, v).ptr - digits);
}

// A text of at most kSlack bytes is copied by one fixed-size memcpy (the bytes past its end
// are padding in the table and are overwritten by what follows in the output).
inline char* put(char* p, const char* text, std::size_t size) {
  if (size <= CodeCsvFormat::kSlack)
    std::memcpy(p, text, CodeCsvFormat::kSlack);
  else
    std::memcpy(p, text, size);
  return p + size;
}

}  // namespace

CodeCsvFormat::CodeCsvFormat(const std::vector<CodeFieldFormat>& columns, const std::string& sep,
                             const std::string& eol)
    : sep_(sep), eol_(eol) {
  if (columns.empty()) throw InvalidArgument("a CSV format needs at least one column");
  const std::size_t last = columns.size() - 1;
  // the delimiter and the line end, padded, at the front of the table
  bytes_ = sep_ + std::string(kSlack, '\0') + eol_ + std::string(kSlack, '\0');
  for (std::size_t j = 0; j < columns.size(); ++j) {
    const CodeFieldFormat& f = columns[j];
    if (f.lo.size() != f.width.size())
      throw InvalidArgument("column " + std::to_string(j) + ": lo and width differ in size");
    if (f.lo.size() > f.texts.size())
      throw InvalidArgument("column " + std::to_string(j) + ": more drawn bins than codes");
    Column c;
    c.first = texts_.size();
    c.codes = f.texts.size();
    c.drawn = f.lo.size();
    c.bin = lo_.size();
    std::size_t widest = 0;
    if (c.drawn > 0) c.draw = drawn_++;
    for (std::size_t b = 0; b < c.drawn; ++b) {
      const double lo = f.lo[b], top = f.lo[b] + f.width[b];
      if (!(std::fabs(lo) < kMaxDrawn) || !(std::fabs(top) < kMaxDrawn) || !(f.width[b] >= 1))
        throw InvalidArgument("column " + std::to_string(j) + ", bin " + std::to_string(b) +
                              ": a drawn bin needs finite bounds inside (-2^62, 2^62) and a width >= 1");
      // every value lies in [lo, lo + width]: its digits are at most the wider end's
      widest = std::max({widest, decimal_width(static_cast<std::int64_t>(lo)),
                         decimal_width(static_cast<std::int64_t>(top))});
      lo_.push_back(lo);
      width_.push_back(f.width[b]);
      ilo_.push_back(static_cast<std::int64_t>(lo));
    }
    constexpr double kExact = 9007199254740992.0;   // 2^53
    c.exact = c.drawn > 0;
    for (std::size_t b = c.bin; b < c.bin + c.drawn; ++b)
      c.exact = c.exact && lo_[b] == std::trunc(lo_[b]) && std::fabs(lo_[b]) <= kExact &&
                std::fabs(lo_[b] + width_[b]) <= kExact;
    if (c.drawn > 0) widest += (j > 0 ? sep_.size() : 0) + (j == last ? eol_.size() : 0);
    // each text carries its delimiter (after the first column) and its line end (the last)
    auto add = [&](const std::string& text) {
      std::string field = (j > 0 ? sep_ : std::string()) + text + (j == last ? eol_ : "");
      widest = std::max(widest, field.size());
      texts_.push_back({bytes_.size(), field.size()});
      bytes_ += field;
      bytes_.append(kSlack, '\0');
    };
    for (const std::string& text : f.texts) add(text);
    if (c.drawn > 0) {      // the values of a small range as texts too (a copy, not a format)
      double low = lo_[c.bin], high = lo_[c.bin] + width_[c.bin];
      for (std::size_t b = 1; b < c.drawn; ++b) {
        low = std::min(low, lo_[c.bin + b]);
        high = std::max(high, lo_[c.bin + b] + width_[c.bin + b]);
      }
      if (high - low <= double(kMaxSpan)) {
        c.low = static_cast<std::int64_t>(low);
        c.span = static_cast<std::int64_t>(high - low) + 1;
        c.values = texts_.size();
        for (std::int64_t v = 0; v < c.span; ++v) add(std::to_string(c.low + v));
      }
    }
    max_row_ += widest;
    columns_.push_back(c);
  }
}

template <typename T>
std::size_t CodeCsvFormat::format(const T* codes, std::size_t n, std::ptrdiff_t row_stride,
                                  std::ptrdiff_t column_stride,
                                  const std::vector<const double*>& uniform, char* out,
                                  std::size_t capacity) const {
  if (uniform.size() != drawn_)
    throw InvalidArgument("format needs " + std::to_string(drawn_) + " arrays of draws, got " +
                          std::to_string(uniform.size()));
  if (n > 0 && (capacity < kSlack || (capacity - kSlack) / n < max_row_))
    throw InvalidArgument("the output buffer holds " + std::to_string(capacity) +
                          " bytes; " + std::to_string(n) + " rows need up to " +
                          std::to_string(n) + " x " + std::to_string(max_row_) + " + " +
                          std::to_string(kSlack));
  // The tables' addresses and sizes in locals: every byte stored through `p` (a char) may
  // alias any object, this one's members included, so reading them through `this` reloaded
  // them after each field's copy.
  const char* const bytes = bytes_.data();
  const Text* const texts = texts_.data();
  const Column* const cols = columns_.data();
  const double* const lo = lo_.data();
  const double* const width = width_.data();
  const std::int64_t* const ilo = ilo_.data();
  const double* const* const draws = uniform.data();
  const std::size_t ncols = columns_.size(), sep_size = sep_.size(), eol_size = eol_.size();
  const char* sep = bytes;
  const char* eol = bytes + sep_size + kSlack;
  const std::size_t last = ncols - 1;
  char* p = out;
  for (std::size_t r = 0; r < n; ++r) {
    const T* row = codes + std::ptrdiff_t(r) * row_stride;
    for (std::size_t j = 0; j < ncols; ++j) {
      const Column& c = cols[j];
      const T raw = row[std::ptrdiff_t(j) * column_stride];
      // a negative code (signed T) becomes a huge one: refused below
      const auto code = static_cast<std::uint64_t>(raw);
      if (code < c.drawn) {
        const std::size_t b = c.bin + std::size_t(code);
        // the row budget holds a value in [lo, lo + width]: a draw outside [0, 1) (or NaN)
        // would write past it
        const double u = draws[c.draw][r];
        if (!(u >= 0.0 && u < 1.0))
          throw InvalidArgument("column " + std::to_string(j) + ", row " + std::to_string(r) +
                                ": a uniform draw must lie in [0, 1), got " + std::to_string(u));
        // lo + floor(u * width), as NumPy computes a + floor(random * (b - a + 1)). Here
        // 0 <= u * width < 2^63, where floor is truncation: through int64 and back it is
        // exactly std::floor's double (below 2^53 the integer part; above, the double is
        // already an integer), without the SSE2 floor emulation (no roundsd before SSE4.1).
        // In an exact column (Column::exact) the sum is taken in integers: the same value,
        // a shorter chain of conversions before the field's text is known.
        const auto whole = static_cast<std::int64_t>(u * width[b]);
        const std::int64_t v =
            c.exact ? ilo[b] + whole
                    : static_cast<std::int64_t>(lo[b] + static_cast<double>(whole));
        const auto at = static_cast<std::uint64_t>(v - c.low);
        if (at < static_cast<std::uint64_t>(c.span)) {     // a small range: the value's text
          const Text& t = texts[c.values + std::size_t(at)];
          p = put(p, bytes + t.at, t.size);
          continue;
        }
        if (j > 0) p = put(p, sep, sep_size);
        p = std::to_chars(p, p + 24, v).ptr;
        if (j == last) p = put(p, eol, eol_size);
      } else if (code < c.codes) {
        const Text& t = texts[c.first + std::size_t(code)];
        p = put(p, bytes + t.at, t.size);
      } else {
        throw InvalidArgument("column " + std::to_string(j) + ", row " + std::to_string(r) +
                              ": code " + std::to_string(static_cast<long long>(raw)) +
                              " outside 0.." + std::to_string(c.codes) + " - 1");
      }
    }
  }
  return static_cast<std::size_t>(p - out);
}

#define DPCORE_CODE_CSV_FORMAT(T)                                                          \
  template std::size_t CodeCsvFormat::format<T>(const T*, std::size_t, std::ptrdiff_t,     \
                                                std::ptrdiff_t,                            \
                                                const std::vector<const double*>&, char*,  \
                                                std::size_t) const;
DPCORE_CODE_CSV_FORMAT(std::uint8_t)
DPCORE_CODE_CSV_FORMAT(std::uint16_t)
DPCORE_CODE_CSV_FORMAT(std::uint32_t)
DPCORE_CODE_CSV_FORMAT(std::uint64_t)
DPCORE_CODE_CSV_FORMAT(std::int64_t)
#undef DPCORE_CODE_CSV_FORMAT

}  // namespace dpcore
