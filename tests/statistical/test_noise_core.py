"""The compiled exact discrete Gaussian (dpcore._core.discrete_gaussian, CKS20 Alg. 1-3 in
C++) against the pure-Python reference (dpcore.accounting.noise.discrete_gaussian) and the
exact pmf. Seeds are fixed, so the tests are deterministic; for fresh seeds each chi-square
check would fail with probability 1e-6 (the stated false-failure rate)."""
import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from dpcore import _core
from dpcore.accounting.noise import discrete_gaussian, make_rng
from dpcore.errors import DpcoreTypeError, InvalidArgumentError

ALPHA = 1e-6


def exact_pmf(sigma_sq: Fraction, lo: int, hi: int) -> np.ndarray:
    """Pr[X = x] for x in [lo, hi], normalised over a range that holds all but ~e^-70."""
    reach = int(12 * math.sqrt(sigma_sq)) + 5
    xs = np.arange(-reach, reach + 1)
    w = np.exp(-(xs.astype(float) ** 2) / (2 * float(sigma_sq)))
    w /= w.sum()
    return np.array([w[xs == x].sum() for x in range(lo, hi + 1)])


def binned(draws: np.ndarray, hi: int) -> np.ndarray:
    return np.bincount(np.clip(draws, -hi, hi) + hi, minlength=2 * hi + 1)


def key(seed: int) -> bytes:
    return seed.to_bytes(32, "little")


def core_draws(sigma_sq: Fraction, n: int, seed: int) -> np.ndarray:
    return _core.discrete_gaussian(sigma_sq.numerator, sigma_sq.denominator, n, key(seed))


@pytest.mark.parametrize("sigma_sq", [Fraction(1, 3), Fraction(7, 3), Fraction(400),
                                      Fraction(1.7)])  # a float's exact binary value
def test_core_matches_python_reference(sigma_sq):
    n = 20_000
    ours = core_draws(sigma_sq, n, seed=11)
    ref = discrete_gaussian(sigma_sq, n, make_rng(12))
    hi = max(1, int(2.5 * math.sqrt(sigma_sq)))
    table = np.stack([binned(ours, hi), binned(ref, hi)])
    table = table[:, table.sum(axis=0) > 0]
    assert stats.chi2_contingency(table).pvalue > ALPHA


@pytest.mark.parametrize("sigma_sq", [Fraction(1, 4), Fraction(5, 2), Fraction(10**6, 7)])
def test_core_matches_exact_pmf(sigma_sq):
    n = 200_000
    draws = core_draws(sigma_sq, n, seed=3)
    hi = max(1, int(3 * math.sqrt(sigma_sq)))
    observed = binned(draws, hi)
    reach = int(12 * math.sqrt(sigma_sq)) + 5
    pmf = exact_pmf(sigma_sq, -reach, reach)
    expected = np.bincount(np.clip(np.arange(-reach, reach + 1), -hi, hi) + hi, weights=pmf,
                           minlength=2 * hi + 1) * n
    keep = expected >= 5
    assert observed[~keep].sum() <= 5 * max(1, expected[~keep].sum())  # cells too thin to test
    stat = (((observed - expected) ** 2)[keep] / expected[keep]).sum()
    assert stats.chi2.sf(stat, keep.sum() - 1) > ALPHA


def test_reproducible_and_typed_errors():
    a = _core.discrete_gaussian(7, 3, 100, key(9))
    assert a.dtype == np.int64 and np.array_equal(a, _core.discrete_gaussian(7, 3, 100, key(9)))
    assert not np.array_equal(a, _core.discrete_gaussian(7, 3, 100, key(9), nonce=1))
    assert _core.discrete_gaussian(7, 3, 0, key(9)).shape == (0,)
    with pytest.raises(InvalidArgumentError, match="num >= 1"):
        _core.discrete_gaussian(0, 3, 5, key(1))
    with pytest.raises(InvalidArgumentError, match="must be in \\[0, 2\\^64\\)"):
        _core.discrete_gaussian(-1, 3, 5, key(1))
    with pytest.raises(InvalidArgumentError, match="2\\^128"):
        _core.discrete_gaussian(2**64 - 1, 1, 5, key(1))
    with pytest.raises(InvalidArgumentError, match="count must be >= 0"):
        _core.discrete_gaussian(1, 1, -5, key(1))
    with pytest.raises(DpcoreTypeError, match="must be an integer"):
        _core.discrete_gaussian(1.5, 1, 5, key(1))
    with pytest.raises(InvalidArgumentError, match="key must be 32 bytes, got 31"):
        _core.discrete_gaussian(1, 1, 5, bytes(31))
    with pytest.raises(DpcoreTypeError, match="key must be 32 bytes, got int"):
        _core.discrete_gaussian(1, 1, 5, 7)
