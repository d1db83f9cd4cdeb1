// Splitting a loop over the cores (private to the kernels; not an installed header).
#pragma once

#include <algorithm>
#include <cstdint>
#include <thread>
#include <vector>

namespace dpcore {

/// Cells of table work below which a thread does not pay for its start (tens of microseconds).
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

/// Calls fn(part, begin, end) on `parts` contiguous slices of [0, n), part 0 on the calling
/// thread and the others on threads of their own. fn must not throw.
template <class F>
void parallel_chunks(std::uint64_t n, unsigned parts, F&& fn) {
  auto slice = [&](unsigned p) {
    fn(p, n * p / parts, n * (p + 1) / parts);
  };
  if (parts <= 1) {
    slice(0);
    return;
  }
  std::vector<std::thread> threads;
  threads.reserve(parts - 1);
  for (unsigned p = 1; p < parts; ++p) threads.emplace_back(slice, p);
  slice(0);
  for (auto& t : threads) t.join();
}

/// Sweeps n cells of a table into out[0..out_cells), first filled with `fill`: fn(out, begin,
/// end) on slices of [0, n). Each thread but the caller gets a private copy of the output, and
/// the copies are merged by sum (or max) at the end; so slices are cut only when the output is
/// small next to the table, as separators are next to cliques.
template <class F>
void parallel_scatter(std::uint64_t n, double* out, std::uint64_t out_cells, double fill,
                      bool take_max, F&& fn) {
  const unsigned parts = out_cells * 4 <= n ? chunk_count(n) : 1;
  std::vector<std::vector<double>> partial(parts - 1, std::vector<double>(out_cells, fill));
  std::fill(out, out + out_cells, fill);
  parallel_chunks(n, parts, [&](unsigned part, std::uint64_t b, std::uint64_t e) {
    fn(part == 0 ? out : partial[part - 1].data(), b, e);
  });
  for (const auto& other : partial)
    for (std::uint64_t c = 0; c < out_cells; ++c)
      out[c] = take_max ? std::max(out[c], other[c]) : out[c] + other[c];
}

}  // namespace dpcore
