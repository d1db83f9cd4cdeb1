// Links the installed dpcore::kernels and checks one marginal against a hand count.
#include <cstdint>
#include <cstdio>
#include <vector>

#include "dpcore/errors.hpp"
#include "dpcore/marginals.hpp"

int main() {
  // Three records over two attributes of sizes 2 and 3.
  const std::vector<std::int32_t> codes = {0, 2, 1, 0, 1, 2};
  const auto records = dpcore::records_view(codes.data(), 3, 2);
  const auto tables = dpcore::count_marginals(records, {2, 3}, {{1, 0}});
  // Table over (attr1, attr0), row-major: cell (2,0) and (0,1) and (2,1) hold one record.
  const std::vector<double> expected = {0, 1, 0, 0, 1, 1};
  if (tables.size() != 1 || tables[0] != expected) {
    std::fprintf(stderr, "consumer: wrong marginal\n");
    return 1;
  }
  try {
    dpcore::count_marginals(records, {2, 2}, {{1}});
    std::fprintf(stderr, "consumer: out-of-range code was accepted\n");
    return 1;
  } catch (const dpcore::DomainError&) {
  }
  std::printf("consumer: dpcore::kernels works\n");
  return 0;
}
