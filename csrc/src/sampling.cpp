#include "dpcore/sampling.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>

#include "dpcore/domain.hpp"
#include "dpcore/errors.hpp"

namespace dpcore {

std::uint64_t Rng::below(std::uint64_t bound) {
  // Reject the lowest (2**64 mod bound) outputs so every residue is equally likely. That
  // threshold is below `bound`, so an output at or above `bound` (all but a bound / 2**64
  // share of them) is kept without computing it: one division a draw instead of two (the
  // shuffles of sample_columns make one draw a row), the same draws.
  for (;;) {
    const std::uint64_t r = engine_();
    if (r >= bound || r >= (0 - bound) % bound) return r % bound;
  }
}

namespace {

// p scaled to sum 1 (uniform when its mass is zero or not finite: inside sample_records a
// conditional row can underflow to zero although its separator cell was drawn).
void normalized(const double* p, std::size_t k, std::vector<double>* q) {
  double total = 0.0;
  for (std::size_t i = 0; i < k; ++i) total += p[i] > 0.0 ? p[i] : 0.0;
  q->resize(k);
  if (!(total > 0.0) || !std::isfinite(total)) {
    std::fill(q->begin(), q->end(), 1.0 / static_cast<double>(k));
    return;
  }
  for (std::size_t i = 0; i < k; ++i) (*q)[i] = p[i] > 0.0 ? p[i] / total : 0.0;
}

template <class I>
void shuffle(I* v, std::int64_t m, Rng& rng) {
  for (std::int64_t i = m - 1; i > 0; --i) {
    const auto j = static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(i) + 1));
    std::swap(v[i], v[j]);
  }
}

// The samplers behind round_group / sample_group, unchecked for sample_records' own tables.
// I: the value type written (int32 in sample_columns when every value fits: half the memory
// traffic in its n-long scatters and shuffles; the same draws either way).
template <class I>
void round_unchecked(const double* p, std::size_t k, std::int64_t m, Rng& rng, I* out) {
  if (m <= 0) return;
  thread_local std::vector<double> q;
  normalized(p, k, &q);
  std::int64_t filled = 0;
  thread_local std::vector<std::pair<std::pair<double, double>, std::size_t>> keys;
  keys.clear();
  for (std::size_t i = 0; i < k; ++i) {
    const double expected = static_cast<double>(m) * q[i];
    double whole = std::floor(expected);
    if (whole > static_cast<double>(m - filled)) whole = static_cast<double>(m - filled);
    const auto count = static_cast<std::int64_t>(whole);
    for (std::int64_t c = 0; c < count; ++c) out[filled++] = static_cast<I>(i);
    // Efraimidis-Spirakis: the r smallest keys -log(U)/w are a draw of r items without
    // replacement, each successive item chosen proportionally to its weight w. Zero-weight
    // items sort after all others (in random order) and are used only if rounding left too
    // few positive fractions.
    const double frac = expected - whole;
    const double u = 1.0 - rng.uniform();  // (0, 1]
    if (frac > 0.0)
      keys.push_back({{-std::log(u) / frac, 0.0}, i});
    else
      keys.push_back({{std::numeric_limits<double>::infinity(), u}, i});
  }
  const std::int64_t extra = m - filled;
  if (extra > 0) {
    const auto r = static_cast<std::ptrdiff_t>(std::min<std::int64_t>(extra, std::int64_t(k)));
    std::partial_sort(keys.begin(), keys.begin() + r, keys.end());
    for (std::int64_t e = 0; e < extra; ++e)
      out[filled++] = static_cast<I>(keys[std::size_t(e % r)].second);
  }
  shuffle(out, m, rng);
}

template <class I>
void sample_unchecked(const double* p, std::size_t k, std::int64_t m, Rng& rng, I* out) {
  if (m <= 0) return;
  thread_local std::vector<double> cdf;
  normalized(p, k, &cdf);
  double run = 0.0;
  std::size_t last = 0;
  for (std::size_t i = 0; i < k; ++i) {
    run += cdf[i];
    if (cdf[i] > 0.0) last = i;
    cdf[i] = run;
  }
  for (std::int64_t r = 0; r < m; ++r) {
    const double u = rng.uniform() * run;
    auto it = std::upper_bound(cdf.begin(), cdf.end(), u);
    std::size_t i = static_cast<std::size_t>(it - cdf.begin());
    // Rounding can put u at the very top; the last value with mass takes it.
    out[r] = static_cast<I>(i > last ? last : i);
  }
}

void check_group(const double* p, std::size_t k, std::int64_t m) {
  if (m < 0) throw InvalidArgument("number of draws must be >= 0, got " + std::to_string(m));
  check_probabilities(p, k);
}

}  // namespace

void check_probabilities(const double* p, std::size_t k) {
  if (k == 0) throw InvalidArgument("probabilities must have at least one entry, got 0");
  double total = 0.0;
  for (std::size_t i = 0; i < k; ++i) {
    if (!std::isfinite(p[i]) || p[i] < 0.0)
      throw InvalidArgument("probabilities must be finite and >= 0, got " + std::to_string(p[i]) +
                            " at index " + std::to_string(i));
    total += p[i];
  }
  if (!(total > 0.0) || !std::isfinite(total))
    throw InvalidArgument("probabilities must have a positive finite sum, got " +
                          std::to_string(total));
}

void round_group(const double* p, std::size_t k, std::int64_t m, Rng& rng, std::int64_t* out) {
  check_group(p, k, m);
  round_unchecked(p, k, m, rng, out);
}

void sample_group(const double* p, std::size_t k, std::int64_t m, Rng& rng, std::int64_t* out) {
  check_group(p, k, m);
  sample_unchecked(p, k, m, rng, out);
}

std::uint64_t record_cells(std::int64_t n, std::int64_t width) {
  if (n < 0) throw InvalidArgument("number of records must be >= 0, got " + std::to_string(n));
  if (width < 0) throw InvalidArgument("record width must be >= 0, got " + std::to_string(width));
  if (n == 0 || width == 0) return 0;
  return checked_cell_count({n, width});
}

namespace {

std::vector<std::int32_t>* working(SampleWorkspace& ws, std::int32_t) { return ws.small; }
std::vector<std::int64_t>* working(SampleWorkspace& ws, std::int64_t) { return ws.large; }

// sample_columns' draws with working arrays of I (row numbers, cells and separator keys).
template <class I>
void draw_columns(const CalibratedTree& model, std::size_t rows, SampleMethod method,
                  std::uint64_t seed, SampleWorkspace& ws, std::vector<char>& drawn) {
  const JunctionTree& t = model.tree();
  Rng rng(seed);
  // A column per attribute: a separator's key reads its columns in order and a group's draws
  // land in `grouped` in order, so the only scattered accesses are into n-long arrays, not
  // across a row-major n x d table (a cache miss per write there). Every element of the
  // working arrays is written before it is read, so reused ones need no clearing.
  std::vector<I>* w = working(ws, I{});
  for (int k = 0; k < 4; ++k) w[k].resize(rows);
  std::vector<I>& rows_by_group = w[0];
  std::vector<I>& grouped = w[1];
  std::vector<I>& cell_of_row = w[2];
  std::vector<I>& key = w[3];
  std::vector<std::vector<std::int32_t>>& column = ws.column;
  std::vector<std::int64_t>& group_start = ws.group_start;
  for (int c : t.order()) {
    const auto& sep = t.separator(c);
    std::vector<AttrId> fresh;
    for (AttrId a : t.cliques()[std::size_t(c)])
      if (std::find(sep.begin(), sep.end(), a) == sep.end()) fresh.push_back(a);
    if (fresh.empty()) continue;
    // Conditional table: rows = separator cells, columns = cells of the new attributes.
    std::vector<AttrId> layout(sep);
    layout.insert(layout.end(), fresh.begin(), fresh.end());
    const Factor table = model.beliefs()[std::size_t(c)].transpose(layout);
    const std::vector<std::int64_t> fresh_shape = t.shape_of(fresh);
    const std::vector<std::int64_t> sep_shape = t.shape_of(sep);
    std::size_t width = 1;
    for (std::int64_t s : fresh_shape) width *= static_cast<std::size_t>(s);
    std::size_t groups = 1;
    for (std::int64_t s : sep_shape) groups *= static_cast<std::size_t>(s);
    // Stable counting sort of the rows by separator cell: deterministic group membership.
    std::fill(key.begin(), key.end(), 0);
    for (std::size_t j = 0; j < sep.size(); ++j) {
      const std::int32_t* codes = column[std::size_t(sep[j])].data();
      const std::int64_t size = sep_shape[j];
      for (std::size_t r = 0; r < rows; ++r) key[r] = static_cast<I>(key[r] * size + codes[r]);
    }
    group_start.assign(groups + 1, 0);
    for (std::size_t r = 0; r < rows; ++r) ++group_start[std::size_t(key[r]) + 1];
    for (std::size_t g = 0; g < groups; ++g) group_start[g + 1] += group_start[g];
    {
      std::vector<std::int64_t> cursor(group_start.begin(), group_start.end() - 1);
      for (std::size_t r = 0; r < rows; ++r)
        rows_by_group[std::size_t(cursor[std::size_t(key[r])]++)] = static_cast<I>(r);
    }
    for (std::size_t g = 0; g < groups; ++g) {
      const std::int64_t begin = group_start[g], m = group_start[g + 1] - begin;
      if (m == 0) continue;
      const double* p = table.data() + g * width;
      if (method == SampleMethod::kRound)
        round_unchecked(p, width, m, rng, grouped.data() + begin);
      else
        sample_unchecked(p, width, m, rng, grouped.data() + begin);
    }
    for (std::size_t k = 0; k < rows; ++k)
      cell_of_row[std::size_t(rows_by_group[k])] = grouped[k];
    if (fresh.size() == 1) {        // the common case (a tree of pairs): no division
      std::vector<std::int32_t>& codes = column[std::size_t(fresh[0])];
      drawn[std::size_t(fresh[0])] = 1;
      for (std::size_t r = 0; r < rows; ++r) codes[r] = static_cast<std::int32_t>(cell_of_row[r]);
      continue;
    }
    for (std::size_t j = fresh.size(); j-- > 0;) {   // the last attribute varies fastest
      std::vector<std::int32_t>& codes = column[std::size_t(fresh[j])];
      drawn[std::size_t(fresh[j])] = 1;
      const std::int64_t size = fresh_shape[j];
      for (std::size_t r = 0; r < rows; ++r) {
        codes[r] = static_cast<std::int32_t>(cell_of_row[r] % size);
        cell_of_row[r] = static_cast<I>(cell_of_row[r] / size);
      }
    }
  }
}

}  // namespace


std::vector<std::vector<std::int32_t>> sample_columns(const CalibratedTree& model,
                                                      std::int64_t n, SampleMethod method,
                                                      std::uint64_t seed) {
  SampleWorkspace ws;
  sample_columns(model, n, method, seed, ws);
  return std::move(ws.column);
}

const std::vector<std::vector<std::int32_t>>& sample_columns(const CalibratedTree& model,
                                                             std::int64_t n, SampleMethod method,
                                                             std::uint64_t seed,
                                                             SampleWorkspace& ws) {
  const JunctionTree& t = model.tree();
  (void)record_cells(n, t.num_attrs());
  const auto d = static_cast<std::size_t>(t.num_attrs());
  for (std::size_t a = 0; a < d; ++a)
    if (t.shape_of({AttrId(a)})[0] > std::numeric_limits<std::int32_t>::max())
      throw InvalidArgument("sampling takes attributes of at most 2^31 - 1 values, attribute " +
                            std::to_string(a) + " has " +
                            std::to_string(t.shape_of({AttrId(a)})[0]));
  const auto rows = static_cast<std::size_t>(n);
  std::vector<std::vector<std::int32_t>>& column = ws.column;
  column.resize(d);
  for (auto& codes : column) codes.resize(rows);     // within the capacity of earlier blocks
  if (rows == 0) return column;
  // int32 working arrays when row numbers, every clique's separator cells (keys) and its
  // new cells fit: the same draws, half the bytes moved by the scatters and shuffles
  constexpr std::size_t kInt32 = std::size_t(std::numeric_limits<std::int32_t>::max());
  bool small = rows <= kInt32;
  for (std::size_t c = 0; small && c < t.cliques().size(); ++c) {
    std::size_t cells = 1;
    for (std::int64_t s : t.shape_of(t.cliques()[c])) {
      cells *= static_cast<std::size_t>(s);
      if (cells > kInt32) break;
    }
    small = cells <= kInt32;
  }
  std::vector<char> drawn(d, 0);
  if (small)
    draw_columns<std::int32_t>(model, rows, method, seed, ws, drawn);
  else
    draw_columns<std::int64_t>(model, rows, method, seed, ws, drawn);
  for (std::size_t a = 0; a < d; ++a)     // an attribute in no clique (none in a JT): code 0
    if (!drawn[a]) std::fill(column[a].begin(), column[a].end(), 0);
  return column;
}

void sample_records(const CalibratedTree& model, std::int64_t n, SampleMethod method,
                    std::uint64_t seed, std::int64_t* out) {
  columns_to_rows(sample_columns(model, n, method, seed), static_cast<std::size_t>(n), out);
}

std::vector<std::int64_t> sample_records(const CalibratedTree& model, std::int64_t n,
                                         SampleMethod method, std::uint64_t seed) {
  std::vector<std::int64_t> out(record_cells(n, model.tree().num_attrs()));
  sample_records(model, n, method, seed, out.data());
  return out;
}

}  // namespace dpcore
