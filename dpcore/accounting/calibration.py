"""Noise calibration: the float parameter to use for a target privacy cost.

Each helper returns a float whose *charged* cost, as the filter computes it (the exact cost
rounded up onto the ledger's 2**-128 grid), is at most the target (never more): the target is
first rounded down onto that grid, the irrational ideal is computed at 40 digits, rounded in
the safe direction (sigma up, epsilon down), then checked in exact rational arithmetic and
nudged by one ulp if needed. The cost is therefore within a few ulps below the target, and
charging the event can never overspend because of rounding (proofs/cost_rounding.py).
"""
from __future__ import annotations

import math
from fractions import Fraction

import mpmath

from dpcore.errors import InvalidArgumentError

from . import _numbers as num
from ._mp import MP_DPS, mpf, round_down, round_up


def gaussian_sigma(rho, sensitivity=1) -> float:
    """Smallest float sigma with sensitivity**2 / (2 sigma**2) <= rho, i.e. ~ Delta/sqrt(2 rho).

    Privacy: ``GaussianEvent(sigma, sensitivity)`` then costs at most ``rho``
    (Bun & Steinke 2016, Prop. 1.6; proofs/gaussian.py).

    >>> s = gaussian_sigma(Fraction(1, 2)); s
    1.0
    """
    rho = num.positive("rho", rho)
    sensitivity = num.positive("sensitivity", sensitivity)
    target, delta_sq = _grid_target(rho), Fraction(sensitivity) ** 2
    with mpmath.workdps(MP_DPS):
        sigma = round_up(mpf(sensitivity) / mpmath.sqrt(2 * mpf(target)))
    if not 0 < sigma < math.inf:
        raise InvalidArgumentError(f"sigma for rho={rho!r}, sensitivity={sensitivity!r} is not a "
                                   "finite positive float")
    while delta_sq / (2 * Fraction(sigma) ** 2) > target:
        sigma = math.nextafter(sigma, math.inf)
    # Step back down while the smaller float still fits (round_up's margin may overshoot).
    while True:
        smaller = math.nextafter(sigma, 0.0)
        if smaller > 0 and delta_sq / (2 * Fraction(smaller) ** 2) <= target:
            sigma = smaller
        else:
            return sigma


def exponential_epsilon(rho) -> float:
    """Largest float epsilon with epsilon**2 / 8 <= rho, i.e. ~ sqrt(8 rho).

    Privacy: ``ExponentialEvent(epsilon, sensitivity)`` then costs at most ``rho``
    (Cesar & Rogers 2021; proofs/exponential_mechanism.py).

    >>> exponential_epsilon(Fraction(1, 8))
    1.0
    """
    rho = num.positive("rho", rho)
    target = _grid_target(rho)
    with mpmath.workdps(MP_DPS):
        eps = round_down(mpmath.sqrt(8 * mpf(target)))
    while eps > 0 and Fraction(eps) ** 2 / 8 > target:
        eps = math.nextafter(eps, 0.0)
    while True:
        larger = math.nextafter(eps, math.inf)
        if Fraction(larger) ** 2 / 8 <= target:
            eps = larger
        else:
            break
    if eps <= 0:
        raise InvalidArgumentError(f"rho is too small for a positive float epsilon, got {rho!r}")
    return eps


def _grid_target(rho) -> Fraction:
    """The largest grid value <= rho: an exact cost at most this is charged at most rho."""
    target = num.round_cost_down(Fraction(rho))
    if target <= 0:
        raise InvalidArgumentError(f"rho is too small: below the ledger's cost grid "
                                   f"2**-{num.COST_GRID_BITS}, got ~{float(rho):.3g}")
    return target


def nist_mst_sigma(epsilon, delta) -> float:
    """NIST-MST's closed-form sigma, (sqrt(log(1/delta)) + sqrt(log(1/delta) + epsilon)) / epsilon,
    rounded up (McKenna, Miklau & Sheldon 2021, Eq. 5.1).

    Two Gaussian measurements with sensitivity 1 and this sigma are (alpha, alpha/sigma^2)-RDP,
    which by the classic RDP conversion at alpha = 1 + sigma sqrt(log(1/delta)) is exactly
    (epsilon, delta)-DP (the paper's Theorem 2 and Figure 4; proofs/nist_mst_calibration.py).
    The total zCDP cost is 1/sigma^2.
    """
    epsilon = num.positive("epsilon", epsilon)
    delta = num.probability("delta", delta)
    with mpmath.workdps(MP_DPS):
        L = -mpmath.log(mpf(delta))
        return round_up((mpmath.sqrt(L) + mpmath.sqrt(L + mpf(epsilon))) / mpf(epsilon))


def l2_sensitivity(weights) -> float:
    """Smallest float >= the exact L2 norm of ``weights`` (the sensitivity of a weighted batch of
    marginals, proofs/weighted_marginals.py).

    Use it as ``GaussianEvent(sigma, l2_sensitivity(w))``: ``math.sqrt(sum(w**2))`` or
    ``np.linalg.norm(w)`` round to nearest and may land one ulp *below* the true norm, which
    would undercharge. Weights normalised in floats (``w / norm(w)``) likewise need not have
    norm exactly 1, so pass the normalised weights through this too.

    >>> l2_sensitivity([3.0, 4.0])
    5.0
    """
    try:
        values = [num.finite("weight", w) for w in weights]
    except TypeError:
        values = [num.finite("weights", weights)]
    if not values:
        raise InvalidArgumentError("weights must be non-empty, got []")
    total = sum((Fraction(w) ** 2 for w in values), Fraction(0))
    if total == 0:
        raise InvalidArgumentError("weights must not all be 0 (zero sensitivity)")
    try:
        norm = float(_sqrt_near(total))  # within an ulp or two; fixed up exactly below
    except OverflowError:
        norm = math.inf
    if norm == math.inf or math.nextafter(norm, math.inf) == math.inf:
        raise InvalidArgumentError("weights are too large: their L2 norm overflows a float")
    while Fraction(norm) ** 2 < total:
        norm = math.nextafter(norm, math.inf)
    while norm > 0:
        smaller = math.nextafter(norm, 0.0)
        if Fraction(smaller) ** 2 >= total:
            norm = smaller
        else:
            break
    return norm


def _sqrt_near(x: Fraction) -> Fraction:
    """A rational within 2**-80 relative of sqrt(x) > 0, by integer square roots (no float
    underflow or overflow, whatever the magnitude of x)."""
    p, q = x.numerator, x.denominator
    # scale so that the integer square root has at least 80 significant bits
    shift = max(0, 160 - (p.bit_length() - q.bit_length()))
    shift += shift % 2
    root = math.isqrt((p << shift) // q)
    return Fraction(root, 1 << (shift // 2))


def exponential_rounds(rho, epsilon) -> int:
    """Largest T such that T exponential mechanisms with this ``epsilon`` fit ``rho``: each is
    charged its cost epsilon**2/8 rounded up onto the ledger's grid, and T charges compose by
    addition (zCDP composition), so T = floor(rho / charged cost).

    Privacy: ``ExponentialEvent(epsilon, sensitivity)`` is epsilon**2/8-zCDP (Cesar & Rogers
    2021; proofs/exponential_mechanism.py); FEM's T rounds (proofs/fem_selection.py), which
    also compares T with the paper's advanced composition.

    >>> exponential_rounds(Fraction(1, 8), 0.5)
    4
    """
    rho = num.positive("rho", rho)
    epsilon = num.positive("epsilon", epsilon)
    cost = num.round_cost_up(Fraction(epsilon) ** 2 / 8)
    if cost <= 0:
        raise InvalidArgumentError(f"epsilon is too small to cost anything, got {epsilon!r}")
    return int(Fraction(rho) // cost)


def adaptive_measurements_round(rho, rounds, per_round, alpha) -> tuple[float, float]:
    """Per-selection epsilon and per-measurement sigma of Adaptive Measurements (Liu, Vietri &
    Wu, "Iterative Methods for Private Synthetic Data", Theorem 1 and its proof, with ``per_round``
    = k selections and k measurements in each of ``rounds`` = T rounds, budget split ``alpha``).

    The proof's per-round parameter is eps0 = sqrt(2 rho / (k T (alpha^2 + (1-alpha)^2))); each
    selection is the exponential mechanism with parameter 2 alpha eps0 (cost (alpha eps0)^2 / 2)
    and each measurement a sensitivity-1 Gaussian with sigma = 1 / ((1 - alpha) eps0) in counts
    (cost ((1-alpha) eps0)^2 / 2). Here the two targets are exact rationals,
    rho alpha^2 / (k T s) and rho (1-alpha)^2 / (k T s) with s = alpha^2 + (1-alpha)^2, which sum
    over k T pairs to rho exactly, and each is calibrated by :func:`exponential_epsilon` and
    :func:`gaussian_sigma`: the *charged* cost of k ``ExponentialEvent(epsilon, 1)`` and k
    ``GaussianEvent(sigma, 1)`` is at most rho / T a round, a few ulps below it
    (proofs/adaptive_budget.py).

    >>> eps, sigma = adaptive_measurements_round(Fraction(1, 2), 1, 1, 0.5)  # eps0 = sqrt(2)
    >>> round(eps, 12), round(sigma, 12)
    (1.414213562373, 1.414213562373)
    """
    rho = num.positive("rho", rho)
    pairs = num.positive_int("rounds", rounds) * num.positive_int("per_round", per_round)
    a = Fraction(num.positive("alpha", alpha))
    if not a < 1:
        raise InvalidArgumentError(f"alpha must lie in (0, 1), got {alpha!r}")
    split = a ** 2 + (1 - a) ** 2
    select = Fraction(rho) * a ** 2 / (pairs * split)
    measure = Fraction(rho) * (1 - a) ** 2 / (pairs * split)
    return exponential_epsilon(select), gaussian_sigma(measure)
