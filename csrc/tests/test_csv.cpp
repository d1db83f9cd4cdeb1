// Unit tests for the CSV formatter: labels by position, integers (extremes included), missing
// fields, several-byte delimiters and line ends, a bad position refused with nothing appended.
#include "dpcore/csv.hpp"

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "check.hpp"
#include "dpcore/errors.hpp"

using namespace dpcore;

static void test_rows() {
  const std::vector<std::int64_t> pos{1, -1, 0};
  const std::vector<std::int64_t> num{5, std::numeric_limits<std::int64_t>::min(),
                                      std::numeric_limits<std::int64_t>::max()};
  const std::vector<std::uint8_t> miss{0, 1, 0};
  CsvColumn labels;
  labels.data = pos.data();
  labels.labels = {"a", "b\xc3\xa9"};
  CsvColumn ints;
  ints.data = num.data();
  ints.integers = true;
  ints.missing = miss.data();
  std::string out = "head\n";
  format_csv({labels, ints}, 3, ",", "\n", "?", &out);
  CHECK(out == "head\nb\xc3\xa9,5\n?,?\na,9223372036854775807\n");
  ints.missing = nullptr;
  out.clear();
  format_csv({ints, labels}, 2, "::", "\r\n", "", &out);
  CHECK(out == "5::b\xc3\xa9\r\n-9223372036854775808::\r\n");
  out = "kept";
  format_csv({labels}, 0, ",", "\n", "?", &out);
  CHECK(out == "kept");
}

static void test_bad_position_refused() {
  const std::vector<std::int64_t> pos{0, 2};
  CsvColumn labels;
  labels.data = pos.data();
  labels.labels = {"a", "b"};
  std::string out = "kept";
  CHECK_THROWS(format_csv({labels}, 2, ",", "\n", "?", &out), InvalidArgument);
  CHECK(out == "kept");
}

int main() {
  test_rows();
  test_bad_position_refused();
  return dpcore_test::report();
}
