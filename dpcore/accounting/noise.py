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

def _randbelow(n: int, rng) -> int:
    """Uniform integer in [0, n), exactly (NumPy's bounded integers below 2**63, else rejection
    sampling on raw random bits)."""
    if n <= 2 ** 63:
        return int(rng.integers(0, n))
    k = n.bit_length()
    nbytes = (k + 7) // 8
    while True:
        x = int.from_bytes(rng.bytes(nbytes), "little") >> (8 * nbytes - k)
        if x < n:
            return x


def _bernoulli(p: Fraction, rng) -> bool:
    """Bernoulli(p) for rational p in [0, 1]."""
    return _randbelow(p.denominator, rng) < p.numerator


def _bernoulli_exp(gamma: Fraction, rng) -> bool:
    """Bernoulli(exp(-gamma)) for rational gamma >= 0 (CKS20 Alg. 1).

    For gamma <= 1: draw A_k ~ Bernoulli(gamma/k), k = 1, 2, ... until the first 0; the index K
    of that 0 is odd with probability exp(-gamma). For gamma > 1 use
    exp(-gamma) = exp(-1)^floor(gamma) * exp(-(gamma - floor(gamma))).
    """
    if gamma <= 1:
        k = 1
        while _bernoulli(gamma / k, rng):
            k += 1
        return k % 2 == 1
    for _ in range(math.floor(gamma)):
        if not _bernoulli_exp(Fraction(1), rng):
            return False
    return _bernoulli_exp(gamma - math.floor(gamma), rng)


def _discrete_laplace(t: int, rng) -> int:
    """Pr[Y = y] proportional to exp(-|y|/t) for integer t >= 1 (CKS20 Alg. 2 with s = 1)."""
    while True:
        u = _randbelow(t, rng)
        if not _bernoulli_exp(Fraction(u, t), rng):
            continue
        v = 0
        while _bernoulli_exp(Fraction(1), rng):
            v += 1
        y = u + t * v  # geometric-with-uniform-remainder: Pr[y] ~ exp(-y/t), y >= 0
        negative = _bernoulli(Fraction(1, 2), rng)
        if negative and y == 0:
            continue  # otherwise 0 would be counted twice
        return -y if negative else y


def _discrete_gaussian_one(sigma_sq: Fraction, t: int, rng) -> int:
    """One N_Z(0, sigma_sq) draw (CKS20 Alg. 3): a discrete Laplace proposal with scale
    t = floor(sigma) + 1, accepted with probability exp(-(|Y| - sigma^2/t)^2 / (2 sigma^2))."""
    shift = sigma_sq / t
    two_sigma_sq = 2 * sigma_sq
    while True:
        y = _discrete_laplace(t, rng)
        if _bernoulli_exp((abs(y) - shift) ** 2 / two_sigma_sq, rng):
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
    t = math.isqrt(sigma_sq.numerator // sigma_sq.denominator) + 1
    values = [_discrete_gaussian_one(sigma_sq, t, rng) for _ in range(count)]
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
    u = (float(epsilon) / (2.0 * float(sensitivity))) * (q - q.max())
    return int(np.argmax(u + rng.gumbel(size=q.size)))
