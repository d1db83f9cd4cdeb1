// Unit tests for Domain and the checked cell counts.
#include "dpcore/domain.hpp"

#include <cstdint>
#include <limits>

#include "check.hpp"
#include "dpcore/errors.hpp"

using namespace dpcore;

static void test_domain_basics() {
  Domain d({"age", "sex", "race"}, {10, 2, 5});
  CHECK(d.num_attrs() == 3);
  CHECK(d.index_of("sex") == 1);
  CHECK(d.size_of(2) == 5);
  CHECK(d.cells({0, 2}) == 50);
  CHECK(d.cells({}) == 1);
  CHECK((d.shape_of({2, 0}) == std::vector<std::int64_t>{5, 10}));
}

static void test_domain_rejects_bad_input() {
  CHECK_THROWS(Domain({"a", "a"}, {2, 2}), InvalidArgument);
  CHECK_THROWS(Domain({"a", ""}, {2, 2}), InvalidArgument);
  CHECK_THROWS(Domain({"a", "b"}, {2, 0}), InvalidArgument);
  CHECK_THROWS(Domain({"a", "b"}, {2}), InvalidArgument);
  Domain d({"a", "b"}, {2, 3});
  CHECK_THROWS(d.index_of("zzz"), InvalidArgument);
  CHECK_THROWS(d.size_of(2), InvalidArgument);
  CHECK_THROWS(d.cells({0, 0}), InvalidArgument);
  CHECK_THROWS(d.cells({-1}), InvalidArgument);
}

static void test_checked_cell_count() {
  CHECK(checked_cell_count({3, 4, 5}) == 60);
  CHECK_THROWS(checked_cell_count({3, -1}), InvalidArgument);
  const std::int64_t big = std::int64_t{1} << 40;
  CHECK_THROWS(checked_cell_count({big, big}), TableTooLarge);  // overflows 64 bits
  CHECK_THROWS(checked_cell_count({std::int64_t{1} << 31}), TableTooLarge);  // over the cap
  const std::uint64_t old = set_max_table_cells(100);
  CHECK_THROWS(checked_cell_count({11, 10}), TableTooLarge);
  CHECK(checked_cell_count({10, 10}) == 100);
  set_max_table_cells(old);
  CHECK(max_table_cells() == old);
  CHECK_THROWS(set_max_table_cells(0), InvalidArgument);
  CHECK(cell_count_estimate({big, big}) == static_cast<double>(big) * static_cast<double>(big));
}

int main() {
  test_domain_basics();
  test_domain_rejects_bad_input();
  test_checked_cell_count();
  return dpcore_test::report();
}
