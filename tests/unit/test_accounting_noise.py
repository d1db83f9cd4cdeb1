"""Noise primitives: input validation, seeding, shapes, exactness of the discrete sampler."""
from fractions import Fraction

import numpy as np
import pytest

from dpcore.accounting import noise
from dpcore.accounting.noise import (discrete_gaussian, exponential_mechanism, gaussian_noise,
                                     make_rng)
from dpcore.errors import DpcoreTypeError, InvalidArgumentError


def test_seeded_rng_is_reproducible_and_unseeded_is_not():
    assert np.array_equal(gaussian_noise(1.0, 5, make_rng(7)), gaussian_noise(1.0, 5, make_rng(7)))
    assert not np.array_equal(gaussian_noise(1.0, 5, make_rng()), gaussian_noise(1.0, 5, make_rng()))
    a = discrete_gaussian(Fraction(5, 2), 20, make_rng(3))
    assert np.array_equal(a, discrete_gaussian(Fraction(5, 2), 20, make_rng(3)))


def test_shapes_and_dtypes():
    rng = make_rng(0)
    assert gaussian_noise(2.0, (3, 4), rng).shape == (3, 4)
    x = discrete_gaussian(7, (2, 3), rng)
    assert x.shape == (2, 3) and x.dtype == np.int64
    assert discrete_gaussian(Fraction(1, 3), 0, rng).shape == (0,)
    assert isinstance(exponential_mechanism([0.0], 1.0, 1.0, rng), int)


def test_discrete_gaussian_uses_only_integers(monkeypatch):
    """The sampling path must be exact: every Bernoulli(p/q) it draws has integer p and q."""
    seen = []
    real = noise._bernoulli

    def checked(p, q, src):
        seen.append((type(p), type(q)))
        assert type(p) is int and type(q) is int and 0 <= p <= q
        return real(p, q, src)

    monkeypatch.setattr(noise, "_bernoulli", checked)
    discrete_gaussian(Fraction(150), 200, make_rng(1))
    discrete_gaussian(0.1, 50, make_rng(1))
    assert seen and set(seen) == {(int, int)}


def test_uniform_below_handles_huge_bounds_exactly():
    src = noise._Bits(make_rng(5))
    n = 3 * 2 ** 200 + 1
    draws = [src.below(n) for _ in range(3000)]
    assert all(0 <= d < n for d in draws)
    # the top third of the range is hit about a third of the time (binomial sd ~ 26)
    assert abs(sum(d >= 2 * 2 ** 200 for d in draws) - 1000) < 160
    small = [src.below(3) for _ in range(3000)]
    assert set(small) == {0, 1, 2} and abs(small.count(2) - 1000) < 160
    assert {src.below(1) for _ in range(10)} == {0}


def test_float_sigma_sq_is_taken_exactly():
    x = discrete_gaussian(0.1, 10, make_rng(2))  # exact binary value of 0.1
    assert x.dtype == np.int64


def test_exponential_mechanism_prefers_high_scores_and_handles_huge_scores():
    rng = make_rng(9)
    assert exponential_mechanism([0, 0, 1e6], 1.0, 1.0, rng) == 2
    assert exponential_mechanism([-1e300, 1e300], 1.0, 1e-300, rng) == 1


@pytest.mark.parametrize("call, exc, match", [
    (lambda r: gaussian_noise(0.0, 3, r), InvalidArgumentError, "sigma must be > 0"),
    (lambda r: gaussian_noise(-1.0, 3, r), InvalidArgumentError, "sigma must be > 0"),
    (lambda r: gaussian_noise(float("nan"), 3, r), InvalidArgumentError, "NaN"),
    (lambda r: gaussian_noise(1.0, 3, np.random.default_rng), DpcoreTypeError, "Generator"),
    (lambda r: discrete_gaussian(0, 3, r), InvalidArgumentError, "sigma_sq must be > 0"),
    (lambda r: discrete_gaussian(float("inf"), 3, r), InvalidArgumentError, "finite"),
    (lambda r: exponential_mechanism([], 1.0, 1.0, r), InvalidArgumentError, "non-empty"),
    (lambda r: exponential_mechanism([[1.0]], 1.0, 1.0, r), InvalidArgumentError, "1-D"),
    (lambda r: exponential_mechanism([1.0, float("nan")], 1.0, 1.0, r), InvalidArgumentError,
     r"scores\[1\]"),
    (lambda r: exponential_mechanism([1.0], 0.0, 1.0, r), InvalidArgumentError, "epsilon must be > 0"),
    (lambda r: exponential_mechanism([1.0], 1.0, 0.0, r), InvalidArgumentError, "sensitivity must be > 0"),
    (lambda r: make_rng(-1), InvalidArgumentError, "seed must be >= 0"),
    (lambda r: make_rng(1.5), DpcoreTypeError, "seed must be an int"),
])
def test_bad_input(call, exc, match):
    with pytest.raises(exc, match=match):
        call(make_rng(0))
