// Drawing synthetic records from a calibrated junction tree.
//
// Cliques are visited in the tree's breadth-first order. The root's attributes are drawn
// jointly from its belief; each later clique's new attributes (those not in the separator
// with its parent) are drawn, for each group of rows that share the already-drawn separator
// values, from the clique's belief conditioned on those values. This is Algorithm 8 of
// McKenna, Miklau & Sheldon, "Winning the NIST contest" (papers/nist-mst.txt) applied a
// clique at a time. Two ways to draw a group of m rows from a distribution p:
//  - SampleMethod::kRound, Algorithm 7: floor(m p) rows of each value, the remaining rows
//    drawn without replacement with probability proportional to the fractional parts
//    (Efraimidis-Spirakis keys), then the group is shuffled;
//  - SampleMethod::kSample: m independent draws from p (ancestral sampling).
// Random numbers come from std::mt19937_64, whose output sequence the standard fixes, turned
// into uniforms and bounded integers by our own code (not std distributions, whose algorithms
// differ between standard libraries), so a seed gives the same records everywhere.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "dpcore/junction_tree.hpp"

namespace dpcore {

/// How each group of rows is drawn.
enum class SampleMethod { kRound, kSample };

/// A seeded generator with platform-independent uniforms.
class Rng {
 public:
  explicit Rng(std::uint64_t seed) : engine_(seed) {}
  /// Uniform on [0, 1) with 53 random bits.
  double uniform() { return static_cast<double>(engine_() >> 11) * 0x1.0p-53; }
  /// Uniform integer in [0, bound), bound >= 1, without modulo bias.
  std::uint64_t below(std::uint64_t bound);
  std::uint64_t next() { return engine_(); }

 private:
  std::mt19937_64 engine_;
};

/// Validates weights for round_group / sample_group: k >= 1, every p_i finite and >= 0, and
/// a positive finite total. InvalidArgument naming the first offending index otherwise.
void check_probabilities(const double* p, std::size_t k);

/// Algorithm 7 for one group: `m` values in [0, k) whose counts are floor(m p_i) plus the
/// remainders drawn without replacement proportional to the fractional parts, shuffled.
/// `p` need not be normalised (it is scaled to sum 1). InvalidArgument when m < 0 or `p`
/// fails check_probabilities().
void round_group(const double* p, std::size_t k, std::int64_t m, Rng& rng, std::int64_t* out);

/// `m` independent draws from p (unnormalised). InvalidArgument as round_group().
void sample_group(const double* p, std::size_t k, std::int64_t m, Rng& rng, std::int64_t* out);

/// Cells of an n x width array of drawn codes, checked before it is allocated:
/// InvalidArgument when n < 0 or width < 0, TableTooLarge over max_table_cells().
std::uint64_t record_cells(std::int64_t n, std::int64_t width);

/// n records as one column of codes per attribute (domain order): what sample_records()
/// writes row-major, for callers that store codes in their own layout or width.
/// InvalidArgument as sample_records(), and for an attribute of more than 2^31 - 1 values.
std::vector<std::vector<std::int32_t>> sample_columns(const CalibratedTree& model,
                                                      std::int64_t n, SampleMethod method,
                                                      std::uint64_t seed);

/// Memory sample_columns() reuses from one call to the next: drawing many blocks of rows with
/// one workspace sizes its n-long working arrays and columns once, instead of allocating them
/// (and having the kernel zero fresh pages for them) for every block.
struct SampleWorkspace {
  std::vector<std::int32_t> small[4];    // row numbers, cells, keys (int32 where they fit)
  std::vector<std::int64_t> large[4];    // the same, for tables past 2^31 - 1 cells or rows
  std::vector<std::int64_t> group_start;
  std::vector<std::vector<std::int32_t>> column;
};

/// sample_columns() into `workspace` (its columns: valid until its next use). The draws are
/// those of sample_columns(model, n, method, seed).
const std::vector<std::vector<std::int32_t>>& sample_columns(const CalibratedTree& model,
                                                             std::int64_t n, SampleMethod method,
                                                             std::uint64_t seed,
                                                             SampleWorkspace& workspace);

/// sample_columns()' codes laid out row-major (n x columns.size()) into `out`, as T (a type
/// that holds every code: the caller checks).
template <typename T>
void columns_to_rows(const std::vector<std::vector<std::int32_t>>& columns, std::size_t n,
                     T* out) {
  const std::size_t d = columns.size();
  for (std::size_t a = 0; a < d; ++a) {
    const std::int32_t* codes = columns[a].data();
    for (std::size_t r = 0; r < n; ++r) out[r * d + a] = static_cast<T>(codes[r]);
  }
}

/// Writes n records (row-major n x num_attrs, codes in domain order) into `out`.
/// InvalidArgument when n < 0, TableTooLarge when record_cells(n, num_attrs) is over the cap.
void sample_records(const CalibratedTree& model, std::int64_t n, SampleMethod method,
                    std::uint64_t seed, std::int64_t* out);

/// sample_records() into a new vector of n * num_attrs codes.
std::vector<std::int64_t> sample_records(const CalibratedTree& model, std::int64_t n,
                                         SampleMethod method, std::uint64_t seed);

}  // namespace dpcore
