"""Noise primitives. Draw noise only *after* the filter has accepted the matching event.

* :func:`make_rng` — a NumPy ``Generator`` (PCG64) seeded with 128 bits from the OS CSPRNG
  (``secrets``) unless the caller asks for reproducibility with an explicit seed.
* :func:`gaussian_noise` — continuous N(0, sigma^2) from NumPy. Floating-point samplers leak
  through their low-order bits (Mironov 2012; Jin et al. 2022); for integer-valued queries
  (counts) prefer :func:`discrete_gaussian`, which has the same zCDP cost.
* :func:`discrete_gaussian` — the exact sampler of Canonne, Kamath & Steinke 2020 (Alg. 1-3)
  in integer/rational arithmetic: no floating point anywhere in the sampling path. It is the
  reference oracle for compiled versions.
* :func:`exponential_mechanism` — the exponential mechanism by the Gumbel-max trick.
"""
from __future__ import annotations

import math
import secrets
from fractions import Fraction

import numpy as np

from dpcore.errors import DpcoreTypeError, InvalidArgumentError

from . import _numbers as num


def make_rng(seed=None) -> np.random.Generator:
    """A PCG64 generator: from 128 bits of OS entropy when ``seed`` is None, else from ``seed``.

    A fixed seed makes releases reproducible, and therefore predictable to anyone who knows the
    seed: use one only for testing and benchmarks.
    """
    if seed is None:
        seed = secrets.randbits(128)
    elif isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise DpcoreTypeError(f"seed must be an int or None, got {type(seed).__name__} {seed!r}")
    elif seed < 0:
        raise InvalidArgumentError(f"seed must be >= 0, got {seed!r}")
    return np.random.Generator(np.random.PCG64(int(seed)))


def _check_rng(rng):
    if not isinstance(rng, np.random.Generator):
        raise DpcoreTypeError(f"rng must be a numpy.random.Generator (see make_rng), got "
                              f"{type(rng).__name__}")
    return rng


def gaussian_noise(sigma, size, rng) -> np.ndarray:
    """``size`` i.i.d. N(0, sigma^2) draws as float64.

    Privacy: added to a query of L2 sensitivity Delta it is Delta^2/(2 sigma^2)-zCDP
    (proofs/gaussian.py) — charge ``GaussianEvent(sigma, Delta)`` with this same float sigma first.
    """
    sigma = num.positive("sigma", sigma)
    _check_rng(rng)
    return rng.normal(0.0, float(sigma), size)


# -- exact discrete Gaussian (Canonne, Kamath & Steinke 2020, arXiv 2004.00010) --------------
# Everything below works on Python integers: a rational parameter p/q is carried as the pair
# (p, q), and Bernoulli(p/q) compares a uniform integer in [0, q) with p.

class _Bits:
    """Uniform random bits from a NumPy generator, buffered 64 bits at a time."""

    __slots__ = ("_rng", "_words", "_word", "_avail")

    def __init__(self, rng):
        self._rng = rng
        self._words: list[int] = []
        self._word = 0
        self._avail = 0

    def bits(self, k: int) -> int:
        while self._avail < k:
            if not self._words:
                self._words = self._rng.integers(0, 2 ** 64, size=512, dtype=np.uint64).tolist()
            self._word |= self._words.pop() << self._avail
            self._avail += 64
        out = self._word & ((1 << k) - 1)
        self._word >>= k
        self._avail -= k
        return out

    def below(self, n: int) -> int:
        """Uniform integer in [0, n), exactly, by rejection on bit_length(n - 1) random bits."""
        if n == 1:
            return 0
        k = (n - 1).bit_length()
        while True:
            x = self.bits(k)
            if x < n:
                return x


def _bernoulli(p: int, q: int, src: _Bits) -> bool:
    """Bernoulli(p/q) for integers 0 <= p <= q, q >= 1."""
    return src.below(q) < p


def _bernoulli_exp(p: int, q: int, src: _Bits) -> bool:
    """Bernoulli(exp(-p/q)) for integers p >= 0, q >= 1 (CKS20 Alg. 1).

    For gamma = p/q <= 1: draw A_k ~ Bernoulli(gamma/k), k = 1, 2, ... until the first 0; the
    index K of that 0 is odd with probability exp(-gamma). For gamma > 1 use
    exp(-gamma) = exp(-1)^floor(gamma) * exp(-(gamma - floor(gamma))).
    """
    if p <= q:
        k = 1
        while _bernoulli(p, q * k, src):
            k += 1
        return k % 2 == 1
    whole = p // q
    for _ in range(whole):
        if not _bernoulli_exp(1, 1, src):
            return False
    return _bernoulli_exp(p - whole * q, q, src)


def _discrete_laplace(t: int, src: _Bits) -> int:
    """Pr[Y = y] proportional to exp(-|y|/t) for integer t >= 1 (CKS20 Alg. 2 with s = 1)."""
    while True:
        u = src.below(t)
        if not _bernoulli_exp(u, t, src):
            continue
        v = 0
        while _bernoulli_exp(1, 1, src):
            v += 1
        y = u + t * v  # uniform remainder + t * geometric: Pr[y] ~ exp(-y/t), y >= 0
        negative = src.bits(1) == 1
        if negative and y == 0:
            continue  # otherwise 0 would be counted twice
        return -y if negative else y


def _discrete_gaussian_one(a: int, b: int, t: int, src: _Bits) -> int:
    """One N_Z(0, sigma^2) draw, sigma^2 = a/b (CKS20 Alg. 3): a discrete Laplace proposal with
    scale t = floor(sigma) + 1, accepted with probability exp(-(|Y| - sigma^2/t)^2 / (2 sigma^2)).
    In integers that exponent is (|Y| b t - a)^2 / (2 a b t^2)."""
    q = 2 * a * b * t * t
    while True:
        y = _discrete_laplace(t, src)
        if _bernoulli_exp((abs(y) * b * t - a) ** 2, q, src):
            return y


def discrete_gaussian(sigma_sq, size, rng) -> np.ndarray:
    """``size`` i.i.d. draws from the discrete Gaussian N_Z(0, sigma_sq): Pr[x] proportional to
    exp(-x^2 / (2 sigma_sq)) on the integers, sampled exactly.

    ``sigma_sq`` is an int, a Fraction, or a float taken at its exact binary value (keep it
    rational, e.g. ``Fraction(3, 2) / rho``, so that the charged cost is exactly the one you
    meant). Privacy: Delta^2/(2 sigma_sq)-zCDP for integer queries of L2 sensitivity Delta
    (CKS20; proofs/discrete_gaussian.py). Charge ``GaussianEvent(sigma, Delta)`` first with a
    float sigma whose exact square is <= sigma_sq, so the charge is never below the true cost.
    Returns an int64 array (object array if a value overflows int64, which needs sigma ~ 1e17).
    """
    sigma_sq = Fraction(num.positive("sigma_sq", sigma_sq))
    _check_rng(rng)
    shape = (size,) if isinstance(size, (int, np.integer)) else tuple(size)
    count = math.prod(shape)
    # floor(sqrt(x)) == isqrt(floor(x)) for real x >= 0, so t = floor(sigma) + 1 exactly.
    a, b = sigma_sq.numerator, sigma_sq.denominator
    t = math.isqrt(a // b) + 1
    src = _Bits(rng)
    values = [_discrete_gaussian_one(a, b, t, src) for _ in range(count)]
    try:
        return np.array(values, dtype=np.int64).reshape(shape)
    except OverflowError:
        return np.array(values, dtype=object).reshape(shape)


def exponential_mechanism(scores, epsilon, sensitivity, rng) -> int:
    """Index r drawn with Pr[r] proportional to exp(epsilon * scores[r] / (2 * sensitivity)).

    Sampled as argmax_r (epsilon scores[r] / (2 sensitivity) + G_r) with G_r i.i.d. standard
    Gumbel: for independent Gumbels, Pr[argmax_r (u_r + G_r) = i] = exp(u_i) / sum_r exp(u_r)
    (the Gumbel-max trick; proofs/exponential_mechanism.py), which is exactly the exponential
    mechanism's distribution. Privacy: epsilon-DP and epsilon**2/8-zCDP by bounded range
    (Cesar & Rogers 2021) — charge ``ExponentialEvent(epsilon, sensitivity)`` first. Not the
    same as report-noisy-max with exponential noise (= permute-and-flip), which does not enjoy
    the epsilon**2/8 bound.
    """
    epsilon = num.positive("epsilon", epsilon)
    sensitivity = num.positive("sensitivity", sensitivity)
    _check_rng(rng)
    q = np.asarray(scores, dtype=np.float64)
    if q.ndim != 1 or q.size == 0:
        raise InvalidArgumentError(f"scores must be a non-empty 1-D array, got shape {q.shape}")
    if not np.all(np.isfinite(q)):
        bad = int(np.flatnonzero(~np.isfinite(q))[0])
        raise InvalidArgumentError(f"scores must be finite, got scores[{bad}] = {q[bad]!r}")
    with np.errstate(over="ignore"):
        scale = float(epsilon) / (2.0 * float(sensitivity))
        gap = q - q.max()  # <= 0; -inf where the difference overflows (probability ~ 0)
    if not np.isfinite(scale):
        # The limit distribution: uniform over the maximisers.
        best = np.flatnonzero(gap == 0)
        return int(best[rng.integers(0, best.size)])
    with np.errstate(over="ignore", invalid="ignore"):
        u = np.where(gap == 0, 0.0, scale * gap)
    return int(np.argmax(u + rng.gumbel(size=q.size)))
