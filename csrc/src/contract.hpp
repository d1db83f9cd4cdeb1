// The contraction of a product of factors (private to the kernels: CalibratedTree::project
// sums its parts with it; the C++ tests compare it with a plain sweep).
#pragma once

#include <vector>

#include "dpcore/factor.hpp"

namespace dpcore {

/// *out = Σ over the attributes not in *out of Π parts (out's attributes and shape given, each
/// in some part), in one sweep over the union of the parts' attributes: its axes ordered by
/// extent, largest last (stable: ties in order of first appearance among the parts; a lone
/// axis gets a unit axis before it), the innermost as a block. Each cell's product is formed
/// part by part from the first; a cell of out without the innermost axis gets each block's
/// products summed from 0 before they are added to it; with that axis, each product is added
/// to it in turn. That order is the function's contract: how it lays the tables out in memory
/// to sweep them must not change a bit.
void contract(const std::vector<const Factor*>& parts, Factor* out);

}  // namespace dpcore
