// Splitting a loop over the cores (private to the kernels; not an installed header).
#pragma once

#include <algorithm>
#include <cstdint>
#include <thread>
#include <vector>

namespace dpcore {

/// Cells of table work below which a thread does not pay for its start (tens of microseconds).
constexpr std::uint64_t kGrainCells = std::uint64_t{1} << 15;

/// Threads worth using: the cores, at most 4 (the tables fit in cache shares beyond that).
/// Read once: glibc answers hardware_concurrency() by parsing /sys files, a few syscalls that
/// cost more than a small kernel call itself.
inline unsigned kernel_threads() {
  static const unsigned threads =
      std::max(1u, std::min(4u, std::thread::hardware_concurrency()));
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

}  // namespace dpcore
