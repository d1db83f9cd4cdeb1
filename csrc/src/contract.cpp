// The contraction of two factors as a batched matrix product (see contract.hpp).
//
// With x over (B, K, M) and y over (B, K, N) (B: shared and kept, K: shared and summed, M and
// N: each factor's own kept attributes), the result over (B, M, N) is, for every cell of B,
// the product of an M x K and a K x N matrix. A triple of AIM's across three cliques meets
// such products of ~10^4 x 10^4 x 10^2 cells at the clique where its messages join; swept
// cell by cell through the union (an odometer, a gather a cell) they took ~2 ns a product,
// as a tiled matrix product they take a tenth of that.
#include "contract.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "dpcore/errors.hpp"
#include "vector_math.hpp"

namespace dpcore {

namespace {

bool has(const std::vector<AttrId>& set, AttrId a) {
  return std::find(set.begin(), set.end(), a) != set.end();
}

// The register tile: kRows x kCols cells of the result, kept in registers while kDepth
// summed cells of x's and y's panels stream past. The panels are packed (kDepth x kRows of x,
// kDepth x kCols of y, 8 and 16 KB: the L1 cache), zero-filled past the matrices' edges, so
// the tile reads whole contiguous rows: read in place, a tile's rows were a strided group
// which GCC 12's AVX2/AVX-512 code loaded past its last member, reading beyond the table
// (a fault at a page end, found with buffers placed against a PROT_NONE page).
constexpr int kRows = 4;
constexpr int kCols = 8;
constexpr std::int64_t kDepth = 256;

// c[i][j] += Σ_{k < depth} ap[k][i] bp[k][j] for i < rows, j < cols, adding the products in
// k order (ap, bp packed panels; c's row stride ldc).
__attribute__((always_inline)) inline void tile(const double* __restrict ap,
                                                const double* __restrict bp,
                                                double* __restrict c, std::int64_t ldc,
                                                std::int64_t depth, int rows, int cols) {
  double acc[kRows][kCols] = {};
  for (int i = 0; i < rows; ++i)
    for (int j = 0; j < cols; ++j) acc[i][j] = c[i * ldc + j];
  for (std::int64_t k = 0; k < depth; ++k)
    for (int i = 0; i < kRows; ++i) {
      const double v = ap[k * kRows + i];
      for (int j = 0; j < kCols; ++j) acc[i][j] += v * bp[k * kCols + j];
    }
  for (int i = 0; i < rows; ++i)
    for (int j = 0; j < cols; ++j) c[i * ldc + j] = acc[i][j];
}

// For each of `batches`: c[m][n] += a[depth][m]^T b[depth][n], by tiles of packed panels.
// One dispatch to the CPU's clone a contraction; the tile inlines into it.
DPCORE_VECTOR_KERNEL void product(std::int64_t batches, std::int64_t m, std::int64_t n,
                                  std::int64_t depth, const double* a, const double* b,
                                  double* c) {
  const std::int64_t row_tiles = (m + kRows - 1) / kRows;
  std::vector<double> a_panels(std::size_t(row_tiles * kRows * std::min(depth, kDepth)));
  std::vector<double> b_panel(std::size_t(kCols * kDepth));
  for (std::int64_t t = 0; t < batches; ++t) {
    const double* at = a + t * depth * m;
    const double* bt = b + t * depth * n;
    double* ct = c + t * m * n;
    for (std::int64_t k0 = 0; k0 < depth; k0 += kDepth) {
      const std::int64_t kn = std::min(kDepth, depth - k0);
      for (std::int64_t r = 0; r < row_tiles; ++r) {
        double* panel = &a_panels[std::size_t(r * kRows * kn)];
        const std::int64_t rows = std::min<std::int64_t>(kRows, m - r * kRows);
        for (std::int64_t k = 0; k < kn; ++k) {
          const double* from = at + (k0 + k) * m + r * kRows;
          if (rows == kRows)
            std::memcpy(panel + k * kRows, from, sizeof(double) * kRows);
          else
            for (std::int64_t i = 0; i < kRows; ++i) panel[k * kRows + i] = i < rows ? from[i] : 0.0;
        }
      }
      for (std::int64_t j = 0; j < n; j += kCols) {
        const std::int64_t cols = std::min<std::int64_t>(kCols, n - j);
        for (std::int64_t k = 0; k < kn; ++k) {
          const double* from = bt + (k0 + k) * n + j;
          double* to = &b_panel[std::size_t(k * kCols)];
          if (cols == kCols)
            std::memcpy(to, from, sizeof(double) * kCols);
          else
            for (std::int64_t l = 0; l < kCols; ++l) to[l] = l < cols ? from[l] : 0.0;
        }
        for (std::int64_t r = 0; r < row_tiles; ++r)
          tile(&a_panels[std::size_t(r * kRows * kn)], b_panel.data(), ct + r * kRows * n + j, n,
               kn, int(std::min<std::int64_t>(kRows, m - r * kRows)), int(cols));
      }
    }
  }
}

// The same sums where a tile would be mostly padding (both sides under kRows): plain loops.
void product_plain(std::int64_t batches, std::int64_t m, std::int64_t n, std::int64_t depth,
                   const double* a, const double* b, double* c) {
  for (std::int64_t t = 0; t < batches; ++t) {
    const double* at = a + t * depth * m;
    const double* bt = b + t * depth * n;
    double* ct = c + t * m * n;
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t j = 0; j < n; ++j) {
        double acc = ct[i * n + j];
        for (std::int64_t k = 0; k < depth; ++k) acc += at[k * m + i] * bt[k * n + j];
        ct[i * n + j] = acc;
      }
  }
}

// f's values over `order` (f's attributes, or a subset: the others summed out): f's own
// values when they are already so laid out, else a copy in `store`.
const double* laid_out(const Factor& f, const std::vector<AttrId>& order, Factor* store) {
  if (f.attrs() == order) return f.data();
  *store = order.size() == f.attrs().size() ? f.transpose(order) : f.project(order);
  return store->data();
}

std::int64_t cells(const Factor& f, const std::vector<AttrId>& attrs) {
  std::int64_t n = 1;
  for (std::int64_t s : f.shape_of(attrs)) n *= s;
  return n;
}

}  // namespace

Factor contract(const Factor& x_in, const Factor& y_in, const std::vector<AttrId>& keep) {
  for (AttrId a : keep)
    if (x_in.axis_of(a) < 0 && y_in.axis_of(a) < 0)
      throw InvalidArgument("contract: kept attribute " + std::to_string(a) +
                            " is in neither factor");
  // The larger group of own kept attributes goes to y, whose columns the tiles vectorise.
  std::vector<AttrId> own_x, own_y;
  for (AttrId a : x_in.attrs())
    if (y_in.axis_of(a) < 0 && has(keep, a)) own_x.push_back(a);
  for (AttrId a : y_in.attrs())
    if (x_in.axis_of(a) < 0 && has(keep, a)) own_y.push_back(a);
  const bool swap = cells(x_in, own_x) > cells(y_in, own_y);
  const Factor& x = swap ? y_in : x_in;
  const Factor& y = swap ? x_in : y_in;
  const std::vector<AttrId>& rows_attrs = swap ? own_y : own_x;
  const std::vector<AttrId>& cols_attrs = swap ? own_x : own_y;
  // Shared attributes in the larger factor's order, so that one of the two is more often
  // read as it is.
  const Factor& larger = x.size() >= y.size() ? x : y;
  const Factor& other = x.size() >= y.size() ? y : x;
  std::vector<AttrId> batch, summed;
  for (AttrId a : larger.attrs())
    if (other.axis_of(a) >= 0) (has(keep, a) ? batch : summed).push_back(a);
  std::vector<AttrId> x_order = batch, y_order = batch;
  x_order.insert(x_order.end(), summed.begin(), summed.end());
  x_order.insert(x_order.end(), rows_attrs.begin(), rows_attrs.end());
  y_order.insert(y_order.end(), summed.begin(), summed.end());
  y_order.insert(y_order.end(), cols_attrs.begin(), cols_attrs.end());
  const std::int64_t nb = cells(x, batch), depth = cells(x, summed), m = cells(x, rows_attrs),
                     n = cells(y, cols_attrs);

  std::vector<AttrId> out_attrs = batch;
  out_attrs.insert(out_attrs.end(), rows_attrs.begin(), rows_attrs.end());
  out_attrs.insert(out_attrs.end(), cols_attrs.begin(), cols_attrs.end());
  std::vector<std::int64_t> out_shape = x.shape_of(batch);
  for (std::int64_t s : x.shape_of(rows_attrs)) out_shape.push_back(s);
  for (std::int64_t s : y.shape_of(cols_attrs)) out_shape.push_back(s);
  Factor out(out_attrs, out_shape, 0.0);

  Factor x_store, y_store;
  const double* xs = laid_out(x, x_order, &x_store);
  const double* ys = laid_out(y, y_order, &y_store);
  if (n < kRows)
    product_plain(nb, m, n, depth, xs, ys, out.data());
  else
    product(nb, m, n, depth, xs, ys, out.data());
  return out;
}

}  // namespace dpcore
