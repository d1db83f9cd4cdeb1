"""The privacy filter: fully adaptive composition under zCDP with an exact budget.

Theorem (Feldman & Zrnic 2021, arXiv 2008.11193, Thm 4.3 / Remark 4.4; also Whitehouse,
Ramdas, Rogers & Wu 2023): if each mechanism, chosen adaptively from past outputs, is
rho_t-zCDP and the interaction stops before sum_t rho_t would exceed rho, the whole transcript
is rho-zCDP. The filter enforces exactly that predicate, in exact rational arithmetic, *before*
the mechanism runs. Proof: proofs/zcdp_composition.py.
"""
from __future__ import annotations

import datetime
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
from .journal import LedgerFile
from .ledger import Ledger, normalize_what

# A zCDP budget above this is no privacy at all (rho = 10**4 is epsilon ~ 10**4 at any sane
# delta); refusing it catches unit mistakes such as passing a percentage or a sample size.
MAX_RHO = Fraction(10 ** 4)


def _approx(x) -> str:
    """A short rendering of an exact number for messages (never a 100-digit fraction)."""
    try:
        return f"{float(x):.6g}"
    except OverflowError:
        return "> 1e308"


def _budget_problem(rho: Fraction, epsilon, delta) -> str | None:
    """Why a lifetime budget is not acceptable (None when it is): above the cap, or more than
    its own (epsilon, delta) allow by the CKS conversion. Checked on creation and on resume."""
    if rho > MAX_RHO:
        return (f"rho must be <= {MAX_RHO} (larger budgets give no meaningful privacy), got "
                f"{_approx(rho)}")
    if epsilon is not None:
        implied = zcdp_to_approx_dp(rho, delta)
        if implied > epsilon:
            return f"rho={_approx(rho)} is ({implied!r}, {delta!r})-DP, more than epsilon={epsilon!r}"
    return None


class PrivacyFilter:
    """Charge privacy events against a rho-zCDP budget; refuse any charge that would overspend.

    ``charge`` is validate-then-commit: the cost is computed (exactly, rounded up onto the
    ledger's 2**-128 grid), re-validated, compared with what is left, the new entry is appended
    to the ledger file (when ``ledger_path`` is set; the file is created exclusively and locked
    for this filter's lifetime), and only then is the in-memory state updated and the cost
    returned. Callers draw noise only after ``charge`` returns, so a refused charge draws
    nothing and changes nothing.

    The budget is the ledger's *lifetime* budget. A run (:meth:`open_run`) may cap its own
    spend below it; ``remaining`` is what the current run may still spend.

    >>> from dpcore.accounting import GaussianEvent
    >>> f = PrivacyFilter(Fraction(1, 2))
    >>> f.charge(GaussianEvent(2.0), what={"release": "marginal", "attrs": ["age"]})
    Fraction(1, 8)
    >>> f.remaining
    Fraction(3, 8)
    """

    def __init__(self, rho, *, delta=None, epsilon=None, ledger_path=None):
        rho = num.positive("rho", rho)
        if epsilon is not None and delta is None:
            raise InvalidArgumentError("delta must be given when epsilon is, got delta=None")
        if delta is not None:
            num.probability("delta", delta)
        if epsilon is not None:
            num.positive("epsilon", epsilon)
        problem = _budget_problem(Fraction(rho), epsilon, delta)
        if problem:
            raise InvalidArgumentError(problem)
        self._setup(Ledger(rho, epsilon=epsilon, delta=delta), None)
        if ledger_path is not None:
            self._file = LedgerFile.create(ledger_path, self._ledger)

    def _setup(self, ledger: Ledger, file: LedgerFile | None) -> None:
        self._accountant = ZCDPAccountant()
        self._lock = threading.Lock()
        self._ledger = ledger
        self._file = file
        self._run_cap: Fraction | None = None

    @classmethod
    def from_approx_dp(cls, epsilon, delta, **kwargs) -> "PrivacyFilter":
        """A filter whose budget is the largest rho that is (epsilon, delta)-DP by the CKS bound."""
        rho = approx_dp_to_zcdp(epsilon, delta)
        return cls(rho, epsilon=epsilon, delta=delta, **kwargs)

    @classmethod
    def resume(cls, ledger_path, *, repair: bool = False) -> "PrivacyFilter":
        """Continue charging against a saved ledger's lifetime budget, appending to the same
        file (locked; loaded, and every recorded cost recomputed). A run the ledger shows as
        still open was cut off; it is closed as ``interrupted`` first. A file that ends
        without its trailer is refused unless ``repair`` (:meth:`LedgerFile.open`), which
        records the repair as a ``repair`` entry naming the partial line it discarded."""
        if not isinstance(repair, bool):
            raise InvalidArgumentError(f"repair must be True or False, got {repair!r}")
        file, ledger = LedgerFile.open(ledger_path, repair=repair)
        try:
            # The header gets the constructor's checks: an edited budget must not raise the
            # lifetime budget past the cap or past what the file's own (epsilon, delta) allow.
            # (Release rules are the auditor's, not the accountant's; a rewrite of the whole
            # file is caught only against a published head: dpcore verify --head.)
            problem = _budget_problem(ledger.budget, ledger.epsilon, ledger.delta)
            if problem:
                raise LedgerError(f"ledger {os.fspath(ledger_path)!r}: {problem}; refusing to "
                                  f"continue it")
            accountant = ZCDPAccountant()
            for entry in ledger.charges:  # never continue from understated costs
                if accountant.rho(entry.event) != entry.rho:
                    raise LedgerError(
                        f"ledger {os.fspath(ledger_path)!r} entry {entry.seq}: recorded rho "
                        f"{_approx(entry.rho)} != {_approx(accountant.rho(entry.event))} "
                        "computed from its event")
            if ledger.spent > ledger.budget:
                raise BudgetExceededError(f"ledger {os.fspath(ledger_path)!r} already overspends: "
                                          f"spent {_approx(ledger.spent)} > budget "
                                          f"{_approx(ledger.budget)}")
        except BaseException:
            file.close()
            raise
        self = cls.__new__(cls)
        self._setup(ledger, file)
        cut = ledger.open_run
        if cut is not None:
            self._append("close", None, Fraction(0), {
                "run": cut.what.get("run") if isinstance(cut.what, dict) else None,
                "status": "interrupted",
                "reason": "no closing entry (the run was cut off); closed when the ledger was continued"})
        return self

    # -- state ---------------------------------------------------------------------------
    @property
    def budget(self) -> Fraction:
        """The lifetime budget of the ledger."""
        return self._ledger.budget

    @property
    def spent(self) -> Fraction:
        return self._ledger.spent

    @property
    def remaining(self) -> Fraction:
        """What may still be charged: the lifetime budget's rest, capped by the open run's."""
        limit = self._ledger.budget if self._run_cap is None else min(self._run_cap,
                                                                       self._ledger.budget)
        return limit - self._ledger.spent

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
        return None if self._file is None else self._file.path

    def __repr__(self):
        return f"PrivacyFilter(budget={self.budget}, spent={self.spent})"

    # -- runs ----------------------------------------------------------------------------
    def open_run(self, rho, info=None) -> int:
        """Start a run that may spend at most ``rho``: refused (BudgetExceededError, nothing
        written) if that does not fit in the lifetime budget. ``info`` (JSON metadata: mechanism,
        parameters, domain, hashes) goes into the opening entry. Returns the run's number."""
        rho = Fraction(num.positive("rho", rho))
        info = normalize_what(info or {})
        if not isinstance(info, dict):
            raise DpcoreTypeError("run info must be a JSON object")
        with self._lock:
            if self._ledger.open_run is not None:
                raise InvalidArgumentError("a run is already open on this ledger; close it first")
            left = self._ledger.budget - self._ledger.spent
            if rho > left:
                raise BudgetExceededError(
                    f"this run needs rho {_approx(rho)} but the ledger's lifetime budget has "
                    f"{_approx(left)} left (of {_approx(self._ledger.budget)})")
            number = self._ledger.runs
            started = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
            what = {**info, "run": number, "rho": str(rho), "started": started}
            self._commit("open", None, Fraction(0), what)
            self._run_cap = self._ledger.spent + rho
        return number

    def close_run(self, status: str = "completed", *, reason: str | None = None,
                  outputs=None) -> None:
        """End the open run: ``status`` "completed" or "failed" (with a one-line ``reason``);
        ``outputs`` maps each output file to its SHA-256."""
        if status not in ("completed", "failed"):
            raise InvalidArgumentError(f"status must be 'completed' or 'failed', got {status!r}")
        with self._lock:
            run = self._ledger.open_run
            if run is None:
                raise InvalidArgumentError("no run is open on this ledger")
            what = {"run": run.what.get("run"), "status": status}
            if reason is not None:
                what["reason"] = str(reason).splitlines()[0][:300] if str(reason) else ""
            if outputs:
                what["outputs"] = dict(outputs)
            self._commit("close", None, Fraction(0), what)
            self._run_cap = None

    def close(self) -> None:
        """Release the ledger file (and its writer lock). The in-memory ledger stays readable."""
        if self._file is not None:
            self._file.close()

    # -- charging ------------------------------------------------------------------------
    def cost(self, event: Event) -> Fraction | float:
        """The rho ``event`` would be charged (``math.inf`` if infinite), without charging it."""
        if not isinstance(event, EVENT_TYPES):
            raise DpcoreTypeError(f"event must be a privacy event, got {type(event).__name__}")
        return self._accountant.rho(event)

    def can_afford(self, event: Event) -> bool:
        cost = self.cost(event)
        return cost != math.inf and cost <= self.remaining

    def charge(self, event: Event, what: Any = None) -> Fraction:
        """Charge ``event``; return its rho. Raises :class:`BudgetExceededError` (and changes
        nothing) if the new total would exceed the lifetime budget or the open run's cap, or
        the cost is infinite.

        Privacy: fully adaptive zCDP filter, proofs/zcdp_composition.py.
        """
        cost = self.cost(event)
        # Re-validate what the accountant returned: the predicate below is only a proof if
        # the cost is a non-negative exact rational.
        if cost == math.inf:
            raise BudgetExceededError(f"{event!r} has infinite cost (sigma = 0 releases "
                                      "exact values); refused")
        if not isinstance(cost, Fraction) or cost < 0:
            raise BudgetExceededError(f"cost of {event!r} is not a non-negative rational; refused")
        what = normalize_what(what)
        with self._lock:
            if cost > self.remaining:
                raise BudgetExceededError(
                    f"charging rho={_approx(cost)} for {event!r} would exceed the budget "
                    f"(remaining {_approx(self.remaining)} of {_approx(self.budget)})")
            self._commit("charge", event, cost, what)
            return cost

    def _commit(self, kind, event, cost, what) -> None:
        new = self._ledger.appended(kind, event, cost, what)
        if self._file is not None:
            self._file.append(new)  # may raise: then nothing is committed
        self._ledger = new

    def _append(self, kind, event, cost, what) -> None:
        with self._lock:
            self._commit(kind, event, cost, what)
