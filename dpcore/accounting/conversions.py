"""Conversions between rho-zCDP, Renyi DP and (epsilon, delta)-DP.

Every result is an irrational number rounded *conservatively* to a float: epsilon and delta
upward, rho downward, computed at 40 digits with mpmath (see ``_mp``). Proofs:
proofs/cks_conversion.py (the bound, its derivative, never looser than the classic bound) and
proofs/inverse_conversion.py (the inverse is conservative).

The CKS bound (Canonne, Kamath & Steinke 2020, Prop. 12 of arXiv 2004.00010 v4; equally
Asoodeh et al. 2020 and Balle et al. 2020 Thm 21): an (alpha, tau)-RDP mechanism is
(epsilon, delta)-DP for
    epsilon = tau + log(1 - 1/alpha) - (log(delta) + log(alpha)) / (alpha - 1),
and rho-zCDP means tau = alpha rho for every alpha > 1.
"""
from __future__ import annotations

import math

import mpmath

from dpcore.errors import InvalidArgumentError

from . import _numbers as num
from ._mp import MP_DPS, mpf, round_down, round_up

_BISECTIONS = 400  # cap; the loops stop once the bracket is below 10**-(MP_DPS-5) relative


def _rho(rho):
    rho = num.check_number("rho", rho)
    if rho < 0:
        raise InvalidArgumentError(f"rho must be >= 0, got {rho!r}")
    return rho


def _rdp_epsilon_mp(tau, alpha, delta):
    """CKS epsilon at one order (mpmath); valid for every alpha > 1."""
    alpha, delta = mpf(alpha), mpf(delta)
    return tau + mpmath.log1p(-1 / alpha) - (mpmath.log(delta) + mpmath.log(alpha)) / (alpha - 1)


def _cks_alpha_mp(rho, delta):
    """The order minimising the CKS epsilon of rho-zCDP (rho > 0).

    d/dalpha [alpha rho + log(1-1/alpha) - log(delta alpha)/(alpha-1)] has the sign of
    g(alpha) = rho (alpha-1)^2 + log(delta alpha), strictly increasing on alpha > 1, negative
    near 1 and positive at 1 + sqrt(log(1/delta)/rho) (proofs/cks_conversion.py).
    """
    lo = mpmath.mpf(1)
    hi = 1 + mpmath.sqrt(-mpmath.log(delta) / rho)
    for _ in range(_BISECTIONS):
        mid = (lo + hi) / 2
        if rho * (mid - 1) ** 2 + mpmath.log(delta * mid) < 0:
            lo = mid
        else:
            hi = mid
        if hi - lo <= hi * mpmath.mpf(10) ** (-MP_DPS + 5):
            break
    return hi


def _cks_epsilon_mp(rho, delta):
    rho, delta = mpf(rho), mpf(delta)
    if rho == 0:
        return mpmath.mpf(0)
    alpha = _cks_alpha_mp(rho, delta)
    return max(mpmath.mpf(0), _rdp_epsilon_mp(alpha * rho, alpha, delta))


def zcdp_to_approx_dp(rho, delta) -> float:
    """Smallest epsilon (rounded up) such that rho-zCDP implies (epsilon, delta)-DP, by the
    CKS bound optimised over continuous alpha. ``rho = inf`` gives ``inf``.

    >>> round(zcdp_to_approx_dp(5, 1e-6), 10)
    20.551948814
    """
    rho = _rho(rho)
    delta = num.probability("delta", delta)
    if rho == math.inf:
        return math.inf
    with mpmath.workdps(MP_DPS):
        return round_up(_cks_epsilon_mp(rho, delta))


def zcdp_to_approx_dp_classic(rho, delta) -> float:
    """The classic bound rho + 2 sqrt(rho log(1/delta)) (Bun & Steinke 2016, Prop. 1.3), rounded
    up. Looser than :func:`zcdp_to_approx_dp` (proofs/cks_conversion.py); kept for comparison."""
    rho = _rho(rho)
    delta = num.probability("delta", delta)
    if rho == math.inf:
        return math.inf
    with mpmath.workdps(MP_DPS):
        r = mpf(rho)
        return round_up(r + 2 * mpmath.sqrt(r * -mpmath.log(mpf(delta))))


def zcdp_delta(rho, epsilon) -> float:
    """Smallest delta (rounded up, at most 1) such that rho-zCDP implies (epsilon, delta)-DP:
    delta = min_alpha exp((alpha-1)(alpha rho - epsilon)) / (alpha-1) * (1 - 1/alpha)^alpha
    (CKS 2020; the same bound as :func:`zcdp_to_approx_dp`, solved for delta)."""
    rho = _rho(rho)
    epsilon = num.nonnegative("epsilon", epsilon)
    if rho == math.inf:
        return 1.0
    if rho == 0:
        return 0.0
    with mpmath.workdps(MP_DPS):
        r, e = mpf(rho), mpf(epsilon)
        # d/dalpha log delta(alpha) = (2 alpha - 1) rho - eps + log(1 - 1/alpha): increasing,
        # -inf at alpha -> 1, positive beyond (eps + 1)/(2 rho) + 2 (proofs/cks_conversion.py).
        lo, hi = mpmath.mpf(1), (e + 1) / (2 * r) + 2
        for _ in range(_BISECTIONS):
            mid = (lo + hi) / 2
            if (2 * mid - 1) * r - e + mpmath.log1p(-1 / mid) < 0:
                lo = mid
            else:
                hi = mid
            if hi - lo <= hi * mpmath.mpf(10) ** (-MP_DPS + 5):
                break
        a = hi
        log_delta = (a - 1) * (a * r - e) + a * mpmath.log1p(-1 / a) - mpmath.log(a - 1)
        return min(1.0, round_up(mpmath.exp(log_delta)))


def approx_dp_to_zcdp(epsilon, delta) -> float:
    """Largest rho (rounded down) whose CKS epsilon at ``delta`` is at most ``epsilon``.

    The CKS epsilon of rho-zCDP is increasing in rho, and at its optimal order alpha the
    stationarity condition rho (alpha-1)^2 + log(delta alpha) = 0 gives
    rho(alpha) = -log(delta alpha) / (alpha-1)^2, decreasing on 1 < alpha < 1/delta. So
    F(alpha) = epsilon_CKS(rho(alpha)) decreases from +inf to 0 and we bisect F(alpha) = epsilon.
    The rounded-down result is then *certified* with :func:`zcdp_to_approx_dp` itself (stepping
    down one ulp at a time if needed), so converting back never exceeds ``epsilon``
    (proofs/inverse_conversion.py).

    >>> approx_dp_to_zcdp(1, 1e-9)  # doctest: +ELLIPSIS
    0.014973057673588...
    """
    epsilon = num.positive("epsilon", epsilon)
    delta = num.probability("delta", delta)
    with mpmath.workdps(MP_DPS):
        e, d = mpf(epsilon), mpf(delta)

        def rho_at(alpha):
            return -mpmath.log(d * alpha) / (alpha - 1) ** 2

        def eps_at(alpha):
            return _rdp_epsilon_mp(alpha * rho_at(alpha), alpha, d)

        lo, hi = mpmath.mpf(1), 1 / d
        for _ in range(_BISECTIONS):
            mid = (lo + hi) / 2
            if eps_at(mid) > e:
                lo = mid
            else:
                hi = mid
            if hi - lo <= hi * mpmath.mpf(10) ** (-MP_DPS + 5):
                break
        rho = round_down(rho_at(hi))
    # Certify with the public forward conversion (rounded up), independent of the search.
    while rho > 0 and zcdp_to_approx_dp(rho, delta) > epsilon:
        rho = math.nextafter(rho, 0.0)
    return rho


def approx_dp_to_zcdp_classic(epsilon, delta) -> float:
    """Inverse of the classic bound, (sqrt(eps + L) - sqrt(L))^2 with L = log(1/delta), rounded down."""
    epsilon = num.positive("epsilon", epsilon)
    delta = num.probability("delta", delta)
    with mpmath.workdps(MP_DPS):
        L = -mpmath.log(mpf(delta))
        return round_down((mpmath.sqrt(mpf(epsilon) + L) - mpmath.sqrt(L)) ** 2)


def rdp_to_approx_dp(orders, rdp, delta) -> float:
    """Smallest epsilon (rounded up) over the given orders for an (alpha, rdp[alpha])-RDP curve,
    by the CKS bound (infinite entries are skipped)."""
    delta = num.probability("delta", delta)
    orders, rdp = tuple(orders), tuple(rdp)
    if len(orders) != len(rdp) or not orders:
        raise InvalidArgumentError(
            f"orders and rdp must be non-empty and of equal length, got {len(orders)} and {len(rdp)}")
    with mpmath.workdps(MP_DPS):
        best = mpmath.inf
        for a, tau in zip(orders, rdp):
            num.finite("order", a)
            if not a > 1:
                raise InvalidArgumentError(f"every order must be > 1, got {a!r}")
            tau = num.check_number("rdp", tau)
            if tau < 0:
                raise InvalidArgumentError(f"rdp values must be >= 0, got {tau!r}")
            if tau == math.inf:
                continue
            best = min(best, _rdp_epsilon_mp(mpf(tau), a, delta))
        return round_up(max(best, mpmath.mpf(0)))
