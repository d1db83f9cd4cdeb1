// Exact discrete Gaussian noise: Canonne, Kamath & Steinke, "The Discrete Gaussian for
// Differential Privacy" (NeurIPS 2020), Algorithms 1-3, in integer arithmetic only (no
// floating point touches a probability), so the output distribution is exactly N_Z(0, s^2)
// for s^2 = num/den, up to the overflow guards documented below. The random bits come from
// ChaCha20 (RFC 8439), a cryptographically secure stream keyed by 256 bits.
//
// The Python reference with the same algorithm is dpcore.accounting.noise.discrete_gaussian;
// tests/statistical/test_noise_core.py compares the two. Privacy (CKS20 Thm. 4): adding
// N_Z(0, s^2) to an integer query of L2 sensitivity D is D^2 / (2 s^2)-zCDP.
//
// Timing (how far "constant time" goes): every sample is drawn by rejection sampling, so the
// time a call takes varies with the random draws (the number of proposals and of Bernoulli
// trials), and with s^2 (the proposal scale t = floor(s) + 1 and the width of the integers
// compared). It does not depend on the data the noise is added to: the sampler never sees the
// data, and the caller adds the noise afterwards. Because the number of rejections is itself a
// random variable independent of the query answer, timing reveals at most something about the
// noise draws; a caller who must hide even that should sample noise in advance (a fixed-size
// batch) and release after a fixed delay. Individual operations are not branch-free: the
// comparisons in the Bernoulli trials branch on secret random bits.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

namespace dpcore {

/// A 256-bit ChaCha20 key as four little-endian 64-bit words (word 0 holds key bytes 0-7).
using NoiseKey = std::array<std::uint64_t, 4>;

/// The ChaCha20 block function of RFC 8439 Sec. 2.3: the 16 output words (the serialized
/// keystream block is these words in little-endian order) for a 256-bit key given as eight
/// little-endian 32-bit words, a 32-bit block counter and a 96-bit nonce.
std::array<std::uint32_t, 16> chacha20_block(const std::array<std::uint32_t, 8>& key,
                                             std::uint32_t counter,
                                             const std::array<std::uint32_t, 3>& nonce);

/// Writes `count` i.i.d. draws of the discrete Gaussian N_Z(0, num/den) (Pr[x] proportional
/// to exp(-x^2 den / (2 num)) on the integers) into `out`. The bits are the ChaCha20
/// keystream for `key`, with the 64-bit `nonce` in nonce words 1-2 and a 64-bit block counter
/// (counter word and nonce word 0); the same key and nonce give the same draws everywhere.
/// Never reuse a (key, nonce) pair for two releases.
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
                       const NoiseKey& key, std::uint64_t nonce, std::int64_t* out);

/// As above, into a new vector.
std::vector<std::int64_t> discrete_gaussian(std::uint64_t num, std::uint64_t den,
                                            std::int64_t count, const NoiseKey& key,
                                            std::uint64_t nonce = 0);

}  // namespace dpcore
