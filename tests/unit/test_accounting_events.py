"""Events validate on construction and round-trip through their exact JSON form."""
import math
from fractions import Fraction

import numpy as np
import pytest

from dpcore.accounting import (ComposedEvent, ExponentialEvent, GaussianEvent, PureDPEvent,
                               SelfComposedEvent, ZCDPAccountant, ZCDPEvent)
from dpcore.accounting.events import from_dict, to_dict
from dpcore.errors import DpcoreTypeError, InvalidArgumentError


@pytest.mark.parametrize("make, match", [
    (lambda: GaussianEvent(-1.0), "sigma must be >= 0, got -1.0"),
    (lambda: GaussianEvent(float("nan")), "sigma must not be NaN"),
    (lambda: GaussianEvent(float("inf")), "sigma must be finite"),
    (lambda: GaussianEvent(1.0, 0), "sensitivity must be > 0, got 0"),
    (lambda: GaussianEvent(1.0, -2), "sensitivity must be > 0"),
    (lambda: ExponentialEvent(0.0, 1), "epsilon must be > 0"),
    (lambda: ExponentialEvent(-1.0, 1), "epsilon must be > 0"),
    (lambda: ExponentialEvent(1.0, 0.0), "sensitivity must be > 0"),
    (lambda: PureDPEvent(float("inf")), "epsilon must be finite"),
    (lambda: ZCDPEvent(-Fraction(1, 2)), "rho must be >= 0"),
    (lambda: SelfComposedEvent(ZCDPEvent(1), 0), "count must be >= 1"),
    (lambda: ComposedEvent(()), "non-empty"),
])
def test_invalid_parameters(make, match):
    with pytest.raises(InvalidArgumentError, match=match):
        make()


@pytest.mark.parametrize("make", [
    lambda: GaussianEvent("1"),
    lambda: GaussianEvent(True),
    lambda: SelfComposedEvent(ZCDPEvent(1), 2.0),
    lambda: ComposedEvent([ZCDPEvent(1), 3]),
])
def test_wrong_types(make):
    with pytest.raises(DpcoreTypeError):
        make()


def test_events_are_frozen_and_hashable():
    e = GaussianEvent(1.5, 2)
    with pytest.raises(AttributeError):
        e.sigma = 2.0
    assert hash(e) == hash(GaussianEvent(1.5, 2))
    assert ComposedEvent([e]).events == (e,)


def test_numpy_scalars_are_accepted_as_their_python_values():
    acc = ZCDPAccountant()
    assert acc.exact_rho(GaussianEvent(np.float64(2.0), np.int64(1))) == Fraction(1, 8)
    assert acc.exact_rho(GaussianEvent(np.float32(0.5))) == 2
    import sympy
    assert acc.exact_rho(ZCDPEvent(sympy.Rational(1, 3))) == Fraction(1, 3)  # exact, not a float
    with pytest.raises(InvalidArgumentError, match="NaN"):
        GaussianEvent(np.float32("nan"))
    with pytest.raises(InvalidArgumentError, match="finite"):
        ExponentialEvent(np.float16("inf"), 1)


@pytest.mark.parametrize("event", [
    GaussianEvent(0.1), GaussianEvent(Fraction(7, 3), 2), GaussianEvent(0.0),
    ExponentialEvent(1e-300, 5e300), PureDPEvent(3), ZCDPEvent(Fraction(1, 10 ** 30)),
    ComposedEvent([GaussianEvent(1.0), SelfComposedEvent(ExponentialEvent(0.3, 1), 7)]),
])
def test_json_round_trip_is_exact(event):
    back = from_dict(to_dict(event))
    assert back == event
    assert ZCDPAccountant().rho(back) == ZCDPAccountant().rho(event)
    assert to_dict(back) == to_dict(event)


def test_float_encoding_never_goes_through_decimal():
    d = to_dict(GaussianEvent(0.1))
    assert d["sigma"] == (0.1).hex()
    assert Fraction(from_dict(d).sigma) == Fraction(0.1) != Fraction(1, 10)


def test_zcdp_costs():
    acc = ZCDPAccountant()
    assert acc.exact_rho(GaussianEvent(3, 2)) == Fraction(2, 9)
    assert acc.exact_rho(ExponentialEvent(Fraction(1, 2), 7)) == Fraction(1, 32)
    assert acc.exact_rho(PureDPEvent(Fraction(1, 3))) == Fraction(1, 18)
    assert Fraction(1, 18) < acc.rho(PureDPEvent(Fraction(1, 3))) < Fraction(1, 18) + Fraction(1, 2 ** 128)
    assert acc.rho(GaussianEvent(0)) == math.inf
    assert acc.rho(ComposedEvent([GaussianEvent(0), ZCDPEvent(1)])) == math.inf
    assert acc.rho(SelfComposedEvent(GaussianEvent(0.0), 3)) == math.inf
