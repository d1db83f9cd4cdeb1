// Branch-free vector math shared by the kernels (private; not an installed header).
#pragma once

#include <cstdint>
#include <cstring>

namespace dpcore {

// The exponentials dominate calibration, so this loop must vectorise: FP compares in it are
// selects only if trapping math is off (nothing here reads the FP exception flags), and on
// x86-64 GCC also emits AVX2 and AVX-512 clones chosen at load time.
#if defined(__GNUC__) && !defined(__clang__)
#if defined(__x86_64__) && !defined(__SANITIZE_ADDRESS__)
#define DPCORE_VECTOR_KERNEL \
  __attribute__((optimize("no-trapping-math"),                                      \
                 target_clones("default", "avx2", "avx512f")))
#else
#define DPCORE_VECTOR_KERNEL __attribute__((optimize("no-trapping-math")))
#endif
#else
#define DPCORE_VECTOR_KERNEL
#endif

// Largest of p[0..n) (NaN ignored), or `init` if larger; eight lanes for the vectoriser.
DPCORE_VECTOR_KERNEL static inline double max_of(const double* __restrict p, std::uint64_t n,
                                                 double init) {
  double lanes[8] = {init, init, init, init, init, init, init, init};
  std::uint64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int j = 0; j < 8; ++j) lanes[j] = p[i + j] > lanes[j] ? p[i + j] : lanes[j];
  double m = init;
  for (; i < n; ++i) m = p[i] > m ? p[i] : m;
  for (int j = 0; j < 8; ++j) m = lanes[j] > m ? lanes[j] : m;
  return m;
}

// Branch-free exp: x = k ln2 + r with |r| <= ln2 / 2 (Cody-Waite split of ln2), exp(r) by its
// degree-13 Taylor polynomial (truncation < 1e-17 relative), times 2^k written into the
// exponent bits; k comes from the bits of x log2(e) + 1.5 * 2^52, which rounds to integer.
// Below -708 the result flushes to 0; NaN and +inf pass through.
__attribute__((always_inline)) inline double exp_one(double in) {
  const double log2e = 1.4426950408889634;
  const double ln2_hi = 6.93147180369123816490e-01;
  const double ln2_lo = 1.90821492927058770002e-10;
  const double shifter = 6755399441055744.0;
  const std::uint64_t shifter_bits = 0x4338000000000000ULL;  // bits of 1.5 * 2^52
  double v = in < -708.0 ? -708.0 : in;
  v = v > 709.0 ? 709.0 : v;
  const double kd_shifted = v * log2e + shifter;
  std::uint64_t k_bits;
  std::memcpy(&k_bits, &kd_shifted, sizeof k_bits);
  const double kd = kd_shifted - shifter;
  const double r = (v - kd * ln2_hi) - kd * ln2_lo;
  double p = 1.0 / 6227020800.0;
  p = p * r + 1.0 / 479001600.0;
  p = p * r + 1.0 / 39916800.0;
  p = p * r + 1.0 / 3628800.0;
  p = p * r + 1.0 / 362880.0;
  p = p * r + 1.0 / 40320.0;
  p = p * r + 1.0 / 5040.0;
  p = p * r + 1.0 / 720.0;
  p = p * r + 1.0 / 120.0;
  p = p * r + 1.0 / 24.0;
  p = p * r + 1.0 / 6.0;
  p = p * r + 0.5;
  p = p * r + 1.0;
  p = p * r + 1.0;
  const std::uint64_t scale_bits = (k_bits - shifter_bits + 1023) << 52;
  double scale;
  std::memcpy(&scale, &scale_bits, sizeof scale);
  const double out = in < -708.0 ? 0.0 : p * scale;
  return in > 709.0 || !(in >= -708.0 || in < -708.0) ? in + in : out;
}

}  // namespace dpcore
