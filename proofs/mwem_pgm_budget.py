"""Claim (MWEM+PGM per-round cost): with T rounds and a fraction a of each round's budget on
measurement, eps = sqrt(8 (1-a) rho / T) and sigma = sqrt(T / (2 a rho)) cost exactly rho/T per
round; the issue's instance a = 1/2 is eps = 2 sqrt(rho/T), sigma = sqrt(T/rho).

Source: McKenna, Mullins, Sheldon & Miklau 2022 (AIM paper), Alg. 1 (MWEM+PGM); private-pgm
mwem+pgm.py (notes-accounting.md, section 6).

Preconditions: T >= 1, 0 < a < 1, rho > 0; each round is one exponential mechanism
(proofs/exponential_mechanism.py) and one sensitivity-1 Gaussian measurement (proofs/gaussian.py).

Proof. eps^2/8 + 1/(2 sigma^2) = (1-a) rho/T + a rho/T = rho/T; T rounds compose to rho
(proofs/zcdp_composition.py). Checked symbolically below, and on the real mechanism: the
ledger of mechanisms.mwem.mwem on a tiny dataset holds T (selection, measurement) pairs of
budget/(2T) each up to float calibration, no round above its share of what was left, and a
negligible retired residue.
"""
from fractions import Fraction

import sympy as sp

from ._support import assert_equal

CLAIM = "MWEM+PGM costs exactly rho/T per round"


def check() -> None:
    rho, T = sp.symbols("rho T", positive=True)
    a = sp.Symbol("a", positive=True)
    eps = sp.sqrt(8 * (1 - a) * rho / T)
    sigma = sp.sqrt(T / (2 * a * rho))
    assert_equal(eps ** 2 / 8 + 1 / (2 * sigma ** 2), rho / T, "general split")
    eps_half, sigma_half = 2 * sp.sqrt(rho / T), sp.sqrt(T / rho)
    assert_equal(eps_half, eps.subs(a, sp.Rational(1, 2)), "eps at a = 1/2")
    assert_equal(sigma_half, sigma.subs(a, sp.Rational(1, 2)), "sigma at a = 1/2")
    assert_equal(eps_half ** 2 / 8 + 1 / (2 * sigma_half ** 2), rho / T, "issue's instance")

    # The real mechanism on a tiny dataset: each round's selection and measurement each cost
    # budget/(2T) up to float calibration, a round never exceeds its share, and the rounds
    # plus the retired residue spend exactly the budget.
    import numpy as np
    from dpcore import Dataset, Domain
    from dpcore.accounting import PrivacyFilter
    from dpcore.curator import Curator
    from mechanisms.mwem import mwem
    domain = Domain(("a", "b", "c"), (2, 3, 2))
    data = Dataset(np.array([[0, 1, 1], [1, 2, 0], [1, 0, 1], [0, 0, 0]]), domain)
    for budget, rounds in ((Fraction(1, 3), 3), (Fraction(2, 7), 1), (Fraction(1, 10 ** 6), 4)):
        curator = Curator(data, PrivacyFilter(budget), seed=0)
        mwem(curator, [("a", "b"), ("b", "c"), ("a", "c")], rounds=rounds, round_iters=3,
             estimate_options={"max_iters": 3})
        entries = [e for e in curator.privacy_filter.ledger.entries if isinstance(e.what, dict)]
        kinds = [e.what.get("release") for e in entries]
        assert kinds == ["selection", "marginal"] * rounds + ["none"], kinds
        half = budget / (2 * rounds)
        for e in entries[:-1]:
            assert half * (1 - Fraction(1, 10 ** 12)) <= e.rho <= budget / rounds, (float(e.rho), float(half))
        for t in range(rounds):  # round t never exceeds what it had, remaining/(T - t)
            before = sum((e.rho for e in entries[:2 * t]), Fraction(0))
            assert entries[2 * t].rho + entries[2 * t + 1].rho <= (budget - before) / (rounds - t)
        residue = entries[-1].rho
        assert residue <= budget / 10 ** 12 and curator.privacy_filter.spent <= budget
