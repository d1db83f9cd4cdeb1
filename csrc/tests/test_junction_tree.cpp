// Unit tests for junction-tree construction, calibration and projection, checked against the
// brute-force joint table on small domains.
#include "dpcore/junction_tree.hpp"

#include <cmath>
#include <algorithm>
#include <cstring>
#include <cstdint>
#include <memory>
#include <numeric>
#include <random>
#include <vector>

#include "../src/contract.hpp"
#include "../src/pair_projection.hpp"
#include "check.hpp"
#include "dpcore/errors.hpp"

using namespace dpcore;

using Cliques = std::vector<std::vector<AttrId>>;

static Factor random_factor(std::vector<AttrId> attrs, const std::vector<std::int64_t>& shape,
                            std::mt19937_64& rng) {
  std::vector<std::int64_t> s;
  for (AttrId a : attrs) s.push_back(shape[std::size_t(a)]);
  Factor f(std::move(attrs), s, 0.0);
  std::normal_distribution<double> normal(0.0, 1.0);
  for (double& v : f.values()) v = normal(rng);
  return f;
}

// The normalised joint over every attribute (domain order) and the log-partition.
static Factor brute_joint(const std::vector<std::int64_t>& shape, const std::vector<Factor>& fs,
                          double* log_partition) {
  std::vector<AttrId> all;
  for (std::size_t a = 0; a < shape.size(); ++a) all.push_back(AttrId(a));
  Factor joint(all, shape, 0.0);
  for (const Factor& f : fs) joint.add_inplace(f);
  *log_partition = joint.logsumexp();
  joint.add_scalar(-*log_partition);
  joint.exp_inplace();
  return joint;
}

// A tree over `cliques` calibrated on `pots`, its log partition function brute-forced, and
// the joint of the potentials.
struct Solved {
  std::shared_ptr<JunctionTree> tree;
  CalibratedTree cal;
  double log_z;
  Factor joint;
};
static Solved solve(const std::vector<std::int64_t>& shape, const Cliques& cliques,
                    const std::vector<Factor>& pots) {
  auto tree = std::make_shared<JunctionTree>(shape, cliques);
  CalibratedTree cal = calibrate(tree, pots);
  double log_z = 0.0;
  Factor joint = brute_joint(shape, pots, &log_z);
  return Solved{std::move(tree), std::move(cal), log_z, std::move(joint)};
}

static void test_sizes_by_hand() {
  // Chain a-b-c with sizes 2, 3, 4: cliques {a,b} (6 cells) and {b,c} (12 cells).
  JunctionTree chain({2, 3, 4}, {{1, 0}, {1, 2}});
  CHECK((chain.cliques() == Cliques{{0, 1}, {1, 2}}));
  CHECK(chain.size() == 18);
  CHECK_NEAR(chain.size_mb(), 18.0 * 8.0 / 1048576.0, 1e-18);
  CHECK(chain.edges().size() == 1);
  // A 4-cycle a-b-c-d (sizes 2, 3, 4, 5) needs one chord. Elimination costs: a 2*3*5 = 30,
  // b 3*2*4 = 24, c 4*3*5 = 60, d 5*4*2 = 40; b goes first, adding the chord a-c:
  // cliques {a,b,c} = 24 cells and {a,c,d} = 40 cells.
  JunctionTree cycle({2, 3, 4, 5}, {{0, 1}, {1, 2}, {2, 3}, {3, 0}});
  CHECK((cycle.cliques() == Cliques{{0, 1, 2}, {0, 2, 3}}));
  CHECK(cycle.size() == 64);
  // An attribute in no clique becomes a singleton clique.
  JunctionTree lonely({2, 3, 7}, {{0, 1}});
  CHECK((lonely.cliques() == Cliques{{0, 1}, {2}}));
  CHECK(lonely.size() == 13);
  CHECK(lonely.containing_clique({2}) == 1);
  CHECK(lonely.containing_clique({1, 2}) == -1);
  CHECK(lonely.containing_clique({}) == 0);
}

static void test_hypothetical_size_matches_built_tree() {
  const std::vector<std::int64_t> shape{3, 2, 4, 5, 2, 3};
  const Cliques base{{0, 1}, {1, 2}, {3, 4}};
  JunctionTree t(shape, base);
  for (const Cliques& extra : {Cliques{{2, 3}}, Cliques{{0, 5}, {5, 4}}, Cliques{{0, 2, 4}},
                               Cliques{}}) {
    Cliques all(base);
    all.insert(all.end(), extra.begin(), extra.end());
    CHECK_NEAR(t.hypothetical_size_mb(extra), JunctionTree(shape, all).size_mb(), 0.0);
  }
  CHECK_THROWS(t.hypothetical_size_mb({{0, 9}}), InvalidArgument);
  // The batch (base graph built once; no new edge -> the tree's own size) gives the same.
  const std::vector<Cliques> batch{Cliques{{2, 3}}, Cliques{{0, 1}}, Cliques{{1}}, Cliques{},
                                   Cliques{{0, 2, 4}}, Cliques{{1, 0}, {4, 3}}};
  const std::vector<double> sizes = t.hypothetical_sizes_mb(batch);
  CHECK(sizes.size() == batch.size());
  for (std::size_t i = 0; i < batch.size(); ++i)
    CHECK_NEAR(sizes[i], t.hypothetical_size_mb(batch[i]), 0.0);
  CHECK_THROWS(t.hypothetical_sizes_mb({Cliques{{0, 1}}, Cliques{{1, 1}}}), InvalidArgument);
}

static void check_against_brute_force(const std::vector<std::int64_t>& shape,
                                      const Cliques& cliques, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<Factor> pots;
  for (const auto& c : cliques) pots.push_back(random_factor(c, shape, rng));
  const auto& [tree, cal, log_z, joint] = solve(shape, cliques, pots);
  CHECK_NEAR(cal.log_partition(), log_z, 1e-10);
  for (std::size_t c = 0; c < tree->cliques().size(); ++c) {
    const Factor want = joint.project(cal.beliefs()[c].attrs());   // in the belief's own order
    for (std::uint64_t i = 0; i < want.size(); ++i)
      CHECK_NEAR(cal.beliefs()[c].values()[i], want.values()[i], 1e-12);
  }
  // A calibrated tree takes each belief in any order of its clique's attributes (the tree's
  // order here, the Calibrator's layout above: the same projections up to rounding), and no
  // other set.
  std::vector<Factor> in_order;
  for (std::size_t c = 0; c < tree->cliques().size(); ++c)
    in_order.push_back(cal.beliefs()[c].transpose(tree->cliques()[c]));
  const CalibratedTree reordered(tree, in_order, cal.log_partition());
  for (AttrId a = 0; a < AttrId(shape.size()); ++a) {   // summed in another order: to rounding
    const Factor x = reordered.project({a}), y = cal.project({a});
    for (std::uint64_t i = 0; i < x.size(); ++i) CHECK_NEAR(x.values()[i], y.values()[i], 1e-15);
  }
  if (tree->cliques()[0].size() > 1) {
    std::vector<Factor> wrong = in_order;
    wrong[0] = in_order[0].project({tree->cliques()[0][0]});
    CHECK_THROWS(CalibratedTree(tree, wrong, cal.log_partition()), InvalidArgument);
  }
  // Every pair and triple of attributes, in and out of cliques, in reversed order; the
  // threaded batch gives the same tables as one query at a time.
  const int d = int(shape.size());
  std::vector<std::vector<AttrId>> batch;
  for (int a = 0; a < d; ++a)
    for (int b = a + 1; b < d; ++b) batch.push_back({b, a});
  const std::vector<Factor> many = cal.project_many(batch);
  CHECK(many.size() == batch.size());
  for (std::size_t q = 0; q < batch.size(); ++q) CHECK(many[q].values() == cal.project(batch[q]).values());
  // The source passes (pairs, triples with a source) agree with project() and the joint up
  // to rounding; a query inside a clique is project()'s, bit for bit.
  std::vector<std::vector<AttrId>> mixed(batch);
  mixed.push_back({0});
  if (d >= 3) mixed.push_back({2, 0, 1});
  const std::vector<Factor> passes = cal.project_many(mixed, true);
  CHECK(passes.size() == mixed.size());
  for (std::size_t q = 0; q < mixed.size(); ++q) {
    const Factor want = joint.project(mixed[q]);
    CHECK(passes[q].attrs() == mixed[q]);
    for (std::uint64_t i = 0; i < want.size(); ++i)
      CHECK_NEAR(passes[q].values()[i], want.values()[i], 1e-12);
    if (mixed[q].size() == 1) CHECK(passes[q].values() == cal.project(mixed[q]).values());
  }
  for (int a = 0; a < d; ++a)
    for (int b = a + 1; b < d; ++b)
      for (int c = b; c < d; ++c) {
        std::vector<AttrId> q = c == b ? std::vector<AttrId>{b, a} : std::vector<AttrId>{c, a, b};
        const Factor got = cal.project(q);
        const Factor want = joint.project(q);
        for (std::uint64_t i = 0; i < want.size(); ++i)
          CHECK_NEAR(got.values()[i], want.values()[i], 1e-12);
      }
}

static void test_calibration_matches_brute_force() {
  check_against_brute_force({2, 3, 4, 2}, {{0, 1}, {1, 2}, {2, 3}}, 1);            // chain
  check_against_brute_force({2, 3, 4, 5}, {{0, 1}, {1, 2}, {2, 3}, {3, 0}}, 2);    // cycle
  check_against_brute_force({3, 1, 2, 2, 3}, {{0, 1, 2}, {2, 3}, {0, 4}}, 3);      // tree
  check_against_brute_force({2, 2, 3}, {{0, 1, 2}}, 4);                            // clique
  check_against_brute_force({2, 3, 2, 2}, {{0, 1}, {2, 3}}, 5);                    // forest
  check_against_brute_force({2, 3, 2, 2, 3}, {{0, 2}, {1, 3}, {2, 4}, {4, 1}, {0, 3}}, 6);
}

// A hub clique with spokes (AIM's late models): every triple, in every order of its axes, across
// up to three spokes, against the joint; a structural zero (-inf potential cells) must stay
// exactly zero. Attribute 8 hangs on attribute 2 alone, inside the separator of any spoke it
// joins: its factors pass through that spoke untouched, and a spoke that only passes them on
// adds no factor of its own.
static void test_triples_across_a_hub_match_brute_force() {
  const std::vector<std::int64_t> shape{3, 2, 4, 5, 6, 2, 7, 3, 3};
  const Cliques cliques{{0, 1, 2, 3}, {0, 1, 4}, {2, 3, 5}, {1, 2, 6}, {3, 7}, {2, 8}};
  for (std::uint64_t seed : {11u, 12u}) {
    std::mt19937_64 rng(seed);
    std::vector<Factor> pots;
    for (const auto& c : cliques) pots.push_back(random_factor(c, shape, rng));
    if (seed == 12u)  // zeros on spoke {0, 1, 4}: cells with attribute 4 == 5 and 0 == 2
      for (std::int64_t b = 0; b < 2; ++b) pots[1].values()[std::size_t((2 * 2 + b) * 6 + 5)] = -INFINITY;
    const auto& [tree, cal, log_z, joint] = solve(shape, cliques, pots);
    int spanning = 0;
    for (AttrId a = 0; a < 9; ++a)
      for (AttrId b = a + 1; b < 9; ++b)
        for (AttrId c = b + 1; c < 9; ++c) {
          std::vector<AttrId> q{a, b, c};
          spanning += tree->containing_clique(q) < 0;
          do {
            const Factor got = cal.project(q);
            const Factor want = joint.project(q);
            CHECK(got.attrs() == q);
            for (std::uint64_t i = 0; i < want.size(); ++i) {
              CHECK_NEAR(got.values()[i], want.values()[i], 1e-12);
              if (want.values()[i] == 0.0) CHECK(got.values()[i] == 0.0);
            }
          } while (std::next_permutation(q.begin(), q.end()));
        }
    CHECK(spanning > 30);  // most triples cross cliques
  }
}

static void test_calibrate_rejects_bad_input() {
  auto tree = std::make_shared<JunctionTree>(std::vector<std::int64_t>{2, 3, 4},
                                             Cliques{{0, 1}, {1, 2}});
  CHECK_THROWS(calibrate(tree, {Factor({0, 2}, {2, 4}, 0.0)}), InvalidArgument);  // no clique
  CHECK_THROWS(calibrate(tree, {Factor({0}, {5}, 0.0)}), InvalidArgument);        // wrong size
  CHECK_THROWS(calibrate(tree, {Factor({0}, {2}, NAN)}), InvalidArgument);
  CHECK_THROWS(calibrate(tree, {Factor({0}, {2}, INFINITY)}), InvalidArgument);
  CHECK_THROWS(calibrate(tree, {Factor({0}, {2}, -INFINITY)}), InvalidArgument);  // no mass
  CHECK_THROWS(calibrate(tree, {Factor({7}, {2}, 0.0)}), InvalidArgument);
  CHECK_THROWS(JunctionTree({2, 0}, {}), InvalidArgument);
  CHECK_THROWS(JunctionTree({2, 2}, {{0, 0}}), InvalidArgument);
  CHECK_THROWS(JunctionTree({}, {}), InvalidArgument);
  // Zero probabilities are allowed where some mass remains.
  Factor partial({0}, {2}, std::vector<double>{-INFINITY, 0.0});
  const CalibratedTree cal = calibrate(tree, {partial});
  CHECK_NEAR(cal.project({0}).values()[0], 0.0, 0.0);
  CHECK_NEAR(cal.project({0, 2}).values()[5], 0.25, 1e-12);
  const std::uint64_t old = set_max_table_cells(10);
  CHECK_THROWS(calibrate(tree, {}), TableTooLarge);
  set_max_table_cells(old);
}

static void test_clique_indices_checked() {
  // Indices from outside (the Python binding, a linking service) are bounds-checked.
  const JunctionTree tree({2, 3, 4}, Cliques{{0, 1}, {1, 2}});
  const int k = static_cast<int>(tree.cliques().size());
  CHECK(k == 2);
  for (int c : {-1, k, 99, 1000000000, INT32_MIN, INT32_MAX}) {
    CHECK_THROWS(tree.parent(c), InvalidArgument);
    CHECK_THROWS(tree.separator(c), InvalidArgument);
    CHECK_THROWS(tree.in_clique(c, 0), InvalidArgument);
  }
  for (AttrId a : {-1, 3, INT32_MAX}) {
    CHECK_THROWS(tree.in_clique(0, a), InvalidArgument);
    CHECK_THROWS(tree.containing_clique({a}), InvalidArgument);
  }
  CHECK_THROWS(tree.containing_clique({1, 1}), InvalidArgument);
  CHECK(tree.parent(tree.order()[0]) == -1);
  CHECK(tree.parent(tree.order()[1]) == tree.order()[0]);
  CHECK(tree.separator(tree.order()[1]) == std::vector<AttrId>{1});
  CHECK(tree.containing_clique({}) == 0 || tree.containing_clique({}) == 1);
  CHECK(tree.in_clique(tree.containing_clique({2}), 2));
}

// Pairs across cliques by source passes, on a tree where the sources should be taken on one
// side of the middle clique (attributes 0-3 are the middle clique {0,1,2,3}; 4 sits on the
// far side with 2, 3; 5..9 hang off 0, each in a clique of its own): the split rule is planned
// cheaper and taken, sharing the reductions changes no bit, and every pair equals the joint's.
static void test_pair_passes_split_and_share() {
  const std::vector<std::int64_t> shape{2, 2, 3, 2, 3, 2, 2, 2, 2, 2};
  Cliques cliques{{0, 1, 2, 3}, {2, 3, 4}};
  for (AttrId a = 5; a < 10; ++a) cliques.push_back({0, a});
  auto tree = std::make_shared<JunctionTree>(shape, cliques);
  std::mt19937_64 rng(7);
  std::vector<Factor> pots;
  for (const auto& c : cliques) pots.push_back(random_factor(c, shape, rng));
  const CalibratedTree cal = calibrate(tree, pots);
  double log_z = 0.0;
  const Factor joint = brute_joint(shape, pots, &log_z);
  std::vector<std::vector<AttrId>> pairs;
  std::vector<std::size_t> which;
  for (AttrId a = 0; a < 10; ++a)
    for (AttrId b = 0; b < 10; ++b)
      if (a != b && tree->containing_clique({a, b}) < 0) {
        which.push_back(pairs.size());
        pairs.push_back({a, b});
      }
  std::vector<Factor> shared(pairs.size()), alone(pairs.size());
  std::vector<Factor> seps(tree->cliques().size());   // as CalibratedTree computes them
  for (int c : tree->order())
    if (tree->parent(c) >= 0) seps[std::size_t(c)] = cal.beliefs()[std::size_t(c)].project(tree->separator(c));
  PairPassPlan plan;
  double offered = -1.0;   // what `accept` sees: the cheaper rule's planned cells
  CHECK(project_by_source(*tree, cal.beliefs(), seps, pairs, which, &shared, true, &plan, nullptr,
                          [&](double cells) { offered = cells; return true; }));
  CHECK(plan.split);
  CHECK(plan.split_cells < plan.smaller_cells);
  CHECK(offered == plan.split_cells);
  std::vector<Factor> refused(pairs.size());   // refused: nothing answered, nothing planned
  PairPassPlan untouched;
  CHECK(!project_by_source(*tree, cal.beliefs(), seps, pairs, which, &refused, true, &untouched,
                           nullptr, [](double) { return false; }));
  for (const Factor& f : refused) CHECK(f.size() == 0);
  CHECK(untouched.sources.empty());
  project_by_source(*tree, cal.beliefs(), seps, pairs, which, &alone, false);
  const std::vector<Factor> api = cal.project_many(pairs, true);
  for (std::size_t q = 0; q < pairs.size(); ++q) {
    CHECK(shared[q].values() == alone[q].values());
    const Factor want = joint.project(pairs[q]);
    CHECK(shared[q].attrs() == pairs[q]);
    for (std::uint64_t i = 0; i < want.size(); ++i) {
      CHECK_NEAR(shared[q].values()[i], want.values()[i], 1e-12);
      CHECK_NEAR(api[q].values()[i], want.values()[i], 1e-12);   // its separators: calibration's
    }
  }  // Triples across cliques with two attributes in one clique: answered by the pass of the
  // third (each such triple has one; the ones in three cliques have none and stay out).
  std::vector<std::vector<AttrId>> triples;
  std::vector<std::size_t> some;
  std::size_t none = 0;
  for (AttrId a = 0; a < 10; ++a)
    for (AttrId b = a + 1; b < 10; ++b)
      for (AttrId c = b + 1; c < 10; ++c) {
        const std::vector<AttrId> q{c, a, b};
        if (tree->containing_clique(q) >= 0) continue;
        if (!has_source(*tree, q)) {
          ++none;
          continue;
        }
        some.push_back(triples.size());
        triples.push_back(q);
      }
  CHECK(some.size() > 20 && none > 20);
  std::vector<Factor> three(triples.size()), three_alone(triples.size());
  project_by_source(*tree, cal.beliefs(), seps, triples, some, &three, true);
  project_by_source(*tree, cal.beliefs(), seps, triples, some, &three_alone, false);
  for (std::size_t q = 0; q < triples.size(); ++q) {
    CHECK(three[q].values() == three_alone[q].values());
    CHECK(three[q].attrs() == triples[q]);
    const Factor want = joint.project(triples[q]);
    for (std::uint64_t i = 0; i < want.size(); ++i)
      CHECK_NEAR(three[q].values()[i], want.values()[i], 1e-12);
  }
  // A triple with two possible sources, on the chain {0, 1} - {1, 2}: 0 (its others {1, 2}
  // share a clique) and 2; 1 is none. Both passes cross no clique, so both rules take the one
  // of smaller domain, whichever its position in the query.
  for (const auto& chain_shape : {std::vector<std::int64_t>{5, 3, 2}, {2, 3, 5}}) {
    auto chain = std::make_shared<JunctionTree>(chain_shape, Cliques{{0, 1}, {1, 2}});
    std::vector<Factor> chain_pots;
    for (const auto& c : chain->cliques()) chain_pots.push_back(random_factor(c, chain_shape, rng));
    const CalibratedTree chained = calibrate(chain, chain_pots);
    std::vector<Factor> chain_seps(chain->cliques().size());
    for (int c : chain->order())
      if (chain->parent(c) >= 0)
        chain_seps[std::size_t(c)] = chained.beliefs()[std::size_t(c)].project(chain->separator(c));
    std::vector<Factor> one(2);
    PairPassPlan chosen;
    project_by_source(*chain, chained.beliefs(), chain_seps, {{1, 0, 2}, {2, 1, 0}}, {0, 1},
                      &one, true, &chosen);
    const AttrId smaller = chain_shape[0] < chain_shape[2] ? 0 : 2;
    CHECK((chosen.sources == std::vector<AttrId>{smaller, smaller}));
    double chain_log_z = 0.0;
    const Factor joint3 = brute_joint(chain_shape, chain_pots, &chain_log_z);
    for (std::size_t q = 0; q < 2; ++q) {
      const Factor want = joint3.project(one[q].attrs());
      for (std::uint64_t i = 0; i < want.size(); ++i)
        CHECK_NEAR(one[q].values()[i], want.values()[i], 1e-12);
    }
  }
  CHECK_THROWS(project_by_source(*tree, cal.beliefs(), seps, {{5, 6, 7}}, {0}, &three, true),
               InvalidArgument);   // 5, 6 and 7 hang off 0 in three cliques
}

// The pair passes' fused product and sum against multiply().project(), bit for bit: random
// sizes, separators of 0-3 attributes, extra attributes, keeps in any order, zero and -0.0
// cells; and a layout the fused path does not take (q's separator not leading r) and a keep
// outside the product (the same error).
// A factor over attrs (sizes from shape): zeros, uniform values and, with signed_zero, -0.0.
static Factor mixed_factor(const std::vector<AttrId>& attrs,
                           const std::vector<std::int64_t>& shape, std::mt19937_64& rng,
                           bool signed_zero) {
  std::uniform_int_distribution<int> coin(0, 3);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  std::vector<std::int64_t> s;
  for (AttrId a : attrs) s.push_back(shape[std::size_t(a)]);
  Factor f(attrs, s, 0.0);
  for (double& v : f.values()) {
    const int c = coin(rng);
    v = c == 0 ? 0.0 : (c == 1 && signed_zero) ? -0.0 : unit(rng);
  }
  return f;
}

// product_projected(q, r, keep) against multiply(q, r).project(keep), bit for bit.
static void check_product_projected(const Factor& q, const Factor& r,
                                    const std::vector<AttrId>& keep) {
  const Factor want = multiply(q, r).project(keep);
  const Factor got = product_projected(q, r, keep);
  CHECK(got.attrs() == want.attrs());
  CHECK(got.size() == want.size() &&
        std::memcmp(got.data(), want.data(), got.size() * sizeof(double)) == 0);
}

static void test_product_projected_is_multiply_then_project() {
  std::mt19937_64 rng(11);
  std::uniform_int_distribution<int> size(1, 4), count(0, 3), coin(0, 3);
  for (int trial = 0; trial < 400; ++trial) {
    const int nsep = count(rng), nextra = count(rng);
    std::vector<AttrId> sep, extra;
    std::vector<std::int64_t> shape(8);
    for (auto& n : shape) n = size(rng);
    std::vector<AttrId> pool{1, 2, 3, 4, 5, 6, 7};
    std::shuffle(pool.begin(), pool.end(), rng);
    sep.assign(pool.begin(), pool.begin() + nsep);
    extra.assign(pool.begin() + nsep, pool.begin() + nsep + nextra);
    std::vector<AttrId> qa{0}, ra = sep;
    qa.insert(qa.end(), sep.begin(), sep.end());
    ra.insert(ra.end(), extra.begin(), extra.end());
    const Factor q = mixed_factor(qa, shape, rng, true), r = mixed_factor(ra, shape, rng, true);
    std::vector<AttrId> keep{0};
    for (AttrId a : ra)
      if (coin(rng) < 2) keep.push_back(a);
    std::shuffle(keep.begin(), keep.end(), rng);
    check_product_projected(q, r, keep);
  }
  // Larger products: the plain keep (a, then r's extra attributes in order; summed in
  // loops of its own when the sweep is one slice) and products of 2^16 cells and more with
  // small outputs (swept in slices by several threads, the pieces made on the fly), against
  // the stored table's sum, bit for bit.
  std::uniform_int_distribution<int> wide(1, 12);
  for (int trial = 0; trial < 120; ++trial) {
    const int nsep = count(rng), nextra = 1 + count(rng) % 3;
    std::vector<std::int64_t> shape(8);
    for (auto& n : shape) n = wide(rng);
    std::vector<AttrId> pool{1, 2, 3, 4, 5, 6, 7};
    std::shuffle(pool.begin(), pool.end(), rng);
    std::vector<AttrId> sep(pool.begin(), pool.begin() + nsep);
    std::vector<AttrId> extra(pool.begin() + nsep, pool.begin() + nsep + nextra);
    std::vector<AttrId> qa{0}, ra = sep;
    qa.insert(qa.end(), sep.begin(), sep.end());
    ra.insert(ra.end(), extra.begin(), extra.end());
    const Factor q = mixed_factor(qa, shape, rng, false), r = mixed_factor(ra, shape, rng, false);
    std::vector<AttrId> keep{0};
    if (trial % 2 == 0) {
      keep.insert(keep.end(), extra.begin(), extra.end());   // the plain layout
    } else {
      for (AttrId a : ra)
        if (coin(rng) < 2) keep.push_back(a);
      std::shuffle(keep.begin(), keep.end(), rng);
    }
    check_product_projected(q, r, keep);
  }
  // The plain keep on products of 2^16 to 2^18 cells, where marginalize's sweep is cut into
  // one slice per thread (two or more threads): with an odd row count a slice starts inside a
  // row, so a fast path taken where the sweep is sliced adds in another order (other bits).
  const std::vector<std::vector<std::int64_t>> sizes{
      {3, 101, 113, 2}, {7, 61, 67, 3}, {5, 97, 53, 4}, {3, 211, 103, 2}, {3, 255, 171, 2}};
  for (const auto& size : sizes) {   // (rows, separator, separator, extra)
    const std::vector<std::int64_t> shape = size;
    const Factor q = mixed_factor({0, 1, 2}, shape, rng, false);
    const Factor r = mixed_factor({1, 2, 3}, shape, rng, false);
    check_product_projected(q, r, {0, 3});
  }
  // r with the separator not leading: the general path, the same numbers
  const std::vector<std::int64_t> shape{2, 3, 2};
  Factor q({0, 1}, {2, 3}, 0.0), r({2, 1}, {2, 3}, 0.0);
  for (std::size_t i = 0; i < q.size(); ++i) q.values()[i] = 0.1 * double(i + 1);
  for (std::size_t i = 0; i < r.size(); ++i) r.values()[i] = 0.3 * double(i + 2);
  const Factor a = product_projected(q, r, {2, 0}), b = multiply(q, r).project({2, 0});
  CHECK(std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0);
  const std::vector<AttrId> outside{0, 5};
  CHECK_THROWS(product_projected(q, r, outside), InvalidArgument);
}

// A hub of 512 cells with three spokes of a 16-value attribute each: a triple with two spokes'
// attributes covers at least the hub and those two spokes (768 cells) and has at least 2,048
// cells, past kSearchCells (2^20), so every clique of its subtree is costed as the root (the
// memoised messages) before one is chosen; the smaller tests take the first clique.
static void test_root_search_matches_brute_force() {
  const std::vector<std::int64_t> shape{8, 8, 8, 16, 16, 16};
  const Cliques cliques{{0, 1, 2}, {0, 3}, {1, 4}, {2, 5}};
  std::mt19937_64 rng(41);
  std::vector<Factor> pots;
  for (const auto& c : cliques) pots.push_back(random_factor(c, shape, rng));
  const auto& [tree, cal, log_z, joint] = solve(shape, cliques, pots);
  CHECK_NEAR(cal.log_partition(), log_z, 1e-10);
  int searched = 0;
  for (AttrId a = 0; a < 6; ++a)
    for (AttrId b = a + 1; b < 6; ++b)
      for (AttrId c = b + 1; c < 6; ++c) {
        std::vector<AttrId> q{c, a, b};
        if (tree->containing_clique(q) >= 0) continue;
        const Factor got = cal.project(q), want = joint.project(q);
        for (std::uint64_t i = 0; i < want.size(); ++i)
          CHECK_NEAR(got.values()[i], want.values()[i], 1e-12);
        searched += (a >= 3) + (b >= 3) + (c >= 3) >= 2;
      }
  CHECK(searched == 10);
}

// Queries over the private attributes of six spokes of a hub: at the hub, its belief and
// each spoke's belief and 1 / μ make 13 parts, past the exact planner's 10, so the greedy
// order joins them; 4-6 attributes in shuffled orders, against the joint.
static void test_wide_queries_match_brute_force() {
  const std::vector<std::int64_t> shape{2, 3, 2, 3, 3, 2, 3, 2, 3, 2};
  const Cliques cliques{{0, 1, 2, 3}, {0, 4}, {1, 5}, {2, 6}, {3, 7}, {0, 1, 8}, {2, 3, 9}};
  std::mt19937_64 rng(31);
  std::vector<Factor> pots;
  for (const auto& c : cliques) pots.push_back(random_factor(c, shape, rng));
  const auto& [tree, cal, log_z, joint] = solve(shape, cliques, pots);
  std::vector<AttrId> spokes{4, 5, 6, 7, 8, 9};
  int compared = 0;
  for (int trial = 0; trial < 40; ++trial) {
    std::shuffle(spokes.begin(), spokes.end(), rng);
    std::vector<AttrId> q(spokes.begin(), spokes.begin() + 4 + trial % 3);
    if (trial % 4 == 0) q.push_back(AttrId(trial % 4));   // and a hub attribute
    const Factor got = cal.project(q), want = joint.project(q);
    CHECK(got.attrs() == q);
    for (std::uint64_t i = 0; i < want.size(); ++i)
      CHECK_NEAR(got.values()[i], want.values()[i], 1e-12);
    ++compared;
  }
  CHECK(compared == 40);
}

// Σ_{not keep} x * y over keep (in keep's order), cell by cell over the union of their
// attributes: no layout, no tiles.
static Factor plain_contract(const Factor& x, const Factor& y, const std::vector<AttrId>& keep,
                             const std::vector<std::int64_t>& shape) {
  std::vector<AttrId> all = x.attrs();
  for (AttrId a : y.attrs())
    if (std::find(all.begin(), all.end(), a) == all.end()) all.push_back(a);
  std::vector<std::int64_t> kept_shape;
  for (AttrId a : keep) kept_shape.push_back(shape[std::size_t(a)]);
  Factor out(keep, kept_shape, 0.0);
  std::vector<std::int64_t> value(shape.size(), 0);
  auto cell = [&](const Factor& f) {
    std::int64_t at = 0;
    for (std::size_t i = 0; i < f.attrs().size(); ++i)
      at = at * f.shape()[i] + value[std::size_t(f.attrs()[i])];
    return std::size_t(at);
  };
  for (;;) {
    out.data()[cell(out)] += x.data()[cell(x)] * y.data()[cell(y)];
    std::size_t i = 0;
    for (; i < all.size(); ++i) {
      const std::size_t a = std::size_t(all[i]);
      if (++value[a] < shape[a]) break;
      value[a] = 0;
    }
    if (i == all.size()) return out;
  }
}

// contract() against plain_contract on two factors over random subsets of six attributes in
// random orders (scalars, signed zeros, values spanning 2^-20..2^20), kept attributes any
// subset in any order: every tile shape (rows 1-4, 4 or 8 columns, padded columns), the plain
// loops, several passes of 256 summed cells, and summed attributes of one factor alone. Each
// cell within 1e-13 of the sum of its products' magnitudes (the tiles may fuse multiply-adds).
static void test_contract_matches_plain_sums() {
  std::mt19937_64 rng(17);
  std::uniform_int_distribution<int> coin(0, 2), scale(-1, 1);
  std::uniform_int_distribution<int> size(1, 13);
  int compared = 0, tiled = 0, deep = 0;
  for (int trial = 0; trial < 1500; ++trial) {
    std::vector<std::int64_t> shape(6);
    for (auto& n : shape) n = size(rng);
    auto random_factor = [&]() {
      std::vector<AttrId> attrs{0, 1, 2, 3, 4, 5};
      std::shuffle(attrs.begin(), attrs.end(), rng);
      attrs.resize(std::size_t(std::uniform_int_distribution<int>(0, 5)(rng)));
      Factor f = mixed_factor(attrs, shape, rng, true);
      for (double& v : f.values()) v = std::ldexp(v, 20 * scale(rng));
      return f;
    };
    const Factor x = random_factor(), y = random_factor();
    std::vector<AttrId> all = x.attrs(), keep;
    for (AttrId a : y.attrs())
      if (std::find(all.begin(), all.end(), a) == all.end()) all.push_back(a);
    double cells = 1.0;
    for (AttrId a : all) cells *= double(shape[std::size_t(a)]);
    if (cells > double(1 << 20)) continue;   // the plain sweep is one cell at a time
    for (AttrId a : all)
      if (coin(rng) == 0) keep.push_back(a);
    std::shuffle(keep.begin(), keep.end(), rng);
    Factor abs_x = x, abs_y = y;
    for (double& v : abs_x.values()) v = std::fabs(v);
    for (double& v : abs_y.values()) v = std::fabs(v);
    const Factor want = plain_contract(x, y, keep, shape);
    const Factor bound = plain_contract(abs_x, abs_y, keep, shape);
    const Factor got = contract(x, y, keep);
    std::vector<AttrId> got_sorted = got.attrs(), keep_sorted = keep;
    std::sort(got_sorted.begin(), got_sorted.end());
    std::sort(keep_sorted.begin(), keep_sorted.end());
    CHECK(got_sorted == keep_sorted);
    if (got_sorted != keep_sorted) continue;
    // both factors' kept attributes first, then x's own, then y's (the group of more cells
    // last: x's and y's swapped when x's has more)
    std::vector<AttrId> shared_kept, kept_x, kept_y;
    double cells_x = 1.0, cells_y = 1.0;
    for (AttrId a : keep) {
      const bool in_x = x.axis_of(a) >= 0, in_y = y.axis_of(a) >= 0;
      if (in_x && in_y) shared_kept.push_back(a);
      else if (in_x) { kept_x.push_back(a); cells_x *= double(shape[std::size_t(a)]); }
      else { kept_y.push_back(a); cells_y *= double(shape[std::size_t(a)]); }
    }
    if (cells_x > cells_y) std::swap(kept_x, kept_y);
    auto same_set = [&](std::size_t from, std::vector<AttrId> want) {
      std::vector<AttrId> part(got.attrs().begin() + std::ptrdiff_t(from),
                               got.attrs().begin() + std::ptrdiff_t(from + want.size()));
      std::sort(part.begin(), part.end());
      std::sort(want.begin(), want.end());
      return part == want;
    };
    CHECK(same_set(0, shared_kept));
    CHECK(same_set(shared_kept.size(), kept_x));
    const Factor in_order = got.transpose(keep);
    bool close = true;
    for (std::size_t i = 0; i < want.size(); ++i)
      close = close && std::fabs(in_order.data()[i] - want.data()[i]) <= 1e-13 * bound.data()[i];
    CHECK(close);
    ++compared;
    double summed = 1.0, own_x = 1.0, own_y = 1.0;
    for (AttrId a : all) {
      const bool in_x = x.axis_of(a) >= 0, in_y = y.axis_of(a) >= 0;
      const bool kept = std::find(keep.begin(), keep.end(), a) != keep.end();
      const double n = double(shape[std::size_t(a)]);
      if (in_x && in_y && !kept) summed *= n;
      if (!in_y && kept) own_x *= n;
      if (!in_x && kept) own_y *= n;
    }
    tiled += std::max(own_x, own_y) >= 4.0;
    deep += summed > 256.0;
  }
  CHECK(compared > 1000);
  CHECK(tiled > 300);
  CHECK(deep > 30);
  // x times itself (one object as both operands)
  const std::vector<std::int64_t> shape{5, 6, 7};
  const Factor x = mixed_factor({0, 1, 2}, shape, rng, false);
  const Factor want = plain_contract(x, x, {2, 0}, shape);
  const Factor got = contract(x, x, {2, 0}).transpose({2, 0});
  for (std::size_t i = 0; i < want.size(); ++i)
    CHECK_NEAR(got.data()[i], want.data()[i], 1e-13 * std::max(1.0, std::fabs(want.data()[i])));
}

int main() {
  test_sizes_by_hand();
  test_hypothetical_size_matches_built_tree();
  test_calibration_matches_brute_force();
  test_triples_across_a_hub_match_brute_force();
  test_calibrate_rejects_bad_input();
  test_clique_indices_checked();
  test_pair_passes_split_and_share();
  test_product_projected_is_multiply_then_project();
  test_wide_queries_match_brute_force();
  test_root_search_matches_brute_force();
  test_contract_matches_plain_sums();
  return dpcore_test::report();
}
