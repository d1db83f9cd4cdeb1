"""Exact conversion and validation of the numbers privacy parameters are made of.

A privacy parameter is an ``int``, a ``float`` or a ``fractions.Fraction``. A float is an exact
binary rational, so ``Fraction(x)`` is the value the sampler really uses; we never round it
through a decimal string. ``bool`` is refused (``True`` is an ``int`` in Python, but a flag
passed as sigma is a bug, not a number).
"""
from __future__ import annotations

import math
import numbers
from fractions import Fraction

from dpcore.errors import DpcoreTypeError, InvalidArgumentError

Number = int | float | Fraction

try:  # numpy.bool_ is not a bool subclass but must be refused too
    from numpy import bool_ as np_bool
except ImportError:  # pragma: no cover - numpy is a dependency
    np_bool = bool


def check_number(name: str, value: object) -> Number:
    """Return ``value`` unchanged if it is a real number of an accepted type, else raise."""
    if isinstance(value, (bool, np_bool)):
        raise DpcoreTypeError(f"{name} must be an int, float or Fraction, got bool {value!r}")
    if not isinstance(value, (int, float, Fraction)):
        # numpy scalars are accepted by converting them to the Python type they represent.
        if isinstance(value, numbers.Integral):
            return int(value)
        if isinstance(value, numbers.Rational):
            # e.g. sympy.Rational: keep it exact (rounding 1/3 to a float could round *up*)
            return Fraction(int(value.numerator), int(value.denominator))
        if isinstance(value, numbers.Real) and not isinstance(value, bool):
            return check_number(name, float(value))
        raise DpcoreTypeError(
            f"{name} must be an int, float or Fraction, got {type(value).__name__} {value!r}")
    if isinstance(value, float) and type(value) is not float:
        value = float(value)  # numpy.float64 subclasses float; store the plain value
    if isinstance(value, float) and math.isnan(value):
        raise InvalidArgumentError(f"{name} must not be NaN, got {value!r}")
    return value


def finite(name: str, value: object) -> Number:
    value = check_number(name, value)
    if isinstance(value, float) and math.isinf(value):
        raise InvalidArgumentError(f"{name} must be finite, got {value!r}")
    return value


def positive(name: str, value: object) -> Number:
    """A finite number > 0."""
    value = finite(name, value)
    if value <= 0:
        raise InvalidArgumentError(f"{name} must be > 0, got {value!r}")
    return value


def nonnegative(name: str, value: object) -> Number:
    """A finite number >= 0."""
    value = finite(name, value)
    if value < 0:
        raise InvalidArgumentError(f"{name} must be >= 0, got {value!r}")
    return value


def probability(name: str, value: object) -> Number:
    """A number in the open interval (0, 1), as delta must be."""
    value = finite(name, value)
    if not 0 < value < 1:
        raise InvalidArgumentError(f"{name} must be in (0, 1), got {value!r}")
    return value


def positive_int(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise DpcoreTypeError(f"{name} must be an int, got {type(value).__name__} {value!r}")
    if value < 1:
        raise InvalidArgumentError(f"{name} must be >= 1, got {value!r}")
    return int(value)


def exact(value: Number) -> Fraction:
    """The exact rational value of a finite int, float or Fraction."""
    return Fraction(value)


def encode(value: Number) -> str:
    """Serialise a parameter so that :func:`decode` returns exactly the same value and type.

    Floats use ``float.hex`` (``"0x1.8p+0"``): exact and unambiguous, where a decimal string
    such as ``"0.1"`` would be read back as the rational 1/10 instead of the binary float the
    sampler used. Ints and Fractions use ``str(Fraction)`` (``"3"``, ``"3/2"``).
    """
    if isinstance(value, float):
        return value.hex()
    if isinstance(value, (int, Fraction)) and not isinstance(value, bool):
        return str(Fraction(value))
    raise DpcoreTypeError(f"cannot encode {type(value).__name__} {value!r}")


def decode(text: str) -> Number:
    """Inverse of :func:`encode`: a float for hex text, an int or Fraction otherwise."""
    if not isinstance(text, str):
        raise DpcoreTypeError(f"encoded number must be a string, got {type(text).__name__}")
    if "0x" in text.lower():
        value = float.fromhex(text)
        if not math.isfinite(value):
            raise InvalidArgumentError(f"encoded number must be finite, got {text!r}")
        return value
    value = Fraction(text)
    return value.numerator if value.denominator == 1 else value


# Every recorded cost is rounded *up* onto the grid 2**-COST_GRID_BITS, so running totals are
# integers over one fixed power of two: a ledger's numbers stay ~150 bits however many distinct
# sigmas it charges (exact sums of raw float costs grow a few hundred bits per charge). Rounding
# up is conservative: rho-zCDP implies rho'-zCDP for every rho' >= rho (proofs/cost_rounding.py).
# The excess is below 2**-128 ~ 2.9e-39 per charge.
COST_GRID_BITS = 128
COST_GRID = Fraction(1, 1 << COST_GRID_BITS)


def round_cost_up(cost: Fraction) -> Fraction:
    """The smallest multiple of ``2**-COST_GRID_BITS`` that is >= ``cost`` (a rational >= 0).

    >>> round_cost_up(Fraction(1, 3)) - Fraction(1, 3) < COST_GRID
    True
    >>> round_cost_up(Fraction(1, 2)) == Fraction(1, 2)
    True
    """
    cost = Fraction(cost)
    if cost < 0:
        raise InvalidArgumentError(f"cost must be >= 0, got {cost}")
    units = -((-cost.numerator << COST_GRID_BITS) // cost.denominator)  # ceil(cost * 2**128)
    return Fraction(units, 1 << COST_GRID_BITS)


def round_cost_down(target: Fraction) -> Fraction:
    """The largest multiple of ``2**-COST_GRID_BITS`` that is <= ``target`` (a rational >= 0):
    calibrating a parameter to this value makes its rounded-up cost fit within ``target``."""
    target = Fraction(target)
    if target < 0:
        raise InvalidArgumentError(f"target must be >= 0, got {target}")
    return Fraction((target.numerator << COST_GRID_BITS) // target.denominator, 1 << COST_GRID_BITS)
