"""Noise primitives: input validation, seeding, shapes, exactness of the discrete sampler."""
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from dpcore.accounting import noise
from dpcore.accounting.noise import (VARIANCE_SLACK, discrete_gaussian, discrete_gaussian_noise,
                                     discrete_variance, exact_exponential_mechanism,
                                     exponential_mechanism, gaussian_noise, make_rng, noise_key)
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


# -- the default paths: compiled discrete Gaussian at s^2 >= sigma^2, exact exponential mechanism

@settings(max_examples=300, deadline=None)
@given(st.floats(min_value=2.0 ** -11, max_value=2.0 ** 31))
def test_discrete_variance_rounds_up_by_a_tiny_relative_amount_and_fits_the_core(sigma):
    exact = Fraction(sigma) ** 2
    s2 = discrete_variance(sigma)
    assert s2 >= exact
    assert VARIANCE_SLACK == Fraction(1, 2 ** 40) and s2 - exact < exact / 2 ** 40
    assert noise._fits_core(s2.numerator, s2.denominator)
    assert s2.denominator & (s2.denominator - 1) == 0  # a power of two


@pytest.mark.parametrize("sigma", [1e-6, 2.0 ** -12, 2.0 ** 33, 1e30])
def test_discrete_variance_outside_the_compiled_range_is_exact(sigma):
    assert discrete_variance(sigma) == Fraction(sigma) ** 2
    x = discrete_gaussian_noise(sigma, 3, make_rng(4))  # the Python reference samples it
    assert x.shape == (3,)


def test_discrete_variance_is_the_smallest_grid_value_at_or_above_sigma_squared():
    s2 = discrete_variance(0.1)  # 0.1 is not dyadic-with-few-bits: its square needs rounding
    exact = Fraction(0.1) ** 2
    assert s2 > exact and s2 - Fraction(1, s2.denominator) < exact
    assert discrete_variance(3.0) == 9  # an exactly representable square is kept


def test_discrete_gaussian_noise_keys_and_reproducibility(monkeypatch):
    a = discrete_gaussian_noise(2.5, 50, make_rng(3))
    assert a.dtype == np.int64 and np.array_equal(a, discrete_gaussian_noise(2.5, 50, make_rng(3)))
    assert noise_key(make_rng(3)) == noise_key(make_rng(3)) and len(noise_key(make_rng(3))) == 32
    calls = []
    real = noise.secrets.token_bytes
    monkeypatch.setattr(noise.secrets, "token_bytes", lambda n: calls.append(n) or real(n))
    discrete_gaussian_noise(2.5, 50)  # no generator: a fresh key from the OS CSPRNG
    assert calls == [32]
    assert discrete_gaussian_noise(2.5, 0).shape == (0,)
    with pytest.raises(InvalidArgumentError, match="size must be an int >= 0"):
        discrete_gaussian_noise(2.5, -1)


def test_exact_exponential_mechanism_edge_cases():
    assert exact_exponential_mechanism([7], 1.0, 1.0) == 0
    rng = make_rng(9)
    # a gap of 10^30 / 2 nats: the maximiser wins except with probability ~e^-(10^30)
    assert exact_exponential_mechanism([0, 0, 10 ** 30], 1.0, 1.0, rng) == 2
    assert exact_exponential_mechanism([-(10 ** 300), 10 ** 300], 1.0, 1e-300, rng) == 1
    assert exact_exponential_mechanism([Fraction(-1, 3), Fraction(2, 7)], Fraction(1, 10 ** 9), 1, rng) in (0, 1)
    picks = {exact_exponential_mechanism([5, 5, 5], 1.0, 1.0, rng) for _ in range(200)}
    assert picks == {0, 1, 2}  # ties: uniform (missing one has probability 3 (2/3)^200)
    a = [exact_exponential_mechanism([0, 1, 2, 3], 2.0, 1.0, make_rng(5)) for _ in range(5)]
    assert a == [exact_exponential_mechanism([0, 1, 2, 3], 2.0, 1.0, make_rng(5)) for _ in range(5)]


@pytest.mark.parametrize("call, exc, match", [
    (lambda: exact_exponential_mechanism([], 1.0, 1.0), InvalidArgumentError, "non-empty"),
    (lambda: exact_exponential_mechanism([[1]], 1.0, 1.0), InvalidArgumentError, "1-D"),
    (lambda: exact_exponential_mechanism([1.0, float("nan")], 1.0, 1.0), InvalidArgumentError, r"scores\[1\]"),
    (lambda: exact_exponential_mechanism([1.0, float("inf")], 1.0, 1.0), InvalidArgumentError, "finite"),
    (lambda: exact_exponential_mechanism([1], 0.0, 1.0), InvalidArgumentError, "epsilon must be > 0"),
    (lambda: exact_exponential_mechanism([1], 1.0, -1), InvalidArgumentError, "sensitivity must be > 0"),
    (lambda: exact_exponential_mechanism([1], 1.0, 1.0, rng=3), DpcoreTypeError, "Generator"),
    (lambda: discrete_gaussian_noise(0.0, 3), InvalidArgumentError, "sigma must be > 0"),
    (lambda: discrete_gaussian_noise(True, 3), DpcoreTypeError, "sigma"),
])
def test_exact_paths_bad_input(call, exc, match):
    with pytest.raises(exc, match=match):
        call()
