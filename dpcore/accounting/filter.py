"""The privacy filter: fully adaptive composition under zCDP with an exact budget.

Theorem (Feldman & Zrnic 2021, arXiv 2008.11193, Thm 4.3 / Remark 4.4; also Whitehouse,
Ramdas, Rogers & Wu 2023): if each mechanism, chosen adaptively from past outputs, is
rho_t-zCDP and the interaction stops before sum_t rho_t would exceed rho, the whole transcript
is rho-zCDP. The filter enforces exactly that predicate, in exact rational arithmetic, *before*
the mechanism runs. Proof: proofs/zcdp_composition.py.
"""
from __future__ import annotations

import math
import os
import threading
from fractions import Fraction
from typing import Any

from dpcore.errors import DpcoreTypeError, InvalidArgumentError

from . import _numbers as num
from .accountants import ZCDPAccountant
from .conversions import approx_dp_to_zcdp, zcdp_to_approx_dp
from .errors import BudgetExceededError, LedgerError
from .events import EVENT_TYPES, Event
from .ledger import Ledger, normalize_what

# A zCDP budget above this is no privacy at all (rho = 10**4 is epsilon ~ 10**4 at any sane
# delta); refusing it catches unit mistakes such as passing a percentage or a sample size.
MAX_RHO = Fraction(10 ** 4)


class PrivacyFilter:
    """Charge privacy events against a rho-zCDP budget; refuse any charge that would overspend.

    ``charge`` is validate-then-commit: the cost is computed exactly, compared with the
    remaining budget, the new ledger is written (atomically, when ``ledger_path`` is set), and
    only then is the in-memory state updated and the cost returned. Callers draw noise only
    after ``charge`` returns, so a refused charge draws nothing and changes nothing.

    >>> from dpcore.accounting import GaussianEvent
    >>> f = PrivacyFilter(Fraction(1, 2))
    >>> f.charge(GaussianEvent(2.0), what={"op": "measure", "attrs": ["age"]})
    Fraction(1, 8)
    >>> f.remaining
    Fraction(3, 8)
    """

    def __init__(self, rho, *, delta=None, epsilon=None, ledger_path=None):
        rho = num.positive("rho", rho)
        if Fraction(rho) > MAX_RHO:
            raise InvalidArgumentError(f"rho must be <= {MAX_RHO} (larger budgets give no "
                                       f"meaningful privacy), got {rho!r}")
        if epsilon is not None and delta is None:
            raise InvalidArgumentError("delta must be given when epsilon is, got delta=None")
        if delta is not None:
            num.probability("delta", delta)
        if epsilon is not None:
            num.positive("epsilon", epsilon)
            implied = zcdp_to_approx_dp(rho, delta)
            if implied > epsilon:
                raise InvalidArgumentError(
                    f"rho={rho!r} is ({implied!r}, {delta!r})-DP, more than epsilon={epsilon!r}")
        self._accountant = ZCDPAccountant()
        self._lock = threading.Lock()
        self._ledger = Ledger(rho, epsilon=epsilon, delta=delta)
        self._path = None if ledger_path is None else os.fspath(ledger_path)
        if self._path is not None:
            if os.path.exists(self._path):
                raise InvalidArgumentError(
                    f"ledger_path {self._path!r} already exists; refusing to overwrite a record of "
                    "spent budget (use PrivacyFilter.resume(path) to continue it)")
            self._ledger.save(self._path)

    @classmethod
    def from_approx_dp(cls, epsilon, delta, **kwargs) -> "PrivacyFilter":
        """A filter whose budget is the largest rho that is (epsilon, delta)-DP by the CKS bound."""
        rho = approx_dp_to_zcdp(epsilon, delta)
        return cls(rho, epsilon=epsilon, delta=delta, **kwargs)

    @classmethod
    def resume(cls, ledger_path) -> "PrivacyFilter":
        """Continue charging against a saved ledger (loaded and validated), saving to the same path."""
        ledger = Ledger.load(ledger_path)
        accountant = ZCDPAccountant()
        for entry in ledger.entries:  # never continue from understated costs
            if accountant.rho(entry.event) != entry.rho:
                raise LedgerError(f"ledger {os.fspath(ledger_path)!r} entry {entry.seq}: recorded rho "
                                  f"{entry.rho} != {accountant.rho(entry.event)} computed from its event")
        self = cls.__new__(cls)
        self._accountant = accountant
        self._lock = threading.Lock()
        self._ledger = ledger
        self._path = os.fspath(ledger_path)
        if ledger.spent > ledger.budget:
            raise BudgetExceededError(f"ledger {self._path!r} already overspends: spent "
                                      f"{ledger.spent} > budget {ledger.budget}")
        return self

    # -- state ---------------------------------------------------------------------------
    @property
    def budget(self) -> Fraction:
        return self._ledger.budget

    @property
    def spent(self) -> Fraction:
        return self._ledger.spent

    @property
    def remaining(self) -> Fraction:
        return self._ledger.budget - self._ledger.spent

    @property
    def delta(self):
        return self._ledger.delta

    @property
    def epsilon(self):
        return self._ledger.epsilon

    @property
    def ledger(self) -> Ledger:
        """The current ledger (an immutable snapshot)."""
        return self._ledger

    @property
    def ledger_path(self):
        return self._path

    def __repr__(self):
        return f"PrivacyFilter(budget={self.budget}, spent={self.spent})"

    # -- charging ------------------------------------------------------------------------
    def cost(self, event: Event) -> Fraction | float:
        """Exact rho of ``event`` (``math.inf`` if infinite) without charging it."""
        if not isinstance(event, EVENT_TYPES):
            raise DpcoreTypeError(f"event must be a privacy event, got {type(event).__name__}")
        return self._accountant.rho(event)

    def can_afford(self, event: Event) -> bool:
        cost = self.cost(event)
        return cost != math.inf and self._ledger.spent + cost <= self._ledger.budget

    def charge(self, event: Event, what: Any = None) -> Fraction:
        """Charge ``event``; return its exact rho. Raises :class:`BudgetExceededError` (and
        changes nothing) if the exact new total would exceed the budget or the cost is infinite.

        Privacy: fully adaptive zCDP filter, proofs/zcdp_composition.py.
        """
        cost = self.cost(event)
        what = normalize_what(what)
        with self._lock:
            ledger = self._ledger
            if cost == math.inf:
                raise BudgetExceededError(f"{event!r} has infinite cost (sigma = 0 releases "
                                          "exact values); refused")
            if ledger.spent + cost > ledger.budget:
                raise BudgetExceededError(
                    f"charging rho={cost} for {event!r} would spend {ledger.spent + cost} > "
                    f"budget {ledger.budget} (remaining {ledger.budget - ledger.spent})")
            new = ledger.appended(event, cost, what)
            if self._path is not None:
                new.save(self._path)  # may raise: then nothing is committed
            self._ledger = new
            return cost
