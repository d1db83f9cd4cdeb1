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


def _pmf_chi2_pvalue(draws: np.ndarray, sigma_sq: Fraction) -> float:
    """Chi-square p-value of ``draws`` against N_Z(0, sigma_sq), cells expecting >= 5 kept and
    the thin tails merged into one cell."""
    n = draws.size
    reach = int(12 * math.sqrt(sigma_sq)) + 5
    xs = np.arange(-reach, reach + 1)
    pmf = exact_pmf(sigma_sq, -reach, reach)
    keep = pmf * n >= 5
    observed = np.array([np.count_nonzero(draws == x) for x in xs[keep]] +
                        [np.count_nonzero(~np.isin(draws, xs[keep]))])
    expected = np.append(pmf[keep], 1 - pmf[keep].sum()) * n
    if expected[-1] < 5:  # merge a thin tail cell into the last kept one
        observed[-2] += observed[-1]
        expected[-2] += expected[-1]
        observed, expected = observed[:-1], expected[:-1]
    stat = ((observed - expected) ** 2 / expected).sum()
    return stats.chi2.sf(stat, observed.size - 1)


@pytest.mark.parametrize("sigma", [0.6, 3.7, 150.0])
def test_default_noise_path_matches_its_pmf_and_catches_a_10_percent_scale_bug(sigma):
    """dpcore.accounting.noise.discrete_gaussian_noise (the curator's default, compiled) against
    the exact pmf at s^2 = discrete_variance(sigma). Power: the same draws are rejected against
    the pmf of a sampler whose sigma is 10 % off (and a variance F-style check agrees).
    False-failure rate: ALPHA = 1e-6 per check for a fresh seed; the seed is fixed."""
    from dpcore.accounting.noise import discrete_gaussian_noise, discrete_variance
    n = 100_000
    draws = discrete_gaussian_noise(sigma, n, make_rng(17))
    s2 = discrete_variance(sigma)
    assert _pmf_chi2_pvalue(draws, s2) > ALPHA
    for factor in (Fraction(81, 100), Fraction(121, 100)):  # sigma x 0.9, x 1.1
        assert _pmf_chi2_pvalue(draws, s2 * factor) < ALPHA
    # Variance: the sample variance has sd sqrt((m4 - var^2) / n) (exact pmf moments); 5 sd is
    # ~2 % of var here, while a 10 % sigma bug moves the variance by ~20 %.
    reach = int(12 * math.sqrt(s2)) + 5
    xs = np.arange(-reach, reach + 1).astype(float)
    pmf = exact_pmf(s2, -reach, reach)
    var, m4 = float((pmf * xs ** 2).sum()), float((pmf * xs ** 4).sum())
    assert abs(draws.astype(float).var() - var) < 5 * math.sqrt((m4 - var ** 2) / n)
