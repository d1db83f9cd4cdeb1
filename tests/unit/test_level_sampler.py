"""Unit checks of the level-proposal exact sampler: the integer bounds against high-precision
exp, the levels are lower bounds of gamma log2(e), edge cases, seeds, and its speed on FEM's
scale (283,212 queries, one dominant)."""
import random
import time
from decimal import Decimal, getcontext
from fractions import Fraction

import numpy as np
import pytest

from dpcore.accounting import level_sampler
from dpcore.accounting.level_sampler import level_exponential_mechanism, scaled_bounds
from dpcore.accounting.noise import make_rng
from dpcore.errors import DpcoreTypeError, InvalidArgumentError


def test_scaled_bounds_bracket_exp():
    getcontext().prec = 500
    rand = random.Random(1)
    for _ in range(300):
        q = rand.randint(1, 2 ** 90)
        p = rand.randint(0, 60 * q)
        j, bits = rand.randint(0, 80), rand.choice([64, 128, 256])
        lo, hi = scaled_bounds(p, q, j, bits)
        ref = (Decimal(-p) / Decimal(q)).exp() * Decimal(2) ** (bits + j)
        assert Decimal(lo) <= ref <= Decimal(hi)
        assert hi - lo <= 2
    assert scaled_bounds(10 ** 6, 1, 0, 64) == (0, 1)          # far below 2^-64


def test_levels_never_exceed_gamma_log2e():
    # j <= gamma * 1.4426950408 < gamma log2(e) (14426950408889634 / 10^16 < log2 e)
    rng = np.random.default_rng(0)
    gaps = rng.integers(0, 2 ** 62, size=2000, dtype=np.int64)
    for c in (Fraction(1, 2 ** 21), Fraction(3, 7), Fraction(0.009) / 2 ** 21):
        gamma = gaps.astype(np.float64) * float(c)
        levels = np.floor(np.minimum(gamma * level_sampler.LOG2E_LOW * (1 - level_sampler._MARGIN),
                                     level_sampler.MAX_LEVEL)).astype(np.int64)
        for g, j in zip(gaps.tolist(), levels.tolist()):
            assert j <= c * g * Fraction(14426950408889634, 10 ** 16)


def test_edge_cases_and_seeds():
    assert level_exponential_mechanism(np.array([7]), 1.0, 1.0) == 0
    assert level_exponential_mechanism(np.array([0, 0, 10 ** 15]), 1.0, 1.0, make_rng(1)) == 2
    # a spread past 2^62 goes to the general exact sampler
    assert level_exponential_mechanism(np.array([-(2 ** 62), 2 ** 62]), 1.0, 1.0, make_rng(1)) == 1
    picks = {level_exponential_mechanism(np.array([5, 5, 5]), 1.0, 1.0, make_rng(s)) for s in range(60)}
    assert picks == {0, 1, 2}
    a = [level_exponential_mechanism(np.arange(9), 0.5, 1.0, make_rng(4)) for _ in range(5)]
    assert a == [level_exponential_mechanism(np.arange(9), 0.5, 1.0, make_rng(4)) for _ in range(5)]


@pytest.mark.parametrize("call, error", [
    (lambda: level_exponential_mechanism(np.array([], dtype=np.int64), 1.0, 1.0), InvalidArgumentError),
    (lambda: level_exponential_mechanism(np.array([[1]]), 1.0, 1.0), InvalidArgumentError),
    (lambda: level_exponential_mechanism(np.array([1.0, 2.0]), 1.0, 1.0), InvalidArgumentError),
    (lambda: level_exponential_mechanism(np.array([1]), 0.0, 1.0), InvalidArgumentError),
    (lambda: level_exponential_mechanism(np.array([1]), 1.0, -1.0), InvalidArgumentError),
    (lambda: level_exponential_mechanism(np.array([1]), 1.0, 1.0, rng=3), DpcoreTypeError),
])
def test_bad_input(call, error):
    with pytest.raises(error):
        call()


def test_fast_at_fem_scale():
    k = 283_212
    scores = np.random.default_rng(0).integers(-50_000 * 2 ** 20, 0, size=k).astype(np.int64)
    scores[5] = 10 ** 6 * 2 ** 20
    rng = make_rng(0)
    start = time.process_time()
    picks = [level_exponential_mechanism(scores, 0.01, 2 ** 20, rng) for _ in range(10)]
    assert time.process_time() - start < 5.0        # ~0.01 s a draw (the uniform proposal: ~10 s)
    assert picks == [5] * 10                         # every other query is >= 5000 nats behind
