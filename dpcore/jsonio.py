"""Strict JSON input: every JSON file dpcore reads (schemas, workloads, ledgers, results).

Python's ``json`` module accepts more than the JSON standard and more than a user means:
duplicate keys (the last one silently wins), ``NaN``/``Infinity``, number literals that
overflow to infinity, integers of any length, and nesting deep enough to raise
``RecursionError``. :func:`loads` refuses each of these with a one-line
:class:`JsonInputError` that names the input (``what``) and the rule it broke.

>>> loads('{"a": [1, 2.5]}', what="workload")
{'a': [1, 2.5]}
>>> loads('{"a": 1, "a": 2}', what="schema file 's.json'")
Traceback (most recent call last):
...
dpcore.jsonio.JsonInputError: schema file 's.json': key 'a' appears twice in one object
"""
from __future__ import annotations

import json
import math
import os
import re
from typing import Any

import numpy as np

from dpcore.errors import InvalidArgumentError

MAX_DEPTH = 64
"""Deepest nesting of arrays and objects accepted (every dpcore file needs fewer than 8)."""

MAX_INT_DIGITS = 100
"""Longest integer literal accepted, in digits (2**128 has 39)."""

MAX_MESSAGE = 300
"""Every message is cut to this many characters, so a hostile file cannot flood a log."""

# JSON strings, so that brackets inside them are not counted as nesting.
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)


class JsonInputError(InvalidArgumentError):
    """A JSON input is unreadable or breaks a rule; the message names the input and the rule."""


class _Refused(Exception):
    """Raised inside the decoder's hooks; :func:`loads` turns it into a JsonInputError."""


def cap(message: str, limit: int = MAX_MESSAGE) -> str:
    """``message`` on one line and at most ``limit`` characters."""
    line = " ".join(message.split())
    return line if len(line) <= limit else line[:limit - 3] + "..."


def _error(what: str, rule: str) -> JsonInputError:
    return JsonInputError(cap(f"{what}: {rule}"))


def _depth(text: str) -> int:
    """Deepest bracket nesting outside strings (linear, no recursion)."""
    bare = _STRING.sub("", text).encode("ascii", "ignore")
    if not bare:
        return 0
    raw = np.frombuffer(bare, dtype=np.uint8)
    step = (np.isin(raw, (ord("["), ord("{"))).astype(np.int64)
            - np.isin(raw, (ord("]"), ord("}"))).astype(np.int64))
    return int(np.cumsum(step).max(initial=0))


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _Refused(f"key {key!r} appears twice in one object")
        out[key] = value
    return out


def _constant(name: str) -> Any:
    raise _Refused(f"{name} is not a JSON number (write a finite number)")


def _integer(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise _Refused(f"an integer literal has more than {MAX_INT_DIGITS} digits")
    return int(text)


def _float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _Refused(f"the number literal {cap(text, 40)} overflows a 64-bit float")
    return value


def loads(text: str | bytes, *, what: str) -> Any:
    """Parse JSON text (bytes must be UTF-8), refusing duplicate keys, ``NaN``/``Infinity``,
    overflowing floats, integers longer than :data:`MAX_INT_DIGITS` digits and nesting deeper
    than :data:`MAX_DEPTH`. ``what`` names the input in the error (e.g. ``"workload file
    'w.json'"``)."""
    if isinstance(text, (bytes, bytearray)):
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError as err:
            raise _error(what, f"not UTF-8 text (byte {err.start} is invalid)") from None
    if _depth(text) > MAX_DEPTH:
        raise _error(what, f"nested deeper than {MAX_DEPTH} levels")
    try:
        return json.loads(text, object_pairs_hook=_pairs, parse_constant=_constant,
                          parse_int=_integer, parse_float=_float)
    except _Refused as err:
        raise _error(what, str(err)) from None
    except json.JSONDecodeError as err:
        raise _error(what, f"not valid JSON: {err}") from None
    except RecursionError:  # unreachable after the depth check; kept so none can escape
        raise _error(what, f"nested deeper than {MAX_DEPTH} levels") from None


def load_path(path: str | os.PathLike, *, what: str) -> Any:
    """Read and parse a JSON file with :func:`loads`; an unreadable file is a JsonInputError."""
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError as err:
        raise _error(what, f"cannot read it: {err.strerror or err}") from None
    return loads(data, what=what)
