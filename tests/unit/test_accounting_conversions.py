"""Known answers for the conversions (mpmath at 50 digits and OpenDP agree to the last ulp;
notes-accounting.md section 6) and their conservative rounding."""
import math
from fractions import Fraction

import mpmath
import pytest

from dpcore.accounting import (RDPAccountant, approx_dp_to_zcdp, approx_dp_to_zcdp_classic,
                               rdp_to_approx_dp, zcdp_delta, zcdp_to_approx_dp,
                               zcdp_to_approx_dp_classic)
from dpcore.accounting import GaussianEvent, ZCDPEvent, PureDPEvent, ExponentialEvent
from dpcore.errors import InvalidArgumentError

REL = 1e-12


@pytest.mark.parametrize("rho, delta, cks, classic", [
    (0.5, 1e-6, 5.221534444530169, 5.756521769756932),
    (5, 1e-6, 20.551948814041252, 21.6225813627),
    (0.1, 1e-9, 2.715481886730502, 2.9791155473128486),
    (1, 1e-5, 7.07719669580634, 7.786140424415112),
])
def test_zcdp_to_approx_dp_known_answers(rho, delta, cks, classic):
    assert zcdp_to_approx_dp(rho, delta) == pytest.approx(cks, rel=REL)
    assert zcdp_to_approx_dp_classic(rho, delta) == pytest.approx(classic, rel=REL)


@pytest.mark.parametrize("epsilon, delta, rho_cks, rho_classic", [
    (1, 1e-9, 0.01497305767358853, 0.01178116039520142),
    (1, 1e-6, 0.02435597035953837, 0.01746890476912338),
    (3, 1e-9, 0.12058242891102, 0.1013608225097161),
    (10, 1e-6, 1.539278763866729, 1.353014690168873),
])
def test_approx_dp_to_zcdp_known_answers(epsilon, delta, rho_cks, rho_classic):
    rho = approx_dp_to_zcdp(epsilon, delta)
    assert rho == pytest.approx(rho_cks, rel=REL)
    assert approx_dp_to_zcdp_classic(epsilon, delta) == pytest.approx(rho_classic, rel=REL)
    # conservative: converting back never exceeds the target epsilon
    assert zcdp_to_approx_dp(rho, delta) <= epsilon
    assert zcdp_delta(rho, epsilon) <= delta * (1 + 1e-14)


def _cks_reference(rho, delta):
    """Independent brute force: minimise the CKS epsilon with mpmath's own optimiser."""
    with mpmath.workdps(40):
        r, d = mpmath.mpf(rho), mpmath.mpf(delta)
        f = lambda a: a * r + mpmath.log(1 - 1 / a) - (mpmath.log(d) + mpmath.log(a)) / (a - 1)
        lo, hi = mpmath.mpf(-40), mpmath.mpf(40)  # ternary search on t = log(alpha - 1)
        for _ in range(200):
            m1, m2 = lo + (hi - lo) / 3, hi - (hi - lo) / 3
            if f(1 + mpmath.exp(m1)) < f(1 + mpmath.exp(m2)):
                hi = m2
            else:
                lo = m1
        a = 1 + mpmath.exp((lo + hi) / 2)
        return max(mpmath.mpf(0), f(a))  # epsilon < 0 means (0, delta)-DP


@pytest.mark.parametrize("rho", [1e-6, 0.003, 0.5, 2.0, 40.0])
@pytest.mark.parametrize("delta", [1e-12, 1e-6, 0.3])
def test_cks_matches_independent_optimum_and_rounds_up(rho, delta):
    ref = _cks_reference(rho, delta)
    got = zcdp_to_approx_dp(rho, delta)
    assert got >= ref and got == pytest.approx(float(ref), rel=1e-14)


def test_zcdp_delta_inverts_epsilon():
    eps = zcdp_to_approx_dp(5, 1e-6)
    assert zcdp_delta(5, eps) == pytest.approx(1e-6, rel=1e-12)
    assert zcdp_delta(0, 1.0) == 0.0 and zcdp_delta(math.inf, 1.0) == 1.0
    assert zcdp_delta(0.5, 0.0) == pytest.approx(0.5588356393474351, rel=1e-12)  # OpenDP regression
    assert zcdp_delta(0.05, 0.25) == pytest.approx(8.17727531036956e-2, rel=1e-12)


def test_edges():
    assert zcdp_to_approx_dp(0, 1e-6) == 0.0
    assert zcdp_to_approx_dp(math.inf, 1e-6) == math.inf
    assert zcdp_to_approx_dp(Fraction(1, 2), 1e-6) == zcdp_to_approx_dp(0.5, 1e-6)


@pytest.mark.parametrize("call, match", [
    (lambda: zcdp_to_approx_dp(-1, 1e-6), "rho must be >= 0"),
    (lambda: zcdp_to_approx_dp(float("nan"), 1e-6), "NaN"),
    (lambda: zcdp_to_approx_dp(1, 0), r"delta must be in \(0, 1\)"),
    (lambda: zcdp_to_approx_dp(1, 1), r"delta must be in \(0, 1\)"),
    (lambda: zcdp_to_approx_dp(1, float("nan")), "NaN"),
    (lambda: approx_dp_to_zcdp(0, 1e-6), "epsilon must be > 0"),
    (lambda: approx_dp_to_zcdp(-1, 1e-6), "epsilon must be > 0"),
    (lambda: approx_dp_to_zcdp(float("inf"), 1e-6), "finite"),
    (lambda: approx_dp_to_zcdp(1, 1.5), r"delta must be in \(0, 1\)"),
    (lambda: rdp_to_approx_dp([0.5], [1.0], 1e-6), "order must be > 1"),
    (lambda: rdp_to_approx_dp([2, 3], [1.0], 1e-6), "equal length"),
])
def test_bad_input(call, match):
    with pytest.raises(InvalidArgumentError, match=match):
        call()


def test_rdp_accountant_gaussian_composition_known_answers():
    acc = RDPAccountant().compose(GaussianEvent(1.0), count=10)
    # dp_accounting's grid gives 20.5519916298 at order 2.6; refining the order continuously
    # reaches the CKS optimum over continuous alpha, 20.5519488140.
    assert acc.epsilon(1e-6) == pytest.approx(20.5519488140, rel=1e-11)
    assert acc.rdp(2.6) == pytest.approx(13.0, rel=1e-15)
    grid_only = rdp_to_approx_dp(acc.orders, [acc.rdp(a) for a in acc.orders], 1e-6)
    assert grid_only == pytest.approx(20.5519916298, rel=1e-10)


def test_rdp_of_zcdp_event_agrees_with_zcdp_conversion():
    acc = RDPAccountant().compose(ZCDPEvent(Fraction(1, 2)))
    assert acc.epsilon(1e-6) == pytest.approx(zcdp_to_approx_dp(0.5, 1e-6), rel=1e-11)
    assert acc.epsilon(1e-6) >= zcdp_to_approx_dp(0.5, 1e-6) * (1 - 1e-13)


def test_rdp_pure_dp_uses_the_tighter_curve():
    # dp_accounting test_compute_epsilon_delta_pure_dp: orders 2..32 with rdp 1.1 -> eps at order 32
    assert rdp_to_approx_dp(range(2, 33), [1.1] * 31, 1e-5) == pytest.approx(
        1.1 + math.log1p(-1 / 32) - (math.log(1e-5) + math.log(32)) / 31, rel=1e-12)
    # an epsilon-DP event is never worse than epsilon at any order, nor than its zCDP line
    acc = RDPAccountant().compose(PureDPEvent(1.0))
    for a in (1.5, 2, 10, 100):
        assert acc.rdp(a) <= min(1.0, a / 2) * (1 + 1e-15)
    # randomized response with eps = 1 at order 2 (closed form)
    rr = 1 - math.log((1 + math.exp(-1)) / (1 + math.exp(-3)))
    assert acc.rdp(2) == pytest.approx(rr, rel=1e-14)


def test_rdp_exponential_mechanism_is_eps_squared_over_8_line_for_small_orders():
    acc = RDPAccountant().compose(ExponentialEvent(0.1, 1.0))
    assert acc.rdp(2) == pytest.approx(2 * 0.01 / 8, rel=1e-14)


def test_rdp_sigma_zero_is_infinite():
    acc = RDPAccountant().compose(GaussianEvent(0.0))
    assert acc.rdp(2) == math.inf and acc.epsilon(1e-6) == math.inf


# --- the extremes: delta down to 1e-300, rho up to 1e100 (issue 15) ---------------------------
# References minimise the *alpha form* of the bounds by ternary search on t = log(alpha - 1) over
# [-400, 400] at 400 digits, so alpha = 1 + 1e-150 and 1 + 1e150 are both represented and every
# reported value has more than 60 correct digits (the optimum is flat, so the 1e-30-wide search
# bracket costs nothing at 60 digits).

def _ternary_min(f):
    lo, hi = mpmath.mpf(-400), mpmath.mpf(400)
    for _ in range(260):
        m1, m2 = lo + (hi - lo) / 3, hi - (hi - lo) / 3
        if f(1 + mpmath.exp(m1)) < f(1 + mpmath.exp(m2)):
            hi = m2
        else:
            lo = m1
    return f(1 + mpmath.exp((lo + hi) / 2))


def _ref_epsilon(rho, delta):
    with mpmath.workdps(400):
        r, d = mpmath.mpf(rho), mpmath.mpf(delta)
        best = _ternary_min(lambda a: a * r + mpmath.log(1 - 1 / a) - (mpmath.log(d) + mpmath.log(a)) / (a - 1))
        with mpmath.workdps(60):
            return +max(best, mpmath.mpf(0))


def _ref_delta(rho, epsilon):
    with mpmath.workdps(400):
        r, e = mpmath.mpf(rho), mpmath.mpf(epsilon)
        best = _ternary_min(lambda a: (a - 1) * (a * r - e) + a * mpmath.log(1 - 1 / a) - mpmath.log(a - 1))
        with mpmath.workdps(60):
            return +min(mpmath.exp(best), mpmath.mpf(1))


def _rounded_up_from(got, ref):
    """got is ref rounded up to a float (within two ulps, allowing for the rounding margin)."""
    two_ulps_up = math.nextafter(math.nextafter(float(ref), math.inf), math.inf)
    return got >= ref and (got == 0 if ref == 0 else got <= two_ulps_up)


@pytest.mark.parametrize("rho, delta", [
    (1e-300, 1e-300), (1e-10, 1e-300), (1.0, 1e-300), (1.0, 1e-122), (5.0, 1e-6),
    (1e80, 1e-6), (1e81, 1e-6), (1e100, 1e-300), (1e100, 0.5), (0.5, 0.9), (1e-137, 2e-204),
])
def test_cks_epsilon_at_the_extremes(rho, delta):
    ref = _ref_epsilon(rho, delta)
    got = zcdp_to_approx_dp(rho, delta)
    assert _rounded_up_from(got, ref), (got, ref)
    assert got <= zcdp_to_approx_dp_classic(rho, delta)


@pytest.mark.parametrize("epsilon, delta", [
    (1.0, 1e-300), (1e-3, 1e-300), (50.0, 1e-300), (1.0, 1e-122), (1e-3, 0.5), (1e3, 1e-300),
    (1e100, 1e-6), (1e-6, 1e-10),
])
def test_inverse_at_the_extremes(epsilon, delta):
    rho = approx_dp_to_zcdp(epsilon, delta)
    assert rho >= approx_dp_to_zcdp_classic(epsilon, delta) > 0  # issue 15: was 0 at 1e-300
    assert _ref_epsilon(rho, delta) <= epsilon                    # conservative
    assert _ref_epsilon(rho * (1 + 1e-13), delta) > epsilon       # and the largest such rho


@pytest.mark.parametrize("rho, epsilon", [
    (1e-137, 1.1089493722680492e-67), (1.0, 10.0), (1e-10, 1e-3), (1e100, 1e3), (0.5, 0.0), (40.0, 80.0),
])
def test_zcdp_delta_at_the_extremes(rho, epsilon):
    ref = _ref_delta(rho, epsilon)
    got = zcdp_delta(rho, epsilon)
    assert got >= ref and got == pytest.approx(float(ref), rel=1e-13), (got, ref)


def test_classic_inverse_has_no_cancellation():
    # (sqrt(eps + L) - sqrt(L))^2 computed naively loses every digit when eps << L
    with mpmath.workdps(60):
        L = -mpmath.log(mpmath.mpf(1e-300))
        ref = (mpmath.sqrt(mpmath.mpf(1e-30) + L) - mpmath.sqrt(L)) ** 2
    assert approx_dp_to_zcdp_classic(1e-30, 1e-300) == pytest.approx(float(ref), rel=1e-14)
    assert approx_dp_to_zcdp_classic(1e-30, 1e-300) <= ref
