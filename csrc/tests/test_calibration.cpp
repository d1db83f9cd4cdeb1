// Unit tests for the Calibrator: flat potentials in, flat query marginals out, checked against
// the brute-force joint table; repeated runs reuse the buffers.
#include "dpcore/calibration.hpp"

#include <cmath>
#include <memory>
#include <random>
#include <vector>

#include "check.hpp"
#include "dpcore/errors.hpp"

using namespace dpcore;

using Lists = std::vector<std::vector<AttrId>>;

static std::vector<std::int64_t> shape_of(const std::vector<AttrId>& attrs,
                                          const std::vector<std::int64_t>& shape) {
  std::vector<std::int64_t> s;
  for (AttrId a : attrs) s.push_back(shape[std::size_t(a)]);
  return s;
}

static void test_queries_match_the_joint() {
  // Chain 0-1-2-3 plus a singleton 4 (no potential): potentials and queries in any attribute
  // order, queries inside and across the input lists, one of them a subset of another.
  const std::vector<std::int64_t> shape{3, 2, 4, 2, 3};
  const Lists potentials{{1, 0}, {1, 2}, {3, 2}, {2}};
  const Lists queries{{0}, {2, 1}, {3, 2}, {1, 0}, {4}, {2}, {}};
  auto tree = std::make_shared<JunctionTree>(shape, potentials);
  Calibrator calibrator(tree, potentials, queries);
  std::vector<std::uint64_t> offset{0};
  for (const auto& q : queries) offset.push_back(offset.back() + checked_cell_count(shape_of(q, shape)));
  CHECK(calibrator.query_cells() == offset.back());
  std::mt19937_64 rng(7);
  std::normal_distribution<double> normal(0.0, 2.0);
  for (int round = 0; round < 3; ++round) {
    std::vector<double> flat(calibrator.potential_cells());
    for (double& v : flat) v = normal(rng);
    if (round == 2) flat[1] = -INFINITY;  // a zero-probability cell
    std::vector<Factor> factors;
    std::uint64_t at = 0;
    for (const auto& p : potentials) {
      const auto s = shape_of(p, shape);
      const std::uint64_t n = checked_cell_count(s);
      factors.emplace_back(p, s, std::vector<double>(flat.begin() + long(at), flat.begin() + long(at + n)));
      at += n;
    }
    std::vector<double> out(calibrator.query_cells());
    const double log_z = calibrator.run(flat.data(), out.data());
    Factor joint({0, 1, 2, 3, 4}, shape, 0.0);
    for (const Factor& f : factors) joint.add_inplace(f);
    CHECK_NEAR(log_z, joint.logsumexp(), 1e-12);
    joint.add_scalar(-log_z);
    joint.exp_inplace();
    for (std::size_t q = 0; q < queries.size(); ++q) {
      const Factor want = joint.project(queries[q]);
      for (std::uint64_t i = 0; i < want.size(); ++i)
        CHECK_NEAR(out[offset[q] + i], want.values()[i], 1e-13);
    }
    const CalibratedTree cal = calibrator.calibrated();
    CHECK_NEAR(cal.log_partition(), log_z, 0.0);
    for (std::size_t c = 0; c < tree->cliques().size(); ++c) {
      const Factor want = joint.project(tree->cliques()[c]);
      for (std::uint64_t i = 0; i < want.size(); ++i)
        CHECK_NEAR(cal.beliefs()[c].values()[i], want.values()[i], 1e-13);
    }
  }
}

static void test_cell_index() {
  // Table over (0, 1, 2) with sizes (2, 3, 2); sub-table over (2, 0): cell (x0, x1, x2) maps
  // to x2 * 2 + x0.
  const CellIndex index = make_cell_index({0, 1, 2}, {2, 3, 2}, {2, 0});
  CHECK(index.kind == CellIndex::Kind::kNarrow);
  CHECK(index.cells == 12 && index.sub_cells == 4);
  for (std::uint64_t cell = 0; cell < 12; ++cell) {
    const std::uint64_t x0 = cell / 6, x2 = cell % 2;
    CHECK(index.narrow[cell] == x2 * 2 + x0);
  }
  CHECK(make_cell_index({0, 1}, {2, 3}, {0, 1}).kind == CellIndex::Kind::kIdentity);
  CHECK(make_cell_index({0, 1}, {2, 3}, {1, 0}).kind == CellIndex::Kind::kNarrow);
  CHECK(make_cell_index({0, 1}, {2, 3}, {}).kind == CellIndex::Kind::kConstant);
  CHECK(make_cell_index({0, 1}, {70000, 2}, {0}).kind == CellIndex::Kind::kWide);
  CHECK_THROWS(make_cell_index({0, 1}, {2, 3}, {4}), InvalidArgument);
  CHECK_THROWS(make_cell_index({0, 1}, {2, 3}, {1, 1}), InvalidArgument);
  CHECK_THROWS(make_cell_index({0, 1}, {2}, {0}), InvalidArgument);
}

static void test_bad_input() {
  auto tree = std::make_shared<JunctionTree>(std::vector<std::int64_t>{2, 3, 4}, Lists{{0, 1}, {1, 2}});
  CHECK_THROWS(Calibrator(tree, {{0, 2}}, {}), InvalidArgument);       // potential across cliques
  CHECK_THROWS(Calibrator(tree, {{0}}, {{0, 2}}), InvalidArgument);    // query across cliques
  CHECK_THROWS(Calibrator(tree, {{0, 0}}, {}), InvalidArgument);       // repeated attribute
  CHECK_THROWS(Calibrator(tree, {}, {{5}}), InvalidArgument);          // unknown attribute
  CHECK_THROWS(Calibrator(nullptr, {}, {}), InvalidArgument);
  Calibrator calibrator(tree, {{0}}, {{0}});
  CHECK_THROWS(calibrator.calibrated(), InvalidArgument);  // no run yet
  double out[2];
  const double nan_values[2] = {0.0, NAN};
  CHECK_THROWS(calibrator.run(nan_values, out), InvalidArgument);
  const double inf_values[2] = {INFINITY, 0.0};
  CHECK_THROWS(calibrator.run(inf_values, out), InvalidArgument);
  const double empty[2] = {-INFINITY, -INFINITY};
  CHECK_THROWS(calibrator.run(empty, out), InvalidArgument);
  CHECK_THROWS(calibrator.calibrated(), InvalidArgument);  // the last run failed
  const double values[2] = {0.0, 1.0};
  calibrator.run(values, out);
  const CalibratedTree moved = std::move(calibrator).calibrated();
  CHECK_NEAR(moved.project({0}).values()[1], 1.0 / (1.0 + std::exp(-1.0)), 1e-15);
  CHECK_THROWS(calibrator.run(values, out), InvalidArgument);  // NOLINT: use after move
}

int main() {
  test_queries_match_the_joint();
  test_cell_index();
  test_bad_input();
  return dpcore_test::report();
}
