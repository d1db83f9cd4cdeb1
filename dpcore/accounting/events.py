"""Privacy events: frozen descriptions of what a mechanism is about to release.

An event carries only the parameters of the noise that will be drawn; accountants
(:mod:`.accountants`), the filter and the independent verifier interpret it. Conventions used
throughout dpcore: neighbouring datasets differ by adding or removing one record; Gaussian
sensitivities are L2 sensitivities.

Events validate on construction, so an event that exists is well formed. ``sigma = 0`` is
allowed on purpose: its cost is infinite and every filter refuses it (fail closed), which is
the truth about releasing an exact value.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Union

from dpcore.errors import DpcoreTypeError, InvalidArgumentError

from . import _numbers as num
from ._numbers import Number


def _set(event, field, value):
    """Store the validated, normalised value (e.g. numpy scalars become int/float)."""
    object.__setattr__(event, field, value)


@dataclass(frozen=True)
class GaussianEvent:
    """Add N(0, sigma^2) noise to each coordinate of a query with L2 sensitivity ``sensitivity``.

    Privacy: rho = sensitivity**2 / (2 sigma**2)-zCDP (Bun & Steinke 2016, Prop. 1.6);
    ``sigma == 0`` costs rho = inf. Proof: proofs/gaussian.py. For a weighted batch of
    marginals (marginal i scaled by w_i, or noise sigma/w_i on marginal i) the sensitivity is
    ||w||_2, proofs/weighted_marginals.py. The discrete Gaussian N_Z(0, sigma^2) has the same
    cost (Canonne, Kamath & Steinke 2020), proofs/discrete_gaussian.py.
    """

    sigma: Number
    sensitivity: Number = 1

    def __post_init__(self):
        _set(self, "sigma", num.nonnegative("sigma", self.sigma))
        _set(self, "sensitivity", num.positive("sensitivity", self.sensitivity))


@dataclass(frozen=True)
class ExponentialEvent:
    """Exponential mechanism with Pr[r] proportional to exp(epsilon * q(D, r) / (2 sensitivity)).

    ``sensitivity`` is the largest sensitivity of the score q over candidates. With this
    parameterisation the mechanism is epsilon-bounded-range, hence epsilon**2/8-zCDP (Cesar &
    Rogers 2021, arXiv 2004.07223; proofs/exponential_mechanism.py). Only the true exponential
    mechanism (or its Gumbel-max sampler) earns this bound, not permute-and-flip or report-noisy-
    max with exponential noise (Steinke, differentialprivacy.org, 2024-05-27).
    """

    epsilon: Number
    sensitivity: Number = 1

    def __post_init__(self):
        _set(self, "epsilon", num.positive("epsilon", self.epsilon))
        _set(self, "sensitivity", num.positive("sensitivity", self.sensitivity))


@dataclass(frozen=True)
class PureDPEvent:
    """Any epsilon-DP release. Privacy: epsilon**2/2-zCDP (Bun & Steinke 2016, Prop. 1.4;
    proofs/pure_dp.py)."""

    epsilon: Number

    def __post_init__(self):
        _set(self, "epsilon", num.positive("epsilon", self.epsilon))


@dataclass(frozen=True)
class ZCDPEvent:
    """A release already known to be rho-zCDP."""

    rho: Number

    def __post_init__(self):
        _set(self, "rho", num.nonnegative("rho", self.rho))


@dataclass(frozen=True)
class ComposedEvent:
    """Several events released together; costs add (zCDP composition, proofs/zcdp_composition.py)."""

    events: tuple

    def __post_init__(self):
        events = tuple(self.events)
        if not events:
            raise InvalidArgumentError("events must be non-empty, got ()")
        for i, event in enumerate(events):
            if not isinstance(event, EVENT_TYPES):
                raise DpcoreTypeError(
                    f"events[{i}] must be a privacy event, got {type(event).__name__}")
        object.__setattr__(self, "events", events)


@dataclass(frozen=True)
class SelfComposedEvent:
    """``count`` independent repetitions of ``event``; cost is count times the event's cost."""

    event: "Event"
    count: int

    def __post_init__(self):
        if not isinstance(self.event, EVENT_TYPES):
            raise DpcoreTypeError(
                f"event must be a privacy event, got {type(self.event).__name__}")
        object.__setattr__(self, "count", num.positive_int("count", self.count))


Event = Union[GaussianEvent, ExponentialEvent, PureDPEvent, ZCDPEvent, ComposedEvent,
              SelfComposedEvent]
EVENT_TYPES = (GaussianEvent, ExponentialEvent, PureDPEvent, ZCDPEvent, ComposedEvent,
               SelfComposedEvent)

# Field names of each event type, in constructor order: the ledger's wire format.
SCALAR_FIELDS = {
    "GaussianEvent": ("sigma", "sensitivity"),
    "ExponentialEvent": ("epsilon", "sensitivity"),
    "PureDPEvent": ("epsilon",),
    "ZCDPEvent": ("rho",),
}


def to_dict(event: Event) -> dict:
    """JSON-able form of an event with every number encoded exactly (see ``_numbers.encode``)."""
    name = type(event).__name__
    if name in SCALAR_FIELDS:
        return {"type": name, **{f: num.encode(getattr(event, f)) for f in SCALAR_FIELDS[name]}}
    if isinstance(event, ComposedEvent):
        return {"type": name, "events": [to_dict(e) for e in event.events]}
    if isinstance(event, SelfComposedEvent):
        return {"type": name, "event": to_dict(event.event), "count": event.count}
    raise DpcoreTypeError(f"not a privacy event: {type(event).__name__}")


def from_dict(data: dict) -> Event:
    """Inverse of :func:`to_dict`; raises ``InvalidArgumentError``/``DpcoreTypeError`` on bad data."""
    if not isinstance(data, dict):
        raise DpcoreTypeError(f"event must be a JSON object, got {type(data).__name__}")
    name = data.get("type")
    expected = None
    if name in SCALAR_FIELDS:
        expected = {"type", *SCALAR_FIELDS[name]}
    elif name == "ComposedEvent":
        expected = {"type", "events"}
    elif name == "SelfComposedEvent":
        expected = {"type", "event", "count"}
    if expected is None:
        raise InvalidArgumentError(f"event type must be one of {sorted(_CLASSES)}, got {name!r}")
    if set(data) != expected:
        raise InvalidArgumentError(
            f"{name} must have exactly the keys {sorted(expected)}, got {sorted(data)}")
    if name in SCALAR_FIELDS:
        return _CLASSES[name](*(num.decode(data[f]) for f in SCALAR_FIELDS[name]))
    if name == "ComposedEvent":
        if not isinstance(data["events"], list):
            raise DpcoreTypeError("ComposedEvent.events must be a list")
        return ComposedEvent(tuple(from_dict(e) for e in data["events"]))
    return SelfComposedEvent(from_dict(data["event"]), data["count"])


_CLASSES = {cls.__name__: cls for cls in EVENT_TYPES}
