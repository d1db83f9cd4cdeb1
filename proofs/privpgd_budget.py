"""Claim (PrivPGD budget and neighbours): PrivPGD with budget rho spends s rho on the noisy
count (one 1-way marginal at sigma_0 = sqrt(1 / (2 s rho))) and (1 - s) rho on its P attribute
pairs, pair i at sigma_i = sqrt(1 / (2 share_i)) with share_i = (what the pairs have left) /
(P - i), so the shares are exactly (1 - s) rho / P each and the total is rho. Under
add/remove neighbours each count marginal has L2 sensitivity 1; under the paper's substitution
neighbours it has sqrt(2), so the same sigma costs 2 / (2 sigma^2): the run is 2 rho-zCDP for
substitution neighbours, and the paper's calibration for substitution at budget rho uses
sigma_sub = sqrt(2) sigma. With a protected statistic (ProtectedQuery, share p), the soft
count takes p rho after the count (Curator.measure_soft_count, sensitivity 1:
proofs/soft_count.py) and the pairs share (1 - s - p) rho the same way; the total is rho.

Preconditions: P >= 1 attribute pairs, 0 < s < 1 (the planner checks both); counts without
record weights (each record adds 1 to one cell of each marginal).

Source: Donhauser et al. 2024 (Def. 2.1, Sec. 4 "Implementation of PrivPGD"; their code
scales the unit-sensitivity sigma by sqrt(2)); AIM paper Prop. 1 for the Gaussian cost
(proofs/gaussian.py); zCDP composition (proofs/zcdp_composition.py).

Proof. Gaussian cost Delta^2 / (2 sigma^2): with Delta = 1 and sigma_0 the count costs s rho;
by induction the pair shares are each L / (P - i) of L = (1 - s) rho - i (1 - s) rho / P left,
i.e. (1 - s) rho / P, summing to (1 - s) rho; composition adds (checked). Substitution: one
record changes from cell u to cell v of a marginal, the count vector moves by e_v - e_u, of L2
norm sqrt(2), so the cost is 2 / (2 sigma^2) = 2 times the add/remove cost (checked). In floats
the mechanism uses calibration.gaussian_sigma on each exact share, whose cost is at most the
share, and retires the residue, so the exact total is the budget (checked for sample budgets,
and on the ledger of the real ``privpgd`` run on a small domain, with and without a protected
statistic: the count's share, P equal pair charges and the total).
"""
from fractions import Fraction

import sympy as sp

from ._support import assert_equal

CLAIM = "PrivPGD: count + P equal pair shares sum to rho; substitution costs twice add/remove"


def check() -> None:
    rho, s = sp.symbols("rho s", positive=True)
    P = 7  # the share recursion, unrolled for a fixed pair count
    count = 1 / (2 * sp.sqrt(1 / (2 * s * rho)) ** 2)
    assert_equal(count, s * rho, "count cost")
    left, shares = (1 - s) * rho, []
    for i in range(P):
        share = left / (P - i)
        shares.append(share)
        left = left - share
    for share in shares:
        assert_equal(share, (1 - s) * rho / P, "equal pair shares")
    assert_equal(count + sum(shares), rho, "total")
    p = sp.Symbol("p", positive=True)       # the protected statistic's share
    left = (1 - s - p) * rho
    protected = []
    for i in range(P):
        protected.append(left / (P - i))
        left = left - protected[-1]
    assert_equal(count + p * rho + sum(protected), rho, "total with a protected statistic")
    sigma = sp.Symbol("sigma", positive=True)
    add_remove = 1 ** 2 / (2 * sigma ** 2)
    substitution = sp.sqrt(1 ** 2 + 1 ** 2) ** 2 / (2 * sigma ** 2)
    assert_equal(substitution, 2 * add_remove, "substitution sensitivity sqrt(2)")
    assert_equal(substitution.subs(sigma, sp.sqrt(2) * sigma), add_remove, "sigma_sub = sqrt(2) sigma")

    from dpcore.accounting import GaussianEvent, ZCDPAccountant, gaussian_sigma
    acc = ZCDPAccountant()
    for budget, pairs, share, protect in [(Fraction(1, 100), 91, Fraction(1, 100), 0),
                                          (Fraction(7, 3), 1, Fraction(1, 2), 0),
                                          (0.0243559703595, 36, 0.05, 0),
                                          (Fraction(1, 7), 91, Fraction(1, 100), 0.06),
                                          (2.5, 3, 0.3, 0.6)]:
        b, total = Fraction(budget), Fraction(0)
        total += acc.rho(GaussianEvent(gaussian_sigma(b * Fraction(share))))
        if protect:         # the run's order: count, soft count, then the pairs
            total += acc.rho(GaussianEvent(gaussian_sigma(b * Fraction(protect))))
        end = total + (b - b * Fraction(share) - b * Fraction(protect))
        for i in range(pairs):
            total += acc.rho(GaussianEvent(gaussian_sigma((end - total) / (pairs - i))))
        assert total <= b
    _check_real_code()


def _check_real_code() -> None:
    """The ledger of the real mechanism: the count costs (at most) s rho, the soft count p rho,
    each of the P pairs (at most) (1 - s - p) rho / P, and the run spends exactly rho."""
    import numpy as np

    from dpcore import Curator, Dataset, Domain
    from dpcore.accounting import PrivacyFilter
    from mechanisms.privpgd import privpgd
    domain = Domain(("a", "b", "c"), (3, 2, 4))
    records = np.random.default_rng(5).integers(0, 2, size=(40, 3))
    pairs = 3
    for budget, share, protect in ((Fraction(1, 10), Fraction(1, 100), None),
                                   (Fraction(2), Fraction(3, 10), Fraction(3, 20))):
        f = PrivacyFilter(budget)
        spec = None if protect is None else {"weights": {"a": 1.0, "c": -0.5}, "threshold": 0.1,
                                              "share": float(protect)}
        privpgd(Curator(Dataset(records, domain), f, seed=1), workload="all-2way", particles=8,
                epochs=1, total_share=float(share), protect=spec, seed=2)
        entries = f.ledger.charges
        releases = [e for e in entries if e.what.get("release") != "none"]
        count, rest = releases[0], releases[1:]
        assert len(count.what["attrs"]) == 1 and count.rho <= budget * share
        if protect is not None:
            soft, rest = rest[0], rest[1:]
            assert soft.what["release"] == "soft_count" and soft.rho <= budget * protect
        pair_share = budget * (1 - share - (protect or 0)) / pairs
        assert len(rest) == pairs and all(len(e.what["attrs"]) == 2 for e in rest)
        # each pair's cost is its share of what is left, which only grows by the earlier
        # charges' rounding: within a hair of the equal share
        assert all(abs(e.rho - pair_share) <= pair_share / 10 ** 6 for e in rest)
        # the whole budget, up to the cost grid (2^-128: costs round up, the residue down)
        assert 0 <= budget - f.spent < Fraction(1, 2 ** 120)
