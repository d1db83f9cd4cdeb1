// Innermost runs of a StrideMap loop nest, and the sum over them (private to the kernels; not an
// installed header). Shared by marginalize() and the pair passes' fused product and sum, which
// must add the same numbers in the same order (bit for bit).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "dpcore/factor.hpp"

namespace dpcore {

// Calls f(outer_offset, inner_offset, run_length, inner_stride) once per innermost run of the
// loop nest over the outer cells [first, last) (runs clipped to the range). The outer table is
// contiguous, so runs are consecutive blocks of it; a range lets threads split one table.
template <class F>
void for_each_run(const StrideMap& m, std::uint64_t first, std::uint64_t last, F&& f) {
  if (first >= last) return;
  const std::size_t k = m.shape.size();
  if (k == 0) {
    f(std::int64_t{0}, std::int64_t{0}, std::int64_t{1}, std::int64_t{0});
    return;
  }
  const std::int64_t n = m.shape[k - 1];
  const std::int64_t s = m.stride[k - 1];
  // Odometer over the outer axes; a small fixed buffer avoids allocating for typical ranks.
  std::int64_t small[16];
  std::vector<std::int64_t> big;
  std::int64_t* idx = small;
  if (k - 1 > 16) {
    big.assign(k - 1, 0);
    idx = big.data();
  }
  std::int64_t inner = 0;
  std::int64_t run = static_cast<std::int64_t>(first) / n;
  for (std::ptrdiff_t j = static_cast<std::ptrdiff_t>(k) - 2; j >= 0; --j) {
    const auto a = static_cast<std::size_t>(j);
    idx[j] = run % m.shape[a];
    run /= m.shape[a];
    inner += idx[j] * m.stride[a];
  }
  auto outer = static_cast<std::int64_t>(first);
  auto left = static_cast<std::int64_t>(last - first);
  std::int64_t t = outer % n;
  for (;;) {
    const std::int64_t len = std::min(n - t, left);
    f(outer, inner + t * s, len, s);
    outer += len;
    left -= len;
    if (left == 0) return;
    t = 0;
    std::ptrdiff_t j = static_cast<std::ptrdiff_t>(k) - 2;
    for (; j >= 0; --j) {
      inner += m.stride[static_cast<std::size_t>(j)];
      if (++idx[j] < m.shape[static_cast<std::size_t>(j)]) break;
      inner -= m.stride[static_cast<std::size_t>(j)] * m.shape[static_cast<std::size_t>(j)];
      idx[j] = 0;
    }
    if (j < 0) return;
  }
}

// marginalize()'s sum of the outer cells [first, last) into `out` (the inner table), cell o
// read at cells[o - first]: a run along a summed axis is added up first and then into its
// output cell, any other run is added cell by cell.
inline void sum_runs(const StrideMap& map, std::uint64_t first, std::uint64_t last,
                     const double* cells, double* out) {
  for_each_run(map, first, last, [&](std::int64_t o, std::int64_t i, std::int64_t n, std::int64_t s) {
    const double* p = cells + (o - static_cast<std::int64_t>(first));
    if (s == 0) {
      double acc = 0.0;
      for (std::int64_t t = 0; t < n; ++t) acc += p[t];
      out[i] += acc;
    } else {
      double* d = out + i;
      for (std::int64_t t = 0; t < n; ++t) d[t * s] += p[t];
    }
  });
}

// A table's cells made on demand: writes cells [begin, end) (at most kSweepCells of them) to
// out[0, end - begin).
using CellSource = void (*)(const void* context, std::uint64_t begin, std::uint64_t end,
                            double* out);

// marginalize(src, map, dst, dst_cells, false) of the table `cells` makes, without storing it:
// the same slices, pieces and runs, so the same sums in the same order (bit for bit), each piece
// made just before it is summed (factor.cpp).
void marginalize_cells(CellSource cells, const void* context, const StrideMap& map, double* dst,
                       std::uint64_t dst_cells);

}  // namespace dpcore
