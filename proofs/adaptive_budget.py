"""Claim (Adaptive Measurements budget): T rounds of k exponential-mechanism selections with
epsilon = 2 alpha eps0 and k Gaussian measurements of sensitivity 1 with sigma =
1 / ((1 - alpha) eps0), where eps0 = sqrt(2 rho / (k T (alpha^2 + (1 - alpha)^2))) and
0 < alpha < 1, are rho-zCDP in total; dpcore's calibration
(``adaptive_measurements_round``) charges at most rho for them, a few ulps below it.

Source: Liu, Vietri & Wu, "Iterative Methods for Private Synthetic Data: Unifying Framework and
New Methods", Sec. 3.1, Theorem 1 and its proof (the proof's k-query formula; the main text's
eps0 is the case k = 1), App. A.1 (marginal trick); notes-pep-gem-privpgd-fem.md section 1.3.

Conventions. The paper samples Pr[q] ∝ exp(alpha eps0 n |q(P) - q(D)|) with normalised scores
of sensitivity 1/n, and adds N(0, (1 / (n (1 - alpha) eps0))^2) to normalised answers. In counts
(multiply by n) the score has sensitivity 1 and the noise standard deviation is
1 / ((1 - alpha) eps0); dpcore's exponential mechanism is exp(epsilon q / (2 Delta)), so the
paper's exponent is epsilon = 2 alpha eps0 with Delta = 1. With whole marginals (the marginal
trick) the paper's sensitivity is sqrt(2) for substitution neighbours (one record changes two
cells by 1); dpcore's neighbours add or remove one record, which changes one cell: L2
sensitivity 1 for the measurement and L1 sensitivity 1 for the quality ||M_r(D) - ref||_1.

Preconditions: rho > 0, T, k >= 1 integers, alpha in (0, 1); the exponential mechanism with
parameter epsilon is epsilon^2/8-zCDP (proofs/exponential_mechanism.py); a sensitivity-1
Gaussian is 1/(2 sigma^2)-zCDP (proofs/gaussian.py); zCDP composes additively, adaptively
(proofs/zcdp_composition.py).

Proof. Per pair: (2 alpha eps0)^2 / 8 + (1 - alpha)^2 eps0^2 / 2 = (alpha^2 + (1 - alpha)^2)
eps0^2 / 2; times k T this is rho by the choice of eps0 (checked symbolically below). The
calibration sets the targets rho alpha^2 / (k T s) and rho (1 - alpha)^2 / (k T s),
s = alpha^2 + (1 - alpha)^2, which are exactly these per-pair costs and sum over k T pairs to
rho; ``exponential_epsilon`` and ``gaussian_sigma`` return floats whose charged costs are at most
their targets (proofs/cost_rounding.py). Checked below on the real calibration and filter, and
on the real mechanism, whose ledger must hold k T selection/measurement pairs and one retired
residue, summing to the budget exactly.
"""
from fractions import Fraction

import sympy as sp

from ._support import assert_equal, assert_true

CLAIM = "Adaptive Measurements (Theorem 1, k per round) spends at most rho"


def check() -> None:
    rho, T, k, n, c = sp.symbols("rho T k n c", positive=True)
    a = sp.Symbol("alpha", positive=True)
    s = a ** 2 + (1 - a) ** 2
    eps0 = sp.sqrt(2 * rho / (k * T * s))
    eps, sigma = 2 * a * eps0, 1 / ((1 - a) * eps0)
    pair = eps ** 2 / 8 + 1 / (2 * sigma ** 2)
    assert_equal(k * T * pair, rho, "k T pairs cost rho")
    assert_equal(eps ** 2 / 8, rho * a ** 2 / (k * T * s), "selection target")
    assert_equal(1 / (2 * sigma ** 2), rho * (1 - a) ** 2 / (k * T * s), "measurement target")
    # The paper's exponent on a normalised score c/n equals dpcore's on the count score c.
    assert_equal(a * eps0 * n * (c / n), eps * c / 2, "exponent conversion")
    # Its noise on normalised answers is sigma / n.
    assert_equal(1 / (n * (1 - a) * eps0), sigma / n, "noise conversion")
    # Marginal sensitivity: substitution moves two cells by 1, add/remove one cell.
    assert_equal(sp.sqrt(1 ** 2 + 1 ** 2), sp.sqrt(2), "substitution L2")
    assert_equal(sp.sqrt(sp.Integer(1) ** 2), 1, "add/remove L2")

    from dpcore.accounting import ExponentialEvent, GaussianEvent, PrivacyFilter
    from dpcore.accounting.calibration import adaptive_measurements_round
    cases = [(Fraction(1, 2), 1, 1, 0.5), (Fraction(1, 100), 50, 1, 0.5),
             (Fraction(3, 7), 13, 4, 2 / 3), (Fraction(1, 10 ** 6), 200, 3, 0.1),
             (Fraction(5), 7, 2, 0.9)]
    for budget, rounds, per_round, alpha in cases:
        eps_f, sigma_f = adaptive_measurements_round(budget, rounds, per_round, alpha)
        numeric = {rho: budget, T: rounds, k: per_round, a: sp.Rational(Fraction(alpha))}
        assert abs(eps_f / float(eps.subs(numeric)) - 1) < 1e-12, (eps_f, budget)
        assert abs(sigma_f / float(sigma.subs(numeric)) - 1) < 1e-12, (sigma_f, budget)
        filt = PrivacyFilter(budget)
        for _ in range(rounds * per_round):   # raises BudgetExceededError on an overspend
            filt.charge(ExponentialEvent(eps_f, 1))
            filt.charge(GaussianEvent(sigma_f, 1))
        assert_true(filt.spent <= budget, "charged total within the budget")
        assert_true(budget - filt.spent <= budget * Fraction(1, 10 ** 12), "negligible residue")

    # The real mechanism: k T (selection, measurement) pairs, then the retired residue; the
    # ledger sums to the budget up to the cost grid (retire charges a grid value).
    import numpy as np
    from dpcore import Curator, Dataset, Domain
    from mechanisms.adaptive import MWEMUpdate, PEPUpdate, adaptive_measurements
    domain = Domain(("a", "b", "c"), (2, 3, 2))
    data = Dataset(np.array([[0, 1, 1], [1, 2, 0], [1, 0, 1], [0, 0, 0]]), domain)
    for family, budget, rounds, per_round in ((MWEMUpdate(), Fraction(1, 3), 3, 2),
                                              (PEPUpdate(), Fraction(2, 7), 2, 1)):
        curator = Curator(data, PrivacyFilter(budget), seed=0)
        adaptive_measurements(curator, [("a", "b"), ("b", "c"), ("a", "c")], family,
                              rounds=rounds, per_round=per_round, alpha=0.6, seed=0)
        entries = [e for e in curator.privacy_filter.ledger.entries if isinstance(e.what, dict)]
        kinds = [e.what.get("release") for e in entries]
        assert kinds == ["selection", "marginal"] * (rounds * per_round) + ["none"], kinds
        assert all(e.what["sensitivity"] == 1 for e in entries if e.what["release"] == "selection")
        spent = curator.privacy_filter.spent  # exact when the budget is on the 2^-128 grid
        assert spent <= budget and budget - spent < Fraction(1, 1 << 128), float(budget - spent)
        assert entries[-1].rho <= budget / 10 ** 12
