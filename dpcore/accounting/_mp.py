"""High-precision helpers shared by the conversions (not by the filter's exact arithmetic)."""
from __future__ import annotations

import math
from fractions import Fraction

import mpmath

# 40 significant digits: evaluation error ~1e-35 relative, far below one float ulp (~1e-16),
# so rounding the mpmath value outward to a float is conservative with a wide margin.
MP_DPS = 40
_MARGIN = mpmath.mpf(10) ** -30


def round_up(x) -> float:
    """Smallest float >= x (plus a relative margin covering mpmath's own rounding)."""
    if x == mpmath.inf:
        return math.inf
    x = x + abs(x) * _MARGIN
    f = float(x)
    if mpmath.mpf(f) < x:
        f = math.nextafter(f, math.inf)
    return f


def round_down(x) -> float:
    """Largest float <= x (minus a relative margin covering mpmath's own rounding)."""
    x = x - abs(x) * _MARGIN
    f = float(x)
    if mpmath.mpf(f) > x:
        f = math.nextafter(f, -math.inf)
    return f


def mpf(value) -> mpmath.mpf:
    """An int, float or Fraction as an mpmath number at the current precision."""
    if isinstance(value, mpmath.mpf):
        return value
    q = value if isinstance(value, Fraction) else Fraction(value)
    return mpmath.mpf(q.numerator) / q.denominator


def log_bisect(below, x_lo, x_hi):
    """Bisect ``u = log x`` for the switch of a monotone predicate: given ``below(x_lo)`` true
    and ``below(x_hi)`` false (0 < x_lo < x_hi), return the final bracket ``(x_lo, x_hi)``.

    Bisecting the logarithm keeps the relative width shrinking geometrically whatever the scale
    (the optimal orders alpha - 1 of the conversions range from 1e-150 to 1e150), where linear
    bisection from 1 cannot resolve alpha - 1 below 2**-steps. Stops once the bracket is
    10**-(dps-5) wide in u relative to max(1, |u|) (for |u| <= 1 that is the relative width
    in x): ~130 steps per unit of starting width at 40 digits.
    """
    tol = mpmath.mpf(10) ** (-mpmath.mp.dps + 5)
    u_lo, u_hi = mpmath.log(x_lo), mpmath.log(x_hi)
    while u_hi - u_lo > tol * max(1, abs(u_lo), abs(u_hi)):
        mid = (u_lo + u_hi) / 2
        if below(mpmath.exp(mid)):
            u_lo = mid
        else:
            u_hi = mid
    return mpmath.exp(u_lo), mpmath.exp(u_hi)


def log_bracket(below, x0, *, up: bool, limit=None):
    """Step ``x0`` by factors e, e^2, e^4, ... (up or down) until ``below`` changes its value,
    returning the pair of consecutive points ``(x_lo, x_hi)`` with ``below(x_lo)`` true and
    ``below(x_hi)`` false. ``limit`` (up only) is a point known to be not below, where the
    search stops; going down, ``below`` must become true at some x > 0."""
    step = mpmath.mpf(1)
    x = x0
    while True:
        nxt = x * mpmath.exp(step) if up else x * mpmath.exp(-step)
        if up and limit is not None and nxt >= limit:
            return x, limit
        if below(nxt) != up:
            return (x, nxt) if up else (nxt, x)
        x, step = nxt, 2 * step
