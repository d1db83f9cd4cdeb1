// Junction trees of Markov random fields over a Domain, and exact inference on them.
//
// Construction (Koller & Friedman, ch. 9-10; Private-PGM, McKenna et al. 2019, Sec. 4.2 of
// papers/nist-mst.txt): greedy elimination that always removes the attribute whose
// elimination clique has the fewest cells (ties: lowest AttrId), the maximal elimination
// cliques, and a maximum spanning tree on separator cardinality (ties: more separator cells,
// then lower clique indices). A maximum-weight spanning tree of a chordal graph's maximal
// cliques under separator cardinality has the running-intersection property, so it is a
// junction tree. Attributes in no input clique become singleton cliques.
//
// Calibration (calibrate() below, implemented by the Calibrator of dpcore/calibration.hpp):
// two-pass sum-product, log space upward with a per-separator-cell maximum, probability
// space downward.
#pragma once

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "dpcore/domain.hpp"
#include "dpcore/factor.hpp"

namespace dpcore {

/// The maximal cliques of the greedy triangulation of the graph whose edges join the
/// attributes sharing an input clique. Each clique is sorted by AttrId; the list is sorted
/// lexicographically. `shape` holds every attribute's size (validated >= 1).
std::vector<std::vector<AttrId>> triangulate(const std::vector<std::int64_t>& shape,
                                             const std::vector<std::vector<AttrId>>& cliques);

/// A junction tree over every attribute of a domain, rooted at clique 0.
class JunctionTree {
 public:
  /// `shape`: the size of every attribute of the domain; `cliques`: AttrId lists (any order,
  /// duplicates allowed). InvalidArgument on unknown or repeated ids or sizes < 1.
  JunctionTree(std::vector<std::int64_t> shape, std::vector<std::vector<AttrId>> cliques);

  const std::vector<std::int64_t>& shape() const { return shape_; }
  int num_attrs() const { return static_cast<int>(shape_.size()); }
  /// The input cliques, each sorted and deduplicated (kept for hypothetical trees).
  const std::vector<std::vector<AttrId>>& input_cliques() const { return input_; }
  /// Maximal cliques, each sorted by AttrId.
  const std::vector<std::vector<AttrId>>& cliques() const { return cliques_; }
  /// Tree edges as (parent, child) clique indices, in breadth-first order from the root.
  const std::vector<std::pair<int, int>>& edges() const { return edges_; }
  /// Cliques in breadth-first order from the root (clique 0): parents before children.
  const std::vector<int>& order() const { return order_; }
  /// Parent of a clique (-1 for the root). InvalidArgument when `clique` is not in
  /// [0, cliques().size()).
  int parent(int clique) const { return parent_[clique_index(clique)]; }
  /// Separator between a clique and its parent, sorted (empty for the root). InvalidArgument
  /// when `clique` is out of range.
  const std::vector<AttrId>& separator(int clique) const {
    return separator_[clique_index(clique)];
  }
  /// True when `attr` is in clique `clique`. InvalidArgument when either is out of range.
  bool in_clique(int clique, AttrId attr) const {
    const std::size_t c = clique_index(clique);
    if (attr < 0 || attr >= num_attrs()) throw_bad_attr(attr);
    return member_[c * shape_.size() + static_cast<std::size_t>(attr)] != 0;
  }
  /// Sizes of the attributes of `attrs`.
  std::vector<std::int64_t> shape_of(const std::vector<AttrId>& attrs) const;

  /// Total cells of all clique tables; TableTooLarge when the sum overflows 64 bits.
  std::uint64_t size() const;
  /// size() * 8 bytes in MB of 2**20 bytes (AIM's JT-SIZE); never throws (may be inf).
  double size_mb() const;
  /// size_mb() of the tree built from input_cliques() plus `extra`, without building it.
  double hypothetical_size_mb(const std::vector<std::vector<AttrId>>& extra) const;
  /// hypothetical_size_mb(extra) for every `extra` of `batch`: the base graph is built once,
  /// and an `extra` that adds no edge to it gets size_mb() without a triangulation.
  std::vector<double> hypothetical_sizes_mb(
      const std::vector<std::vector<std::vector<AttrId>>>& batch) const;
  /// Index of the clique with the fewest cells that contains every attribute of `attrs`
  /// (ties: lowest index), or -1 when none does. InvalidArgument on unknown or repeated ids.
  int containing_clique(const std::vector<AttrId>& attrs) const;

 private:
  // `clique` as an index into the per-clique vectors; InvalidArgument when out of range.
  std::size_t clique_index(int clique) const {
    if (clique < 0 || static_cast<std::size_t>(clique) >= cliques_.size()) throw_bad_clique(clique);
    return static_cast<std::size_t>(clique);
  }
  [[noreturn]] void throw_bad_clique(int clique) const;
  [[noreturn]] void throw_bad_attr(AttrId attr) const;

  std::vector<std::int64_t> shape_;
  std::vector<std::vector<AttrId>> input_;
  std::vector<std::vector<AttrId>> cliques_;
  std::vector<double> clique_cells_;
  std::vector<char> member_;  // member_[c * num_attrs + a]: attribute a is in clique c
  std::vector<std::pair<int, int>> edges_;
  std::vector<int> order_;
  std::vector<int> parent_;
  std::vector<std::vector<AttrId>> separator_;
};

/// Calibrated clique marginals of the distribution p(x) ∝ exp(Σ_f f(x_f)).
class CalibratedTree {
 public:
  /// `separator_marginals[c]` is the marginal of separator(c) (ignored for the root); when
  /// empty it is computed from the beliefs.
  CalibratedTree(std::shared_ptr<const JunctionTree> tree, std::vector<Factor> beliefs,
                 double log_partition, std::vector<Factor> separator_marginals = {});

  const JunctionTree& tree() const { return *tree_; }
  const std::shared_ptr<const JunctionTree>& tree_ptr() const { return tree_; }
  /// One probability table per clique over its attributes, each summing to 1. The axis
  /// order is the table's own (Factor::attrs()): a Calibrator's snapshot keeps its layout
  /// (table_layout, largest axis innermost, which projections sweep fastest); transpose to
  /// tree().cliques()[c] where the clique's order is needed.
  const std::vector<Factor>& beliefs() const { return beliefs_; }
  /// The marginal of separator(c) for every clique c but the root (over its attributes in
  /// separator(c)'s order; the root's is empty).
  const std::vector<Factor>& separator_marginals() const { return separator_marginals_; }
  /// log Σ_x exp(Σ_f f(x_f)).
  double log_partition() const { return log_partition_; }

  /// The marginal distribution of `attrs` (in the given order), summing to 1. From the
  /// smallest containing clique when there is one; otherwise by variable elimination over the
  /// smallest subtree whose cliques cover `attrs`: the joint of the subtree is its top
  /// clique's belief times each other clique's belief divided by its separator marginal, and
  /// messages flow up the subtree carrying the wanted attributes, each clique first summing
  /// out the attributes that no neighbour and no query needs.
  Factor project(const std::vector<AttrId>& attrs) const;
  /// project() for each attribute list, the queries split over up to 4 threads. With
  /// `by_source`, the queries in no common clique of which one attribute leaves the others in
  /// one clique (every pair; a triple two of whose attributes share a clique; any larger
  /// query with such an attribute) are instead answered
  /// by one outward pass per source attribute (csrc/src/pair_projection.cpp): the same
  /// marginals up to rounding, far less work when many queries share an attribute (AIM's
  /// all-2-way and all-3-way pools).
  std::vector<Factor> project_many(const std::vector<std::vector<AttrId>>& attrs_list,
                                   bool by_source = false) const;
  /// project_many()'s values, query i's (row-major) written to dest[i], bit for bit the same,
  /// without a Factor a query for the pairs: AIM's flat reference vector is ~5,000 queries.
  /// The caller gives each query room for its cells, the ranges not overlapping.
  void project_many_into(const std::vector<std::vector<AttrId>>& attrs_list, bool by_source,
                         double* const* dest) const;

 private:
  // project_many(): into `answers`, or, with dest, into dest[i] (answers then unused)
  void project_queries(const std::vector<std::vector<AttrId>>& attrs_list, bool by_source,
                       std::vector<Factor>* answers, double* const* dest) const;

  std::shared_ptr<const JunctionTree> tree_;
  std::vector<Factor> beliefs_;
  double log_partition_;
  std::vector<Factor> separator_marginals_;
};

/// Sums each log-potential into the smallest clique containing its attributes (InvalidArgument
/// naming the attributes when none does, or when a value is NaN or +inf; a size mismatch with
/// the tree's shape is InvalidArgument too) and runs sum-product with a one-off Calibrator.
/// InvalidArgument when the total mass is zero (every configuration has log-potential -inf).
CalibratedTree calibrate(std::shared_ptr<const JunctionTree> tree,
                         const std::vector<Factor>& log_potentials);

}  // namespace dpcore
