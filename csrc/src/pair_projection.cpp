// Two-attribute marginals of a calibrated tree, many at once (issue 22: AIM projects ~5,000
// pairs a round at 100 attributes).
//
// project() answers a pair {a, b} in no common clique by variable elimination over the subtree
// joining a and b: one walk per pair, ~d²/2 walks for all pairs. Here the pairs are grouped by
// a source attribute a, and one pass outward from a clique h holding a gives P(a, C) for every
// clique C on the way to the pairs' other ends: rooted at h, a child C' of C with separator S
// has P(a, C') = P(C') P(a | S), P(a | S) = P(a, S) / P(S) (a and C' \ S are independent
// given S by the running-intersection property; when a is in C' too, P(a, C') is C''s belief).
// P(a, b) is then summed out of P(a, C) at the clique C chosen for b, never forming P(a, C)
// itself: a visited clique costs its cells plus |a| times the cells of its separators, against
// one elimination per pair. The numbers equal project()'s up to rounding (a different order of
// sums and products).
#include "pair_projection.hpp"

#include <algorithm>
#include <limits>
#include <vector>

#include "dpcore/errors.hpp"
#include "parallel.hpp"

namespace dpcore {

namespace {

// One query answered by a pass: where the answer goes and the clique it is read from.
struct Target {
  std::size_t index;  // into the output
  int reader;         // clique holding `other` that the answer is summed out of
};

// The separator marginal's inverse, a subnormal or zero cell giving 0 as in project().
Factor inverse(const Factor& separator) {
  Factor inv = separator;
  for (double& v : inv.values()) v = v >= std::numeric_limits<double>::min() ? 1.0 / v : 0.0;
  return inv;
}

}  // namespace

void project_pairs_by_source(const JunctionTree& t, const std::vector<Factor>& beliefs,
                             const std::vector<Factor>& separators,
                             const std::vector<std::vector<AttrId>>& attrs_list,
                             const std::vector<std::size_t>& which, std::vector<Factor>* out) {
  const std::size_t k = t.cliques().size();
  const int d = t.num_attrs();
  // The source of a pair: the end with the smaller domain (a pass costs |source| per cell),
  // ties to the lower id; the attribute with the most pairs among equals would save little.
  std::vector<std::vector<Target>> by_source(static_cast<std::size_t>(d));
  std::vector<int> home(static_cast<std::size_t>(d), -2);
  auto home_of = [&](AttrId a) {
    int& h = home[std::size_t(a)];
    if (h == -2) h = t.containing_clique({a});
    return h;
  };
  for (std::size_t i : which) {
    AttrId a = attrs_list[i][0], b = attrs_list[i][1];
    const std::int64_t na = t.shape()[std::size_t(a)], nb = t.shape()[std::size_t(b)];
    if (nb < na || (nb == na && b < a)) std::swap(a, b);
    by_source[std::size_t(a)].push_back(Target{i, home_of(b)});
  }
  std::vector<std::vector<int>> nbrs(k);
  for (const auto& e : t.edges()) {
    nbrs[std::size_t(e.first)].push_back(e.second);
    nbrs[std::size_t(e.second)].push_back(e.first);
  }
  std::vector<AttrId> sources;
  for (AttrId a = 0; a < d; ++a)
    if (!by_source[std::size_t(a)].empty()) sources.push_back(a);

  auto pass = [&](AttrId a) {
    const std::vector<Target>& targets = by_source[std::size_t(a)];
    const int h = home_of(a);
    // Rooted at h: parent links, and the cliques on the way from h to some reader.
    std::vector<int> up(k, -1), order(1, h);
    std::vector<char> seen(k, 0);
    seen[std::size_t(h)] = 1;
    for (std::size_t i = 0; i < order.size(); ++i)
      for (int x : nbrs[std::size_t(order[i])])
        if (!seen[std::size_t(x)]) {
          seen[std::size_t(x)] = 1;
          up[std::size_t(x)] = order[i];
          order.push_back(x);
        }
    std::vector<char> needed(k, 0);
    std::vector<std::vector<const Target*>> reads(k);
    for (const Target& g : targets) {
      reads[std::size_t(g.reader)].push_back(&g);
      for (int c = g.reader; c >= 0 && !needed[std::size_t(c)]; c = up[std::size_t(c)])
        needed[std::size_t(c)] = 1;
    }
    // Walking outward (parents first), each needed clique c without a gets P(a | S) over its
    // separator S with its parent. P(a, T) for T inside c (a child's separator, or {b}) is
    // then Σ P(a | S) P(S ∪ T): c's belief is first summed down to S ∪ T, so a clique costs its
    // cells plus |a| times those of S ∪ T, not |a| times its own (cliques with a: their belief).
    std::vector<Factor> given(k);
    auto with_a = [&](int c, const std::vector<AttrId>& wanted) {
      std::vector<AttrId> keep(1, a);
      for (AttrId x : wanted)
        if (x != a) keep.push_back(x);
      if (t.in_clique(c, a)) return beliefs[std::size_t(c)].project(keep);
      const Factor& q = given[std::size_t(c)];   // over a, then S
      std::vector<AttrId> both(q.attrs().begin() + 1, q.attrs().end());
      for (AttrId x : wanted)
        if (x != a && std::find(both.begin(), both.end(), x) == both.end()) both.push_back(x);
      return multiply(q, beliefs[std::size_t(c)].project(both)).project(keep);
    };
    for (int c : order) {
      if (!needed[std::size_t(c)]) continue;
      const int p = up[std::size_t(c)];
      if (p >= 0 && !t.in_clique(c, a)) {
        // the separator marginal is stored on whichever end is the child in the tree's rooting
        const int child = t.parent(c) == p ? c : p;
        Factor conditional = with_a(p, t.separator(child));
        conditional.multiply_inplace(inverse(separators[std::size_t(child)]));
        given[std::size_t(c)] = std::move(conditional);
      }
      for (const Target* g : reads[std::size_t(c)]) {
        const std::vector<AttrId>& q = attrs_list[g->index];
        Factor m = with_a(c, q).project(q);
        const double total = m.sum();
        if (total > 0.0) m.multiply_scalar(1.0 / total);
        (*out)[g->index] = std::move(m);
      }
    }
  };

  // Sources are independent: split them over the cores (a pass reads the tree only).
  double all = 0.0;
  for (AttrId a : sources)
    all += double(t.shape()[std::size_t(a)]) * double(by_source[std::size_t(a)].size());
  const std::size_t workers =
      all < 2.0 * double(kGrainCells) ? 1 : std::min<std::size_t>(kernel_threads(), sources.size());
  strided_for(sources.size(), workers, [&](std::size_t i) { pass(sources[i]); });
}

}  // namespace dpcore
