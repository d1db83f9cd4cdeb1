// Exact discrete Gaussian sampling (CKS20 Algorithms 1-3; see noise.hpp). Rationals are
// carried as integer pairs; Bernoulli(p/q) is "a uniform integer below q is below p". The
// uniform bits are the ChaCha20 keystream (RFC 8439).
#include "dpcore/noise.hpp"

#include <string>

#include "dpcore/errors.hpp"

namespace dpcore {
namespace {

__extension__ typedef unsigned __int128 u128;
constexpr u128 kU128Max = ~u128(0);
constexpr std::uint64_t kMaxLaplace = std::uint64_t(1) << 62;

std::uint32_t rotl(std::uint32_t x, int n) { return (x << n) | (x >> (32 - n)); }

void quarter_round(std::uint32_t* s, int a, int b, int c, int d) {  // RFC 8439 Sec. 2.1
  s[a] += s[b]; s[d] ^= s[a]; s[d] = rotl(s[d], 16);
  s[c] += s[d]; s[b] ^= s[c]; s[b] = rotl(s[b], 12);
  s[a] += s[b]; s[d] ^= s[a]; s[d] = rotl(s[d], 8);
  s[c] += s[d]; s[b] ^= s[c]; s[b] = rotl(s[b], 7);
}

// Uniform bits from the ChaCha20 keystream of (key, nonce), consumed exactly: 64-bit words
// (two keystream words, little-endian), oldest unused bits first.
class RandomBits {
 public:
  RandomBits(const NoiseKey& key, std::uint64_t nonce) {
    for (int i = 0; i < 4; ++i) {
      key_[2 * i] = static_cast<std::uint32_t>(key[i]);
      key_[2 * i + 1] = static_cast<std::uint32_t>(key[i] >> 32);
    }
    nonce_[1] = static_cast<std::uint32_t>(nonce);
    nonce_[2] = static_cast<std::uint32_t>(nonce >> 32);
  }

  std::uint64_t bits(int k) {  // k in [1, 64]; the oldest unused bits come first
    u128 buffer = word_;
    if (avail_ < k) {
      buffer |= u128(next_word()) << avail_;
      avail_ += 64;
    }
    const u128 mask = (u128(1) << k) - 1;
    const auto result = static_cast<std::uint64_t>(buffer & mask);
    word_ = static_cast<std::uint64_t>(buffer >> k);
    avail_ -= k;  // < 64 now, so word_ holds every unused bit
    return result;
  }

  // Uniform integer in [0, n), n >= 1, by rejection on bit_length(n - 1) bits.
  u128 below(u128 n) {
    if (n <= 1) return 0;
    const u128 m = n - 1;
    int width = 0;
    for (u128 x = m; x != 0; x >>= 1) ++width;
    while (true) {
      u128 x;
      if (width <= 64) {
        x = bits(width);
      } else {
        x = u128(bits(64));
        x |= u128(bits(width - 64)) << 64;
      }
      if (x < n) return x;
    }
  }

 private:
  std::uint64_t next_word() {
    if (used_ == 8) {
      // 64-bit block counter: the RFC's counter word, then nonce word 0 (2^64 blocks never run out).
      block_ = chacha20_block(key_, static_cast<std::uint32_t>(counter_),
                              {static_cast<std::uint32_t>(counter_ >> 32), nonce_[1], nonce_[2]});
      ++counter_;
      used_ = 0;
    }
    const std::uint64_t w = std::uint64_t(block_[2 * used_]) | (std::uint64_t(block_[2 * used_ + 1]) << 32);
    ++used_;
    return w;
  }

  std::array<std::uint32_t, 8> key_{};
  std::array<std::uint32_t, 3> nonce_{};
  std::array<std::uint32_t, 16> block_{};
  std::uint64_t counter_ = 0;
  int used_ = 8;
  std::uint64_t word_ = 0;
  int avail_ = 0;
};

bool bernoulli(u128 p, u128 q, RandomBits& src) { return src.below(q) < p; }

// Bernoulli(exp(-rem/q)) for 0 <= rem <= q (CKS20 Alg. 1): K = index of the first failure of
// Bernoulli(gamma / k), k = 1, 2, ...; Pr[K odd] = exp(-gamma). Bernoulli(gamma / k) is drawn
// as Bernoulli(rem / q) AND Bernoulli(1 / k), which keeps every number below 2^128.
bool bernoulli_exp_fraction(u128 rem, u128 q, RandomBits& src) {
  std::uint64_t k = 1;
  while (bernoulli(rem, q, src) && bernoulli(1, k, src)) ++k;
  return k % 2 == 1;
}

// Bernoulli(exp(-(whole + rem/q))) = Bernoulli(exp(-1))^whole * Bernoulli(exp(-rem/q)).
// whole == kU128Max stands for "at least 2^128 - 1": the answer is 0 except with
// probability < exp(-2^128), and returning 0 is the documented guard.
bool bernoulli_exp(u128 whole, u128 rem, u128 q, RandomBits& src) {
  if (whole == kU128Max) return false;
  for (u128 i = 0; i < whole; ++i)
    if (!bernoulli_exp_fraction(1, 1, src)) return false;
  return bernoulli_exp_fraction(rem, q, src);
}

struct U256 {
  u128 hi, lo;
};

U256 square(u128 x) {
  const u128 x1 = x >> 64, x0 = x & 0xFFFFFFFFFFFFFFFFull;
  const u128 low = x0 * x0, mid = x0 * x1, high = x1 * x1;
  // x^2 = high * 2^128 + 2 * mid * 2^64 + low
  U256 r{high, low};
  for (int twice = 0; twice < 2; ++twice) {
    const u128 add_lo = mid << 64;
    const u128 add_hi = mid >> 64;
    const u128 before = r.lo;
    r.lo += add_lo;
    r.hi += add_hi + (r.lo < before ? 1 : 0);
  }
  return r;
}

// floor(p / q) (kU128Max when it does not fit) and p mod q, q >= 1.
void divmod(const U256& p, u128 q, u128& quotient, u128& remainder) {
  if (p.hi == 0) {
    quotient = p.lo / q;
    remainder = p.lo % q;
    return;
  }
  u128 r = 0, quot = 0;
  bool saturated = false;
  for (int bit = 255; bit >= 0; --bit) {
    const u128 word = bit >= 128 ? p.hi : p.lo;
    const u128 next = (word >> (bit % 128)) & 1;
    const bool carry = (r >> 127) != 0;
    r = (r << 1) | next;
    const bool take = carry || r >= q;
    if (take) r -= q;  // the true value is < 2q, so wrap-around arithmetic is exact
    if (take && bit >= 128) saturated = true;
    if (bit < 128 && take) quot |= u128(1) << bit;
  }
  quotient = saturated ? kU128Max : quot;
  remainder = r;
}

// Pr[Y = y] proportional to exp(-|y| / t), t >= 1 (CKS20 Alg. 2 with s = 1).
std::int64_t discrete_laplace(std::uint64_t t, RandomBits& src) {
  while (true) {
    const auto u = static_cast<std::uint64_t>(src.below(t));
    if (!bernoulli_exp(0, u, t, src)) continue;
    std::uint64_t v = 0;
    while (bernoulli_exp_fraction(1, 1, src)) ++v;
    if (v >= (kMaxLaplace - u) / t) continue;  // guard: |y| >= 2^62, probability < e^-(2^62/t)
    const std::uint64_t y = u + t * v;
    const bool negative = src.bits(1) == 1;
    if (negative && y == 0) continue;  // 0 would otherwise be drawn twice as often
    return negative ? -static_cast<std::int64_t>(y) : static_cast<std::int64_t>(y);
  }
}

std::uint64_t gcd(std::uint64_t a, std::uint64_t b) {
  while (b != 0) {
    const std::uint64_t r = a % b;
    a = b;
    b = r;
  }
  return a;
}

std::uint64_t isqrt(std::uint64_t n) {  // floor(sqrt(n)), exactly
  std::uint64_t lo = 0, hi = std::uint64_t(1) << 32;
  while (hi - lo > 1) {
    const std::uint64_t mid = lo + (hi - lo) / 2;
    if (u128(mid) * mid <= n) lo = mid;
    else hi = mid;
  }
  return lo;
}

}  // namespace

std::array<std::uint32_t, 16> chacha20_block(const std::array<std::uint32_t, 8>& key,
                                             std::uint32_t counter,
                                             const std::array<std::uint32_t, 3>& nonce) {
  // RFC 8439 Sec. 2.3: constants, key, counter, nonce; 20 rounds; add the input state.
  std::array<std::uint32_t, 16> init{0x61707865, 0x3320646e, 0x79622d32, 0x6b206574};
  for (int i = 0; i < 8; ++i) init[4 + i] = key[i];
  init[12] = counter;
  for (int i = 0; i < 3; ++i) init[13 + i] = nonce[i];
  std::array<std::uint32_t, 16> s = init;
  for (int round = 0; round < 10; ++round) {
    quarter_round(s.data(), 0, 4, 8, 12);
    quarter_round(s.data(), 1, 5, 9, 13);
    quarter_round(s.data(), 2, 6, 10, 14);
    quarter_round(s.data(), 3, 7, 11, 15);
    quarter_round(s.data(), 0, 5, 10, 15);
    quarter_round(s.data(), 1, 6, 11, 12);
    quarter_round(s.data(), 2, 7, 8, 13);
    quarter_round(s.data(), 3, 4, 9, 14);
  }
  for (int i = 0; i < 16; ++i) s[i] += init[i];
  return s;
}

void discrete_gaussian(std::uint64_t num, std::uint64_t den, std::int64_t count,
                       const NoiseKey& key, std::uint64_t nonce, std::int64_t* out) {
  if (num == 0 || den == 0)
    throw InvalidArgument("sigma^2 = num/den must have num >= 1 and den >= 1, got " +
                          std::to_string(num) + "/" + std::to_string(den));
  if (count < 0) throw InvalidArgument("count must be >= 0, got " + std::to_string(count));
  if (count > 0 && out == nullptr) throw InvalidArgument("out must not be null");
  const std::uint64_t g = gcd(num, den);
  const std::uint64_t a = num / g, b = den / g;
  // floor(sqrt(a / b)) == isqrt(floor(a / b)), so t = floor(sigma) + 1 exactly.
  const std::uint64_t t = isqrt(a / b) + 1;
  u128 q = 2;
  const bool overflow = __builtin_mul_overflow(q, u128(a), &q) ||
                        __builtin_mul_overflow(q, u128(b), &q) ||
                        __builtin_mul_overflow(q, u128(t), &q) ||
                        __builtin_mul_overflow(q, u128(t), &q);
  if (overflow)
    throw InvalidArgument("sigma^2 = " + std::to_string(a) + "/" + std::to_string(b) +
                          " is outside the exact range: 2 * num * den * t^2 must be < 2^128");
  RandomBits src(key, nonce);
  for (std::int64_t i = 0; i < count; ++i) {
    while (true) {
      // CKS20 Alg. 3: accept a discrete Laplace(t) proposal y with probability
      // exp(-(|y| - sigma^2/t)^2 / (2 sigma^2)) = exp(-(|y| b t - a)^2 / (2 a b t^2)).
      const std::int64_t y = discrete_laplace(t, src);
      const u128 abs_y = static_cast<u128>(y < 0 ? -y : y);  // |y| < 2^62
      u128 ybt;
      if (__builtin_mul_overflow(abs_y, u128(b), &ybt) ||
          __builtin_mul_overflow(ybt, u128(t), &ybt))
        continue;  // (|y| b t - a)^2 / q >= 2^128 here: acceptance probability < e^-(2^128)
      const u128 diff = ybt >= a ? ybt - a : u128(a) - ybt;
      u128 whole, rem;
      divmod(square(diff), q, whole, rem);
      if (bernoulli_exp(whole, rem, q, src)) {
        out[i] = y;
        break;
      }
    }
  }
}

std::vector<std::int64_t> discrete_gaussian(std::uint64_t num, std::uint64_t den,
                                            std::int64_t count, const NoiseKey& key,
                                            std::uint64_t nonce) {
  if (count < 0) throw InvalidArgument("count must be >= 0, got " + std::to_string(count));
  std::vector<std::int64_t> out(static_cast<std::size_t>(count));
  discrete_gaussian(num, den, count, key, nonce, out.data());
  return out;
}

}  // namespace dpcore
