// Unit tests for the samplers: exact properties of randomized rounding, reproducibility, and
// a loose check that ancestral sampling follows the model.
#include "dpcore/sampling.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <vector>

#include "check.hpp"
#include "dpcore/errors.hpp"

using namespace dpcore;

static void test_round_group_counts() {
  // Expected counts 10 * (0.25, 0.5, 0.25) = 2.5, 5, 2.5: floors 2, 5, 2 and one extra row,
  // so the counts are (3, 5, 2) or (2, 5, 3).
  const double p[3] = {1.0, 2.0, 1.0};
  for (std::uint64_t seed = 0; seed < 50; ++seed) {
    Rng rng(seed);
    std::int64_t out[10];
    round_group(p, 3, 10, rng, out);
    int counts[3] = {0, 0, 0};
    for (std::int64_t v : out) ++counts[v];
    CHECK(counts[1] == 5);
    CHECK(counts[0] + counts[2] == 5);
    CHECK(counts[0] >= 2 && counts[2] >= 2);
  }
}

static void test_group_samplers_refuse_bad_probabilities() {
  // NaN, infinite, negative or all-zero weights have no distribution to draw from.
  const double nan = std::nan("");
  const double inf = HUGE_VAL;
  const std::vector<std::vector<double>> bad = {
      {nan, 1.0}, {1.0, inf}, {-0.5, 1.0}, {0.0, 0.0}, {1.0, -inf}, {1e308, 1e308}};
  std::int64_t out[4] = {-7, -7, -7, -7};
  for (const auto& p : bad) {
    Rng rng(1);
    CHECK_THROWS(round_group(p.data(), p.size(), 4, rng, out), InvalidArgument);
    CHECK_THROWS(sample_group(p.data(), p.size(), 4, rng, out), InvalidArgument);
    CHECK_THROWS(check_probabilities(p.data(), p.size()), InvalidArgument);
  }
  CHECK(out[0] == -7 && out[3] == -7);  // refused before anything was written
  const double one[1] = {1.0};
  Rng rng(1);
  CHECK_THROWS(round_group(one, 0, 4, rng, out), InvalidArgument);
  CHECK_THROWS(sample_group(one, 1, -1, rng, out), InvalidArgument);
  CHECK_THROWS(round_group(one, 1, -1, rng, out), InvalidArgument);
  const double zero_and_one[2] = {0.0, 1.0};  // zero entries are fine when the total is positive
  sample_group(zero_and_one, 2, 4, rng, out);
  CHECK(out[0] == 1 && out[1] == 1 && out[2] == 1 && out[3] == 1);
}

static void test_record_cells_checked() {
  CHECK(record_cells(0, 5) == 0);
  CHECK(record_cells(7, 0) == 0);
  CHECK(record_cells(3, 4) == 12);
  CHECK_THROWS(record_cells(-1, 3), InvalidArgument);
  CHECK_THROWS(record_cells(3, -1), InvalidArgument);
  CHECK_THROWS(record_cells(std::int64_t(1) << 40, 1 << 20), TableTooLarge);
  CHECK_THROWS(record_cells(INT64_MAX, INT64_MAX), TableTooLarge);  // the product overflows
}

static void test_sample_group_follows_p() {
  const double p[4] = {0.1, 0.2, 0.3, 0.4};
  Rng rng(7);
  std::vector<std::int64_t> out(200000);
  sample_group(p, 4, std::int64_t(out.size()), rng, out.data());
  double counts[4] = {0, 0, 0, 0};
  for (std::int64_t v : out) counts[v] += 1.0;
  // Standard error of each frequency is at most sqrt(0.25 / 2e5) ~ 0.0011; allow 6 of them.
  for (int i = 0; i < 4; ++i) CHECK_NEAR(counts[i] / double(out.size()), p[i], 0.0067);
}

static void test_records_reproducible_and_consistent() {
  const std::vector<std::int64_t> shape{2, 3, 4};
  auto tree = std::make_shared<JunctionTree>(shape, std::vector<std::vector<AttrId>>{{0, 1}, {1, 2}});
  Factor ab({0, 1}, {2, 3}, std::vector<double>{0.1, -0.3, 0.7, 1.2, 0.0, -1.0});
  Factor bc({1, 2}, {3, 4}, std::vector<double>{0.5, 0.2, -0.1, 0.0, 1.0, 0.3, -0.2, 0.4, 0.0,
                                                0.0, 0.9, -0.6});
  const CalibratedTree cal = calibrate(tree, {ab, bc});
  for (SampleMethod how : {SampleMethod::kRound, SampleMethod::kSample}) {
    const auto a = sample_records(cal, 5000, how, 42);
    const auto b = sample_records(cal, 5000, how, 42);
    const auto c = sample_records(cal, 5000, how, 43);
    CHECK(a == b);
    CHECK(a != c);
    for (std::size_t r = 0; r < 5000; ++r)
      for (std::size_t j = 0; j < 3; ++j)
        CHECK(a[r * 3 + j] >= 0 && a[r * 3 + j] < shape[j]);
  }
  // Rounding: the root clique's counts are within one of n times its belief.
  const int root = tree->order()[0];
  const Factor& belief = cal.beliefs()[std::size_t(root)];
  const auto rec = sample_records(cal, 1000, SampleMethod::kRound, 3);
  std::vector<double> counts(belief.size(), 0.0);
  for (std::size_t r = 0; r < 1000; ++r) {
    std::size_t cell = 0;
    for (std::size_t j = 0; j < belief.attrs().size(); ++j)
      cell = cell * std::size_t(belief.shape()[j]) +
             std::size_t(rec[r * 3 + std::size_t(belief.attrs()[j])]);
    counts[cell] += 1.0;
  }
  for (std::size_t i = 0; i < counts.size(); ++i)
    CHECK(std::fabs(counts[i] - 1000.0 * belief.values()[i]) < 1.0);
  CHECK(sample_records(cal, 0, SampleMethod::kRound, 1).empty());
  CHECK_THROWS(sample_records(cal, -1, SampleMethod::kRound, 1), InvalidArgument);
  CHECK_THROWS(sample_records(cal, INT64_MAX, SampleMethod::kSample, 1), TableTooLarge);
}

// The row-major sampler sample_records() had before it was built column by column: the same
// draws in the same order (groups by a stable counting sort of the separator cells, each
// group drawn by the public group samplers), writing straight into the n x d rows. The
// columnar sampler must give these rows exactly, for every seed.
static std::vector<std::int64_t> reference_records(const CalibratedTree& model, std::int64_t n,
                                                   SampleMethod method, std::uint64_t seed) {
  const JunctionTree& t = model.tree();
  const auto d = static_cast<std::size_t>(t.num_attrs());
  std::vector<std::int64_t> out(static_cast<std::size_t>(n) * d, 0);
  std::vector<std::int64_t> draws(static_cast<std::size_t>(n));
  Rng rng(seed);
  for (int c : t.order()) {
    const auto& sep = t.separator(c);
    std::vector<AttrId> fresh;
    for (AttrId a : t.cliques()[std::size_t(c)])
      if (std::find(sep.begin(), sep.end(), a) == sep.end()) fresh.push_back(a);
    if (fresh.empty()) continue;
    std::vector<AttrId> layout(sep);
    layout.insert(layout.end(), fresh.begin(), fresh.end());
    const Factor table = model.beliefs()[std::size_t(c)].transpose(layout);
    const auto fresh_shape = t.shape_of(fresh), sep_shape = t.shape_of(sep);
    std::size_t width = 1, groups = 1;
    for (auto s : fresh_shape) width *= std::size_t(s);
    for (auto s : sep_shape) groups *= std::size_t(s);
    std::vector<std::vector<std::int64_t>> members(groups);
    for (std::int64_t r = 0; r < n; ++r) {
      std::int64_t cell = 0;
      for (std::size_t j = 0; j < sep.size(); ++j)
        cell = cell * sep_shape[j] + out[std::size_t(r) * d + std::size_t(sep[j])];
      members[std::size_t(cell)].push_back(r);
    }
    for (std::size_t g = 0; g < groups; ++g) {
      const auto m = std::int64_t(members[g].size());
      if (m == 0) continue;
      const double* p = table.data() + g * width;
      if (method == SampleMethod::kRound)
        round_group(p, width, m, rng, draws.data());
      else
        sample_group(p, width, m, rng, draws.data());
      for (std::int64_t i = 0; i < m; ++i) {
        std::int64_t cell = draws[std::size_t(i)];
        for (std::size_t j = fresh.size(); j-- > 0;) {
          out[std::size_t(members[g][std::size_t(i)]) * d + std::size_t(fresh[j])] =
              cell % fresh_shape[j];
          cell /= fresh_shape[j];
        }
      }
    }
  }
  return out;
}

static void test_columns_are_the_reference_rows() {
  // Also where a clique brings two new attributes at once ({1, 2, 3} after {0, 1}: the drawn
  // cell splits into two codes).
  const std::vector<std::int64_t> shape{2, 3, 4, 5};
  auto tree = std::make_shared<JunctionTree>(
      shape, std::vector<std::vector<AttrId>>{{0, 1}, {1, 2, 3}});
  std::vector<double> big(3 * 4 * 5);
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = std::sin(double(i));
  const CalibratedTree cal =
      calibrate(tree, {Factor({0, 1}, {2, 3}, std::vector<double>{0.1, -0.3, 0.7, 1.2, 0.0, -1.0}),
                       Factor({1, 2, 3}, {3, 4, 5}, big)});
  for (SampleMethod how : {SampleMethod::kRound, SampleMethod::kSample})
    for (std::uint64_t seed : {0ULL, 9ULL, 123456789ULL})
      for (std::int64_t n : {1, 7, 3000}) {
        const auto rec = sample_records(cal, n, how, seed);
        CHECK(rec == reference_records(cal, n, how, seed));
        const auto col = sample_columns(cal, n, how, seed);
        CHECK(col.size() == 4);
        for (std::size_t j = 0; j < 4; ++j)
          for (std::size_t r = 0; r < std::size_t(n); ++r)
            CHECK(col[j][r] == rec[r * 4 + j]);
      }
  CHECK(sample_columns(cal, 0, SampleMethod::kRound, 1).size() == 4);
  // one workspace reused over blocks that shrink and grow: each block's draws are a fresh
  // call's (nothing left over from an earlier, longer block)
  SampleWorkspace workspace;
  std::uint64_t seed = 5;
  for (std::int64_t n : {3000, 7, 3000, 1, 0, 50, 2999})
    for (SampleMethod how : {SampleMethod::kRound, SampleMethod::kSample}) {
      const auto& reused = sample_columns(cal, n, how, ++seed, workspace);
      CHECK(reused == sample_columns(cal, n, how, seed));
    }
}

// Rng::below skips the rejection threshold's division for outputs >= bound; its draws must be
// the textbook rejection's (threshold 2^64 mod bound, computed every draw), also for bounds
// where rejection is frequent (just above 2^63) or absent (powers of two).
void test_below_is_the_textbook_rejection() {
  for (std::uint64_t bound : {1ULL, 2ULL, 3ULL, 7ULL, 1000ULL, (1ULL << 32) + 1, 1ULL << 40,
                              (1ULL << 63) + 1, (1ULL << 63) + 12345, ~0ULL}) {
    for (std::uint64_t seed : {0ULL, 5ULL, 77ULL}) {
      Rng rng(seed);
      std::mt19937_64 engine(seed);
      const std::uint64_t threshold = (0 - bound) % bound;
      for (int i = 0; i < 2000; ++i) {
        std::uint64_t r = engine();
        while (r < threshold) r = engine();
        CHECK(rng.below(bound) == r % bound);
      }
    }
  }
}

int main() {
  test_below_is_the_textbook_rejection();
  test_round_group_counts();
  test_group_samplers_refuse_bad_probabilities();
  test_record_cells_checked();
  test_sample_group_follows_p();
  test_records_reproducible_and_consistent();
  test_columns_are_the_reference_rows();
  return dpcore_test::report();
}
