// Repeated calibration of one junction tree: the inner loop of Private-PGM estimation.
//
// Estimation calibrates the same tree, with log-potentials on the same attribute lists, once
// per iteration, and reads the marginals of the same measured attribute sets each time. A
// Calibrator fixes all of that once: the buffers, and for every (table, sub-table) pair the
// calibration touches an index from each cell of the table to the cell of the sub-table it
// projects onto. A call is then two fused sweeps per clique (one up, one down), allocating
// nothing but bookkeeping and the threads' private partial sums.
//
// The algorithm is two-pass sum-product (Koller & Friedman, ch. 10), log space upward and
// probability space downward. Upward (leaves first), a clique's log-belief b is its
// potentials plus its children's messages; with a shift m(s) per separator cell s, it keeps
// E = exp(b - m(s)) and sends the message m(s) + log Σ_s E. The shift is one number, the sum
// of the maxima of b's terms (potentials and messages), so the belief, E and Σ_s E are one
// sweep. Where that bound leaves a separator cell with a mass under 1e-250, the sweep is redone
// with b's maximum if that can lift every separator cell over it, and otherwise (the cell's
// rows far below the rest, or all -inf) with m(s) the maximum over the cells on s, whose
// largest term is exactly 1, so a message never underflows. Downward (root first), the clique's marginal is
// P = E * M(s) / Σ_s E, where M is the parent's marginal on the separator: the exponentials
// are not recomputed. A cell whose E flushes to 0 (b(x) < m(s) - 708) has, given its
// separator cell, probability below e^-708 / 1e-250 < 1e-57 (e^-708 with per-cell shifts),
// which float64 marginals cannot hold next to their mode.
//
// Every table a sweep reads or writes (cliques, separators, potentials' product forms, the
// queries read from cliques) is laid out in one axis order, by (domain size, id)
// (table_layout): a sub-table's order is then its table's restricted, so the innermost axis,
// the largest, is either the sub-table's innermost too (contiguous runs) or absent from it
// (one cell a run). In the attributes' own order a 3-way potential inside an 8-way clique was
// read one indexed cell at a time (AIM at eps = 10 on Adult: the final fit's 100 iterations
// took 7.5 CPU-s, 3.4 laid out). Potentials and queries are moved between the caller's order
// and their layout once a run; beliefs and separators once a snapshot.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "dpcore/junction_tree.hpp"

namespace dpcore {

/// The cell of a sub-table that each cell of a table projects onto (both row-major over their
/// own attribute orders). When the table's last axes form runs of at least 16 cells that map to
/// one sub-table cell (the sub-table lacks those axes: step 0) or to consecutive ones (they
/// are the sub-table's last axes too: step 1), only each run's first sub-table cell is
/// stored, and kernels sweep runs as contiguous or broadcast vectors; a table that is its own
/// sub-table is one run. A last axis of at least 16 cells that the sub-table holds elsewhere
/// is a run at the sub-table's stride for it (step > 1). When step-1 runs are shorter
/// (`width` cells) but the axes before them are not in the sub-table, blocks of at least 16 cells repeat one stretch of `width`
/// sub-table cells, and only each block's first sub-table cell is stored (kBlocks; scatters
/// reduce a block with a stride instead of updating alternating outputs cell by cell).
/// Otherwise there is an entry a cell, 16-bit when the sub-table has at most 65536 cells.
struct CellIndex {
  enum class Kind { kRuns, kBlocks, kNarrow, kWide };
  Kind kind = Kind::kRuns;
  std::uint64_t cells = 0;      ///< cells of the table
  std::uint64_t sub_cells = 1;  ///< cells of the sub-table
  std::uint64_t run = 1;        ///< kRuns: cells a run; kBlocks: cells a block
  std::uint64_t step = 0;       ///< kRuns: the sub-table's stride along a run
  std::uint64_t width = 1;      ///< kBlocks: consecutive sub-table cells a block repeats
  std::vector<std::uint32_t> bases;  ///< kRuns, kBlocks: the first cell's sub-table cell
  std::vector<std::uint16_t> narrow;
  std::vector<std::uint32_t> wide;
};

/// Builds the index from a table over (attrs, shape) to one over `sub_attrs`, a subset in any
/// order. InvalidArgument when a sub-table attribute is missing or repeated, attrs and shape
/// differ in length, or the sub-table has 2^32 cells or more.
CellIndex make_cell_index(const std::vector<AttrId>& attrs, const std::vector<std::int64_t>& shape,
                          const std::vector<AttrId>& sub_attrs);

/// `attrs` in the order a Calibrator lays out tables over them: by (shape[a], a), the largest
/// last; `shape` is the domain's, by attribute id (InvalidArgument for an id outside it or a
/// repeated one).
std::vector<AttrId> table_layout(const std::vector<AttrId>& attrs,
                                 const std::vector<std::int64_t>& shape);

/// A junction tree compiled for calibration with log-potentials on fixed attribute lists,
/// answering marginal queries on fixed attribute lists. run() may be called from any thread;
/// calls on one Calibrator are serialised.
class Calibrator {
 public:
  /// `potentials` and `queries`: attribute lists (any order, no repeats), each inside one
  /// clique of `tree` (InvalidArgument naming the list otherwise). A potential is summed into
  /// the smallest clique containing it; a query is read from the smallest clique or earlier
  /// query result that contains it.
  Calibrator(std::shared_ptr<const JunctionTree> tree, std::vector<std::vector<AttrId>> potentials,
             std::vector<std::vector<AttrId>> queries);

  ~Calibrator();

  const JunctionTree& tree() const { return *tree_; }
  /// Length of the flat log-potential vector run() reads: the potentials' cells, in order.
  std::uint64_t potential_cells() const { return potential_offset_.back(); }
  /// Length of the flat marginal vector run() writes: the queries' cells, in order.
  std::uint64_t query_cells() const { return query_offset_.back(); }

  /// Calibrates with the concatenated log-potentials (each row-major over its attribute
  /// list, values finite or -inf) and writes the concatenated query marginals, each summing
  /// to 1. Returns log Σ_x exp(Σ_f f(x_f)). InvalidArgument naming the potential when a value
  /// is NaN or +inf, and when the total mass is zero.
  double run(const double* potentials, double* marginals);
  /// The transpose of the query map, for gradients: writes into the flat potential vector
  /// the sum, over queries, of each query's values (a flat vector as run() writes) broadcast
  /// over the first potential whose attributes contain the query's. A gradient in the
  /// marginals becomes one in the log-potentials (the mirror-descent step of Private-PGM).
  /// InvalidArgument when a query lies inside no potential.
  void spread(const double* query_values, double* potential_values);
  /// The clique beliefs and separator marginals of the last run() (InvalidArgument before).
  CalibratedTree calibrated() const&;
  /// The same, moving the tables out of a Calibrator that is done: run() then throws.
  CalibratedTree calibrated() &&;

 private:
  // A term of a clique's log-belief: a potential or a child's message. A term whose
  // attributes lie inside a larger term's is folded into that term's (small) table first, so
  // the clique's sweep reads fewer tables.
  struct Term {
    int source;       // a potential, or -1 - c for the message of child clique c
    CellIndex index;  // clique cell -> term cell
    std::vector<std::pair<int, CellIndex>> folds;  // (source, term cell -> its cell)
    std::vector<double> prob;  // with folds: the product of the sources' product forms
    std::vector<double> sum;   // with folds: the sum of their logarithms (the fallback's)
  };
  // The first `terms` terms of a clique (with the scale) multiplied once per run over the
  // union of their attributes, a table much smaller than the clique: the sweeps then read it
  // with one gather where they read `terms` (the same products in the same order, so E is the
  // same bit for bit). terms == 0: none.
  struct Prefix {
    std::size_t terms = 0;
    CellIndex index;               // clique cell -> union cell
    std::vector<CellIndex> parts;  // union cell -> cell of term j, j < terms
    std::vector<double> table;
  };
  struct Query {
    int source;          // clique index, or tree cliques + query index when from a query
    CellIndex index;     // source cell -> query cell (in `laid`, when it is used)
    CellIndex order;     // query cell -> `laid` cell
    std::vector<double> laid;  // the query in its clique's axis order; empty: in its own
  };
  // A source's log table; a fast child's message is logged on first use.
  const double* log_values(int source, const double* potentials);
  // A source's product form P = exp(t - offset) <= 1, and its offset.
  const double* prob_values(int source) const;
  double prob_offset(int source) const;
  // Product forms of the clique's folded terms; returns the shift, Σ of all offsets.
  double fold_probs(int clique);
  // Every term's log table made (before a sweep reads them), and the folded terms' sums.
  void fold_logs(int clique, const double* potentials);
  // Potentials + child messages into cells [lo, hi) of the clique's log-belief (fallback).
  void log_belief(int clique, const double* potentials, std::uint64_t lo, std::uint64_t hi);
  // E = scale_ * Π of the terms' product forms on cells [lo, hi), into e (at cell lo).
  void product(int clique, double* e, std::uint64_t lo, std::uint64_t hi) const;
  void fill_prefix(int clique);  // the prefix table, for this run's terms and scale_
  void sweep_up(int clique);  // one fused sweep: E into belief_, Σ_s E
  double largest(int clique) const;    // max E
  void upward(int clique, const double* potentials);
  void downward(int clique, double* marginals);
  double* query_output(std::size_t position, double* marginals) const;
  [[noreturn]] void diagnose(const double* potentials, double log_partition) const;
  template <class Self>
  static CalibratedTree snapshot(Self& self);  // copies from a const Self, else moves

  std::shared_ptr<const JunctionTree> tree_;
  std::vector<std::vector<AttrId>> potentials_;
  std::vector<std::uint64_t> potential_offset_;
  std::vector<std::uint64_t> query_offset_;
  std::vector<std::vector<Term>> terms_;      // per clique: the terms read by its sweep
  std::vector<Prefix> prefix_;                // per clique
  std::vector<std::vector<int>> children_;    // per clique
  std::vector<std::vector<AttrId>> layout_;   // per clique: its tables' axis order
  std::vector<std::vector<AttrId>> sep_layout_;  // per clique: its separator tables' order
  std::vector<CellIndex> to_parent_;          // per clique: cell -> separator cell (root: 1 cell)
  std::vector<CellIndex> to_child_;           // per child clique: parent cell -> separator cell
  std::vector<Query> queries_;                // in evaluation order (supersets first)
  std::vector<std::vector<AttrId>> query_attrs_;  // in output order
  struct Spread {
    int query;
    CellIndex index;  // potential cell -> query cell
  };
  std::vector<std::vector<Spread>> spreads_;  // per potential; built by the first spread()
  bool spreads_built_ = false;
  std::vector<int> query_slot_;               // evaluation position -> output position
  std::vector<std::vector<std::size_t>> clique_queries_;  // per clique: positions read from it
  // per clique: E after upward() (on the fallback, the log-belief between its two sweeps);
  // the marginal after downward() where marginal_held_
  std::vector<std::vector<double>> belief_;
  std::vector<std::vector<double>> maximum_;  // per clique: m(s), later the downward ratio
  std::vector<std::vector<double>> mass_;     // per clique: Σ_s E
  std::vector<std::vector<double>> message_;  // per clique: log upward message, if logged_
  std::vector<std::vector<double>> prob_;     // per clique: the message's product form
  std::vector<double> offset_;                // per clique: ... and its offset
  std::vector<char> logged_;                  // per clique: message_ holds this run's logs
  std::vector<double> potential_prob_;        // flat like the potentials: exp(f - max f)
  std::vector<double> potential_max_;         // per potential: max f
  std::vector<std::vector<AttrId>> pot_layout_;  // per potential: its tables' axis order
  std::vector<CellIndex> pot_order_;  // per potential in another order: layout cell -> own cell
  std::vector<double> pot_scratch_;   // one potential's exp in its own order
  std::vector<char> pot_moved_;       // per potential: its layout is not its own order
  std::vector<double> pot_log_;       // flat: the log tables in layout order, for the fallback
  std::vector<char> pot_logged_;      // per potential: pot_log_ holds this run's
  std::vector<double> scale_;                 // per clique: the fast path's scale of E
  std::vector<char> marginal_held_;           // per clique: belief_ holds the marginal, not E
  std::vector<std::vector<double>> sep_marginal_;  // per clique: marginal of its separator
  // downward()'s per-call lists, kept across runs (defined in calibration.cpp)
  struct DownwardLists;
  std::unique_ptr<DownwardLists> down_;
  double log_partition_ = 0.0;
  bool calibrated_ = false;
  bool spent_ = false;  // the tables were moved out by calibrated() &&
  mutable std::mutex mutex_;
};

}  // namespace dpcore
