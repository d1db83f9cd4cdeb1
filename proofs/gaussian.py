"""Claim: the Gaussian mechanism with L2 sensitivity Delta and noise N(0, sigma^2 I) is
rho-zCDP with rho = Delta^2 / (2 sigma^2); sigma = 0 is not zCDP for any finite rho.

Source: Bun & Steinke 2016 ("Concentrated Differential Privacy: Simplifications, Extensions,
and Lower Bounds"), Prop. 1.6; Mironov 2017 (Renyi DP), Prop. 7.

Preconditions: f maps datasets to R^d with sup over neighbours (add/remove one record) of
||f(D) - f(D')||_2 <= Delta; the noise is i.i.d. N(0, sigma^2) per coordinate, sigma > 0.

Proof. rho-zCDP means D_alpha(M(D) || M(D')) <= alpha rho for every alpha > 1. The Renyi
divergence factorises over independent coordinates, and is invariant under rotations, so it
equals the one-dimensional divergence between N(0, sigma^2) and N(v, sigma^2) with
v = ||f(D) - f(D')||_2 <= Delta. For densities p, q of these two,
    p(x)^alpha q(x)^(1-alpha) ∝ exp(-(alpha x^2 + (1-alpha)(x - v)^2) / (2 sigma^2)),
and completing the square,
    alpha x^2 + (1-alpha)(x-v)^2 = (x - (1-alpha) v)^2 + alpha (1-alpha) v^2        (1)
so the integral is exp(-alpha(1-alpha) v^2 / (2 sigma^2)) times the integral of a normalised
Gaussian kernel, which is 1 (2). Hence
    D_alpha = log(exp(alpha(alpha-1) v^2/(2 sigma^2))) / (alpha - 1) = alpha v^2 / (2 sigma^2)
           <= alpha Delta^2 / (2 sigma^2).
With sigma = 0 the outputs of neighbours have disjoint supports and the divergence is infinite,
so the accountant returns math.inf and the filter refuses (fail closed).

Code relying on it: ZCDPAccountant.rho(GaussianEvent), verify._cost, calibration.gaussian_sigma
(which returns the smallest float sigma whose *exact* cost is <= the target; checked below).
"""
from fractions import Fraction

import sympy as sp

from ._support import assert_equal

CLAIM = "Gaussian mechanism is Delta^2/(2 sigma^2)-zCDP"


def check() -> None:
    x, v, m = sp.symbols("x v m", real=True)
    alpha, sigma = sp.symbols("alpha sigma", positive=True)
    # (1) completing the square
    assert_equal(alpha * x ** 2 + (1 - alpha) * (x - v) ** 2,
                 (x - (1 - alpha) * v) ** 2 + alpha * (1 - alpha) * v ** 2, "completing the square")
    # (2) a Gaussian kernel centred anywhere integrates to sqrt(2 pi) sigma
    kernel = sp.integrate(sp.exp(-(x - m) ** 2 / (2 * sigma ** 2)), (x, -sp.oo, sp.oo))
    assert_equal(kernel, sp.sqrt(2 * sp.pi) * sigma, "Gaussian normaliser")
    # the divergence
    integral = sp.exp(-alpha * (1 - alpha) * v ** 2 / (2 * sigma ** 2))
    d_alpha = sp.log(integral) / (alpha - 1)
    assert_equal(sp.expand_log(d_alpha, force=True), alpha * v ** 2 / (2 * sigma ** 2), "D_alpha")

    # The code computes exactly this, as a rational, from the float sigma.
    from dpcore.accounting import GaussianEvent, ZCDPAccountant, gaussian_sigma
    acc = ZCDPAccountant()
    for s, delta in [(0.1, 1), (3.0, 2), (1e-3, 0.5)]:
        assert acc.rho(GaussianEvent(s, delta)) == Fraction(delta) ** 2 / (2 * Fraction(s) ** 2)
    assert acc.rho(GaussianEvent(0.0)) == float("inf")
    for rho in (Fraction(1, 3), 0.01, 2.5):
        assert acc.rho(GaussianEvent(gaussian_sigma(rho))) <= Fraction(rho)
