"""Samplers match their distributions, and the tests have power.

Each goodness-of-fit test rejects at p < ALPHA = 1e-6, so with a fresh seed a correct sampler
fails a given test with probability 1e-6 (the seeds are fixed, so runs are reproducible). Each
test is paired with a power check: the same test must reject a sampler whose scale (sigma, or
epsilon for the exponential mechanism) is 10 % off.
"""
import math
from fractions import Fraction

import mpmath
import numpy as np
import pytest
from scipy import stats

from dpcore.accounting import noise
from dpcore.accounting.noise import (discrete_gaussian, exponential_mechanism, gaussian_noise,
                                     make_rng)

ALPHA = 1e-6


def _gaussian_ks(samples, sigma):
    return stats.kstest(samples, stats.norm(scale=sigma).cdf).pvalue


@pytest.mark.parametrize("sigma", [1.0, 37.5])
def test_gaussian_noise_matches_normal(sigma):
    x = gaussian_noise(sigma, 100_000, make_rng(11))
    assert _gaussian_ks(x, sigma) > ALPHA
    # power: a sampler with sigma 10 % too small (or large) is rejected
    assert _gaussian_ks(gaussian_noise(sigma * 0.9, 100_000, make_rng(12)), sigma) < ALPHA
    assert _gaussian_ks(gaussian_noise(sigma * 1.1, 100_000, make_rng(13)), sigma) < ALPHA


def _discrete_gaussian_pmf(sigma_sq, lo, hi):
    """Exact-enough pmf on [lo, hi] (mpmath; the mass beyond 12 sigma is < 1e-30)."""
    with mpmath.workdps(30):
        s2 = mpmath.mpf(sigma_sq.numerator) / sigma_sq.denominator
        k = int(12 * mpmath.sqrt(s2)) + 2
        z = mpmath.fsum(mpmath.exp(-mpmath.mpf(x) ** 2 / (2 * s2)) for x in range(-k, k + 1))
        return np.array([float(mpmath.exp(-mpmath.mpf(x) ** 2 / (2 * s2)) / z)
                         for x in range(lo, hi + 1)])


def _chi_square_pvalue(samples, support, probs, min_expected=20.0):
    """Chi-square goodness of fit on ``support``; adjacent cells are merged until each expects
    at least ``min_expected``, and the two tails are merged into the end bins."""
    n = len(samples)
    counts = np.array([np.count_nonzero(samples == v) for v in support], dtype=float)
    counts[0] += np.count_nonzero(samples < support[0])
    counts[-1] += np.count_nonzero(samples > support[-1])
    probs = probs.copy()
    probs[0] += max(0.0, (1 - probs.sum()) / 2)
    probs[-1] = 1 - probs[:-1].sum()
    obs, exp, o, e = [], [], 0.0, 0.0
    for c, p in zip(counts, probs):
        o, e = o + c, e + n * p
        if e >= min_expected:
            obs.append(o), exp.append(e)
            o, e = 0.0, 0.0
    obs[-1] += o
    exp[-1] += e
    obs, exp = np.array(obs), np.array(exp)
    return stats.chisquare(obs, exp * obs.sum() / exp.sum()).pvalue


@pytest.mark.parametrize("sigma_sq, n", [(Fraction(4), 20_000), (Fraction(3, 2) / Fraction(1, 100), 8_000),
                                         (Fraction(1, 3), 20_000)])
def test_discrete_gaussian_matches_pmf(sigma_sq, n):
    k = int(6 * math.sqrt(sigma_sq)) + 1
    support = np.arange(-k, k + 1)
    pmf = _discrete_gaussian_pmf(sigma_sq, -k, k)
    x = discrete_gaussian(sigma_sq, n, make_rng(21))
    assert _chi_square_pvalue(x, support, pmf) > ALPHA
    # symmetric and centred: the sample mean is within 5 standard errors of 0
    assert abs(x.mean()) < 5 * math.sqrt(float(sigma_sq) / n)
    # power: a sampler whose sigma is 10 % too large or small is rejected
    for factor in (Fraction(121, 100), Fraction(81, 100)):
        wrong = discrete_gaussian(sigma_sq * factor, n, make_rng(22))
        assert _chi_square_pvalue(wrong, support, pmf) < ALPHA


@pytest.mark.parametrize("gamma", [Fraction(0), Fraction(1, 3), Fraction(1), Fraction(5, 2)])
def test_bernoulli_exp_frequency(gamma):
    src = noise._Bits(make_rng(31))
    n = 40_000
    hits = sum(noise._bernoulli_exp(gamma.numerator, gamma.denominator, src) for _ in range(n))
    p = math.exp(-gamma)
    assert stats.binomtest(hits, n, p).pvalue > ALPHA
    if 0 < p < 1:  # power: a 10 % error in the rate parameter is visible
        assert stats.binomtest(hits, n, math.exp(-float(gamma) * 1.1 - 0.05)).pvalue < ALPHA


def test_discrete_laplace_matches_pmf():
    src, t, n = noise._Bits(make_rng(41)), 3, 30_000
    x = np.array([noise._discrete_laplace(t, src) for _ in range(n)])
    support = np.arange(-25, 26)
    w = np.exp(-np.abs(support) / t)
    pmf = w / (np.exp(-np.abs(np.arange(-200, 201)) / t)).sum()
    assert _chi_square_pvalue(x, support, pmf) > ALPHA
    w_wrong = np.exp(-np.abs(support) / (t * 1.1))
    pmf_wrong = w_wrong / (np.exp(-np.abs(np.arange(-200, 201)) / (t * 1.1))).sum()
    assert _chi_square_pvalue(x, support, pmf_wrong) < ALPHA


def _em_probs(scores, epsilon, sensitivity):
    u = epsilon * np.asarray(scores) / (2 * sensitivity)
    w = np.exp(u - u.max())
    return w / w.sum()


def test_exponential_mechanism_matches_softmax():
    scores, eps, sens, n = [0.0, 1.0, 2.0, 3.0, 3.0, 4.5], 1.0, 0.5, 30_000
    rng = make_rng(51)
    picks = np.array([exponential_mechanism(scores, eps, sens, rng) for _ in range(n)])
    counts = np.bincount(picks, minlength=len(scores))
    probs = _em_probs(scores, eps, sens)
    assert stats.chisquare(counts, n * probs).pvalue > ALPHA
    # power: the distribution at epsilon 10 % off is rejected
    for factor in (0.9, 1.1):
        assert stats.chisquare(counts, n * _em_probs(scores, eps * factor, sens)).pvalue < ALPHA


@pytest.mark.parametrize("scores, eps, sens", [
    ([0, 1, 2, 3, 3, 9], Fraction(1), Fraction(1, 2)),           # integer scores
    ([Fraction(-7, 3), Fraction(1, 5), 0, Fraction(5, 2)], 0.7, Fraction(1, 3)),  # rationals
])
def test_exact_exponential_mechanism_matches_softmax(scores, eps, sens):
    """The exact EM (curator's default) against exp(eps q / (2 sens)) normalised; power: the
    distribution at epsilon 10 % off is rejected. False-failure rate ALPHA = 1e-6."""
    n = 30_000
    rng = make_rng(61)
    picks = [noise.exact_exponential_mechanism(scores, eps, sens, rng) for _ in range(n)]
    counts = np.bincount(picks, minlength=len(scores))
    q = [float(v) for v in scores]
    probs = _em_probs(q, float(eps), float(sens))
    keep = n * probs >= 20  # thin cells (far-off candidates) are pooled into one

    def pvalue(p):
        obs = np.append(counts[keep], counts[~keep].sum())
        exp = np.append(n * p[keep], n * p[~keep].sum())
        if not (~keep).any():
            obs, exp = obs[:-1], exp[:-1]
        return stats.chisquare(obs, exp * obs.sum() / exp.sum()).pvalue

    assert pvalue(probs) > ALPHA
    for factor in (0.9, 1.1):
        assert pvalue(_em_probs(q, float(eps) * factor, float(sens))) < ALPHA
