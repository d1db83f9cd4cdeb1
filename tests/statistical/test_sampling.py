"""Sampled records follow the model: chi-square goodness of fit with a fixed seed.

Each test draws records from a calibrated tree with a fixed seed and runs Pearson chi-square
tests of the empirical counts against n times the model's probabilities, on the full joint
and on clique and out-of-clique marginals. Every check in the file uses the threshold
p < ALPHA / TESTS (Bonferroni), so if the seeds were drawn at random the whole file would
fail with probability at most ALPHA = 1e-3 under a correct sampler. Randomized rounding
("round") has no more variance than multinomial sampling in each group, which only makes its
chi-square statistics smaller, so the same threshold is conservative for it. A power check
shows the same test rejects a slightly wrong model.
"""
import numpy as np
import pytest
from scipy.stats import chisquare

from dpcore import _core
from dpcore.domain import Domain
from dpcore.factor import Factor
from dpcore.junction_tree import JunctionTree

ALPHA = 1e-3
TESTS = 16  # number of chi-square p-values compared with the threshold in this file
THRESHOLD = ALPHA / TESTS
N = 40_000

DOMAIN = Domain(("a", "b", "c", "d", "e"), (2, 3, 4, 3, 2))
CLIQUES = [("a", "b"), ("b", "c"), ("c", "d"), ("d", "a"), ("c", "e")]


def _model(seed, scale=0.5):
    rng = np.random.default_rng(seed)
    pots = [Factor(DOMAIN.project(c), scale * rng.standard_normal(DOMAIN.project(c).shape))
            for c in CLIQUES]
    return JunctionTree(DOMAIN, CLIQUES).calibrate(pots)


MODEL = _model(11)


def _p_value(records, attrs, probabilities):
    counts = np.zeros(probabilities.shape)
    np.add.at(counts, tuple(records[:, DOMAIN.axes(attrs)].T), 1)
    expected = len(records) * probabilities.reshape(-1)
    assert expected.min() >= 5, "the chi-square approximation needs expected counts >= 5"
    return chisquare(counts.reshape(-1), expected).pvalue


QUERIES = [DOMAIN.attrs, ("a", "b"), ("c", "d"), ("b", "d", "e"), ("e", "a")]


@pytest.mark.parametrize("method", ["sample", "round"])
def test_sampled_marginals_follow_the_model(method):
    records = MODEL.sample(N, method=method, seed=20240501)
    for attrs in QUERIES:  # 5 p-values per method; 10 in all
        p = _p_value(records, attrs, MODEL.project(attrs).values)
        assert p > THRESHOLD, f"{method}: marginal {attrs} rejected, p = {p:.3g}"


def test_rounding_is_tighter_than_sampling_on_the_root_clique():
    records = MODEL.sample(N, method="round", seed=3)
    root = MODEL.tree.cliques[0]
    counts = np.zeros(DOMAIN.project(root).shape)
    np.add.at(counts, tuple(records[:, DOMAIN.axes(root)].T), 1)
    assert np.abs(counts - N * MODEL.beliefs[0].values).max() < 1


def test_a_wrong_model_is_rejected():
    # Power: records from MODEL tested against a model with perturbed potentials; the pairwise
    # marginals differ by a few percent, far beyond the sampling error at this N.
    wrong = _model(11, scale=0.45)
    records = MODEL.sample(N, method="sample", seed=99)
    p_values = [_p_value(records, attrs, wrong.project(attrs).values)  # 4 p-values
                for attrs in [("a", "b"), ("c", "d"), ("b", "d", "e"), DOMAIN.attrs]]
    assert min(p_values) < THRESHOLD


def test_group_rounding_and_sampling_kernels():
    p = np.array([0.05, 0.15, 0.3, 0.5])
    for seed in range(20):
        counts = np.bincount(_core.sample_group(p, 1003, "round", seed), minlength=4)
        assert counts.sum() == 1003
        assert (np.abs(counts - 1003 * p) < 1).all()
    draws = _core.sample_group(p, N, "sample", 5)
    pval = chisquare(np.bincount(draws, minlength=4), N * p).pvalue  # 1 p-value
    assert pval > THRESHOLD
    # the remainders are drawn proportionally to the fractional parts: 1/3 vs 2/3 here
    extra = [int(_core.sample_group(np.array([1.0, 2.0]), 1, "round", s)[0]) for s in range(3000)]
    pval = chisquare(np.bincount(extra, minlength=2), [1000, 2000]).pvalue  # 1 p-value
    assert pval > THRESHOLD
