"""Empirical privacy audit of the Gaussian sampler on neighbouring inputs, against the *exact*
Gaussian privacy profile (Balle & Wang 2018, Thm 8), which is tighter than the zCDP-derived
claim and so catches small sigma bugs (notes-accounting.md, section 7).

For threshold events S_t = {y > t}, a sampler that is (eps, delta)-DP satisfies
P[M(1) in S_t] <= e^eps P[M(0) in S_t] + delta. Clopper-Pearson bounds at level 1e-6 per
probability, Bonferroni over 2 x 41 intervals, so a correct sampler fails with probability
below 1e-4 for a fresh seed (the seeds are fixed, so runs are reproducible). Power check: the
same audit rejects a sampler whose sigma is 10 % too small.
"""
import math

import numpy as np
import pytest
from scipy import stats

from dpcore.accounting import zcdp_delta
from dpcore.accounting.noise import gaussian_noise, make_rng

ALPHA = 1e-6
N = 1_000_000
THRESHOLDS = np.linspace(-1.0, 3.0, 41)


def exact_gaussian_delta(sigma, eps, sensitivity=1.0):
    """Balle & Wang 2018, Theorem 8: the tight delta(eps) of the Gaussian mechanism."""
    a = sensitivity / (2 * sigma)
    b = eps * sigma / sensitivity
    return stats.norm.cdf(a - b) - math.exp(eps) * stats.norm.cdf(-a - b)


def _clopper_pearson(k, n, alpha):
    lo = stats.beta.ppf(alpha / 2, k, n - k + 1) if k > 0 else 0.0
    hi = stats.beta.ppf(1 - alpha / 2, k + 1, n - k) if k < n else 1.0
    return lo, hi


def audited_delta_lower_bound(sampler_sigma, eps, seed):
    """Largest certified lower bound on delta(eps) over the threshold events."""
    y0 = gaussian_noise(sampler_sigma, N, make_rng(seed))           # M(0)
    y1 = 1.0 + gaussian_noise(sampler_sigma, N, make_rng(seed + 1))  # M(1)
    best = -1.0
    for t in THRESHOLDS:
        k0, k1 = int(np.count_nonzero(y0 > t)), int(np.count_nonzero(y1 > t))
        _, p0_hi = _clopper_pearson(k0, N, ALPHA)
        p1_lo, _ = _clopper_pearson(k1, N, ALPHA)
        best = max(best, p1_lo - math.exp(eps) * p0_hi)
    return best


@pytest.mark.parametrize("sigma, eps", [(1.0, 1.0), (2.0, 0.5)])
def test_gaussian_sampler_respects_its_exact_privacy_profile(sigma, eps):
    claimed = exact_gaussian_delta(sigma, eps)
    assert audited_delta_lower_bound(sigma, eps, seed=101) <= claimed
    # power: a sampler with sigma 10 % too small is caught by the same audit
    assert audited_delta_lower_bound(0.9 * sigma, eps, seed=201) > claimed


@pytest.mark.parametrize("sigma", [0.3, 1.0, 4.0, 25.0])
@pytest.mark.parametrize("eps", [0.1, 1.0, 5.0])
def test_accounted_delta_is_never_below_the_exact_gaussian_delta(sigma, eps):
    """The accountant's (eps, delta) for a Gaussian (via rho = 1/(2 sigma^2) and CKS) is
    conservative with respect to the exact profile."""
    exact = exact_gaussian_delta(sigma, eps)
    assert zcdp_delta(1 / (2 * sigma ** 2), eps) >= exact - 1e-15
