// Unit tests for the CSV splitter (distinct texts by position, plain-text and field-count
// checks) and formatter (labels by position, integers with their extremes, missing fields,
// several-byte delimiters and line ends, a bad position refused with nothing appended).
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

static void test_split() {
  CsvBlock block;
  std::size_t row = 99;
  // CRLF and LF mixed, an empty field, a missing final line end, repeated texts
  CHECK(split_csv("a,1\r\nb,\na,1\nc,2", ',', 2, &block, &row) == CsvSplit::kPlain);
  CHECK(block.rows == 4);
  CHECK((block.index[0] == std::vector<std::int32_t>{0, 1, 0, 2}));
  CHECK((block.texts[0] == std::vector<std::string_view>{"a", "b", "c"}));
  CHECK((block.index[1] == std::vector<std::int32_t>{0, 1, 0, 2}));
  CHECK((block.texts[1] == std::vector<std::string_view>{"1", "", "2"}));
  // many distinct texts (the table grows), long and short, all told apart
  std::string many;
  for (int i = 0; i < 5000; ++i) many += std::to_string(i * 7919) + "|long text number " +
                                         std::to_string(i % 100) + "\n";
  CHECK(split_csv(many, '|', 2, &block, &row) == CsvSplit::kPlain);
  CHECK(block.rows == 5000 && block.texts[0].size() == 5000 && block.texts[1].size() == 100);
  for (int i = 0; i < 5000; ++i) {
    CHECK(block.index[0][std::size_t(i)] == i);
    CHECK(block.index[1][std::size_t(i)] == i % 100);
  }
  // not plain: a quote, a bare CR, an empty line
  for (const char* text : {"a,\"b\"\n", "a,b\rc,d\n", "a,b\n\nc,d\n", "\na,b\n", "a,b\r"})
    CHECK(split_csv(text, ',', 2, &block, &row) == CsvSplit::kNotPlain);
  // ragged: too few or too many fields, on the line that has them
  CHECK(split_csv("a,b\nc\n", ',', 2, &block, &row) == CsvSplit::kRagged && row == 1);
  CHECK(split_csv("a,b,c\n", ',', 2, &block, &row) == CsvSplit::kRagged && row == 0);
  CHECK(split_csv("", ',', 2, &block, &row) == CsvSplit::kPlain && block.rows == 0);
  // a last line without its end, ending in a delimiter: its last field is empty
  CHECK(split_csv("a,b\nc,", ',', 2, &block, &row) == CsvSplit::kPlain && block.rows == 2);
  CHECK((block.texts[1] == std::vector<std::string_view>{"b", ""}));
  // the delimiter cannot be a line end or a quote
  for (char bad : {'\n', '\r', '"'}) CHECK_THROWS(split_csv("a\n", bad, 1, &block, &row), InvalidArgument);
  CHECK_THROWS(split_csv("a\n", ',', 0, &block, &row), InvalidArgument);
}

static void test_splitter_keeps_texts() {
  using Views = std::vector<std::string_view>;
  using Positions = std::vector<std::int32_t>;
  CsvBlock block;
  std::size_t row = 99;
  CsvSplitter keep_all(',', 2, 100);
  CHECK(keep_all.split("a,1\nb,2\n", &block, &row) == CsvSplit::kPlain && block.rows == 2);
  CHECK((block.first == std::vector<std::size_t>{0, 0}));
  CHECK((block.texts[0] == Views{"a", "b"} && block.index[0] == Positions{0, 1}));
  std::string second = "b,3\na,1\n";       // its texts are copied: the block may go
  CHECK(keep_all.split(second, &block, &row) == CsvSplit::kPlain && block.rows == 2);
  second.assign(second.size(), 'x');
  CHECK((block.first == std::vector<std::size_t>{2, 2}));
  CHECK((block.texts[0].empty() && block.index[0] == Positions{1, 0}));
  CHECK((block.texts[1] == Views{"3"} && block.index[1] == Positions{2, 0}));
  // past `keep` texts a column starts afresh at the next block; the other keeps its own
  CsvSplitter keep_two(',', 2, 2);
  CHECK(keep_two.split("a,1\nb,1\nc,1\n", &block, &row) == CsvSplit::kPlain);
  CHECK(keep_two.split("c,1\nd,2\n", &block, &row) == CsvSplit::kPlain);
  CHECK((block.first == std::vector<std::size_t>{0, 1}));
  CHECK((block.texts[0] == Views{"c", "d"} && block.index[0] == Positions{0, 1}));
  CHECK((block.texts[1] == Views{"2"} && block.index[1] == Positions{0, 1}));
  // long texts (past the 16-byte head) told apart across blocks
  CsvSplitter long_texts('|', 1, 100);
  CHECK(long_texts.split("a long text of thirty bytes...\n", &block, &row) == CsvSplit::kPlain);
  CHECK(long_texts.split("a long text of thirty bytes..!\na long text of thirty bytes...\n",
                         &block, &row) == CsvSplit::kPlain);
  CHECK((block.first == std::vector<std::size_t>{1} && block.index[0] == Positions{1, 0}));
  // a failed block: the next starts afresh
  CHECK(keep_all.split("a,1,x\n", &block, &row) == CsvSplit::kRagged && row == 0);
  CHECK(keep_all.split("z,1\n", &block, &row) == CsvSplit::kPlain);
  CHECK((block.first == std::vector<std::size_t>{0, 0} && block.texts[0] == Views{"z"}));
  CHECK_THROWS(CsvSplitter(',', 0, 1), InvalidArgument);
  CHECK_THROWS(CsvSplitter('\n', 1, 1), InvalidArgument);
}

int main() {
  test_rows();
  test_splitter_keeps_texts();
  test_split();
  test_bad_position_refused();
  return dpcore_test::report();
}
