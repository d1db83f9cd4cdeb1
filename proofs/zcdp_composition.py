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
The filter's arithmetic is exact (fractions.Fraction), so "sum <= budget" has no rounding.

The check (i) computes exact Renyi divergences (40 digits) of small adaptive transcripts: an
exponential mechanism whose output picks the epsilon of a second one, run on neighbouring score
vectors (every shift in {-Delta, 0, Delta}^3), and compares them with alpha times the sum of the
per-step costs, both with a fixed second cost (additivity is exact for independent steps) and
under a filter that runs the second step only when the sum fits; (ii) drives the real
PrivacyFilter through *every* request sequence of length <= 4 from a set of five costs (every
deterministic adaptive analyst is one path of that tree): it must accept exactly the requests
whose charged cost fits the remaining budget, leave everything unchanged on a refusal, and never
hold accepted requests whose exact costs sum above the budget.
"""
import itertools
from fractions import Fraction

import mpmath

CLAIM = "zCDP composes additively; the exact-sum filter is valid under full adaptivity"


def _em(scores, eps):
    w = [mpmath.exp(eps * q / 2) for q in scores]  # Delta = 1
    z = mpmath.fsum(w)
    return [x / z for x in w]


def _renyi(p, q, alpha):
    return mpmath.log(mpmath.fsum(a ** alpha * b ** (1 - alpha) for a, b in zip(p, q))) / (alpha - 1)


def _transcript(scores, eps1, eps2_of, rounds2):
    """Joint law of (y1, y2): y1 ~ EM(eps1), then y2 ~ EM(eps2_of[y1]) or the constant -1 when
    eps2_of[y1] is None (the filter refused the second step)."""
    out = {}
    for y1, p1 in enumerate(_em(scores, eps1)):
        e2 = eps2_of[y1]
        if e2 is None:
            out[(y1, -1)] = p1
        else:
            for y2, p2 in enumerate(_em(rounds2, e2)):
                out[(y1, y2)] = p1 * p2
    return out


def _adaptive_divergences() -> None:
    base = [mpmath.mpf(x) for x in (0.3, -1.2, 2.0)]
    with mpmath.workdps(40):
        eps1 = mpmath.mpf(1)
        for shift in itertools.product((-1, 0, 1), repeat=3):
            other = [b + s for b, s in zip(base, shift)]
            for eps2_of in ([mpmath.mpf(2)] * 3, [mpmath.mpf(0.5), mpmath.mpf(2), mpmath.mpf(3)]):
                # the second step scores the same data (adaptive: its epsilon depends on y1)
                p = _transcript(base, eps1, eps2_of, base)
                q = _transcript(other, eps1, eps2_of, other)
                for alpha in (mpmath.mpf(1.5), mpmath.mpf(4), mpmath.mpf(32)):
                    keys = sorted(p)
                    div = _renyi([p[k] for k in keys], [q[k] for k in keys], alpha)
                    bound = alpha * (eps1 ** 2 / 8 + max(eps2_of) ** 2 / 8)
                    assert div <= bound * (1 + mpmath.mpf(10) ** -25), (shift, alpha, div, bound)
                    if len(set(eps2_of)) == 1:  # independent steps: divergences add exactly
                        d1 = _renyi(_em(base, eps1), _em(other, eps1), alpha)
                        d2 = _renyi(_em(base, eps2_of[0]), _em(other, eps2_of[0]), alpha)
                        assert abs(div - d1 - d2) <= mpmath.mpf(10) ** -30 * (1 + div), (div, d1, d2)
            # filter with budget B = 1/8 + 1/2: step 2 at eps 2 (cost 1/2) runs only if it fits
            # after step 1 (cost 1/8); at eps 3 (cost 9/8) it is refused and outputs nothing.
            budget = eps1 ** 2 / 8 + mpmath.mpf(1) / 2
            eps2_of = [mpmath.mpf(2), None, mpmath.mpf(2)]
            p, q = _transcript(base, eps1, eps2_of, base), _transcript(other, eps1, eps2_of, other)
            for alpha in (mpmath.mpf(1.5), mpmath.mpf(4), mpmath.mpf(32)):
                keys = sorted(p)
                div = _renyi([p[k] for k in keys], [q[k] for k in keys], alpha)
                assert div <= alpha * budget * (1 + mpmath.mpf(10) ** -25), (shift, alpha, div)


def _replay(prefix, budget, acc, exact_rho, flags) -> None:
    """Send ``prefix`` to a fresh filter, checking each accept/refuse against the exact sums."""
    from dpcore.accounting import BudgetExceededError, PrivacyFilter
    f = PrivacyFilter(budget)
    accepted = []
    for event in prefix:
        charged = acc.rho(event)
        spent, entries = f.spent, len(f.ledger.entries)
        fits = spent + charged <= budget
        try:
            got = f.charge(event)
        except BudgetExceededError:
            assert not fits, f"refused {event!r} that fits: spent {spent}"
            assert f.spent == spent and len(f.ledger.entries) == entries, "a refusal changed state"
            flags.add("refused")
            continue
        assert fits, f"accepted {event!r} beyond the budget: spent {spent}"
        assert got == charged and f.spent == spent + charged
        accepted.append(event)
    # the guarantee: the exact costs of what ran sum to at most the budget
    assert sum((exact_rho(e) for e in accepted), Fraction(0)) <= budget
    assert f.spent == sum((acc.rho(e) for e in accepted), Fraction(0)) <= budget
    if f.spent == budget:
        flags.add("filled")


def _exhaustive_filter() -> None:
    from dpcore.accounting import ExponentialEvent, GaussianEvent, ZCDPAccountant, ZCDPEvent
    acc = ZCDPAccountant()
    exact_rho = getattr(acc, "exact_rho", acc.rho)  # v2 ledgers charge this rounded up
    requests = (ZCDPEvent(Fraction(1, 3)), ZCDPEvent(Fraction(1, 4)), GaussianEvent(1.0),
                ExponentialEvent(0.9, 1.0), ZCDPEvent(Fraction(1, 10 ** 40)))
    flags = set()
    for n in range(1, 5):
        for prefix in itertools.product(requests, repeat=n):
            _replay(prefix, Fraction(1), acc, exact_rho, flags)
    assert flags == {"refused", "filled"}, f"the enumeration must reach both boundaries, got {flags}"


def check() -> None:
    _adaptive_divergences()
    _exhaustive_filter()
