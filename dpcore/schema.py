"""The public schema: how each column of a table maps onto a finite domain of integer codes.

A schema is *public* information. It is reviewed by the data steward and must not be derived
from the sensitive records (except by :func:`infer_schema`, which says loudly that it is not
private). Two kinds of file are accepted, told apart by content:

* a dpcore schema, ``{"format": "dpcore-schema", "columns": {name: spec, ...}}`` where each spec
  is categorical (a list of categories, an optional "other" bucket) or numeric (public bounds,
  bins as a count or explicit edges, integer or float, clip or error out of bounds); each column
  says whether missing values get their own code or are an error;
  an optional top-level ``"constraints"`` list holds public rules (derived columns, forbidden
  combinations: :mod:`dpcore.constraints`), checked when the schema loads;
* an ``mbi``-style domain file ``{"column": size, ...}`` for pre-encoded integer data.

Codes are laid out per column as: categories (or bins) in order, then the "other" bucket if
any, then the missing code if any. Numeric bin k is ``[e_k, e_{k+1})``; the last bin is closed
``[e_{K-1}, e_K]``. Edges never decrease. An edge that repeats, ``e_k == e_{k+1} == p``, makes
bin k the single value p (a *point mass*: the 0 of a zero-heavy count, a top-coded 99999), and
the bin after it excludes p: ``(p, e_{k+2})``. A spec lists its point masses with ``"points"``
(each becomes its own bin wherever it falls) or writes the repeated edges itself. Decoding is
uniform within a bin (integers: uniform over the bin's integers), and exact for a point.

Limits, checked when a column is built (a :class:`SchemaError` names the column and the rule):
every edge and every bin width is a finite float; a numeric column has at most
:data:`MAX_BINS` = 2^20 bins; integer columns' edges and code columns' sizes lie within
+-2^53 (:data:`MAX_EXACT_INTEGER`), where a float holds every integer exactly; category labels
are unique text, and labels that are the same number ("7", "7.0") count as one. A schema
file is read by :mod:`dpcore.jsonio` (UTF-8, no duplicate keys, bounded nesting) and must say
``"version": 1`` or nothing.
"""
from __future__ import annotations

import bisect
import json
import math
import os
import re
import tempfile
from collections import Counter
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any, Literal, Mapping, Sequence, Union

import numpy as np

from dpcore.errors import InvalidArgumentError
from dpcore.files import replace_into
from dpcore.jsonio import JsonInputError, cap, load_path

SCHEMA_FORMAT = "dpcore-schema"
SCHEMA_VERSION = 1
MAX_BINS = 2**20
"""Most bins a numeric column may have (a marginal over two such columns is already 2^40)."""
MAX_EXACT_INTEGER = 2**53
"""Integer bounds and code-column sizes lie within +-2^53, where a float holds every integer
exactly (values are parsed and binned as 64-bit floats)."""
PLAIN_DECIMAL = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
"""A plain decimal or scientific literal in ASCII: no spaces, no ``_``, no other digits, no
``nan``/``inf``. The only text dpcore reads as a number. Each text matches in one way only
(``123`` is not also ``12`` then ``3``): the reader matches a column's texts joined by line
breaks with one run, and an ambiguous pattern made a failing run backtrack exponentially in
the number of texts."""
INFER_WARNING = (
    "NOT PRIVATE: this schema was drafted by reading the data. Category lists, bounds and bin "
    "edges derived from the records can reveal individual values. Review every column and "
    "replace data-derived values with public knowledge before using it on sensitive data."
)

MissingPolicy = Literal["error", "code"]
OutOfBounds = Literal["error", "clip"]
DecodeMethod = Literal["uniform", "midpoint"]


class SchemaError(InvalidArgumentError):
    """A schema file or spec breaks a rule; the message names the column, the rule and the value."""


def _fail(column: str | None, message: str) -> SchemaError:
    where = f"schema column {column!r}: " if column is not None else "schema: "
    return SchemaError(cap(where + message))


def category_key(label: str) -> str | Decimal:
    """What a category label matches: a label that is a plain decimal literal (see
    :data:`PLAIN_DECIMAL`) is a number, so ``"32"``, ``"32.0"`` and the float 32.0 are one
    category; any other label (and a literal whose exponent Decimal cannot hold) is its text."""
    if PLAIN_DECIMAL.fullmatch(label):
        try:
            return Decimal(label)
        except InvalidOperation:
            pass
    return label


def _holds_token(col: "NumericColumn | CodeColumn", token: str) -> bool:
    """Whether the text ``token`` reads as a value within ``col``'s bounds (a number, for a
    datetime column a timestamp in its format, for a code column a code)."""
    from dpcore.datetimes import DatetimeColumn, token_units
    if isinstance(col, DatetimeColumn):
        units = token_units(col, token)
    elif PLAIN_DECIMAL.fullmatch(token):
        units = float(token)
        integer = isinstance(col, CodeColumn) or col.integer
        if integer and units != math.floor(units):
            return False                # an integer column refuses it: no value of the column
    else:
        return False
    lower, upper = (0, col.size - 1) if isinstance(col, CodeColumn) else (col.lower, col.upper)
    return bool(lower <= units <= upper)


def _category_label(column: str, value: Any) -> str:
    """A category entry of a schema file as a label: text, or a plain number written as text."""
    if isinstance(value, str):
        return value
    if value is None:
        raise _fail(column, "null is not a category (give the column 'missing': 'code' to "
                            "encode missing values)")
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if isinstance(value, float) and math.isfinite(value):
        return str(int(value)) if value.is_integer() and abs(value) <= MAX_EXACT_INTEGER \
            else repr(value)
    raise _fail(column, f"a category must be a string or a plain number, got "
                        f"{json.dumps(value)[:40]}")


@dataclass(frozen=True)
class CategoricalColumn:
    """A column of labels. ``other`` names a bucket for labels not in ``categories`` (None:
    an unknown label is an error)."""

    name: str
    categories: tuple[str, ...]
    other: str | None = None
    missing: MissingPolicy = "error"

    def __post_init__(self) -> None:
        if not self.categories:
            raise _fail(self.name, "'categories' must be a non-empty list")
        if not all(isinstance(c, str) for c in self.categories):
            raise _fail(self.name, "categories must be strings")
        repeats = [c for c, n in Counter(self.categories).items() if n > 1]
        if repeats:
            raise _fail(self.name, f"categories must be unique, {cap(repeats[0], 60)!r} repeats")
        if self.other is not None and (not isinstance(self.other, str)
                                       or self.other in self.categories):
            raise _fail(self.name, f"'other' must be a label not among the categories, got "
                                   f"{self.other!r}")
        labels = self.categories + ((self.other,) if self.other is not None else ())
        seen: dict[Decimal, str] = {}
        for label in labels:  # linear: one dict insert per label
            if not label.isascii():
                try:
                    label.encode("utf-8")
                except UnicodeEncodeError:
                    raise _fail(self.name, "labels must be valid Unicode text (a lone "
                                           "surrogate cannot be written as UTF-8)") from None
            key = category_key(label)
            if isinstance(key, Decimal):
                if key in seen:
                    raise _fail(self.name, f"labels {cap(seen[key], 40)!r} and "
                                           f"{cap(label, 40)!r} are the same number, so a "
                                           f"value could not tell them apart")
                seen[key] = label

    @property
    def size(self) -> int:
        return len(self.categories) + (self.other is not None) + (self.missing == "code")

    @property
    def other_code(self) -> int | None:
        return len(self.categories) if self.other is not None else None

    @property
    def missing_code(self) -> int | None:
        return self.size - 1 if self.missing == "code" else None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": "categorical", "categories": list(self.categories)}
        if self.other is not None:
            out["other"] = self.other
        out["missing"] = self.missing
        return out


@dataclass(frozen=True)
class NumericColumn:
    """A bounded number binned by ``edges`` (K+1 values for K bins, see the module docstring)."""

    name: str
    edges: tuple[float, ...]
    integer: bool = False
    out_of_bounds: OutOfBounds = "error"
    missing: MissingPolicy = "error"
    decode: DecodeMethod = "uniform"

    def __post_init__(self) -> None:
        _check_edges(self.name, self.edges, self.integer)

    @property
    def lower(self) -> float:
        return self.edges[0]

    @property
    def upper(self) -> float:
        return self.edges[-1]

    @property
    def bins(self) -> int:
        return len(self.edges) - 1

    @property
    def size(self) -> int:
        return self.bins + (self.missing == "code")

    @property
    def missing_code(self) -> int | None:
        return self.size - 1 if self.missing == "code" else None

    def to_dict(self) -> dict[str, Any]:
        def num(x: float) -> float | int:
            return int(x) if float(x).is_integer() else float(x)

        return {"type": "numeric", "lower": num(self.lower), "upper": num(self.upper),
                "integer": self.integer, "bins": [num(e) for e in self.edges],
                "out_of_bounds": self.out_of_bounds, "missing": self.missing,
                "decode": self.decode}


@dataclass(frozen=True)
class CodeColumn:
    """A pre-encoded column: values are already integer codes in ``0 .. size-1``."""

    name: str
    size: int

    missing_code = None

    def __post_init__(self) -> None:
        if isinstance(self.size, bool) or not isinstance(self.size, int) or not (
                1 <= self.size <= MAX_EXACT_INTEGER):
            raise _fail(self.name, f"'size' must be an integer in 1..2^53, got "
                                   f"{cap(repr(self.size), 40)}")

    def to_dict(self) -> dict[str, Any]:
        return {"type": "code", "size": self.size}


Column = Union[CategoricalColumn, NumericColumn, CodeColumn]


def _choice(column: str, spec: Mapping[str, Any], key: str, allowed: Sequence[str],
            default: str) -> str:
    value = spec.get(key, default)
    if value not in allowed:
        raise _fail(column, f"{key!r} must be one of {list(allowed)}, got "
                            f"{cap(repr(value), 40)}")
    return value


def _number(column: str, key: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise _fail(column, f"{key!r} must be a finite number, got {cap(repr(value), 40)}")
    return float(value)


def equal_width_edges(lower: float, upper: float, bins: int, integer: bool) -> tuple[float, ...]:
    """Edges of ``bins`` bins covering ``[lower, upper]``.

    Integer columns split the integers ``lower..upper`` into runs of near-equal length, so a
    bin never holds a fraction of an integer and ``bins == upper - lower + 1`` gives one bin
    per value (the last bin is then the point ``upper``).
    """
    if integer:
        lo, hi = int(lower), int(upper)
        n = hi - lo + 1
        if bins > n:
            raise InvalidArgumentError(
                f"an integer column with bounds [{lo}, {hi}] holds {n} values, "
                f"so it cannot have {bins} bins")
        starts = [lo + (k * n) // bins for k in range(bins)]
        return tuple(float(s) for s in starts) + (float(hi),)
    return tuple(float(lower + (upper - lower) * k / bins) for k in range(bins)) + (float(upper),)


def with_points(edges: tuple[float, ...], points: Sequence[float],
                integer: bool = False) -> tuple[float, ...]:
    """``edges`` with each point mass p made its own bin, wherever it falls.

    Integer columns split the run of integers holding p into ``a..p-1``, ``p``, ``p+1..b``
    (empty runs dropped), so a point is an ordinary bin ``[p, p+1)`` (the repeated pair only
    when it is the top value). Other columns repeat p: the bin ``[p, p]``, then ``(p, next)``.
    """
    for p in points:
        if not edges[0] <= p <= edges[-1]:
            raise InvalidArgumentError(f"point {p:g} lies outside the bounds "
                                       f"[{edges[0]:g}, {edges[-1]:g}]")
        if integer and not float(p).is_integer():
            raise InvalidArgumentError(f"point {p:g} of an integer column is not an integer")
    if not points:
        return tuple(edges)
    if integer:
        runs = [integer_bin_range(edges, k) for k in range(len(edges) - 1)]
        for p in sorted({int(p) for p in points}):
            k = next(i for i, (a, b) in enumerate(runs) if a <= p <= b)
            a, b = runs[k]
            runs[k:k + 1] = [r for r in ((a, p - 1), (p, p), (p + 1, b)) if r[0] <= r[1]]
        return tuple(float(a) for a, _ in runs) + (float(runs[-1][1]),)
    out = list(edges)
    for p in sorted(set(points)):
        while out.count(p) < 2:
            out.insert(bisect.bisect_left(out, p), p)
    return tuple(out)


def integer_bin_range(edges: Sequence[float], k: int) -> tuple[int, int]:
    """The integers ``a..b`` numeric bin k holds (a > b: none)."""
    lo, hi = edges[k], edges[k + 1]
    if lo == hi:
        return math.ceil(lo), math.floor(hi)
    last = k == len(edges) - 2
    a = math.floor(lo) + 1 if k >= 1 and edges[k - 1] == lo else math.ceil(lo)  # after a point
    return a, (math.floor(hi) if last else math.ceil(hi) - 1)


def _check_edges(column: str, edges: tuple[float, ...], integer: bool) -> None:
    if len(edges) < 2:
        raise _fail(column, f"bins needs at least 2 edges, got {list(edges)[:4]}")
    if len(edges) > MAX_BINS + 1:
        raise _fail(column, f"at most {MAX_BINS} bins (2^20) per column, got {len(edges) - 1}")
    for k, e in enumerate(edges):
        if not math.isfinite(e):
            raise _fail(column, f"bin edge {k} must be a finite number, got {e!r}")
        if integer and abs(e) > MAX_EXACT_INTEGER:
            raise _fail(column, f"an integer column's edges must lie within +-2^53 (where a "
                                f"float holds every integer exactly), edge {k} is {e:g}")
    for k in range(len(edges) - 1):
        a, b = edges[k], edges[k + 1]
        if not math.isfinite(b - a):
            raise _fail(column, f"bin {k} = [{a:g}, {b:g}] is wider than the largest float")
        if b < a:
            raise _fail(column, f"bin edges must not decrease, but edge {k} = {a:g} is "
                                f"followed by {b:g}")
        if b == a and k + 2 < len(edges) and edges[k + 2] == a:
            raise _fail(column, f"edge {a:g} appears three times: a point mass is one repeated "
                                "pair of edges")
    if integer:
        for k in range(len(edges) - 1):
            if edges[k] == edges[k + 1] and not float(edges[k]).is_integer():
                raise _fail(column, f"point {edges[k]:g} of an integer column is not an integer")
            a, b = integer_bin_range(edges, k)
            if a > b:
                raise _fail(column, f"integer bin {k} (from {edges[k]:g} to {edges[k + 1]:g}) "
                                    f"contains no integer")


#: The keys each column type reads ("description" is free text anywhere): any other key is
#: refused, so a misspelt one ("interger") cannot be silently ignored.
_COLUMN_KEYS = {
    "categorical": {"categories", "other", "missing"},
    "numeric": {"lower", "upper", "bins", "integer", "points", "out_of_bounds", "missing",
                "decode"},
    "datetime": {"lower", "upper", "resolution", "bins", "format", "out_of_bounds", "missing"},
    "code": {"size"},
}
_SCHEMA_KEYS = {"format", "version", "columns", "missing_values", "constraints", "warning",
                "description", "source"}


def column_from_dict(name: str, spec: Any) -> Column:
    """Validate one column spec from a schema file."""
    if not isinstance(spec, Mapping):
        raise _fail(name, f"spec must be an object, got {spec!r}")
    kind = spec.get("type")
    if isinstance(kind, str) and kind in _COLUMN_KEYS:    # (a list is unhashable: refused below)
        unknown = sorted(set(map(str, spec)) - _COLUMN_KEYS[kind] - {"type", "description"})
        if unknown:
            raise _fail(name, f"unknown key {cap(repr(unknown[0]), 40)}: a {kind} column takes "
                              f"{sorted(_COLUMN_KEYS[kind])} (and 'description')")
    if kind == "categorical":
        cats = spec.get("categories")
        if not isinstance(cats, list) or not cats:
            raise _fail(name, f"'categories' must be a non-empty list, got "
                              f"{cap(repr(cats), 40)}")
        labels = tuple(_category_label(name, c) for c in cats)
        other = spec.get("other")
        if other is not None and not isinstance(other, str):
            raise _fail(name, f"'other' must be a label not among the categories, got "
                              f"{cap(repr(other), 40)}")
        missing = _choice(name, spec, "missing", ("error", "code"), "error")
        return CategoricalColumn(name, labels, other, missing)  # type: ignore[arg-type]
    if kind == "numeric":
        integer = spec.get("integer", False)
        if not isinstance(integer, bool):
            raise _fail(name, f"'integer' must be true or false, got {integer!r}")
        bins = spec.get("bins")
        if isinstance(bins, list):
            edges = tuple(_number(name, "bins", e) for e in bins)
            if len(edges) < 2:
                raise _fail(name, f"bins needs at least 2 edges, got {list(edges)[:4]}")
            for key, at in (("lower", 0), ("upper", -1)):
                if key in spec and _number(name, key, spec[key]) != edges[at]:
                    raise _fail(name, f"{key!r} = {spec[key]!r} disagrees with the bin edges "
                                      f"(edge {edges[at]:g})")
        elif isinstance(bins, int) and not isinstance(bins, bool):
            if bins < 1:
                raise _fail(name, f"'bins' must be >= 1, got {bins}")
            if bins > MAX_BINS:
                raise _fail(name, f"at most {MAX_BINS} bins (2^20) per column, got {bins:.3g}")
            lower = _number(name, "lower", spec.get("lower"))
            upper = _number(name, "upper", spec.get("upper"))
            if not lower < upper:
                raise _fail(name, f"'lower' must be < 'upper', got {lower:g} and {upper:g}")
            if not math.isfinite(upper - lower):
                raise _fail(name, f"'upper' - 'lower' must be a finite float, got "
                                  f"{upper:g} - {lower:g}")
            if integer and not (lower.is_integer() and upper.is_integer()):
                raise _fail(name, f"an integer column needs integer bounds, got "
                                  f"{lower:g} and {upper:g}")
            if integer and max(-lower, upper) > MAX_EXACT_INTEGER:
                raise _fail(name, f"an integer column's bounds must lie within +-2^53 (where "
                                  f"a float holds every integer exactly), got {lower:g} and "
                                  f"{upper:g}")
            try:
                edges = equal_width_edges(lower, upper, bins, integer)
            except InvalidArgumentError as err:
                raise _fail(name, str(err)) from None
            if not integer and len(set(edges)) != len(edges):   # integers: a top point is fine
                raise _fail(name, f"[{lower:g}, {upper:g}] is too narrow for {bins} equal-width "
                                  "bins of floats (bin edges must increase)")
        else:
            raise _fail(name, f"'bins' must be a count or a list of edges, got "
                              f"{cap(repr(bins), 40)}")
        points = spec.get("points", [])
        if not isinstance(points, list):
            raise _fail(name, f"'points' must be a list of numbers, got {cap(repr(points), 40)}")
        try:
            edges = with_points(edges, [_number(name, "points", p) for p in points], integer)
        except SchemaError:
            raise
        except InvalidArgumentError as err:
            raise _fail(name, str(err)) from None
        return NumericColumn(
            name, edges, integer,
            _choice(name, spec, "out_of_bounds", ("error", "clip"), "error"),  # type: ignore
            _choice(name, spec, "missing", ("error", "code"), "error"),  # type: ignore
            _choice(name, spec, "decode", ("uniform", "midpoint"), "uniform"))  # type: ignore
    if kind == "datetime":
        from dpcore.datetimes import datetime_column_from_dict
        return datetime_column_from_dict(name, spec)
    if kind == "code":
        return CodeColumn(name, spec.get("size"))  # type: ignore[arg-type]
    raise _fail(name, f"'type' must be 'categorical', 'numeric', 'datetime' or 'code', got "
                      f"{cap(repr(kind), 40)}")


class Schema:
    """An ordered set of column specs plus the tokens that mean "missing" in a CSV.

    >>> s = Schema.from_dict({"sex": 2, "age": 5})        # an mbi-style domain file
    >>> s.encoded, s.names, s.domain_dict()
    (True, ('sex', 'age'), {'sex': 2, 'age': 5})
    """

    def __init__(self, columns: Sequence[Column], *, missing_values: Sequence[str] = ("",),
                 warning: str | None = None, constraints: Sequence[Any] | None = None) -> None:
        names = [c.name for c in columns]
        if not names:
            raise _fail(None, "needs at least one column")
        dup = [n for n, k in Counter(names).items() if k > 1]
        if dup:
            raise _fail(dup[0], "column names must be unique")
        self.columns: tuple[Column, ...] = tuple(columns)
        self.missing_values: tuple[str, ...] = tuple(str(m) for m in missing_values)
        for c in self.columns:     # a token that is also a label would turn the label missing
            if isinstance(c, CategoricalColumn):
                labels = [*c.categories, *([c.other] if c.other is not None else [])]
                keys = {category_key(label): label for label in labels}   # "1.0" is "1"
                clash = next((keys[category_key(m)] for m in self.missing_values
                              if category_key(m) in keys), None)
                if clash is not None:
                    raise _fail(c.name, f"category {clash!r} is also a missing-value token "
                                        f"(missing_values); rows holding it could not be told "
                                        f"apart from missing ones")
            elif isinstance(c, (NumericColumn, CodeColumn)):
                # a token the column can hold (a number or a timestamp within its bounds): real
                # rows holding it would read as missing, and synthetic ones written with it too
                # (audit 17: "9" with bounds [0, 10] broke a derived rule on read-back)
                clash = next((m for m in self.missing_values if _holds_token(c, m)), None)
                if clash is not None:
                    raise _fail(c.name, f"the missing-value token {clash!r} (missing_values) is "
                                        f"also a value within the column's bounds; rows holding "
                                        f"it could not be told apart from missing ones: use a "
                                        f"token outside every column's range")
        self.warning = warning
        # public rules (dpcore.constraints), validated here: a bad rule fails before any charge
        from dpcore.constraints import parse_constraints
        self.constraints = parse_constraints(constraints, self.columns)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)

    @property
    def encoded(self) -> bool:
        """True for pre-encoded data (every column a :class:`CodeColumn`)."""
        return all(isinstance(c, CodeColumn) for c in self.columns)

    def __getitem__(self, name: str) -> Column:
        for c in self.columns:
            if c.name == name:
                return c
        raise KeyError(name)

    def __len__(self) -> int:
        return len(self.columns)

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, Schema) and self.columns == other.columns
                and self.missing_values == other.missing_values
                and [r.spec for r in self.constraints] == [r.spec for r in other.constraints])

    __hash__ = None  # type: ignore[assignment]

    def domain_dict(self) -> dict[str, int]:
        return {c.name: c.size for c in self.columns}

    def domain(self):
        """The :class:`dpcore.Domain` of the codes (imported lazily: needs the kernels)."""
        from dpcore.domain import Domain
        return Domain.from_dict(self.domain_dict())

    def code_dtype(self) -> np.dtype:
        """The smallest unsigned dtype that holds every column's codes."""
        return code_dtype([c.size for c in self.columns])

    @classmethod
    def from_dict(cls, obj: Any) -> "Schema":
        """Parse either a dpcore schema or an mbi-style ``{"column": size}`` domain."""
        if not isinstance(obj, Mapping) or not obj:
            raise _fail(None, f"expected a non-empty JSON object, got {type(obj).__name__}")
        if "columns" not in obj:
            if all(isinstance(v, int) and not isinstance(v, bool) for v in obj.values()):
                return cls([column_from_dict(str(k), {"type": "code", "size": v})
                            for k, v in obj.items()], missing_values=())
            raise _fail(None, "not a dpcore schema (no 'columns' key) and not a domain file "
                              "(not every value is an integer size)")
        fmt = obj.get("format", SCHEMA_FORMAT)
        if fmt != SCHEMA_FORMAT:
            raise _fail(None, f"'format' must be {SCHEMA_FORMAT!r}, got {cap(repr(fmt), 40)}")
        version = obj.get("version", SCHEMA_VERSION)
        if type(version) is not int or version != SCHEMA_VERSION:
            raise _fail(None, f"'version' must be {SCHEMA_VERSION} (the only version this dpcore "
                              f"reads), got {cap(repr(version), 40)}")
        unknown = sorted(set(map(str, obj)) - _SCHEMA_KEYS)
        if unknown:
            raise _fail(None, f"unknown top-level key {cap(repr(unknown[0]), 40)}: a schema "
                              f"takes {sorted(_SCHEMA_KEYS)}")
        cols = obj["columns"]
        if not isinstance(cols, Mapping) or not cols:
            raise _fail(None, "'columns' must be a non-empty object of column specs")
        mv = obj.get("missing_values", [""])
        if not isinstance(mv, list) or not all(isinstance(m, str) for m in mv):
            raise _fail(None, f"'missing_values' must be a list of strings, got "
                              f"{cap(repr(mv), 40)}")
        return cls([column_from_dict(str(k), v) for k, v in cols.items()],
                   missing_values=mv, warning=obj.get("warning"),
                   constraints=obj.get("constraints"))

    def to_dict(self) -> dict[str, Any]:
        if self.encoded and not self.constraints:
            return self.domain_dict()
        out: dict[str, Any] = {"format": SCHEMA_FORMAT, "version": SCHEMA_VERSION}
        if self.warning:
            out["warning"] = self.warning
        out["missing_values"] = list(self.missing_values)
        out["columns"] = {c.name: c.to_dict() for c in self.columns}
        if self.constraints:
            out["constraints"] = [dict(r.spec) for r in self.constraints]
        return out

    @classmethod
    def load(cls, path: str | os.PathLike) -> "Schema":
        """Read a schema or domain JSON file; errors name the file."""
        try:
            obj = load_path(path, what=f"schema file {str(path)!r}")
        except JsonInputError as err:
            raise SchemaError(str(err)) from None
        try:
            return cls.from_dict(obj)
        except SchemaError as err:
            raise SchemaError(cap(f"{path}: {err}")) from None

    def save(self, path: str | os.PathLike) -> None:
        """Write the schema as JSON, atomically."""
        atomic_write_text(path, json.dumps(self.to_dict(), indent=1) + "\n")


def default_file_mode() -> int:
    """The mode ``open()`` would give a new file (mkstemp's temporaries are 0600)."""
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def atomic_write_text(path: str | os.PathLike, text: str) -> None:
    """Write ``text`` to a temporary file beside ``path``, then rename it into place."""
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> None:
    """Write ``data`` to a temporary file beside ``path``, then rename it into place."""
    target = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp",
                               dir=target.parent if str(target.parent) else ".")
    try:
        os.chmod(tmp, default_file_mode())
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        replace_into(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def code_dtype(sizes) -> np.dtype:
    """The smallest unsigned dtype holding codes ``0 .. size-1`` of every attribute size."""
    top = max(sizes, default=1)
    for dt in (np.uint8, np.uint16, np.uint32):
        if top <= np.iinfo(dt).max + 1:
            return np.dtype(dt)
    return np.dtype(np.int64)
