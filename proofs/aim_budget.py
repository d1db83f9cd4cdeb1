"""Claim (AIM budget): with T = 16d rounds planned and a fraction alpha = 0.9 on measurement,
(i) initialisation measures k <= d one-way marginals at sigma_0 = sqrt(T/(2 alpha rho)),
    costing rho_0 = k alpha rho / T <= rho;
(ii) a round with (eps_t, sigma_t) costs eps_t^2/8 + 1/(2 sigma_t^2), which is rho/T at the
    initial eps_0 = sqrt(8 (1-alpha) rho / T), sigma_0;
(iii) the final round, with remainder R, eps = sqrt(8 (1-alpha) R) and sigma = sqrt(1/(2 alpha R)),
    costs exactly R;
(iv) annealing (eps -> 2 eps, sigma -> sigma/2) multiplies the round cost by exactly 4.

Source: McKenna, Mullins, Sheldon & Miklau 2022 (AIM), Alg. 2-4 and Theorem 1 (papers/aim.txt;
note the paper's proof writes "1/8 eps_t^2 / 8", a typo for eps_t^2/8).

Preconditions: 0 < alpha < 1, k <= d <= T, rho > 0, R > 0. Under the filter every charge is
exact, so the final round fits iff its exact cost <= the exact remainder: the mechanism takes
sigma = calibration.gaussian_sigma(alpha R) and eps = calibration.exponential_epsilon((1-alpha) R),
whose exact costs are <= their targets (checked below), so the last charge never overspends.

Proof. Algebra, checked symbolically below; composition of the rounds is
proofs/zcdp_composition.py (the stopping rule depends only on past outputs: a filter).
"""
from fractions import Fraction

import sympy as sp

from ._support import assert_equal

CLAIM = "AIM init <= rho, round cost rho/T, final round = remainder, annealing x4"


def check() -> None:
    rho, T, R = sp.symbols("rho T R", positive=True)
    k, d = sp.symbols("k d", positive=True, integer=True)
    al = sp.Symbol("alpha", positive=True)
    sigma0 = sp.sqrt(T / (2 * al * rho))
    eps0 = sp.sqrt(8 * (1 - al) * rho / T)
    # (i)
    rho0 = k / (2 * sigma0 ** 2)
    assert_equal(rho0, k * al * rho / T, "initialisation cost")
    # k <= T and alpha <= 1 give k alpha rho / T <= rho: rho - rho0 = rho (T - k alpha)/T
    assert_equal(rho - rho0, rho * (T - k * al) / T, "slack of the initialisation")

    def cost(eps, sigma):
        return eps ** 2 / 8 + 1 / (2 * sigma ** 2)
    # (ii)
    assert_equal(cost(eps0, sigma0), rho / T, "round cost")
    # (iii)
    assert_equal(cost(sp.sqrt(8 * (1 - al) * R), sp.sqrt(1 / (2 * al * R))), R, "final round")
    # (iv)
    e, s = sp.symbols("epsilon sigma", positive=True)
    assert_equal(cost(2 * e, s / 2), 4 * cost(e, s), "annealing")
    # paper's alpha = 0.9, T = 16 d
    assert_equal(cost(eps0, sigma0).subs({al: sp.Rational(9, 10), T: 16 * d}), rho / (16 * d), "AIM defaults")

    from dpcore.accounting import (ExponentialEvent, GaussianEvent, ZCDPAccountant,
                                   exponential_epsilon, gaussian_sigma)
    acc = ZCDPAccountant()
    for rem in (Fraction(1, 1000), Fraction(3, 7), 0.01497305767358853 / 3):
        rem = Fraction(rem)
        s = gaussian_sigma(Fraction(9, 10) * rem)
        e = exponential_epsilon(Fraction(1, 10) * rem)
        assert acc.rho(GaussianEvent(s)) + acc.rho(ExponentialEvent(e, 1)) <= rem
