"""Claim (quality-score sensitivity): Curator.select's scores
    q_r(D) = w_r (||M_r(D) - ref_r||_1 - pen_r),  w_r >= 0, ref_r and pen_r public,
change by at most w_r when one record is added or removed, so the exponential mechanism over
them may use Delta = max_r w_r (which is what Curator.select charges).

Source: McKenna, Mullins, Sheldon & Miklau 2022 (AIM), Sec. 4, Eq. (1) and Prop. 2 (papers/aim.txt):
"the sensitivity of the quality score is w_r".

Preconditions: neighbours add or remove one record; each record adds a weight in [0, 1] (1 for
an unweighted dataset; Curator refuses others) to exactly one cell of every marginal M_r;
ref_r, pen_r and w_r do not depend on the data.

Proof. Adding a record with weight c in [0, 1] changes M_r(D) by c e_j for one cell j. By the
reverse triangle inequality | ||a + c e_j||_1 - ||a||_1 | <= ||c e_j||_1 = c <= 1, which in the
one coordinate that moves is | |a_j + c| - |a_j| | <= c (checked below by cases on the sign
of a_j and a_j + c). Multiplying by w_r >= 0 and subtracting the public w_r pen_r gives
|q_r(D) - q_r(D')| <= w_r <= max_r w_r. The bound is attained (c = 1, a_j >= 0), so no smaller
Delta is valid in general. The check runs the real Curator.select on every add-one neighbour of
random small datasets (scores observed by wrapping the sampler it calls) and compares the
largest change with the sensitivity it charged.
"""
import random
from fractions import Fraction

import numpy as np
import sympy as sp

from ._neighbours import neighbour_pairs, patched
from ._support import assert_equal

CLAIM = "Curator.select's score w_r(||M_r - ref||_1 - pen_r) has sensitivity max_r w_r"


def _abs_step_cases():
    """| |a + c| - |a| | <= c for 0 <= c, checked on the three sign regions of a."""
    t, c = sp.symbols("t c", positive=True)
    # a >= 0: |a + c| - |a| = c
    assert_equal(sp.Abs(t + c) - sp.Abs(t), c, "a > 0")
    # a <= -c: |a + c| - |a| = -c      (a = -c - t)
    assert_equal(sp.Abs(-c - t + c) - sp.Abs(-c - t), -c, "a < -c")
    # -c < a < 0 (a = -c/(1 + u), u > 0): |a + c| - |a| = c (u - 1)/(u + 1), strictly inside (-c, c)
    u = sp.Symbol("u", positive=True)
    a = -c / (1 + u)
    step = sp.Abs(a + c) - sp.Abs(a)
    assert_equal(step, c * (u - 1) / (u + 1), "-c < a < 0")
    for bound in (c - step, c + step):
        assert sp.factor(sp.simplify(bound)).is_positive, bound


def _scores(dataset, candidates, refs, eps, weights, penalties):
    """Run the real Curator.select and return (scores it passed to the sampler, charged Delta)."""
    from dpcore.accounting import PrivacyFilter
    from dpcore.curator import Curator
    import dpcore.curator as curator_module

    seen = {}

    def observe(scores, epsilon, sensitivity, rng):
        # The curator passes exact integer scores in units of 1/SCORE_GRID**2: back to counts.
        unit = curator_module.SCORE_GRID ** 2
        seen["scores"] = np.array([float(Fraction(int(q), unit)) for q in scores])
        return 0

    curator = Curator(dataset, PrivacyFilter(1), seed=0)
    with patched(curator_module, "_draw", observe):
        curator.select(candidates, refs, eps, weights=weights, penalties=penalties)
    return seen["scores"], curator.privacy_filter.ledger.entries[-1].event.sensitivity


def check() -> None:
    _abs_step_cases()

    from dpcore import Dataset, Domain
    domain = Domain(("a", "b"), (2, 3))
    candidates = [("a",), ("b",), ("a", "b")]
    rng = random.Random(15)
    worst = 0.0
    for trial, (small, large) in enumerate(neighbour_pairs(domain, rng, datasets=12)):
        weights = [rng.choice([0.0, 0.25, 1.0, 2.5]) for _ in candidates]
        weights[trial % 3] = 2.5  # a positive maximum, on a different candidate each time
        penalties = [rng.uniform(-3, 3) for _ in candidates]
        # references below, at and above the counts, so every sign case of |a_j| occurs
        refs = [np.array([rng.choice([-1.0, 0.0, 0.5, 1.0, 2.0, 9.0]) for _ in range(domain.size(c))])
                for c in candidates]
        record_weights = None
        if trial % 4 == 3:  # fractional record weights in [0, 1]
            record_weights = [rng.choice([0.0, 0.5, 1.0]) for _ in range(len(large))]
        d_small = Dataset(small, domain, None if record_weights is None else record_weights[:-1])
        d_large = Dataset(large, domain, record_weights)
        q_small, delta = _scores(d_small, candidates, refs, 0.01, weights, penalties)
        q_large, delta_large = _scores(d_large, candidates, refs, 0.01, weights, penalties)
        assert delta == delta_large == max(weights), (delta, weights)
        change = np.abs(q_large - q_small)
        assert np.all(change <= np.array(weights) * (1 + 1e-12)), (trial, change, weights)
        worst = max(worst, float(change.max() / delta))
    assert worst > 1 - 1e-9, f"the bound max w_r is never attained (largest change {worst} Delta)"
