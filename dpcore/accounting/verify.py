"""Independent verification of a privacy ledger.

:func:`verify_ledger` re-derives everything from the ledger's JSON with its *own* code: its own
number parser, its own cost formulas evaluated in **sympy** rationals (the filter uses
``fractions.Fraction`` through :class:`~.accountants.ZCDPAccountant`), its own hash-chain
check. The two share only the event definitions (the documented parameterisations), so an
arithmetic bug in one is caught by the other. Only the final zCDP -> (epsilon, delta)
conversion reuses :func:`~.conversions.zcdp_to_approx_dp`, which the filter never calls
when charging.
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import re
from dataclasses import dataclass
from fractions import Fraction

import sympy

from .conversions import zcdp_to_approx_dp

_RATIONAL = re.compile(r"-?[0-9]+(/[0-9]+)?")
_HEX_FLOAT = re.compile(r"-?0x[0-9a-f]+(\.[0-9a-f]*)?p[+-]?[0-9]+")


@dataclass(frozen=True)
class VerificationReport:
    """Outcome of :func:`verify_ledger`. ``ok`` is True only if ``reasons`` is empty."""

    ok: bool
    rho_spent: Fraction | None
    rho_budget: Fraction | None
    epsilon: float | None
    delta: float | None
    entries: int
    reasons: tuple[str, ...]

    def summary(self) -> str:
        lines = [f"ledger verification: {'PASS' if self.ok else 'FAIL'}",
                 f"  entries:    {self.entries}",
                 f"  rho spent:  {self.rho_spent} (~{_approx(self.rho_spent)})",
                 f"  rho budget: {self.rho_budget} (~{_approx(self.rho_budget)})"]
        if self.delta is not None:
            lines.append(f"  (epsilon, delta) spent: ({self.epsilon!r}, {self.delta!r})")
        lines += [f"  - {r}" for r in self.reasons]
        return "\n".join(lines)


def _approx(x):
    return None if x is None else float(x)


class _Bad(Exception):
    """A problem that stops verification (the structure cannot be read further)."""


def _parse_number(where: str, text) -> sympy.Rational:
    if not isinstance(text, str):
        raise _Bad(f"{where}: expected an encoded number string, got {text!r}")
    if _HEX_FLOAT.fullmatch(text):
        value = float.fromhex(text)
        if not math.isfinite(value):
            raise _Bad(f"{where}: number must be finite, got {text!r}")
        p, q = value.as_integer_ratio()
        return sympy.Rational(p, q)
    if _RATIONAL.fullmatch(text):
        p, _, q = text.partition("/")
        if q and int(q) == 0:
            raise _Bad(f"{where}: zero denominator in {text!r}")
        return sympy.Rational(int(p), int(q) if q else 1)
    raise _Bad(f"{where}: not an exact number encoding: {text!r}")


def _cost(where: str, event) -> sympy.Expr:
    """Recompute an event's rho in sympy (documented parameterisations, see events.py)."""
    if not isinstance(event, dict) or "type" not in event:
        raise _Bad(f"{where}: event must be an object with a 'type'")
    kind = event["type"]

    def field(name, *, positive=True):
        if name not in event:
            raise _Bad(f"{where}: {kind} lacks '{name}'")
        v = _parse_number(f"{where}.{name}", event[name])
        if (positive and v <= 0) or v < 0:
            raise _Bad(f"{where}.{name} must be {'> 0' if positive else '>= 0'}, got {v}")
        return v

    if kind == "GaussianEvent":
        sigma, sens = field("sigma", positive=False), field("sensitivity")
        if sigma == 0:
            return sympy.oo
        return sens ** 2 / (2 * sigma ** 2)          # Bun & Steinke 2016, Prop. 1.6
    if kind == "ExponentialEvent":
        field("sensitivity")
        return field("epsilon") ** 2 / 8             # Cesar & Rogers 2021 (bounded range)
    if kind == "PureDPEvent":
        return field("epsilon") ** 2 / 2             # Bun & Steinke 2016, Prop. 1.4
    if kind == "ZCDPEvent":
        return field("rho", positive=False)
    if kind == "ComposedEvent":
        parts = event.get("events")
        if not isinstance(parts, list) or not parts:
            raise _Bad(f"{where}: ComposedEvent needs a non-empty 'events' list")
        return sympy.Add(*[_cost(f"{where}.events[{i}]", e) for i, e in enumerate(parts)])
    if kind == "SelfComposedEvent":
        count = event.get("count")
        if not isinstance(count, int) or isinstance(count, bool) or count < 1:
            raise _Bad(f"{where}.count must be an int >= 1, got {count!r}")
        return count * _cost(f"{where}.event", event.get("event"))
    raise _Bad(f"{where}: unknown event type {kind!r}")


def _digest(obj) -> str:
    text = json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _to_fraction(x: sympy.Rational) -> Fraction:
    return Fraction(int(x.p), int(x.q))


def verify_ledger(ledger_or_path) -> VerificationReport:
    """Recompute every charge of a ledger (a :class:`~.ledger.Ledger`, a path, or its JSON dict)
    and check it against the stated budget. Never raises for bad ledger *content*: problems are
    reported in ``reasons`` and make ``ok`` False.
    """
    reasons: list[str] = []
    state = {"spent": None, "budget": None, "epsilon": None, "delta": None, "entries": 0}
    try:
        data = _raw(ledger_or_path)
        _check(data, reasons, state)
    except _Bad as exc:
        reasons.append(str(exc))
    return VerificationReport(ok=not reasons, rho_spent=state["spent"], rho_budget=state["budget"],
                              epsilon=state["epsilon"], delta=state["delta"],
                              entries=state["entries"], reasons=tuple(reasons))


def _raw(obj):
    if isinstance(obj, dict):
        return obj
    if hasattr(obj, "to_dict"):
        return obj.to_dict()
    try:
        with open(os.fspath(obj), "r", encoding="utf-8") as fh:
            return json.load(fh)
    except (OSError, UnicodeDecodeError) as exc:
        raise _Bad(f"cannot read ledger: {exc}") from None
    except json.JSONDecodeError as exc:
        raise _Bad(f"ledger is not valid JSON (truncated?): {exc}") from None


def _check(data, reasons, state):
    if not isinstance(data, dict):
        raise _Bad("ledger must be a JSON object")
    if data.get("format") != "dpcore-ledger" or data.get("version") != 1:
        raise _Bad(f"unsupported ledger format/version: {data.get('format')!r} {data.get('version')!r}")
    budget = data.get("budget")
    if not isinstance(budget, dict) or "rho" not in budget:
        raise _Bad("ledger has no budget.rho")
    rho_budget = _parse_number("budget.rho", budget["rho"])
    if rho_budget <= 0:
        raise _Bad(f"budget.rho must be > 0, got {rho_budget}")
    state["budget"] = _to_fraction(rho_budget)
    delta = eps_budget = None
    if budget.get("delta") is not None:
        delta = _parse_number("budget.delta", budget["delta"])
        if not 0 < delta < 1:
            raise _Bad(f"budget.delta must be in (0, 1), got {delta}")
        state["delta"] = float(delta)
    if budget.get("epsilon") is not None:
        eps_budget = _parse_number("budget.epsilon", budget["epsilon"])
    header = {"format": data["format"], "version": data["version"], "budget": budget}
    entries = data.get("entries")
    if not isinstance(entries, list):
        raise _Bad("ledger has no entries list")
    state["entries"] = len(entries)

    total = sympy.Integer(0)
    prev = _digest(header)
    for i, entry in enumerate(entries):
        where = f"entry {i}"
        if not isinstance(entry, dict):
            raise _Bad(f"{where} is not an object")
        if entry.get("seq") != i:
            reasons.append(f"{where}: seq is {entry.get('seq')!r}, expected {i} (entry removed or reordered)")
        cost = _cost(f"{where}.event", entry.get("event"))
        if cost == sympy.oo:
            reasons.append(f"{where}: infinite cost (sigma = 0) was charged")
        recorded = _parse_number(f"{where}.rho", entry.get("rho"))
        if recorded != cost:
            reasons.append(f"{where}: recorded rho {recorded} != recomputed {cost} from the event")
        total = total + cost
        recorded_total = _parse_number(f"{where}.rho_total", entry.get("rho_total"))
        if recorded_total != total:
            reasons.append(f"{where}: recorded running total {recorded_total} != recomputed {total}")
        if entry.get("prev_hash") != prev:
            reasons.append(f"{where}: prev_hash breaks the chain (entry removed, reordered or edited)")
        body = {k: v for k, v in entry.items() if k != "hash"}
        try:
            digest = _digest(body)
        except ValueError as exc:
            raise _Bad(f"{where}: not canonical JSON ({exc})") from None
        if entry.get("hash") != digest:
            reasons.append(f"{where}: hash does not match its content (entry edited)")
        prev = entry.get("hash")

    if total == sympy.oo:
        state["spent"] = None
        return
    state["spent"] = _to_fraction(total)
    if _parse_number("rho_spent", data.get("rho_spent")) != total:
        reasons.append(f"rho_spent {data.get('rho_spent')} != recomputed sum {total}")
    if data.get("head_hash") != prev:
        reasons.append("head_hash does not match the last entry (entries removed from the end?)")
    if total > rho_budget:
        reasons.append(f"overspent: rho {total} > budget {rho_budget} (excess {total - rho_budget})")
    if delta is not None:
        eps = zcdp_to_approx_dp(state["spent"], float(delta))
        state["epsilon"] = eps
        if eps_budget is not None and sympy.Rational(*eps.as_integer_ratio()) > eps_budget:
            reasons.append(f"epsilon {eps!r} at delta {float(delta)!r} exceeds the budget epsilon "
                           f"{float(eps_budget)!r}")
