// Splitting a loop over the cores (private to the kernels; not an installed header).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <thread>
#include <utility>
#include <vector>

namespace dpcore {

/// Cells of table work below which a slice does not pay for waking a worker (~20 µs).
constexpr std::uint64_t kGrainCells = std::uint64_t{1} << 15;

/// At most this many threads: the tables fit in cache shares beyond that.
constexpr unsigned kMaxKernelThreads = 4;

/// Threads worth using: the cores, at most kMaxKernelThreads. Read once: glibc answers
/// hardware_concurrency() by parsing /sys files, a few syscalls that cost more than a small
/// kernel call itself.
inline unsigned kernel_threads() {
  static const unsigned threads =
      std::max(1u, std::min(kMaxKernelThreads, std::thread::hardware_concurrency()));
  return threads;
}

/// How many slices to cut n cells of table work into: one per kernel thread, but none smaller
/// than kGrainCells.
inline unsigned chunk_count(std::uint64_t n) {
  return unsigned(
      std::max<std::uint64_t>(1, std::min<std::uint64_t>(kernel_threads(), n / kGrainCells)));
}

/// Slices a sweep of n cells of table work into outputs of at most out_cells cells (the
/// largest): one per thread (chunk_count) when every output is small next to the table, since
/// the other threads' private copies are merged at the end, else one. Where a slice starts
/// decides the order of a sweep's additions: a kernel that must add as a sweep does asks this
/// rather than restating the rule.
inline unsigned sweep_parts(std::uint64_t n, std::uint64_t out_cells) {
  return out_cells * 4 <= n ? chunk_count(n) : 1;
}

/// Runs call(context, p) for every p < parts: part 0 on the calling thread, the others on the
/// kernels' worker threads (all on the caller when the workers are busy with another thread's
/// job). call must not throw.
void run_parts(unsigned parts, void (*call)(void*, unsigned), void* context);

/// Calls fn(part, begin, end) on `parts` contiguous slices of [0, n), part 0 on the calling
/// thread and the others on worker threads. fn must not throw.
template <class F>
void parallel_chunks(std::uint64_t n, unsigned parts, F&& fn) {
  auto slice = [&](unsigned p) {
    fn(p, n * p / parts, n * (p + 1) / parts);
  };
  if (parts <= 1) {
    slice(0);
    return;
  }
  run_parts(parts, [](void* context, unsigned p) { (*static_cast<decltype(slice)*>(context))(p); },
            &slice);
}

/// Calls fn(i) for every i < count on `workers` threads, worker w taking i = w, w + workers,
/// ... (worker 0 on the calling thread; fresh threads, so fn may throw): the first
/// exception of the lowest worker that threw is rethrown once all have stopped.
template <class F>
void strided_for(std::size_t count, std::size_t workers, F&& fn) {
  workers = std::max<std::size_t>(1, workers);
  std::vector<std::exception_ptr> errors(workers);
  auto run = [&](std::size_t w) {
    try {
      for (std::size_t i = w; i < count; i += workers) fn(i);
    } catch (...) {
      errors[w] = std::current_exception();
    }
  };
  std::vector<std::thread> threads;
  for (std::size_t w = 1; w < workers; ++w) threads.emplace_back(run, w);
  run(0);
  for (auto& th : threads) th.join();
  for (const auto& e : errors)
    if (e) std::rethrow_exception(e);
}

/// A sub-table that a sweep reduces cells into: filled with `fill`, then combined by sum (or
/// max when take_max).
struct ScatterTarget {
  double* out;
  std::uint64_t cells;
  double fill;
  bool take_max;
};

/// Cells a sweep hands its function at a time: every pass a sweep fuses over a piece then
/// finds the piece in L1/L2, where one pass a table would stream it from L3 each time.
constexpr std::uint64_t kSweepCells = 4096;

/// Private output cells a thread keeps allocated between sweeps (8 MB).
constexpr std::uint64_t kKeptCells = std::uint64_t{1} << 20;

/// Sweeps n cells of a table into the targets: fn(part, outs, begin, end) on pieces of at most
/// kSweepCells cells, in order within each thread's slice, with outs[t] the output for
/// targets[t]. The calling thread writes the real outputs; every other thread writes private
/// copies, merged at the end. So slices are cut only when every output is small next to the
/// table, as separators are next to cliques. fn must not call parallel_sweep (the private
/// copies may live in a buffer of the calling thread).
/// The targets are `targets[0..k)`: a calibration sweeps every clique a few times per
/// iteration, so neither they nor the per-part output table are allocated here when small
/// (a malloc and free a sweep were a visible share of small-clique fits).
template <class F>
void parallel_sweep(std::uint64_t n, const ScatterTarget* targets, std::size_t k, F&& fn) {
  std::uint64_t largest = 0;
  for (std::size_t t = 0; t < k; ++t) largest = std::max(largest, targets[t].cells);
  const unsigned parts = sweep_parts(n, largest);
  // The other threads' outputs: up to kKeptCells in a buffer of the calling thread kept
  // across calls (a fresh allocation of separator size each sweep cost page faults, 5% of a
  // large tree's calibration), beyond that in one of their own. Allocated here, not in the
  // threads, where an exception would end the process.
  static thread_local std::vector<double> kept;
  std::vector<double> own;
  std::uint64_t cells = 0;
  for (std::size_t t = 0; t < k; ++t) cells += targets[t].cells;
  const std::uint64_t need = (parts - 1) * cells;
  std::vector<double>& partial = need <= kKeptCells ? kept : own;
  if (partial.size() < need) partial.resize(need);
  constexpr std::size_t kFewOutputs = 32;
  double* few[kFewOutputs];
  std::vector<double*> many(parts * k <= kFewOutputs ? 0 : parts * k);
  double** outs = parts * k <= kFewOutputs ? few : many.data();
  double* next = partial.data();
  for (std::size_t p = 0; p < parts; ++p)
    for (std::size_t t = 0; t < k; ++t) {
      double* out = p == 0 ? targets[t].out : std::exchange(next, next + targets[t].cells);
      std::fill(out, out + targets[t].cells, targets[t].fill);
      outs[p * k + t] = out;
    }
  parallel_chunks(n, parts, [&](unsigned part, std::uint64_t b, std::uint64_t e) {
    for (std::uint64_t lo = b; lo < e; lo += kSweepCells)
      fn(part, outs + part * k, lo, std::min(e, lo + kSweepCells));
  });
  for (std::size_t p = 1; p < parts; ++p)
    for (std::size_t t = 0; t < k; ++t) {
      double* out = targets[t].out;
      const double* other = outs[p * k + t];
      for (std::uint64_t c = 0; c < targets[t].cells; ++c)
        out[c] = targets[t].take_max ? std::max(out[c], other[c]) : out[c] + other[c];
    }
}

template <class F>
void parallel_sweep(std::uint64_t n, const std::vector<ScatterTarget>& targets, F&& fn) {
  parallel_sweep(n, targets.data(), targets.size(), std::forward<F>(fn));
}

/// A sweep into one target, with fn as parallel_sweep's.
template <class F>
void parallel_sweep(std::uint64_t n, const ScatterTarget& target, F&& fn) {
  parallel_sweep(n, &target, 1, std::forward<F>(fn));
}

/// A sweep into one target: fn(out, begin, end).
template <class F>
void parallel_scatter(std::uint64_t n, double* out, std::uint64_t out_cells, double fill,
                      bool take_max, F&& fn) {
  const ScatterTarget target{out, out_cells, fill, take_max};
  parallel_sweep(n, &target, 1,
                 [&](unsigned, double* const* outs, std::uint64_t b, std::uint64_t e) {
                   fn(outs[0], b, e);
                 });
}

}  // namespace dpcore
