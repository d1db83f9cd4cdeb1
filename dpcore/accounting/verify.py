"""Independent verification of a privacy ledger: it takes nothing on trust from the file.

:func:`verify_ledger` re-derives everything from the ledger's text with its *own* code: its own
JSON reading (strict: duplicate keys, NaN, huge literals and deep nesting are failures), its own
number parser, its own cost formulas evaluated in **sympy** rationals (the filter uses
``fractions.Fraction``), its own rounding onto the 2**-128 cost grid and its own hash-chain
check. What the auditor was promised comes from the auditor (``epsilon``, ``delta``), not from
the file; without them the file's own (epsilon, delta) is used, and the report says so.

Every charge is checked against what it released (``what``): a marginal of records has L2
sensitivity 1 (the curator charges one marginal an entry), and so has a soft count (values in
[0, 1] a record, always with the exact discrete noise); a selection's sensitivity is the one
it states; an event whose cost cannot be re-derived (a raw ``ZCDPEvent``) is accepted only where
nothing is released (``"release": "none"`` with a reason and nothing else). Marginal attributes
must exist in the domain the run's opening entry recorded. A run with a fixed seed fails
(``allow_fixed_seed`` for tests). The chain proves nothing against a rewrite of the whole file;
checked against a ``head`` hash published earlier, it proves the file only grew since.

Only the final zCDP <-> (epsilon, delta) conversions reuse :mod:`.conversions` (which the filter
never calls when charging). It never raises on content: every problem is a reason in the report.
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import re
import stat
from dataclasses import dataclass, field
from fractions import Fraction

import sympy

from .conversions import zcdp_to_approx_dp

FORMAT, VERSION = "dpcore-ledger", 2
MAX_RHO = sympy.Integer(10) ** 4          # the filter's cap (filter.MAX_RHO), restated
GRID = sympy.Integer(2) ** 128            # the cost grid (_numbers.COST_GRID_BITS), restated
MAX_BYTES = 1 << 30
MAX_DEPTH = 32           # the ledger's own rules (ledger.normalize_what), restated
MAX_INT_DIGITS = 100
_RATIONAL = re.compile(r"-?[0-9]{1,400}(/[0-9]{1,400})?")   # a float budget: ~330 digits
_HEAD = re.compile(r"[0-9a-f]{64}")
_MAX_SUM_BITS, _PART_BITS = 1 << 12, 1 << 9
_HEX_FLOAT = re.compile(r"-?0x[0-9a-f]{1,16}(\.[0-9a-f]{0,16})?p[+-]?[0-9]{1,5}")
_ENTRY_KEYS = {"seq", "kind", "event", "rho", "rho_total", "what", "prev_hash", "hash"}
_ENTRIES_OPEN = ',"entries":['
# What each release kind may be charged as; these are the documented releases of dpcore's
# curator (dpcore/curator.py), each with its claim in proofs/.
_RELEASES = {
    "marginal": ("GaussianEvent",),          # proofs/gaussian.py (one marginal, sensitivity 1)
    "selection": ("ExponentialEvent",),      # proofs/exponential_mechanism.py
    "none": ("ZCDPEvent",),                  # releases nothing: retired budget
    "rejection": ("SelfComposedEvent",),     # DQRS's keep flags, proofs/dqrs_rejection.py
    "soft_count": ("GaussianEvent",),        # values in [0, 1] a record, proofs/soft_count.py
}


@dataclass(frozen=True)
class VerificationReport:
    """Outcome of :func:`verify_ledger`.

    ``status`` is "pass" (every check holds and every run closed), "incomplete" (every check
    holds but a run has no closing entry or the last write was torn: a true record of what was
    spent by a run that was cut off) or "fail". ``ok`` is True only for "pass".
    """

    ok: bool
    status: str
    rho_spent: Fraction | None
    rho_budget: Fraction | None
    epsilon: float | None
    delta: float | None
    entries: int
    reasons: tuple[str, ...]
    runs: int = 0
    promise: str = ""
    notes: tuple[str, ...] = field(default=())
    #: per run, in order: what its entries say (:class:`RunSummary`)
    run_summaries: tuple["RunSummary", ...] = field(default=())

    def summary(self) -> str:
        lines = [f"ledger verification: {self.status.upper()}",
                 f"  entries:    {self.entries} ({self.runs} run{'s' if self.runs != 1 else ''})",
                 f"  rho spent:  {_show(self.rho_spent)}",
                 f"  rho budget: {_show(self.rho_budget)}"]
        if self.delta is not None and self.epsilon is not None:
            lines.append(f"  (epsilon, delta) spent: ({self.epsilon!r}, {self.delta!r})")
        if self.promise:
            lines.append(f"  promise:    {self.promise}")
        # each run of a lifetime ledger, and any single run that did not complete
        runs = self.run_summaries
        if len(runs) > 1 or any(r.status != "completed" for r in runs):
            # every run that did not complete (up to a cap), and the last completed ones
            odd = [k for k, r in enumerate(runs) if r.status != "completed"][:_RUNS_SHOWN * 5]
            shown = sorted(set(odd) | set(range(max(0, len(runs) - _RUNS_SHOWN), len(runs))))
            if len(runs) > len(shown):
                lines.append(f"  ({len(runs) - len(shown)} other run(s) not shown: --json lists "
                             f"them all)")
            lines += [f"  {runs[k].line()}" for k in shown]
        lines += [f"  note: {n}" for n in self.notes[:5]]
        if len(self.notes) > 5:
            lines.append(f"  and {len(self.notes) - 5} more note(s) (--json lists them all)")
        if self.reasons:
            more = len(self.reasons) - 1
            lines.append(f"  - {self.reasons[0]}")
            if more:
                lines.append(f"  - and {more} more problem{'s' if more > 1 else ''}")
        return "\n".join(lines)


_RUNS_SHOWN = 10


@dataclass(frozen=True)
class RunSummary:
    """One run as its entries record it: its id and mechanism (as the opening entry states
    them), how it closed ("completed", "failed", "interrupted", or "open": no closing entry)
    with the closing entry's reason, and the rho its charges add up to (recomputed)."""

    run: object
    mechanism: str | None
    status: str
    rho: Fraction | None         # None: a charge of infinite cost
    reason: str | None = None

    def line(self) -> str:
        """One line for a terminal: the file's texts cut short, non-printable characters
        (a forged ledger's terminal escapes) shown as '?'."""
        name = f" ({_printable(self.mechanism, 40)})" if self.mechanism is not None else ""
        status = self.status if self.status == "completed" else self.status.upper()
        why = f" ({_printable(self.reason, 100)})" if self.reason else ""
        rho = "infinite" if self.rho is None else _show(self.rho)
        return f"run {_printable(self.run, 40)}{name}: {status}{why}, rho {rho}"

    def as_dict(self) -> dict:
        return {"run": self.run, "mechanism": self.mechanism, "status": self.status,
                "rho": None if self.rho is None else str(self.rho), "reason": self.reason}


def _printable(value: object, width: int) -> str:
    return _visible(_line(str(value))[:width])


def _visible(text: str) -> str:
    """``text`` with each non-printable character (a terminal escape's ESC, BEL) as '?'."""
    return "".join(c if c.isprintable() else "?" for c in text)


def _show(x) -> str:
    if x is None:
        return "unknown"
    text = str(x)
    if len(text) <= 60:
        return text
    try:
        return f"~{float(x):.17g}"
    except OverflowError:           # beyond a float: its size, from the digits
        p, _, q = text.partition("/")
        return f"~10^{len(p.lstrip('-')) - len(q or '1')} (exact rational of {len(text)} characters)"


class _Bad(Exception):
    """A problem that stops verification (the structure cannot be read further)."""


def verify_ledger(ledger_or_path, *, epsilon=None, delta=None, head=None,
                  allow_fixed_seed=False) -> VerificationReport:
    """Recompute every entry of a ledger (a :class:`~.ledger.Ledger`, a path, or its JSON dict)
    and check it against the promised (``epsilon``, ``delta``): the ledger's budget must be at
    most the largest rho whose CKS conversion is (epsilon, delta)-DP, and the spend at most the
    budget. Without a promise the ledger's own (epsilon, delta) is checked (and must be there).
    Never raises for bad ledger *content*: problems are reported in ``reasons``.

    The hash chain makes an edit evident only against a hash published before it: whoever
    rewrites the whole file can recompute the chain. ``head``: a ledger's ``head_hash`` as
    published after a run (dpcore synth prints it); the ledger must still hold an entry with
    that hash, i.e. it extends what was published and nothing before it changed.

    A run with a fixed seed (``seed_fixed`` in its opening entry) is not a private release:
    whoever knows the seed recomputes its noise. It fails unless ``allow_fixed_seed`` (tests
    and demos, where only the accounting is checked).
    """
    state = {"spent": None, "budget": None, "epsilon": None, "delta": None, "entries": 0,
             "runs": 0, "incomplete": [], "notes": [], "promise": "", "fixed_seed": [],
             "hashes": set(), "float_noise": 0, "run_summaries": []}
    reasons: list[str] = []
    try:
        if isinstance(head, str):
            head = head.strip().lower()
        if head is not None and not (isinstance(head, str) and _HEAD.fullmatch(head)):
            raise _Bad("the published head must be 64 hex digits (a SHA-256)")
        if (epsilon is None) != (delta is None):
            raise _Bad("give both epsilon and delta as the promise, or neither")
        promise = None
        if epsilon is not None:
            promise = (_promise_number("epsilon", epsilon), _promise_number("delta", delta))
            if not promise[0] > 0 or not 0 < promise[1] < 1:
                raise _Bad("the promise needs epsilon > 0 and 0 < delta < 1")
        data, torn = _raw(ledger_or_path)
        if torn:
            state["incomplete"].append("the file ends without its trailer: a write cut off by a "
                                       "crash (its partial entry was never committed), or a cut "
                                       "of the file that may have removed committed entries "
                                       "(check it against a published head: --head)")
        _check(data, reasons, state, promise, torn)
        if head is not None and head not in state["hashes"]:
            reasons.append(f"the published head {head[:16]}... is not in this ledger: it was "
                           f"rewritten after that head was published, or is another ledger")
        for label in state["fixed_seed"]:
            if allow_fixed_seed:
                state["notes"].append(f"{label} used a fixed seed (allowed: accounting only)")
            else:
                reasons.append(f"{label} used a fixed seed: whoever knows the seed recomputes "
                               f"its noise, so it is not a private release (tests and demos "
                               f"only; allow_fixed_seed / --allow-fixed-seed checks its "
                               f"accounting alone)")
    except _Bad as exc:
        reasons.append(_line(str(exc)))
    except Exception as exc:  # never raise on content: any failure to verify is a FAIL
        reasons.append(_line(f"unverifiable content ({type(exc).__name__}: {exc})"))
    status = "fail" if reasons else ("incomplete" if state["incomplete"] else "pass")
    # reasons and notes quote the file (a run's id, a key): never its control characters
    # (cut short too: a note can quote a run's id of any length)
    notes = tuple(_visible(_line(n, 480))
                  for n in tuple(state["incomplete"]) + tuple(state["notes"]))
    reasons = [_visible(r) for r in reasons]
    return VerificationReport(ok=status == "pass", status=status, rho_spent=state["spent"],
                              rho_budget=state["budget"], epsilon=state["epsilon"],
                              delta=state["delta"], entries=state["entries"],
                              reasons=tuple(reasons), runs=state["runs"],
                              promise=state["promise"], notes=notes,
                              run_summaries=tuple(_summaries(state["run_summaries"])))


def _summaries(runs: list[dict]) -> list[RunSummary]:
    out = []
    for r in runs:
        rho = r["rho"]
        out.append(RunSummary(r["run"], r["mechanism"], r["status"],
                              Fraction(int(rho.p), int(rho.q)) if rho.is_finite else None,
                              r["reason"]))
    return out


def _line(text: str, width: int = 240) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= width else text[:width - 3] + "..."


def _promise_number(name, value) -> sympy.Rational:
    if isinstance(value, bool):
        raise _Bad(f"promise {name} must be a number")
    try:
        q = Fraction(value)
    except (TypeError, ValueError, OverflowError):
        raise _Bad(f"promise {name} must be a finite number, got {str(value)[:40]!r}") from None
    return sympy.Rational(q.numerator, q.denominator)


# -- reading ------------------------------------------------------------------------------
def _raw(obj):
    """The ledger as a JSON object and whether its last write was torn."""
    if isinstance(obj, dict):
        return obj, False
    if hasattr(obj, "to_text"):
        text = obj.to_text()
    else:
        try:
            # opened without blocking (a FIFO would wait for a writer), then read only if it is
            # a regular file
            fd = os.open(os.fspath(obj), os.O_RDONLY | os.O_NONBLOCK)
            with open(fd, "rb") as fh:
                if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
                    raise _Bad("ledger is not a regular file")
                raw = fh.read(MAX_BYTES + 1)
        except (OSError, TypeError) as exc:
            raise _Bad(f"cannot read ledger: {getattr(exc, 'strerror', None) or exc}") from None
        if len(raw) > MAX_BYTES:
            raise _Bad(f"ledger is larger than {MAX_BYTES} bytes")
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            # a crash can cut a multi-byte character of the last line in two: read the whole
            # lines before it, as a torn journal whatever they hold
            try:
                text = raw[:raw.rfind(b"\n") + 1].decode("utf-8")
            except UnicodeDecodeError:
                raise _Bad("ledger is not UTF-8 text") from None
            return _recover(text, _Bad("ledger ends in a partial line that is not UTF-8"))
    try:
        return _strict(text), False
    except _Bad as first:
        return _recover(text, first)


def _strict(text: str):
    depth = 0
    # nesting depth outside strings; an unclosed string runs to the end (one match, not one
    # scan to the end from every quote after it: a file of escaped quotes took minutes)
    for ch in re.sub(r'"(?:[^"\\]++|\\.)*+"?', '""', text):
        if ch in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                raise _Bad(f"JSON nested deeper than {MAX_DEPTH} levels")
        elif ch in "]}":
            depth -= 1

    def pairs(items):
        out = {}
        for key, value in items:
            if key in out:
                raise _Bad(f"duplicate JSON key {key[:40]!r}")
            out[key] = value
        return out

    def constant(name):
        raise _Bad(f"JSON constant {name} in a ledger")

    def integer(s):
        if len(s) > MAX_INT_DIGITS:
            raise _Bad(f"integer literal of {len(s)} digits")
        return int(s)

    try:
        return json.loads(text, object_pairs_hook=pairs, parse_constant=constant,
                          parse_int=integer)
    except json.JSONDecodeError as exc:
        raise _Bad(f"ledger is not valid JSON (truncated?): {exc}") from None


def _recover(text: str, first: _Bad):
    """A journal whose last append was cut off: its complete lines (own reading, kept apart
    from the ledger module's on purpose)."""
    lines = [line for line in text.split("\n")]
    while lines and lines[-1] == "":
        lines.pop()
    if not lines or not lines[0].endswith(_ENTRIES_OPEN):
        raise first
    data = _strict(lines[0][:-len(_ENTRIES_OPEN)] + "}")
    if not isinstance(data, dict):
        raise first
    entries = []
    for i, line in enumerate(lines[1:]):
        last = i == len(lines) - 2
        if line.startswith("]"):
            if last:
                break
            raise first
        try:
            entries.append(_strict(line[1:] if entries else line))
        except _Bad:
            if last:
                break
            raise first from None
    data["entries"] = entries
    data.setdefault("rho_spent", None)
    data.setdefault("head_hash", None)
    return data, True


# -- numbers and costs --------------------------------------------------------------------
def _parse_number(where: str, text) -> sympy.Rational:
    if not isinstance(text, str):
        raise _Bad(f"{where}: expected an encoded number string, got {type(text).__name__}")
    if _HEX_FLOAT.fullmatch(text):
        try:
            value = float.fromhex(text)
        except OverflowError:
            raise _Bad(f"{where}: number out of range") from None
        if not math.isfinite(value):
            raise _Bad(f"{where}: number must be finite")
        if value.hex() != text:   # what the ledger writes (float.hex); others round
            raise _Bad(f"{where}: {text[:40]!r} is not a float's canonical hex form "
                       f"({value.hex()})")
        p, q = value.as_integer_ratio()
        return sympy.Rational(p, q)
    if _RATIONAL.fullmatch(text):
        p, _, q = text.partition("/")
        if q and int(q) == 0:
            raise _Bad(f"{where}: zero denominator")
        value = Fraction(int(p), int(q) if q else 1)
        if str(value) != text:    # what the ledger writes: str(Fraction), reduced
            raise _Bad(f"{where}: {text[:40]!r} is not a rational's canonical form "
                       f"({str(value)[:40]})")
        return sympy.Rational(value.numerator, value.denominator)
    raise _Bad(f"{where}: not an exact number encoding: {text[:40]!r}")


def _exact_cost(where: str, event) -> sympy.Expr:
    """An event's exact rho in sympy (documented parameterisations, see events.py)."""
    if not isinstance(event, dict) or not isinstance(event.get("type"), str):
        raise _Bad(f"{where}: event must be an object with a 'type'")
    kind = event["type"]

    def field_(name, *, positive=True):
        if name not in event:
            raise _Bad(f"{where}: {kind} lacks '{name}'")
        v = _parse_number(f"{where}.{name}", event[name])
        if (positive and v <= 0) or v < 0:
            raise _Bad(f"{where}.{name} must be {'> 0' if positive else '>= 0'}")
        return v

    known = {"GaussianEvent": {"type", "sigma", "sensitivity"},
             "ExponentialEvent": {"type", "epsilon", "sensitivity"},
             "PureDPEvent": {"type", "epsilon"}, "ZCDPEvent": {"type", "rho"},
             "ComposedEvent": {"type", "events"}, "SelfComposedEvent": {"type", "event", "count"}}
    if kind not in known:
        raise _Bad(f"{where}: unknown event type {kind[:40]!r}")
    if set(event) != known[kind]:
        raise _Bad(f"{where}: {kind} must have exactly the keys {sorted(known[kind])}")
    if kind == "GaussianEvent":
        sigma, sens = field_("sigma", positive=False), field_("sensitivity")
        if sigma == 0:
            return sympy.oo
        return sens ** 2 / (2 * sigma ** 2)          # Bun & Steinke 2016, Prop. 1.6
    if kind == "ExponentialEvent":
        field_("sensitivity")
        return field_("epsilon") ** 2 / 8             # Cesar & Rogers 2021 (bounded range)
    if kind == "PureDPEvent":
        return field_("epsilon") ** 2 / 2             # Bun & Steinke 2016, Prop. 1.4
    if kind == "ZCDPEvent":
        return field_("rho", positive=False)
    if kind == "ComposedEvent":
        parts = event["events"]
        if not isinstance(parts, list) or not parts or len(parts) > 10 ** 5:
            raise _Bad(f"{where}: ComposedEvent needs a non-empty 'events' list")
        # Exact sums of many coprime 400-digit denominators multiply out (a small file once
        # took hours), so the running sum may grow by _PART_BITS a part: a float's parameters
        # give a part's cost a denominator of at most ~2 x 53 bits (a Gaussian's sigma
        # squared) times a power of two, far below that.
        total = sympy.Integer(0)
        for i, e in enumerate(parts):
            total += _exact_cost(f"{where}.events[{i}]", e)
            bound = _MAX_SUM_BITS + _PART_BITS * (i + 1)
            if total.is_Rational and max(int(total.p).bit_length(),
                                         int(total.q).bit_length()) > bound:
                raise _Bad(f"{where}: the ComposedEvent's exact cost outgrows {bound} bits by "
                           f"part {i} (its parts' numbers are not floats' or the grid's)")
        return total
    count = event["count"]
    if not isinstance(count, int) or isinstance(count, bool) or not 1 <= count <= 10 ** 12:
        raise _Bad(f"{where}.count must be an int in [1, 10**12]")
    return count * _exact_cost(f"{where}.event", event["event"])


def _holds_composed(event) -> bool:
    """A ComposedEvent, or a SelfComposedEvent of one (at any depth)."""
    for _ in range(64):
        if not isinstance(event, dict):
            return False
        if event.get("type") == "ComposedEvent":
            return True
        if event.get("type") != "SelfComposedEvent":
            return False
        event = event.get("event")
    return False


def _on_grid(cost) -> sympy.Rational:
    """The recorded cost: the exact cost rounded up onto the grid 2**-128."""
    return sympy.ceiling(cost * GRID) / GRID


# -- the checks ---------------------------------------------------------------------------
def _check(data, reasons, state, promise, torn):
    if not isinstance(data, dict):
        raise _Bad("ledger must be a JSON object")
    if data.get("format") != FORMAT or data.get("version") != VERSION or isinstance(
            data.get("version"), bool):
        raise _Bad(f"unsupported ledger format/version: {str(data.get('format'))[:30]!r} "
                   f"{str(data.get('version'))[:10]!r} (this verifier reads {FORMAT} v{VERSION})")
    budget = data.get("budget")
    if not isinstance(budget, dict) or set(budget) != {"rho", "epsilon", "delta"}:
        raise _Bad("budget must be an object with exactly rho, epsilon, delta")
    rho_budget = _parse_number("budget.rho", budget["rho"])
    if rho_budget <= 0:
        raise _Bad("budget.rho must be > 0")
    state["budget"] = Fraction(int(rho_budget.p), int(rho_budget.q))
    if rho_budget > MAX_RHO:
        reasons.append(f"budget rho {_show(state['budget'])} exceeds the filter's cap {MAX_RHO}")
    file_eps = None if budget["epsilon"] is None else _parse_number("budget.epsilon", budget["epsilon"])
    file_delta = None if budget["delta"] is None else _parse_number("budget.delta", budget["delta"])
    if file_delta is not None and not 0 < file_delta < 1:
        raise _Bad("budget.delta must be in (0, 1)")
    if file_eps is not None and file_eps <= 0:
        raise _Bad("budget.epsilon must be > 0")
    if promise is None:
        if file_eps is None or file_delta is None:
            reasons.append("no (epsilon, delta) promise: the ledger records none and none was "
                           "given (pass --epsilon and --delta)")
            eps_p, delta_p = None, file_delta
        else:
            eps_p, delta_p = file_eps, file_delta
            state["promise"] = "taken from the ledger file (pass --epsilon/--delta to state yours)"
    else:
        eps_p, delta_p = promise
        state["promise"] = f"epsilon={float(eps_p)!r}, delta={float(delta_p)!r} (given by the auditor)"
    if eps_p is not None:
        # The budget itself must be (eps_p, delta_p)-DP by the CKS conversion.
        implied = zcdp_to_approx_dp(state["budget"], Fraction(int(delta_p.p), int(delta_p.q)))
        if not math.isfinite(implied) or sympy.Rational(*implied.as_integer_ratio()) > eps_p:
            reasons.append(f"budget rho {_show(state['budget'])} is ({implied!r}, "
                           f"{float(delta_p)!r})-DP, more than the promised epsilon {float(eps_p)!r}")
    if delta_p is not None:
        state["delta"] = float(delta_p)

    header = {"format": data["format"], "version": data["version"], "budget": budget}
    entries = data.get("entries")
    if not isinstance(entries, list):
        raise _Bad("ledger has no entries list")
    state["entries"] = len(entries)
    total, prev = sympy.Integer(0), _digest(header)
    state["hashes"].add(prev)
    run = None          # the open run's opening `what`
    run_spent = sympy.Integer(0)
    outside = 0
    cut_at = None       # a repair inside an open run: the run was cut off there
    for i, entry in enumerate(entries):
        where = f"entry {i}"
        problems_before = len(reasons)
        if not isinstance(entry, dict) or set(entry) != _ENTRY_KEYS:
            raise _Bad(f"{where} must be an object with exactly the keys {sorted(_ENTRY_KEYS)}")
        if type(entry["seq"]) is not int or entry["seq"] != i:
            reasons.append(f"{where}: seq is not {i} (entry removed or reordered)")
        kind = entry["kind"]
        what = entry["what"]
        # A repair is written when a torn file is continued, and a run still open then was
        # cut off: the continuing process closes it as interrupted before anything else
        # (PrivacyFilter.resume), or is itself cut off and repaired again.
        if cut_at is not None and kind != "repair" and not (
                kind == "close" and isinstance(what, dict) and what.get("status") == "interrupted"):
            reasons.append(f"{where}: the run cut off at the repair in entry {cut_at} goes on "
                           "(a continued ledger closes it as interrupted first)")
        cut_at = None
        recorded = _parse_number(f"{where}.rho", entry["rho"])
        if kind in ("open", "close"):
            if entry["event"] is not None or recorded != 0:
                reasons.append(f"{where}: a run marker ({kind}) must have no event and rho 0")
            if kind == "open":
                if run is not None:
                    reasons.append(f"{where}: a run opens while run {run.get('run')} is still open")
                left = sympy.Rational(state["budget"].numerator,
                                      state["budget"].denominator) - total
                run = _check_open(where, what, reasons, state, left)
                run_spent = sympy.Integer(0)
                state["run_summaries"].append({
                    "run": run.get("run"), "status": "open", "rho": run_spent, "reason": None,
                    "mechanism": run.get("mechanism") if isinstance(run.get("mechanism"), str)
                    else None})
            else:
                if run is None:
                    reasons.append(f"{where}: a closing entry without an open run")
                elif not isinstance(what, dict) or what.get("run") != run.get("run") or what.get(
                        "status") not in ("completed", "failed", "interrupted") or \
                        set(what) - {"run", "status", "reason", "outputs"}:
                    reasons.append(f"{where}: closing entry must name the open run and a status "
                                   "(completed, failed, interrupted), with at most a reason "
                                   "and outputs")
                else:
                    reason = what.get("reason")
                    state["run_summaries"][-1].update(
                        status=what["status"], reason=reason if isinstance(reason, str) else None)
                    if what.get("status") == "interrupted":
                        state["notes"].append(f"run {run.get('run')} was cut off (closed as "
                                              f"interrupted when the ledger was continued)")
                run = None
            cost = sympy.Integer(0)
        elif kind == "charge":
            if isinstance(what, dict) and what.get("seed_fixed") is not None:
                if what["seed_fixed"] is not True:
                    reasons.append(f"{where}: seed_fixed, where stated, is true")
                label = f"run {run.get('run')}" if run is not None else "a charge outside a run"
                if label not in state["fixed_seed"]:
                    state["fixed_seed"].append(label)
            composed = _holds_composed(entry["event"])
            exact = recorded if composed else _exact_cost(f"{where}.event", entry["event"])
            if composed:
                # no documented release is charged as one, alone or repeated (_RELEASES): the
                # ledger fails, and the exact cost of an arbitrary composition can take
                # minutes to sum
                reasons.append(f"{where}: a ComposedEvent is no documented release's charge "
                               f"({', '.join(sorted(_RELEASES))}); its cost is not recomputed")
                cost = recorded
            elif exact == sympy.oo:
                reasons.append(f"{where}: infinite cost (sigma = 0) was charged")
                cost = exact
            else:
                cost = _on_grid(exact)
                if recorded != cost:
                    reasons.append(f"{where}: recorded rho {_show(recorded)} != {_show(cost)} "
                                   "recomputed from the event")
                _check_release(where, entry["event"], what, run, reasons)
                if isinstance(what, dict) and what.get("noise") == "gaussian":
                    state["float_noise"] += 1
            if run is None:
                outside += 1
            else:
                run_spent += cost
                state["run_summaries"][-1]["rho"] = run_spent
                if run.get("_rho") is not None and run_spent > run["_rho"]:
                    reasons.append(f"{where}: run {run.get('run')} spends more than the rho its "
                                   "opening entry allowed")
        elif kind == "repair":
            if run is not None:
                cut_at = i
            if entry["event"] is not None or recorded != 0:
                reasons.append(f"{where}: a repair must have no event and rho 0")
            if not isinstance(what, dict) or set(what) != {"dropped_bytes", "dropped_sha256"} \
                    or type(what["dropped_bytes"]) is not int or what["dropped_bytes"] < 0 \
                    or not isinstance(what["dropped_sha256"], str) \
                    or not _HEAD.fullmatch(what["dropped_sha256"]) or (
                        what["dropped_bytes"] == 0
                        and what["dropped_sha256"] != hashlib.sha256(b"").hexdigest()):
                reasons.append(f"{where}: a repair names the bytes it discarded "
                               "(dropped_bytes >= 0, dropped_sha256: 64 hex digits), only those")
            else:
                # first among the notes: the summary shows only the first few
                state["notes"].insert(0, (
                    f"{where}: the file had lost its end when it was continued with --repair "
                    f"({what['dropped_bytes']} bytes of a partial line discarded): a crash "
                    f"mid-write, or a cut that may have removed committed entries; only a head "
                    f"published before it (--head) shows that nothing is missing"))
            cost = sympy.Integer(0)
        else:
            raise _Bad(f"{where}: kind must be open, charge, close or repair")
        if cost == sympy.oo:
            raise _Bad(f"{where}: infinite cost; nothing after it can be summed")
        total = total + cost
        recorded_total = _parse_number(f"{where}.rho_total", entry["rho_total"])
        if recorded_total != total:
            reasons.append(f"{where}: recorded running total {_show(recorded_total)} != "
                           f"recomputed {_show(total)}")
        if entry["prev_hash"] != prev:
            reasons.append(f"{where}: prev_hash breaks the chain (entry removed, reordered or edited)")
        body = {k: v for k, v in entry.items() if k != "hash"}
        if entry["hash"] != _digest(body):
            reasons.append(f"{where}: hash does not match its content (entry edited)")
        prev = entry["hash"] if isinstance(entry["hash"], str) else ""
        state["hashes"].add(prev)
        if len(reasons) > problems_before and len(reasons) > 50:
            raise _Bad(f"{len(reasons)} problems by entry {i}; stopped reading")
    state["spent"] = Fraction(int(total.p), int(total.q))
    if run is not None:
        state["incomplete"].append(f"run {run.get('run')} has no closing entry (cut off: this is "
                                   "a true record of what it spent)")
    if outside:
        state["notes"].append(f"{outside} charge(s) outside a recorded run (attributes not "
                              "checked against a domain)")
    if state["float_noise"]:
        state["notes"].append(f"{state['float_noise']} release(s) used float Gaussian noise "
                              "(--noise gaussian, or weighted records), charged as the ideal "
                              "Gaussian: floating-point noise can leak through its low-order bits")
    if not torn:
        if _parse_number("rho_spent", data.get("rho_spent")) != total:
            reasons.append(f"rho_spent {_show(data.get('rho_spent'))} != recomputed sum {_show(total)}")
        if data.get("head_hash") != prev:
            reasons.append("head_hash does not match the last entry (entries removed from the end?)")
        extra = set(data) - {"format", "version", "budget", "entries", "rho_spent", "head_hash"}
        if extra:
            reasons.append(f"unknown top-level keys {sorted(extra)[:5]}")
    if total > rho_budget:
        reasons.append(f"overspent: rho {_show(total)} > budget {_show(rho_budget)}")
    if delta_p is not None:
        state["epsilon"] = zcdp_to_approx_dp(state["spent"], Fraction(int(delta_p.p), int(delta_p.q)))


def _check_open(where, what, reasons, state, left):
    state["runs"] += 1
    if not isinstance(what, dict):
        reasons.append(f"{where}: opening entry must be an object")
        return {"run": None, "_rho": None, "_domain": None}
    # the filter numbers runs 0, 1, 2, ... in order: a report listing runs by id relies on it
    if type(what.get("run")) is not int or what.get("run") != state["runs"] - 1:
        reasons.append(f"{where}: the run is numbered {_line(repr(what.get('run')))[:40]}, not "
                       f"{state['runs'] - 1} (runs are numbered in order from 0)")
    run = dict(what)
    if what.get("seed_fixed") is not False:
        if what.get("seed_fixed") is True:
            state["fixed_seed"].append(f"run {what.get('run')}")
        else:       # a run opened by hand: its curator's charges say whether it was seeded
            state["notes"].append(f"run {what.get('run')} does not record whether its seed was "
                                  f"fixed")
    run["_rho"] = None
    try:
        run["_rho"] = _parse_number(f"{where}.what.rho", what.get("rho"))
    except _Bad as exc:
        reasons.append(str(exc))
    # PrivacyFilter.open_run: a run's rho is > 0 and at most what the ledger has left
    if run["_rho"] is not None and not 0 < run["_rho"] <= left:
        reasons.append(f"{where}: a run opens with rho {_show(run['_rho'])}, not in (0, "
                       f"{_show(left)}] (what the ledger had left)")
    domain = what.get("domain")
    if domain is not None and not (isinstance(domain, dict) and all(
            isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool) and v >= 1
            for k, v in domain.items())):
        reasons.append(f"{where}: the recorded domain must map attribute names to sizes >= 1")
        domain = None
    run["_domain"] = domain
    if domain is None:
        state["notes"].append(f"run {_line(repr(what.get('run')), 40)} records no domain: its "
                              f"charges' attributes are not checked against one")
    parameters = what.get("parameters")
    if isinstance(parameters, dict) and parameters.get("total") is not None:
        # FEM, DQRS and MWEM take a record count as public: a guarantee that rests on it being
        # public (the true count is not, between neighbours that add or remove a record)
        state["notes"].append(f"run {what.get('run')} was given a record count (total = "
                              f"{str(parameters['total'])[:20]}) as public information: its "
                              f"guarantee holds only if that count is public")
    return run


def _check_release(where, event, what, run, reasons):
    """The event must be the one the release calls for, with the sensitivity it implies."""
    if not isinstance(what, dict) or not isinstance(what.get("release"), str):
        reasons.append(f"{where}: a charge must say what it released ('release' in what)")
        return
    release = what["release"]
    if release not in _RELEASES:
        reasons.append(f"{where}: release {release[:40]!r} is not a documented release "
                       f"({', '.join(sorted(_RELEASES))})")
        return
    allowed = _RELEASES[release]
    if release == "none" and (set(what) - {"release", "reason", "seed_fixed"} or
                              event.get("type") != "ZCDPEvent" or
                              not isinstance(what.get("reason"), str) or not what["reason"]):
        reasons.append(f"{where}: a release of nothing is a ZCDPEvent with a reason and names "
                       "nothing else")
        return
    if allowed is not None and event.get("type") not in allowed:
        reasons.append(f"{where}: a {release} release must be charged as {' or '.join(allowed)}, "
                       f"not {str(event.get('type'))[:40]}")
        return
    if release in ("marginal", "soft_count"):
        attrs = what.get("attrs")
        if not isinstance(attrs, list) or not attrs or not all(isinstance(a, str) for a in attrs) \
                or len(set(attrs)) != len(attrs):
            reasons.append(f"{where}: a {release} names a non-empty list of distinct attributes")
            return
        domain = None if run is None else run.get("_domain")
        if domain is not None:
            unknown = [a for a in attrs if a not in domain]
            if unknown:
                reasons.append(f"{where}: attributes {unknown[:3]} are not in the run's domain")
    if release == "soft_count":
        # each record adds a value in [0, 1] (the curator rounds and clips it): sensitivity 1,
        # and only the exact discrete noise is ever used for it
        sens = _parse_number(f"{where}.event.sensitivity", event["sensitivity"])
        if sens != 1:
            reasons.append(f"{where}: a soft count has L2 sensitivity 1, the event states "
                           f"{_show(sens)}")
        if what.get("noise") != "discrete_gaussian":
            reasons.append(f"{where}: a soft count's noise is discrete_gaussian, not "
                           f"{str(what.get('noise'))[:40]!r}")
        extra = set(what) - {"release", "attrs", "threshold", "sharpness", "noise", "seed_fixed"}
        if extra:
            reasons.append(f"{where}: a soft count states nothing else, got {sorted(extra)[:5]}")
        # the curator's own ranges (Curator.measure_soft_count), restated
        for name, rule, allowed in (("threshold", lambda v: abs(v) < 2.0 ** 40, "|t| < 2^40"),
                                    ("sharpness", lambda v: 0 < v <= 2.0 ** 20, "0 < s <= 2^20")):
            value = what.get(name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or \
                    not math.isfinite(value) or not rule(value):
                reasons.append(f"{where}: a soft count states its {name} ({allowed})")
    elif release == "marginal":
        if what.get("noise") not in (None, "gaussian", "discrete_gaussian"):
            reasons.append(f"{where}: unknown noise {str(what.get('noise'))[:40]!r}")
        sens = _parse_number(f"{where}.event.sensitivity", event["sensitivity"])
        if "weights" in what:
            # the curator releases one marginal a charge; a stated weight vector would claim
            # a sensitivity below 1 for a release it never makes
            reasons.append(f"{where}: a marginal release states no weights (dpcore's curator "
                           f"charges one marginal of records at a time, sensitivity 1)")
        elif sens != 1:
            reasons.append(f"{where}: a marginal of records has L2 sensitivity 1, the event "
                           f"states {_show(sens)}")
    elif release == "selection":
        sens = _parse_number(f"{where}.event.sensitivity", event["sensitivity"])
        stated = what.get("sensitivity")
        if isinstance(stated, bool) or not isinstance(stated, (int, float)) or \
                not math.isfinite(stated) or sympy.Rational(*float(stated).as_integer_ratio()) != sens:
            reasons.append(f"{where}: the selection's stated sensitivity does not match its event")
        k = what.get("candidates")
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            reasons.append(f"{where}: a selection states its number of candidates (>= 1)")
    elif release == "rejection":
        _check_rejection(where, event, what, run, reasons)


def _check_rejection(where, event, what, run, reasons):
    """DQRS's keep flags: ``coins`` flags, each PureDPEvent(eps) with eps at least
    (eta / total) max(1, 1 / gamma) for the stated floats (Curator.reject_queries). The total
    is the run's one count n: the public one its opening entry gives, else the same in every
    rejection of the run (DQRS estimates it once)."""
    stated = [what.get(name) for name in ("eta", "gamma", "total")]
    coins = what.get("coins")
    inner = event.get("event")
    if any(isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0
           for v in stated) or isinstance(coins, bool) or not isinstance(coins, int) or coins < 1:
        reasons.append(f"{where}: a rejection states its coins, eta, gamma and total")
        return
    if not isinstance(inner, dict) or inner.get("type") != "PureDPEvent" or event.get("count") != coins:
        reasons.append(f"{where}: a rejection is charged as one PureDPEvent per coin")
        return
    if run is not None:
        given = run.get("parameters", {}).get("total") if isinstance(run.get("parameters"), dict) \
            else None
        first = run.setdefault("_rejection_total", stated[2])
        if given is not None and given != stated[2]:
            reasons.append(f"{where}: a rejection's total {stated[2]!r} is not the run's public "
                           f"total {str(given)[:20]}")
        elif first != stated[2]:
            reasons.append(f"{where}: a rejection's total {stated[2]!r} differs from the run's "
                           f"earlier rejections' ({first!r})")
    eta, gamma, total = (sympy.Rational(*float(v).as_integer_ratio()) for v in stated)
    eps = _parse_number(f"{where}.event.event.epsilon", inner["epsilon"])
    if eps < eta / total * max(sympy.Integer(1), 1 / gamma):
        reasons.append(f"{where}: a rejection's epsilon is below (eta / total) max(1, 1 / gamma)")


def _digest(obj) -> str:
    text = json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
