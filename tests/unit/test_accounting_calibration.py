"""Calibration helpers return floats whose exact cost never exceeds the target."""
import math
from fractions import Fraction

import pytest

from dpcore.accounting import (ExponentialEvent, GaussianEvent, ZCDPAccountant,
                               exponential_epsilon, gaussian_sigma, l2_sensitivity, nist_mst_sigma,
                               zcdp_to_approx_dp_classic)
from dpcore.errors import InvalidArgumentError

ACC = ZCDPAccountant()


@pytest.mark.parametrize("rho", [Fraction(1, 2), 0.1, 1e-9, Fraction(1, 3), 0.014973057673588525, 700])
@pytest.mark.parametrize("sensitivity", [1, 2.5, Fraction(1, 7)])
def test_gaussian_sigma_is_the_smallest_float_within_budget(rho, sensitivity):
    sigma = gaussian_sigma(rho, sensitivity)
    cost = ACC.rho(GaussianEvent(sigma, sensitivity))
    assert cost <= Fraction(rho)
    assert ACC.rho(GaussianEvent(math.nextafter(sigma, 0), sensitivity)) > Fraction(rho)
    assert sigma == pytest.approx(float(sensitivity) / math.sqrt(2 * float(rho)), rel=1e-15)


@pytest.mark.parametrize("rho", [Fraction(1, 8), 0.1, 1e-9, Fraction(1, 3), 50])
def test_exponential_epsilon_is_the_largest_float_within_budget(rho):
    eps = exponential_epsilon(rho)
    assert ACC.rho(ExponentialEvent(eps, 1)) <= Fraction(rho)
    assert ACC.rho(ExponentialEvent(math.nextafter(eps, math.inf), 1)) > Fraction(rho)
    assert eps == pytest.approx(math.sqrt(8 * float(rho)), rel=1e-15)


def test_exact_values():
    assert gaussian_sigma(Fraction(1, 2)) == 1.0
    assert gaussian_sigma(2, 4) == 2.0
    assert exponential_epsilon(Fraction(1, 8)) == 1.0


@pytest.mark.parametrize("epsilon, delta", [(1, 1e-6), (0.3, 1e-9), (8, 1e-5)])
def test_nist_mst_sigma_meets_epsilon_by_the_classic_bound(epsilon, delta):
    sigma = nist_mst_sigma(epsilon, delta)
    L = -math.log(delta)
    assert sigma == pytest.approx((math.sqrt(L) + math.sqrt(L + epsilon)) / epsilon, rel=1e-15)
    # Two sensitivity-1 measurements cost rho = 1/sigma^2; the classic conversion of that is
    # min over alpha of alpha rho + L/(alpha - 1), attained at the paper's alpha: epsilon.
    assert zcdp_to_approx_dp_classic(1 / sigma ** 2, delta) == pytest.approx(epsilon, rel=1e-12)
    assert zcdp_to_approx_dp_classic(float(Fraction(1) / Fraction(sigma) ** 2), delta) <= epsilon * (1 + 1e-14)


@pytest.mark.parametrize("call, match", [
    (lambda: gaussian_sigma(0), "rho must be > 0"),
    (lambda: gaussian_sigma(-1), "rho must be > 0"),
    (lambda: gaussian_sigma(float("inf")), "finite"),
    (lambda: gaussian_sigma(1, 0), "sensitivity must be > 0"),
    (lambda: gaussian_sigma(1e-300, 1e300), "too small"),
    (lambda: exponential_epsilon(float("nan")), "NaN"),
    (lambda: exponential_epsilon(Fraction(1, 10 ** 700)), "too small"),
    (lambda: nist_mst_sigma(0, 1e-6), "epsilon must be > 0"),
    (lambda: nist_mst_sigma(1, 0), r"delta must be in \(0, 1\)"),
])
def test_bad_input(call, match):
    with pytest.raises(InvalidArgumentError, match=match):
        call()


@pytest.mark.parametrize("weights", [[1.0, 1.0, 1.0], [3.0, 4.0], [0.1] * 7, [1e-200, 1e-200],
                                     [2.0 ** 0.5, 1 / 3, 7.25], [1]])
def test_l2_sensitivity_is_the_smallest_float_not_below_the_exact_norm(weights):
    exact_sq = sum(Fraction(w) ** 2 for w in weights)
    s = l2_sensitivity(weights)
    assert Fraction(s) ** 2 >= exact_sq
    assert Fraction(math.nextafter(s, 0)) ** 2 < exact_sq


def test_l2_sensitivity_of_float_normalised_weights_may_exceed_one():
    import numpy as np
    w = np.ones(3) / np.linalg.norm(np.ones(3))
    assert l2_sensitivity(w) >= 1.0
    assert Fraction(l2_sensitivity(w)) ** 2 >= sum(Fraction(float(x)) ** 2 for x in w)


@pytest.mark.parametrize("weights, match", [([], "non-empty"), ([0.0, 0.0], "zero sensitivity"),
                                            ([1.0, float("nan")], "NaN"), ([1.7e308, 1.7e308], "overflow")])
def test_l2_sensitivity_bad_input(weights, match):
    with pytest.raises(InvalidArgumentError, match=match):
        l2_sensitivity(weights)
