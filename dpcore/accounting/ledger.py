"""The privacy ledger: an append-only, hash-chained record of every charge.

Wire format (JSON, ``"format": "dpcore-ledger"``, ``"version": 1``)::

    {"format": "dpcore-ledger", "version": 1,
     "budget": {"rho": "1/2", "epsilon": "0x1.0p+0" | null, "delta": "0x1.0c6f7a0b5ed8dp-20" | null},
     "entries": [{"seq": 0, "event": {"type": "GaussianEvent", "sigma": "0x1.4p+3",
                                      "sensitivity": "1"},
                  "rho": "1/200", "rho_total": "1/200", "what": {...},
                  "timestamp": "2026-01-01T00:00:00.000000Z",
                  "prev_hash": "<hex>", "hash": "<hex>"}, ...],
     "rho_spent": "1/200", "head_hash": "<hex>"}

Numbers are exact: floats as ``float.hex`` (the very double the sampler used), ints and
rationals as ``str(Fraction)`` (``"3"``, ``"1/200"``); see ``_numbers.encode``. ``rho`` and
``rho_total`` are exact rationals. Each entry's ``hash`` is the SHA-256 of its canonical JSON
(sorted keys, no spaces, UTF-8) without the ``hash`` key; entry 0's ``prev_hash`` is the hash
of the header (format, version, budget), so editing, removing or reordering anything breaks the
chain. The chain detects accidents and naive edits; it is not a signature (anyone can recompute
it), so publish ``head_hash`` or sign the file if you need tamper evidence against an adversary.
The independent check of the *privacy arithmetic* is :func:`dpcore.accounting.verify_ledger`.
"""
from __future__ import annotations

import datetime
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

FORMAT = "dpcore-ledger"
VERSION = 1


def canonical_json(obj) -> bytes:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False).encode("utf-8")


def _sha256(obj) -> str:
    return hashlib.sha256(canonical_json(obj)).hexdigest()


def normalize_what(what: Any) -> Any:
    """``what`` as it will read back from JSON (tuples become lists); refuses non-JSON data."""
    try:
        return json.loads(json.dumps(what, allow_nan=False))
    except (TypeError, ValueError) as exc:
        raise num.DpcoreTypeError(f"what must be JSON-serialisable metadata, got {what!r}: {exc}") from None


@dataclass(frozen=True)
class LedgerEntry:
    """One committed charge. ``rho`` is its exact cost, ``rho_total`` the running sum."""

    seq: int
    event: Event
    rho: Fraction
    rho_total: Fraction
    what: Any
    timestamp: str
    prev_hash: str
    hash: str

    def to_dict(self) -> dict:
        body = _entry_body(self.seq, self.event, self.rho, self.rho_total, self.what,
                           self.timestamp, self.prev_hash)
        body["hash"] = self.hash
        return body


def _entry_body(seq, event, rho, rho_total, what, timestamp, prev_hash) -> dict:
    return {"seq": seq, "event": event_to_dict(event), "rho": str(rho),
            "rho_total": str(rho_total), "what": what, "timestamp": timestamp,
            "prev_hash": prev_hash}


class Ledger:
    """Immutable snapshot of a budget and the charges made against it.

    :class:`~.filter.PrivacyFilter` builds ledgers; users read, save, load and verify them.
    """

    def __init__(self, rho, *, epsilon=None, delta=None, entries=()):
        self._rho = Fraction(num.positive("rho", rho))
        self._epsilon = None if epsilon is None else num.positive("epsilon", epsilon)
        self._delta = None if delta is None else num.probability("delta", delta)
        self._entries = tuple(entries)

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
    def spent(self) -> Fraction:
        return self._entries[-1].rho_total if self._entries else Fraction(0)

    def __len__(self):
        return len(self._entries)

    def __eq__(self, other):
        return isinstance(other, Ledger) and self.to_dict() == other.to_dict()

    __hash__ = None

    def __repr__(self):
        return f"Ledger(rho={self._rho}, entries={len(self._entries)}, spent={self.spent})"

    def _header(self) -> dict:
        return {"format": FORMAT, "version": VERSION, "budget": {
            "rho": str(self._rho),
            "epsilon": None if self._epsilon is None else num.encode(self._epsilon),
            "delta": None if self._delta is None else num.encode(self._delta)}}

    @property
    def head_hash(self) -> str:
        return self._entries[-1].hash if self._entries else _sha256(self._header())

    # -- growth (used by the filter) ------------------------------------------------------
    def appended(self, event: Event, rho: Fraction, what: Any = None,
                 timestamp: str | None = None) -> "Ledger":
        """A new ledger with one more entry; ``self`` is unchanged."""
        if timestamp is None:
            timestamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        seq, prev = len(self._entries), self.head_hash
        total = self.spent + rho
        what = normalize_what(what)
        body = _entry_body(seq, event, rho, total, what, timestamp, prev)
        entry = LedgerEntry(seq, event, rho, total, what, timestamp, prev, _sha256(body))
        return Ledger(self._rho, epsilon=self._epsilon, delta=self._delta,
                      entries=self._entries + (entry,))

    # -- serialisation --------------------------------------------------------------------
    def to_dict(self) -> dict:
        data = self._header()
        data["entries"] = [e.to_dict() for e in self._entries]
        data["rho_spent"] = str(self.spent)
        data["head_hash"] = self.head_hash
        return data

    def save(self, path) -> None:
        """Write atomically: a temp file in the same directory, fsync, ``os.replace``, fsync dir.

        A reader (or a crash) sees either the old file or the new one, never a partial file.
        """
        path = os.fspath(path)
        directory = os.path.dirname(os.path.abspath(path))
        data = json.dumps(self.to_dict(), indent=1, ensure_ascii=False, allow_nan=False)
        fd, tmp = tempfile.mkstemp(prefix=".ledger-", suffix=".tmp", dir=directory)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(data)
                fh.write("\n")
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, path)
        except BaseException:
            try:
                os.unlink(tmp)
            except FileNotFoundError:
                pass
            raise
        try:
            dir_fd = os.open(directory, os.O_RDONLY)
        except OSError:
            return  # platforms without directory fds: the rename is still atomic
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)

    @classmethod
    def load(cls, path) -> "Ledger":
        """Read and validate a ledger file; raises :class:`LedgerError` naming the problem."""
        try:
            with open(os.fspath(path), "r", encoding="utf-8") as fh:
                text = fh.read()
        except UnicodeDecodeError as exc:
            raise LedgerError(f"ledger {path} is not UTF-8 text: {exc}") from None
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise LedgerError(f"ledger {path} is not valid JSON (truncated?): {exc}") from None
        return cls.from_dict(data)

    @classmethod
    def from_dict(cls, data) -> "Ledger":
        """Rebuild a ledger, checking structure, numbers, sequence, running sums and the hash chain."""
        try:
            return _from_dict(cls, data)
        except LedgerError:
            raise
        except (ValueError, TypeError, KeyError, ZeroDivisionError) as exc:
            raise LedgerError(f"invalid ledger: {exc}") from None


def _require_keys(where, obj, keys):
    if not isinstance(obj, dict):
        raise LedgerError(f"{where} must be a JSON object, got {type(obj).__name__}")
    if set(obj) != set(keys):
        raise LedgerError(f"{where} must have exactly the keys {sorted(keys)}, got {sorted(obj)}")


def _rational(where, text) -> Fraction:
    if not isinstance(text, str):
        raise LedgerError(f"{where} must be a rational string like '1/2', got {text!r}")
    value = num.decode(text)
    if isinstance(value, float):
        raise LedgerError(f"{where} must be an exact rational string, got float text {text!r}")
    return Fraction(value)


def _from_dict(cls, data):
    _require_keys("ledger", data, {"format", "version", "budget", "entries", "rho_spent", "head_hash"})
    if data["format"] != FORMAT:
        raise LedgerError(f"ledger format must be {FORMAT!r}, got {data['format']!r}")
    if data["version"] != VERSION or isinstance(data["version"], bool):
        raise LedgerError(f"ledger version must be {VERSION}, got {data['version']!r}")
    budget = data["budget"]
    _require_keys("budget", budget, {"rho", "epsilon", "delta"})
    eps = None if budget["epsilon"] is None else num.decode(budget["epsilon"])
    delta = None if budget["delta"] is None else num.decode(budget["delta"])
    ledger = cls(_rational("budget.rho", budget["rho"]), epsilon=eps, delta=delta)
    if ledger._header() != {k: data[k] for k in ("format", "version", "budget")}:
        raise LedgerError("budget numbers are not in canonical form")
    if not isinstance(data["entries"], list):
        raise LedgerError("entries must be a list")
    entries = []
    total, prev = Fraction(0), ledger.head_hash
    for i, raw in enumerate(data["entries"]):
        where = f"entries[{i}]"
        _require_keys(where, raw, {"seq", "event", "rho", "rho_total", "what", "timestamp",
                                   "prev_hash", "hash"})
        if raw["seq"] != i or isinstance(raw["seq"], bool):
            raise LedgerError(f"{where}.seq must be {i}, got {raw['seq']!r} (entry removed or reordered?)")
        event = event_from_dict(raw["event"])
        if event_to_dict(event) != raw["event"]:
            raise LedgerError(f"{where}.event numbers are not in canonical form")
        rho = _rational(f"{where}.rho", raw["rho"])
        rho_total = _rational(f"{where}.rho_total", raw["rho_total"])
        if str(rho) != raw["rho"] or str(rho_total) != raw["rho_total"]:
            raise LedgerError(f"{where}: rho strings are not in canonical form")
        total += rho
        if rho_total != total:
            raise LedgerError(f"{where}.rho_total must be the running sum {total}, got {rho_total}")
        if raw["prev_hash"] != prev:
            raise LedgerError(f"{where}.prev_hash does not match the previous entry (chain broken)")
        body = {k: raw[k] for k in raw if k != "hash"}
        if _sha256(body) != raw["hash"]:
            raise LedgerError(f"{where}.hash does not match its content (entry edited?)")
        if not isinstance(raw["timestamp"], str):
            raise LedgerError(f"{where}.timestamp must be a string")
        entries.append(LedgerEntry(i, event, rho, rho_total, raw["what"], raw["timestamp"],
                                   raw["prev_hash"], raw["hash"]))
        prev = raw["hash"]
    if _rational("rho_spent", data["rho_spent"]) != total:
        raise LedgerError(f"rho_spent must equal the sum of entries {total}, got {data['rho_spent']}")
    if data["head_hash"] != prev:
        raise LedgerError("head_hash does not match the last entry (entry removed?)")
    return cls(ledger.budget, epsilon=eps, delta=delta, entries=entries)
