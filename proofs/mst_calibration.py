"""Claim (MST per-clique calibration): mechanisms/mst.py ``_measure_batch`` measures cliques
C_1..C_k with weights w_i, calibrating clique i to
    share_i = left_i * w_i^2 / (w_i^2 + ... + w_k^2),   left_i = budget - (spent so far in the batch),
with sigma_i = gaussian_sigma(share_i). Then the batch's charged costs sum to at most ``budget``
(never more, whatever the rounding of sigma or of the recorded costs onto the 2^-128 grid), each
cost is share_i up to that rounding, and the total falls short of ``budget`` by at most the
rounding (k float ulps plus k grid steps), so the residue retired afterwards is negligible.

Source: McKenna, Miklau & Sheldon 2021 (NIST-MST), Alg. 1 (weighted Gaussian measurements with
normalised weights: marginal i at noise sigma / w_i, so costs proportional to w_i^2) and
proofs/weighted_marginals.py; the sequential form is dpcore's.

Preconditions: budget > 0 rational; weights > 0; each recorded cost c_i satisfies
exact_i <= c_i <= round_cost_up(exact_i), exact_i = 1/(2 sigma_i^2) <= share_i (calibration
rounds sigma up), and the calibration target of the last clique is on the cost grid or the
recorded cost is exact (see the last paragraph).

Proof. Induction on i with invariant left_i >= 0: share_i <= left_i (the weight ratio is <= 1,
= 1 for i = k), and clique i's recorded cost c_i <= share_i whenever c_i does not exceed its
target, so left_{i+1} = left_i - c_i >= 0. At i = k the share is all of left_k, so the batch
total is budget - left_k + c_k <= budget. Telescoping (checked symbolically below for k = 3
with exact shares): the exact shares are budget w_i^2 / sum_j w_j^2 and sum to budget. Rounding
a cost *up* onto the grid can exceed its target by < 2^-128 (proofs/cost_rounding.py), so for
the last clique the code must calibrate to round_cost_down(left_k) (or to a grid-valued left_k):
the check exercises the real code with both the current exact costs and grid-rounded costs,
including a budget small enough that the float ulp of sigma is below the grid step.
"""
from fractions import Fraction

import numpy as np
import sympy as sp

from ._support import assert_equal

GRID = Fraction(1, 1 << 128)
CLAIM = "MST's sequential per-clique calibration sums to at most the batch budget"


class _Filter:
    """Records costs as the ledger does: exact, or rounded up onto the 2^-128 grid."""

    def __init__(self, rounding):
        self.spent = Fraction(0)
        self.costs = []
        self._rounding = rounding

    def charge_sigma(self, sigma):
        exact = Fraction(1) / (2 * Fraction(sigma) ** 2)
        cost = self._rounding(exact)
        assert exact <= cost < exact + GRID
        self.costs.append(cost)
        self.spent += cost


class _Curator:
    def __init__(self, rounding, cells=3):
        self.privacy_filter = _Filter(rounding)
        self._cells = cells

    def measure(self, clique, sigma, *, discrete=False):
        self.privacy_filter.charge_sigma(sigma)
        return np.zeros(self._cells)


def _symbolic():
    b = sp.Symbol("b", positive=True)
    w = sp.symbols("w1:4", positive=True)
    spent, shares = 0, []
    for i in range(3):
        share = (b - spent) * w[i] ** 2 / sum(x ** 2 for x in w[i:])
        shares.append(share)
        spent += share
    for i in range(3):
        assert_equal(shares[i], b * w[i] ** 2 / sum(x ** 2 for x in w), f"share {i}")
    assert_equal(spent, b, "shares sum to the batch budget")


def check() -> None:
    _symbolic()

    from dpcore.accounting._numbers import round_cost_up
    from mechanisms.mst import _measure_batch

    def log(*args):
        pass

    cases = [
        (Fraction(1, 3), [("a", "b"), ("b", "c"), ("c", "d")], {}),
        (Fraction(2, 7), [("a", "b"), ("b", "c"), ("c", "d"), ("a", "d")],
         {("a", "b"): 3.0, ("c", "d"): 0.1, ("a", "d"): 1 / 3}),
        (Fraction(1), [("a", "b")], {("a", "b"): 2.0}),
        (Fraction(0.0243559703595) / 3, [(str(i), str(i + 1)) for i in range(12)],
         {(str(i), str(i + 1)): 1 + i / 7 for i in range(12)}),
        (Fraction(1, 3 * 10 ** 30), [("a", "b"), ("b", "c")], {("b", "c"): 0.5}),  # ulp < grid
    ]
    for rounding in (Fraction, round_cost_up):
        for budget, cliques, weights in cases:
            curator = _Curator(rounding)
            out = _measure_batch(curator, cliques, budget, weights, log, False)
            costs = curator.privacy_filter.costs
            assert len(out) == len(costs) == len(cliques)
            total = sum(costs)
            assert total <= budget, (rounding.__name__, budget, float(total - budget))
            # every share as planned: budget w_i^2 / sum w^2, up to the float calibration
            w2 = [Fraction(weights.get(c, 1.0)) ** 2 for c in cliques]
            slack = 2 * len(cliques) * GRID  # targets rounded down, costs up, once per clique
            for cost, wi in zip(costs, w2):
                planned = budget * wi / sum(w2)
                assert abs(cost - planned) <= planned / 10 ** 12 + slack, (cost, planned)
            assert budget - total <= budget * len(cliques) / 10 ** 14 + slack, float(budget - total)

    # the real filter and curator, as the mechanism runs it
    from dpcore import Dataset, Domain
    from dpcore.accounting import PrivacyFilter
    from dpcore.curator import Curator
    domain = Domain(("a", "b", "c"), (2, 3, 2))
    data = Dataset(np.array([[0, 1, 1], [1, 2, 0], [1, 0, 1]]), domain)
    for budget in (Fraction(1, 3), Fraction(1, 3 * 10 ** 30)):
        curator = Curator(data, PrivacyFilter(1), seed=0)
        _measure_batch(curator, [("a", "b"), ("b", "c"), ("a", "c")], budget,
                       {("a", "b"): 2.0}, log, False)
        assert curator.privacy_filter.spent <= budget
