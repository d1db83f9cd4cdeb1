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
Gaussian kernel, which is 1 (2; the check lets sympy integrate p^alpha q^(1-alpha) itself, for
symbolic alpha and at fixed orders, rather than assume this). Hence
    D_alpha = log(exp(alpha(alpha-1) v^2/(2 sigma^2))) / (alpha - 1) = alpha v^2 / (2 sigma^2)
           <= alpha Delta^2 / (2 sigma^2).
With sigma = 0 the outputs of neighbours have disjoint supports and the divergence is infinite,
so the accountant returns math.inf and the filter refuses (fail closed).

Code relying on it: ZCDPAccountant.rho(GaussianEvent), verify._cost, calibration.gaussian_sigma
(which returns the smallest float sigma whose cost is <= the target; checked below). The check
compares alpha times the accountant's exact cost with the integrated divergence at the exact
binary values of float sigmas, so a wrong constant in the accountant fails it.
"""
from fractions import Fraction

import sympy as sp

from ._support import assert_equal

CLAIM = "Gaussian mechanism is Delta^2/(2 sigma^2)-zCDP"


def renyi_divergence():
    """D_alpha(N(0, sigma^2) || N(v, sigma^2)) by symbolic integration, as a function of
    (alpha, v, sigma): nothing about its value is assumed."""
    x, v = sp.symbols("x v", real=True)
    alpha, sigma = sp.symbols("alpha sigma", positive=True)
    p = sp.exp(-x ** 2 / (2 * sigma ** 2)) / (sigma * sp.sqrt(2 * sp.pi))
    q = sp.exp(-(x - v) ** 2 / (2 * sigma ** 2)) / (sigma * sp.sqrt(2 * sp.pi))
    assert_equal(sp.integrate(p, (x, -sp.oo, sp.oo)), 1, "p is a density")
    # p^alpha q^(1-alpha), written as one exponential so sympy integrates it for symbolic alpha
    kernel = (sp.exp(-(alpha * x ** 2 + (1 - alpha) * (x - v) ** 2) / (2 * sigma ** 2))
              / (sigma * sp.sqrt(2 * sp.pi)))
    assert_equal(sp.powsimp(p ** alpha * q ** (1 - alpha), force=True).subs(alpha, 3),
                 kernel.subs(alpha, 3), "kernel is p^alpha q^(1-alpha)")
    integral = sp.simplify(sp.integrate(kernel, (x, -sp.oo, sp.oo)))
    return sp.simplify(sp.expand_log(sp.log(integral) / (alpha - 1), force=True)), (alpha, v, sigma)


def check() -> None:
    x, v, m = sp.symbols("x v m", real=True)
    alpha, sigma = sp.symbols("alpha sigma", positive=True)
    # (1) completing the square
    assert_equal(alpha * x ** 2 + (1 - alpha) * (x - v) ** 2,
                 (x - (1 - alpha) * v) ** 2 + alpha * (1 - alpha) * v ** 2, "completing the square")
    # (2) the divergence by integration, for symbolic alpha and at fixed orders (integrated
    # from the normalised densities themselves)
    d_alpha, (a_s, v_s, s_s) = renyi_divergence()
    assert_equal(d_alpha, a_s * v_s ** 2 / (2 * s_s ** 2), "D_alpha (symbolic alpha)")
    p = sp.exp(-x ** 2 / (2 * sigma ** 2)) / (sigma * sp.sqrt(2 * sp.pi))
    q = sp.exp(-(x - v) ** 2 / (2 * sigma ** 2)) / (sigma * sp.sqrt(2 * sp.pi))
    for a in (sp.Integer(2),):
        integral = sp.integrate(sp.powsimp(p ** a * q ** (1 - a), force=True), (x, -sp.oo, sp.oo))
        assert_equal(sp.expand_log(sp.log(integral) / (a - 1), force=True), a * v ** 2 / (2 * sigma ** 2),
                     f"D_alpha at alpha = {a}")

    # The code's cost, times alpha, is the integrated divergence at the worst shift v = Delta,
    # evaluated at the exact binary values of the float parameters.
    from dpcore.accounting import GaussianEvent, ZCDPAccountant, gaussian_sigma
    acc = ZCDPAccountant()
    exact_rho = getattr(acc, "exact_rho", acc.rho)  # the charge is this rounded up (cost_rounding)
    for s, delta in [(0.1, 1), (3.0, 2), (1e-3, 0.5), (1 / 3, 1.7)]:
        cost = exact_rho(GaussianEvent(s, delta))
        for a in (sp.Rational(101, 100), sp.Integer(2), sp.Integer(64)):
            div = d_alpha.subs({a_s: a, v_s: sp.Rational(Fraction(delta)), s_s: sp.Rational(Fraction(s))})
            assert sp.Rational(cost) * a == div, (s, delta, a)
        assert acc.rho(GaussianEvent(s, delta)) >= cost
    assert acc.rho(GaussianEvent(0.0)) == float("inf")
    for rho in (Fraction(1, 3), 0.01, 2.5):
        got = acc.rho(GaussianEvent(gaussian_sigma(rho)))
        assert got <= Fraction(rho) and got >= Fraction(rho) * (1 - Fraction(1, 10 ** 14)), (rho, got)
