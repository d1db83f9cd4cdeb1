"""Claim: FEM's query selection (``Curator.select_query``) scores q_i = s (c − c̄) − offset_i,
c the count of a marginal cell, c̄ the count of the records outside it, s = ±1, with
sensitivity 1 under add/remove-one neighbours; so each round is the exponential mechanism
``ExponentialEvent(eps0, 1)``, eps0^2/8-zCDP, and T rounds cost T eps0^2/8 (zCDP composition),
which admits more rounds than the paper's advanced composition for the same (eps, delta).

Sources: Vietri, Tian, Bun, Steinke, Wu (ICML 2020), Alg. 1 and Thm. 6 (pure eps0-DP EMs
composed by advanced composition, eps = T eps0^2/2 + eps0 sqrt(2 T ln(1/delta)), their Thm. 3);
Cesar & Rogers 2021 (bounded range -> eps^2/8-zCDP; proofs/exponential_mechanism.py); Bun &
Steinke 2016 Lemma 2.3 (zCDP composes additively; proofs/zcdp_composition.py); the
conversion to (eps, delta) is CKS 2020 (proofs/cks_conversion.py).

Preconditions: public offsets; the marginal r of each query is a public clique; records carry
weight d in [0, 1] (d = 1 without weights).

Proof. Adding a record of weight d to D puts it in exactly one cell z of M_r: if z = y then c
grows by d and c̄ is unchanged, else c̄ grows by d; so q_i changes by s d or −s d, at most 1 in
magnitude (symbolic check below); removal is the reverse. On the curator's fixed-point grid
each cell is floor(G x) and grows by an integer in [0, G] (proofs/exact_sampling.py), so the
grid score moves by at most G = one unit of sensitivity (exhaustive check for small grids).
The same scores are Curator.select's L1 scores: with reference 0 at y and R >= every count
elsewhere, ||M_r − ref||_1 = c + (k−1) R − c̄ (checked), so both methods release the same kind
of thing, a "selection" of sensitivity 1. Each round is then eps0-bounded-range and costs
eps0^2/8; T rounds cost T eps0^2/8 and ``exponential_rounds`` is the largest T that fits.
"""
import itertools
import math
from fractions import Fraction

import sympy as sp

from ._support import assert_equal, assert_true

CLAIM = "FEM selection has sensitivity 1; T rounds of eps0 cost T eps0^2/8 (more rounds than adv. comp.)"


def paper_rounds(epsilon: float, delta: float, epsilon0: float) -> float:
    """The paper's T (Alg. 1): the root of eps = T eps0^2/2 + eps0 sqrt(2 T ln(1/delta))."""
    a, b = epsilon0 ** 2 / 2, epsilon0 * math.sqrt(2 * math.log(1 / delta))
    root = (-b + math.sqrt(b * b + 4 * a * epsilon)) / (2 * a)   # sqrt(T), the positive root
    return root * root


def check() -> None:
    c, cbar, d = sp.symbols("c cbar d", nonnegative=True)
    for s in (1, -1):
        score = s * (c - cbar)
        inside = score.subs(c, c + d) - score
        outside = score.subs(cbar, cbar + d) - score
        assert_equal(inside, s * d, "a record in the cell moves the score by s d")
        assert_equal(outside, -s * d, "a record outside the cell moves the score by -s d")
        for change in (inside, outside):
            assert_true(sp.Abs(change).subs(d, 1) == 1 and sp.Abs(change).subs(d, 0) == 0,
                        "|change| <= 1 for d in [0, 1] (linear in d)")

    # Grid: cells floor(G x); a record of weight d = m/G' changes one cell by an integer in [0, G].
    G = 16
    for x in [Fraction(i, 7) for i in range(0, 30)]:
        for dd in [Fraction(j, 11) for j in range(0, 12)]:
            step = math.floor(G * (x + dd)) - math.floor(G * x)
            assert 0 <= step <= G, (x, dd, step)

    # Equivalence with Curator.select's L1 score (k = 3 cells, y = 0, R >= every count).
    c0, c1, c2, R = sp.symbols("c0 c1 c2 R", nonnegative=True)
    l1_pos = c0 + (R - c1) + (R - c2)            # |c0 - 0| + |c1 - R| + |c2 - R|
    assert_equal(l1_pos, (c0 - (c1 + c2)) + 2 * R, "positive query: L1 = (c - cbar) + (k-1) R")
    l1_neg = (R - c0) + c1 + c2                   # |c0 - R| + |c1 - 0| + |c2 - 0|
    assert_equal(l1_neg, -(c0 - (c1 + c2)) + R, "negated query: L1 = -(c - cbar) + R")

    # Composition and the rounds it allows, against the paper's advanced composition.
    from dpcore.accounting import ExponentialEvent, ZCDPAccountant, approx_dp_to_zcdp
    from dpcore.accounting.calibration import exponential_rounds
    acc = ZCDPAccountant()
    for rho, eps0 in ((Fraction(1, 100), 0.01), (Fraction(3, 7), 0.3), (Fraction(1, 8), 0.5)):
        T = exponential_rounds(rho, eps0)
        charge = acc.rho(ExponentialEvent(eps0, 1))
        assert T * charge <= rho < (T + 1) * charge, (rho, eps0, T)
    n = 48842  # ADULT, delta = 1/n^2 as in the paper
    gains = []
    for eps, eps0 in ((0.1, 0.0025), (1.0, 0.009), (1.0, 0.0025)):
        ours = exponential_rounds(approx_dp_to_zcdp(eps, 1 / n ** 2), eps0)
        theirs = paper_rounds(eps, 1 / n ** 2, eps0)
        gains.append(ours / theirs)
        assert ours > theirs, (eps, eps0, ours, theirs)
    assert abs(paper_rounds(0.1, 1 / n ** 2, 0.0025) - 37) < 1   # the notes' table (§3.6)
    assert min(gains) > 1.5, gains
    # the paper's T, put back into its formula, gives its epsilon
    for eps, eps0 in itertools.product((0.1, 1.0), (0.0025, 0.019)):
        T = paper_rounds(eps, 1e-9, eps0)
        assert abs(T * eps0 ** 2 / 2 + eps0 * math.sqrt(2 * T * math.log(1e9)) - eps) < 1e-9
