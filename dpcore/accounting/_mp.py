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
