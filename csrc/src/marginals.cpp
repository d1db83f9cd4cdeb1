// Marginal counting. Layout and schedule, chosen for the AIM workload (hundreds of small
// tables over tens of thousands to millions of records):
//  1. Compaction: the columns some subset uses are copied once, validated, into compact
//     column-major arrays of the narrowest unsigned type holding every code (uint8 for
//     Adult). This reads the caller's array in place whatever its dtype and strides, in row
//     tiles so a C-ordered array's rows stay in cache while each column is read.
//  2. Counting: subsets sharing all but their last attribute form a group; per tile of rows
//     the group's prefix index ((c1 * s2 + c2) * s3 ...) is computed once and shared by
//     every member, which then scatters prefix * s_last + c_last into its table.
//  3. Parallelism: many groups -> groups are dealt to threads (no reduction, results do not
//     depend on the thread count); few groups over many rows -> rows are split and each
//     thread counts into private tables that are summed at the end.
#include "dpcore/marginals.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <exception>
#include <limits>
#include <map>
#include <string>
#include <thread>
#include <type_traits>

#include "dpcore/domain.hpp"
#include "dpcore/errors.hpp"

namespace dpcore {
namespace {

// Rows per tile: a tile's codes and prefix indices (16 KiB) stay in L1/L2 while the
// group's members scatter into their tables.
constexpr std::int64_t kTileRows = 4096;
// Tables of at most this many cells are counted in kLanes interleaved copies (cell * kLanes +
// row % kLanes), summed at the end: consecutive records often hit the same cell of a small
// table, and separate copies break that store-to-load dependency chain.
constexpr std::uint64_t kLaneCells = 1 << 10;
constexpr std::uint32_t kLanes = 4;
// Below this many (row, subset) pairs a second thread costs more than it saves.
constexpr std::uint64_t kSerialWork = std::uint64_t(1) << 20;
constexpr std::int64_t kNoRow = std::numeric_limits<std::int64_t>::max();

std::string column_label(const CountOptions& options, std::int64_t col) {
  const auto index = static_cast<std::size_t>(col);
  if (index < options.column_names.size())
    return "column '" + options.column_names[index] + "' (index " + std::to_string(col) + ")";
  return "column " + std::to_string(col);
}

std::string subset_label(const std::vector<int>& subset) {
  std::string out = "(";
  for (std::size_t i = 0; i < subset.size(); ++i)
    out += (i ? ", " : "") + std::to_string(subset[i]);
  return out + ")";
}

template <class T>
T load(const char* p) {
  T value;
  std::memcpy(&value, p, sizeof(T));  // numpy data need not be aligned
  return value;
}

template <class T>
std::string value_text(T value) {
  if constexpr (std::is_signed_v<T>) return std::to_string(static_cast<long long>(value));
  return std::to_string(static_cast<unsigned long long>(value));
}

int resolve_threads(const CountOptions& options) {
  if (options.threads < 0)
    throw InvalidArgument("threads must be >= 0 (0 = all cores), got " +
                          std::to_string(options.threads));
  if (options.threads > 0) return options.threads;
  return std::max(1u, std::thread::hardware_concurrency());
}

void check_records(const RecordsView& records, const std::vector<std::int64_t>& sizes,
                   const CountOptions& options) {
  if (records.rows < 0 || records.cols < 0)
    throw InvalidArgument("records must have >= 0 rows and columns, got " +
                          std::to_string(records.rows) + " x " + std::to_string(records.cols));
  if (records.data == nullptr && records.rows > 0 && records.cols > 0)
    throw InvalidArgument("records data must not be null for a non-empty matrix");
  if (static_cast<std::int64_t>(sizes.size()) != records.cols)
    throw InvalidArgument("sizes must have one entry per records column (" +
                          std::to_string(records.cols) + "), got " +
                          std::to_string(sizes.size()));
  for (std::size_t c = 0; c < sizes.size(); ++c) {
    if (sizes[c] < 1 || sizes[c] > (std::int64_t(1) << 32))
      throw InvalidArgument("attribute size must be in [1, 2^32], got " +
                            std::to_string(sizes[c]) + " for " +
                            column_label(options, static_cast<std::int64_t>(c)));
  }
}

// The first out-of-range code: lowest row, then lowest column.
struct BadCode {
  std::int64_t row = kNoRow;
  std::int64_t col = -1;
  std::string value;
  std::uint64_t size = 0;

  void keep_first(const BadCode& other) {
    if (other.row < row || (other.row == row && other.col < col)) *this = other;
  }
};

// Validates (and with Store, copies) rows [lo, hi) of the columns `cols` into out, which
// holds one compact column of n_rows codes per entry of cols. Stops at the first tile with
// a bad code, so `bad` is the first bad code in row order.
template <class T, class Code, bool Store>
void compact_rows(const RecordsView& records, const std::vector<int>& cols,
                  const std::vector<std::int64_t>& sizes, std::int64_t lo, std::int64_t hi,
                  Code* out, BadCode& bad) {
  const char* base = static_cast<const char*>(records.data);
  const std::int64_t stride = records.row_stride;
  for (std::int64_t start = lo; start < hi; start += kTileRows) {
    const std::int64_t stop = std::min(start + kTileRows, hi);
    for (std::size_t j = 0; j < cols.size(); ++j) {
      const char* column = base + cols[j] * records.col_stride;
      const auto size = static_cast<std::uint64_t>(sizes[static_cast<std::size_t>(cols[j])]);
      Code* dest = Store ? out + static_cast<std::int64_t>(j) * records.rows : nullptr;
      bool ok = true;
      if (stride == static_cast<std::int64_t>(sizeof(T))) {  // contiguous: vectorises
        for (std::int64_t i = start; i < stop; ++i) {
          const auto v = static_cast<std::uint64_t>(load<T>(column + i * std::int64_t(sizeof(T))));
          ok &= v < size;  // negative codes wrap to >= 2^63, above every size
          if constexpr (Store) dest[i] = static_cast<Code>(v);
        }
      } else {
        for (std::int64_t i = start; i < stop; ++i) {
          const auto v = static_cast<std::uint64_t>(load<T>(column + i * stride));
          ok &= v < size;
          if constexpr (Store) dest[i] = static_cast<Code>(v);
        }
      }
      if (ok) continue;
      for (std::int64_t i = start; i < stop; ++i) {
        const T v = load<T>(column + i * stride);
        if (static_cast<std::uint64_t>(v) >= size) {
          BadCode found{i, cols[j], value_text(v), size};
          bad.keep_first(found);
          break;
        }
      }
    }
    if (bad.row != kNoRow) return;
  }
}

// Runs fn(t) for t in [0, n_threads) on n_threads threads (the caller's thread is one of
// them) and rethrows the first exception after all have joined.
template <class Fn>
void run_parallel(int n_threads, Fn fn) {
  if (n_threads <= 1) {
    fn(0);
    return;
  }
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(n_threads));
  std::vector<std::thread> workers;
  auto guarded = [&](int t) {
    try {
      fn(t);
    } catch (...) {
      errors[static_cast<std::size_t>(t)] = std::current_exception();
    }
  };
  for (int t = 1; t < n_threads; ++t) workers.emplace_back(guarded, t);
  guarded(0);
  for (auto& w : workers) w.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
}

// Validates, and with Store compacts, the columns `cols` using n_threads row ranges.
template <class Code, bool Store>
void compact_columns(const RecordsView& records, const std::vector<int>& cols,
                     const std::vector<std::int64_t>& sizes, int n_threads, Code* out,
                     const CountOptions& options) {
  const std::int64_t n = records.rows;
  std::vector<BadCode> bad(static_cast<std::size_t>(n_threads));
  run_parallel(n_threads, [&](int t) {
    const std::int64_t lo = n * t / n_threads, hi = n * (t + 1) / n_threads;
    BadCode& mine = bad[static_cast<std::size_t>(t)];
    switch (records.type) {
      case CodeType::Int8: compact_rows<std::int8_t, Code, Store>(records, cols, sizes, lo, hi, out, mine); break;
      case CodeType::UInt8: compact_rows<std::uint8_t, Code, Store>(records, cols, sizes, lo, hi, out, mine); break;
      case CodeType::Int16: compact_rows<std::int16_t, Code, Store>(records, cols, sizes, lo, hi, out, mine); break;
      case CodeType::UInt16: compact_rows<std::uint16_t, Code, Store>(records, cols, sizes, lo, hi, out, mine); break;
      case CodeType::Int32: compact_rows<std::int32_t, Code, Store>(records, cols, sizes, lo, hi, out, mine); break;
      case CodeType::UInt32: compact_rows<std::uint32_t, Code, Store>(records, cols, sizes, lo, hi, out, mine); break;
      case CodeType::Int64: compact_rows<std::int64_t, Code, Store>(records, cols, sizes, lo, hi, out, mine); break;
      case CodeType::UInt64: compact_rows<std::uint64_t, Code, Store>(records, cols, sizes, lo, hi, out, mine); break;
    }
  });
  BadCode first;
  for (const auto& b : bad) first.keep_first(b);
  if (first.row != kNoRow)
    throw DomainError("code out of range in " + column_label(options, first.col) + ", row " +
                      std::to_string(first.row) + ": value " + first.value +
                      " not in [0, " + std::to_string(first.size) + ")");
}

int threads_for_rows(std::uint64_t work, int n_threads) {
  return work < kSerialWork ? 1 : n_threads;
}

// Subsets sharing every attribute but the last; members index the batch.
struct Group {
  std::vector<int> prefix_slots;  // compact column of each prefix attribute
  std::vector<std::uint32_t> prefix_sizes;
  std::vector<std::size_t> members;
  std::uint64_t storage = 0;  // members' counters together (cells * lanes)
};

struct Member {
  int last_slot = 0;
  std::uint32_t last_size = 1;
  std::uint64_t cells = 1;
  std::uint32_t lanes = 1;
  bool empty_subset = false;  // the total: not counted by any group
  std::uint64_t storage() const { return cells * lanes; }
};

struct Plan {
  std::vector<int> cols;  // columns used, ascending; slot s holds column cols[s]
  std::vector<Group> groups;
  std::vector<Member> members;  // one per subset of the batch
  std::vector<std::size_t> empty_subsets;
  std::uint64_t total_storage = 0;
};

template <class Code>
void prefix_index(const Group& g, const Code* compact, std::int64_t n_rows, std::int64_t start,
                  std::int64_t count, std::uint32_t* out) {
  const Code* first = compact + g.prefix_slots[0] * n_rows + start;
  for (std::int64_t i = 0; i < count; ++i) out[i] = first[i];
  for (std::size_t j = 1; j < g.prefix_slots.size(); ++j) {
    const Code* c = compact + g.prefix_slots[j] * n_rows + start;
    const std::uint32_t s = g.prefix_sizes[j];
    for (std::int64_t i = 0; i < count; ++i) out[i] = out[i] * s + c[i];
  }
}

// Adds each row of the tile to its cell; row i goes to copy (i % Lanes) of the table. Tiles
// start at multiples of kTileRows, so a row's copy does not depend on how rows are split.
template <std::uint32_t Lanes, bool HasPrefix, class Code, class Count, bool Weighted>
void scatter(const std::uint32_t* prefix, const Code* last, std::uint32_t last_size,
             std::int64_t count, const double* weights, Count* table) {
  for (std::int64_t i = 0; i < count; ++i) {
    std::size_t cell = last[i];
    if constexpr (HasPrefix) cell += std::size_t(prefix[i]) * last_size;
    Count& counter = table[cell * Lanes + std::size_t(i) % Lanes];
    if constexpr (Weighted) counter += weights[i];
    else counter += 1;
  }
}

// Counts rows [lo, hi) of group g into tables[m] for each member m.
template <class Code, class Count, bool Weighted>
void count_group(const Plan& plan, const Group& g, const Code* compact, std::int64_t n_rows,
                 std::int64_t lo, std::int64_t hi, const double* weights, Count* const* tables,
                 std::vector<std::uint32_t>& prefix) {
  prefix.resize(static_cast<std::size_t>(kTileRows));
  const bool has_prefix = !g.prefix_slots.empty();
  for (std::int64_t start = lo; start < hi; start += kTileRows) {
    const std::int64_t count = std::min(kTileRows, hi - start);
    if (has_prefix) prefix_index(g, compact, n_rows, start, count, prefix.data());
    for (std::size_t m : g.members) {
      const Member& mem = plan.members[m];
      const Code* last = compact + mem.last_slot * n_rows + start;
      const double* w = Weighted ? weights + start : nullptr;
      if (mem.lanes == kLanes) {
        if (has_prefix)
          scatter<kLanes, true, Code, Count, Weighted>(prefix.data(), last, mem.last_size, count, w, tables[m]);
        else
          scatter<kLanes, false, Code, Count, Weighted>(nullptr, last, mem.last_size, count, w, tables[m]);
      } else {
        if (has_prefix)
          scatter<1, true, Code, Count, Weighted>(prefix.data(), last, mem.last_size, count, w, tables[m]);
        else
          scatter<1, false, Code, Count, Weighted>(nullptr, last, mem.last_size, count, w, tables[m]);
      }
    }
  }
}

// Deals groups to threads, largest first, each to the least loaded thread (LPT).
std::vector<std::vector<std::size_t>> deal_groups(const Plan& plan, int n_threads) {
  std::vector<std::size_t> order(plan.groups.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  auto cost = [&](std::size_t g) { return plan.groups[g].members.size() + 1; };
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return cost(a) > cost(b); });
  std::vector<std::vector<std::size_t>> dealt(static_cast<std::size_t>(n_threads));
  std::vector<std::size_t> load(static_cast<std::size_t>(n_threads), 0);
  for (std::size_t g : order) {
    const auto t = static_cast<std::size_t>(
        std::min_element(load.begin(), load.end()) - load.begin());
    dealt[t].push_back(g);
    load[t] += cost(g);
  }
  return dealt;
}

// Sums the copies (lanes) of member m's counters, in `parts` storages, into its output.
template <class Count>
void reduce_member(const Member& mem, const std::vector<const Count*>& parts, double* out) {
  for (std::uint64_t c = 0; c < mem.cells; ++c) {
    double sum = 0.0;
    for (const Count* part : parts)
      for (std::uint32_t lane = 0; lane < mem.lanes; ++lane)
        sum += static_cast<double>(part[c * mem.lanes + lane]);
    out[c] = sum;
  }
}

template <class Code, class Count, bool Weighted>
void count_planned(const Plan& plan, const Code* compact, std::int64_t n_rows,
                   const double* weights, const std::vector<double*>& outputs, int n_threads) {
  const std::size_t n_subsets = plan.members.size();
  const std::uint64_t work = std::uint64_t(n_rows) * n_subsets;
  if (work < kSerialWork) n_threads = 1;
  const bool split_rows = n_threads > 1 && plan.groups.size() < std::size_t(2 * n_threads) &&
                          plan.total_storage * std::uint64_t(n_threads) <= kMaxCellsLimit &&
                          plan.total_storage <= std::uint64_t(n_rows);
  if (!split_rows) {
    const int used = std::max(1, std::min(n_threads, static_cast<int>(plan.groups.size())));
    const auto dealt = deal_groups(plan, used);
    run_parallel(used, [&](int t) {
      std::vector<Count> scratch;
      std::vector<Count*> tables(n_subsets, nullptr);
      std::vector<std::uint32_t> prefix;
      for (std::size_t gi : dealt[static_cast<std::size_t>(t)]) {
        const Group& g = plan.groups[gi];
        scratch.assign(static_cast<std::size_t>(g.storage), Count(0));
        std::size_t offset = 0;
        for (std::size_t m : g.members) {
          tables[m] = scratch.data() + offset;
          offset += static_cast<std::size_t>(plan.members[m].storage());
        }
        count_group<Code, Count, Weighted>(plan, g, compact, n_rows, 0, n_rows, weights,
                                           tables.data(), prefix);
        for (std::size_t m : g.members)
          reduce_member<Count>(plan.members[m], {tables[m]}, outputs[m]);
      }
    });
    return;
  }
  // Row split: thread t counts rows [lo_t, hi_t) of every subset into private tables.
  std::vector<std::vector<Count>> partial(static_cast<std::size_t>(n_threads));
  std::vector<std::uint64_t> offset(n_subsets + 1, 0);
  for (std::size_t m = 0; m < n_subsets; ++m)
    offset[m + 1] = offset[m] + plan.members[m].storage();
  run_parallel(n_threads, [&](int t) {
    auto& mine = partial[static_cast<std::size_t>(t)];
    mine.assign(static_cast<std::size_t>(offset[n_subsets]), Count(0));
    std::vector<Count*> tables(n_subsets);
    for (std::size_t m = 0; m < n_subsets; ++m) tables[m] = mine.data() + offset[m];
    // Split on tile boundaries so each row keeps its lane whatever the thread count.
    const std::int64_t tiles = (n_rows + kTileRows - 1) / kTileRows;
    const std::int64_t lo = std::min(n_rows, tiles * t / n_threads * kTileRows);
    const std::int64_t hi = std::min(n_rows, tiles * (t + 1) / n_threads * kTileRows);
    std::vector<std::uint32_t> prefix;
    for (const Group& g : plan.groups)
      count_group<Code, Count, Weighted>(plan, g, compact, n_rows, lo, hi, weights,
                                         tables.data(), prefix);
  });
  for (std::size_t m = 0; m < n_subsets; ++m) {
    if (plan.members[m].empty_subset) continue;  // its total is set by the caller
    std::vector<const Count*> parts;
    for (const auto& p : partial) parts.push_back(p.data() + offset[m]);
    reduce_member<Count>(plan.members[m], parts, outputs[m]);
  }
}

template <class Code>
void count_with_code(const RecordsView& records, const std::vector<std::int64_t>& sizes,
                     const Plan& plan, const WeightsView& weights,
                     const std::vector<double*>& outputs, int n_threads,
                     const CountOptions& options) {
  const std::int64_t n = records.rows;
  std::vector<Code> compact(plan.cols.size() * static_cast<std::size_t>(n));
  const std::uint64_t compact_work = std::uint64_t(n) * plan.cols.size();
  compact_columns<Code, true>(records, plan.cols, sizes, threads_for_rows(compact_work, n_threads),
                              compact.data(), options);
  if (weights.data != nullptr)
    count_planned<Code, double, true>(plan, compact.data(), n, weights.data, outputs, n_threads);
  else if (n < std::int64_t(std::numeric_limits<std::uint32_t>::max()))
    count_planned<Code, std::uint32_t, false>(plan, compact.data(), n, nullptr, outputs, n_threads);
  else
    count_planned<Code, std::uint64_t, false>(plan, compact.data(), n, nullptr, outputs, n_threads);
}

Plan make_plan(const std::vector<std::int64_t>& sizes, const std::vector<std::vector<int>>& subsets,
               const CountOptions& options) {
  Plan plan;
  plan.members.resize(subsets.size());
  std::vector<int> slot(sizes.size(), -1);
  for (const auto& subset : subsets)
    for (int a : subset)
      if (a >= 0 && std::size_t(a) < sizes.size()) slot[std::size_t(a)] = 0;
  for (std::size_t c = 0; c < sizes.size(); ++c) {
    if (slot[c] < 0) continue;
    slot[c] = static_cast<int>(plan.cols.size());
    plan.cols.push_back(static_cast<int>(c));
  }
  (void)batch_cells(sizes, subsets, options.max_cells);
  std::map<std::vector<int>, std::size_t> group_of;
  for (std::size_t k = 0; k < subsets.size(); ++k) {
    const auto& subset = subsets[k];
    Member& mem = plan.members[k];
    mem.cells = table_cells(sizes, subset);
    if (subset.empty()) {
      mem.empty_subset = true;
      plan.empty_subsets.push_back(k);
      continue;
    }
    mem.last_slot = slot[std::size_t(subset.back())];
    mem.last_size = static_cast<std::uint32_t>(sizes[std::size_t(subset.back())]);
    mem.lanes = mem.cells <= kLaneCells ? kLanes : 1;
    plan.total_storage += mem.storage();
    std::vector<int> prefix(subset.begin(), subset.end() - 1);
    auto [it, added] = group_of.emplace(prefix, plan.groups.size());
    if (added) {
      Group g;
      for (int a : prefix) {
        g.prefix_slots.push_back(slot[std::size_t(a)]);
        g.prefix_sizes.push_back(static_cast<std::uint32_t>(sizes[std::size_t(a)]));
      }
      plan.groups.push_back(std::move(g));
    }
    plan.groups[it->second].members.push_back(k);
    plan.groups[it->second].storage += mem.storage();
  }
  return plan;
}

}  // namespace

std::uint64_t table_cells(const std::vector<std::int64_t>& sizes, const std::vector<int>& subset) {
  std::uint64_t cells = 1;
  bool overflow = false;
  for (std::size_t i = 0; i < subset.size(); ++i) {
    const int a = subset[i];
    if (a < 0 || std::size_t(a) >= sizes.size())
      throw InvalidArgument("attribute index must be in [0, " + std::to_string(sizes.size()) +
                            "), got " + std::to_string(a) + " in subset " + subset_label(subset));
    for (std::size_t j = 0; j < i; ++j)
      if (subset[j] == a)
        throw InvalidArgument("a subset must not repeat an attribute, got " +
                              std::to_string(a) + " twice in subset " + subset_label(subset));
    if (sizes[std::size_t(a)] < 1)
      throw InvalidArgument("attribute size must be >= 1, got " +
                            std::to_string(sizes[std::size_t(a)]) + " for column " +
                            std::to_string(a));
    overflow |= __builtin_mul_overflow(cells, static_cast<std::uint64_t>(sizes[std::size_t(a)]),
                                       &cells);
  }
  if (overflow)
    throw TableTooLarge("the marginal table on subset " + subset_label(subset) +
                        " has more than 2^64 cells");
  return cells;
}

std::uint64_t batch_cells(const std::vector<std::int64_t>& sizes,
                          const std::vector<std::vector<int>>& subsets, std::uint64_t max_cells) {
  if (max_cells == 0) max_cells = max_table_cells();
  max_cells = std::min(max_cells, kMaxCellsLimit);  // cell indices are 32-bit
  std::uint64_t total = 0;
  for (const auto& subset : subsets) {
    const std::uint64_t cells = table_cells(sizes, subset);
    if (__builtin_add_overflow(total, cells, &total) || total > max_cells)
      throw TableTooLarge("the batch's marginal tables need more than " +
                          std::to_string(max_cells) +
                          " cells (the memory cap, 8 bytes a cell); subset " +
                          subset_label(subset) + " alone has " + std::to_string(cells));
  }
  return total;
}

void validate_codes(const RecordsView& records, const std::vector<std::int64_t>& sizes,
                    const CountOptions& options) {
  check_records(records, sizes, options);
  std::vector<int> cols(static_cast<std::size_t>(records.cols));
  for (std::size_t c = 0; c < cols.size(); ++c) cols[c] = static_cast<int>(c);
  const std::uint64_t work = std::uint64_t(records.rows) * cols.size();
  compact_columns<std::uint32_t, false>(records, cols, sizes,
                                        threads_for_rows(work, resolve_threads(options)), nullptr,
                                        options);
}

void count_marginals_into(const RecordsView& records, const std::vector<std::int64_t>& sizes,
                          const std::vector<std::vector<int>>& subsets,
                          const std::vector<double*>& outputs, const WeightsView& weights,
                          const CountOptions& options) {
  check_records(records, sizes, options);
  const int n_threads = resolve_threads(options);
  if (outputs.size() != subsets.size())
    throw InvalidArgument("outputs must have one table per subset (" +
                          std::to_string(subsets.size()) + "), got " +
                          std::to_string(outputs.size()));
  for (std::size_t k = 0; k < outputs.size(); ++k)
    if (outputs[k] == nullptr)
      throw InvalidArgument("output table " + std::to_string(k) + " must not be null");
  if (weights.data != nullptr) {
    if (weights.size != records.rows)
      throw InvalidArgument("weights must have one entry per record (" +
                            std::to_string(records.rows) + "), got " +
                            std::to_string(weights.size));
    for (std::int64_t i = 0; i < weights.size; ++i)
      if (!std::isfinite(weights.data[i]))
        throw InvalidArgument("weights must be finite, got " + std::to_string(weights.data[i]) +
                              " at row " + std::to_string(i));
  }
  const Plan plan = make_plan(sizes, subsets, options);

  double total = static_cast<double>(records.rows);
  if (weights.data != nullptr) {
    total = 0.0;
    for (std::int64_t i = 0; i < weights.size; ++i) total += weights.data[i];
  }
  for (std::size_t k : plan.empty_subsets) outputs[k][0] = total;
  if (plan.groups.empty()) return;

  std::int64_t largest = 1;
  for (int c : plan.cols) largest = std::max(largest, sizes[std::size_t(c)]);
  if (largest <= (1 << 8))
    count_with_code<std::uint8_t>(records, sizes, plan, weights, outputs, n_threads, options);
  else if (largest <= (1 << 16))
    count_with_code<std::uint16_t>(records, sizes, plan, weights, outputs, n_threads, options);
  else
    count_with_code<std::uint32_t>(records, sizes, plan, weights, outputs, n_threads, options);
}

std::vector<std::vector<double>> count_marginals(const RecordsView& records,
                                                 const std::vector<std::int64_t>& sizes,
                                                 const std::vector<std::vector<int>>& subsets,
                                                 const WeightsView& weights,
                                                 const CountOptions& options) {
  check_records(records, sizes, options);
  (void)batch_cells(sizes, subsets, options.max_cells);  // before allocating anything
  std::vector<std::vector<double>> tables(subsets.size());
  std::vector<double*> outputs(subsets.size());
  for (std::size_t k = 0; k < subsets.size(); ++k) {
    tables[k].resize(static_cast<std::size_t>(table_cells(sizes, subsets[k])));
    outputs[k] = tables[k].data();
  }
  count_marginals_into(records, sizes, subsets, outputs, weights, options);
  return tables;
}

}  // namespace dpcore
