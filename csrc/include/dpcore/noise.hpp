// Exact discrete Gaussian noise: Canonne, Kamath & Steinke, "The Discrete Gaussian for
// Differential Privacy" (NeurIPS 2020), Algorithms 1-3, in integer arithmetic only (no
// floating point touches a probability), so the output distribution is exactly N_Z(0, s^2)
// for s^2 = num/den, up to the overflow guards documented below.
//
// The Python reference with the same algorithm is dpcore.accounting.noise.discrete_gaussian;
// tests/statistical/test_noise_core.py compares the two. Privacy (CKS20 Thm. 4): adding
// N_Z(0, s^2) to an integer query of L2 sensitivity D is D^2 / (2 s^2)-zCDP.
#pragma once

#include <cstdint>
#include <vector>

namespace dpcore {

/// Writes `count` i.i.d. draws of the discrete Gaussian N_Z(0, num/den) (Pr[x] proportional
/// to exp(-x^2 den / (2 num)) on the integers) into `out`, from a std::mt19937_64 stream
/// seeded with `seed` (the same seed gives the same draws on every platform).
///
/// Exactness: every Bernoulli is decided by comparing uniform integers. Arithmetic is on
/// 128-bit integers (256-bit for one square), with two guards whose trigger probability is
/// below exp(-2^60): a discrete-Laplace proposal with |y| >= 2^62 is redrawn, and a
/// Bernoulli(exp(-g)) with g >= 2^128 returns 0 (its probability is < exp(-2^128)).
///
/// Throws InvalidArgument when num or den is 0, count < 0, or the parameters exceed the
/// exact range: 2 * num * den * t^2 must be < 2^128 with t = floor(sqrt(num / den)) + 1
/// (num/den is first reduced to lowest terms).
void discrete_gaussian(std::uint64_t num, std::uint64_t den, std::int64_t count,
                       std::uint64_t seed, std::int64_t* out);

/// As above, into a new vector.
std::vector<std::int64_t> discrete_gaussian(std::uint64_t num, std::uint64_t den,
                                            std::int64_t count, std::uint64_t seed);

}  // namespace dpcore
