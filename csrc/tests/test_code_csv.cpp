// Unit tests for CodeCsvFormat (codes straight to CSV rows): texts by code with their
// delimiters and line ends, drawn integers lo + floor(u * width) at the extremes, any code
// dtype and strides, the refusals (a code past its texts, a short buffer, bad bins), and
// the drawn values' sums on both sides of 2^53.
#include "dpcore/code_csv.hpp"

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "check.hpp"
#include "dpcore/errors.hpp"

using namespace dpcore;

static std::string run(const CodeCsvFormat& f, const std::vector<std::uint8_t>& codes,
                       std::size_t n, const std::vector<const double*>& u) {
  std::string out(n * f.max_row_bytes() + CodeCsvFormat::kSlack, '\0');
  const std::size_t size = f.format(codes.data(), n, std::ptrdiff_t(f.columns()), 1, u,
                                    out.data(), out.size());
  return out.substr(0, size);
}

static void test_rows() {
  CodeFieldFormat drawn;                  // bins [-3, 3] and [10, 10]; code 2: missing
  drawn.texts = {"", "", "?"};
  drawn.lo = {-3.0, 10.0};
  drawn.width = {7.0, 1.0};
  CodeFieldFormat labels;
  labels.texts = {"a", "a label longer than thirty-two bytes", "\xc3\xa9", ""};
  const CodeCsvFormat f({drawn, labels}, "::", "\r\n");
  CHECK(f.columns() == 2 && f.drawn_columns() == 1);
  const std::vector<std::uint8_t> codes{0, 0, 0, 1, 1, 2, 2, 3, 0, 3};
  const double u[] = {0.0, 0.999999999, 0.5, 0.3, 0.5};
  CHECK(run(f, codes, 5, {u}) ==
        "-3::a\r\n3::a label longer than thirty-two bytes\r\n10::\xc3\xa9\r\n?::\r\n0::\r\n");
  CHECK(run(f, codes, 0, {u}).empty());
  // column strides: the codes of a column-major (Fortran) table
  const std::vector<std::uint16_t> columns{0, 1, 2, 3};   // rows (0, 2) and (1, 3)
  std::string out(2 * f.max_row_bytes() + CodeCsvFormat::kSlack, '\0');
  const double half[] = {0.5, 0.5};
  const std::size_t size = f.format(columns.data(), 2, 1, 2, {half}, out.data(), out.size());
  CHECK(out.substr(0, size) == "0::\xc3\xa9\r\n10::\r\n");
}

static void test_refusals() {
  CodeFieldFormat one;
  one.texts = {"x", "y"};
  const CodeCsvFormat f({one, one}, ",", "\n");
  std::string out(4 * f.max_row_bytes() + CodeCsvFormat::kSlack, '\0');
  const std::vector<std::uint8_t> bad{0, 1, 1, 2};
  CHECK_THROWS(f.format(bad.data(), 2, 2, 1, {}, out.data(), out.size()), InvalidArgument);
  const std::vector<std::int64_t> negative{0, -1};
  CHECK_THROWS(f.format(negative.data(), 1, 2, 1, {}, out.data(), out.size()), InvalidArgument);
  const std::vector<std::uint8_t> fine(10, 0);
  CHECK_THROWS(f.format(fine.data(), 5, 2, 1, {}, out.data(), out.size()), InvalidArgument);
  const double u[] = {0.5};
  CHECK_THROWS(f.format(fine.data(), 1, 2, 1, {u}, out.data(), out.size()), InvalidArgument);
  CHECK_THROWS(CodeCsvFormat({}, ",", "\n"), InvalidArgument);
  for (const auto& [lo, width] : std::vector<std::pair<double, double>>{
           {INFINITY, 1.0}, {0.0, 0.5}, {4611686018427387904.0, 1.0}, {0.0, NAN}}) {
    CodeFieldFormat drawn;
    drawn.texts = {""};
    drawn.lo = {lo};
    drawn.width = {width};
    CHECK_THROWS(CodeCsvFormat({drawn}, ",", "\n"), InvalidArgument);
  }
  CodeFieldFormat uneven;
  uneven.texts = {"", ""};
  uneven.lo = {0.0, 1.0};
  uneven.width = {1.0};
  CHECK_THROWS(CodeCsvFormat({uneven}, ",", "\n"), InvalidArgument);
}

// A drawn value is lo + floor(u * width) in doubles, as NumPy computes it. Where the bins'
// bounds are integers within 2^53 the writer sums in integers (exact there); past 2^53 or
// with a fractional lo it keeps the double sum, whose rounding the integer sum would miss.
static void test_drawn_sums() {
  const double big = 9007199254740992.0;     // 2^53
  const std::vector<double> los = {-5.0, 0.0, big - 8.0, big, 3.0 * big, -3.0 * big, 0.5, -2.5};
  const std::vector<double> widths = {1.0, 7.0, 100000.0, 1e15, 4.0 * big};
  const std::vector<double> us = {0.0, 0.25, 0.5, 0.999999, 1.0 - std::ldexp(1.0, -53)};
  for (double lo : los)
    for (double width : widths) {
      if (!(std::fabs(lo + width) < std::ldexp(1.0, 62))) continue;
      CodeFieldFormat drawn;
      drawn.texts = {""};
      drawn.lo = {lo};
      drawn.width = {width};
      CodeFieldFormat tail;
      tail.texts = {"x"};
      const CodeCsvFormat f({drawn, tail}, ",", "\n");
      for (double u : us) {
        const double value = lo + std::floor(u * width);
        const std::string want = std::to_string(static_cast<long long>(value)) + ",x\n";
        CHECK(run(f, {0, 0}, 1, {&u}) == want);
      }
    }
}

int main() {
  test_rows();
  test_refusals();
  test_drawn_sums();
  return dpcore_test::report();
}
