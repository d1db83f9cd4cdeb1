"""Accountants: interpret privacy events as zCDP or RDP guarantees.

:class:`ZCDPAccountant` is the arithmetic the :class:`~.filter.PrivacyFilter` charges with:
exact rationals, ``math.inf`` when the truth is infinite (sigma = 0). :class:`RDPAccountant`
tracks Renyi-DP curves (Mironov 2017) on a grid of orders, using each event's exact per-order
curve, and converts to (epsilon, delta) with the Canonne-Kamath-Steinke bound.
"""
from __future__ import annotations

import math
from fractions import Fraction

import mpmath

from dpcore.errors import DpcoreTypeError, InvalidArgumentError

from . import _numbers as num
from ._mp import MP_DPS, mpf, round_up
from .events import (ComposedEvent, Event, ExponentialEvent, GaussianEvent, PureDPEvent,
                     SelfComposedEvent, ZCDPEvent)

INFINITE = math.inf


class ZCDPAccountant:
    """zCDP cost of events (neighbours: add/remove one record)."""

    def rho(self, event: Event) -> Fraction | float:
        """The cost the filter charges and the ledger records for ``event``: its exact rho
        rounded *up* onto the grid 2**-128, or ``math.inf``. A valid zCDP bound (rho-zCDP implies
        rho'-zCDP for rho' >= rho) whose size stays bounded (proofs/cost_rounding.py).
        """
        exact = self.exact_rho(event)
        return exact if exact == INFINITE else num.round_cost_up(exact)

    def exact_rho(self, event: Event) -> Fraction | float:
        """The exact rho for which ``event`` is rho-zCDP, or ``math.inf``.

        Privacy: GaussianEvent Delta^2/(2 sigma^2) (proofs/gaussian.py); ExponentialEvent
        eps^2/8 (proofs/exponential_mechanism.py); PureDPEvent eps^2/2 (proofs/pure_dp.py);
        composed events add (proofs/zcdp_composition.py). Every float parameter is taken at
        its exact binary value, so the result is the true cost of the noise actually drawn.
        """
        if isinstance(event, GaussianEvent):
            sigma = Fraction(event.sigma)
            if sigma == 0:
                return INFINITE
            return Fraction(event.sensitivity) ** 2 / (2 * sigma ** 2)
        if isinstance(event, ExponentialEvent):
            return Fraction(event.epsilon) ** 2 / 8
        if isinstance(event, PureDPEvent):
            return Fraction(event.epsilon) ** 2 / 2
        if isinstance(event, ZCDPEvent):
            return Fraction(event.rho)
        if isinstance(event, ComposedEvent):
            total = Fraction(0)
            for part in event.events:
                cost = self.exact_rho(part)
                if cost == INFINITE:
                    return INFINITE  # never mix inf with a huge Fraction (float overflow)
                total += cost
            return total
        if isinstance(event, SelfComposedEvent):
            cost = self.exact_rho(event.event)
            return cost * event.count if cost != INFINITE else INFINITE
        raise DpcoreTypeError(f"not a privacy event: {type(event).__name__}")


# Orders of Google dp_accounting's DEFAULT_RDP_ORDERS (notes-accounting.md, section 1).
DEFAULT_ORDERS = tuple([1 + x / 10 for x in range(1, 100)] + list(range(11, 64))
                       + [128, 256, 512, 1024])


def rdp_curve(event: Event, alpha) -> mpmath.mpf:
    """Renyi divergence bound of ``event`` at order ``alpha`` > 1, as an mpmath number.

    Gaussian: alpha Delta^2/(2 sigma^2) (Mironov 2017, Prop. 7). Exponential: alpha eps^2/8
    (bounded range, Cesar & Rogers 2021), also at most the epsilon-DP curve since the mechanism
    is eps-DP. Pure eps-DP: min(alpha eps^2/2, eps - log((1+e^-eps)/(1+e^-(2alpha-1)eps))/(alpha-1)),
    the second term being randomized response's divergence, the worst case for eps-DP
    (Steinke, differentialprivacy.org 2024-05-27; proofs/pure_dp.py). zCDP: alpha rho.
    """
    alpha = mpf(alpha)
    if isinstance(event, GaussianEvent):
        if event.sigma == 0:
            return mpmath.inf
        return alpha * mpf(Fraction(event.sensitivity) ** 2 / (2 * Fraction(event.sigma) ** 2))
    if isinstance(event, ExponentialEvent):
        eps = mpf(event.epsilon)
        return min(alpha * eps ** 2 / 8, _pure_dp_curve(eps, alpha))
    if isinstance(event, PureDPEvent):
        eps = mpf(event.epsilon)
        return min(alpha * eps ** 2 / 2, _pure_dp_curve(eps, alpha))
    if isinstance(event, ZCDPEvent):
        return alpha * mpf(event.rho)
    if isinstance(event, ComposedEvent):
        return mpmath.fsum(rdp_curve(e, alpha) for e in event.events)
    if isinstance(event, SelfComposedEvent):
        return event.count * rdp_curve(event.event, alpha)
    raise DpcoreTypeError(f"not a privacy event: {type(event).__name__}")


def _pure_dp_curve(eps, alpha):
    return eps - mpmath.log((1 + mpmath.exp(-eps)) / (1 + mpmath.exp(-(2 * alpha - 1) * eps))) / (alpha - 1)


class RDPAccountant:
    """Renyi-DP accountant over a grid of orders, with exact per-event curves.

    ``compose(event, count=1)`` records events; ``rdp(alpha)`` is the composed curve at any
    order (RDP composes additively at each fixed order, Mironov 2017 Prop. 1);
    ``epsilon(delta)`` converts with the CKS bound at the best grid order, then refines the
    order continuously (any order gives a valid bound, so refining can only tighten).
    """

    def __init__(self, orders=DEFAULT_ORDERS):
        orders = tuple(orders)
        if not orders:
            raise InvalidArgumentError("orders must be non-empty, got ()")
        for a in orders:
            num.finite("order", a)
            if not a > 1:
                raise InvalidArgumentError(f"every order must be > 1, got {a!r}")
        self.orders = orders
        self._events: list[tuple[Event, int]] = []

    def compose(self, event: Event, count: int = 1) -> "RDPAccountant":
        count = num.positive_int("count", count)
        rdp_curve(event, 2)  # type check now, not at conversion time
        self._events.append((event, count))
        return self

    def rdp(self, alpha) -> float:
        """The composed RDP bound at order ``alpha``, rounded up to a float."""
        with mpmath.workdps(MP_DPS):
            return round_up(self._rdp_mp(alpha))

    def _rdp_mp(self, alpha):
        return mpmath.fsum(c * rdp_curve(e, alpha) for e, c in self._events)

    def epsilon(self, delta) -> float:
        """Smallest epsilon (rounded up) such that the composition is (epsilon, delta)-DP."""
        from .conversions import _rdp_epsilon_mp
        num.probability("delta", delta)
        if not self._events:
            return 0.0
        with mpmath.workdps(MP_DPS):
            best, best_alpha = mpmath.inf, None
            for a in self.orders:
                e = _rdp_epsilon_mp(self._rdp_mp(a), a, delta)
                if e < best:
                    best, best_alpha = e, a
            if best_alpha is not None:
                # Golden-section refinement around the best grid order; any order is valid.
                lo = max(mpmath.mpf(1) + mpmath.mpf(10) ** -6, mpmath.mpf(best_alpha) / 2)
                hi = mpmath.mpf(best_alpha) * 2
                f = lambda a: _rdp_epsilon_mp(self._rdp_mp(a), a, delta)
                gr = (mpmath.sqrt(5) - 1) / 2
                c, d = hi - gr * (hi - lo), lo + gr * (hi - lo)
                fc, fd = f(c), f(d)
                for _ in range(80):
                    if fc < fd:
                        hi, d, fd = d, c, fc
                        c = hi - gr * (hi - lo)
                        fc = f(c)
                    else:
                        lo, c, fc = c, d, fd
                        d = lo + gr * (hi - lo)
                        fd = f(d)
                best = min(best, fc, fd)
            return round_up(max(best, mpmath.mpf(0)))
