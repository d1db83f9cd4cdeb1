"""The PrivPGD paper's metrics against brute force: W1 on a grid vs sorted samples, covariance
vs numpy, TV vs the workload error, identical tables score zero."""
import itertools

import numpy as np
import pytest

from dpcore.errors import InvalidArgumentError
from dpcore.evaluation import embed, evaluate, transport_metrics, w1_on_grid


def _data(seed, n, shape):
    rng = np.random.default_rng(seed)
    return np.stack([rng.integers(k, size=n) for k in shape], axis=1)


def test_w1_on_grid_matches_sorted_samples():
    rng = np.random.default_rng(0)
    points = rng.random(7)
    for _ in range(20):
        a, b = rng.integers(7, size=500), rng.integers(7, size=500)
        p, q = np.bincount(a, minlength=7) / 500, np.bincount(b, minlength=7) / 500
        brute = np.mean(np.abs(np.sort(points[a]) - np.sort(points[b])))  # equal sizes: W1
        assert w1_on_grid(p, q, points) == pytest.approx(brute, abs=1e-12)


def test_identical_tables_score_zero_and_tv_is_half_the_workload_error():
    domain = {"a": 3, "b": 4, "c": 2, "d": 5}
    real = _data(1, 400, list(domain.values()))
    same = transport_metrics(real, real.copy(), domain)
    assert same.to_dict() == pytest.approx({k: 0.0 for k in same.to_dict()}, abs=1e-12)
    synth = _data(2, 300, list(domain.values()))
    got = transport_metrics(real, synth, domain, seed=5)
    assert got.tv_2way == pytest.approx(evaluate(real, synth, domain, "all-2way").workload_error / 2)
    x, y = embed(real, [3, 4, 2, 5]), embed(synth, [3, 4, 2, 5])
    cov_x = np.cov(x, rowvar=False)
    want = np.linalg.norm(cov_x - np.cov(y, rowvar=False)) / np.linalg.norm(cov_x)
    assert got.covariance == pytest.approx(want)
    assert got.counting > 0 and got.threshold > 0 and got.sw1 > 0
    # the same seed draws the same queries: a repeat is identical
    assert transport_metrics(real, synth, domain, seed=5) == got


def test_sw1_matches_sample_definition_for_one_pair():
    domain = {"a": 4, "b": 3}
    real, synth = _data(3, 600, [4, 3]), _data(4, 600, [4, 3])
    got = transport_metrics(real, synth, domain, directions=40, seed=9).sw1
    rng = np.random.default_rng(9)
    rng.normal(size=(40, 2))  # nothing precedes the directions in the metric's stream
    rng = np.random.default_rng(9)
    theta = rng.normal(size=(40, 2))
    theta /= np.linalg.norm(theta, axis=1, keepdims=True)
    x, y = embed(real, [4, 3]), embed(synth, [4, 3])
    brute = np.mean([np.mean(np.abs(np.sort(x @ t) - np.sort(y @ t))) for t in theta])
    assert got == pytest.approx(brute, abs=1e-12)


def test_bad_inputs():
    with pytest.raises(InvalidArgumentError, match="2 columns"):
        transport_metrics(np.zeros((3, 1), int), np.zeros((3, 1), int), {"a": 2})
    with pytest.raises(InvalidArgumentError, match="synthetic"):
        transport_metrics(np.zeros((3, 2), int), np.zeros((0, 2), int), {"a": 2, "b": 2})
