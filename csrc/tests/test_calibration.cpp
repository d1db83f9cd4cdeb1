// Unit tests for the Calibrator: flat potentials in, flat query marginals out, checked against
// the brute-force joint table; repeated runs reuse the buffers.
#include "dpcore/calibration.hpp"

#include <algorithm>
#include <cmath>
#include <memory>
#include <numeric>
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

// The brute-force reference: exp(Σ potentials) over the joint of all attributes, normalised,
// from the concatenated flat potentials; log_z receives the log-partition.
static Factor joint_of(const Lists& potentials, const std::vector<std::int64_t>& shape,
                       const std::vector<double>& flat, double& log_z) {
  std::vector<AttrId> all(shape.size());
  std::iota(all.begin(), all.end(), AttrId{0});
  Factor joint(all, shape, 0.0);
  std::uint64_t at = 0;
  for (const auto& p : potentials) {
    const auto s = shape_of(p, shape);
    const std::uint64_t n = checked_cell_count(s);
    const auto first = flat.begin() + long(at);
    joint.add_inplace(Factor(p, s, std::vector<double>(first, first + long(n))));
    at += n;
  }
  log_z = joint.logsumexp();
  joint.add_scalar(-log_z);
  joint.exp_inplace();
  return joint;
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
  for (const auto& q : queries)
    offset.push_back(offset.back() + checked_cell_count(shape_of(q, shape)));
  CHECK(calibrator.query_cells() == offset.back());
  std::mt19937_64 rng(7);
  std::normal_distribution<double> normal(0.0, 2.0);
  for (int round = 0; round < 3; ++round) {
    std::vector<double> flat(calibrator.potential_cells());
    for (double& v : flat) v = normal(rng);
    if (round == 2) flat[1] = -INFINITY;  // a zero-probability cell
    std::vector<double> out(calibrator.query_cells());
    const double log_z = calibrator.run(flat.data(), out.data());
    double want_log_z = 0.0;
    const Factor joint = joint_of(potentials, shape, flat, want_log_z);
    CHECK_NEAR(log_z, want_log_z, 1e-12);
    for (std::size_t q = 0; q < queries.size(); ++q) {
      const Factor want = joint.project(queries[q]);
      for (std::uint64_t i = 0; i < want.size(); ++i)
        CHECK_NEAR(out[offset[q] + i], want.values()[i], 1e-13);
    }
    const CalibratedTree cal = calibrator.calibrated();
    CHECK_NEAR(cal.log_partition(), log_z, 0.0);
    for (std::size_t c = 0; c < tree->cliques().size(); ++c) {
      const Factor got = cal.beliefs()[c].transpose(tree->cliques()[c]);
      const Factor want = joint.project(tree->cliques()[c]);
      for (std::uint64_t i = 0; i < want.size(); ++i)
        CHECK_NEAR(got.values()[i], want.values()[i], 1e-13);
    }
  }
}

// Runs the calibrator on `flat` and checks its log-partition (given back in *log_z) and every
// query against the brute-force joint, which it returns.
static Factor check_run(Calibrator& calibrator, const Lists& potentials, const Lists& queries,
                        const std::vector<std::int64_t>& shape, const std::vector<double>& flat,
                        double* log_z) {
  std::vector<double> out(calibrator.query_cells());
  const double got = calibrator.run(flat.data(), out.data());
  double want_log_z = 0.0;
  Factor joint = joint_of(potentials, shape, flat, want_log_z);
  CHECK_NEAR(got, want_log_z, 1e-9 * std::max(1.0, std::abs(got)));
  std::uint64_t offset = 0;
  for (const auto& q : queries) {
    const Factor want = joint.project(q);
    double worst = 0.0;
    for (std::uint64_t i = 0; i < want.size(); ++i)
      worst = std::max(worst, std::abs(out[offset + i] - want.values()[i]));
    CHECK(worst <= 1e-12);
    offset += want.size();
  }
  if (log_z) *log_z = got;
  return joint;
}

// Every clique's belief in a snapshot against the joint, in the belief's own axis order (the
// Calibrator's layout: by size, then id), and every separator marginal in the separator's.
static void check_beliefs(const CalibratedTree& cal, const JunctionTree& tree,
                          const Factor& joint) {
  auto check = [&](const Factor& got) {
    const Factor want = joint.project(got.attrs());
    double worst = 0.0;
    for (std::uint64_t i = 0; i < want.size(); ++i)
      worst = std::max(worst, std::abs(got.values()[i] - want.values()[i]));
    CHECK(worst <= 1e-12);
  };
  for (std::size_t c = 0; c < tree.cliques().size(); ++c) {
    CHECK(cal.beliefs()[c].attrs() == table_layout(tree.cliques()[c], tree.shape()));
    check(cal.beliefs()[c]);
    if (tree.parent(int(c)) < 0) continue;
    CHECK(cal.separator_marginals()[c].attrs() == tree.separator(int(c)));
    check(cal.separator_marginals()[c]);
  }
}

static void test_large_cliques_and_shifting_potentials() {
  // A clique of 80730 cells is swept in pieces by two threads, with a query as large as the
  // clique, children's separators, and potentials and queries in orders other than their
  // layout (the clique is laid out (1, 4, 0, 2, 3): the sizes' order, 23 innermost, so {2, 4}
  // is read in runs of 23 onto one cell, not in the tree's order's blocks). The cases move
  // the potentials by thousands; make the product
  // of their product forms (each <= 1) flush to 0 everywhere (a gap of 1000: the
  // per-separator-cell path) or fall below 1e-250 without flushing (a gap of 600: the sweep is
  // redone, scaled by the largest product); and move the rows with attribute 3 = 0 3000 up
  // in one clique and 3000 down in the other: the child's separator holds attribute 3, so its
  // rows are far apart (the per-separator-cell path), and the parent brings them back, so an
  // error in their messages shows in the marginals.
  const std::vector<std::int64_t> shape{9, 5, 13, 23, 6, 19};
  const Lists potentials{{0, 1, 2, 3, 4}, {3, 4, 5}, {1, 4}, {5}};
  const Lists queries{{4, 3, 2, 1, 0}, {1, 4}, {0, 2}, {2, 4}, {5, 3}, {3}, {4}};
  auto tree = std::make_shared<JunctionTree>(shape, potentials);
  const auto& clique = tree->cliques()[std::size_t(tree->containing_clique({0, 1, 2, 3, 4}))];
  const std::vector<AttrId> laid = table_layout(clique, shape);
  CHECK((laid == std::vector<AttrId>{1, 4, 0, 2, 3}));
  CHECK(make_cell_index(clique, shape_of(clique, shape), {2, 4}).kind ==
        CellIndex::Kind::kBlocks);
  const CellIndex runs = make_cell_index(laid, shape_of(laid, shape), table_layout({2, 4}, shape));
  CHECK(runs.kind == CellIndex::Kind::kRuns && runs.run == 23 && runs.step == 0);
  Calibrator calibrator(tree, potentials, queries);
  std::mt19937_64 rng(11);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<double> base(calibrator.potential_cells());
  for (double& v : base) v = normal(rng);
  const std::uint64_t big = 9 * 5 * 13 * 23 * 6;  // potential {0, 1, 2, 3, 4}, first
  const std::uint64_t pair = big + 23 * 6 * 19;    // where potential {1, 4} starts
  for (int round = 0; round < 6; ++round) {
    std::vector<double> flat = base;
    if (round == 1 || round == 2)
      for (std::uint64_t i = 0; i < big; ++i) flat[i] += round == 1 ? 1000.0 : -2000.0;
    if (round == 3 || round == 5) {  // up and down where attribute 1 is 0: the same belief
      const double gap = round == 3 ? 1000.0 : 600.0;
      for (std::uint64_t i = 0; i < 6; ++i) flat[pair + i] += gap;
      for (std::uint64_t i = 0; i < big; ++i)
        if ((i / (13 * 23 * 6)) % 5 == 0) flat[i] -= gap;
    }
    if (round == 4) {  // attribute 3 = 0: 3000 up in one clique, 3000 down in the other
      for (std::uint64_t i = 0; i < big; ++i)
        if ((i / 6) % 23 == 0) flat[i] += 3000.0;
      for (std::uint64_t i = 0; i < 6 * 19; ++i) flat[big + i] -= 3000.0;
    }
    double log_z = 0.0;
    const Factor joint = check_run(calibrator, potentials, queries, shape, flat, &log_z);
    // The beliefs of a snapshot: with the query as large as the clique, the downward sweep
    // leaves the clique's marginal in its table (summed from there after the sweep); without
    // it, every table keeps E and calibrated() multiplies it by the ratio.
    Calibrator beliefs_only(tree, potentials, {});
    CHECK_NEAR(beliefs_only.run(flat.data(), nullptr), log_z, 0.0);
    for (const Calibrator* from : {&calibrator, &beliefs_only})
      check_beliefs(from->calibrated(), *tree, joint);
  }
}

static void test_layouts_of_small_cliques() {
  // Every attribute under 16 cells: the laid-out clique (1, 0, 3, 2) of shape (2, 3, 4, 5)
  // reads {2} in one block of 120 cells over 5, and the tables in other orders (potential
  // {2, 0, 3, 1}, queries {3, 0} and {2, 1}) are moved into and out of their layouts. Ties in
  // size go by id: {4, 5} (both 3 cells) is laid out (4, 5) whatever order it is given in.
  // Against the joint, over rounds that send the child clique to the per-separator-cell
  // fallback (attribute 0, the separator, = 0 moved 1000 down in one clique and up in the
  // other: its rows are far apart in either clique, and the marginals bring them back), which
  // reads the potentials' log tables in their layouts.
  const std::vector<std::int64_t> shape{3, 2, 5, 4, 3, 3};
  const Lists potentials{{2, 0, 3, 1}, {2}, {5, 4, 0}, {4}};
  const Lists queries{{3, 0}, {2, 1}, {2}, {5, 4}, {0, 2, 1, 3}, {4, 0}};
  CHECK((table_layout({0, 1, 2, 3}, shape) == std::vector<AttrId>{1, 0, 3, 2}));
  CHECK((table_layout({5, 4}, shape) == std::vector<AttrId>{4, 5}));
  const CellIndex blocks = make_cell_index({1, 0, 3, 2}, {2, 3, 4, 5}, {2});
  CHECK(blocks.kind == CellIndex::Kind::kBlocks && blocks.run == 120 && blocks.width == 5);
  auto tree = std::make_shared<JunctionTree>(shape, potentials);
  Calibrator calibrator(tree, potentials, queries);
  std::mt19937_64 rng(3);
  std::normal_distribution<double> normal(0.0, 2.0);
  for (int round = 0; round < 3; ++round) {
    std::vector<double> flat(calibrator.potential_cells());
    for (double& v : flat) v = normal(rng);
    if (round == 1) {   // {2, 0, 3, 1}: attribute 0 is its second axis; {5, 4, 0}: its last
      for (std::uint64_t i = 0; i < 5 * 3 * 4 * 2; ++i)
        if ((i / (4 * 2)) % 3 == 0) flat[i] -= 1000.0;
      for (std::uint64_t i = 0; i < 3 * 3 * 3; ++i)
        if (i % 3 == 0) flat[5 * 3 * 4 * 2 + 5 + i] += 1000.0;
    }
    if (round == 2) flat[5] = -INFINITY;
    const Factor joint = check_run(calibrator, potentials, queries, shape, flat, nullptr);
    check_beliefs(calibrator.calibrated(), *tree, joint);
  }
}

static void test_prefix_of_terms() {
  // The tree's cliques are given apart from the potentials, so one clique of 69120 cells
  // (over two threads' slices) holds
  // five potentials of 60..720 cells: its first two terms, {0, 1, 2} and {1, 2, 3}, are
  // multiplied over their union (4320 cells) before the sweeps, the others after. The rounds
  // move the potentials so that the sweep is redone with a scale (a gap of 600 between rows,
  // as in the test above) and run the same calibrator again (the table is refilled each run).
  // Caught: a term read through the wrong union index, a prefix term multiplied twice. Not
  // seen here: a scale left out of the union's table only sends the clique to the fallback
  // (its masses stay below the bound), which is exact, so only the time shows it.
  const std::vector<std::int64_t> shape{10, 9, 8, 6, 16, 3};
  const Lists cliques{{0, 1, 2, 3, 4}, {4, 5}};
  const Lists potentials{{0, 1, 2}, {1, 2, 3}, {0, 3}, {0, 4}, {3, 4}, {5, 4}};
  const Lists queries{{1, 3}, {4, 0}, {5}, {2, 1, 0}};
  auto tree = std::make_shared<JunctionTree>(shape, cliques);
  CHECK(tree->cliques().size() == 2);
  Calibrator calibrator(tree, potentials, queries);
  std::mt19937_64 rng(5);
  std::normal_distribution<double> normal(0.0, 1.5);
  for (int round = 0; round < 4; ++round) {
    std::vector<double> flat(calibrator.potential_cells());
    for (double& v : flat) v = normal(rng);
    if (round == 1 || round == 3) {  // attribute 0 = 0: 600 up in {0, 3}, down in {0, 1, 2}
      for (std::uint64_t i = 0; i < 9 * 8; ++i) flat[i] -= 600.0;
      const std::uint64_t at = 10 * 9 * 8 + 9 * 8 * 6;  // potential {0, 3}
      for (std::uint64_t i = 0; i < 6; ++i) flat[at + i] += 600.0;
    }
    if (round == 2) flat[3] = -INFINITY;
    const Factor joint = check_run(calibrator, potentials, queries, shape, flat, nullptr);
    check_beliefs(calibrator.calibrated(), *tree, joint);
  }
}

// The sub-table cell of every table cell, however the index stores it.
static std::vector<std::uint64_t> cells_of(const CellIndex& index) {
  std::vector<std::uint64_t> out(index.cells);
  for (std::uint64_t i = 0; i < index.cells; ++i) {
    if (index.kind == CellIndex::Kind::kRuns)
      out[i] = index.bases[i / index.run] + (i % index.run) * std::uint64_t(index.step);
    else if (index.kind == CellIndex::Kind::kBlocks)
      out[i] = index.bases[i / index.run] + (i % index.run) % index.width;
    else if (index.kind == CellIndex::Kind::kNarrow)
      out[i] = index.narrow[i];
    else
      out[i] = index.wide[i];
  }
  return out;
}

// Brute force: decode each table cell's coordinates and encode the sub-table cell.
static std::vector<std::uint64_t> brute_index(const std::vector<AttrId>& attrs,
                                              const std::vector<std::int64_t>& shape,
                                              const std::vector<AttrId>& sub) {
  const std::uint64_t cells = checked_cell_count(shape);
  std::vector<std::uint64_t> out(cells);
  for (std::uint64_t i = 0; i < cells; ++i) {
    std::vector<std::int64_t> x(shape.size());
    std::uint64_t rest = i;
    for (std::size_t j = shape.size(); j-- > 0;) {
      x[j] = std::int64_t(rest % std::uint64_t(shape[j]));
      rest /= std::uint64_t(shape[j]);
    }
    std::uint64_t cell = 0;
    for (AttrId a : sub) {
      const std::size_t j = std::size_t(std::find(attrs.begin(), attrs.end(), a) - attrs.begin());
      cell = cell * std::uint64_t(shape[j]) + std::uint64_t(x[j]);
    }
    out[i] = cell;
  }
  return out;
}

static void test_cell_index() {
  // Every subset of a 4-axis table in every order, with shapes that give long and short runs
  // and size-1 axes: each storage kind must agree with brute force.
  const std::vector<AttrId> attrs{0, 1, 2, 3};
  for (const auto& shape : {std::vector<std::int64_t>{2, 3, 2, 5}, {3, 1, 16, 9},
                            {4, 12, 1, 2}, {1, 1, 1, 1}, {2, 70000, 1, 1}, {3, 7, 5, 2},
                            {3, 2, 5, 17}, {2, 16, 1, 1}}) {
    std::vector<AttrId> perm{0, 1, 2, 3};
    std::sort(perm.begin(), perm.end());
    do {
      for (std::size_t k = 0; k <= 4; ++k) {
        const std::vector<AttrId> sub(perm.begin(), perm.begin() + long(k));
        const CellIndex index = make_cell_index(attrs, shape, sub);
        CHECK(cells_of(index) == brute_index(attrs, shape, sub));
      }
    } while (std::next_permutation(perm.begin(), perm.end()));
  }
  // The kinds, by hand: (2, 3, 2) onto (2, 0) has runs of 1 -> one entry a cell.
  CHECK(make_cell_index({0, 1, 2}, {2, 3, 2}, {2, 0}).kind == CellIndex::Kind::kNarrow);
  const CellIndex same = make_cell_index({0, 1}, {2, 3}, {0, 1});
  CHECK(same.kind == CellIndex::Kind::kRuns && same.run == 6 && same.step == 1);
  const CellIndex none = make_cell_index({0, 1}, {2, 3}, {});
  CHECK(none.kind == CellIndex::Kind::kRuns && none.run == 6 && none.step == 0);
  const CellIndex prefix = make_cell_index({0, 1, 2}, {5, 4, 6}, {0});  // runs of 24 onto one cell
  CHECK(prefix.kind == CellIndex::Kind::kRuns && prefix.run == 24 && prefix.step == 0);
  CHECK(prefix.bases.size() == 5);
  const CellIndex suffix = make_cell_index({0, 1, 2}, {5, 4, 6}, {1, 2});  // runs of 24 onto 24
  CHECK(suffix.kind == CellIndex::Kind::kRuns && suffix.run == 24 && suffix.step == 1);
  CHECK(make_cell_index({0, 1, 2}, {5, 4, 3}, {0}).kind == CellIndex::Kind::kNarrow);  // run 12
  CHECK(make_cell_index({0, 1}, {2, 3}, {1, 0}).kind == CellIndex::Kind::kNarrow);
  // A long last axis that the sub-table holds elsewhere: runs along it at the sub-table's
  // stride for it (20 cells of (3, 20) onto (1, 0): step 3), not one entry a cell.
  const CellIndex strided = make_cell_index({0, 1}, {3, 20}, {1, 0});
  CHECK(strided.kind == CellIndex::Kind::kRuns && strided.run == 20 && strided.step == 3);
  CHECK(strided.bases.size() == 3);
  const CellIndex unit = make_cell_index({0, 1, 2}, {4, 16, 1}, {1, 0});  // a size-1 axis after
  CHECK(unit.kind == CellIndex::Kind::kRuns && unit.run == 16 && unit.step == 4);
  CHECK(make_cell_index({0, 1}, {3, 15}, {1, 0}).kind == CellIndex::Kind::kNarrow);  // 15 < 16
  CHECK(make_cell_index({0, 1}, {70000, 2}, {0}).kind == CellIndex::Kind::kWide);
  // AIM's (age, marital, sex, native-country, income) onto its separator without the
  // native country: blocks of 42 x 2 cells over 2 consecutive separator cells.
  const CellIndex blocks = make_cell_index({0, 1, 2, 3, 4}, {32, 7, 2, 42, 2}, {0, 1, 2, 4});
  CHECK(blocks.kind == CellIndex::Kind::kBlocks && blocks.run == 84 && blocks.width == 2);
  CHECK(make_cell_index({0, 1, 2}, {5, 3, 2}, {0, 2}).kind == CellIndex::Kind::kNarrow);  // 6
  CHECK_THROWS(make_cell_index({0, 1}, {2, 3}, {4}), InvalidArgument);
  CHECK_THROWS(make_cell_index({0, 1}, {2, 3}, {1, 1}), InvalidArgument);
  CHECK_THROWS(make_cell_index({0, 1}, {2}, {0}), InvalidArgument);
}

static void test_spread_is_the_transpose_of_marginalising() {
  // <spread(v), theta> = sum_q <v_q, theta_f(q) summed onto q>, f(q) the first potential
  // containing q, for random v and theta: the adjoint identity pins the map down.
  const std::vector<std::int64_t> shape{3, 2, 4, 2, 3};
  const Lists potentials{{1, 0}, {1, 2}, {3, 2}, {2}};
  const Lists queries{{0}, {2, 1}, {3, 2}, {1, 0}, {2}, {}, {2, 3}};
  auto tree = std::make_shared<JunctionTree>(shape, potentials);
  Calibrator calibrator(tree, potentials, queries);
  std::mt19937_64 rng(11);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<double> theta(calibrator.potential_cells()), v(calibrator.query_cells());
  for (double& x : theta) x = normal(rng);
  for (double& x : v) x = normal(rng);
  std::vector<double> out(calibrator.potential_cells(), NAN);
  calibrator.spread(v.data(), out.data());
  double lhs = 0.0;
  for (std::size_t i = 0; i < out.size(); ++i) lhs += out[i] * theta[i];
  std::vector<Factor> tables;
  std::uint64_t at = 0;
  for (const auto& p : potentials) {
    const auto s = shape_of(p, shape);
    const std::uint64_t n = checked_cell_count(s);
    tables.emplace_back(p, s, std::vector<double>(theta.begin() + long(at),
                                                  theta.begin() + long(at + n)));
    at += n;
  }
  double rhs = 0.0;
  at = 0;
  for (const auto& q : queries) {
    const auto f = std::find_if(potentials.begin(), potentials.end(), [&](const auto& p) {
      return std::all_of(q.begin(), q.end(), [&](AttrId a) {
        return std::find(p.begin(), p.end(), a) != p.end();
      });
    });
    const Factor summed = tables[std::size_t(f - potentials.begin())].project(q);
    for (double x : summed.values()) rhs += v[at++] * x;
  }
  CHECK_NEAR(lhs, rhs, 1e-10);
  // A query inside a clique but inside no potential cannot be spread.
  auto wide = std::make_shared<JunctionTree>(shape, Lists{{1, 0}, {4}});
  Calibrator outside(wide, {{1, 0}}, {{4}});
  std::vector<double> three(3, 1.0), six(6);
  CHECK_THROWS(outside.spread(three.data(), six.data()), InvalidArgument);
}

static void test_bad_input() {
  auto tree =
      std::make_shared<JunctionTree>(std::vector<std::int64_t>{2, 3, 4}, Lists{{0, 1}, {1, 2}});
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
  test_large_cliques_and_shifting_potentials();
  test_prefix_of_terms();
  test_layouts_of_small_cliques();
  test_cell_index();
  test_spread_is_the_transpose_of_marginalising();
  test_bad_input();
  return dpcore_test::report();
}
