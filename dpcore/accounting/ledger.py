"""The privacy ledger: an append-only, hash-chained record of every charge, grouped in runs.

Wire format (``"format": "dpcore-ledger"``, ``"version": 2``): one JSON document, laid out one
entry per line so that a charge appends a line in O(1) (:mod:`.journal`)::

    {"format":"dpcore-ledger","version":2,"budget":{"rho":"1/2","epsilon":"0x1.0p+0","delta":"0x1.0c6f7a0b5ed8dp-20"},"entries":[
    {"seq":0,"kind":"open","event":null,"rho":"0","rho_total":"0","what":{"run":0,...},"prev_hash":"..","hash":".."}
    ,{"seq":1,"kind":"charge","event":{"type":"GaussianEvent","sigma":"0x1.4p+3","sensitivity":"1"},
      "rho":"...","rho_total":"...","what":{"release":"marginal","attrs":["age"],"noise":"discrete_gaussian"},...}
    ,{"seq":2,"kind":"close","event":null,"rho":"0",...,"what":{"run":0,"status":"completed",...}}
    ],"rho_spent":"...","head_hash":"..."}

* ``budget`` is the ledger's *lifetime* budget: every run charged to it, together, stays within it.
* ``kind`` is ``open`` (a run starts: mechanism, parameters, the run's own rho, its domain),
  ``charge`` (a release and its cost) or ``close`` (the run completed or failed). A run without a
  closing entry was cut off; the ledger is still a true record of what it spent. ``repair``
  (``what``: ``dropped_bytes``, ``dropped_sha256``) records that a file which ended without its
  trailer was continued with ``--repair``, and the partial line it discarded.
* Numbers are exact: floats as ``float.hex`` (the very double the sampler used), rationals as
  ``str(Fraction)``. A charge's ``rho`` is its exact zCDP cost rounded *up* onto the grid
  2**-128 (``_numbers.round_cost_up``; proofs/cost_rounding.py), so totals stay small.
* Each entry's ``hash`` is the SHA-256 of its canonical JSON (sorted keys, no spaces, UTF-8)
  without the ``hash`` key; entry 0's ``prev_hash`` is the hash of the header (format, version,
  budget). The chain detects accidents and naive edits; it is not a signature (anyone can
  recompute it). The independent check of the privacy arithmetic, which does not trust the
  chain, is :func:`dpcore.accounting.verify_ledger`.
* Nothing in a ledger depends on the data except through a charged release: no record counts,
  no per-step timings (only the opening entry's start time, to the second).
"""
from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from . import _numbers as num
from .errors import LedgerError
from .events import Event, from_dict as event_from_dict, to_dict as event_to_dict
from ..files import replace_into

FORMAT = "dpcore-ledger"
VERSION = 2
KINDS = ("open", "charge", "close", "repair")
ENTRY_KEYS = frozenset({"seq", "kind", "event", "rho", "rho_total", "what", "prev_hash", "hash"})
MAX_LEDGER_BYTES = 1 << 30      # a ledger of 10**6 charges is ~400 MB; beyond 1 GB is not one
_ENTRIES_OPEN = ',"entries":[\n'


def canonical_json(obj) -> bytes:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False).encode("utf-8")


def sha256_of(obj) -> str:
    return hashlib.sha256(canonical_json(obj)).hexdigest()


MAX_WHAT_DEPTH = 24          # the verifier reads at most 32 levels of a whole ledger
MAX_INT_DIGITS = 100


def normalize_what(what: Any) -> Any:
    """``what`` as it will read back from JSON (tuples become lists); refuses non-JSON data,
    nesting deeper than MAX_WHAT_DEPTH and integers longer than MAX_INT_DIGITS digits (the
    verifier refuses those as hostile, so the filter never writes them)."""
    try:
        out = json.loads(json.dumps(what, allow_nan=False))
    except (TypeError, ValueError, RecursionError) as exc:
        raise num.DpcoreTypeError(f"what must be JSON-serialisable metadata: {exc}") from None
    stack = [(out, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_WHAT_DEPTH:
            raise num.DpcoreTypeError(f"what must nest at most {MAX_WHAT_DEPTH} levels deep")
        if isinstance(node, dict):
            stack.extend((v, depth + 1) for v in node.values())
        elif isinstance(node, list):
            stack.extend((v, depth + 1) for v in node)
        elif isinstance(node, int) and not isinstance(node, bool) and \
                len(str(abs(node))) > MAX_INT_DIGITS:
            raise num.DpcoreTypeError(f"what must hold integers of at most {MAX_INT_DIGITS} digits")
    return out


@dataclass(frozen=True)
class LedgerEntry:
    """One committed entry. ``rho`` is its charged cost (0 for run markers), ``rho_total`` the
    running sum; ``event`` is None for ``open``/``close``."""

    seq: int
    kind: str
    event: Event | None
    rho: Fraction
    rho_total: Fraction
    what: Any
    prev_hash: str
    hash: str

    def to_dict(self) -> dict:
        body = _entry_body(self.seq, self.kind, self.event, self.rho, self.rho_total, self.what,
                           self.prev_hash)
        body["hash"] = self.hash
        return body


def _entry_body(seq, kind, event, rho, rho_total, what, prev_hash) -> dict:
    return {"seq": seq, "kind": kind, "event": None if event is None else event_to_dict(event),
            "rho": str(rho), "rho_total": str(rho_total), "what": what, "prev_hash": prev_hash}


class Ledger:
    """Immutable snapshot of a lifetime budget and the entries recorded against it.

    :class:`~.filter.PrivacyFilter` builds ledgers; users read, save, load and verify them.
    ``torn`` is True for a ledger read back from a file whose last write was cut off (a crash):
    its complete entries are kept, the partial one was never committed.
    """

    def __init__(self, rho, *, epsilon=None, delta=None, entries=(), torn: bool = False):
        self._rho = Fraction(num.positive("rho", rho))
        self._epsilon = None if epsilon is None else num.positive("epsilon", epsilon)
        self._delta = None if delta is None else num.probability("delta", delta)
        self._entries = tuple(entries)
        self.torn = bool(torn)

    # -- read-only view -------------------------------------------------------------------
    @property
    def budget(self) -> Fraction:
        return self._rho

    @property
    def epsilon(self):
        return self._epsilon

    @property
    def delta(self):
        return self._delta

    @property
    def entries(self) -> tuple[LedgerEntry, ...]:
        return self._entries

    @property
    def charges(self) -> tuple[LedgerEntry, ...]:
        return tuple(e for e in self._entries if e.kind == "charge")

    @property
    def spent(self) -> Fraction:
        return self._entries[-1].rho_total if self._entries else Fraction(0)

    @property
    def open_run(self) -> LedgerEntry | None:
        """The opening entry of the run still open at the end of the ledger, if any."""
        current = None
        for e in self._entries:
            if e.kind == "open":
                current = e
            elif e.kind == "close":
                current = None
        return current

    @property
    def runs(self) -> int:
        return sum(e.kind == "open" for e in self._entries)

    def __len__(self):
        return len(self._entries)

    def __eq__(self, other):
        return isinstance(other, Ledger) and self.to_dict() == other.to_dict()

    __hash__ = None

    def __repr__(self):
        return f"Ledger(rho={self._rho}, entries={len(self._entries)}, spent={self.spent})"

    def header(self) -> dict:
        return {"format": FORMAT, "version": VERSION, "budget": {
            "rho": str(self._rho),
            "epsilon": None if self._epsilon is None else num.encode(self._epsilon),
            "delta": None if self._delta is None else num.encode(self._delta)}}

    @property
    def head_hash(self) -> str:
        return self._entries[-1].hash if self._entries else sha256_of(self.header())

    # -- growth (used by the filter) ------------------------------------------------------
    def appended(self, kind: str, event: Event | None, rho: Fraction, what: Any = None) -> "Ledger":
        """A new ledger with one more entry; ``self`` is unchanged."""
        if kind not in KINDS:
            raise LedgerError(f"entry kind must be one of {KINDS}, got {kind!r}")
        if (event is None) != (kind != "charge"):
            raise LedgerError("a charge entry needs an event, and a run marker has none")
        seq, prev = len(self._entries), self.head_hash
        rho = Fraction(rho)
        total = self.spent + rho
        what = normalize_what(what)
        body = _entry_body(seq, kind, event, rho, total, what, prev)
        entry = LedgerEntry(seq, kind, event, rho, total, what, prev, sha256_of(body))
        return Ledger(self._rho, epsilon=self._epsilon, delta=self._delta,
                      entries=self._entries + (entry,))

    # -- serialisation --------------------------------------------------------------------
    def to_dict(self) -> dict:
        data = self.header()
        data["entries"] = [e.to_dict() for e in self._entries]
        data["rho_spent"] = str(self.spent)
        data["head_hash"] = self.head_hash
        return data

    def to_text(self) -> str:
        """The one-entry-per-line layout the journal writes (a valid JSON document)."""
        parts = [header_line(self.header())]
        parts += [entry_line(e.to_dict(), first=(i == 0)) for i, e in enumerate(self._entries)]
        parts.append(trailer_line(self.spent, self.head_hash))
        return "".join(parts)

    def save(self, path) -> None:
        """Write a copy atomically (temp file, fsync, rename). The filter's live ledger file is
        written by :class:`~.journal.LedgerFile` instead, one appended line per charge. A
        ledger read from a torn file is refused: its copy would be a whole ledger with no
        record of what was cut (repair the file instead: ``PrivacyFilter.resume(path,
        repair=True)``, which records the repair)."""
        if self.torn:
            raise LedgerError("this ledger was read from a file that ends without its trailer "
                              "(a crash or a cut); a saved copy would hide that: repair the file "
                              "with dpcore synth --continue --repair (PrivacyFilter.resume(path, "
                              "repair=True)) instead")
        atomic_write(path, self.to_text())

    @classmethod
    def load(cls, path) -> "Ledger":
        """Read and validate a ledger file; raises :class:`LedgerError` naming the problem."""
        return cls.from_text(read_ledger_bytes(path), where=f"ledger {os.fspath(path)!r}")

    @classmethod
    def from_text(cls, text, *, where: str = "ledger") -> "Ledger":
        data, torn = parse_ledger_text(text, where=where)
        ledger = cls.from_dict(data, allow_open_tail=torn)
        ledger.torn = torn
        return ledger

    @classmethod
    def from_dict(cls, data, *, allow_open_tail: bool = False) -> "Ledger":
        """Rebuild a ledger, checking structure, numbers, sequence, running sums and the hash
        chain. ``allow_open_tail``: the trailer may be missing (a torn journal)."""
        try:
            return _from_dict(cls, data, allow_open_tail)
        except LedgerError:
            raise
        except (ValueError, TypeError, KeyError, ZeroDivisionError, OverflowError,
                RecursionError) as exc:
            raise LedgerError(f"invalid ledger: {str(exc)[:200]}") from None


# -- the line layout (shared with the journal) -------------------------------------------
def _dumps(obj) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def header_line(header: dict) -> str:
    return _dumps(header)[:-1] + _ENTRIES_OPEN


def entry_line(entry: dict, *, first: bool) -> str:
    return ("" if first else ",") + _dumps(entry) + "\n"


def trailer_line(spent: Fraction, head_hash: str) -> str:
    return "]," + _dumps({"rho_spent": str(spent), "head_hash": head_hash})[1:] + "\n"


def _no_duplicates(pairs):
    out = {}
    for key, value in pairs:
        if key in out:
            raise LedgerError(f"duplicate JSON key {key!r}")
        out[key] = value
    return out


def _no_constants(name):
    raise LedgerError(f"JSON constant {name} is not allowed in a ledger")


def strict_json(text: str):
    """json.loads refusing duplicate keys, NaN/Infinity and over-long integer literals."""
    def parse_int(s):
        if len(s) > MAX_INT_DIGITS:
            raise LedgerError(f"integer literal of {len(s)} digits")
        return int(s)
    return json.loads(text, object_pairs_hook=_no_duplicates, parse_constant=_no_constants,
                      parse_int=parse_int)


def read_ledger_bytes(path) -> str:
    try:
        with open(os.fspath(path), "rb") as fh:
            raw = fh.read(MAX_LEDGER_BYTES + 1)
    except OSError as exc:
        raise LedgerError(f"cannot read ledger {os.fspath(path)!r}: {exc.strerror}") from None
    if len(raw) > MAX_LEDGER_BYTES:
        raise LedgerError(f"ledger {os.fspath(path)!r} is larger than {MAX_LEDGER_BYTES} bytes")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise LedgerError(f"ledger {os.fspath(path)!r} is not UTF-8 text") from None


def parse_ledger_text(text: str, *, where: str = "ledger") -> tuple[dict, bool]:
    """The ledger's JSON object, and whether its last write was torn.

    A complete file is one JSON document. A journal whose last append was cut off by a crash is
    not: then its complete lines are read back (header, whole entries), the partial line is
    dropped (it was never committed: the filter draws noise only after the append returns), and
    ``torn`` is True.
    """
    try:
        data = strict_json(text)
        return data, False
    except (ValueError, RecursionError) as exc:
        first_error = exc
    lines = text.split("\n")
    if not lines[0].endswith(_ENTRIES_OPEN.rstrip("\n")):
        raise LedgerError(f"{where} is not valid JSON: {str(first_error)[:200]}") from None
    try:
        data = strict_json(lines[0][:-len(_ENTRIES_OPEN.rstrip("\n"))] + "}")
    except (ValueError, RecursionError) as exc:
        raise LedgerError(f"{where}: unreadable header line: {str(exc)[:200]}") from None
    entries = []
    body = [line for line in lines[1:]]
    while body and body[-1] == "":
        body.pop()
    for i, line in enumerate(body):
        last = i == len(body) - 1
        if line.startswith("]"):
            if last:
                break  # a torn trailer: every entry before it is whole
            raise LedgerError(f"{where}: text after the trailer ({str(first_error)[:120]})")
        try:
            entries.append(strict_json(line[1:] if entries else line))
        except (ValueError, RecursionError):
            if last:
                break  # the torn append
            raise LedgerError(f"{where}: line {i + 2} is not a complete entry") from None
    data["entries"] = entries
    return data, True


def atomic_write(path, text: str) -> None:
    """Write ``text`` to a temp file beside ``path``, fsync, rename into place, fsync the dir."""
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".ledger-", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        replace_into(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    fsync_directory(directory)


def fsync_directory(directory: str) -> None:
    try:
        dir_fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return  # platforms without directory fds: the rename is still atomic
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


# -- validation ---------------------------------------------------------------------------
def _require_keys(where, obj, keys):
    if not isinstance(obj, dict):
        raise LedgerError(f"{where} must be a JSON object, got {type(obj).__name__}")
    if set(obj) != set(keys):
        raise LedgerError(f"{where} must have exactly the keys {sorted(keys)}, got {sorted(obj)[:12]}")


def _rational(where, text) -> Fraction:
    if not isinstance(text, str) or len(text) > 802:
        raise LedgerError(f"{where} must be a rational string like '1/2'")
    value = num.decode(text)
    if isinstance(value, float):
        raise LedgerError(f"{where} must be an exact rational string, got float text")
    return Fraction(value)


def _from_dict(cls, data, allow_open_tail):
    keys = {"format", "version", "budget", "entries", "rho_spent", "head_hash"}
    if allow_open_tail:
        keys -= {"rho_spent", "head_hash"}
    _require_keys("ledger", data, keys)
    if data["format"] != FORMAT:
        raise LedgerError(f"ledger format must be {FORMAT!r}, got {str(data['format'])[:40]!r}")
    if data["version"] != VERSION or isinstance(data["version"], bool):
        raise LedgerError(f"ledger version must be {VERSION}, got {str(data['version'])[:20]!r}")
    budget = data["budget"]
    _require_keys("budget", budget, {"rho", "epsilon", "delta"})
    eps = None if budget["epsilon"] is None else num.decode(budget["epsilon"])
    delta = None if budget["delta"] is None else num.decode(budget["delta"])
    ledger = cls(_rational("budget.rho", budget["rho"]), epsilon=eps, delta=delta)
    if ledger.header() != {k: data[k] for k in ("format", "version", "budget")}:
        raise LedgerError("budget numbers are not in canonical form")
    if not isinstance(data["entries"], list):
        raise LedgerError("entries must be a list")
    entries = []
    total, prev = Fraction(0), ledger.head_hash
    for i, raw in enumerate(data["entries"]):
        where = f"entries[{i}]"
        _require_keys(where, raw, ENTRY_KEYS)
        if raw["seq"] != i or isinstance(raw["seq"], bool):
            raise LedgerError(f"{where}.seq must be {i} (entry removed or reordered?)")
        kind = raw["kind"]
        if kind not in KINDS:
            raise LedgerError(f"{where}.kind must be one of {KINDS}")
        event = None
        if kind == "charge":
            event = event_from_dict(raw["event"])
            if event_to_dict(event) != raw["event"]:
                raise LedgerError(f"{where}.event numbers are not in canonical form")
        elif raw["event"] is not None:
            raise LedgerError(f"{where}: a run marker ({kind}) carries no event")
        rho = _rational(f"{where}.rho", raw["rho"])
        rho_total = _rational(f"{where}.rho_total", raw["rho_total"])
        if str(rho) != raw["rho"] or str(rho_total) != raw["rho_total"]:
            raise LedgerError(f"{where}: rho strings are not in canonical form")
        if kind != "charge" and rho != 0:
            raise LedgerError(f"{where}: a run marker costs 0")
        total += rho
        if rho_total != total:
            raise LedgerError(f"{where}.rho_total must be the running sum {total}")
        if raw["prev_hash"] != prev:
            raise LedgerError(f"{where}.prev_hash does not match the previous entry (chain broken)")
        body = {k: raw[k] for k in raw if k != "hash"}
        if sha256_of(body) != raw["hash"]:
            raise LedgerError(f"{where}.hash does not match its content (entry edited?)")
        entries.append(LedgerEntry(i, kind, event, rho, rho_total, raw["what"], prev, raw["hash"]))
        prev = raw["hash"]
    if "rho_spent" in data:
        if _rational("rho_spent", data["rho_spent"]) != total:
            raise LedgerError(f"rho_spent must equal the sum of entries {total}")
        if data["head_hash"] != prev:
            raise LedgerError("head_hash does not match the last entry (entry removed?)")
    return cls(ledger.budget, epsilon=eps, delta=delta, entries=entries)
