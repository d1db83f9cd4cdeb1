// Marginals across cliques of a calibrated tree by one outward pass per source attribute
// (private to the kernels; CalibratedTree::project_many(by_source) calls it).
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

#include "dpcore/factor.hpp"
#include "dpcore/junction_tree.hpp"

namespace dpcore {

/// out[i] = the marginal of attrs_list[i] (attributes in no common clique of `tree` of which
/// one leaves the others in one clique, has_source; in that order, summing to 1) for every i
/// of `which` (InvalidArgument for one without a source); `beliefs` and `separator_marginals` are
/// a CalibratedTree's. Equal to CalibratedTree::project() up to rounding. `share`: the
/// reductions of a clique that do not depend on the source are computed once for the call
/// (false recomputes them in every pass: the same numbers, bit for bit; for tests).
/// `plan`, when given, gets how the sources were chosen (for tests). `dest`, when given:
/// query i's values go to dest[i] (room for its cells) instead of (*out)[i], the same numbers.
/// `accept`, when given, sees the planned cells of multiply work (the cheaper rule's; shared
/// reductions and walks not counted) before any pass runs: false answers nothing and returns
/// false (the caller projects those queries another way).
struct PairPassPlan {
  bool split = false;          // the sources came from the tree-split rule
  double split_cells = 0.0;    // planned multiply cells of the split rule
  double smaller_cells = 0.0;  // ... of the smaller-domain rule
  std::vector<AttrId> sources;  // the source of each query of `which`, in its order
};
/// 1 / P(S) of a separator marginal, cell by cell. A cell below DBL_MIN (a subnormal) would
/// invert to +inf and turn 0 * inf into NaN; such a cell carries under 1e-308 of the mass, so
/// it gives 0, like an empty one (project() and the passes alike).
Factor inverse(const Factor& separator);
/// multiply(q, r).project(keep), bit for bit, without the product as a Factor when q is over
/// (a, S...) and r over (S..., E...) with a not in r (a pass's P(a | S) times a clique's
/// reduction); any other layout is computed by multiply() and project().
Factor product_projected(const Factor& q, const Factor& r, const std::vector<AttrId>& keep);

/// Whether a source pass can answer `attrs`: two or more attributes, one of which (the
/// source) leaves the others inside one clique (every pair; a triple two of whose attributes
/// share a clique).
bool has_source(const JunctionTree& tree, const std::vector<AttrId>& attrs);

bool project_by_source(const JunctionTree& tree, const std::vector<Factor>& beliefs,
                       const std::vector<Factor>& separator_marginals,
                       const std::vector<std::vector<AttrId>>& attrs_list,
                       const std::vector<std::size_t>& which, std::vector<Factor>* out,
                       bool share = true, PairPassPlan* plan = nullptr,
                       double* const* dest = nullptr,
                       const std::function<bool(double)>& accept = nullptr);

}  // namespace dpcore
