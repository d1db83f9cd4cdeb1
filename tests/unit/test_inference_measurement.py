"""Measurement validation, the Gaussian loss and its gradient, and total-count estimation."""
import math

import numpy as np
import pytest
import scipy.sparse as sp

from dpcore import Domain
from dpcore.errors import DomainError, DpcoreTypeError, InvalidArgumentError
from dpcore.inference import Measurement, estimate_total

DOMAIN = Domain(("a", "b", "c"), (2, 3, 4))


@pytest.mark.parametrize("kwargs, error, text", [
    (dict(attrs=(), noisy=[1.0], sigma=1.0), InvalidArgumentError, "attrs"),
    (dict(attrs=("a", "a"), noisy=[1.0] * 4, sigma=1.0), InvalidArgumentError, "unique"),
    (dict(attrs=(1,), noisy=[1.0], sigma=1.0), DpcoreTypeError, "attrs"),
    (dict(attrs="a", noisy=[1.0, math.nan], sigma=1.0), InvalidArgumentError, "finite"),
    (dict(attrs="a", noisy=[1.0, math.inf], sigma=1.0), InvalidArgumentError, "finite"),
    (dict(attrs="a", noisy=[[1.0, 2.0]], sigma=1.0), InvalidArgumentError, "1-d"),
    (dict(attrs="a", noisy=[], sigma=1.0), InvalidArgumentError, "non-empty"),
    (dict(attrs="a", noisy=["x", "y"], sigma=1.0), DpcoreTypeError, "numeric"),
    (dict(attrs="a", noisy=[1.0, 2.0], sigma=0.0), InvalidArgumentError, "sigma must be finite and > 0, got 0.0"),
    (dict(attrs="a", noisy=[1.0, 2.0], sigma=-1.0), InvalidArgumentError, "got -1.0"),
    (dict(attrs="a", noisy=[1.0, 2.0], sigma=math.nan), InvalidArgumentError, "sigma"),
    (dict(attrs="a", noisy=[1.0, 2.0], sigma=math.inf), InvalidArgumentError, "sigma"),
    (dict(attrs="a", noisy=[1.0, 2.0], sigma="1"), DpcoreTypeError, "sigma"),
    (dict(attrs="a", noisy=[1.0, 2.0], sigma=True), DpcoreTypeError, "sigma"),
    (dict(attrs="a", noisy=[1.0, 2.0], sigma=1.0, query=np.eye(3)), InvalidArgumentError, "one row per noisy entry (2)"),
    (dict(attrs="a", noisy=[1.0], sigma=1.0, query=[1.0, 2.0]), InvalidArgumentError, "2-d"),
    (dict(attrs="a", noisy=[1.0], sigma=1.0, query=[[1.0, math.nan]]), InvalidArgumentError, "finite"),
    (dict(attrs="a", noisy=[1.0], sigma=1.0, query=sp.csr_matrix([[1.0, math.inf]])), InvalidArgumentError, "finite"),
])
def test_bad_input_is_a_typed_error_naming_the_rule(kwargs, error, text):
    with pytest.raises(error, match=text.replace("(", r"\(").replace(")", r"\)")):
        Measurement(**kwargs)


def test_validate_against_domain():
    with pytest.raises(DomainError, match="'z' is not in the domain"):
        Measurement(("a", "z"), np.zeros(4), 1.0).validate(DOMAIN)
    with pytest.raises(InvalidArgumentError, match=r"one entry per cell .* \(6\), got 5"):
        Measurement(("a", "b"), np.zeros(5), 1.0).validate(DOMAIN)
    with pytest.raises(InvalidArgumentError, match=r"one column per cell .* \(4\), got 3"):
        Measurement("c", np.zeros(2), 1.0, query=np.ones((2, 3))).validate(DOMAIN)
    Measurement(("b", "a"), np.zeros(6), 1.0).validate(DOMAIN)
    Measurement("c", np.zeros(2), 1.0, query=sp.random(2, 4, density=0.5)).validate(DOMAIN)


def test_measurement_is_immutable():
    m = Measurement("a", [1.0, 2.0], 1.0)
    with pytest.raises(AttributeError):
        m.sigma = 2.0
    with pytest.raises(ValueError):
        m.noisy[0] = 5.0


def test_loss_and_gradient_match_the_formula_and_finite_differences():
    rng = np.random.default_rng(1)
    q = rng.normal(size=(5, 6))
    y = rng.normal(size=5)
    for query in (q, sp.csr_matrix(q)):
        m = Measurement(("a", "b"), y, 1.5, query=query)
        mu = rng.normal(size=6)
        loss, grad = m.loss_and_gradient(mu)
        assert loss == pytest.approx(float(((q @ mu - y) ** 2).sum()) / 1.5**2, rel=1e-13)
        h = 1e-6
        fd = [(m.loss_and_gradient(mu + h * e)[0] - m.loss_and_gradient(mu - h * e)[0]) / (2 * h)
              for e in np.eye(6)]
        np.testing.assert_allclose(grad, fd, rtol=1e-6, atol=1e-8)
    ident = Measurement("a", [3.0, 1.0], 2.0)
    assert ident.loss_and_gradient(np.array([1.0, 1.0]))[0] == pytest.approx(1.0)
    np.testing.assert_allclose(ident.loss_and_gradient(np.array([1.0, 1.0]))[1], [-1.0, 0.0])


def test_total_estimate_identity_and_linear_queries():
    m = Measurement(("a", "b"), np.arange(6.0), 2.0)
    assert m.total_estimate() == (15.0, 6 * 4.0)
    # Prefix sums: the last row is the total itself, the min-norm w picks exactly it.
    prefix = np.tril(np.ones((4, 4)))
    value, var = Measurement("c", [1.0, 3.0, 6.0, 10.0], 3.0, query=prefix).total_estimate()
    assert value == pytest.approx(10.0) and var == pytest.approx(9.0)
    # Two copies of the identity: w = (1/2, 1/2) per cell, variance cells * sigma^2 / 2.
    twice = np.vstack([np.eye(2), np.eye(2)])
    value, var = Measurement("a", [1.0, 2.0, 3.0, 6.0], 1.0, query=sp.csr_matrix(twice)).total_estimate()
    assert value == pytest.approx(6.0) and var == pytest.approx(1.0)
    # A single cell says nothing about the total.
    assert Measurement("a", [1.0], 1.0, query=[[1.0, 0.0]]).total_estimate() is None


def test_estimate_total_is_inverse_variance_weighted_and_clipped():
    m1 = Measurement("a", [40.0, 60.0], 1.0)  # 100, variance 2
    m2 = Measurement(("a", "b"), np.full(6, 20.0), 2.0)  # 120, variance 24
    expected = (100 / 2 + 120 / 24) / (1 / 2 + 1 / 24)
    assert estimate_total([m1, m2]) == pytest.approx(expected, rel=1e-14)
    assert estimate_total([Measurement("a", [-5.0, 1.0], 1.0)]) == 1.0
    with pytest.raises(InvalidArgumentError, match="total="):
        estimate_total([Measurement("a", [1.0], 1.0, query=[[1.0, 0.0]])])


def test_estimate_total_is_unbiased_statistically():
    # Mean of 2000 estimates vs the truth: the standard error is sqrt(var/2000); failing beyond
    # 5 standard errors has probability < 1e-6 under a correct estimator (fixed seed anyway).
    rng = np.random.default_rng(7)
    truth = np.array([30.0, 50.0, 20.0])
    ests = []
    for _ in range(2000):
        ms = [Measurement("b", truth + rng.normal(0, 3.0, 3), 3.0),
              Measurement("b", truth + rng.normal(0, 1.0, 3), 1.0)]
        ests.append(estimate_total(ms))
    var = 1 / (1 / 27 + 1 / 3)
    assert abs(np.mean(ests) - 100.0) < 5 * math.sqrt(var / 2000)
    assert np.var(ests) == pytest.approx(var, rel=0.15)
