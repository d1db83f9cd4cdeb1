// Marginal counting against a brute-force count, across dtypes, layouts, thread counts and
// every bad-input path.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "check.hpp"
#include "dpcore/errors.hpp"
#include "dpcore/marginals.hpp"

namespace {

// Brute force: one pass per subset, row-major cell index in the subset's order.
std::vector<double> brute_force(const std::vector<std::int64_t>& codes, std::int64_t rows,
                                std::int64_t cols, const std::vector<std::int64_t>& sizes,
                                const std::vector<int>& subset, const std::vector<double>* w) {
  std::uint64_t cells = 1;
  for (int a : subset) cells *= static_cast<std::uint64_t>(sizes[std::size_t(a)]);
  std::vector<double> table(cells, 0.0);
  for (std::int64_t r = 0; r < rows; ++r) {
    std::uint64_t cell = 0;
    for (int a : subset)
      cell = cell * static_cast<std::uint64_t>(sizes[std::size_t(a)]) +
             static_cast<std::uint64_t>(codes[std::size_t(r * cols + a)]);
    table[cell] += w ? (*w)[std::size_t(r)] : 1.0;
  }
  return table;
}

struct Case {
  std::int64_t rows, cols;
  std::vector<std::int64_t> sizes, codes;  // codes row-major
  std::vector<std::vector<int>> subsets;
};

Case random_case(std::mt19937_64& rng, std::int64_t rows) {
  Case c;
  c.rows = rows;
  c.cols = 1 + static_cast<std::int64_t>(rng() % 6);
  for (std::int64_t j = 0; j < c.cols; ++j) c.sizes.push_back(1 + std::int64_t(rng() % 7));
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t j = 0; j < c.cols; ++j)
      c.codes.push_back(std::int64_t(rng() % std::uint64_t(c.sizes[std::size_t(j)])));
  const int n_subsets = 1 + int(rng() % 12);
  for (int k = 0; k < n_subsets; ++k) {
    std::vector<int> all(static_cast<std::size_t>(c.cols));
    for (std::size_t j = 0; j < all.size(); ++j) all[j] = int(j);
    std::shuffle(all.begin(), all.end(), rng);
    all.resize(rng() % (all.size() + 1));  // empty subsets included
    c.subsets.push_back(all);
  }
  return c;
}

template <class T>
void check_case(const Case& c, bool row_major, int threads, const std::vector<double>* w) {
  std::vector<T> data(c.codes.size());
  for (std::int64_t r = 0; r < c.rows; ++r)
    for (std::int64_t j = 0; j < c.cols; ++j) {
      const auto at = row_major ? r * c.cols + j : j * c.rows + r;
      data[std::size_t(at)] = static_cast<T>(c.codes[std::size_t(r * c.cols + j)]);
    }
  dpcore::CountOptions options;
  options.threads = threads;
  dpcore::WeightsView weights;
  if (w) weights = {w->data(), static_cast<std::int64_t>(w->size())};
  const auto view = dpcore::records_view(data.data(), c.rows, c.cols, row_major);
  const auto got = dpcore::count_marginals(view, c.sizes, c.subsets, weights, options);
  CHECK(got.size() == c.subsets.size());
  for (std::size_t k = 0; k < c.subsets.size(); ++k) {
    const auto want = brute_force(c.codes, c.rows, c.cols, c.sizes, c.subsets[k], w);
    CHECK(got[k].size() == want.size());
    for (std::size_t i = 0; i < want.size() && i < got[k].size(); ++i)
      CHECK_NEAR(got[k][i], want[i], 1e-9 * (1.0 + std::fabs(want[i])));
  }
}

void test_against_brute_force() {
  std::mt19937_64 rng(20240611);
  // Row counts straddle the tile size and the serial-work threshold, so the serial,
  // group-parallel and row-parallel schedules all run.
  for (std::int64_t rows : {0, 1, 7, 4096, 5000, 300000}) {
    const Case c = random_case(rng, rows);
    std::vector<double> w(static_cast<std::size_t>(rows));
    for (auto& x : w) x = double(rng() % 1000) / 7.0 - 20.0;
    for (int threads : {1, 2, 3}) {
      check_case<std::int64_t>(c, true, threads, nullptr);
      check_case<std::uint8_t>(c, false, threads, nullptr);
      check_case<std::int16_t>(c, true, threads, &w);
      check_case<std::uint32_t>(c, false, threads, &w);
    }
  }
}

void test_many_subsets_row_split_and_group_split() {
  // One subset over many rows takes the row split; 40 distinct groups take the group split.
  std::mt19937_64 rng(7);
  Case c;
  c.rows = 600000;  // rows x subsets above the serial threshold even for 2 subsets
  c.cols = 8;
  c.sizes = {3, 300, 2, 5, 70000, 4, 9, 2};  // a >65536 size forces 32-bit compact codes
  for (std::int64_t r = 0; r < c.rows; ++r)
    for (std::int64_t j = 0; j < c.cols; ++j)
      c.codes.push_back(std::int64_t(rng() % std::uint64_t(c.sizes[std::size_t(j)])));
  c.subsets = {{4}, {}};  // the empty subset (the total) rides along the row split
  check_case<std::int32_t>(c, true, 2, nullptr);
  c.rows = 200000;  // enough for the group split of 40 subsets; keeps the sanitizer run short
  c.codes.resize(static_cast<std::size_t>(c.rows * c.cols));
  c.subsets.clear();
  for (int a = 0; a < 8; ++a)
    for (int b = 0; b < 8; ++b)
      if (a != b && !(a == 4 && b == 1) && !(a == 1 && b == 4)) c.subsets.push_back({a, b});
  check_case<std::int64_t>(c, false, 2, nullptr);
}

void test_bad_codes_name_column_row_value() {
  const std::vector<std::int8_t> codes = {0, 1, 2, 1, -3, 0, 1, 9, 0};  // 3 x 3
  const auto view = dpcore::records_view(codes.data(), 3, 3);
  dpcore::CountOptions options;
  options.column_names = {"a", "b", "c"};
  try {
    dpcore::count_marginals(view, {2, 4, 3}, {{0, 1}, {2}}, {}, options);
    CHECK(false);
  } catch (const dpcore::DomainError& e) {
    // Row 1 is (1, -3, 0): the first bad code is column b's -3 (row 2's 9 comes later).
    const std::string msg = e.what();
    CHECK(msg.find("'b'") != std::string::npos);
    CHECK(msg.find("row 1") != std::string::npos);
    CHECK(msg.find("-3") != std::string::npos);
  }
  // Only the columns a subset uses are read: column 2 is fine, columns 0 and 1 are not used.
  CHECK(dpcore::count_marginals(view, {2, 4, 3}, {{2}})[0][0] == 2.0);
  CHECK_THROWS(dpcore::validate_codes(view, {2, 4, 3}), dpcore::DomainError);
  CHECK_THROWS(dpcore::validate_codes(view, {2, 10, 3}), dpcore::DomainError);  // -3 < 0
  const std::vector<std::uint64_t> big = {0, std::uint64_t(1) << 63};
  CHECK_THROWS(dpcore::validate_codes(dpcore::records_view(big.data(), 2, 1), {5}),
               dpcore::DomainError);
}

void test_bad_arguments() {
  const std::vector<std::int64_t> codes = {0, 1, 1, 0};
  const auto view = dpcore::records_view(codes.data(), 2, 2);
  using dpcore::InvalidArgument;
  CHECK_THROWS(dpcore::count_marginals(view, {2}, {{0}}), InvalidArgument);         // shapes
  CHECK_THROWS(dpcore::count_marginals(view, {2, 0}, {{0}}), InvalidArgument);      // size 0
  CHECK_THROWS(dpcore::count_marginals(view, {2, -4}, {{0}}), InvalidArgument);     // size < 0
  CHECK_THROWS(dpcore::count_marginals(view, {2, 2}, {{2}}), InvalidArgument);      // index
  CHECK_THROWS(dpcore::count_marginals(view, {2, 2}, {{-1}}), InvalidArgument);     // index
  CHECK_THROWS(dpcore::count_marginals(view, {2, 2}, {{1, 1}}), InvalidArgument);   // repeat
  const std::vector<double> short_w = {1.0};
  CHECK_THROWS(dpcore::count_marginals(view, {2, 2}, {{0}}, {short_w.data(), 1}),
               InvalidArgument);
  const std::vector<double> nan_w = {1.0, std::nan("")};
  CHECK_THROWS(dpcore::count_marginals(view, {2, 2}, {{0}}, {nan_w.data(), 2}),
               InvalidArgument);
  dpcore::CountOptions options;
  options.threads = -1;
  CHECK_THROWS(dpcore::count_marginals(view, {2, 2}, {{0}}, {}, options), InvalidArgument);
  std::vector<double> out(2);
  CHECK_THROWS(dpcore::count_marginals_into(view, {2, 2}, {{0}, {1}}, {out.data()}),
               InvalidArgument);
}

void test_table_too_large() {
  const std::vector<std::int64_t> codes(20, 0);
  const auto view = dpcore::records_view(codes.data(), 1, 20);
  // 20 attributes of size 2^32: the product overflows 64 bits.
  const std::vector<std::int64_t> huge(20, std::int64_t(1) << 32);
  std::vector<int> all(20);
  for (int j = 0; j < 20; ++j) all[std::size_t(j)] = j;
  CHECK_THROWS(dpcore::table_cells(huge, all), dpcore::TableTooLarge);
  CHECK_THROWS(dpcore::count_marginals(view, huge, {all}), dpcore::TableTooLarge);
  // Under 64 bits but over the memory cap.
  dpcore::CountOptions options;
  options.max_cells = 1000;
  const std::vector<std::int64_t> sizes(20, 10);
  CHECK_THROWS(dpcore::count_marginals(view, sizes, {{0, 1, 2, 3}}, {}, options),
               dpcore::TableTooLarge);
  CHECK(dpcore::count_marginals(view, sizes, {{0, 1, 2}}, {}, options)[0][0] == 1.0);
  // The cap covers the whole batch.
  CHECK_THROWS(dpcore::count_marginals(view, sizes, {{0, 1, 2}, {3}}, {}, options),
               dpcore::TableTooLarge);
}

void test_empty_subset_is_the_total() {
  const std::vector<std::uint16_t> codes = {1, 0, 1};
  const auto view = dpcore::records_view(codes.data(), 3, 1);
  const std::vector<double> w = {0.5, 2.0, 0.25};
  const auto t = dpcore::count_marginals(view, {2}, {{}, {0}}, {w.data(), 3});
  CHECK(t[0].size() == 1);
  CHECK_NEAR(t[0][0], 2.75, 1e-12);
  CHECK_NEAR(t[1][0], 2.0, 1e-12);
  CHECK_NEAR(t[1][1], 0.75, 1e-12);
}

}  // namespace

int main() {
  test_against_brute_force();
  test_many_subsets_row_split_and_group_split();
  test_bad_codes_name_column_row_value();
  test_bad_arguments();
  test_table_too_large();
  test_empty_subset_is_the_total();
  return dpcore_test::report();
}
