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
// one elimination per pair. Which end of a pair is its source is chosen per call (Orientation
// below: a large clique in the middle of the tree is crossed by few passes), and a clique's
// reductions that no source changes are shared by the passes (SharedReductions). The numbers
// equal project()'s up to rounding (a different order of sums and products).
//
// A query of more attributes is answered the same way when one of them, a, leaves the others
// in one clique C (a triple two of whose attributes share a clique): P(a, others) is summed
// out of P(a, C) there. AIM's 3-way candidates across the cliques of its late models are
// mostly such triples (263 of 329 on the final model at eps = 10 on Adult, seed 0), and one
// pass per source serves all of them (those 263 took 7.1 CPU-s one by one, 4.3 by source).
#include "pair_projection.hpp"

#include <algorithm>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <vector>

#include "dpcore/errors.hpp"
#include "parallel.hpp"
#include "stride_runs.hpp"

namespace dpcore {

// multiply(q, r).project(keep) with the same numbers, for q over (a, S...) and r over
// (S..., E...) (a not in r): the pass's P(a | S) times a clique's reduction, summed down to
// `keep`. The product table over (a, S..., E...) is laid out as multiply() lays it out, cell
// x_a |r| + j = q[x_a |S| + j / |E|] * r[j], but never stored: marginalize()'s own sweep makes
// each piece of it just before summing it (no fresh zero-filled table, broadcast add of q and
// broadcast multiply by r, nor a whole product written and read back). The sum down to `keep`
// is marginalize()'s over the same cells, so the same order of additions; a cell can differ
// only in the sign of a zero (expand() adds q to +0.0), which the sum, started from +0.0, does
// not keep. Any other layout: multiply() and project() themselves.
Factor product_projected(const Factor& q, const Factor& r, const std::vector<AttrId>& keep) {
  const std::size_t sep = q.attrs().size() - 1;
  const bool layout = !q.attrs().empty() && r.attrs().size() >= sep &&
                      std::equal(q.attrs().begin() + 1, q.attrs().end(), r.attrs().begin()) &&
                      std::find(r.attrs().begin(), r.attrs().end(), q.attrs()[0]) == r.attrs().end();
  if (!layout) return multiply(q, r).project(keep);
  std::vector<AttrId> attrs(1, q.attrs()[0]);
  std::vector<std::int64_t> shape(1, q.shape()[0]);
  attrs.insert(attrs.end(), r.attrs().begin(), r.attrs().end());
  shape.insert(shape.end(), r.shape().begin(), r.shape().end());
  for (std::size_t i = 0; i < sep; ++i)
    if (q.shape()[i + 1] != r.shape()[i]) return multiply(q, r).project(keep);  // project() names it
  std::vector<std::int64_t> kept;
  for (AttrId x : keep) {
    const auto at = std::find(attrs.begin(), attrs.end(), x);
    if (at == attrs.end()) return multiply(q, r).project(keep);   // project() names it
    kept.push_back(shape[std::size_t(at - attrs.begin())]);
  }
  // Cell (x_a |S| + s) |E| + e of the product is q[x_a |S| + s] * r[s |E| + e]: made a piece
  // at a time inside marginalize's own sweep (marginalize_cells), so the table never exists
  // (it was written whole and read back, ~40 % of a pass at 100 attributes).
  struct Product {
    const double* qv;
    const double* rv;
    std::uint64_t scells, extra;
  };
  const std::uint64_t rows = q.shape()[0], scells = q.size() / rows;
  const Product product{q.data(), r.data(), scells, r.size() / scells};
  auto make = [](const void* context, std::uint64_t begin, std::uint64_t end, double* out) {
    const Product& p = *static_cast<const Product*>(context);
    std::uint64_t row = begin / p.extra, e = begin % p.extra;   // row: q's cell
    std::uint64_t s = row % p.scells;                             // its separator cell
    double* o = out;
    if (p.extra == 1) {   // no E: the product is q's cells times r's, elementwise
      for (std::uint64_t c = begin; c < end; ++c, ++row, s = s + 1 == p.scells ? 0 : s + 1)
        *o++ = p.qv[row] * p.rv[s];
      return;
    }
    for (std::uint64_t c = begin; c < end; ++row, e = 0, s = s + 1 == p.scells ? 0 : s + 1) {
      const double v = p.qv[row];
      const double* w = p.rv + s * p.extra;
      const std::uint64_t n = std::min(p.extra - e, end - c);
      for (std::uint64_t t = 0; t < n; ++t) o[t] = v * w[e + t];
      o += n;
      c += n;
    }
  };
  Factor result(keep, kept, 0.0);
  const StrideMap map = make_stride_map(attrs, shape, keep, kept);
  // keep = (a, E...) in r's order: out[x, e] = Σ_s q[x, s] r[s, e]. Where marginalize's sweep
  // is one slice, the innermost runs are E's, which are kept, so it adds each cell on its own
  // in table order: the loops below, with the same products and additions in the same order.
  const bool one_slice = sweep_parts(map.outer_cells, result.size()) == 1;
  const bool plain = keep.size() == 1 + r.attrs().size() - sep && keep[0] == attrs[0] &&
                     std::equal(keep.begin() + 1, keep.end(), r.attrs().begin() + std::ptrdiff_t(sep));
  if (one_slice && plain && product.extra > 1) {
    double* out = result.data();
    for (std::uint64_t x = 0; x < rows; ++x) {
      double* o = out + x * product.extra;
      for (std::uint64_t s = 0; s < scells; ++s) {
        const double v = product.qv[x * scells + s];
        const double* w = product.rv + s * product.extra;
        for (std::uint64_t e = 0; e < product.extra; ++e) o[e] += v * w[e];
      }
    }
    return result;
  }
  marginalize_cells(make, &product, map, result.data(), result.size());
  return result;
}

namespace {

// The clique a pass from source `a` reads `attrs`' answer from: the smallest holding the
// others, or -1 when they share none.
int reader_of(const JunctionTree& t, const std::vector<AttrId>& attrs, AttrId a) {
  std::vector<AttrId> rest;
  for (AttrId x : attrs)
    if (x != a) rest.push_back(x);
  return t.containing_clique(rest);
}

// One query answered by a pass: where the answer goes and the clique it is read from.
struct Target {
  std::size_t index;  // into the output
  int reader;         // clique holding the query's other attributes, where it is summed out
  AttrId source;      // the pass that answers it
};

// A clique's belief summed down to (entry separator ∪ target), the one piece of a pass through
// a clique without the source that does not depend on the source: every pass entering clique
// c from the same neighbour towards the same target needs the same table. Computed by the
// first pass that asks (under the clique's lock, so once) and kept for the call: a large
// clique in the middle of the tree is then summed once per (entry, target), not once per
// source crossing it. The table is the same computation either way, so the answers do not
// depend on which pass, or thread, computed it.
class SharedReductions {
 public:
  SharedReductions(const std::vector<Factor>& beliefs, bool enabled)
      : beliefs_(beliefs), enabled_(enabled), slots_(new Slot[beliefs.size()]) {}

  // beliefs[c].project(attrs), shared when enabled; `scratch` holds it otherwise.
  const Factor& get(int c, const std::vector<AttrId>& attrs, Factor* scratch) {
    if (!enabled_) {
      *scratch = beliefs_[std::size_t(c)].project(attrs);
      return *scratch;
    }
    Slot& slot = slots_[std::size_t(c)];
    std::lock_guard<std::mutex> lock(slot.mutex);
    for (const auto& e : slot.entries)
      if (e->attrs == attrs) return e->value;
    slot.entries.push_back(std::make_unique<Entry>(Entry{attrs, beliefs_[std::size_t(c)].project(attrs)}));
    return slot.entries.back()->value;
  }

 private:
  struct Entry {
    std::vector<AttrId> attrs;
    Factor value;
  };
  struct Slot {
    std::mutex mutex;
    std::vector<std::unique_ptr<Entry>> entries;  // few: (entry, target) pairs of one clique
  };
  const std::vector<Factor>& beliefs_;
  const bool enabled_;
  std::unique_ptr<Slot[]> slots_;
};

// Which attribute of each query is the source of the pass that answers it, among those that
// leave the others in one clique (both ends of a pair; for a triple, those whose two others
// share a clique). A pass costs, at each clique it crosses without its source a, |a| times
// the cells of (entry separator ∪ exit separator, or ∪ the target): sources far from a large
// clique in the middle of the tree pay it once each. Two rules, and the one whose planned work
// is smaller is taken (ties: the first):
//  * the source with the smaller domain (ties: the lower id);
//  * for a source whose pass to its reader crosses other cliques, the largest of those (ties:
//    the lower index) splits the tree, and the source on the side whose query attributes
//    weigh less (Σ domain sizes over the batch's queries) is taken: every source there
//    crosses it, so the crossings cost Σ |a| of that side; a pass crossing none weighs 0.
// For a pair, both ends see the same clique between them, so a batch of pairs alone is
// oriented as by the pair rule before triples were added; triples in the batch add their
// attributes to the weights. The choice changes only the order of sums (the answers agree up
// to rounding).
class Orientation {
 public:
  Orientation(const JunctionTree& t, const std::vector<Factor>& beliefs,
              const std::vector<std::vector<AttrId>>& attrs_list,
              const std::vector<std::size_t>& which)
      : t_(t), beliefs_(beliefs), attrs_list_(attrs_list), which_(which),
        k_(t.cliques().size()), home_(std::size_t(t.num_attrs()), -2), nbrs_(k_) {
    for (const auto& e : t.edges()) {
      nbrs_[std::size_t(e.first)].push_back(e.second);
      nbrs_[std::size_t(e.second)].push_back(e.first);
    }
    depth_.assign(k_, 0);
    for (int c : t.order())
      if (t.parent(c) >= 0) depth_[std::size_t(c)] = depth_[std::size_t(t.parent(c))] + 1;
  }

  int home(AttrId a) {
    int& h = home_[std::size_t(a)];
    if (h == -2) h = t_.containing_clique({a});
    return h;
  }

  // Sources in increasing id, each with its targets; the cheaper rule's.
  std::vector<std::vector<Target>> choose(PairPassPlan* plan) {
    std::vector<std::vector<Target>> smaller = assign(false);
    std::vector<std::vector<Target>> split = assign(true);
    PairPassPlan p;
    p.split_cells = planned_cells(split);
    p.smaller_cells = planned_cells(smaller);
    p.split = p.split_cells < p.smaller_cells;
    std::vector<std::vector<Target>>& taken = p.split ? split : smaller;
    if (plan != nullptr) {
      std::vector<AttrId> source_of(attrs_list_.size(), -1);
      for (const auto& targets : taken)
        for (const Target& g : targets) source_of[g.index] = g.source;
      for (std::size_t i : which_) p.sources.push_back(source_of[i]);
      *plan = std::move(p);
    }
    return std::move(taken);
  }

  // Parent links and breadth-first order of the tree rooted at clique h.
  void root_at(int h, std::vector<int>* up, std::vector<int>* order) const {
    up->assign(k_, -1);
    order->assign(1, h);
    std::vector<char> seen(k_, 0);
    seen[std::size_t(h)] = 1;
    for (std::size_t i = 0; i < order->size(); ++i)
      for (int x : nbrs_[std::size_t((*order)[i])])
        if (!seen[std::size_t(x)]) {
          seen[std::size_t(x)] = 1;
          (*up)[std::size_t(x)] = (*order)[i];
          order->push_back(x);
        }
  }

 private:
  std::int64_t size(AttrId a) const { return t_.shape()[std::size_t(a)]; }

  // A query's possible sources, each an attribute whose other attributes lie in one clique
  // (the reader), in increasing (domain size, id): both ends of a pair, the attributes of a
  // triple whose two others share a clique.
  std::vector<Target> options(std::size_t i) {
    std::vector<std::pair<AttrId, int>> found;
    for (AttrId a : attrs_list_[i]) {
      const int reader = reader_of(t_, attrs_list_[i], a);
      if (reader >= 0) found.emplace_back(a, reader);
    }
    std::sort(found.begin(), found.end(), [&](const auto& x, const auto& y) {
      return size(x.first) != size(y.first) ? size(x.first) < size(y.first) : x.first < y.first;
    });
    std::vector<Target> out;
    for (const auto& f : found) out.push_back(Target{i, f.second, f.first});
    return out;
  }

  std::vector<std::vector<Target>> assign(bool by_split) {
    std::vector<std::vector<Target>> out(std::size_t(t_.num_attrs()));
    if (by_split) weigh_sides();
    for (std::size_t i : which_) {
      const std::vector<Target> choices = options(i);
      if (choices.empty())
        throw InvalidArgument("a source pass needs an attribute whose others share a clique");
      // the first (smallest domain), or by the split rule the one on the lighter side of the
      // largest clique its pass crosses (a pass crossing none weighs 0; ties: the first)
      std::size_t pick = 0;
      if (by_split) {
        double lightest = std::numeric_limits<double>::infinity();
        for (std::size_t j = 0; j < choices.size(); ++j) {
          const int h = home(choices[j].source);
          const int x = largest_between(h, choices[j].reader);
          const auto side = x < 0 ? 0 : side_[std::size_t(x)][std::size_t(h)];
          const double w = x < 0 ? 0.0 : weight_[std::size_t(x)][std::size_t(side)];
          if (w < lightest) {
            lightest = w;
            pick = j;
          }
        }
      }
      out[std::size_t(choices[pick].source)].push_back(choices[pick]);
    }
    return out;
  }

  // The largest clique strictly between cliques u and v on the tree path, or -1.
  int largest_between(const int from, const int to) const {
    int best = -1, u = from, v = to;
    auto consider = [&](int c) {
      if (c == from || c == to) return;
      const std::uint64_t n = beliefs_[std::size_t(c)].size(), m = best < 0 ? 0 : beliefs_[std::size_t(best)].size();
      if (best < 0 || n > m || (n == m && c < best)) best = c;
    };
    while (u != v) {
      int& deeper = depth_[std::size_t(u)] >= depth_[std::size_t(v)] ? u : v;
      consider(deeper);
      deeper = t_.parent(deeper);
    }
    consider(u);
    return best;
  }

  // For every clique x: side_[x][c] = the neighbour of x whose part of the tree without x holds
  // c, and weight_[x][n] = Σ |a| over the pairs' attributes whose clique is in neighbour n's part.
  void weigh_sides() {
    if (!side_.empty()) return;
    std::vector<char> used(std::size_t(t_.num_attrs()), 0);
    for (std::size_t i : which_)
      for (AttrId a : attrs_list_[i]) used[std::size_t(a)] = 1;
    side_.assign(k_, std::vector<int>(k_, -1));
    weight_.assign(k_, std::vector<double>(k_, 0.0));
    for (std::size_t x = 0; x < k_; ++x) {
      std::vector<int>& side = side_[x];
      for (int n : nbrs_[x]) {
        std::vector<int> stack(1, n);
        side[std::size_t(n)] = n;
        while (!stack.empty()) {
          const int c = stack.back();
          stack.pop_back();
          for (int y : nbrs_[std::size_t(c)])
            if (y != int(x) && side[std::size_t(y)] < 0) {
              side[std::size_t(y)] = n;
              stack.push_back(y);
            }
        }
      }
      for (AttrId a = 0; a < t_.num_attrs(); ++a)
        if (used[std::size_t(a)] && home(a) != int(x))
          weight_[x][std::size_t(side[std::size_t(home(a))])] += double(size(a));
    }
  }

  // Cells of multiply work the passes would do (the pass's own walk, without the tables).
  double planned_cells(const std::vector<std::vector<Target>>& by_source) {
    double total = 0.0;
    std::vector<int> up, order;
    for (AttrId a = 0; a < t_.num_attrs(); ++a) {
      const std::vector<Target>& targets = by_source[std::size_t(a)];
      if (targets.empty()) continue;
      root_at(home(a), &up, &order);
      std::vector<char> needed(k_, 0);
      std::vector<double> exits(k_, 0.0);   // Σ over a clique's exits of their extra cells
      auto entry_cells = [&](int c) {     // cells of the separator c is entered by
        const int p = up[std::size_t(c)];
        if (p < 0) return 1.0;
        double cells = 1.0;
        for (AttrId x : t_.cliques()[std::size_t(c)])
          if (t_.in_clique(p, x)) cells *= double(size(x));
        return cells;
      };
      auto extra = [&](int c, const std::vector<AttrId>& wanted) {   // cells of wanted \ entry
        const int p = up[std::size_t(c)];
        double cells = 1.0;
        for (AttrId x : wanted)
          if (p < 0 || !t_.in_clique(p, x)) cells *= double(size(x));
        return cells;
      };
      for (const Target& g : targets) {
        std::vector<AttrId> others;
        for (AttrId x : attrs_list_[g.index])
          if (x != a) others.push_back(x);
        exits[std::size_t(g.reader)] += extra(g.reader, others);
        for (int c = g.reader; c >= 0 && !needed[std::size_t(c)]; c = up[std::size_t(c)]) {
          needed[std::size_t(c)] = 1;
          const int p = up[std::size_t(c)];
          if (p >= 0) {
            std::vector<AttrId> s;
            for (AttrId x : t_.cliques()[std::size_t(c)])
              if (t_.in_clique(p, x)) s.push_back(x);
            exits[std::size_t(p)] += extra(p, s);
          }
        }
      }
      for (std::size_t c = 0; c < k_; ++c) {
        if (!needed[c] || exits[c] == 0.0) continue;
        total += t_.in_clique(int(c), a) ? double(beliefs_[c].size())
                                         : double(size(a)) * entry_cells(int(c)) * exits[c];
      }
    }
    return total;
  }

  const JunctionTree& t_;
  const std::vector<Factor>& beliefs_;
  const std::vector<std::vector<AttrId>>& attrs_list_;
  const std::vector<std::size_t>& which_;
  const std::size_t k_;
  std::vector<int> home_;
  std::vector<std::vector<int>> nbrs_;
  std::vector<int> depth_;
  std::vector<std::vector<int>> side_;
  std::vector<std::vector<double>> weight_;
};

}  // namespace

Factor inverse(const Factor& separator) {
  Factor inv = separator;
  for (double& v : inv.values()) v = v >= std::numeric_limits<double>::min() ? 1.0 / v : 0.0;
  return inv;
}

bool has_source(const JunctionTree& t, const std::vector<AttrId>& attrs) {
  return attrs.size() >= 2 && std::any_of(attrs.begin(), attrs.end(), [&](AttrId a) {
           return reader_of(t, attrs, a) >= 0;
         });
}

bool project_by_source(const JunctionTree& t, const std::vector<Factor>& beliefs,
                       const std::vector<Factor>& separators,
                       const std::vector<std::vector<AttrId>>& attrs_list,
                       const std::vector<std::size_t>& which, std::vector<Factor>* out,
                       bool share, PairPassPlan* plan, double* const* dest,
                       const std::function<bool(double)>& accept) {
  const std::size_t k = t.cliques().size();
  const int d = t.num_attrs();
  Orientation orientation(t, beliefs, attrs_list, which);
  auto home_of = [&](AttrId a) { return orientation.home(a); };
  for (AttrId a = 0; a < d; ++a) home_of(a);   // filled before the threads only read it
  PairPassPlan chosen;
  const std::vector<std::vector<Target>> by_source = orientation.choose(&chosen);
  if (accept && !accept(std::min(chosen.split_cells, chosen.smaller_cells))) return false;
  if (plan != nullptr) *plan = std::move(chosen);
  std::vector<AttrId> sources;
  for (AttrId a = 0; a < d; ++a)
    if (!by_source[std::size_t(a)].empty()) sources.push_back(a);

  SharedReductions reductions(beliefs, share);
  // 1 / P(S) of every separator, once per call (each pass crossing a clique needed it)
  std::vector<Factor> inverses(k);
  for (std::size_t c = 0; c < k; ++c)
    if (t.parent(int(c)) >= 0) inverses[c] = inverse(separators[c]);
  auto pass = [&](AttrId a) {
    const std::vector<Target>& targets = by_source[std::size_t(a)];
    const int h = home_of(a);
    // Rooted at h: parent links, and the cliques on the way from h to some reader.
    std::vector<int> up, order;
    orientation.root_at(h, &up, &order);
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
      Factor scratch;
      return product_projected(q, reductions.get(c, both, &scratch), keep);
    };
    for (int c : order) {
      if (!needed[std::size_t(c)]) continue;
      const int p = up[std::size_t(c)];
      if (p >= 0 && !t.in_clique(c, a)) {
        // the separator marginal is stored on whichever end is the child in the tree's rooting
        const int child = t.parent(c) == p ? c : p;
        Factor conditional = with_a(p, t.separator(child));
        conditional.multiply_inplace(inverses[std::size_t(child)]);
        given[std::size_t(c)] = std::move(conditional);
      }
      for (const Target* g : reads[std::size_t(c)]) {
        const std::vector<AttrId>& q = attrs_list[g->index];
        Factor m = with_a(c, q);
        if (m.attrs() == q) {
          // project(q) onto its own axes: each cell 0.0 + x (the same number, and a -0.0
          // made +0.0 as the sum from zero does), without a new table
          for (double& v : m.values()) v = 0.0 + v;
        } else {
          m = m.project(q);
        }
        const double total = m.sum();
        if (dest != nullptr) {   // each cell v * (1 / total), as multiply_scalar computes it
          double* to = dest[g->index];
          const double scale = total > 0.0 ? 1.0 / total : 1.0;
          if (total > 0.0)
            for (std::size_t i = 0; i < m.size(); ++i) to[i] = m.data()[i] * scale;
          else
            std::copy(m.values().begin(), m.values().end(), to);
          continue;
        }
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
  return true;
}

}  // namespace dpcore
