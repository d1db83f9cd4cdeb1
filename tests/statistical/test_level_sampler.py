"""The level-proposal exact exponential mechanism (FEM's selection sampler) against the
exponential mechanism's law: chi-square against exp(eps q / (2 sens)) normalised, also with
every acceptance decided by the exact integer path, and against the float Gumbel sampler."""
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from dpcore.accounting import level_sampler
from dpcore.accounting.noise import exponential_mechanism, make_rng

ALPHA = 1e-6   # false-failure rate of each chi-square test (fixed seeds)


def _probs(scores, eps, sens):
    u = float(eps) * np.asarray(scores, dtype=float) / (2 * float(sens))
    p = np.exp(u - u.max())
    return p / p.sum()


def _pvalue(counts, probs):
    n = counts.sum()
    keep = n * probs >= 20          # thin cells pooled into one
    obs = np.append(counts[keep], counts[~keep].sum())
    exp = np.append(n * probs[keep], n * probs[~keep].sum())
    if not (~keep).any():
        obs, exp = obs[:-1], exp[:-1]
    return stats.chisquare(obs, exp * obs.sum() / exp.sum()).pvalue


CASES = [
    (np.array([0, 1, 2, 3, 3, 9], dtype=np.int64), Fraction(1), Fraction(1, 2)),
    (np.array([-7, 40, 3, 38, 41, 0, 41], dtype=np.int64), 0.3, 1),
    (np.array([5 * 2 ** 20, 0, 2 ** 21, 4 * 2 ** 20, -(2 ** 23)], dtype=np.int64), 0.9, 2 ** 20),
]


@pytest.mark.parametrize("scores, eps, sens", CASES)
@pytest.mark.parametrize("exact_only", [False, True])
def test_level_sampler_has_the_exponential_mechanisms_law(scores, eps, sens, exact_only, monkeypatch):
    if exact_only:   # a margin of 1 sends every acceptance trial to the integer bounds
        monkeypatch.setattr(level_sampler, "_MARGIN", 1.0)
    n = 4_000 if exact_only else 20_000
    rng = make_rng(7)
    picks = [level_sampler.level_exponential_mechanism(scores, eps, sens, rng) for _ in range(n)]
    counts = np.bincount(picks, minlength=len(scores))
    assert _pvalue(counts, _probs(scores, eps, sens)) > ALPHA
    for factor in (0.8, 1.25) if not exact_only else ():   # power: a wrong epsilon is rejected
        assert _pvalue(counts, _probs(scores, float(eps) * factor, sens)) < ALPHA


def test_level_sampler_agrees_with_the_float_sampler():
    scores = np.array([0, 2, 4, 4, 6, 1, 3], dtype=np.int64)
    n = 10_000
    rng = make_rng(3)
    a = np.bincount([level_sampler.level_exponential_mechanism(scores, 0.8, 1, rng) for _ in range(n)],
                    minlength=7)
    b = np.bincount([exponential_mechanism(scores, 0.8, 1, rng) for _ in range(n)], minlength=7)
    assert stats.chi2_contingency(np.stack([a, b]))[1] > ALPHA
