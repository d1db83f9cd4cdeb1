"""Calibration helpers return floats whose exact cost never exceeds the target."""
import math
from fractions import Fraction

import pytest

from dpcore.accounting import (ExponentialEvent, GaussianEvent, ZCDPAccountant,
                               exponential_epsilon, gaussian_sigma, nist_mst_sigma,
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
    (lambda: exponential_epsilon(float("nan")), "NaN"),
    (lambda: exponential_epsilon(Fraction(1, 10 ** 700)), "too small"),
    (lambda: nist_mst_sigma(0, 1e-6), "epsilon must be > 0"),
    (lambda: nist_mst_sigma(1, 0), r"delta must be in \(0, 1\)"),
])
def test_bad_input(call, match):
    with pytest.raises(InvalidArgumentError, match=match):
        call()
