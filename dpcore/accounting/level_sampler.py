"""The exponential mechanism over many integer scores, exactly, with O(k) NumPy work a draw.

:func:`exact_exponential_mechanism` proposes a candidate uniformly and accepts it with
probability exp(-gamma_r): when one query dominates a large set (FEM scores 283,212 queries of
Adult and nearly all the mass sits on a handful), a draw takes ~k proposals, each a Python-level
Bernoulli trial — seconds a round. :func:`level_exponential_mechanism` has the same output law
with a proposal that follows the target to within a factor 2:

* gamma_r = c (top - s_r), c = epsilon / (2 sensitivity), integer scores s_r;
* each candidate gets an integer *level* 0 <= j_r <= gamma_r log2(e) (from floats, with a margin
  that keeps it a lower bound, and capped at :data:`MAX_LEVEL`); the law does not depend on the
  levels, only the speed does;
* proposal Pr[r] = 2^-j_r / sum_s 2^-j_s, drawn exactly with integers: a level l with
  probability n_l 2^(J - l) / sum (n_l candidates at level l), then a uniform member;
* accept with probability a_r = exp(-gamma_r) 2^j_r, which is <= 1 because 2^j_r <= e^gamma_r.

A round therefore ends with r with probability exp(-gamma_r) / sum_s 2^-j_s, so the output has
probability exp(-gamma_r) / sum_s exp(-gamma_s) — the exponential mechanism's, exactly as the
uniform-proposal sampler — and a round succeeds with probability >= 1/2 (up to the capped
levels' negligible mass). The acceptance trial compares a uniform U in [0, 1) (64 random bits,
more on demand) with a_r: a float estimate of a_r with a rigorous relative error margin decides
unless U's interval meets the margin (probability < 2^-38); then integer interval bounds on a_r
(series with directed rounding) and further bits of U decide exactly. Proof:
proofs/level_sampling.py. Draws differ from :func:`exact_exponential_mechanism`'s for the same
generator (another proposal); the law is the same. Privacy: the exponential mechanism's,
epsilon**2/8-zCDP — charge ``ExponentialEvent(epsilon, sensitivity)`` first.
"""
from __future__ import annotations

import functools
import math
from fractions import Fraction

import numpy as np

from dpcore.errors import InvalidArgumentError

from . import _numbers as num
from .noise import _Bits, _check_source, exact_exponential_mechanism

#: The largest level: candidates with gamma_r log2(e) above it share it (their proposal mass
#: is at most k 2^-MAX_LEVEL against the maximiser's 1).
MAX_LEVEL = 1100
#: A float strictly below log2(e) = 1.44269504088896...: levels j <= gamma * LOG2E_LOW < gamma log2(e).
LOG2E_LOW = 1.4426950408
#: Relative margin covering the float estimate of a_r: the rounding of gamma (3 ulps), of the
#: exponent j ln2 - gamma, math.exp's own error and the comparison's roundings (each < 2^-50).
_MARGIN = 2.0 ** -40


def level_exponential_mechanism(scores, epsilon, sensitivity, rng=None, *, size=None):
    """Index r with Pr[r] proportional to exp(epsilon * scores[r] / (2 * sensitivity)), exactly,
    for an integer NumPy array ``scores`` (module docstring). ``rng``: a Generator (reproducible)
    or None (the OS CSPRNG). Score spreads past int64 go to :func:`exact_exponential_mechanism`.
    ``size``: a list of that many independent draws (one level table for all; each draw is one
    exponential mechanism and is charged as one) instead of one index."""
    if size is not None:
        if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 1:
            raise InvalidArgumentError(f"size must be an int >= 1, got {size!r}")
        draw = _drawer(scores, epsilon, sensitivity, rng)
        return [draw() for _ in range(int(size))]
    return _drawer(scores, epsilon, sensitivity, rng)()


def _drawer(scores, epsilon, sensitivity, rng):
    """A function returning one exact draw each call, sharing the level table."""
    eps = Fraction(num.positive("epsilon", epsilon))
    sens = Fraction(num.positive("sensitivity", sensitivity))
    _check_source(rng)
    scores = np.asarray(scores)
    if scores.ndim != 1 or scores.size == 0:
        raise InvalidArgumentError(f"scores must be a non-empty 1-D array, got shape {scores.shape}")
    if scores.dtype.kind not in "iu":
        raise InvalidArgumentError(f"scores must be an integer array, got dtype {scores.dtype}")
    top, low = int(scores.max()), int(scores.min())
    c = eps / (2 * sens)                                  # gamma_r = c * gap_r, exactly
    if top - low >= 2 ** 62 or not 2.0 ** -900 < c < 2.0 ** 900:
        # gaps past int64, or a c whose float is not a normal number: the general sampler
        return lambda: exact_exponential_mechanism(scores, epsilon, sensitivity, rng)
    gaps = np.int64(top) - scores.astype(np.int64)        # exact: |gap| < 2^62
    gamma = gaps.astype(np.float64) * float(c)            # within 3 ulps of gamma_r
    levels = np.floor(np.minimum(gamma * LOG2E_LOW * (1.0 - _MARGIN), MAX_LEVEL)).astype(np.int64)
    counts = np.bincount(levels).tolist()
    deepest = len(counts) - 1
    weights = [n << (deepest - level) for level, n in enumerate(counts)]   # n_l 2^(J - l)
    total = sum(weights)
    src = _Bits(rng)
    members: dict[int, np.ndarray] = {}

    def draw() -> int:
        while True:
            u = src.below(total)
            level = 0
            while u >= weights[level]:
                u -= weights[level]
                level += 1
            if level not in members:
                members[level] = np.flatnonzero(levels == level)
            at = members[level]
            r = int(at[src.below(len(at))])
            if _accept(c.numerator * int(gaps[r]), c.denominator, int(levels[r]), float(gamma[r]), src):
                return r
    return draw


def _accept(p: int, q: int, j: int, gamma: float, src: _Bits) -> bool:
    """Bernoulli(exp(-p/q) 2^j), exactly, for 2^j <= e^(p/q): U < a decided by a float estimate
    when U is clear of its error margin, else by integer bounds and more bits of U."""
    u = src.bits(64)
    estimate = math.exp(j * math.log(2) - gamma)
    rel = (j + gamma + 2.0) * 2.0 ** -48 + _MARGIN
    if (u + 1) * 2.0 ** -64 <= estimate * (1.0 - rel):
        return True
    if u * 2.0 ** -64 >= estimate * (1.0 + rel) + 2.0 ** -1000:   # (estimates may underflow)
        return False
    bits = 64
    while True:    # U in [u, u + 1) / 2^bits; lo <= 2^bits a <= hi
        lo, hi = scaled_bounds(p, q, j, bits)
        if u + 1 <= lo:
            return True
        if u >= hi:
            return False
        u = (u << 64) | src.bits(64)
        bits += 64


def scaled_bounds(p: int, q: int, j: int, bits: int) -> tuple[int, int]:
    """Integers lo <= 2^(bits + j) exp(-p/q) <= hi (p >= 0, q >= 1, j >= 0), hi - lo small."""
    m, rest = divmod(p, q)
    if m > bits + j + 1:   # 2^(bits + j) e^-m < 2^(bits + j - m) <= 1/2
        return 0, 1
    w = bits + j + 64 + 2 * max(m, 1).bit_length()     # working bits, with guard bits
    e1_lo, e1_hi = _exp_neg_one(w)
    ef_lo, ef_hi = _exp_neg_fixed(Fraction(rest, q), w)
    lo, hi = _pow_fixed(e1_lo, m, w, up=False), _pow_fixed(e1_hi, m, w, up=True)
    lo, hi = (lo * ef_lo) >> w, -((-hi * ef_hi) >> w)
    shift = w - bits - j
    return lo >> shift, -((-hi) >> shift)


def _exp_neg_fixed(f: Fraction, w: int) -> tuple[int, int]:
    """floor and ceil bounds on 2^w exp(-f) for f in [0, 1]: the alternating series
    sum (-f)^k / k! has terms decreasing in size, so consecutive partial sums bracket it."""
    term, partial, k = Fraction(1), Fraction(1), 0
    limit = Fraction(1, 2 ** (w + 2))
    while True:
        k += 1
        term = -term * f / k
        after = partial + term
        if abs(term) < limit or term == 0:
            low, high = min(partial, after), max(partial, after)
            return (low.numerator << w) // low.denominator, -((-(high.numerator << w)) // high.denominator)
        partial = after


@functools.lru_cache(maxsize=64)
def _exp_neg_one(w: int) -> tuple[int, int]:
    return _exp_neg_fixed(Fraction(1), w)


def _pow_fixed(x: int, m: int, w: int, *, up: bool) -> int:
    """x^m / 2^(w (m - 1)) in w-bit fixed point, rounded down (or up) at every product."""
    def mul(a, b):
        return -((-a * b) >> w) if up else (a * b) >> w
    out, base = 1 << w, x
    while m:
        if m & 1:
            out = mul(out, base)
        base = mul(base, base)
        m >>= 1
    return out
