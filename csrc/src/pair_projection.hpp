// Two-attribute marginals of a calibrated tree by one outward pass per source attribute
// (private to the kernels; CalibratedTree::project_many(by_source) calls it).
#pragma once

#include <cstddef>
#include <vector>

#include "dpcore/factor.hpp"
#include "dpcore/junction_tree.hpp"

namespace dpcore {

/// out[i] = the marginal of attrs_list[i] (two attributes in no common clique of `tree`, in
/// that order, summing to 1) for every i of `which`; `beliefs` and `separator_marginals` are
/// a CalibratedTree's. Equal to CalibratedTree::project() up to rounding.
void project_pairs_by_source(const JunctionTree& tree, const std::vector<Factor>& beliefs,
                             const std::vector<Factor>& separator_marginals,
                             const std::vector<std::vector<AttrId>>& attrs_list,
                             const std::vector<std::size_t>& which, std::vector<Factor>* out);

}  // namespace dpcore
