"""Noise calibration: the float parameter to use for a target privacy cost.

Each helper returns a float whose *exact* cost, as the filter computes it, is at most the
target (never more): the irrational ideal is computed at 40 digits, rounded in the safe
direction (sigma up, epsilon down), then checked in exact rational arithmetic and nudged by
one ulp if needed. The cost is therefore within a few ulps below the target, and charging the
event can never overspend because of rounding.
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
    with mpmath.workdps(MP_DPS):
        sigma = round_up(mpf(sensitivity) / mpmath.sqrt(2 * mpf(rho)))
    target, delta_sq = Fraction(rho), Fraction(sensitivity) ** 2
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
    with mpmath.workdps(MP_DPS):
        eps = round_down(mpmath.sqrt(8 * mpf(rho)))
    target = Fraction(rho)
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
