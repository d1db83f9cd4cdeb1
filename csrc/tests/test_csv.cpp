// Unit tests for the CSV splitter (distinct texts by position, plain-text and field-count
// checks) and formatter (labels by position, integers with their extremes, missing fields,
// several-byte delimiters and line ends, a bad position refused with nothing appended).
#include "dpcore/csv.hpp"

#include <algorithm>
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

// A column with many texts kept (past 1024: looked up in prefetched batches) next to a
// small one (looked up as found): positions in order of first sight in both.
static void test_splitter_large_and_small_columns() {
  CsvBlock block;
  std::size_t row = 99;
  CsvSplitter splitter(',', 2, 1 << 16);
  std::string first;
  for (int i = 0; i < 3000; ++i) first += "t" + std::to_string(i) + "," + std::to_string(i % 3) + "\n";
  CHECK(splitter.split(first, &block, &row) == CsvSplit::kPlain && block.rows == 3000);
  std::string second;      // old texts backwards, new ones interleaved
  for (int i = 2999; i >= 0; --i) second += "t" + std::to_string(i) + ",x\nu" + std::to_string(i) + ",1\n";
  CHECK(splitter.split(second, &block, &row) == CsvSplit::kPlain && block.rows == 6000);
  CHECK(block.first[0] == 3000 && block.texts[0].size() == 3000 && block.texts[1].size() == 1);
  for (int k = 0; k < 3000; ++k) {
    const std::size_t r = std::size_t(2 * k);
    CHECK(block.index[0][r] == 2999 - k);                 // kept: its first block's position
    CHECK(block.index[0][r + 1] == 3000 + k);             // new: in order of sight
    CHECK(block.texts[0][std::size_t(k)] == "u" + std::to_string(2999 - k));
    CHECK(block.index[1][r] == 3 && block.index[1][r + 1] == 1);
  }
}

// Integer steps: a canonical integer in range gets its step's code; any other text keeps
// its position, marked -(position + 1); bad tables are refused.
static void test_splitter_integer_steps() {
  using Positions = std::vector<std::int32_t>;
  CsvBlock block;
  std::size_t row = 99;
  CsvSplitter splitter(',', 2, 100);
  splitter.set_integer_steps(1, {-5, 0, 10}, {7, 8, 9}, 20);
  CHECK(splitter.split("a,-5\na,-1\na,0\na,10\na,20\na,21\na,007\na,-0\na,x\na,21\n"
                       "a,999999999999999999\na,9999999999999999999\n", &block, &row) ==
        CsvSplit::kPlain);
  CHECK((block.index[1] == Positions{7, 7, 8, 9, 9, -1, -2, -3, -4, -1, -5, -6}));
  CHECK(block.texts[1].size() == 6 && block.texts[1][0] == "21" && block.texts[1][3] == "x");
  CHECK((block.index[0] == Positions(12, 0)));       // the other column: texts as before
  // a long range: the binary search
  splitter.set_integer_steps(0, {0, 100000, 1000000}, {1, 2, 3}, 2000000);
  CHECK(splitter.split("99999,0\n100000,0\n1999999,0\n2000001,0\n", &block, &row) ==
        CsvSplit::kPlain);
  CHECK((block.index[0] == Positions{1, 2, 3, -2}));   // "a" kept at 0
  // buckets of a long range (one cut by several starts): every value against brute force
  const std::vector<std::int64_t> starts{-1000000, -3, 0, 7, 8, 5000, 123457, 1000000};
  const std::vector<std::int32_t> codes{4, 0, 6, 1, 1, 2, 5, 3};
  CsvSplitter wide(',', 1, 100);
  wide.set_integer_steps(0, starts, codes, 3000000);
  std::vector<std::int64_t> values;
  for (std::int64_t s : starts)
    for (std::int64_t d = -3; d <= 3; ++d) values.push_back(s + d);
  for (std::int64_t v = 3000000 - 3; v <= 3000000 + 3; ++v) values.push_back(v);
  std::uint64_t x = 12345;
  for (int i = 0; i < 5000; ++i) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    values.push_back(std::int64_t(x >> 40) % 4100000 - 1050000);
  }
  std::string lines;
  for (std::int64_t v : values) lines += std::to_string(v) + "\n";
  CHECK(wide.split(lines, &block, &row) == CsvSplit::kPlain && block.rows == values.size());
  for (std::size_t i = 0; i < values.size(); ++i) {
    const std::int64_t v = values[i];
    if (v < starts.front() || v > 3000000) {
      CHECK(block.index[0][i] < 0);
    } else {
      const auto k = std::size_t(std::upper_bound(starts.begin(), starts.end(), v) -
                                 starts.begin()) - 1;
      CHECK(block.index[0][i] == codes[k]);
    }
  }
  splitter.set_integer_steps(0, {}, {}, 0);          // off: texts again
  CHECK(splitter.split("5,0\n", &block, &row) == CsvSplit::kPlain && block.index[0][0] >= 0);
  CHECK_THROWS(splitter.set_integer_steps(2, {0}, {0}, 1), InvalidArgument);
  // review 16b: ranges near the int64 limits overflowed the bucket arithmetic (no parsed
  // value reaches 10^18, so such steps are refused)
  CHECK_THROWS(splitter.set_integer_steps(0, {std::numeric_limits<std::int64_t>::min()}, {0},
                                          std::numeric_limits<std::int64_t>::max()),
               InvalidArgument);
  CHECK_THROWS(splitter.set_integer_steps(0, {0}, {0}, 1000000000000000000), InvalidArgument);
  CHECK_THROWS(splitter.set_integer_steps(0, {0, 1}, {0}, 1), InvalidArgument);
  CHECK_THROWS(splitter.set_integer_steps(0, {1, 1}, {0, 1}, 1), InvalidArgument);
  CHECK_THROWS(splitter.set_integer_steps(0, {0}, {-1}, 1), InvalidArgument);
  CHECK_THROWS(splitter.set_integer_steps(0, {5}, {0}, 4), InvalidArgument);
}

// The block's first pass (line feeds counted in 16-byte lanes, summed every 255 steps) finds
// a quote or a bare carriage return wherever it is, and counts every line.
static void test_scan_finds_every_quote_and_cr() {
  CsvBlock block;
  std::size_t row = 99;
  std::string text;
  for (int i = 0; i < 1000; ++i) text += "ab,c\n";   // 5000 bytes: past one 4080-byte round
  for (std::size_t size : {std::size_t(0), std::size_t(5), std::size_t(15), std::size_t(80),
                           std::size_t(4080), std::size_t(4085), text.size()}) {
    CHECK(split_csv(std::string_view(text).substr(0, size), ',', 2, &block, &row) ==
              CsvSplit::kPlain &&
          block.rows == size / 5);
  }
  for (std::size_t k = 0; k < text.size(); ++k) {
    std::string quoted = text;
    quoted[k] = '"';
    CHECK(split_csv(quoted, ',', 2, &block, &row) == CsvSplit::kNotPlain);
    std::string cr = text;
    cr[k] = '\r';                                       // before a line feed: a CRLF end
    const CsvSplit want = text[k + 1 < text.size() ? k + 1 : k] == '\n' && text[k] != '\n'
                              ? CsvSplit::kPlain : CsvSplit::kNotPlain;
    CHECK(split_csv(cr, ',', 2, &block, &row) == want);
  }
}

// Texts of every size from 0 to 40 bytes sharing their prefixes ("aaaa", "aaab", ...), in
// both columns, in every order and ending at the block's very end: each gets its own position
// in order of first sight (the head's masks by size and the masked later words of a long
// text keep no byte past a field, and lose none of it).
static void test_split_texts_of_every_size() {
  std::vector<std::string> texts;
  for (std::size_t size = 0; size <= 40; ++size) {
    texts.push_back(std::string(size, 'a'));
    if (size > 0) texts.push_back(std::string(size - 1, 'a') + "b");
  }
  std::string data;
  std::vector<std::int32_t> want0, want1;
  std::vector<std::string> seen0, seen1;
  auto position = [](std::vector<std::string>& seen, const std::string& t) {
    const auto at = std::find(seen.begin(), seen.end(), t);
    if (at != seen.end()) return std::int32_t(at - seen.begin());
    seen.push_back(t);
    return std::int32_t(seen.size() - 1);
  };
  for (std::size_t r = 0; r < 3 * texts.size(); ++r) {
    const std::string& a = texts[(r * 7) % texts.size()];
    const std::string& b = texts[texts.size() - 1 - (r * 5) % texts.size()];
    data += a + "," + b + "\n";
    want0.push_back(position(seen0, a));
    want1.push_back(position(seen1, b));
  }
  // a last line without its end, of texts seen before: its last field is copied (too close
  // to the end for 16-byte loads), the same texts elsewhere were loaded and masked
  const std::string twelve(12, 'a'), nine = std::string(8, 'a') + "b";
  data += twelve + "," + nine;
  want0.push_back(position(seen0, twelve));
  want1.push_back(position(seen1, nine));
  CsvBlock block;
  std::size_t row = 0;
  CHECK(split_csv(data, ',', 2, &block, &row) == CsvSplit::kPlain);
  CHECK(block.index[0] == want0);
  CHECK(block.index[1] == want1);
  CHECK(block.texts[0].size() == seen0.size() && block.texts[1].size() == seen1.size());
  for (std::size_t k = 0; k < seen0.size() && k < block.texts[0].size(); ++k)
    CHECK(block.texts[0][k] == seen0[k]);
}

int main() {
  test_split_texts_of_every_size();
  test_scan_finds_every_quote_and_cr();
  test_rows();
  test_splitter_keeps_texts();
  test_splitter_large_and_small_columns();
  test_splitter_integer_steps();
  test_split();
  test_bad_position_refused();
  return dpcore_test::report();
}
