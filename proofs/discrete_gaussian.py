"""Claim: adding discrete Gaussian noise N_Z(0, sigma^2) (Pr[x] ∝ exp(-x^2/(2 sigma^2)) on the
integers) to an integer-valued query with L2 sensitivity Delta is Delta^2/(2 sigma^2)-zCDP,
like the continuous Gaussian; and the exact sampler's acceptance exponent
(|Y| - sigma^2/t)^2 / (2 sigma^2) with sigma^2 = a/b equals (|Y| b t - a)^2 / (2 a b t^2), so the
sampler needs only integers.

Source: Canonne, Kamath & Steinke 2020 (arXiv 2004.00010), the discrete Gaussian's
concentrated-DP guarantee and Alg. 1-3 (sampler); theorem number not re-checked here.

Preconditions: sigma^2 > 0 rational; the query's values and its changes are integer vectors.

Proof sketch. Per coordinate, for an integer shift v, sum_x p(x)^alpha p(x - v)^(1 - alpha)
= exp(-alpha(1-alpha) v^2 / (2 sigma^2)) * Theta((1-alpha) v) / Theta(0) by completing the
square (proofs/gaussian.py), where Theta(m) = sum_x exp(-(x - m)^2 / (2 sigma^2)). CKS show
Theta(m) <= Theta(0) for every real m, so D_alpha <= alpha v^2 / (2 sigma^2); independent
coordinates add, giving alpha ||v||^2/(2 sigma^2) <= alpha Delta^2/(2 sigma^2). The check verifies
Theta(m) <= Theta(0) and the divergence bound numerically (30 digits) for small and large
sigma, and the integer form of the acceptance exponent symbolically.
"""
import mpmath
import sympy as sp

from ._support import assert_equal

CLAIM = "discrete Gaussian has the same zCDP cost; sampler exponent is integral"


def _theta(m, s2, k):
    return mpmath.fsum(mpmath.exp(-(x - m) ** 2 / (2 * s2)) for x in range(-k, k + 1))


def check() -> None:
    y, a, b, t = sp.symbols("y a b t", positive=True)
    sigma_sq = a / b
    assert_equal((y - sigma_sq / t) ** 2 / (2 * sigma_sq), (y * b * t - a) ** 2 / (2 * a * b * t ** 2),
                 "integer acceptance exponent")
    with mpmath.workdps(30):
        for s2 in (mpmath.mpf(1) / 3, mpmath.mpf(1), mpmath.mpf(4), mpmath.mpf(150)):
            k = int(20 * mpmath.sqrt(s2)) + 10
            z0 = _theta(0, s2, k)
            for j in range(1, 20):
                # for large sigma Theta is flat to ~exp(-2 pi^2 sigma^2): compare up to rounding
                assert _theta(mpmath.mpf(j) / 20, s2, k) <= z0 * (1 + mpmath.mpf(10) ** -25)
            for v in (1, 2, 3):
                for al in (mpmath.mpf(1.5), mpmath.mpf(2), mpmath.mpf(8)):
                    total = mpmath.fsum(
                        mpmath.exp(-(al * x ** 2 + (1 - al) * (x - v) ** 2) / (2 * s2))
                        for x in range(-k - v, k + v + 1)) / z0
                    div = mpmath.log(total) / (al - 1)
                    assert div <= al * v ** 2 / (2 * s2) * (1 + mpmath.mpf(10) ** -20), (s2, v, al)
                    if s2 >= 4:  # and the continuous constant is the right one: tight for large sigma
                        assert div >= al * v ** 2 / (2 * s2) * (1 - mpmath.mpf(10) ** -6), (s2, v, al)
    # the accountant charges the discrete Gaussian as GaussianEvent(sigma, 1): Delta^2/(2 sigma^2)
    # with sigma^2 = Fraction(sigma)^2, the variance parameter the exact sampler uses
    from fractions import Fraction
    from dpcore.accounting import GaussianEvent, ZCDPAccountant
    acc = ZCDPAccountant()
    exact_rho = getattr(acc, "exact_rho", acc.rho)
    for sigma in (0.6, 2.0, 12.25):
        s2 = Fraction(sigma) ** 2
        cost = exact_rho(GaussianEvent(sigma, 1))
        assert cost == 1 / (2 * s2)
        with mpmath.workdps(30):
            s2m = mpmath.mpf(s2.numerator) / s2.denominator
            k = int(20 * sigma) + 10
            # order 2, shift 1: sum_x p(x)^2 p(x - 1)^-1
            total = mpmath.fsum(mpmath.exp(-(2 * x ** 2 - (x - 1) ** 2) / (2 * s2m))
                                for x in range(-k - 1, k + 2)) / _theta(0, s2m, k)
            bound = 2 * mpmath.mpf(cost.numerator) / cost.denominator
            assert mpmath.log(total) <= bound * (1 + mpmath.mpf(10) ** -20), (sigma, total)
