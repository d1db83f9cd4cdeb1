#include "dpcore/junction_tree.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <numeric>
#include <string>

#include "contract.hpp"
#include "dpcore/errors.hpp"
#include "pair_projection.hpp"
#include "parallel.hpp"

namespace dpcore {

namespace {

constexpr double kBytesPerCell = 8.0;
constexpr double kBytesPerMb = 1048576.0;  // 2**20

std::vector<std::vector<AttrId>> normalized_cliques(const std::vector<std::vector<AttrId>>& in,
                                                    int num_attrs) {
  std::vector<std::vector<AttrId>> out;
  out.reserve(in.size());
  for (const auto& c : in) {
    check_attr_ids(c, num_attrs, "clique");
    std::vector<AttrId> s(c);
    std::sort(s.begin(), s.end());
    out.push_back(std::move(s));
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

void check_shape(const std::vector<std::int64_t>& shape) {
  for (std::size_t i = 0; i < shape.size(); ++i)
    if (shape[i] < 1)
      throw InvalidArgument("size of attribute " + std::to_string(i) + " must be >= 1, got " +
                            std::to_string(shape[i]));
}

// Adjacency of the attribute graph as one bit row per attribute.
class BitGraph {
 public:
  explicit BitGraph(int n) : n_(n), words_((n + 63) / 64), bits_(std::size_t(n) * words_, 0) {}
  std::uint64_t* row(int v) { return bits_.data() + std::size_t(v) * words_; }
  const std::uint64_t* row(int v) const { return bits_.data() + std::size_t(v) * words_; }
  void connect(int a, int b) {
    row(a)[b >> 6] |= std::uint64_t{1} << (b & 63);
    row(b)[a >> 6] |= std::uint64_t{1} << (a & 63);
  }
  int words() const { return words_; }
  bool connected(int a, int b) const {
    return (bits_[std::size_t(a) * words_ + std::size_t(b >> 6)] >> (b & 63)) & 1;
  }

 private:
  int n_;
  int words_;
  std::vector<std::uint64_t> bits_;
};

template <class F>
void for_each_bit(const std::uint64_t* a, const std::uint64_t* mask, int words, F&& f) {
  for (int w = 0; w < words; ++w) {
    std::uint64_t x = a[w] & mask[w];
    while (x) {
      const int b = __builtin_ctzll(x);
      f(w * 64 + b);
      x &= x - 1;
    }
  }
}

double sum_cells(const std::vector<std::int64_t>& shape,
                 const std::vector<std::vector<AttrId>>& cliques) {
  double total = 0.0;
  for (const auto& c : cliques) {
    double cells = 1.0;
    for (AttrId a : c) cells *= static_cast<double>(shape[static_cast<std::size_t>(a)]);
    total += cells;
  }
  return total;
}

BitGraph graph_of(int d, const std::vector<std::vector<AttrId>>& cliques, const char* what) {
  BitGraph g(d);
  for (const auto& c : cliques) {
    check_attr_ids(c, d, what);
    for (std::size_t i = 0; i < c.size(); ++i)
      for (std::size_t j = i + 1; j < c.size(); ++j) g.connect(c[i], c[j]);
  }
  return g;
}

std::vector<std::vector<AttrId>> triangulate_graph(const std::vector<std::int64_t>& shape,
                                                   BitGraph g);

}  // namespace

std::vector<std::vector<AttrId>> triangulate(const std::vector<std::int64_t>& shape,
                                             const std::vector<std::vector<AttrId>>& cliques) {
  check_shape(shape);
  return triangulate_graph(shape, graph_of(static_cast<int>(shape.size()), cliques, "clique"));
}

namespace {

// The greedy triangulation, one elimination at a time: next the attribute whose clique (it and
// its remaining neighbours) has the fewest cells, the lowest index among ties. It depends on
// the graph alone (not on which cliques drew it), and a run on the graph plus a few edges
// takes the same steps until it reaches an endpoint of one of them, so a hypothetical tree
// resumes from the base run's state there (hypothetical_sizes_mb).
class Elimination {
 public:
  Elimination(const std::vector<std::int64_t>& shape, BitGraph g)
      : shape_(&shape), g_(std::move(g)), remaining_(std::size_t(g_.words()), 0),
        cost_(shape.size()), alive_(shape.size(), 1) {
    const int d = static_cast<int>(shape.size());
    for (int v = 0; v < d; ++v) remaining_[std::size_t(v >> 6)] |= std::uint64_t{1} << (v & 63);
    for (int v = 0; v < d; ++v) cost_[std::size_t(v)] = cost_of(v);
    leaves_ = 1;
    while (leaves_ < d) leaves_ *= 2;
    // padding leaves: eliminated, index d, so they lose to every attribute
    best_.assign(2 * std::size_t(leaves_), Entry{~std::uint64_t{0}, std::uint64_t{1} << 32 | std::uint32_t(d)});
    for (int v = 0; v < d; ++v) best_[std::size_t(leaves_ + v)] = entry(v);
    for (int p = leaves_ - 1; p >= 1; --p) {
      const Entry& l = best_[std::size_t(2 * p)];
      const Entry& r = best_[std::size_t(2 * p + 1)];
      best_[std::size_t(p)] = r < l ? r : l;
    }
  }
  // Adds the edge a-b (both not yet eliminated) and updates their costs.
  void connect(int a, int b) {
    g_.connect(a, b);
    set_cost(a, cost_of(a));
    set_cost(b, cost_of(b));
  }
  bool connected(int a, int b) const { return g_.connected(a, b); }
  // True when the attributes left and the edges among them are o's: every later step (which
  // reads only those) is then o's too. Edges to eliminated attributes do not matter.
  bool same_future(const Elimination& o) const {
    if (remaining_ != o.remaining_) return false;
    const int W = g_.words();
    for (std::size_t v = 0; v < alive_.size(); ++v) {
      if (!alive_[v]) continue;
      const std::uint64_t* a = g_.row(int(v));
      const std::uint64_t* b = o.g_.row(int(v));
      for (int w = 0; w < W; ++w)
        if ((a[w] ^ b[w]) & remaining_[std::size_t(w)]) return false;
    }
    return true;
  }
  // The attribute left with the cheapest clique, the lowest index among ties (-1 when none
  // is left): the root of a tournament tree over (alive, cost, index), kept up to date as
  // costs change, so a step reads it instead of scanning every attribute (that scan was
  // ~70 % of AIM's JT-size filter at 100 attributes).
  int next() const {
    return best_[1].rest >> 32 ? -1 : int(best_[1].rest & 0xffffffffu);
  }
  // The cells of v's clique (v and its remaining neighbours) as eliminate() would make it.
  double cost(int v) const { return cost_[std::size_t(v)]; }
  // Eliminates v: returns its clique (a bit row), its neighbours become a clique (fill-in).
  std::vector<std::uint64_t> eliminate(int v) {
    std::vector<std::uint64_t> clique(std::size_t(g_.words()), 0);
    eliminate_into(v, clique.data());
    return clique;
  }
  // eliminate(v) writing the clique's bit row into `clique` (words() words); returns the
  // clique's number of attributes.
  int eliminate_into(int v, std::uint64_t* clique) {
    const int W = g_.words();
    nbrs_.clear();
    for_each_bit(g_.row(v), remaining_.data(), W, [&](int u) { nbrs_.push_back(u); });
    std::fill(clique, clique + W, std::uint64_t{0});
    clique[std::size_t(v >> 6)] |= std::uint64_t{1} << (v & 63);
    for (int u : nbrs_) clique[std::size_t(u >> 6)] |= std::uint64_t{1} << (u & 63);
    for (std::size_t i = 0; i < nbrs_.size(); ++i)
      for (std::size_t j = i + 1; j < nbrs_.size(); ++j) g_.connect(nbrs_[i], nbrs_[j]);
    remaining_[std::size_t(v >> 6)] &= ~(std::uint64_t{1} << (v & 63));
    alive_[std::size_t(v)] = 0;
    update(v);
    for (int u : nbrs_) set_cost(u, cost_of(u));
    return static_cast<int>(nbrs_.size()) + 1;
  }

 private:
  // Cells of {v} ∪ its remaining neighbours, as a double so it never overflows (exact below
  // 2**53, where ties matter).
  double cost_of(int v) {
    double cells = static_cast<double>((*shape_)[std::size_t(v)]);
    for_each_bit(g_.row(v), remaining_.data(), g_.words(),
                 [&](int u) { cells *= static_cast<double>((*shape_)[std::size_t(u)]); });
    return cells;
  }
  void set_cost(int v, double c) {
    if (c == cost_[std::size_t(v)]) return;
    cost_[std::size_t(v)] = c;
    update(v);
  }
  // A tournament entry: next()'s preference as one lexicographic key — the cost first (its
  // bit pattern: costs are products of sizes >= 1, never NaN, so positive doubles and +inf
  // order as their bits do; an eliminated attribute has all bits set, after +inf), then the
  // lower index: the scan's rule.
  struct Entry {
    std::uint64_t cost_bits;
    std::uint64_t rest;  // eliminated << 32 | index
    bool operator<(const Entry& o) const {
      return cost_bits != o.cost_bits ? cost_bits < o.cost_bits : rest < o.rest;
    }
    bool operator!=(const Entry& o) const { return cost_bits != o.cost_bits || rest != o.rest; }
  };
  Entry entry(int v) const {
    std::uint64_t bits = ~std::uint64_t{0};
    const double c = cost_[std::size_t(v)];
    if (alive_[std::size_t(v)]) std::memcpy(&bits, &c, sizeof bits);
    return {bits, std::uint64_t(alive_[std::size_t(v)] ? 0 : 1) << 32 | std::uint32_t(v)};
  }
  // v's entry changed: replay its matches up the tree; a node left as it was leaves every
  // node above it as it was.
  void update(int v) {
    std::size_t p = std::size_t(leaves_ + v);
    best_[p] = entry(v);
    for (p /= 2; p >= 1; p /= 2) {
      const Entry& l = best_[2 * p];
      const Entry& r = best_[2 * p + 1];
      const Entry won = r < l ? r : l;
      if (!(won != best_[p])) break;
      best_[p] = won;
    }
  }

  const std::vector<std::int64_t>* shape_;
  BitGraph g_;
  std::vector<std::uint64_t> remaining_;
  std::vector<double> cost_;
  std::vector<char> alive_;
  std::vector<int> nbrs_;
  int leaves_ = 1;
  std::vector<Entry> best_;  // tournament tree: best_[1] the winner, leaves at [leaves_, 2 leaves_)
};

// The maximal cliques of the filled graph, as sorted attribute lists, sorted. Elimination
// clique C_i = {v_i} ∪ N+(v_i) (its neighbours eliminated later) can only lie inside an
// earlier one, and then inside C_j of a j whose first later neighbour is v_i: N+(v_j) is a
// clique holding v_i, so N+(v_j) ⊆ C_i, and C_i is not maximal iff some such N+(v_j) has
// |C_i| members (the perfect-elimination-ordering argument of Blair & Peyton, "An
// introduction to chordal graphs and clique trees", 1993, Sec. 4). O(d W), not O(d^2 W).
// Which elimination cliques (bit rows of `words` words, in elimination `order`) are maximal,
// into `maximal`. `sizes`: each row's attribute count when the caller knows it (else counted
// here); `step`: scratch of d ints (the buffers are the caller's so a batch reuses them).
void maximal_flags_into(const std::vector<const std::uint64_t*>& elim, const std::vector<int>& order,
                        int d, int words, const int* sizes, std::vector<int>& step,
                        std::vector<int>& size, std::vector<char>& maximal) {
  step.resize(std::size_t(d));
  for (std::size_t i = 0; i < order.size(); ++i) step[std::size_t(order[i])] = int(i);
  size.assign(elim.size(), 0);
  if (sizes != nullptr)
    std::copy(sizes, sizes + elim.size(), size.begin());
  else
    for (std::size_t i = 0; i < elim.size(); ++i)
      for (int w = 0; w < words; ++w) size[i] += __builtin_popcountll(elim[i][w]);
  maximal.assign(elim.size(), 1);
  for (std::size_t j = 0; j < elim.size(); ++j) {
    int first = -1;  // the step of v_j's first later neighbour
    for (int w = 0; w < words; ++w) {
      std::uint64_t x = elim[j][w];
      while (x) {
        const int v = int(w * 64) + __builtin_ctzll(x);
        x &= x - 1;
        if (v != order[j] && (first < 0 || step[std::size_t(v)] < first)) first = step[std::size_t(v)];
      }
    }
    if (first >= 0 && size[j] - 1 == size[std::size_t(first)]) maximal[std::size_t(first)] = 0;
  }
}

std::vector<char> maximal_flags(const std::vector<const std::uint64_t*>& elim,
                                const std::vector<int>& order, int d, int words) {
  std::vector<int> step, size;
  std::vector<char> maximal;
  maximal_flags_into(elim, order, d, words, nullptr, step, size, maximal);
  return maximal;
}

std::vector<std::vector<AttrId>> maximal_cliques(const std::vector<std::vector<std::uint64_t>>& elim,
                                                 const std::vector<int>& order, int d) {
  std::vector<const std::uint64_t*> rows;
  for (const auto& r : elim) rows.push_back(r.data());
  const std::vector<char> maximal = maximal_flags(rows, order, d, (d + 63) / 64);
  std::vector<std::vector<AttrId>> out;
  for (std::size_t i = 0; i < elim.size(); ++i) {
    if (!maximal[i]) continue;
    std::vector<AttrId> c;
    for (int v = 0; v < d; ++v)
      if (elim[i][std::size_t(v >> 6)] >> (v & 63) & 1) c.push_back(v);
    out.push_back(std::move(c));
  }
  std::sort(out.begin(), out.end());
  return out;
}

// sum_cells(shape, maximal_cliques(...)) without building the cliques, for bit rows held
// anywhere, with each row's attribute count and cells as the elimination found them (the
// chosen attribute's cost: the same integer as the row's product below 2**53); NaN when the
// total reaches 2**53, where the order of the sum could matter (the caller then takes the
// sorted cliques' sum, as a built tree does).
struct MaximalScratch {
  std::vector<int> step, size;
  std::vector<char> maximal;
};

double maximal_cells(const std::vector<const std::uint64_t*>& elim, const std::vector<int>& order,
                     const std::vector<int>& sizes, const std::vector<double>& cells, int d,
                     MaximalScratch& scratch) {
  maximal_flags_into(elim, order, d, (d + 63) / 64, sizes.data(), scratch.step, scratch.size,
                     scratch.maximal);
  double total = 0.0;
  for (std::size_t i = 0; i < elim.size(); ++i)
    if (scratch.maximal[i]) total += cells[i];
  return total < 9007199254740992.0 ? total : std::numeric_limits<double>::quiet_NaN();
}

std::vector<std::vector<AttrId>> triangulate_graph(const std::vector<std::int64_t>& shape,
                                                   BitGraph g) {
  const int d = static_cast<int>(shape.size());
  Elimination run(shape, std::move(g));
  std::vector<std::vector<std::uint64_t>> elim;
  std::vector<int> order;
  elim.reserve(std::size_t(d));
  for (int step = 0; step < d; ++step) {
    order.push_back(run.next());
    elim.push_back(run.eliminate(order.back()));
  }
  return maximal_cliques(elim, order, d);
}

}  // namespace

JunctionTree::JunctionTree(std::vector<std::int64_t> shape,
                           std::vector<std::vector<AttrId>> cliques)
    : shape_(std::move(shape)) {
  check_shape(shape_);
  if (shape_.empty()) throw InvalidArgument("junction tree needs at least one attribute, got 0");
  const int d = num_attrs();
  input_ = normalized_cliques(cliques, d);
  cliques_ = triangulate(shape_, input_);
  const std::size_t k = cliques_.size();
  member_.assign(k * std::size_t(d), 0);
  clique_cells_.resize(k);
  for (std::size_t c = 0; c < k; ++c) {
    double cells = 1.0;
    for (AttrId a : cliques_[c]) {
      member_[c * std::size_t(d) + std::size_t(a)] = 1;
      cells *= static_cast<double>(shape_[std::size_t(a)]);
    }
    clique_cells_[c] = cells;
  }
  // Kruskal on the complete clique graph, heaviest separators first.
  struct Candidate {
    int card;
    double cells;
    int i, j;
  };
  std::vector<Candidate> cand;
  cand.reserve(k * (k - 1) / 2);
  for (std::size_t i = 0; i < k; ++i)
    for (std::size_t j = i + 1; j < k; ++j) {
      int card = 0;
      double cells = 1.0;
      for (AttrId a : cliques_[i])
        if (member_[j * std::size_t(d) + std::size_t(a)]) {
          ++card;
          cells *= static_cast<double>(shape_[std::size_t(a)]);
        }
      cand.push_back({card, cells, int(i), int(j)});
    }
  std::sort(cand.begin(), cand.end(), [](const Candidate& a, const Candidate& b) {
    if (a.card != b.card) return a.card > b.card;
    if (a.cells != b.cells) return a.cells > b.cells;
    if (a.i != b.i) return a.i < b.i;
    return a.j < b.j;
  });
  std::vector<int> uf(k);
  std::iota(uf.begin(), uf.end(), 0);
  auto find = [&](int x) {
    while (uf[std::size_t(x)] != x) x = uf[std::size_t(x)] = uf[std::size_t(uf[std::size_t(x)])];
    return x;
  };
  std::vector<std::vector<int>> adj(k);
  for (const auto& c : cand) {
    const int a = find(c.i), b = find(c.j);
    if (a == b) continue;
    uf[std::size_t(a)] = b;
    adj[std::size_t(c.i)].push_back(c.j);
    adj[std::size_t(c.j)].push_back(c.i);
  }
  for (auto& nb : adj) std::sort(nb.begin(), nb.end());
  // Root at clique 0; breadth-first order puts parents before children.
  parent_.assign(k, -1);
  separator_.assign(k, {});
  std::vector<char> seen(k, 0);
  order_.push_back(0);
  seen[0] = 1;
  for (std::size_t head = 0; head < order_.size(); ++head) {
    const int p = order_[head];
    for (int c : adj[std::size_t(p)]) {
      if (seen[std::size_t(c)]) continue;
      seen[std::size_t(c)] = 1;
      parent_[std::size_t(c)] = p;
      for (AttrId a : cliques_[std::size_t(c)])
        if (in_clique(p, a)) separator_[std::size_t(c)].push_back(a);
      edges_.emplace_back(p, c);
      order_.push_back(c);
    }
  }
}

std::vector<std::int64_t> JunctionTree::shape_of(const std::vector<AttrId>& attrs) const {
  std::vector<std::int64_t> out;
  out.reserve(attrs.size());
  for (AttrId a : attrs) {
    if (a < 0 || a >= num_attrs())
      throw InvalidArgument("attribute id must be in [0, " + std::to_string(num_attrs()) +
                            "), got " + std::to_string(a));
    out.push_back(shape_[std::size_t(a)]);
  }
  return out;
}

std::uint64_t JunctionTree::size() const {
  std::uint64_t total = 0;
  const std::uint64_t max = std::numeric_limits<std::uint64_t>::max();
  for (const auto& c : cliques_) {
    std::uint64_t cells = 1;
    for (AttrId a : c) {
      const auto s = static_cast<std::uint64_t>(shape_[std::size_t(a)]);
      if (cells > max / s) throw TableTooLarge("junction tree size must fit in 64 bits");
      cells *= s;
    }
    if (total > max - cells) throw TableTooLarge("junction tree size must fit in 64 bits");
    total += cells;
  }
  return total;
}

double JunctionTree::size_mb() const {
  return sum_cells(shape_, cliques_) * kBytesPerCell / kBytesPerMb;
}

double JunctionTree::hypothetical_size_mb(const std::vector<std::vector<AttrId>>& extra) const {
  std::vector<std::vector<AttrId>> all(input_);
  for (const auto& c : extra) {
    check_attr_ids(c, num_attrs(), "extra clique");
    all.push_back(c);
  }
  return sum_cells(shape_, triangulate(shape_, all)) * kBytesPerCell / kBytesPerMb;
}

std::vector<double> JunctionTree::hypothetical_sizes_mb(
    const std::vector<std::vector<std::vector<AttrId>>>& batch) const {
  const int d = num_attrs();
  for (const auto& extra : batch)
    for (const auto& c : extra) check_attr_ids(c, d, "extra clique");
  // The base run, with its state before every step (when that fits in 64 MB; else every
  // hypothetical run starts from scratch) and the step at which each attribute goes.
  Elimination base(shape_, graph_of(d, input_, "clique"));
  // a state: the graph's bit rows, ~24 bytes of costs and flags and <= 64 bytes of
  // tournament tree an attribute
  const double state_bytes = double(d) * double((d + 63) / 64) * 8.0 + double(d) * 88.0;
  const bool resume = double(d) * state_bytes <= 64.0 * 1048576.0;
  std::vector<Elimination> before;
  std::vector<std::vector<std::uint64_t>> elim;
  std::vector<int> order;
  std::vector<int> step_of(std::size_t(d), 0);
  std::vector<int> base_sizes;
  std::vector<double> base_cells;
  if (resume) {
    Elimination run = base;
    before.reserve(std::size_t(d));
    elim.assign(std::size_t(d), std::vector<std::uint64_t>(std::size_t((d + 63) / 64)));
    for (int step = 0; step < d; ++step) {
      before.push_back(run);
      const int v = run.next();
      step_of[std::size_t(v)] = step;
      order.push_back(v);
      base_cells.push_back(run.cost(v));
      base_sizes.push_back(run.eliminate_into(v, elim[std::size_t(step)].data()));
    }
  }
  std::vector<double> out;
  out.reserve(batch.size());
  std::vector<std::pair<int, int>> edges;
  const int W = (d + 63) / 64;
  std::vector<const std::uint64_t*> base_rows, rows;
  for (const auto& r : elim) base_rows.push_back(r.data());
  std::vector<std::uint64_t> own(std::size_t(d) * std::size_t(W));
  std::vector<int> steps, sizes;
  std::vector<double> cells_of;
  MaximalScratch scratch;
  Elimination run = base;  // one state, assigned per candidate (its buffers reused)
  // x-y is an edge of the triangulated graph: of the graph itself, or filled in when a common
  // neighbour went (both still there then)
  auto filled = [&](int x, int y) {
    if (step_of[std::size_t(y)] < step_of[std::size_t(x)]) std::swap(x, y);
    return (elim[std::size_t(step_of[std::size_t(x)])][std::size_t(y >> 6)] >> (y & 63)) & 1;
  };
  for (const auto& extra : batch) {
    edges.clear();
    bool inside = resume;  // every new edge already in the triangulated graph
    for (const auto& c : extra)
      for (std::size_t i = 0; i < c.size(); ++i)
        for (std::size_t j = i + 1; j < c.size(); ++j)
          if (!base.connected(c[i], c[j])) {
            edges.emplace_back(c[i], c[j]);
            inside = inside && filled(c[i], c[j]);
          }
    // The same graph, so the same triangulation: this tree's own size. Likewise when every
    // new edge is a fill edge of the base run (the candidate lies in one of this tree's
    // cliques): a fill edge x-y appears at a step before x or y goes, and until then the run
    // with the edge takes the base run's steps (as below: only x's and y's costs are
    // higher, and no eliminated clique holds them); from that step on, both graphs hold x-y,
    // so they are the same graph and the runs are the same run.
    if (edges.empty() || inside) {
      out.push_back(size_mb());
      continue;
    }
    // Until an endpoint of a new edge is eliminated, the run takes the base run's steps:
    // only the endpoints' costs grow (never below the chosen one's, ties going to the lower
    // index as before), and no eliminated clique holds an endpoint.
    int start = 0;
    if (resume) {
      start = d;
      for (const auto& [a, b] : edges)
        start = std::min({start, step_of[std::size_t(a)], step_of[std::size_t(b)]});
    }
    run = resume ? before[std::size_t(start)] : base;
    for (const auto& [a, b] : edges) run.connect(a, b);
    // the base run's clique rows are shared, not copied; the run's own go in `own`
    rows.assign(base_rows.begin(), base_rows.begin() + start);
    steps.assign(order.begin(), order.begin() + start);
    sizes.assign(base_sizes.begin(), base_sizes.begin() + start);
    cells_of.assign(base_cells.begin(), base_cells.begin() + start);
    for (int step = start; step < d; ++step) {
      const int v = run.next();
      steps.push_back(v);
      cells_of.push_back(run.cost(v));
      std::uint64_t* row = own.data() + std::size_t(step) * std::size_t(W);
      sizes.push_back(run.eliminate_into(v, row));
      rows.push_back(row);
      // Once the remaining graph is the base run's at the same step (the new edges' effect
      // has been eliminated), the rest of the run is the base run's: take its steps.
      if (resume && step + 1 < d && run.same_future(before[std::size_t(step + 1)])) {
        rows.insert(rows.end(), base_rows.begin() + step + 1, base_rows.end());
        steps.insert(steps.end(), order.begin() + step + 1, order.end());
        sizes.insert(sizes.end(), base_sizes.begin() + step + 1, base_sizes.end());
        cells_of.insert(cells_of.end(), base_cells.begin() + step + 1, base_cells.end());
        break;
      }
    }
    double cells = maximal_cells(rows, steps, sizes, cells_of, d, scratch);
    if (std::isnan(cells)) {
      std::vector<std::vector<std::uint64_t>> cliques;
      for (const std::uint64_t* r : rows) cliques.emplace_back(r, r + W);
      cells = sum_cells(shape_, maximal_cliques(cliques, steps, d));
    }
    out.push_back(cells * kBytesPerCell / kBytesPerMb);
  }
  return out;
}

void JunctionTree::throw_bad_clique(int clique) const {
  throw InvalidArgument("clique index must be in [0, " + std::to_string(cliques_.size()) +
                        "), got " + std::to_string(clique));
}

void JunctionTree::throw_bad_attr(AttrId attr) const {
  throw InvalidArgument("attribute id must be in [0, " + std::to_string(num_attrs()) +
                        "), got " + std::to_string(attr));
}

int JunctionTree::containing_clique(const std::vector<AttrId>& attrs) const {
  check_attr_ids(attrs, num_attrs(), "contained attributes");
  int best = -1;
  for (std::size_t c = 0; c < cliques_.size(); ++c) {
    bool all = true;
    for (AttrId a : attrs)
      if (member_[c * shape_.size() + std::size_t(a)] == 0) {
        all = false;
        break;
      }
    if (all && (best < 0 || clique_cells_[c] < clique_cells_[std::size_t(best)])) best = int(c);
  }
  return best;
}

CalibratedTree::CalibratedTree(std::shared_ptr<const JunctionTree> tree,
                               std::vector<Factor> beliefs, double log_partition,
                               std::vector<Factor> separator_marginals)
    : tree_(std::move(tree)),
      beliefs_(std::move(beliefs)),
      log_partition_(log_partition),
      separator_marginals_(std::move(separator_marginals)) {
  if (!tree_) throw InvalidArgument("calibrated tree needs a junction tree, got null");
  if (beliefs_.size() != tree_->cliques().size())
    throw InvalidArgument("calibrated tree needs one belief per clique, got " +
                          std::to_string(beliefs_.size()) + " for " +
                          std::to_string(tree_->cliques().size()) + " cliques");
  for (std::size_t c = 0; c < beliefs_.size(); ++c) {
    std::vector<AttrId> attrs = beliefs_[c].attrs(), clique = tree_->cliques()[c];
    std::sort(attrs.begin(), attrs.end());
    std::sort(clique.begin(), clique.end());
    if (attrs != clique)
      throw InvalidArgument("belief " + std::to_string(c) + " must be over its clique's attributes");
  }
  if (separator_marginals_.empty()) {
    separator_marginals_.resize(beliefs_.size());
    for (int c : tree_->order())
      if (tree_->parent(c) >= 0)
        separator_marginals_[std::size_t(c)] = beliefs_[std::size_t(c)].project(tree_->separator(c));
  }
  if (separator_marginals_.size() != beliefs_.size())
    throw InvalidArgument("calibrated tree needs one separator marginal per clique");
}

namespace {

using AttrSet = std::vector<AttrId>;

bool has(const AttrSet& set, AttrId a) { return std::find(set.begin(), set.end(), a) != set.end(); }

void insert(AttrSet* set, AttrId a) {
  if (!has(*set, a)) set->push_back(a);
}

double cells_of(const AttrSet& set, const std::vector<std::int64_t>& shape) {
  double cells = 1.0;
  for (AttrId a : set) cells *= double(shape[std::size_t(a)]);
  return cells;
}

// One pairwise contraction of a plan: operands x and y (a part's index below the number of
// parts, else part count + the index of an earlier step), summed down to `kept`.
struct Step {
  std::size_t x, y;
  AttrSet kept;
};

// What contract() costs, in ~ns, as measured on AIM's triples (session 20, aim_scaling.md): a
// product in its tiles ~0.1-0.2, a cell of an operand laid out (copied) ~1, a cell of the result
// ~4 (allocated, zeroed, first touched, written). The products are the cells of the union of the
// operands' attributes after each operand's own unkept ones are summed out (at the copy).
constexpr double kProductCost = 0.2, kOperandCost = 1.0, kResultCost = 4.0;

double modelled_cost(double products, double operand_cells, double result_cells) {
  return kProductCost * products + kOperandCost * operand_cells + kResultCost * result_cells;
}

// What planning one clique of a projection costs, in cells read (~4 µs).
constexpr double kPlanCells = 4096.0;

// Below this many cells (a projection's covering cliques times its query's) no choice of the
// root saves what searching for it costs (mushroom's ~1,000 triples a round of 10^5-10^6:
// 2^16 searched them, 0.78 against 0.58 s a round).
constexpr double kSearchCells = double(std::uint64_t{1} << 20);

double step_cost(const AttrSet& x, const AttrSet& y, const AttrSet& kept,
                 const std::vector<std::int64_t>& shape) {
  AttrSet swept;
  for (AttrId a : x)
    if (has(y, a) || has(kept, a)) swept.push_back(a);
  for (AttrId a : y)
    if (!has(x, a) && has(kept, a)) swept.push_back(a);
  return modelled_cost(cells_of(swept, shape), cells_of(x, shape) + cells_of(y, shape),
                       cells_of(kept, shape));
}

// Up to this many parts the cheapest order of pairwise contractions is found exactly (by
// subsets: 3^n splits); beyond it greedily. A query of three attributes brings at most 8 to a
// clique (its belief, 1 / μ, up to two factors from each of three branches).
constexpr std::size_t kExactPlanParts = 10;

// Order for Σ_{not keep} Π parts by pairwise contraction (each result keeps only the
// attributes `keep` or a part outside it needs), of least step_cost in all: which parts to
// join first matters by orders of magnitude (a message joined early carries its attribute
// through every later product). Returns that cost, the steps (children first) in *steps.
double plan_contraction(const std::vector<AttrSet>& parts, const AttrSet& keep,
                        const std::vector<std::int64_t>& shape, std::vector<Step>* steps) {
  const std::size_t n = parts.size();
  if (steps) steps->clear();
  if (n <= 1) return 0.0;
  if (n == 2) {   // one way (most cliques of a projection: a belief and 1 / μ or a message)
    AttrSet kept;
    for (const AttrSet& part : parts)
      for (AttrId a : part)
        if (has(keep, a)) insert(&kept, a);
    const double cost = step_cost(parts[0], parts[1], kept, shape);
    if (steps) steps->push_back(Step{0, 1, std::move(kept)});
    return cost;
  }
  AttrSet local;   // every attribute of the problem
  for (const AttrSet& part : parts)
    for (AttrId a : part) insert(&local, a);
  for (AttrId a : keep) insert(&local, a);
  std::vector<std::int64_t> local_shape;
  for (AttrId a : local) local_shape.push_back(shape[std::size_t(a)]);
  if (n > kExactPlanParts || local.size() > 64) {   // greedy: the cheapest join next
    std::vector<AttrSet> sets = parts;   // each keeps what the others or `keep` need
    std::vector<std::size_t> id(n);
    std::iota(id.begin(), id.end(), std::size_t{0});
    double cost = 0.0;
    while (sets.size() > 1) {
      std::size_t bx = 0, by = 1;
      double best = std::numeric_limits<double>::infinity();
      AttrSet best_kept;
      for (std::size_t x = 0; x < sets.size(); ++x)
        for (std::size_t y = x + 1; y < sets.size(); ++y) {
          AttrSet kept;
          for (std::size_t side : {x, y})
            for (AttrId a : sets[side]) {
              bool needed = has(keep, a);
              for (std::size_t z = 0; z < sets.size() && !needed; ++z)
                needed = z != x && z != y && has(sets[z], a);
              if (needed) insert(&kept, a);
            }
          const double c = step_cost(sets[x], sets[y], kept, shape);
          if (c < best) {
            best = c;
            bx = x;
            by = y;
            best_kept = std::move(kept);
          }
        }
      cost += best;
      if (steps) {
        steps->push_back(Step{id[bx], id[by], best_kept});
        id[bx] = n + steps->size() - 1;
      }
      sets[bx] = std::move(best_kept);
      sets.erase(sets.begin() + std::ptrdiff_t(by));
      id.erase(id.begin() + std::ptrdiff_t(by));
    }
    return cost;
  }
  // Exactly, over subsets of the parts, with the attributes as bits of a word.
  const std::uint32_t full = (std::uint32_t(1) << n) - 1;
  // per-thread scratch: planning runs for every clique of every projection
  thread_local std::vector<std::uint64_t> bit_of_part, union_of, kept;
  thread_local std::vector<double> best, kept_cells;
  thread_local std::vector<std::uint32_t> split;
  bit_of_part.assign(n, 0);
  union_of.assign(full + 1, 0);
  kept.assign(full + 1, 0);
  best.assign(full + 1, 0.0);
  kept_cells.assign(full + 1, 0.0);
  split.assign(full + 1, 0);
  auto bit = [&](AttrId a) {
    return std::uint64_t(1) << (std::find(local.begin(), local.end(), a) - local.begin());
  };
  std::uint64_t keep_bits = 0;
  for (std::size_t i = 0; i < n; ++i)
    for (AttrId a : parts[i]) bit_of_part[i] |= bit(a);
  for (AttrId a : keep) keep_bits |= bit(a);
  auto cells = [&](std::uint64_t bits) {
    double c = 1.0;
    for (; bits != 0; bits &= bits - 1) c *= double(local_shape[std::size_t(__builtin_ctzll(bits))]);
    return c;
  };
  for (std::uint32_t mask = 1; mask <= full; ++mask) {
    const std::size_t first = std::size_t(__builtin_ctz(mask));
    union_of[mask] = union_of[mask & (mask - 1)] | bit_of_part[first];
  }
  for (std::uint32_t mask = 1; mask <= full; ++mask) {
    const bool single = (mask & (mask - 1)) == 0;
    // a part as it is; a contraction keeps what `keep` or a part outside it needs
    kept[mask] = single ? union_of[mask] : union_of[mask] & (keep_bits | union_of[full ^ mask]);
    kept_cells[mask] = cells(kept[mask]);
    if (single) continue;
    best[mask] = std::numeric_limits<double>::infinity();
    const std::uint32_t low = mask & (~mask + 1);   // in the first half: each split once
    for (std::uint32_t sub = (mask - 1) & mask; sub != 0; sub = (sub - 1) & mask) {
      if (!(sub & low)) continue;
      const std::uint32_t rest = mask ^ sub;
      const std::uint64_t x = kept[sub], y = kept[rest], k = kept[mask];
      // step_cost's model on bit sets (the sum kept in this order: ties between plans
      // resolve as they always have)
      const double c = best[sub] + best[rest] + kProductCost * cells((x & y) | ((x | y) & k)) +
                       kOperandCost * (kept_cells[sub] + kept_cells[rest]) +
                       kResultCost * kept_cells[mask];
      if (c < best[mask] || split[mask] == 0) {   // a split even if all overflow to +inf
        best[mask] = c;
        split[mask] = sub;
      }
    }
  }
  if (steps) {
    // children first; returns the operand index of mask's result
    auto emit = [&](auto&& self, std::uint32_t mask) -> std::size_t {
      if ((mask & (mask - 1)) == 0) return std::size_t(__builtin_ctz(mask));
      const std::size_t x = self(self, split[mask]), y = self(self, mask ^ split[mask]);
      AttrSet attrs;
      for (std::uint64_t bits = kept[mask]; bits != 0; bits &= bits - 1)
        attrs.push_back(local[std::size_t(__builtin_ctzll(bits))]);
      steps->push_back(Step{x, y, std::move(attrs)});
      return n + steps->size() - 1;
    };
    emit(emit, full);
  }
  return best[full];
}

// Σ_{not keep} Π parts, contracted in plan_contraction's order; the result is over keep's
// attributes in an order of its own (contract()'s).
Factor contract_all(const std::vector<const Factor*>& parts, const AttrSet& keep,
                    const std::vector<std::int64_t>& shape) {
  std::vector<AttrSet> sets;
  for (const Factor* f : parts) sets.push_back(f->attrs());
  std::vector<Step> steps;
  plan_contraction(sets, keep, shape, &steps);
  const std::size_t n = parts.size();
  std::vector<Factor> done;
  done.reserve(steps.size());
  auto operand = [&](std::size_t i) -> const Factor& { return i < n ? *parts[i] : done[i - n]; };
  for (const Step& st : steps) {
    done.push_back(contract(operand(st.x), operand(st.y), st.kept));
    for (std::size_t i : {st.x, st.y})   // each result is an operand once: free it
      if (i >= n) done[i - n] = Factor();
  }
  return steps.empty() ? parts[0]->project(keep) : std::move(done.back());
}

// The smallest subtree of t covering attrs, as each clique's neighbours in it (empty lists
// for the cliques outside it, and for a lone clique): leaves whose wanted attributes all lie
// in their neighbour are pruned (by the running-intersection property, exactly the leaves
// that are not needed).
std::vector<std::vector<int>> covering_subtree(const JunctionTree& t, const AttrSet& attrs) {
  const std::size_t k = t.cliques().size();
  std::vector<std::vector<int>> nbrs(k);
  for (const auto& e : t.edges()) {
    nbrs[std::size_t(e.first)].push_back(e.second);
    nbrs[std::size_t(e.second)].push_back(e.first);
  }
  std::vector<char> alive(k, 1);
  std::vector<int> degree(k);
  for (std::size_t c = 0; c < k; ++c) degree[c] = int(nbrs[c].size());
  std::size_t left = k;
  for (bool changed = true; changed && left > 1;) {
    changed = false;
    for (std::size_t c = 0; c < k && left > 1; ++c) {
      if (!alive[c] || degree[c] > 1) continue;
      int nb = -1;
      for (int x : nbrs[c])
        if (alive[std::size_t(x)]) nb = x;
      bool needed = false;
      for (AttrId a : t.cliques()[c])
        if (has(attrs, a) && (nb < 0 || !t.in_clique(nb, a))) needed = true;
      if (needed) continue;
      alive[c] = 0;
      --left;
      if (nb >= 0) --degree[std::size_t(nb)];
      changed = true;
    }
  }
  for (std::size_t c = 0; c < k; ++c) {
    if (!alive[c]) nbrs[c].clear();
    nbrs[c].erase(std::remove_if(nbrs[c].begin(), nbrs[c].end(),
                                 [&](int x) { return !alive[std::size_t(x)]; }),
                  nbrs[c].end());
  }
  return nbrs;
}

}  // namespace

Factor CalibratedTree::project(const std::vector<AttrId>& attrs) const {
  const JunctionTree& t = *tree_;
  check_attr_ids(attrs, t.num_attrs(), "projected attributes");
  const int home = t.containing_clique(attrs);
  if (home >= 0) return beliefs_[std::size_t(home)].project(attrs, false);
  const std::size_t k = t.cliques().size();
  std::vector<std::vector<int>> nbrs = covering_subtree(t, attrs);

  // Messages flow to a root: each clique sends the marginal of its separator plus the wanted
  // attributes at or below it, times the inverse separator marginal (the subtree's joint is
  // the root's belief times every other belief over its separator marginal). Wanted
  // attributes away from the root are carried in the messages on their way to it, which
  // multiplies those tables by their sizes, so every clique of the subtree is costed as the
  // root (step_cost of the planned contractions) and the cheapest wins.
  std::vector<int> order;      // from the root, parents first
  std::vector<int> up(k, -1);  // neighbour towards the root
  auto root_at = [&](int root) {
    order.assign(1, root);
    up[std::size_t(root)] = -1;
    for (std::size_t i = 0; i < order.size(); ++i)
      for (int x : nbrs[std::size_t(order[i])])
        if (x != up[std::size_t(order[i])]) {
          up[std::size_t(x)] = order[i];
          order.push_back(x);
        }
  };
  // The separator between c and its neighbour `toward` (stored on whichever is the child).
  auto separator = [&](int c, int toward) -> const AttrSet& {
    return t.parent(c) == toward ? t.separator(c) : t.separator(toward);
  };
  // A message is a list of factors, its product. A factor whose attributes the clique sends
  // up anyway (it came in over a separator inside the clique's outward one, with query
  // attributes carried) passes through untouched: Σ_{c \ keep} β Π f / μ is Π of those times
  // the same sum over the others. Only the others are joined with the clique's belief and
  // 1 / μ; with none, and no query attribute of the clique's own to add, that sum is 1 and
  // the clique adds nothing. (A query attribute in a leaf hung on the income attribute was
  // carried through every clique on its way as a table over each separator: ~10^5 cells for
  // what is 46.)
  struct Plan {
    AttrSet local, keep;                  // the belief reduced to; its own factor's attributes
    std::vector<std::size_t> join, pass;  // incoming factors joined here, passed on
    bool adds = true;                     // whether the clique sends a factor of its own
    bool defer = false;                   // sends its reduced belief and 1 / μ unjoined
  };
  // Clique c sending toward its neighbour `toward` (-1: c is the root).
  auto plan_clique = [&](int c, int toward, const std::vector<AttrSet>& incoming) {
    Plan p;
    const bool top = toward < 0;
    const AttrSet& clique = t.cliques()[std::size_t(c)];
    p.keep = top ? attrs : separator(c, toward);
    AttrSet need = p.keep;
    if (!top) {
      for (AttrId a : attrs) {
        bool here = has(clique, a);
        for (const AttrSet& f : incoming) here = here || has(f, a);
        if (here) insert(&p.keep, a);
      }
    }
    for (std::size_t i = 0; i < incoming.size(); ++i) {
      bool inside = !top;
      for (AttrId a : incoming[i]) inside = inside && has(p.keep, a);
      (inside ? p.pass : p.join).push_back(i);
      if (!inside)
        for (AttrId a : incoming[i]) insert(&need, a);
    }
    for (AttrId a : clique)
      if (has(need, a) || has(attrs, a)) p.local.push_back(a);
    AttrSet own;   // what the clique's own factor is over: the kept attributes the joined have
    for (AttrId a : p.keep) {
      bool in = has(p.local, a);
      for (std::size_t i : p.join) in = in || has(incoming[i], a);
      if (in) own.push_back(a);
    }
    p.keep = std::move(own);
    p.adds = top || !p.join.empty() || p.keep.size() > separator(c, toward).size();
    // Nothing to sum beyond the reduction (a leaf with a query attribute): joining would only
    // scale the belief by 1 / μ, a copy of it; the parent joins the two where it is cheapest.
    p.defer = !top && p.adds && p.join.empty() && p.local.size() == p.keep.size();
    return p;
  };
  // The parts a clique joins: its reduced belief, 1 / μ below the root, the joined factors.
  auto parts_of = [&](int c, int toward, const Plan& p, const std::vector<AttrSet>& incoming) {
    std::vector<AttrSet> parts{p.local};
    if (toward >= 0) parts.push_back(separator(c, toward));
    for (std::size_t i : p.join) parts.push_back(incoming[i]);
    return parts;
  };
  // The plan of every clique's message toward each neighbour, and as the root, each made
  // once: a message depends only on the direction it is sent in, so costing every clique as
  // the root takes 3L - 2 plans for a subtree of L cliques, not L^2 (at 100 columns a pair's
  // subtree has dozens).
  struct Message {
    bool done = false;
    double cost = 0.0;               // of the clique and everything behind it
    std::vector<AttrSet> factors;    // what it sends (at the root: nothing)
  };
  std::vector<std::vector<Message>> memo(k);   // [c][j]: toward nbrs[c][j]; j = degree: root
  for (std::size_t c = 0; c < k; ++c) memo[c].resize(nbrs[c].size() + 1);
  auto message = [&](auto&& self, int c, int toward) -> const Message& {
    const auto& around = nbrs[std::size_t(c)];
    const std::size_t j = toward < 0 ? around.size()
                                     : std::size_t(std::find(around.begin(), around.end(), toward) -
                                                   around.begin());
    Message& m = memo[std::size_t(c)][j];
    if (m.done) return m;
    std::vector<AttrSet> in;
    double cost = 0.0;
    for (int x : around)
      if (x != toward) {
        const Message& from = self(self, x, c);
        cost += from.cost;
        in.insert(in.end(), from.factors.begin(), from.factors.end());
      }
    const Plan p = plan_clique(c, toward, in);
    if (p.adds) {
      if (p.local.size() != t.cliques()[std::size_t(c)].size())
        cost += kOperandCost * double(beliefs_[std::size_t(c)].size());   // its reduction
      if (p.defer) {
        m.factors = parts_of(c, toward, p, in);
      } else {
        cost += plan_contraction(parts_of(c, toward, p, in), p.keep, t.shape(), nullptr);
        m.factors.push_back(p.keep);
      }
    }
    for (std::size_t i : p.pass) m.factors.push_back(in[i]);
    m.cost = cost;
    m.done = true;
    return m;
  };
  // Where the subtree times the query is small, every root costs little (no table can exceed
  // that product), and choosing one would cost more than it saves: the first clique is taken.
  double bound = 1.0;
  for (AttrId a : attrs) bound *= double(t.shape()[std::size_t(a)]);
  double cells = 0.0;
  for (std::size_t c = 0; c < k; ++c)
    if (!nbrs[c].empty()) cells += double(beliefs_[c].size());
  const bool search = cells * bound > kSearchCells;
  int root = -1;
  double best = std::numeric_limits<double>::infinity();
  for (std::size_t r = 0; r < k && (search || root < 0); ++r) {
    if (nbrs[r].empty()) continue;   // outside the subtree (a query across cliques: no lone clique)
    const double cost = search ? message(message, int(r), -1).cost : 0.0;
    if (cost < best) {
      best = cost;
      root = int(r);
    }
  }
  root_at(root);
  using Part = std::shared_ptr<const Factor>;
  std::vector<std::vector<Part>> msg(k);
  for (std::size_t i = order.size(); i-- > 0;) {
    const int c = order[i];
    std::vector<Part> in;
    for (int x : nbrs[std::size_t(c)])
      if (x != up[std::size_t(c)])
        for (Part& f : msg[std::size_t(x)]) in.push_back(std::move(f));
    std::vector<AttrSet> in_sets;
    for (const Part& f : in) in_sets.push_back(f->attrs());
    const int up_c = up[std::size_t(c)];
    const Plan p = plan_clique(c, up_c, in_sets);
    std::vector<Part>& out = msg[std::size_t(c)];
    if (p.adds) {
      const Factor& belief = beliefs_[std::size_t(c)];
      // the belief summed down to what the clique keeps, unless that is all (then unowned)
      Part reduced = p.local.size() == belief.attrs().size()
                         ? Part(&belief, [](const Factor*) {})
                         : std::make_shared<const Factor>(belief.project(p.local));
      std::vector<Part> parts{reduced};
      if (up_c >= 0) {
        // the separator marginal is stored on whichever end is the child in the tree's rooting
        parts.push_back(std::make_shared<const Factor>(
            inverse(separator_marginals_[std::size_t(t.parent(c) == up_c ? c : up_c)])));
      }
      for (std::size_t j : p.join) parts.push_back(std::move(in[j]));
      if (p.defer) {
        out = std::move(parts);
      } else {
        std::vector<const Factor*> raw;
        for (const Part& f : parts) raw.push_back(f.get());
        Factor m = raw.size() == 1 ? reduced->project(p.keep) : contract_all(raw, p.keep, t.shape());
        if (up_c < 0) {
          if (m.attrs() != attrs) m = m.transpose(attrs);
          const double total = m.sum();
          if (total > 0.0) m.multiply_scalar(1.0 / total);
          return m;
        }
        out.push_back(std::make_shared<const Factor>(std::move(m)));
      }
    }
    for (std::size_t j : p.pass) out.push_back(std::move(in[j]));
  }
  throw InvalidArgument("projection subtree has no top clique");  // unreachable: a tree
}

std::vector<Factor> CalibratedTree::project_many(
    const std::vector<std::vector<AttrId>>& attrs_list, bool by_source) const {
  std::vector<Factor> out(attrs_list.size());
  project_queries(attrs_list, by_source, &out, nullptr);
  return out;
}

void CalibratedTree::project_many_into(const std::vector<std::vector<AttrId>>& attrs_list,
                                       bool by_source, double* const* dest) const {
  std::vector<Factor> out(attrs_list.size());
  project_queries(attrs_list, by_source, &out, dest);
}

void CalibratedTree::project_queries(const std::vector<std::vector<AttrId>>& attrs_list,
                                     bool by_source, std::vector<Factor>* answers,
                                     double* const* dest) const {
  for (const auto& attrs : attrs_list)
    check_attr_ids(attrs, tree_->num_attrs(), "projected attributes");
  std::vector<Factor>& out = *answers;
  // Queries are independent and project() only reads the tree: split them over the cores,
  // unless they are all cheap (sums within small cliques), where starting threads would cost
  // more than the work (the estimation loop calls this every iteration).
  std::vector<std::size_t> own, sourced;  // queries for project(), for the source passes
  double work = 0.0;
  for (std::size_t i = 0; i < attrs_list.size(); ++i) {
    const int home = tree_->containing_clique(attrs_list[i]);
    if (by_source && home < 0 && has_source(*tree_, attrs_list[i])) {
      sourced.push_back(i);
      continue;
    }
    own.push_back(i);
    work += home < 0 ? double(kGrainCells) : double(beliefs_[std::size_t(home)].size());
  }
  // The passes pay where many queries share a source in a tree of many small cliques (at 100
  // columns, 6x cheaper than eliminating each query: there every query's planning over its
  // long covering subtree costs more than its arithmetic); where a few large cliques hold the
  // attributes, eliminating each query reads only the cliques that cover it (Adult's pairs
  // and triples: 3x cheaper than the passes). So the batch takes the cheaper by estimated
  // cells: the passes' planned multiply cells against the covering cliques' cells plus a
  // planning cost per query growing with the square of their number (each is tried as the
  // root). Measured on AIM's rounds, the two differ by 3x or more either way. The count
  // stops once elimination is the dearer (at 100 columns, after a few of ~5,000 queries).
  auto cheaper_than_eliminating = [&](double passes) {
    double eliminate = 0.0;
    for (std::size_t i : sourced) {
      if (eliminate >= passes) return true;
      const auto nbrs = covering_subtree(*tree_, attrs_list[i]);
      double n = 0.0;
      for (std::size_t c = 0; c < nbrs.size(); ++c)
        if (!nbrs[c].empty()) {
          eliminate += double(beliefs_[c].size());
          n += 1.0;
        }
      eliminate += kPlanCells * n * n;
    }
    return eliminate >= passes;
  };
  if (!sourced.empty() &&
      !project_by_source(*tree_, beliefs_, separator_marginals_, attrs_list, sourced, &out, true,
                         nullptr, dest, cheaper_than_eliminating)) {
    for (std::size_t i : sourced) {
      own.push_back(i);
      work += double(kGrainCells);
    }
  }
  const std::size_t workers =
      work < 2.0 * double(kGrainCells)
          ? 1
          : std::min<std::size_t>(kernel_threads(), own.size() / 2 + 1);
  strided_for(own.size(), workers, [&](std::size_t j) {
    Factor f = project(attrs_list[own[j]]);
    if (dest == nullptr)
      out[own[j]] = std::move(f);
    else
      std::copy(f.values().begin(), f.values().end(), dest[own[j]]);
  });
}

}  // namespace dpcore
