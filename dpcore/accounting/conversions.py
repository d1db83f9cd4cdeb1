"""Conversions between rho-zCDP, Renyi DP and (epsilon, delta)-DP.

Every result is an irrational number rounded *conservatively* to a float: epsilon and delta
upward, rho downward, computed at 40 digits with mpmath (see ``_mp``). The optimal orders are
searched by bisecting log(alpha - 1), so the conversions hold for every float input, from
delta = 1e-300 to rho = 1e100 and beyond (a result past the largest float is ``inf``). Proofs:
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
from ._mp import MP_DPS, log_bisect, log_bracket, mpf, round_down, round_up

# The searches run at MP_DPS digits and only choose an order; the bound at the chosen order is
# then evaluated at _EVAL_DPS digits, so cancellation in it (up to ~MP_DPS digits) cannot push
# the float result below the true bound at that order, which is valid for *every* order > 1.
_EVAL_DPS = 2 * MP_DPS


def _rho(rho):
    rho = num.check_number("rho", rho)
    if rho < 0:
        raise InvalidArgumentError(f"rho must be >= 0, got {rho!r}")
    return rho


def _rdp_epsilon_mp(tau, alpha, delta):
    """CKS epsilon at one order (mpmath); valid for every alpha > 1."""
    alpha, delta = mpf(alpha), mpf(delta)
    return tau + mpmath.log1p(-1 / alpha) - (mpmath.log(delta) + mpmath.log(alpha)) / (alpha - 1)


# The orders are written alpha = 1 + x: the optimal x ranges from ~1e-150 (rho = 1e300) to
# ~1e150 (rho = 1e-300), where alpha itself cannot be told from 1, or log(1 - 1/alpha) from 0,
# at 40 digits. Every formula below is the alpha form rewritten without such cancellation.

def _cks_f(rho, x, log_delta):
    """f(1 + x) = alpha rho + log(1 - 1/alpha) - (log delta + log alpha)/(alpha - 1)."""
    return (1 + x) * rho - mpmath.log1p(1 / x) - (log_delta + mpmath.log1p(x)) / x


def _cks_x(rho, log_delta):
    """alpha* - 1 for the order alpha* minimising the CKS epsilon of rho-zCDP (rho > 0).

    f'(alpha) has the sign of g(alpha) = rho (alpha-1)^2 + log(delta alpha), increasing on
    alpha > 1, negative at 1 + min(sqrt(L/rho), L)/2 and positive at 1 + sqrt(L/rho), with
    L = log(1/delta) (proofs/cks_conversion.py): bisect log(alpha - 1) in that bracket.
    """
    L = -log_delta
    x_hi = mpmath.sqrt(L / rho)
    x_lo = min(x_hi, L) / 2
    return log_bisect(lambda x: rho * x * x + log_delta + mpmath.log1p(x) < 0, x_lo, x_hi)[1]


def zcdp_to_approx_dp(rho, delta) -> float:
    """Smallest epsilon (rounded up) such that rho-zCDP implies (epsilon, delta)-DP, by the
    CKS bound optimised over continuous alpha. ``rho = inf`` gives ``inf``; so does a finite
    rho whose epsilon exceeds the largest float. Accurate for every float rho >= 0 and delta
    in (0, 1) (tested for rho up to 1e100 and delta down to 1e-300).

    >>> round(zcdp_to_approx_dp(5, 1e-6), 10)
    20.551948814
    """
    rho = _rho(rho)
    delta = num.probability("delta", delta)
    if rho == math.inf:
        return math.inf
    if rho == 0:
        return 0.0
    with mpmath.workdps(MP_DPS):
        x = _cks_x(mpf(rho), mpmath.log(mpf(delta)))
    with mpmath.workdps(_EVAL_DPS):
        # epsilon' < 0 at the best order means (0, delta)-DP
        return round_up(max(mpmath.mpf(0), _cks_f(mpf(rho), x, mpmath.log(mpf(delta)))))


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
        below = lambda x: (1 + 2 * x) * r - e - mpmath.log1p(1 / x) < 0  # noqa: E731
        x_hi = (e + 1) / (2 * r) + 1
        x = log_bisect(below, *log_bracket(below, x_hi, up=False))[1]
    with mpmath.workdps(_EVAL_DPS):
        r, e = mpf(rho), mpf(epsilon)
        # (alpha-1)(alpha rho - eps) + alpha log(1 - 1/alpha) - log(alpha - 1), alpha = 1 + x;
        # the last two terms are x log x - (1+x) log(1+x), which cancels to ~72 digits at
        # x = 1e69, so for x >= 1 use the equal -x log(1 + 1/x) - log(1 + x).
        tail = (-x * mpmath.log1p(1 / x) - mpmath.log1p(x) if x >= 1
                else x * mpmath.log(x) - (1 + x) * mpmath.log1p(x))
        log_delta = x * ((1 + x) * r - e) + tail
        return min(1.0, round_up(mpmath.exp(log_delta)))


def approx_dp_to_zcdp(epsilon, delta) -> float:
    """Largest rho (rounded down) whose CKS epsilon at ``delta`` is at most ``epsilon``.

    The CKS epsilon of rho-zCDP is increasing in rho, and at its optimal order alpha = 1 + x
    the stationarity condition rho x^2 + log(delta (1 + x)) = 0 gives
    rho(x) = -log(delta (1 + x)) / x^2, decreasing on 0 < x < 1/delta - 1. So
    F(x) = epsilon_CKS(rho(x)) decreases from +inf to below 0 and we bisect F(x) = epsilon in
    log x, starting from the classic bound's order 1 + sqrt(L / rho_classic) and widening the
    bracket by factors e, e^2, e^4, ... The rounded-down result is then *certified* with
    :func:`zcdp_to_approx_dp` itself (stepping down one ulp at a time if needed), so
    converting back never exceeds ``epsilon`` (proofs/inverse_conversion.py). An epsilon so
    small that rho is below the smallest positive float gives 0.0.

    >>> approx_dp_to_zcdp(1, 1e-9)  # doctest: +ELLIPSIS
    0.014973057673588...
    """
    epsilon = num.positive("epsilon", epsilon)
    delta = num.probability("delta", delta)
    with mpmath.workdps(MP_DPS):
        e, ld = mpf(epsilon), mpmath.log(mpf(delta))
        x_max = -mpmath.expm1(ld) / mpf(delta)  # 1/delta - 1, where rho(x) reaches 0

        def above(x):  # F(x) > epsilon
            return -(ld + mpmath.log1p(x)) * (1 + 2 * x) / (x * x) - mpmath.log1p(1 / x) > e

        x0 = min(mpmath.sqrt(-ld / _classic_inverse_mp(e, -ld)), x_max / 2)
        bracket = (log_bracket(above, x0, up=True, limit=x_max) if above(x0)
                   else log_bracket(above, x0, up=False))
        x = log_bisect(above, *bracket)[1]
    with mpmath.workdps(_EVAL_DPS):
        rho = round_down(max(mpmath.mpf(0), -(mpmath.log(mpf(delta)) + mpmath.log1p(x)) / (x * x)))
    # Certify with the public forward conversion (rounded up), independent of the search.
    while rho > 0 and zcdp_to_approx_dp(rho, delta) > epsilon:
        rho = math.nextafter(rho, 0.0)
    return rho


def _classic_inverse_mp(e, L):
    """(sqrt(eps + L) - sqrt(L))^2, written eps^2 / (sqrt(eps + L) + sqrt(L))^2 to avoid
    cancelling sqrt(L) when eps << L."""
    return (e / (mpmath.sqrt(e + L) + mpmath.sqrt(L))) ** 2


def approx_dp_to_zcdp_classic(epsilon, delta) -> float:
    """Inverse of the classic bound, (sqrt(eps + L) - sqrt(L))^2 with L = log(1/delta), rounded down."""
    epsilon = num.positive("epsilon", epsilon)
    delta = num.probability("delta", delta)
    with mpmath.workdps(MP_DPS):
        return round_down(_classic_inverse_mp(mpf(epsilon), -mpmath.log(mpf(delta))))


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
