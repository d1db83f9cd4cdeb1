"""Property tests for the conversions: monotonicity, CKS never looser than the classic bound,
and the inverse round-trips conservatively."""
from hypothesis import given, settings, strategies as st

from dpcore.accounting import (approx_dp_to_zcdp, zcdp_delta, zcdp_to_approx_dp,
                               zcdp_to_approx_dp_classic)

SETTINGS = settings(max_examples=40, deadline=None)
rhos = st.floats(min_value=1e-8, max_value=1e3)
deltas = st.floats(min_value=1e-15, max_value=0.5)
epsilons = st.floats(min_value=1e-3, max_value=50)


@SETTINGS
@given(a=rhos, b=rhos, delta=deltas)
def test_epsilon_is_monotone_in_rho(a, b, delta):
    lo, hi = sorted((a, b))
    assert zcdp_to_approx_dp(lo, delta) <= zcdp_to_approx_dp(hi, delta)


@SETTINGS
@given(rho=rhos, a=deltas, b=deltas)
def test_epsilon_is_antitone_in_delta(rho, a, b):
    lo, hi = sorted((a, b))
    assert zcdp_to_approx_dp(rho, lo) >= zcdp_to_approx_dp(rho, hi)


@SETTINGS
@given(rho=rhos, delta=deltas)
def test_cks_never_looser_than_classic(rho, delta):
    assert zcdp_to_approx_dp(rho, delta) <= zcdp_to_approx_dp_classic(rho, delta)


@SETTINGS
@given(epsilon=epsilons, delta=deltas)
def test_inverse_round_trips_conservatively(epsilon, delta):
    rho = approx_dp_to_zcdp(epsilon, delta)
    back = zcdp_to_approx_dp(rho, delta)
    assert back <= epsilon                      # never overspends the (epsilon, delta) target
    assert back >= epsilon * (1 - 1e-9)         # and is tight
    assert zcdp_delta(rho, epsilon) <= delta * (1 + 1e-12)


@SETTINGS
@given(e1=epsilons, e2=epsilons, d1=deltas, d2=deltas)
def test_inverse_is_monotone(e1, e2, d1, d2):
    (elo, ehi), (dlo, dhi) = sorted((e1, e2)), sorted((d1, d2))
    assert approx_dp_to_zcdp(elo, dlo) <= approx_dp_to_zcdp(ehi, dlo) <= approx_dp_to_zcdp(ehi, dhi)


@SETTINGS
@given(rho=rhos, delta=deltas)
def test_delta_inverts_epsilon(rho, delta):
    eps = zcdp_to_approx_dp(rho, delta)
    if eps > 0:
        assert zcdp_delta(rho, eps) <= delta * (1 + 1e-9)
