"""Claim (MST budget split): MST with total budget rho spends rho/3 measuring the one-way
marginals (one weighted batch, ||w||_2 = 1, sigma = sqrt(3/(2 rho))), rho/3 on r - 1
exponential-mechanism selections with eps = sqrt(8 (rho/3) / (r - 1)) each, and rho/3 measuring
the selected marginals (another normalised batch at the same sigma): exactly rho in total.

Source: McKenna, Miklau & Sheldon 2021, MST (Alg. 9-10, Sec. 6); private-pgm mst.py and
smartnoise mst.py use this calibration (notes-accounting.md, section 6).

Preconditions: r >= 2 attributes (r = 1 has no selection step; the split then divides by 0);
weights normalised to unit L2 norm (proofs/weighted_marginals.py); costs from
proofs/gaussian.py and proofs/exponential_mechanism.py.

Proof. Batch cost 1/(2 sigma^2) = rho/3; each selection costs eps^2/8 = (rho/3)/(r-1), times
r - 1 selections = rho/3; the sum is rho (checked). In floats the mechanism uses
calibration.gaussian_sigma(rho/3) and calibration.exponential_epsilon(rho/(3(r-1))), whose exact
costs are <= their targets, so the exact total is <= rho (checked for sample budgets).
"""
from fractions import Fraction

import sympy as sp

from ._support import assert_equal

CLAIM = "MST split rho/3 + rho/3 + rho/3 sums to exactly rho"


def check() -> None:
    rho = sp.Symbol("rho", positive=True)
    r = sp.Symbol("r", integer=True, positive=True)
    sigma = sp.sqrt(3 / (2 * rho))
    eps = sp.sqrt(8 * (rho / 3) / (r - 1))
    batch = 1 / (2 * sigma ** 2)
    assert_equal(batch, rho / 3, "measurement batch")
    select = (r - 1) * eps ** 2 / 8
    assert_equal(select, rho / 3, "r - 1 selections")
    assert_equal(batch + select + batch, rho, "total")

    from dpcore.accounting import (ExponentialEvent, GaussianEvent, ZCDPAccountant,
                                   exponential_epsilon, gaussian_sigma)
    acc = ZCDPAccountant()
    for budget, attrs in [(Fraction(1, 100), 15), (Fraction(7, 3), 2), (0.0243559703595, 40)]:
        b = Fraction(budget)
        s = gaussian_sigma(b / 3)
        e = exponential_epsilon(b / 3 / (attrs - 1))
        total = 2 * acc.rho(GaussianEvent(s)) + (attrs - 1) * acc.rho(ExponentialEvent(e, 1))
        assert total <= b
