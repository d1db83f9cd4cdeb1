#include "dpcore/junction_tree.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
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

// out[keep] = Σ over the other attributes of Π parts, swept over the union of the parts'
// attributes with one odometer, so the product over the union is never stored. The two
// largest axes are innermost and swept as a block: the odometer's bookkeeping is paid once
// per block, not per cell, whatever the order of the parts' own axes.
void contract(const std::vector<const Factor*>& parts, Factor* out) {
  std::vector<AttrId> u;
  std::vector<std::int64_t> us;
  for (const Factor* f : parts)
    for (std::size_t i = 0; i < f->attrs().size(); ++i)
      if (std::find(u.begin(), u.end(), f->attrs()[i]) == u.end()) {
        u.push_back(f->attrs()[i]);
        us.push_back(f->shape()[i]);
      }
  std::fill(out->values().begin(), out->values().end(), 0.0);
  const std::size_t k = parts.size();
  if (u.empty()) {
    double v = 1.0;
    for (const Factor* f : parts) v *= f->data()[0];
    out->data()[0] = v;
    return;
  }
  // Axes by extent, largest last (stable: ties keep the parts' order).
  std::vector<std::size_t> perm(u.size());
  std::iota(perm.begin(), perm.end(), std::size_t{0});
  std::stable_sort(perm.begin(), perm.end(),
                   [&](std::size_t a, std::size_t b) { return us[a] < us[b]; });
  std::vector<AttrId> axes;
  std::vector<std::int64_t> extent;
  for (std::size_t i : perm) {
    axes.push_back(u[i]);
    extent.push_back(us[i]);
  }
  if (axes.size() == 1) {  // a second, unit axis so the block is always two-dimensional
    axes.insert(axes.begin(), -1);
    extent.insert(extent.begin(), 1);
  }
  const std::size_t r = axes.size();
  // Each part, and the output, laid out so that the sweep's innermost axis has stride 0 or 1
  // (a copy of its own cells in the sweep's axis order, against the union's cells swept). In a part's
  // own (domain) order an inner axis of the sweep can have a stride of ~10^5 cells, a cache
  // and TLB miss per cell (a triple across AIM's hub clique swept ~2e9 cells that way, ~85 %
  // of a late round's selection). The products and the order of the additions are the
  // sweep's, unchanged, so the values are the same bit for bit.
  std::vector<Factor> moved;
  moved.reserve(k + 1);  // no reallocation: `laid` points into it
  // Only a table whose innermost sweep axis is not already its own last (read with a stride
  // > 1 a cell) is copied; copying every table out of the sweep's order as well measured
  // slower (the copies cost more than the misses they saved).
  auto sweep_order = [&](const Factor& f) {
    std::vector<AttrId> order;
    if (std::find(f.attrs().begin(), f.attrs().end(), axes[r - 1]) == f.attrs().end() ||
        f.attrs().back() == axes[r - 1])
      return order;  // empty: as it is
    for (AttrId a : axes)
      if (std::find(f.attrs().begin(), f.attrs().end(), a) != f.attrs().end()) order.push_back(a);
    return order;  // empty: as it is
  };
  std::vector<const Factor*> laid(k);
  for (std::size_t j = 0; j < k; ++j) {
    const std::vector<AttrId> order = sweep_order(*parts[j]);
    laid[j] = parts[j];
    if (order.empty()) continue;
    moved.push_back(parts[j]->transpose(order));
    laid[j] = &moved.back();
  }
  Factor* const result = out;
  if (const std::vector<AttrId> order = sweep_order(*out); !order.empty()) {
    moved.emplace_back(order, out->shape_of(order), 0.0);  // added into `result` below
    out = &moved.back();
  }
  // strides[j][axis]: stride of union axis `axis` in part j (j = k: the output).
  std::vector<std::vector<std::int64_t>> strides(k + 1, std::vector<std::int64_t>(r, 0));
  auto fill = [&](const Factor& f, std::vector<std::int64_t>& st) {
    std::int64_t step = 1;
    for (std::size_t i = f.attrs().size(); i-- > 0;) {
      st[std::size_t(std::find(axes.begin(), axes.end(), f.attrs()[i]) - axes.begin())] = step;
      step *= f.shape()[i];
    }
  };
  for (std::size_t j = 0; j < k; ++j) fill(*laid[j], strides[j]);
  fill(*out, strides[k]);
  const std::int64_t n0 = extent[r - 1], n1 = extent[r - 2];
  std::vector<std::int64_t> idx(r, 0), off(k + 1, 0);
  double* dst = out->data();
  std::vector<double> row(static_cast<std::size_t>(n0));
  double* rw = row.data();
  // Two parts (contract_all's only call) with every inner stride 0 or 1 (the parts laid out
  // above): the product and the sum in one loop, without the row buffer. The same products
  // (p0 * p1, as rw = p0; rw *= p1 forms them) added in the same order: the same bits.
  const bool fused = k == 2 && strides[0][r - 1] <= 1 && strides[1][r - 1] <= 1 &&
                     strides[2][r - 1] <= 1;
  for (;;) {
    if (fused) {
      const std::int64_t s0 = strides[0][r - 1], s1 = strides[1][r - 1];
      for (std::int64_t i1 = 0; i1 < n1; ++i1) {
        const double* p0 = laid[0]->data() + off[0] + i1 * strides[0][r - 2];
        const double* p1 = laid[1]->data() + off[1] + i1 * strides[1][r - 2];
        double* d = dst + off[2] + i1 * strides[2][r - 2];
        if (strides[2][r - 1] == 0) {
          double acc = 0.0;
          if (s0 == 0) {
            const double v = *p0;
            for (std::int64_t t = 0; t < n0; ++t) acc += v * p1[t * s1];
          } else if (s1 == 0) {
            const double v = *p1;
            for (std::int64_t t = 0; t < n0; ++t) acc += p0[t] * v;
          } else {
            for (std::int64_t t = 0; t < n0; ++t) acc += p0[t] * p1[t];
          }
          *d += acc;
        } else if (s0 == 0) {
          const double v = *p0;
          if (s1 == 0) {
            const double w = v * *p1;
            for (std::int64_t t = 0; t < n0; ++t) d[t] += w;
          } else {
            for (std::int64_t t = 0; t < n0; ++t) d[t] += v * p1[t];
          }
        } else if (s1 == 0) {
          const double v = *p1;
          for (std::int64_t t = 0; t < n0; ++t) d[t] += p0[t] * v;
        } else {
          for (std::int64_t t = 0; t < n0; ++t) d[t] += p0[t] * p1[t];
        }
      }
    }
    for (std::int64_t i1 = 0; i1 < n1 && !fused; ++i1) {
      {
        const std::int64_t s = strides[0][r - 1];
        const double* p = laid[0]->data() + off[0] + i1 * strides[0][r - 2];
        if (s == 1) {
          for (std::int64_t t = 0; t < n0; ++t) rw[t] = p[t];
        } else {
          for (std::int64_t t = 0; t < n0; ++t) rw[t] = p[t * s];
        }
      }
      for (std::size_t j = 1; j < k; ++j) {
        const std::int64_t s = strides[j][r - 1];
        const double* p = laid[j]->data() + off[j] + i1 * strides[j][r - 2];
        if (s == 0) {
          const double v = *p;
          for (std::int64_t t = 0; t < n0; ++t) rw[t] *= v;
        } else if (s == 1) {
          for (std::int64_t t = 0; t < n0; ++t) rw[t] *= p[t];
        } else {
          for (std::int64_t t = 0; t < n0; ++t) rw[t] *= p[t * s];
        }
      }
      const std::int64_t so = strides[k][r - 1];
      double* d = dst + off[k] + i1 * strides[k][r - 2];
      if (so == 0) {
        double acc = 0.0;
        for (std::int64_t t = 0; t < n0; ++t) acc += rw[t];
        *d += acc;
      } else {
        for (std::int64_t t = 0; t < n0; ++t) d[t * so] += rw[t];
      }
    }
    std::size_t a = r - 2;
    for (;;) {
      if (a == 0) {
        if (out != result)   // result is zeros: the sums land unchanged (0 + x = x)
          broadcast_add(result->data(), out->data(),
                        make_stride_map(result->attrs(), result->shape(), out->attrs(), out->shape()));
        return;
      }
      --a;
      for (std::size_t j = 0; j <= k; ++j) off[j] += strides[j][a];
      if (++idx[a] < extent[a]) break;
      for (std::size_t j = 0; j <= k; ++j) off[j] -= strides[j][a] * extent[a];
      idx[a] = 0;
    }
  }
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

// One pairwise contraction: parts x and y (x < y) are replaced, at x, by their product summed
// down to `kept`.
struct Step {
  std::size_t x, y;
  AttrSet kept;
};

// Greedy order for Σ_{not keep} Π parts by pairwise contraction: next, the pair that minimises
// the cells swept (their union) plus the cells of the result, which keeps only the attributes
// that `keep` or another part still needs. Sweeping all parts at once would visit every cell
// of the union of all their attributes, the clique times every attribute carried through it:
// orders of magnitude more. Returns the cells swept in all (the final sum-out included).
double plan_contraction(std::vector<AttrSet> parts, const AttrSet& keep,
                        const std::vector<std::int64_t>& shape, std::vector<Step>* steps) {
  double cost = 0.0;
  auto kept_of = [&](std::size_t x, std::size_t y) {
    AttrSet kept;
    for (std::size_t side : {x, y})
      for (AttrId a : parts[side]) {
        bool needed = has(keep, a);
        for (std::size_t j = 0; j < parts.size() && !needed; ++j)
          needed = j != x && j != y && has(parts[j], a);
        if (needed) insert(&kept, a);
      }
    return kept;
  };
  while (parts.size() > 1) {
    Step best{0, 1, {}};
    double best_cost = std::numeric_limits<double>::infinity();
    for (std::size_t x = 0; x < parts.size(); ++x)
      for (std::size_t y = x + 1; y < parts.size(); ++y) {
        AttrSet both = parts[x];
        for (AttrId a : parts[y]) insert(&both, a);
        AttrSet kept = kept_of(x, y);
        const double c = cells_of(both, shape) + cells_of(kept, shape);
        if (c < best_cost) {
          best_cost = c;
          best = Step{x, y, std::move(kept)};
        }
      }
    cost += best_cost;
    parts[best.x] = best.kept;
    parts.erase(parts.begin() + std::ptrdiff_t(best.y));
    if (steps) steps->push_back(std::move(best));
  }
  return cost + cells_of(parts[0], shape);
}

// Σ_{not keep} Π parts, contracted in plan_contraction's order; the result is over `keep`.
Factor contract_all(std::vector<const Factor*> parts, const AttrSet& keep,
                    const std::vector<std::int64_t>& shape) {
  std::vector<AttrSet> sets;
  for (const Factor* f : parts) sets.push_back(f->attrs());
  std::vector<Step> steps;
  plan_contraction(sets, keep, shape, &steps);
  std::vector<Factor> owned;
  owned.reserve(steps.size());  // no reallocation: parts point into it
  for (const Step& st : steps) {
    std::vector<std::int64_t> kept_shape;
    for (AttrId a : st.kept) kept_shape.push_back(shape[std::size_t(a)]);
    owned.emplace_back(st.kept, kept_shape, 0.0);
    contract({parts[st.x], parts[st.y]}, &owned.back());
    parts[st.x] = &owned.back();
    parts.erase(parts.begin() + std::ptrdiff_t(st.y));
  }
  return parts[0]->project(keep);
}

}  // namespace

Factor CalibratedTree::project(const std::vector<AttrId>& attrs) const {
  const JunctionTree& t = *tree_;
  check_attr_ids(attrs, t.num_attrs(), "projected attributes");
  const int home = t.containing_clique(attrs);
  if (home >= 0) return beliefs_[std::size_t(home)].project(attrs, false);
  // Smallest subtree covering attrs: prune leaves whose wanted attributes all lie in their
  // neighbour (by the running-intersection property, exactly the leaves that are not needed).
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
  for (auto& list : nbrs)
    list.erase(std::remove_if(list.begin(), list.end(),
                              [&](int x) { return !alive[std::size_t(x)]; }),
               list.end());

  // Messages flow to a root: each clique sends the marginal of its separator plus the wanted
  // attributes at or below it, times the inverse separator marginal (the subtree's joint is
  // the root's belief times every other belief over its separator marginal). Wanted
  // attributes away from the root are carried in every message on their way to it, which
  // multiplies those tables by their sizes, so every alive clique is costed as the root
  // (cells swept by the planned contractions) and the cheapest wins.
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
  auto separator = [&](int c) -> const AttrSet& {
    return t.parent(c) == up[std::size_t(c)] ? t.separator(c) : t.separator(up[std::size_t(c)]);
  };
  // For clique c, given its children's message attributes: the attributes its reduced belief
  // keeps and the attributes of what it sends up (the query itself at the root).
  auto plan_clique = [&](int c, const std::vector<AttrSet>& kids, AttrSet* local,
                         AttrSet* keep) {
    const bool top = up[std::size_t(c)] < 0;
    AttrSet need = top ? AttrSet() : separator(c);
    for (const AttrSet& m : kids)
      for (AttrId a : m) insert(&need, a);
    local->clear();
    for (AttrId a : t.cliques()[std::size_t(c)])
      if (has(need, a) || has(attrs, a)) local->push_back(a);
    if (top) {
      *keep = attrs;
      return;
    }
    *keep = separator(c);
    for (AttrId a : attrs)
      if (has(*local, a) || has(need, a)) insert(keep, a);
  };
  auto kid_sets = [&](int c, const std::vector<AttrSet>& sent) {
    std::vector<AttrSet> kids;
    for (int x : nbrs[std::size_t(c)])
      if (x != up[std::size_t(c)]) kids.push_back(sent[std::size_t(x)]);
    return kids;
  };
  std::vector<AttrSet> sent(k);
  int root = -1;
  double best = std::numeric_limits<double>::infinity();
  for (std::size_t r = 0; r < k; ++r) {
    if (!alive[r]) continue;
    root_at(int(r));
    double cost = 0.0;
    for (std::size_t i = order.size(); i-- > 0;) {
      const int c = order[i];
      std::vector<AttrSet> parts = kid_sets(c, sent);
      AttrSet local;
      plan_clique(c, parts, &local, &sent[std::size_t(c)]);
      parts.insert(parts.begin(), local);
      cost += double(beliefs_[std::size_t(c)].size()) +
              plan_contraction(std::move(parts), sent[std::size_t(c)], t.shape(), nullptr);
    }
    if (cost < best) {
      best = cost;
      root = int(r);
    }
  }
  root_at(root);
  std::vector<Factor> msg(k);
  for (std::size_t i = order.size(); i-- > 0;) {
    const int c = order[i];
    std::vector<const Factor*> parts;
    std::vector<AttrSet> kids;
    for (int x : nbrs[std::size_t(c)])
      if (x != up[std::size_t(c)]) {
        parts.push_back(&msg[std::size_t(x)]);
        kids.push_back(msg[std::size_t(x)].attrs());
      }
    AttrSet local, keep;
    plan_clique(c, kids, &local, &keep);
    const Factor& belief = beliefs_[std::size_t(c)];
    Factor summed;   // the belief summed down to what the clique keeps, unless that is all
    const Factor* reduced = &belief;
    if (local.size() != belief.attrs().size()) reduced = &(summed = belief.project(local));
    parts.insert(parts.begin(), reduced);
    Factor m = parts.size() == 1 ? reduced->project(keep) : contract_all(parts, keep, t.shape());
    for (int x : nbrs[std::size_t(c)])
      if (x != up[std::size_t(c)]) msg[std::size_t(x)] = Factor();
    const int p = up[std::size_t(c)];
    if (p < 0) {
      const double total = m.sum();
      if (total > 0.0) m.multiply_scalar(1.0 / total);
      return m;
    }
    // The separator marginal is stored on whichever end is the child in the tree's rooting.
    Factor inv = separator_marginals_[std::size_t(t.parent(c) == p ? c : p)];
    // A separator cell below DBL_MIN (a subnormal) would invert to +inf and turn 0 * inf into
    // NaN; such a cell carries under 1e-308 of the mass, so it is dropped like an empty one.
    for (double& v : inv.values()) v = v >= std::numeric_limits<double>::min() ? 1.0 / v : 0.0;
    m.multiply_inplace(inv);
    msg[std::size_t(c)] = std::move(m);
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
  if (!sourced.empty())
    project_by_source(*tree_, beliefs_, separator_marginals_, attrs_list, sourced, &out, true,
                      nullptr, dest);
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
