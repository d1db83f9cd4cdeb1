"""Noise primitives. Draw noise only *after* the filter has accepted the matching event.

* :func:`make_rng` — a NumPy ``Generator`` (PCG64) seeded with 128 bits from the OS CSPRNG
  (``secrets``) unless the caller asks for reproducibility with an explicit seed.
* :func:`gaussian_noise` — continuous N(0, sigma^2) from NumPy. Floating-point samplers leak
  through their low-order bits (Mironov 2012; Jin et al. 2022); for integer-valued queries
  (counts) prefer :func:`discrete_gaussian_noise`, which costs at most the same.
* :func:`discrete_gaussian_noise` — the default for counts: the exact discrete Gaussian in C++
  (``dpcore._core.discrete_gaussian``, ChaCha20 bits) with variance parameter s^2 >= sigma^2.
* :func:`discrete_gaussian` — the exact sampler of Canonne, Kamath & Steinke 2020 (Alg. 1-3)
  in integer/rational arithmetic: no floating point anywhere in the sampling path. It is the
  reference oracle for the compiled version (and its fallback outside the compiled range).
* :func:`exact_exponential_mechanism` — the exponential mechanism for exact rational scores,
  by rejection with exact Bernoulli(exp(-gamma)) trials: the default selection sampler.
* :func:`exponential_mechanism` — the float version by the Gumbel-max trick (kept for
  comparison; its Gumbel draws are bounded, so far-off candidates get probability 0).

The exact samplers take ``rng``: a NumPy ``Generator`` for reproducible draws (a fixed seed),
or None for the OS CSPRNG (``secrets`` / ``os.urandom``), which a release without a fixed seed
should use: PCG64 is not a cryptographic generator.
"""
from __future__ import annotations

import math
import os
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

def _check_source(rng):
    """``rng`` for an exact sampler: None (the OS CSPRNG) or a NumPy Generator."""
    return None if rng is None else _check_rng(rng)


class _Bits:
    """Uniform random bits, buffered 64 bits at a time: from a NumPy generator, or from the
    OS CSPRNG (``os.urandom``) when ``rng`` is None."""

    __slots__ = ("_rng", "_words", "_word", "_avail")

    def __init__(self, rng):
        self._rng = rng
        self._words: list[int] = []
        self._word = 0
        self._avail = 0

    def _refill(self) -> list[int]:
        if self._rng is None:
            return np.frombuffer(os.urandom(8 * 64), dtype="<u8").tolist()
        return self._rng.integers(0, 2 ** 64, size=512, dtype=np.uint64).tolist()

    def bits(self, k: int) -> int:
        while self._avail < k:
            if not self._words:
                self._words = self._refill()
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
    meant). ``rng`` is a NumPy Generator, or None for the OS CSPRNG. Privacy: Delta^2/(2 sigma_sq)-zCDP for integer queries of L2 sensitivity Delta
    (CKS20; proofs/discrete_gaussian.py). Charge ``GaussianEvent(sigma, Delta)`` first with a
    float sigma whose exact square is <= sigma_sq, so the charge is never below the true cost.
    Returns an int64 array (object array if a value overflows int64, which needs sigma ~ 1e17).
    """
    sigma_sq = Fraction(num.positive("sigma_sq", sigma_sq))
    _check_source(rng)
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


# -- the default for counts: compiled exact discrete Gaussian at s^2 >= sigma^2 --------------
_CORE_WORD = 2 ** 64    # num and den are uint64 in the compiled sampler
_CORE_RANGE = 2 ** 128  # ... and 2 num den t^2 must stay below 2^128 (csrc noise.hpp)
VARIANCE_SLACK = Fraction(1, 2 ** 40)  # s^2 / sigma^2 - 1 is below this on the compiled path


def _fits_core(a: int, b: int) -> bool:
    t = math.isqrt(a // b) + 1
    return a < _CORE_WORD and b < _CORE_WORD and 2 * a * b * t * t < _CORE_RANGE


def discrete_variance(sigma) -> Fraction:
    """The variance parameter s^2 the discrete Gaussian uses for a float ``sigma``.

    s^2 = ceil(sigma^2 2^j) / 2^j with the largest j <= 63 for which the compiled sampler's
    exact range holds (num, den < 2^64 and 2 num den (floor(s) + 1)^2 < 2^128), so
    s^2 >= sigma^2 always (rounding up: the noise is never smaller than charged) and
    s^2 - sigma^2 < 2^-j. When that excess is not below ``VARIANCE_SLACK`` * sigma^2 (sigma
    below ~2^-11 or above ~2^31), s^2 = sigma^2 exactly, which only the Python reference
    samples. Privacy: cost 1/(2 s^2) <= 1/(2 sigma^2), the charge (proofs/exact_sampling.py).
    """
    exact = Fraction(num.positive("sigma", sigma)) ** 2
    for j in range(63, -1, -1):
        den = 2 ** j
        a = -(-exact.numerator * den // exact.denominator)  # ceil(sigma^2 2^j)
        if _fits_core(a, den):
            rounded = Fraction(a, den)
            return rounded if rounded - exact < VARIANCE_SLACK * exact else exact
    return exact


def noise_key(rng=None) -> bytes:
    """A fresh 256-bit ChaCha20 key: ``rng.bytes(32)`` from a seeded Generator (reproducible
    runs), else 32 bytes from the OS CSPRNG (``secrets.token_bytes``)."""
    return secrets.token_bytes(32) if _check_source(rng) is None else rng.bytes(32)


def discrete_gaussian_noise(sigma, size: int, rng=None) -> np.ndarray:
    """``size`` exact discrete Gaussian draws N_Z(0, s^2), s^2 = :func:`discrete_variance`
    (sigma) >= sigma^2, as int64: the default noise for counts.

    Sampled by the compiled CKS20 sampler (``dpcore._core.discrete_gaussian``) on a fresh
    ChaCha20 key per call (:func:`noise_key`), or by the Python reference when s^2 lies outside
    the compiled range. Privacy: for an integer query of L2 sensitivity Delta it is
    Delta^2/(2 s^2) <= Delta^2/(2 sigma^2)-zCDP (CKS20 Thm. 4; proofs/discrete_gaussian.py,
    proofs/exact_sampling.py): charge ``GaussianEvent(sigma, Delta)`` with this float sigma
    first. Timing depends on the random draws, never on the data (csrc noise.hpp).
    """
    if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 0:
        raise InvalidArgumentError(f"size must be an int >= 0, got {size!r}")
    sigma_sq = discrete_variance(sigma)
    a, b = sigma_sq.numerator, sigma_sq.denominator
    if not _fits_core(a, b):
        return discrete_gaussian(sigma_sq, int(size), rng)
    from dpcore import _core  # the compiled core imports dpcore.errors; import it lazily

    return _core.discrete_gaussian(a, b, int(size), noise_key(rng))


# -- exact exponential mechanism ------------------------------------------------------------

def exact_exponential_mechanism(scores, epsilon, sensitivity, rng=None) -> int:
    """Index r drawn with Pr[r] proportional to exp(epsilon * scores[r] / (2 * sensitivity)),
    exactly, for rational ``scores`` (ints or Fractions), ``epsilon`` and ``sensitivity``
    (floats are taken at their exact binary value).

    Rejection: propose r uniformly, accept with probability exp(-gamma_r),
    gamma_r = epsilon (max(scores) - scores[r]) / (2 sensitivity) >= 0, decided by the exact
    Bernoulli(exp(-gamma)) of CKS20 Alg. 1 on integers. A round accepts r with probability
    exp(-gamma_r) / k, so the output law is exp(-gamma_r) / sum exp(-gamma) — the exponential
    mechanism's — and a round succeeds with probability >= 1/k (the maximiser has gamma = 0):
    at most k proposals are expected (proofs/exact_sampling.py). Every candidate keeps a
    positive probability. Privacy: epsilon**2/8-zCDP (proofs/exponential_mechanism.py) for
    scores of sensitivity ``sensitivity`` — charge ``ExponentialEvent(epsilon, sensitivity)``
    first. ``rng``: a Generator (reproducible) or None (OS CSPRNG).
    """
    epsilon = Fraction(num.positive("epsilon", epsilon))
    sensitivity = Fraction(num.positive("sensitivity", sensitivity))
    _check_source(rng)
    shape = np.shape(scores)
    if len(shape) != 1 or shape[0] == 0:
        raise InvalidArgumentError(f"scores must be a non-empty 1-D sequence, got shape {shape}")
    if isinstance(scores, np.ndarray) and scores.dtype.kind in "iu":
        ints, common = scores, 1            # integer scores as they are: nothing to convert
        top = int(scores.max())
    elif all(type(v) is int for v in scores):
        ints, common = scores, 1
        top = max(ints)
    else:
        q = [Fraction(num.finite(f"scores[{i}]", v)) for i, v in enumerate(scores)]
        # gamma_r = p_r / den with integers: scale every score by the common denominator.
        common = math.lcm(*(v.denominator for v in q))
        ints = [v.numerator * (common // v.denominator) for v in q]
        top = max(ints)
    factor = epsilon.numerator * sensitivity.denominator
    den = 2 * epsilon.denominator * sensitivity.numerator * common
    src = _Bits(rng)
    k = len(ints)
    while True:   # each gap is computed only for the candidate proposed
        r = src.below(k)
        if _bernoulli_exp(factor * (top - int(ints[r])), den, src):
            return r


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
