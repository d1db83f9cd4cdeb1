"""Claim (composition and the filter): (a) if M_1 is rho_1-zCDP and M_2 (possibly chosen from
M_1's output) is rho_2-zCDP, releasing both is (rho_1 + rho_2)-zCDP; (b) fully adaptive
filter: if at every step the analyst picks the next mechanism and its rho_t from past outputs,
and the interaction continues only while sum_t rho_t <= rho, the whole transcript is rho-zCDP.

Sources: (a) Bun & Steinke 2016, Lemma 2.3 (adaptive composition). (b) Feldman & Zrnic 2021
(arXiv 2008.11193), Thm 4.3 (Renyi filter) and Remark 4.4 (zCDP); Whitehouse, Ramdas, Rogers
& Wu 2023 (arXiv 2203.05481) Thm 1 for the approximate-zCDP filter; OpenDP's proof of
CompositionMeasure_for_ZeroConcentratedDivergence (the filter 1[sum rho_i <= rho]).

Preconditions: each mechanism's rho_t is fixed before it runs (a function of past outputs
only) and the stop decision uses only the rho_t (not the data). PrivacyFilter.charge checks
the predicate on the *exact* rational sum before the mechanism draws any noise.

Proof. Fix alpha > 1. zCDP of mechanism t says it is (alpha, alpha rho_t)-RDP, where rho_t is
a function of the past transcript. Feldman & Zrnic's Renyi filter theorem: if the RDP
parameters eps_t(alpha) are chosen adaptively and sum_t eps_t(alpha) <= B holds almost surely,
the adaptive composition is (alpha, B)-RDP. The filter guarantees sum_t rho_t <= rho at every
stop, so sum_t alpha rho_t = alpha sum_t rho_t <= alpha rho =: B (linearity checked below).
As alpha was arbitrary, the transcript is rho-zCDP. (a) is the special case with fixed rho_t.
A refused request runs nothing, and whether it is refused is a function of the requested rho_t
and the running sum only (public, data-independent quantities), so refusing is equivalent to the
analyst not having asked: a later, smaller request that fits is still covered (the filter is not
"exhausted" by a refusal, unlike OpenDP's make_privacy_filter, and like Tumult's accountant).
The filter's arithmetic is exact (fractions.Fraction), so "sum <= budget" has no rounding; the
check below exercises the implementation at the boundary.
"""
from fractions import Fraction

import sympy as sp

from ._support import assert_equal

CLAIM = "zCDP composes additively; the exact-sum filter is valid under full adaptivity"


def check() -> None:
    alpha, rho = sp.symbols("alpha rho", positive=True)
    r = sp.symbols("r1:6", nonnegative=True)
    assert_equal(sum(alpha * ri for ri in r), alpha * sum(r), "per-order RDP sums are linear")
    # alpha rho - alpha s = alpha (rho - s): a product of two non-negative factors when s <= rho
    s = sp.Symbol("s", nonnegative=True)
    assert_equal(alpha * rho - alpha * s, alpha * (rho - s), "alpha B - alpha sum factorises")

    from dpcore.accounting import BudgetExceededError, PrivacyFilter, ZCDPEvent
    f = PrivacyFilter(Fraction(1, 3))
    for _ in range(3):
        f.charge(ZCDPEvent(Fraction(1, 9)))
    assert f.spent == f.budget
    try:
        f.charge(ZCDPEvent(Fraction(1, 10 ** 50)))
    except BudgetExceededError:
        pass
    else:
        raise AssertionError("filter accepted a charge beyond its budget")
    assert f.spent == Fraction(1, 3) and len(f.ledger) == 3
