"""Claim: a weighted batch of marginals (marginal i scaled by w_i), or equivalently marginal i
measured with noise sigma / w_i, has L2 sensitivity ||w||_2 under add/remove-one-record; with
weights normalised to ||w||_2 = 1 the whole batch costs 1/(2 sigma^2) (one GaussianEvent).

Source: McKenna, Miklau & Sheldon 2021 (NIST-MST), Sec. 3: "the L2 sensitivity of any
marginal function M_C is 1"; the weighted form is how MST and AIM measure batches.

Preconditions: every record contributes a count of exactly 1 to exactly one cell of each
marginal (unit record weights; fractional or larger record weights scale the sensitivity).

Proof. Adding or removing a record changes marginal i by +-e_{c_i} (one cell by one), so the
concatenated vector (w_1 M_1, ..., w_k M_k) changes by (w_1 e_{c_1}, ..., w_k e_{c_k}), whose
squared L2 norm is sum_i w_i^2: the sensitivity is ||w||_2 (checked below for k = 3 with
symbolic cells). Releasing y_i = M_i + N(0, (sigma/w_i)^2 I) is the post-processing
y_i = z_i / w_i of z_i = w_i M_i + N(0, sigma^2 I), so both forms cost ||w||^2 / (2 sigma^2)
(proofs/gaussian.py), i.e. GaussianEvent(sigma, sensitivity=||w||_2). In floats the norm must
be rounded *up*: calibration.l2_sensitivity(w) returns the smallest float whose exact square
is >= sum_i w_i^2 (checked below), also for weights normalised in floating point.
"""
import math

import sympy as sp

from ._support import assert_equal

CLAIM = "weighted marginal batch has L2 sensitivity ||w||_2"


def check() -> None:
    w = sp.symbols("w1:4", positive=True)
    sizes = (3, 4, 2)
    for cells in [(0, 0, 0), (2, 1, 1), (1, 3, 0)]:  # where the record falls in each marginal
        diff = []
        for wi, n, c in zip(w, sizes, cells):
            diff += [wi if j == c else 0 for j in range(n)]
        assert_equal(sum(d ** 2 for d in diff), sum(wi ** 2 for wi in w), f"cells {cells}")
    # the two forms cost the same: marginal i alone at noise sigma/w_i costs w_i^2/(2 sigma^2)
    sigma = sp.Symbol("sigma", positive=True)
    assert_equal(sum(1 / (2 * (sigma / x) ** 2) for x in w), sum(x ** 2 for x in w) / (2 * sigma ** 2),
                 "per-marginal costs sum to the batch cost")
    # normalised weights: cost of the batch
    norm = sp.sqrt(sum(x ** 2 for x in w))
    assert_equal(sum((x / norm) ** 2 for x in w), 1, "normalised weights have unit norm")

    from fractions import Fraction
    from dpcore.accounting import l2_sensitivity
    from dpcore.accounting import GaussianEvent, ZCDPAccountant
    acc = ZCDPAccountant()
    exact_rho = getattr(acc, "exact_rho", acc.rho)
    for weights in ([1.0] * 3, [0.1, 0.2, 0.3], [1 / 3 ** 0.5] * 3, [2.5]):
        s = l2_sensitivity(weights)
        norm_sq = sum(Fraction(x) ** 2 for x in weights)
        # the smallest float whose exact square covers the squared norm
        assert Fraction(s) ** 2 >= norm_sq > Fraction(math.nextafter(s, 0)) ** 2
        # the accountant's batch event covers every marginal measured alone at sigma / w_i
        batch = exact_rho(GaussianEvent(2.0, s))
        alone = sum(Fraction(1) / (2 * (Fraction(2.0) / Fraction(x)) ** 2) for x in weights)
        assert batch >= alone and batch - alone <= alone * Fraction(1, 10 ** 15)
