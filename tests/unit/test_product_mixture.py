"""The product-mixture kernels of RAP-softmax and GEM against brute force (issue 18)."""
from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpcore import Domain
from dpcore.errors import InvalidArgumentError
from mechanisms.product_mixture import (ProductMixture, mixture_marginal, softmax_tables,
                                        squared_loss)
from mechanisms.rap import _softmax_backward


@st.composite
def mixtures(draw):
    sizes = draw(st.lists(st.integers(1, 5), min_size=1, max_size=5))
    B = draw(st.integers(1, 6))
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    tables = [rng.dirichlet(np.ones(s), size=B) for s in sizes]
    k = draw(st.integers(1, len(sizes)))
    axes = sorted(draw(st.permutations(range(len(sizes))))[:k])
    return tables, axes, rng


def brute_marginal(tables, axes):
    """Enumerate every cell and every component: sum_j prod_l P_l[j, v_l] / B."""
    B = tables[0].shape[0]
    out = np.zeros([tables[a].shape[1] for a in axes])
    for cell in itertools.product(*(range(tables[a].shape[1]) for a in axes)):
        out[cell] = sum(np.prod([tables[a][j, v] for a, v in zip(axes, cell)])
                        for j in range(B)) / B
    return out


@settings(max_examples=60, deadline=None)
@given(mixtures())
def test_marginals_are_the_exact_mixture_marginals(case):
    tables, axes, _ = case
    np.testing.assert_allclose(mixture_marginal(tables, axes), brute_marginal(tables, axes),
                               rtol=1e-12, atol=1e-15)


@settings(max_examples=40, deadline=None)
@given(mixtures(), st.sampled_from([0.0, 0.05]))
def test_loss_and_gradient_match_brute_force_and_finite_differences(case, threshold):
    tables, axes, rng = case
    target = rng.dirichlet(np.ones(int(np.prod([tables[a].shape[1] for a in axes]))))
    target = target.reshape([tables[a].shape[1] for a in axes])
    loss, grads, worst, kept = squared_loss(tables, [(axes, target)], threshold)
    e = brute_marginal(tables, axes) - target
    assert worst == pytest.approx(np.abs(e).max(), abs=1e-12)
    e = np.where(np.abs(e) >= threshold, e, 0.0)
    assert loss == pytest.approx(float((e ** 2).sum()), abs=1e-12)
    assert kept == np.count_nonzero(e)
    # gradient: central differences of the same masked loss (mask held fixed)
    mask = np.abs(brute_marginal(tables, axes) - target) >= threshold
    for a in range(len(tables)):
        for _ in range(4):
            j, v = rng.integers(tables[a].shape[0]), rng.integers(tables[a].shape[1])
            h = 1e-6
            up = [t.copy() for t in tables]
            down = [t.copy() for t in tables]
            up[a][j, v] += h
            down[a][j, v] -= h
            f = [float((((brute_marginal(tt, axes) - target) * mask) ** 2).sum())
                 for tt in (up, down)]
            assert grads[a][j, v] == pytest.approx((f[0] - f[1]) / (2 * h), abs=1e-6)


def test_softmax_backward_is_the_chain_rule():
    rng = np.random.default_rng(3)
    sizes = (3, 4, 2)
    logits = rng.normal(size=(5, sum(sizes)))
    weights = [rng.normal(size=(5, s)) for s in sizes]

    def f(z):   # a linear function of the softmax tables
        return sum(float((t * w).sum()) for t, w in zip(softmax_tables(z, sizes), weights))

    got = _softmax_backward(softmax_tables(logits, sizes), weights)
    for j, i in itertools.product(range(5), range(sum(sizes))):
        step = np.zeros_like(logits)
        step[j, i] = 1e-6
        assert got[j, i] == pytest.approx((f(logits + step) - f(logits - step)) / 2e-6,
                                          abs=1e-6)


@pytest.mark.parametrize("method", ["round", "sample"])
def test_sampling_follows_the_mixture(method):
    domain = Domain(("a", "b"), (3, 2))
    tables = [np.array([[0.7, 0.2, 0.1], [0.0, 0.5, 0.5]]), np.array([[1.0, 0.0], [0.2, 0.8]])]
    model = ProductMixture(domain, tables, total=10)
    rows = 40_000
    codes = np.asarray(model.synthetic_data(rows, method=method, seed=1).records)
    counts = np.zeros((3, 2))
    np.add.at(counts, (codes[:, 0], codes[:, 1]), 1)
    expected = brute_marginal(model.tables, [0, 1]) * rows
    # chi-square with 5 degrees of freedom; 25 is far above its 0.9999 quantile (~25.7 is
    # 0.99992): a false failure has probability below 1e-4
    nonzero = expected > 0
    assert (counts[~nonzero] == 0).all()
    chi2 = float((((counts - expected) ** 2)[nonzero] / expected[nonzero]).sum())
    assert chi2 < 25.7
    if method == "round":   # an equal share of rows from each component
        assert np.asarray(model.synthetic_data(4, method="round", seed=2).records).shape == (4, 2)


def test_a_bad_table_is_refused():
    domain = Domain(("a",), (2,))
    with pytest.raises(InvalidArgumentError, match="matrices"):
        ProductMixture(domain, [np.ones((2, 3))], 1)
    with pytest.raises(InvalidArgumentError, match="finite probabilities"):
        ProductMixture(domain, [np.array([[np.nan, 1.0]])], 1)
    with pytest.raises(InvalidArgumentError, match="method"):
        ProductMixture(domain, [np.ones((1, 2))], 1).synthetic_data(3, method="mode")
